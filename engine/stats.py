"""What the criterion does, measured: extraction rate, discards by gate, and review outcomes.

The extraction rate is queued / claims: of everything the extractor found in the messages, how
much reached a human. The discards say where the rest went (the `predicted` count is the
predict–calibrate criterion at work). Review outcomes by kind and by extractor say whether what
reached the human was worth their time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .models import to_jsonable
from .timeutil import from_us

if TYPE_CHECKING:
    from .context import EngineContext

_GATES = ("predicted", "below_confidence", "invalid", "tombstoned", "duplicates")
DISCARD_GATES = ("predicted", "below_confidence", "invalid", "tombstoned", "duplicate")


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


async def stats(mem: EngineContext, user_id: str | None = None, discarded_limit: int = 20) -> dict[str, Any]:
    """The figures, plus the `discarded_limit` statements the gates dropped most recently (all of
    them through `Memory.discarded`)."""
    scope, args = ("WHERE user_id = ?", [user_id]) if user_id is not None else ("", [])
    and_scope = "AND c.user_id = ?" if user_id is not None else ""
    async with mem.store.reading() as tx:

        async def rows(sql: str, params: list[Any] | None = None) -> list[Any]:
            return list(await (await tx.conn.execute(sql, params if params is not None else args)).fetchall())

        queue = {s: 0 for s in ("pending", "approved", "rejected")}
        for status, n in await rows(f"SELECT status, count(*) FROM candidates {scope} GROUP BY status"):
            queue[status] = n
        pending_by_kind = {
            k: n for k, n in await rows(
                f"SELECT kind, count(*) FROM candidates c WHERE status = 'pending' {and_scope} GROUP BY kind"
            )
        }
        knowledge = {s: 0 for s in ("active", "superseded", "retracted")}
        for status, n in await rows(f"SELECT status, count(*) FROM knowledge {scope} GROUP BY status"):
            knowledge[status] = n
        live_stones = "lifted_at IS NULL" + (" AND user_id = ?" if user_id is not None else "")
        tombstones = (await rows(f"SELECT count(*) FROM tombstones WHERE {live_stones}"))[0][0]
        episodes = {s: 0 for s in ("open", "processed", "failed")}
        for status, n in await rows(f"SELECT status, count(*) FROM episodes {scope} GROUP BY status"):
            episodes[status] = n

        sums = ", ".join(f"coalesce(sum({c}), 0)" for c in (*_GATES, "claims", "queued", "supersedes_dropped",
                                                               "unsupported"))
        ok_scope = "WHERE error IS NULL" + (" AND user_id = ?" if user_id is not None else "")
        total = (await rows(f"SELECT count(*), {sums} FROM extraction_runs {ok_scope}"))[0]
        failed_runs = (await rows(
            "SELECT count(*) FROM extraction_runs WHERE error IS NOT NULL"
            + (" AND user_id = ?" if user_id is not None else "")
        ))[0][0]
        runs = total[0]
        discards = dict(zip(_GATES, total[1:6], strict=True))
        claims, queued, dropped, unsupported = total[6:10]
        by_extractor_runs = {
            name: {"runs": n, "claims": c, "queued": q, "predicted": p, "dates_dropped": dd}
            for name, n, c, q, p, dd in await rows(
                "SELECT extractor, count(*), coalesce(sum(claims), 0), coalesce(sum(queued), 0),"
                " coalesce(sum(predicted), 0), coalesce(sum(dates_dropped), 0)"
                f" FROM extraction_runs {ok_scope} GROUP BY extractor"
            )
        }

        decided_scope = "c.status IN ('approved', 'rejected')" + (" AND c.user_id = ?" if user_id is not None else "")
        by_kind: dict[str, dict[str, Any]] = {}
        by_extractor: dict[str, dict[str, Any]] = {}
        for kind, extractor, status, n in await rows(
            "SELECT c.kind, coalesce(r.extractor, coalesce(c.created_by, 'manual')), c.status, count(*)"
            f" FROM candidates c LEFT JOIN extraction_runs r ON r.id = c.run_id WHERE {decided_scope}"
            " GROUP BY 1, 2, 3"
        ):
            for table, name in ((by_kind, kind), (by_extractor, extractor)):
                entry = table.setdefault(name, {"approved": 0, "rejected": 0, "approval_rate": None})
                entry[status] += n
        for table in (by_kind, by_extractor):
            for entry in table.values():
                entry["approval_rate"] = _rate(entry["approved"], entry["approved"] + entry["rejected"])
        reasons: dict[str, dict[str, int]] = {}
        for kind, reason, n in await rows(
            f"SELECT c.kind, coalesce(c.reason, ''), count(*) FROM candidates c WHERE c.status = 'rejected'"
            f" {and_scope} GROUP BY 1, 2 ORDER BY 3 DESC"
        ):
            reasons.setdefault(kind, {})[reason] = n

        by_version: dict[tuple[str, str | None, str | None], dict[str, Any]] = {}
        for extractor, model, version, status, n in await rows(
            "SELECT r.extractor, r.model, r.prompt_version, c.status, count(*) FROM candidates c"
            f" JOIN extraction_runs r ON r.id = c.run_id WHERE {decided_scope} GROUP BY 1, 2, 3, 4"
        ):
            entry = by_version.setdefault((extractor, model, version), {
                "extractor": extractor, "model": model, "prompt_version": version, "approved": 0, "rejected": 0,
            })
            entry[status] += n
        for entry in by_version.values():
            entry["approval_rate"] = _rate(entry["approved"], entry["approved"] + entry["rejected"])

        discarded_by_gate = {g: 0 for g in DISCARD_GATES}
        for gate, n in await rows(f"SELECT gate, count(*) FROM discarded {scope} GROUP BY gate"):
            discarded_by_gate[gate] = n
        queued_anyway = (await rows(
            "SELECT count(*) FROM discarded WHERE queued_candidate_id IS NOT NULL"
            + (" AND user_id = ?" if user_id is not None else "")
        ))[0][0]
        latest = await tx.list_discarded(user_id, limit=discarded_limit)

        daily_rows = await rows(
            "SELECT day, sum(q), sum(d) FROM ("
            " SELECT created_at / 86400000000 AS day, 1 AS q, 0 AS d FROM candidates c WHERE 1 = 1 "
            f"{and_scope} UNION ALL SELECT decided_at / 86400000000, 0, 1 FROM candidates c"
            f" WHERE decided_at IS NOT NULL {and_scope}) GROUP BY day ORDER BY day",
            args * 2,
        )
    approved, rejected = queue["approved"], queue["rejected"]
    return {
        "queue": {**queue, "pending_by_kind": pending_by_kind},
        "knowledge": knowledge,
        "tombstones": tombstones,
        "extraction": {
            "runs": runs, "failed_runs": failed_runs, "episodes": episodes, "claims": claims, "queued": queued,
            "extraction_rate": _rate(queued, claims), "discards": discards, "supersedes_dropped": dropped,
            "unsupported": unsupported, "by_extractor": by_extractor_runs,
        },
        "review": {
            "decided": approved + rejected, "approved": approved, "rejected": rejected,
            "approval_rate": _rate(approved, approved + rejected), "by_kind": by_kind,
            "by_extractor": by_extractor, "by_extractor_version": list(by_version.values()),
            "rejection_reasons": reasons,
        },
        "discarded": {
            "total": sum(discarded_by_gate.values()), "by_gate": discarded_by_gate, "queued_anyway": queued_anyway,
            "latest": [
                {"id": d.id, "user_id": d.user_id, "gate": d.gate, "statement": d.statement,
                 "matched": None if d.matched_entity is None else
                 f"{d.matched_entity} {d.matched_id}: {d.matched_statement}",
                 "queued_candidate_id": d.queued_candidate_id, "at": to_jsonable(d.created_at)}
                for d in latest
            ],
        },
        "daily": [
            {"day": from_us(int(day) * 86_400_000_000).date().isoformat(), "queued": q, "decided": d}  # type: ignore[union-attr]
            for day, q, d in daily_rows
        ],
    }

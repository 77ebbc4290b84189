"""What the criterion does, measured: extraction rate, discards by gate, and review outcomes.

The extraction rate is queued / claims: of everything the extractor found in the messages, how
much reached a human. The discards say where the rest went (the `predicted` count is the
predict–calibrate criterion at work). Review outcomes by kind and by extractor say whether what
reached the human was worth their time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .models import to_jsonable
from .storage.sql.stats import CONFIDENCE_BUCKETS, RUN_GATES
from .timeutil import from_us, to_us

if TYPE_CHECKING:
    from .context import EngineContext

DISCARD_GATES = ("predicted", "below_confidence", "invalid", "tombstoned", "duplicate")


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


async def stats(mem: EngineContext, user_id: str | None = None, discarded_limit: int = 20) -> dict[str, Any]:
    """The figures, plus the `discarded_limit` statements the gates dropped most recently (all of
    them through `Memory.discarded`)."""
    now_us = to_us(mem.now())
    sla_us = int(mem.config.review_sla_hours * 3_600_000_000)
    async with mem.store.reading() as tx:
        got = await tx.stats_figures(user_id, sla_cutoff_us=now_us - sla_us)
        latest = await tx.list_discarded(user_id, limit=discarded_limit)
    queue = {s: 0 for s in ("pending", "approved", "rejected")}
    for status, n in got.queue_by_status:
        queue[status] = n
    pending_by_kind = {k: n for k, n in got.pending_by_kind}
    knowledge = {s: 0 for s in ("active", "superseded", "retracted")}
    for status, n in got.knowledge_by_status:
        knowledge[status] = n
    tombstones = got.live_tombstones
    episodes = {s: 0 for s in ("open", "processed", "failed")}
    for status, n in got.episodes_by_status:
        episodes[status] = n

    total = got.run_totals
    failed_runs = got.failed_runs
    runs = total[0]
    discards = dict(zip(RUN_GATES, total[1:6], strict=True))
    claims, queued, dropped, unsupported = total[6:10]
    by_extractor_runs = {
        name: {"runs": n, "claims": c, "queued": q, "predicted": p, "dates_dropped": dd}
        for name, n, c, q, p, dd in got.runs_by_extractor
    }

    by_kind: dict[str, dict[str, Any]] = {}
    by_extractor: dict[str, dict[str, Any]] = {}
    for kind, extractor, status, n in got.decided_by_kind_extractor:
        for table, name in ((by_kind, kind), (by_extractor, extractor)):
            entry = table.setdefault(name, {"approved": 0, "rejected": 0, "approval_rate": None})
            entry[status] += n
    for table in (by_kind, by_extractor):
        for entry in table.values():
            entry["approval_rate"] = _rate(entry["approved"], entry["approved"] + entry["rejected"])
    reasons: dict[str, dict[str, int]] = {}
    for kind, reason, n in got.rejection_reasons:
        reasons.setdefault(kind, {})[reason] = n

    by_version: dict[tuple[str, str | None, str | None], dict[str, Any]] = {}
    for extractor, model, version, status, n in got.decided_by_version:
        entry = by_version.setdefault(
            (extractor, model, version),
            {
                "extractor": extractor,
                "model": model,
                "prompt_version": version,
                "approved": 0,
                "rejected": 0,
            },
        )
        entry[status] += n
    for entry in by_version.values():
        entry["approval_rate"] = _rate(entry["approved"], entry["approved"] + entry["rejected"])

    discarded_by_gate = {g: 0 for g in DISCARD_GATES}
    for gate, n in got.discarded_by_gate:
        discarded_by_gate[gate] = n
    queued_anyway = got.queued_anyway
    daily_rows = got.daily
    approved, rejected = queue["approved"], queue["rejected"]
    calibration: dict[str, dict[str, dict[str, Any]]] = {}
    for extractor, bucket, status, n in got.calibration:
        entry = calibration.setdefault(extractor, {}).setdefault(
            CONFIDENCE_BUCKETS[int(bucket)], {"approved": 0, "rejected": 0, "approval_rate": None}
        )
        entry[status] += n
    for buckets in calibration.values():
        for entry in buckets.values():
            entry["approval_rate"] = _rate(entry["approved"], entry["approved"] + entry["rejected"])
    oldest = got.oldest_pending
    age = {
        "sla_hours": mem.config.review_sla_hours,
        "oldest_pending_at": None if oldest is None else to_jsonable(from_us(int(oldest))),
        "oldest_pending_hours": None if oldest is None else round((now_us - int(oldest)) / 3_600_000_000, 1),
        "past_sla": got.past_sla,
    }
    return {
        "queue": {**queue, "pending_by_kind": pending_by_kind, "age": age},
        "credentials_removed": got.credentials_removed,
        "knowledge": knowledge,
        "tombstones": tombstones,
        "extraction": {
            "runs": runs,
            "failed_runs": failed_runs,
            "episodes": episodes,
            "claims": claims,
            "queued": queued,
            "extraction_rate": _rate(queued, claims),
            "discards": discards,
            "supersedes_dropped": dropped,
            "unsupported": unsupported,
            "by_extractor": by_extractor_runs,
        },
        "review": {
            "decided": approved + rejected,
            "approved": approved,
            "rejected": rejected,
            "approval_rate": _rate(approved, approved + rejected),
            "by_kind": by_kind,
            "by_extractor": by_extractor,
            "by_extractor_version": list(by_version.values()),
            "rejection_reasons": reasons,
            "calibration": {name: {k: b[k] for k in CONFIDENCE_BUCKETS if k in b} for name, b in calibration.items()},
        },
        "discarded": {
            "total": sum(discarded_by_gate.values()),
            "by_gate": discarded_by_gate,
            "queued_anyway": queued_anyway,
            "latest": [
                {
                    "id": d.id,
                    "user_id": d.user_id,
                    "gate": d.gate,
                    "statement": d.statement,
                    "matched": None
                    if d.matched_entity is None
                    else f"{d.matched_entity} {d.matched_id}: {d.matched_statement}",
                    "queued_candidate_id": d.queued_candidate_id,
                    "at": to_jsonable(d.created_at),
                }
                for d in latest
            ],
        },
        "daily": [
            {"day": from_us(int(day) * 86_400_000_000).date().isoformat(), "queued": q, "decided": d}
            for day, q, d in daily_rows
        ],
    }

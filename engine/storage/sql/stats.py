"""`StatsOps`: the aggregate queries behind engine/stats.py, as one method of the transaction.

`stats_figures` returns the rows as the database counted them; engine/stats.py names and shapes
them (rates, defaults for absent statuses). Portable SQL: positional GROUP BY over every
non-aggregated column, integer division of BIGINT microseconds for the UTC day, and an alias on
the derived table (PostgreSQL before 16 requires one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from .conn import SqlConn
from .records import DECIDED_BY_PEOPLE

RUN_GATES = ("predicted", "below_confidence", "invalid", "tombstoned", "duplicates")
"""The extraction_runs columns counting what each gate dropped, in the order of `run_totals`."""

CONFIDENCE_BUCKETS = ("<0.5", "0.5-0.7", "0.7-0.8", "0.8-0.9", ">=0.9")
"""The calibration buckets of `stats`, by index: a CASE, since CAST rounds in PostgreSQL and
truncates in SQLite."""
CONFIDENCE_BUCKET = (
    "CASE WHEN c.confidence < 0.5 THEN 0 WHEN c.confidence < 0.7 THEN 1 WHEN c.confidence < 0.8 THEN 2"
    " WHEN c.confidence < 0.9 THEN 3 ELSE 4 END"
)


@dataclass(slots=True)
class StatsRows:
    """What `stats_figures` counted; each list holds result rows (tuples unpack)."""

    queue_by_status: list[Any]  # (status, n) of candidates
    pending_by_kind: list[Any]  # (kind, n)
    knowledge_by_status: list[Any]  # (status, n)
    live_tombstones: int
    episodes_by_status: list[Any]  # (status, n)
    run_totals: Any  # (runs, *RUN_GATES sums, claims, queued, supersedes_dropped, unsupported)
    failed_runs: int
    runs_by_extractor: list[Any]  # (extractor, runs, claims, queued, predicted, dates_dropped)
    decided_by_kind_extractor: list[Any]  # (kind, extractor or created_by or 'manual', status, n)
    rejection_reasons: list[Any]  # (kind, reason or '', n), most frequent first
    decided_by_version: list[Any]  # (extractor, model, prompt_version, status, n)
    discarded_by_gate: list[Any]  # (gate, n)
    queued_anyway: int
    daily: list[Any]  # (UTC day number, queued, decided)
    credentials_removed: int  # audit rows of action 'credential_removed' (engine/credentials.py)
    oldest_pending: int | None  # created_at (µs) of the oldest pending candidate
    past_sla: int  # pending candidates created before the cutoff given
    calibration: list[Any]  # (extractor, confidence bucket 0..4, status, n) of decided candidates


class StatsOps(Protocol):
    """Mixed into SqlTx; `conn` is the transaction's connection (see SqlTx)."""

    conn: SqlConn

    async def stats_figures(self, user_id: str | None, sla_cutoff_us: int = 0) -> StatsRows:
        """Every figure of engine/stats.py for one user or (None) the whole store; `past_sla`
        counts pending candidates created before `sla_cutoff_us`."""
        scope, args = ("WHERE user_id = ?", [user_id]) if user_id is not None else ("", [])
        and_scope = "AND c.user_id = ?" if user_id is not None else ""
        and_user = " AND user_id = ?" if user_id is not None else ""

        async def rows(sql: str, params: list[Any] | None = None) -> list[Any]:
            return list(await (await self.conn.execute(sql, params if params is not None else args)).fetchall())

        sums = ", ".join(
            f"coalesce(sum({c}), 0)" for c in (*RUN_GATES, "claims", "queued", "supersedes_dropped", "unsupported")
        )
        ok_scope = "WHERE error IS NULL" + and_user
        decided_scope = "c.status IN ('approved', 'rejected')" + (" AND c.user_id = ?" if user_id is not None else "")
        return StatsRows(
            queue_by_status=await rows(f"SELECT status, count(*) FROM candidates {scope} GROUP BY status"),
            pending_by_kind=await rows(
                f"SELECT kind, count(*) FROM candidates c WHERE status = 'pending' {and_scope} GROUP BY kind"
            ),
            knowledge_by_status=await rows(f"SELECT status, count(*) FROM knowledge {scope} GROUP BY status"),
            live_tombstones=int(
                (await rows(f"SELECT count(*) FROM tombstones WHERE lifted_at IS NULL{and_user}"))[0][0]
            ),
            episodes_by_status=await rows(f"SELECT status, count(*) FROM episodes {scope} GROUP BY status"),
            run_totals=(await rows(f"SELECT count(*), {sums} FROM extraction_runs {ok_scope}"))[0],
            failed_runs=int(
                (await rows(f"SELECT count(*) FROM extraction_runs WHERE error IS NOT NULL{and_user}"))[0][0]
            ),
            runs_by_extractor=await rows(
                "SELECT extractor, count(*), coalesce(sum(claims), 0), coalesce(sum(queued), 0),"
                " coalesce(sum(predicted), 0), coalesce(sum(dates_dropped), 0)"
                f" FROM extraction_runs {ok_scope} GROUP BY extractor"
            ),
            decided_by_kind_extractor=await rows(
                "SELECT c.kind, coalesce(r.extractor, coalesce(c.created_by, 'manual')), c.status, count(*)"
                f" FROM candidates c LEFT JOIN extraction_runs r ON r.id = c.run_id WHERE {decided_scope}"
                " GROUP BY 1, 2, 3"
            ),
            rejection_reasons=await rows(
                f"SELECT c.kind, coalesce(c.reason, ''), count(*) FROM candidates c WHERE c.status = 'rejected'"
                f" {and_scope} GROUP BY 1, 2 ORDER BY 3 DESC"
            ),
            decided_by_version=await rows(
                "SELECT r.extractor, r.model, r.prompt_version, c.status, count(*) FROM candidates c"
                f" JOIN extraction_runs r ON r.id = c.run_id WHERE {decided_scope} GROUP BY 1, 2, 3, 4"
            ),
            discarded_by_gate=await rows(f"SELECT gate, count(*) FROM discarded {scope} GROUP BY gate"),
            queued_anyway=int(
                (await rows(f"SELECT count(*) FROM discarded WHERE queued_candidate_id IS NOT NULL{and_user}"))[0][0]
            ),
            daily=await rows(
                "SELECT day, sum(q), sum(d) FROM ("
                " SELECT created_at / 86400000000 AS day, 1 AS q, 0 AS d FROM candidates c WHERE 1 = 1 "
                f"{and_scope} UNION ALL SELECT decided_at / 86400000000, 0, 1 FROM candidates c"
                f" WHERE decided_at IS NOT NULL {and_scope}) AS per_day GROUP BY day ORDER BY day",
                args * 2,
            ),
            credentials_removed=int(
                (await rows(f"SELECT count(*) FROM audit_log WHERE action = 'credential_removed'{and_user}"))[0][0]
            ),
            oldest_pending=(
                await rows(f"SELECT min(created_at) FROM candidates c WHERE status = 'pending' {and_scope}")
            )[0][0],
            past_sla=int(
                (
                    await rows(
                        f"SELECT count(*) FROM candidates c WHERE status = 'pending' AND created_at < ? {and_scope}",
                        [sla_cutoff_us, *args],
                    )
                )[0][0]
            ),
            calibration=await rows(
                f"SELECT coalesce(r.extractor, coalesce(c.created_by, 'manual')), {CONFIDENCE_BUCKET}, c.status,"
                " count(*) FROM candidates c LEFT JOIN extraction_runs r ON r.id = c.run_id"
                f" WHERE c.confidence IS NOT NULL AND {decided_scope} AND {DECIDED_BY_PEOPLE} GROUP BY 1, 2, 3"
            ),
        )

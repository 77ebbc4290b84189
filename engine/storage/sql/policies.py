"""`PolicyOps`: the statements behind engine/policies.py, as methods of the transaction.

A policy is one `meta` row (`policy:NAME` -> its settings as JSON), so a copy (`memdesk migrate`)
and an export carry it like the rest of the store's settings. What a policy judged is an audit row
on the candidate (action `policy_verdict`, actor `policy:NAME`): append-only, per user (erasure
redacts it with the user's other rows), and read back here beside the human decision on the same
candidate.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol

from .conn import SqlConn
from .core import fetchall
from .records import CANDIDATE_COLS, CANDIDATE_FROM, candidate_from_row

POLICY_KEY = "policy:"
"""The meta key prefix of a policy's settings."""


class PolicyOps(Protocol):
    """Mixed into SqlTx; `conn` is the transaction's connection (see SqlTx)."""

    conn: SqlConn

    async def policy_settings(self) -> list[str]:
        """Every policy's settings (JSON), by name."""
        rows = await (
            await self.conn.execute("SELECT value FROM meta WHERE key LIKE ? ORDER BY key", (POLICY_KEY + "%",))
        ).fetchall()
        return [str(r[0]) for r in rows]

    async def newest_candidate_id(self) -> int:
        row = await (await self.conn.execute("SELECT coalesce(max(id), 0) FROM candidates")).fetchone()
        return int(row[0])

    async def pending_after(self, after_id: int, limit: int) -> list[Any]:
        """Pending candidates with an id above `after_id`, by id: a cursor over the queue that
        deciding does not shift."""
        rows = await (
            await self.conn.execute(
                f"SELECT {CANDIDATE_COLS} FROM {CANDIDATE_FROM} WHERE c.status = 'pending' AND c.id > ?"
                " ORDER BY c.id LIMIT ?",
                (after_id, int(limit)),
            )
        ).fetchall()
        return [candidate_from_row(r) for r in rows]

    async def judged_by(self, actor: str, candidate_ids: list[int]) -> set[int]:
        """Which of these candidates already carry a verdict of `actor`."""
        if not candidate_ids:
            return set()
        marks = ", ".join("?" * len(candidate_ids))
        rows = await (
            await self.conn.execute(
                "SELECT DISTINCT entity_id FROM audit_log WHERE entity = 'candidate' AND action = 'policy_verdict'"
                f" AND actor = ? AND entity_id IN ({marks})",
                (actor, *candidate_ids),
            )
        ).fetchall()
        return {int(r[0]) for r in rows}

    async def verdicts_with_outcomes(self, actor: str) -> list[tuple[str, str, str, str, str | None, str | None]]:
        """(verdict JSON, the candidate's kind, statement, status, decision, decided_by) for every
        candidate `actor` judged, its latest verdict only."""
        rows = await (
            await self.conn.execute(
                "SELECT a.after, c.kind, c.statement, c.status, c.decision, c.decided_by FROM audit_log a"
                " JOIN candidates c ON c.id = a.entity_id"
                " WHERE a.entity = 'candidate' AND a.action = 'policy_verdict' AND a.actor = ?"
                " AND a.id = (SELECT max(b.id) FROM audit_log b WHERE b.entity = 'candidate'"
                " AND b.action = 'policy_verdict' AND b.actor = a.actor AND b.entity_id = a.entity_id)"
                " ORDER BY a.id",
                (actor,),
            )
        ).fetchall()
        return [(str(r[0]), str(r[1]), str(r[2]), str(r[3]), r[4], r[5]) for r in rows]

    async def rule_evidence(self, candidate_ids: Sequence[int]) -> dict[int, tuple[str, int]]:
        """{candidate id: (its rule, the people's decisions on that rule its run calibrated on)}
        for those of `candidate_ids` an extractor run named a rule for (the offline extractor's),
        from the counts the run recorded (`extraction_runs.calibration`)."""
        if not candidate_ids:
            return {}
        rows = await fetchall(
            self.conn,
            "SELECT c.id, c.rule, r.calibration FROM candidates c JOIN extraction_runs r ON r.id = c.run_id"
            f" WHERE c.id IN ({', '.join('?' * len(candidate_ids))}) AND c.rule IS NOT NULL",
            list(candidate_ids),
        )
        out: dict[int, tuple[str, int]] = {}
        for cid, rule, raw in rows:
            counts = json.loads(raw).get(rule, (0, 0)) if raw else (0, 0)
            out[int(cid)] = (str(rule), int(sum(counts)))
        return out

    async def decisions_since(self, actor: str, since_us: int) -> int:
        """How many candidates `actor` decided since `since_us` (a policy's daily allowance)."""
        row = await (
            await self.conn.execute(
                "SELECT count(*) FROM candidates WHERE decided_by = ? AND decided_at >= ?", (actor, since_us)
            )
        ).fetchone()
        return int(row[0])

    async def second_review_outcomes(self, first_reviewer: str) -> tuple[int, int]:
        """(second reviews of `first_reviewer`'s approvals, how many overturned them)."""
        row = await (
            await self.conn.execute(
                "SELECT count(*), coalesce(sum(CASE WHEN verdict = 'overturn' THEN 1 ELSE 0 END), 0)"
                " FROM second_reviews WHERE first_reviewer = ?",
                (first_reviewer,),
            )
        ).fetchone()
        return int(row[0]), int(row[1])

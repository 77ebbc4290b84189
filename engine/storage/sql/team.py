"""`TeamOps`: the statements behind engine/team.py (progress, figures, second opinions, sampled
second review, assignment), as methods of the transaction so the service writes no SQL.

They return rows (`row[0]`, tuples unpack); engine/team.py turns them into its records, which
keeps the record types next to the rules that define them and this module free of engine imports
beyond the shared SQL helpers. Every statement is portable: `?` placeholders, no SQLite-only
function, the sample hash is integer arithmetic both backends evaluate identically on BIGINT ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ...queue_filter import QueueFilter
from .conn import SqlConn
from .core import returned_id
from .policies import HASH_MULTIPLIER, HASH_SPACE, SAMPLE_SQL
from .queue import queue_where

__all__ = ["HASH_MULTIPLIER", "HASH_SPACE", "SAMPLE_SQL", "TeamOps"]

FLAG_COLS = "id, candidate_id, user_id, flagged_by, flagged_at, note, lean, withdrawn_at, withdrawn_by"
SECOND_REVIEW_COLS = (
    "id, candidate_id, knowledge_id, user_id, first_reviewer, first_decision, reviewer, verdict,"
    " decided_at, reason, note"
)
ASSIGNMENT_COLS = "id, user_id, reviewer, assigned_at, assigned_by"


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" * len(values))


class TeamOps(Protocol):
    """Mixed into SqlTx; `conn` is the transaction's connection (see SqlTx)."""

    conn: SqlConn

    async def _count(self, sql: str, args: Sequence[Any]) -> int:
        row = await (await self.conn.execute(sql, args)).fetchone()
        return int(row[0])

    # -- progress and figures -------------------------------------------------------------------

    async def decided_since_count(self, queue: QueueFilter, since_us: int) -> int:
        """Candidates matching the queue filter decided since then."""
        where, args = queue_where(queue, f"c.status != 'pending' AND c.decided_at >= {int(since_us)}")
        return await self._count(f"SELECT count(*) FROM candidates c WHERE {where}", args)

    async def live_flag_count(self, queue: QueueFilter, reviewer: str, *, by_reviewer: bool) -> int:
        """Pending candidates matching the queue filter with a live flag raised by `reviewer`
        (`by_reviewer`) or by anyone else."""
        where, args = queue_where(queue)
        op = "=" if by_reviewer else "!="
        return await self._count(
            f"SELECT count(*) FROM candidates c JOIN flags f ON f.candidate_id = c.id"
            f" AND f.withdrawn_at IS NULL WHERE {where} AND f.flagged_by {op} ?",
            [*args, reviewer],
        )

    async def decision_times(self, reviewer: str, since_us: int, decisions: Sequence[str]) -> list[int]:
        """When `reviewer` made each decision since then, in order."""
        rows = await (
            await self.conn.execute(
                f"SELECT at FROM audit_log WHERE entity = 'candidate' AND actor = ? AND at >= ?"
                f" AND action IN ({_marks(decisions)}) ORDER BY at, id",
                (reviewer, since_us, *decisions),
            )
        ).fetchall()
        return [int(r[0]) for r in rows]

    async def decision_events(
        self,
        lo: int,
        hi: int,
        user_id: str | None,
        decisions: Sequence[str],
    ) -> list[tuple[str, str, int]]:
        """(actor, action, at) of every decision, undo and flag on a candidate in [lo, hi)."""
        scope, scope_args = ("AND user_id = ?", [user_id]) if user_id is not None else ("", [])
        rows = await (
            await self.conn.execute(
                f"SELECT actor, action, at FROM audit_log WHERE entity = 'candidate' AND at >= ? AND at < ? {scope}"
                f" AND action IN ({_marks(decisions)}, 'undo', 'flag') ORDER BY at, id",
                (lo, hi, *scope_args, *decisions),
            )
        ).fetchall()
        return [(r[0], r[1], int(r[2])) for r in rows]

    async def second_review_comparison_rows(self, lo: int, hi: int, user_id: str | None) -> list[Any]:
        """(candidate_id, user_id, first_reviewer, reviewer, verdict, decided_at) in [lo, hi)."""
        scope, scope_args = ("AND user_id = ?", [user_id]) if user_id is not None else ("", [])
        return list(
            await (
                await self.conn.execute(
                    "SELECT candidate_id, user_id, first_reviewer, reviewer, verdict, decided_at FROM second_reviews"
                    f" WHERE decided_at >= ? AND decided_at < ? {scope} ORDER BY decided_at, id",
                    (lo, hi, *scope_args),
                )
            ).fetchall()
        )

    async def flag_comparison_rows(self, lo: int, hi: int, user_id: str | None) -> list[Any]:
        """(candidate id, user_id, flagger, lean, decided_by, status, decided_at) of candidates
        decided in [lo, hi) whose live flag said which way the flagger leans."""
        scope, scope_args = ("AND c.user_id = ?", [user_id]) if user_id is not None else ("", [])
        return list(
            await (
                await self.conn.execute(
                    "SELECT c.id, c.user_id, f.flagged_by, f.lean, c.decided_by, c.status, c.decided_at FROM flags f"
                    " JOIN candidates c ON c.id = f.candidate_id WHERE f.withdrawn_at IS NULL AND f.lean IS NOT NULL"
                    f" AND c.status != 'pending' AND c.decided_at >= ? AND c.decided_at < ? {scope}"
                    " ORDER BY c.decided_at, c.id",
                    (lo, hi, *scope_args),
                )
            ).fetchall()
        )

    # -- second opinions ------------------------------------------------------------------------

    async def insert_flag(
        self,
        candidate_id: int,
        user_id: str,
        flagged_by: str,
        note: str | None,
        lean: str | None,
        at: int,
    ) -> int:
        cur = await self.conn.execute(
            "INSERT INTO flags(candidate_id, user_id, flagged_by, note, lean, flagged_at)"
            " VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
            (candidate_id, user_id, flagged_by, note, lean, at),
        )
        return await returned_id(cur)

    async def flag_row(self, flag_id: int) -> Any:
        return await (await self.conn.execute(f"SELECT {FLAG_COLS} FROM flags WHERE id = ?", (flag_id,))).fetchone()

    async def live_flag_row(self, candidate_id: int) -> Any | None:
        return await (
            await self.conn.execute(
                f"SELECT {FLAG_COLS} FROM flags WHERE candidate_id = ? AND withdrawn_at IS NULL", (candidate_id,)
            )
        ).fetchone()

    async def withdraw_flag_row(self, flag_id: int, at: int, by: str) -> None:
        await self.conn.execute("UPDATE flags SET withdrawn_at = ?, withdrawn_by = ? WHERE id = ?", (at, by, flag_id))

    async def flag_rows(self, *, pending_only: bool, user_id: str | None) -> list[Any]:
        """Live flags (on pending candidates when `pending_only`), oldest first, FLAG_COLS order."""
        where = ["f.withdrawn_at IS NULL"]
        args: list[Any] = []
        if pending_only:
            where.append("c.status = 'pending'")
        if user_id is not None:
            where.append("f.user_id = ?")
            args.append(user_id)
        cols = ", ".join(f"f.{c.strip()}" for c in FLAG_COLS.split(","))
        return list(
            await (
                await self.conn.execute(
                    f"SELECT {cols} FROM flags f JOIN candidates c ON c.id = f.candidate_id WHERE {' AND '.join(where)}"
                    " ORDER BY f.flagged_at, f.id",
                    args,
                )
            ).fetchall()
        )

    # -- second review --------------------------------------------------------------------------

    @staticmethod
    def _sample_where(decisions: Sequence[str], reviewer: str, threshold: int) -> tuple[str, list[Any]]:
        """An approval is in the sample when the secret draw stored at approval time (a policy's or a
        person's: engine/policies.py, engine/review.py), or a later draw, put it there (SAMPLE_SQL),
        which nothing an agent sees can predict; `threshold` is the legacy id hash's bound, for a
        person's approval made before draws were stored."""
        return (
            f"c.status = 'approved' AND c.decision IN ({_marks(decisions)}) AND c.decided_by != ?"
            f" AND {SAMPLE_SQL}"
            " AND k.status = 'active' AND NOT EXISTS"
            " (SELECT 1 FROM second_reviews s WHERE s.candidate_id = c.id AND s.knowledge_id = c.knowledge_id)",
            [*decisions, reviewer, threshold],
        )

    async def oldest_sampled_approval(self, decisions: Sequence[str], threshold: int) -> tuple[int, int | None]:
        """(approvals in the sample that nobody second-reviewed yet, whoever may review them; when
        the oldest was decided): the second-review backlog's size and age."""
        where, args = self._sample_where(decisions, "", threshold)
        row = await (
            await self.conn.execute(
                f"SELECT count(*), min(c.decided_at) FROM candidates c JOIN knowledge k ON k.id = c.knowledge_id"
                f" WHERE {where}",
                args,
            )
        ).fetchone()
        return int(row[0]), None if row[1] is None else int(row[1])

    async def sampled_approval_count(self, decisions: Sequence[str], reviewer: str, threshold: int) -> int:
        """Approvals (by `decisions`) in the sample (hash < threshold) that `reviewer` did not make,
        whose fact is active and that nobody second-reviewed yet."""
        where, args = self._sample_where(decisions, reviewer, threshold)
        return await self._count(
            f"SELECT count(*) FROM candidates c JOIN knowledge k ON k.id = c.knowledge_id WHERE {where}", args
        )

    async def sampled_approval_rows(
        self,
        decisions: Sequence[str],
        reviewer: str,
        threshold: int,
        limit: int,
        offset: int,
    ) -> list[Any]:
        """The approvals `sampled_approval_count` counts, oldest decision first: (candidate id,
        user_id, knowledge id, statement, kind, confidence, evidence, valid_at, invalid_at)."""
        where, args = self._sample_where(decisions, reviewer, threshold)
        return list(
            await (
                await self.conn.execute(
                    "SELECT c.id, c.user_id, k.id, k.statement, c.kind, c.confidence, c.evidence, k.valid_at,"
                    " k.invalid_at FROM candidates c JOIN knowledge k ON k.id = c.knowledge_id"
                    f" WHERE {where} ORDER BY c.decided_at, c.id LIMIT ? OFFSET ?",
                    (*args, int(limit), int(offset)),
                )
            ).fetchall()
        )

    async def blind_spot_rows(
        self,
        decisions: Sequence[str],
        reviewer: str,
        threshold: int,
        user_id: str | None,
    ) -> list[Any]:
        """The approvals `sampled_approval_count` counts (of one user, or all), every one:
        (candidate id, knowledge id, user_id, decided_by, decided_at)."""
        where, args = self._sample_where(decisions, reviewer, threshold)
        scope, scope_args = (" AND c.user_id = ?", [user_id]) if user_id is not None else ("", [])
        return list(
            await (
                await self.conn.execute(
                    "SELECT c.id, c.knowledge_id, c.user_id, c.decided_by, c.decided_at FROM candidates c"
                    f" JOIN knowledge k ON k.id = c.knowledge_id WHERE {where}{scope}",
                    (*args, *scope_args),
                )
            ).fetchall()
        )

    async def second_reviewer_of(self, candidate_id: int, knowledge_id: int) -> str | None:
        """Who already second-reviewed this approval (of this fact), if anyone."""
        row = await (
            await self.conn.execute(
                "SELECT reviewer FROM second_reviews WHERE candidate_id = ? AND knowledge_id = ?",
                (candidate_id, knowledge_id),
            )
        ).fetchone()
        return None if row is None else str(row[0])

    async def insert_second_review(self, values: Sequence[Any]) -> Any:
        """`values` in SECOND_REVIEW_COLS order without the id; returns the stored row."""
        cur = await self.conn.execute(
            f"INSERT INTO second_reviews({SECOND_REVIEW_COLS.split(', ', 1)[1]}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " RETURNING id",
            tuple(values),
        )
        return await (
            await self.conn.execute(
                f"SELECT {SECOND_REVIEW_COLS} FROM second_reviews WHERE id = ?", (await returned_id(cur),)
            )
        ).fetchone()

    async def delete_second_review(self, review_id: int) -> None:
        """Remove one recorded verdict (its undo: the audit log keeps it)."""
        await self.conn.execute("DELETE FROM second_reviews WHERE id = ?", (review_id,))

    async def second_review_rows(self, user_id: str | None) -> list[Any]:
        scope, args = ("WHERE user_id = ?", [user_id]) if user_id is not None else ("", [])
        return list(
            await (
                await self.conn.execute(
                    f"SELECT {SECOND_REVIEW_COLS} FROM second_reviews {scope} ORDER BY decided_at, id", args
                )
            ).fetchall()
        )

    # -- assignment -----------------------------------------------------------------------------

    async def user_candidate_count(self, user_id: str) -> int:
        return await self._count("SELECT count(*) FROM candidates WHERE user_id = ?", [user_id])

    async def assignment_row(self, user_id: str) -> Any | None:
        return await (
            await self.conn.execute(f"SELECT {ASSIGNMENT_COLS} FROM assignments WHERE user_id = ?", (user_id,))
        ).fetchone()

    async def assignment_rows(self, reviewer: str | None) -> list[Any]:
        scope, args = ("WHERE reviewer = ?", [reviewer]) if reviewer is not None else ("", [])
        return list(
            await (
                await self.conn.execute(
                    f"SELECT {ASSIGNMENT_COLS} FROM assignments {scope} ORDER BY user_id",
                    args,
                )
            ).fetchall()
        )

    async def delete_assignment(self, assignment_id: int) -> None:
        await self.conn.execute("DELETE FROM assignments WHERE id = ?", (assignment_id,))

    async def insert_assignment(self, user_id: str, reviewer: str, at: int, by: str) -> int:
        cur = await self.conn.execute(
            "INSERT INTO assignments(user_id, reviewer, assigned_at, assigned_by) VALUES (?, ?, ?, ?) RETURNING id",
            (user_id, reviewer, at, by),
        )
        return await returned_id(cur)

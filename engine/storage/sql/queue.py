"""`QueueOps`: the `candidates` table, the review queue: intake, the filter and the orders of the
queue, claims, decisions and their undo, and supersession chains between pending candidates.
engine/review.py, engine/knowledge.py and engine/extraction/pipeline.py change these rows; each
change has its audit row (entity `candidate`) in the same transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ...categories import ANY_SPECIAL, category_of, gender_facts, names_partner, normalised
from ...errors import NotFoundError, UserInputError
from ...models import (
    Candidate,
    Mark,
)
from ...queue_filter import QueueFilter
from ...text import value_key
from ...timeutil import to_us
from .core import TxCore, fetchall, returned_id
from .records import (
    CANDIDATE_COLS,
    CANDIDATE_FROM,
    DECIDED_BY_PEOPLE,
    MAX_ID,
    OVERTURNED,
    candidate_from_row,
    marks_to_json,
)

_CANDIDATE_INSERT_FIELDS = (
    "user_id",
    "episode_id",
    "run_id",
    "statement",
    "evidence",
    "kind",
    "supersedes_id",
    "confidence",
    "valid_at",
    "invalid_at",
    "unsupported",
    "created_at",
    "created_by",
    "reason",
    "supersedes_candidate_id",
    "category",
    "rule",
    "marks",
)


def queue_where(queue: QueueFilter, status_clause: str = "c.status = 'pending'") -> tuple[str, list[Any]]:
    """The queue filter as SQL on `candidates c`: the one translation of a `QueueFilter`, used by
    the queue's pages, counts and marks and by the team's progress. `status_clause` lets progress
    (engine/team.py) count the decided candidates of the very same filter."""
    where: list[str] = [status_clause]
    args: list[Any] = []
    if queue.assigned_to is not None:
        where.append("c.user_id IN (SELECT a.user_id FROM assignments a WHERE a.reviewer = ?)")
        args.append(queue.assigned_to)
    for column, op, value in (
        ("user_id", "=", queue.user_id),
        ("kind", "=", queue.kind),
        ("confidence", ">=", queue.min_confidence),
        ("confidence", "<=", queue.max_confidence),
        ("unsupported", "=", None if queue.unsupported is None else int(queue.unsupported)),
    ):
        if value is not None:
            where.append(f"c.{column} {op} ?")
            args.append(value)
    if queue.category == ANY_SPECIAL:
        where.append("c.category IS NOT NULL")
    elif queue.category is not None:
        where.append("c.category = ?")
        args.append(queue.category)
    if queue.search:
        where.append("(c.statement LIKE ? ESCAPE '\\' OR c.user_id LIKE ? ESCAPE '\\')")
        pattern = "%" + queue.search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        args += [pattern, pattern]
    return " AND ".join(where), args


QUEUE_SORTS: dict[str, str] = {
    "age": "",
    "user": "c.user_id, ",
    "kind": "c.kind, ",
    "confidence": "c.confidence DESC NULLS LAST, ",  # NULL (not measured) last on both backends
}
"""How the queue may be ordered (and so grouped): a key first, then age within it, so pages stay
stable while reviewers work and a user's (or a kind's) candidates sit together."""


class QueueOps(TxCore, Protocol):
    """Candidates: what waits for a reviewer, and what was decided."""

    async def get_candidate(self, candidate_id: int, user_id: str | None = None) -> Candidate:
        row = None
        if 0 < candidate_id <= MAX_ID:
            row = await (
                await self.conn.execute(
                    f"SELECT {CANDIDATE_COLS} FROM {CANDIDATE_FROM} WHERE c.id = ?", (candidate_id,)
                )
            ).fetchone()
        if row is None or (user_id is not None and row[1] != user_id):
            owner = f" for user {user_id!r}" if user_id is not None else ""
            raise NotFoundError(f"no candidate {candidate_id}{owner}")
        return candidate_from_row(row)

    async def insert_candidate(
        self,
        *,
        user_id: str,
        statement: str,
        kind: str,
        confidence: float | None,
        created_at: int,
        evidence: str = "",
        supersedes_id: int | None = None,
        valid_at: int | None = None,
        invalid_at: int | None = None,
        episode_id: int | None = None,
        run_id: int | None = None,
        unsupported: bool = False,
        created_by: str | None = None,
        reason: str | None = None,
        supersedes_candidate_id: int | None = None,
        category: str | None = None,
        marks: Sequence[Mark] = (),
    ) -> int:
        """One pending candidate; `category` is the extractor's label, checked and else derived from
        the statement (engine.categories), so every path that queues sets it the same way; `marks`
        what the intake noticed (engine.gate)."""
        category = await self._category_of(user_id, statement, category)
        cur = await self.conn.execute(
            "INSERT INTO candidates(user_id, episode_id, run_id, statement, key, evidence, kind, supersedes_id,"
            " confidence, valid_at, invalid_at, unsupported, status, created_at, created_by, reason,"
            " supersedes_candidate_id, category, marks)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?) RETURNING id",
            (
                user_id,
                episode_id,
                run_id,
                statement,
                value_key(statement),
                evidence,
                kind,
                supersedes_id,
                confidence,
                valid_at,
                invalid_at,
                int(unsupported),
                created_at,
                created_by,
                reason,
                supersedes_candidate_id,
                category,
                marks_to_json(marks),
            ),
        )
        return await returned_id(cur)

    async def _category_of(self, user_id: str, statement: str, label: object) -> str | None:
        """`category_of`, with the user's active facts as context when the statement names a
        gendered partner (only then does the user's own gender matter: engine.categories)."""
        if normalised(label) is None and names_partner(statement):
            rows = await fetchall(
                self.conn, "SELECT statement FROM knowledge WHERE user_id = ? AND status = 'active'", (user_id,)
            )
            return category_of(statement, label, gender_facts(str(r[0]) for r in rows))
        return category_of(statement, label)

    async def insert_candidates_many(self, rows: Sequence[dict[str, Any]]) -> list[int]:
        """Pending candidates from dicts of `insert_candidate`'s keyword arguments, in one executemany
        (the pipeline queues an episode's survivors at once). Ids are the rows' "id" values when every
        row has one (handed out by `id_source`), else from `id_source` here."""
        if not rows:
            return []
        if all(row.get("id") is not None for row in rows):  # ids the caller handed out under the write lock
            ids = [int(row["id"]) for row in rows]
        else:
            source = self.id_source("candidates")
            await source.reserve(len(rows))  # one fetch for the batch (one sequence call on PostgreSQL)
            ids = [source.take() for _ in rows]
        names = ", ".join(_CANDIDATE_INSERT_FIELDS)
        categories = [await self._category_of(row["user_id"], row["statement"], row.get("category")) for row in rows]
        await self.conn.executemany(
            f"INSERT INTO candidates(id, key, status, {names}) VALUES (?, ?, 'pending', "
            f"{', '.join('?' * len(_CANDIDATE_INSERT_FIELDS))})",
            [
                (
                    cid,
                    value_key(row["statement"]),
                    *(
                        int(bool(row.get(f)))
                        if f == "unsupported"
                        else category
                        if f == "category"
                        else marks_to_json(row.get(f) or ())
                        if f == "marks"
                        else row.get(f, "" if f == "evidence" else None)
                        for f in _CANDIDATE_INSERT_FIELDS
                    ),
                )
                for cid, row, category in zip(ids, rows, categories, strict=True)
            ],
        )
        return ids

    async def mark_decided(
        self,
        candidate_id: int,
        *,
        status: str,
        decision: str,
        decided_by: str,
        decided_at: int,
        reason: str | None = None,
        knowledge_id: int | None = None,
        statement: str | None = None,
        valid_at: int | None = None,
        invalid_at: int | None = None,
        edited: bool = False,
    ) -> bool:
        """Flip a pending candidate to decided. Returns False when it was no longer pending: the
        `status = 'pending'` guard inside BEGIN IMMEDIATE is what makes two racing reviewers safe."""
        sets = [
            "status = ?",
            "decision = ?",
            "decided_by = ?",
            "decided_at = ?",
            "reason = ?",
            "knowledge_id = ?",
            "claimed_by = NULL",
            "claimed_until = NULL",
        ]
        args: list[Any] = [status, decision, decided_by, decided_at, reason, knowledge_id]
        if edited:
            sets += ["statement = ?", "key = ?", "valid_at = ?", "invalid_at = ?"]
            args += [statement, value_key(statement or ""), valid_at, invalid_at]
        cur = await self.conn.execute(
            f"UPDATE candidates SET {', '.join(sets)} WHERE id = ? AND status = 'pending'", (*args, candidate_id)
        )
        return cur.rowcount == 1

    async def restore_candidate(self, before: Candidate) -> None:
        """Put a candidate back exactly as it was before a decision (undo)."""

        await self.conn.execute(
            "UPDATE candidates SET status = 'pending', decision = NULL, decided_by = NULL, decided_at = NULL,"
            " reason = ?, knowledge_id = NULL, claimed_by = NULL, claimed_until = NULL, statement = ?, key = ?,"
            " valid_at = ?, invalid_at = ? WHERE id = ?",
            (
                before.reason,
                before.statement,
                value_key(before.statement),
                to_us(before.valid_at),
                to_us(before.invalid_at),
                before.id,
            ),
        )

    async def candidates_naming(self, knowledge_id: int, *, excluding: int) -> list[int]:
        """Ids of candidates (any status) whose supersedes_id names the fact, other than `excluding`."""
        rows = await (
            await self.conn.execute(
                "SELECT id FROM candidates WHERE supersedes_id = ? AND id != ? ORDER BY id", (knowledge_id, excluding)
            )
        ).fetchall()
        return [int(r[0]) for r in rows]

    async def chained_to(self, candidate_id: int) -> list[Candidate]:
        """PENDING candidates that would replace `candidate_id` (their supersedes_candidate_id), oldest
        first: the links a decision on that candidate must re-point or cut."""
        rows = await (
            await self.conn.execute(
                f"SELECT {CANDIDATE_COLS} FROM {CANDIDATE_FROM}"
                " WHERE c.supersedes_candidate_id = ? AND c.status = 'pending'"
                " ORDER BY c.id",
                (candidate_id,),
            )
        ).fetchall()
        return [candidate_from_row(r) for r in rows]

    async def untargeted_pending(self, user_id: str) -> list[tuple[int, str]]:
        """(id, statement) of the user's pending new and proposed candidates that replace nothing:
        the ones a fact becoming active may turn into its update (engine.gate.activate)."""
        rows = await fetchall(
            self.conn,
            "SELECT id, statement FROM candidates WHERE user_id = ? AND status = 'pending'"
            " AND kind IN ('new', 'proposed') AND supersedes_id IS NULL AND supersedes_candidate_id IS NULL"
            " ORDER BY id",
            (user_id,),
        )
        return [(int(r[0]), str(r[1])) for r in rows]

    async def set_candidate_target(
        self,
        candidate_id: int,
        *,
        kind: str,
        supersedes_id: int | None,
        supersedes_candidate_id: int | None,
    ) -> None:
        """What a pending candidate would replace (chains, retarget, and their undo)."""
        await self.conn.execute(
            "UPDATE candidates SET kind = ?, supersedes_id = ?, supersedes_candidate_id = ? WHERE id = ?",
            (kind, supersedes_id, supersedes_candidate_id, candidate_id),
        )

    async def pending_retraction(self, user_id: str, knowledge_id: int) -> int | None:
        """The id of a pending request to retract the fact, if one exists: one probe of the
        candidates_supersedes index (supersedes_id, kind, status), never a scan of the queue."""
        row = await (
            await self.conn.execute(
                "SELECT id FROM candidates WHERE supersedes_id = ? AND kind = 'retraction' AND status = 'pending'"
                " AND user_id = ? ORDER BY id LIMIT 1",
                (knowledge_id, user_id),
            )
        ).fetchone()
        return int(row[0]) if row else None

    async def pending_agent_requests(self, user_id: str) -> int:
        """Pending proposals and retraction requests of one user (what an agent may file)."""
        row = await (
            await self.conn.execute(
                "SELECT count(*) FROM candidates WHERE user_id = ? AND status = 'pending'"
                " AND kind IN ('proposed', 'retraction')",
                (user_id,),
            )
        ).fetchone()
        return int(row[0])

    async def claim_candidate(self, candidate_id: int, reviewer: str, now: int, until: int) -> bool:
        cur = await self.conn.execute(
            "UPDATE candidates SET claimed_by = ?, claimed_until = ? WHERE id = ? AND status = 'pending'"
            " AND (claimed_by IS NULL OR claimed_by = ? OR claimed_until <= ?)",
            (reviewer, until, candidate_id, reviewer, now),
        )
        return cur.rowcount == 1

    async def release_candidate(self, candidate_id: int, reviewer: str) -> None:
        await self.conn.execute(
            "UPDATE candidates SET claimed_by = NULL, claimed_until = NULL WHERE id = ? AND claimed_by = ?",
            (candidate_id, reviewer),
        )

    async def pending(
        self,
        queue: QueueFilter,
        *,
        limit: int = 50,
        offset: int = 0,
        newest_first: bool = False,
        sort: str = "age",
    ) -> list[Candidate]:
        """One page of the queue under `queue`, ordered by `sort` (QUEUE_SORTS) then by age."""
        where, args = queue_where(queue)
        if sort not in QUEUE_SORTS:
            raise UserInputError(f"unknown queue order {sort!r}: use one of {', '.join(QUEUE_SORTS)}")
        order = "DESC" if newest_first else "ASC"
        rows = await (
            await self.conn.execute(
                f"SELECT {CANDIDATE_COLS} FROM {CANDIDATE_FROM} WHERE {where}"
                f" ORDER BY {QUEUE_SORTS[sort]}c.created_at {order}, c.id {order} LIMIT ? OFFSET ?",
                (*args, int(limit), int(offset)),
            )
        ).fetchall()
        return [candidate_from_row(r) for r in rows]

    async def pending_count(self, queue: QueueFilter) -> int:
        where, args = queue_where(queue)
        row = await (await self.conn.execute(f"SELECT count(*) FROM candidates c WHERE {where}", args)).fetchone()
        return int(row[0])

    async def pending_mark(self, queue: QueueFilter) -> tuple[int, int]:
        """(how many candidates are pending under the filter, the largest of their ids or 0)."""
        where, args = queue_where(queue)
        [row] = await fetchall(
            self.conn, f"SELECT count(*), coalesce(max(c.id), 0) FROM candidates c WHERE {where}", args
        )
        return int(row[0]), int(row[1])

    async def rule_decisions(self, extractor: str) -> dict[str, tuple[int, int]]:
        """{rule: (approved, rejected)} over the candidates of `extractor`'s runs that name their
        rule and that people decided: what the offline extractor calibrates its confidence on. An
        approval a second reviewer overturned counts as rejected: the second person's is the last word."""
        rows = await fetchall(
            self.conn,
            f"SELECT c.rule, sum(CASE WHEN c.status = 'approved' AND NOT {OVERTURNED} THEN 1 ELSE 0 END),"
            f" sum(CASE WHEN c.status = 'rejected' OR {OVERTURNED} THEN 1 ELSE 0 END) FROM candidates c"
            " JOIN extraction_runs r ON r.id = c.run_id WHERE r.extractor = ? AND c.rule IS NOT NULL"
            f" AND c.status IN ('approved', 'rejected') AND ({DECIDED_BY_PEOPLE} OR {OVERTURNED}) GROUP BY c.rule",
            [extractor],
        )
        return {str(r[0]): (int(r[1]), int(r[2])) for r in rows}

    async def pending_age(self, cutoff_us: int, queue: QueueFilter) -> tuple[int | None, int]:
        """(created_at of the oldest candidate pending under the filter or None, how many of them
        were created before `cutoff_us`): the queue's age against its SLA."""
        where, args = queue_where(queue)
        [row] = await fetchall(
            self.conn,
            f"SELECT min(c.created_at), coalesce(sum(CASE WHEN c.created_at < ? THEN 1 ELSE 0 END), 0)"
            f" FROM candidates c WHERE {where}",
            [cutoff_us, *args],
        )
        return (None if row[0] is None else int(row[0])), int(row[1])

    async def user_candidates(self, user_id: str) -> list[Candidate]:
        """Every candidate of the user, whatever its status, oldest first (export)."""
        rows = await (
            await self.conn.execute(
                f"SELECT {CANDIDATE_COLS} FROM {CANDIDATE_FROM} WHERE c.user_id = ? ORDER BY c.created_at, c.id",
                (user_id,),
            )
        ).fetchall()
        return [candidate_from_row(r) for r in rows]

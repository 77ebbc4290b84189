"""`KnowledgeOps`: the `knowledge` table, facts as the engine believes them: insert (each backend
writes its own search and vector rows), end, supersede, reactivate, delete on undo, list, and the
vector arm of retrieval. A fact becomes active only through engine.gate.activate (called by
engine/review.py, engine/knowledge.py and engine/team.py); it ends through the gate, a retraction
(engine/knowledge.retract_in) or undo (engine/review.py). Each caller writes the audit row (entity
`knowledge`) in the same transaction (TxCore.audit).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from ...errors import NotFoundError
from ...models import (
    Knowledge,
)
from ...timeutil import to_us
from .core import TxCore
from .records import (
    KNOWLEDGE_COLS,
    MAX_ID,
    knowledge_from_row,
)
from .text_arm import STILL_TRUE_SQL

Vector = list[float] | np.ndarray[Any, np.dtype[np.float32]]
"""A fact's vector as a write takes it: a list, or a float32 row of an import's matrix
(engine.embedders.embed_matrix), stored as it is without a Python float per dimension."""


class KnowledgeOps(TxCore, Protocol):
    """Facts: the rows retrieval reads."""

    @abstractmethod
    async def insert_knowledge(
        self,
        *,
        user_id: str,
        statement: str,
        embedding: list[float],
        created_at: int,
        created_by: str,
        confidence: float | None = 1.0,
        valid_at: int | None = None,
        invalid_at: int | None = None,
        candidate_id: int | None = None,
        episode_id: int | None = None,
    ) -> int:
        """A new active fact with its search and vector data; returns its id (never one an undone
        or erased fact had: AUTOINCREMENT / an identity column)."""

    @abstractmethod
    async def insert_knowledge_many(
        self,
        rows: Sequence[tuple[str, str, Vector, int | None, int | None, float]],
        *,
        created_at: int,
        created_by: str,
    ) -> list[int]:
        """Bulk `insert_knowledge` for (user_id, statement, embedding, valid_at, invalid_at,
        confidence) rows, ids in row order."""

    @abstractmethod
    async def vector_arm(
        self,
        user_id: str,
        embedding: list[float],
        k: int,
        *,
        at_time: int | None,
        known_at: int | None,
        include_expired: bool,
        max_distance: float | None = None,
    ) -> list[int]:
        """The k nearest facts of this user that pass the belief rule (`_belief_filter`), nearest
        first, with every predicate applied BEFORE k is cut (top_k is always full). `max_distance`
        (cosine distance, 1 - similarity): the nearest facts farther than that are left out (the
        relevance floor), so the list may then be shorter than k."""

    @abstractmethod
    async def active_vectors(self, user_id: str) -> list[tuple[int, str, bytes]]:
        """(id, statement, vector as little-endian float32 bytes) of each of the user's active facts,
        in id order: what an import compares free text with (engine.gate.ImportNeighbours), read
        once per import instead of one nearest-neighbour query a statement."""

    async def get_knowledge(self, user_id: str, knowledge_id: int) -> Knowledge:
        """The fact, or NotFoundError: an id of another user reads exactly like an unknown id."""
        if not 0 < knowledge_id <= MAX_ID:
            raise NotFoundError(f"no fact {knowledge_id} for user {user_id!r}")
        row = await (
            await self.conn.execute(
                f"SELECT {KNOWLEDGE_COLS} FROM knowledge WHERE id = ? AND user_id = ?", (knowledge_id, user_id)
            )
        ).fetchone()
        if row is None:
            raise NotFoundError(f"no fact {knowledge_id} for user {user_id!r}")
        return knowledge_from_row(row)

    async def end_knowledge(
        self,
        knowledge_id: int,
        *,
        status: str,
        expired_at: int,
        end_reason: str,
        superseded_by: int | None = None,
    ) -> None:
        """Belief in the fact ends (superseded or retracted); the row stays, as history. The vector
        row's `still_true` follows `end_reason` (see schema.STILL_TRUE_SQL): a fact ended because the
        world changed stays readable for its valid period; one ended as wrong does not."""
        await self.conn.execute(
            "UPDATE knowledge SET status = ?, expired_at = ?, end_reason = ?, superseded_by = ? WHERE id = ?",
            (status, expired_at, end_reason, superseded_by, knowledge_id),
        )

    async def supersede_fact(
        self,
        old: Knowledge,
        new_id: int,
        new_start: int | None,
        *,
        expired_at: int,
        end_reason: str,
    ) -> None:
        """`old` is replaced by fact `new_id`, which starts at `new_start` (valid time, µs): belief in
        `old` ends, and its valid time is closed at the new start when that start falls strictly
        inside the old interval. A start at or before the old start would leave an empty interval,
        and one at or after the old end would lengthen it, so both leave the interval as it was."""
        await self.end_knowledge(
            old.id, status="superseded", expired_at=expired_at, end_reason=end_reason, superseded_by=new_id
        )
        old_start, old_end = to_us(old.valid_at), to_us(old.invalid_at)
        if (
            new_start is not None
            and (old_start is None or new_start > old_start)
            and (old_end is None or new_start < old_end)
        ):
            await self.close_valid_time(old.id, new_start)

    async def replaced_by(self, knowledge_id: int) -> list[Knowledge]:
        """Facts whose superseded_by names this one (what it replaced), oldest first."""
        rows = await (
            await self.conn.execute(
                f"SELECT {KNOWLEDGE_COLS} FROM knowledge WHERE superseded_by = ? ORDER BY id", (knowledge_id,)
            )
        ).fetchall()
        return [knowledge_from_row(r) for r in rows]

    async def close_valid_time(self, knowledge_id: int, invalid_at: int) -> None:
        """End the fact's valid time at `invalid_at` (a confirmed supersession: the new fact's start),
        keeping the end it had so that a `known_at` read of an earlier moment and undo both see it."""
        await self.conn.execute(
            "UPDATE knowledge SET valid_closed = 1, prior_invalid_at = invalid_at, invalid_at = ? WHERE id = ?",
            (invalid_at, knowledge_id),
        )

    async def reactivate_knowledge(self, knowledge_id: int) -> None:
        """Undo of `end_knowledge` (and of `close_valid_time`: the end it replaced comes back)."""
        await self.conn.execute(
            "UPDATE knowledge SET status = 'active', expired_at = NULL, end_reason = NULL, superseded_by = NULL,"
            " invalid_at = CASE WHEN valid_closed = 1 THEN prior_invalid_at ELSE invalid_at END,"
            " valid_closed = 0, prior_invalid_at = NULL WHERE id = ?",
            (knowledge_id,),
        )

    async def delete_knowledge(self, knowledge_id: int) -> None:
        """Only undo (the exact inverse of the approval that created the row) and erasure delete."""
        await self.conn.execute("UPDATE candidates SET knowledge_id = NULL WHERE knowledge_id = ?", (knowledge_id,))
        await self.conn.execute("UPDATE tombstones SET knowledge_id = NULL WHERE knowledge_id = ?", (knowledge_id,))
        await self.conn.execute("DELETE FROM knowledge WHERE id = ?", (knowledge_id,))

    async def list_knowledge(
        self,
        user_id: str,
        *,
        include_expired: bool = False,
        at_time: int | None = None,
        search: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[Knowledge]:
        """One user's facts, oldest first. Without `include_expired`: current belief (active facts), or
        with `at_time` the valid-time rule of `text_arm` (facts still believed true for their period)."""
        where: list[str] = ["user_id = ?"]
        args: list[Any] = [user_id]
        if not include_expired:
            where.append(STILL_TRUE_SQL.format(k="knowledge") + " = 1" if at_time is not None else "status = 'active'")
        if at_time is not None:
            where.append("(valid_at IS NULL OR valid_at <= ?) AND (invalid_at IS NULL OR invalid_at > ?)")
            args += [at_time, at_time]
        if search:
            where.append("statement LIKE ? ESCAPE '\\'")
            args.append("%" + search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%")
        sql = f"SELECT {KNOWLEDGE_COLS} FROM knowledge WHERE {' AND '.join(where)} ORDER BY created_at, id"
        if limit is not None:
            sql += f" LIMIT {int(limit)} OFFSET {int(offset)}"
        rows = await (await self.conn.execute(sql, args)).fetchall()
        return [knowledge_from_row(r) for r in rows]

    async def version_chain(self, user_id: str, knowledge_id: int) -> list[Knowledge]:
        """Every version of a fact, oldest first: follow superseded_by back and forth."""
        start = await self.get_knowledge(user_id, knowledge_id)
        chain = [start]
        current = start
        while True:  # back: who was superseded by `current`?
            row = await (
                await self.conn.execute(
                    f"SELECT {KNOWLEDGE_COLS} FROM knowledge WHERE superseded_by = ? AND user_id = ?",
                    (current.id, user_id),
                )
            ).fetchone()
            if row is None:
                break
            current = knowledge_from_row(row)
            chain.insert(0, current)
        current = start
        while current.superseded_by is not None:
            current = await self.get_knowledge(user_id, current.superseded_by)
            chain.append(current)
        return chain

    async def knowledge_by_ids(self, ids: Sequence[int]) -> dict[int, Knowledge]:
        if not ids:
            return {}
        rows = await (
            await self.conn.execute(
                f"SELECT {KNOWLEDGE_COLS} FROM knowledge WHERE id IN ({','.join('?' * len(ids))})", list(ids)
            )
        ).fetchall()
        return {r[0]: knowledge_from_row(r) for r in rows}

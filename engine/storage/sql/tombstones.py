"""`TombstoneOps`: the `tombstones` table (a rejected value, keyed, so it is never proposed again)
and the gate views: what the tombstone, duplicate and activation gates (engine/gate.py) compare a
statement against, read in one or two statements inside the writing transaction. Tombstones are
written by rejections and retractions (engine/knowledge.write_tombstone) and lifted by
engine/knowledge.py or by the activation gate (engine/gate.py), audited as entity `tombstone`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ...errors import NotFoundError
from ...models import (
    Candidate,
    Tombstone,
)
from ...text import ValueIndex, value_key
from .core import TxCore, fetchall, returned_id
from .records import (
    CANDIDATE_COLS,
    CANDIDATE_FROM,
    TOMBSTONE_COLS,
    candidate_from_row,
    tombstone_from_row,
)

LiveEntry = tuple[str, int, str]  # ('knowledge' | 'candidate', id, statement)


@dataclass(slots=True)
class GateView:
    """What the gates of one episode compare against, read inside the episode's write transaction
    (two queries): the user's live tombstones, and the ACTIVE facts plus PENDING candidates a claim
    can duplicate (`live`), each as (entity, id, statement). `pending` keeps the candidates whole,
    for the chain rule and for what the next episode's extractor is shown."""

    tombstones: ValueIndex[LiveEntry]
    live: ValueIndex[LiveEntry]
    pending: list[Candidate]
    active_ids: set[int]
    # the active facts as (id, statement), for replacement detection (engine.gate)
    facts: list[tuple[int, str]] = field(default_factory=list)
    # values corrected away: (the active fact that now holds the corrected value, the old statement)
    corrected: ValueIndex[tuple[int, str]] = field(default_factory=ValueIndex)
    # each active fact's valid interval (µs, None for an open end): a replacement needs an overlap
    intervals: dict[int, tuple[int | None, int | None]] = field(default_factory=dict)
    # what engine.gate derives from the rows above once per view (the claims of the live entries)
    derived: dict[str, Any] = field(default_factory=dict)


class TombstoneOps(TxCore, Protocol):
    """Tombstones, gate views and duplicates."""

    async def insert_tombstone(
        self,
        *,
        user_id: str,
        statement: str,
        reason: str,
        created_by: str,
        created_at: int,
        candidate_id: int | None = None,
        knowledge_id: int | None = None,
    ) -> int:
        cur = await self.conn.execute(
            "INSERT INTO tombstones(user_id, key, statement, reason, created_by, created_at, candidate_id,"
            " knowledge_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (user_id, value_key(statement), statement, reason, created_by, created_at, candidate_id, knowledge_id),
        )
        return await returned_id(cur)

    async def get_tombstone(self, user_id: str, tombstone_id: int) -> Tombstone:
        row = await (
            await self.conn.execute(
                f"SELECT {TOMBSTONE_COLS} FROM tombstones WHERE id = ? AND user_id = ?", (tombstone_id, user_id)
            )
        ).fetchone()
        if row is None:
            raise NotFoundError(f"no tombstone {tombstone_id} for user {user_id!r}")
        return tombstone_from_row(row)

    async def tombstone_for(
        self, *, candidate_id: int | None = None, knowledge_id: int | None = None
    ) -> Tombstone | None:
        column, value = ("candidate_id", candidate_id) if candidate_id is not None else ("knowledge_id", knowledge_id)
        row = await (
            await self.conn.execute(
                f"SELECT {TOMBSTONE_COLS} FROM tombstones WHERE {column} = ? ORDER BY id DESC LIMIT 1", (value,)
            )
        ).fetchone()
        return tombstone_from_row(row) if row else None

    async def list_tombstones(self, user_id: str | None, include_lifted: bool = False) -> list[Tombstone]:
        where: list[str] = []
        args: list[Any] = []
        if user_id is not None:
            where.append("user_id = ?")
            args.append(user_id)
        if not include_lifted:
            where.append("lifted_at IS NULL")
        sql = f"SELECT {TOMBSTONE_COLS} FROM tombstones"
        if where:
            sql += " WHERE " + " AND ".join(where)
        rows = await (await self.conn.execute(sql + " ORDER BY created_at, id", args)).fetchall()
        return [tombstone_from_row(r) for r in rows]

    async def lift_tombstone(self, tombstone_id: int, *, at: int, by: str, reason: str) -> None:
        await self.conn.execute(
            "UPDATE tombstones SET lifted_at = ?, lifted_by = ?, lift_reason = ? WHERE id = ?",
            (at, by, reason, tombstone_id),
        )

    async def delete_tombstone(self, tombstone_id: int) -> None:
        await self.conn.execute("DELETE FROM tombstones WHERE id = ?", (tombstone_id,))

    async def gate_view(self, user_id: str, known: Sequence[Candidate] = (), *, whole: bool = True) -> GateView:
        """One query for the keys (stored, never recomputed) of the user's active facts, live tombstones
        and pending candidates; whole candidate rows are read only for pending candidates not in
        `known` (what the caller already holds, e.g. from its previous episode), and not at all
        with `whole=False` (`pending` is then empty: the intake of one statement needs only keys)."""
        rows = await fetchall(
            self.conn,
            "SELECT 'knowledge', id, key, statement, valid_at, invalid_at FROM knowledge"
            " WHERE user_id = ? AND status = 'active'"
            " UNION ALL SELECT 'tombstone', id, key, statement, NULL, NULL FROM tombstones"
            " WHERE user_id = ? AND lifted_at IS NULL"
            # pending candidates that state a value (retraction requests are not values)
            " UNION ALL SELECT 'candidate', id, key, statement, valid_at, invalid_at FROM candidates"
            " WHERE user_id = ? AND status = 'pending' AND kind != 'retraction' ORDER BY 1, 2",
            (user_id, user_id, user_id),
        )
        live: ValueIndex[LiveEntry] = ValueIndex((r[2], (r[0], r[1], r[3])) for r in rows if r[0] != "tombstone")
        stones: ValueIndex[LiveEntry] = ValueIndex((r[2], (r[0], r[1], r[3])) for r in rows if r[0] == "tombstone")
        have = {c.id: c for c in known}
        pending_ids = [int(r[1]) for r in rows if r[0] == "candidate"]
        if not whole:
            pending_ids = []
        missing = [i for i in pending_ids if i not in have]
        for start in range(0, len(missing), 500):
            chunk = missing[start : start + 500]
            found = await fetchall(
                self.conn,
                f"SELECT {CANDIDATE_COLS} FROM {CANDIDATE_FROM} WHERE c.id IN ({','.join('?' * len(chunk))})",
                chunk,
            )
            have.update((r[0], candidate_from_row(r)) for r in found)
        pending = [have[i] for i in pending_ids]
        facts = [(int(r[1]), r[3]) for r in rows if r[0] == "knowledge"]
        active_ids = {i for i, _ in facts}
        intervals = {int(r[1]): (r[4], r[5]) for r in rows if r[0] == "knowledge"}
        corrected = await self._corrected_away(user_id, active_ids)
        return GateView(stones, live, pending, active_ids, facts, corrected, intervals)

    async def admission_rows(self, user_id: str, *, after: tuple[int, int] = (0, 0)) -> list[tuple[str, int, str, str]]:
        """(entity, id, key, statement) of the user's ACTIVE facts and LIVE tombstones: what the
        activation gate (engine.gate.Admission) checks a new active fact against. Pending
        candidates are not read: a decision on a user with a long queue stays one short read.
        `after` (fact id, tombstone id): only newer rows (an import's next transaction)."""
        rows = await fetchall(
            self.conn,
            "SELECT 'knowledge', id, key, statement FROM knowledge WHERE user_id = ? AND status = 'active' AND id > ?"
            " UNION ALL SELECT 'tombstone', id, key, statement FROM tombstones WHERE user_id = ? AND lifted_at IS NULL"
            " AND id > ? ORDER BY 1, 2",
            (user_id, after[0], user_id, after[1]),
        )
        return [(str(r[0]), int(r[1]), str(r[2]), str(r[3])) for r in rows]

    async def _corrected_away(self, user_id: str, active_ids: set[int]) -> ValueIndex[tuple[int, str]]:
        """The values of the user's facts that were corrected (end_reason `corrected`), each with the
        ACTIVE fact its chain of versions leads to now; a chain that ends in no active fact (the
        correction was itself retracted) holds nothing to contradict and is left out."""
        rows = await fetchall(
            self.conn,
            "SELECT id, key, statement, superseded_by, end_reason FROM knowledge"
            " WHERE user_id = ? AND status = 'superseded' ORDER BY id",
            (user_id,),
        )
        successor = {int(r[0]): r[3] for r in rows}
        out: ValueIndex[tuple[int, str]] = ValueIndex()
        for r in rows:
            if r[4] != "corrected":
                continue
            head, seen = r[3], set()
            while head is not None and head not in active_ids and head in successor and head not in seen:
                seen.add(head)
                head = successor[head]
            if head in active_ids:
                out.add(r[1], (int(head), r[2]))
        return out

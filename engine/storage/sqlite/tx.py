"""`SqliteTx`: what only SQLite does of the engine's operations.

A fact lives in three places in SQLite: its row in `knowledge`, its text in the FTS5 table
`knowledge_fts` (with the user's scope token, so a MATCH never visits another user's rows) and
its vector in the sqlite-vec table `knowledge_vec`, partitioned by user, whose metadata columns
mirror the fact's status and times so that the KNN query applies the belief rule before k is cut.
Every write to a fact is therefore the portable statement (`SqlTx`) followed here by the same
change to the mirrors, inside the same transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import aiosqlite
import numpy as np
import sqlite_vec

from ...text import value_key
from ...timeutil import BEGINNING, FOREVER
from ..sql.core import USER_TABLES, IdSource, fetchall
from ..sql.knowledge import Vector
from ..sql.text_arm import _WORDS, STILL_TRUE_SQL
from ..sql.tx import SqlTx


def fts_scope(user_id: str) -> str:
    """The one FTS token that stands for a user: 'u' + the hex of the id's UTF-8 bytes, so any id
    (spaces, punctuation, non-Latin script) becomes a single token the tokenizer cannot split or
    fold into another user's. Migration v2 computes the same value in SQL."""
    return "u" + user_id.encode("utf-8").hex()


def _any_of(tokens: Sequence[str]) -> str:
    """An FTS5 query for rows holding any of these search tokens (letters and digits only, so
    quoting them is enough)."""
    return " OR ".join(f'"{t}"' for t in tokens)


class _SequenceIds(IdSource):
    """Ids past AUTOINCREMENT's high-water mark, counted here: safe because the transaction holds
    SQLite's write lock (BEGIN IMMEDIATE), and explicit ids move sqlite_sequence on as
    AUTOINCREMENT's own would. Reserved ids never used leave no gap: nothing consumed them."""

    def __init__(self, tx: SqliteTx, table: str) -> None:
        super().__init__()
        self._tx, self._table, self._next = tx, table, 0

    async def _fetch(self, n: int) -> list[int]:
        if not self._next:
            self._next = await self._tx.next_free_id(self._table)
        out = list(range(self._next, self._next + n))
        self._next += n
        return out


class SqliteTx(SqlTx):
    backend = "sqlite"
    conn: aiosqlite.Connection
    """SqlConn, and the SQLite-only parts used here (`total_changes`, a cursor's `lastrowid`)."""

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
        cur = await self.conn.execute(
            "INSERT INTO knowledge(user_id, statement, key, candidate_id, episode_id, confidence, valid_at,"
            " invalid_at, created_at, status, created_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'active', ?)",
            (
                user_id,
                statement,
                value_key(statement),
                candidate_id,
                episode_id,
                confidence,
                valid_at,
                invalid_at,
                created_at,
                created_by,
            ),
        )
        kid = int(cur.lastrowid or 0)
        await self.conn.execute(
            "INSERT INTO knowledge_fts(rowid, statement, scope) VALUES (?, ?, ?)", (kid, statement, fts_scope(user_id))
        )
        valid_to = FOREVER if invalid_at is None else invalid_at
        await self.conn.execute(
            "INSERT INTO knowledge_vec(knowledge_id, user_id, embedding, status, valid_from, valid_to, created,"
            " expired, still_true, believed_to) VALUES (?, ?, ?, 'active', ?, ?, ?, ?, 1, ?)",
            (
                kid,
                user_id,
                sqlite_vec.serialize_float32(embedding),
                BEGINNING if valid_at is None else valid_at,
                valid_to,
                created_at,
                FOREVER,
                valid_to,
            ),
        )
        return kid

    async def insert_knowledge_many(
        self,
        rows: Sequence[tuple[str, str, Vector, int | None, int | None, float]],
        *,
        created_at: int,
        created_by: str,
    ) -> list[int]:
        """One executemany per table instead of three statements per fact. AUTOINCREMENT numbers
        the rows; they are read back as every id above the sequence's value before the insert,
        which holds because the caller owns the write lock (BEGIN IMMEDIATE) for the whole batch."""
        if not rows:
            return []
        found = await (await self.conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'knowledge'")).fetchone()
        floor = int(found[0]) if found else 0
        await self.conn.executemany(
            "INSERT INTO knowledge(user_id, statement, key, confidence, valid_at, invalid_at, created_at, status,"
            " created_by) VALUES (?, ?, ?, ?, ?, ?, ?, 'active', ?)",
            [
                (u, text, value_key(text), conf, start, end, created_at, created_by)
                for u, text, _, start, end, conf in rows
            ],
        )
        ids = [
            int(r[0]) for r in await fetchall(self.conn, "SELECT id FROM knowledge WHERE id > ? ORDER BY id", (floor,))
        ]
        if len(ids) != len(rows):
            raise RuntimeError(f"inserted {len(rows)} facts but read back {len(ids)} ids")
        await self.conn.executemany(
            "INSERT INTO knowledge_fts(rowid, statement, scope) VALUES (?, ?, ?)",
            [(kid, text, fts_scope(u)) for kid, (u, text, _, _, _, _) in zip(ids, rows, strict=True)],
        )
        await self.conn.executemany(
            "INSERT INTO knowledge_vec(knowledge_id, user_id, embedding, status, valid_from, valid_to, created,"
            " expired, still_true, believed_to) VALUES (?, ?, ?, 'active', ?, ?, ?, ?, 1, ?)",
            [
                (
                    kid,
                    u,
                    _blob(emb),
                    BEGINNING if start is None else start,
                    FOREVER if end is None else end,
                    created_at,
                    FOREVER,
                    FOREVER if end is None else end,
                )
                for kid, (u, _, emb, start, end, _) in zip(ids, rows, strict=True)
            ],
        )
        return ids

    async def end_knowledge(
        self,
        knowledge_id: int,
        *,
        status: str,
        expired_at: int,
        end_reason: str,
        superseded_by: int | None = None,
    ) -> None:
        """The vector row's `still_true` follows `end_reason` (STILL_TRUE_SQL): a fact ended
        because the world changed stays readable for its valid period; one ended as wrong does not."""
        await super().end_knowledge(
            knowledge_id, status=status, expired_at=expired_at, end_reason=end_reason, superseded_by=superseded_by
        )
        await self.conn.execute(
            f"UPDATE knowledge_vec SET status = ?, expired = ?, still_true = (SELECT {STILL_TRUE_SQL.format(k='k')}"
            " FROM knowledge k WHERE k.id = ?) WHERE knowledge_id = ?",
            (status, expired_at, knowledge_id, knowledge_id),
        )

    async def close_valid_time(self, knowledge_id: int, invalid_at: int) -> None:
        await super().close_valid_time(knowledge_id, invalid_at)
        await self.conn.execute(
            "UPDATE knowledge_vec SET valid_to = ? WHERE knowledge_id = ?", (invalid_at, knowledge_id)
        )

    async def reactivate_knowledge(self, knowledge_id: int) -> None:
        await super().reactivate_knowledge(knowledge_id)
        await self.conn.execute(
            "UPDATE knowledge_vec SET status = 'active', expired = ?, still_true = 1, valid_to = believed_to"
            " WHERE knowledge_id = ?",
            (FOREVER, knowledge_id),
        )

    async def delete_knowledge(self, knowledge_id: int) -> None:
        await self.conn.execute("DELETE FROM knowledge_fts WHERE rowid = ?", (knowledge_id,))
        await self.conn.execute("DELETE FROM knowledge_vec WHERE knowledge_id = ?", (knowledge_id,))
        await super().delete_knowledge(knowledge_id)

    async def active_vectors(self, user_id: str) -> list[tuple[int, str, bytes]]:
        rows = await fetchall(
            self.conn,
            # from `knowledge` by its user index, each vector by its key: a scan of the vector table
            # filtered on its partition key reads every user's vectors (48 ms at 20,000 facts)
            "SELECT k.id, k.statement, v.embedding FROM knowledge k JOIN knowledge_vec v ON v.knowledge_id = k.id"
            " WHERE k.user_id = ? AND k.status = 'active' ORDER BY k.id",
            (user_id,),
        )
        return [(int(r[0]), str(r[1]), bytes(r[2])) for r in rows]

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
        """KNN inside sqlite-vec with the partition key (user) and the metadata predicates (status
        and times) applied by the index before k is cut. The belief rule is `_belief_filter`'s,
        column for column: `still_true` stands for its end_reason test, `believed_to` for the end a
        fact had while believed."""
        where = ["embedding MATCH ?", "k = ?", "user_id = ?"]
        args: list[Any] = [sqlite_vec.serialize_float32(embedding), k, user_id]
        if known_at is not None:
            where += ["created <= ?", "expired > ?"]
            args += [known_at, known_at]
        elif not include_expired:
            where.append("still_true = 1" if at_time is not None else "status = 'active'")
        if at_time is not None:
            where += ["valid_from <= ?", ("believed_to > ?" if known_at is not None else "valid_to > ?")]
            args += [at_time, at_time]
        rows = await fetchall(
            self.conn,
            f"SELECT knowledge_id, distance FROM knowledge_vec WHERE {' AND '.join(where)} ORDER BY distance",
            args,
        )
        return [r[0] for r in rows if max_distance is None or r[1] <= max_distance]

    async def store_generation(self) -> Any:
        """PRAGMA data_version moves when ANOTHER connection commits; this connection's own
        total_changes when it writes. While neither moved, cached statistics hold."""
        [row] = await fetchall(self.conn, "PRAGMA data_version")
        return (int(row[0]), self.conn.total_changes)

    async def term_documents(self, user_id: str, terms: Sequence[str]) -> list[int]:
        scope = fts_scope(user_id)
        counts = ", ".join("(SELECT count(*) FROM knowledge_fts WHERE knowledge_fts MATCH ?)" for _ in terms)
        [row] = await fetchall(self.conn, f"SELECT {counts}", [f'scope : "{scope}" AND "{t}"' for t in terms])
        return [int(c) for c in row]

    async def text_rows(
        self,
        user_id: str,
        terms: Sequence[str],
        condition: str,
        args: Sequence[Any],
        excluding: Sequence[str] = (),
    ) -> list[tuple[int, str, int]]:
        """One FTS5 query with the user's scope token INSIDE the MATCH, so no other user's row is
        even visited; the belief filter applies before the caller's LIMIT."""
        match = _any_of(terms)
        if excluding:
            match = f"({match}) NOT ({_any_of(excluding)})"
        rows = await fetchall(
            self.conn,
            f"SELECT k.id, k.statement, {_WORDS} FROM knowledge_fts CROSS JOIN knowledge k"
            f" ON k.id = knowledge_fts.rowid WHERE knowledge_fts MATCH ? AND k.user_id = ? AND {condition}",
            (f'scope : "{fts_scope(user_id)}" AND ({match})', user_id, *args),
        )
        return [(r[0], r[1], r[2]) for r in rows]

    def id_source(self, table: str) -> IdSource:
        return _SequenceIds(self, table)

    async def next_free_id(self, table: str) -> int:
        """The id AUTOINCREMENT would give the next row of `table`: past its high-water mark in
        sqlite_sequence and past every row."""
        [row] = await fetchall(
            self.conn,
            f"SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = ?), 0),"
            f" coalesce((SELECT max(id) FROM {table}), 0))",
            (table,),
        )
        return int(row[0]) + 1

    async def erase_user_rows(self, user_id: str, redacted_at: int) -> None:
        """Index rows first (FTS, vectors), then the portable deletes with foreign keys deferred
        (the knowledge <-> candidate cycle needs no unlinking), then the FTS index is merged so
        deleted terms leave its segments."""
        await self.conn.execute("PRAGMA defer_foreign_keys = ON")
        ids = [r[0] for r in await fetchall(self.conn, "SELECT id FROM knowledge WHERE user_id = ?", (user_id,))]
        await self.conn.executemany("DELETE FROM knowledge_fts WHERE rowid = ?", [(i,) for i in ids])
        await self.conn.executemany("DELETE FROM knowledge_vec WHERE knowledge_id = ?", [(i,) for i in ids])
        await super().erase_user_rows(user_id, redacted_at)
        await self.conn.execute("INSERT INTO knowledge_fts(knowledge_fts) VALUES ('optimize')")


__all__ = ["USER_TABLES", "SqliteTx", "fts_scope"]


def _blob(vector: Vector) -> bytes:
    """A vector as sqlite-vec stores it (little-endian float32): a float32 row's own bytes."""
    if isinstance(vector, np.ndarray):
        return vector.astype("<f4", copy=False).tobytes()
    return sqlite_vec.serialize_float32(vector)

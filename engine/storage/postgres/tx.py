"""`PostgresTx`: what only PostgreSQL does of the engine's operations.

A fact is one row here: its vector is the `embedding` column (pgvector) and its words the `search`
column (a tsvector GIN-indexed), so the writes SQLite mirrors into knowledge_fts / knowledge_vec
are single statements, and the two retrieval arms are plain queries on `knowledge` with the user
and the belief rule (`_belief_filter`, the same SQL the text arm uses on SQLite) in the WHERE,
before the LIMIT: top_k is always full.

Concurrency. SQLite runs one writer at a time (BEGIN IMMEDIATE), and the engine's rules were
written against that: a decision reads the candidate, checks it, and writes. Here transactions
run at once, at READ COMMITTED, so a write transaction serialises what must not interleave:
- per user: before the first read of a user's rows that a decision or a batch acts on
  (`get_candidate`, `get_knowledge`, `gate_view`, the claims, erasure's counts), it takes that
  user's transaction-level advisory lock. Two reviewers deciding the same user's candidates, or a
  reviewer and a pipeline worker on one user, proceed one after the other, as on SQLite; other
  users' work proceeds in parallel. The lock is always taken before any row lock of the user, so
  these transactions cannot deadlock on each other.
- per row: the candidate or fact a decision reads is read FOR UPDATE, so a transaction that
  arrives second sees the first one's committed result ("already decided"), never a stale row.
- claims: a candidate lease and the episode leases take their rows with FOR UPDATE SKIP LOCKED:
  a row another transaction is working on right now is skipped, not waited for.
Read-only snapshots (`reading()`) take no lock.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import NotFoundError
from ...models import Candidate, Knowledge
from ...text import value_key
from ..base import NEW_CANDIDATES
from ..sql.core import IdSource, fetchall
from ..sql.knowledge import Vector
from ..sql.records import CANDIDATE_COLS, CANDIDATE_FROM, KNOWLEDGE_COLS, MAX_ID, candidate_from_row, knowledge_from_row
from ..sql.text_arm import _WORDS, _belief_filter, _UserStats, fts_tokens
from ..sql.tx import SqlTx
from .connection import PgConn

# Advisory locks are (int4, int4) pairs; memdesk's user locks use this first half ("md").
_USER_LOCK_CLASS = 0x6D64


def search_text(statement: str) -> str:
    """What `knowledge.search` is built from (`to_tsvector('simple', ...)`): the statement's
    tokens as the text arm's BM25 counts them (`fts_tokens`: runs of letters and digits,
    casefolded, diacritics removed), joined by spaces, so PostgreSQL matches exactly the rows whose
    term frequencies are computed in Python (schema.py says why the column is not GENERATED)."""
    return " ".join(fts_tokens(statement))


def search_scope(user_id: str) -> str:
    """The lexeme that stands for a user in `knowledge.search` (schema migration 3): '~' and the
    SHA-256 of the id's UTF-8 bytes, which no statement's token can be ('~' is neither letter
    nor digit). Every text query ANDs it with its terms, so the GIN index reads only this user's
    entries (as SQLite's scope token does inside the MATCH); migration 3 computes the same value."""
    return "~" + hashlib.sha256(user_id.encode("utf-8")).hexdigest()


def search_value(text: str, scope: str) -> str:
    """The SQL of a fact's `search` value from two parameters: `search_text(statement)` and
    `search_scope(user_id)` (placeholders, `?` or `$n`)."""
    return f"(to_tsvector('simple', {text}) || array_to_tsvector(ARRAY[{scope}::text]))"


# A user's rows holding any of some search tokens (letters and digits only, nothing tsquery would
# parse; "a | b"): the scope lexeme ANDed in, so the GIN index reads this user's entries only.
# Arguments: the user's scope as a tsquery ("'~...'"), the tokens, and for _EXCLUDING the tokens a
# row must not hold. The scope alone selects the user (a SHA-256 of the id). Where rows are read,
# `user_id` is checked as well, written `k.user_id || '' = ?` so that the planner cannot AND in the
# btree of the user's ids: for a large user that read 22,000 index entries (2.5 ms a statement) to
# confirm what the scope lexeme had already decided.
_MATCH = "k.search @@ (?::tsquery && to_tsquery('simple', ?))"
_MATCH_EXCLUDING = "k.search @@ (?::tsquery && to_tsquery('simple', ?) && !! to_tsquery('simple', ?))"


def _condition(sql: str) -> str:
    # `_belief_filter` says "1" for "no condition", which PostgreSQL does not take as a boolean
    return "TRUE" if sql.strip() == "1" else sql


class _IdentityIds(IdSource):
    """Ids drawn from the table's identity sequence, `n` per round trip: unique across every
    connection and process without any lock (a sequence never hands an id out twice), and never
    one a deleted row had. Ids drawn and not used leave a gap, which nothing relies on."""

    def __init__(self, tx: PostgresTx, table: str) -> None:
        super().__init__()
        self._tx, self._table = tx, table

    async def _fetch(self, n: int) -> list[int]:
        rows = await fetchall(
            self._tx.conn,
            "SELECT nextval(pg_get_serial_sequence(?, 'id')) FROM generate_series(1, ?)",
            (self._table, n),
        )
        return [int(r[0]) for r in rows]


class PostgresTx(SqlTx):
    backend = "postgres"

    def __init__(self, conn: PgConn, text_stats: dict[str, _UserStats] | None = None, *, writing: bool = False) -> None:
        super().__init__(conn, text_stats)
        self.writing = writing
        self._locked: set[str] = set()

    # -- decisions wake open workstations --------------------------------------------------------------

    async def announce(self, user_ids: Sequence[str]) -> None:
        """NOTIFY the channel the insert trigger uses, once per user whose candidates changed
        (`Store.transaction` calls this as the transaction's last statement): every open list
        drops, or shows again, a decided or undone candidate within a second. The server delivers
        it at COMMIT, folded with the trigger's identical one, and never for a rollback."""
        for user_id in user_ids:
            await self.conn.execute("SELECT pg_notify(?, ?)", (NEW_CANDIDATES, user_id))

    # -- serialising a user's writes ----------------------------------------------------------------

    async def lock_user(self, user_id: str) -> None:
        """Hold `user_id`'s advisory lock until this transaction ends (a no-op in a read)."""
        if not self.writing or user_id in self._locked:
            return
        await self.conn.execute("SELECT pg_advisory_xact_lock(?, hashtext(?))", (_USER_LOCK_CLASS, user_id))
        self._locked.add(user_id)

    async def _lock_owner(self, table: str, row_id: int) -> None:
        """The advisory lock of the user a row belongs to (before the row itself is locked)."""
        if not self.writing:
            return
        row = await (await self.conn.execute(f"SELECT user_id FROM {table} WHERE id = ?", (row_id,))).fetchone()
        if row is not None:
            await self.lock_user(row[0])

    async def get_candidate(self, candidate_id: int, user_id: str | None = None) -> Candidate:
        if not self.writing:
            return await super().get_candidate(candidate_id, user_id)
        row = None
        if 0 < candidate_id <= MAX_ID:
            await self._lock_owner("candidates", candidate_id)
            row = await (
                await self.conn.execute(
                    f"SELECT {CANDIDATE_COLS} FROM {CANDIDATE_FROM} WHERE c.id = ? FOR UPDATE OF c", (candidate_id,)
                )
            ).fetchone()
        if row is None or (user_id is not None and row[1] != user_id):
            owner = f" for user {user_id!r}" if user_id is not None else ""
            raise NotFoundError(f"no candidate {candidate_id}{owner}")
        return candidate_from_row(row)

    async def get_knowledge(self, user_id: str, knowledge_id: int) -> Knowledge:
        if not self.writing or not 0 < knowledge_id <= MAX_ID:
            return await super().get_knowledge(user_id, knowledge_id)
        await self.lock_user(user_id)
        row = await (
            await self.conn.execute(
                f"SELECT {KNOWLEDGE_COLS} FROM knowledge WHERE id = ? AND user_id = ? FOR UPDATE",
                (knowledge_id, user_id),
            )
        ).fetchone()
        if row is None:
            raise NotFoundError(f"no fact {knowledge_id} for user {user_id!r}")
        return knowledge_from_row(row)

    async def gate_view(self, user_id: str, known: Sequence[Any] = (), *, whole: bool = True) -> Any:
        await self.lock_user(user_id)
        return await super().gate_view(user_id, known, whole=whole)

    async def user_row_counts(self, user_id: str) -> dict[str, int]:
        await self.lock_user(user_id)
        return await super().user_row_counts(user_id)

    async def unprocessed_messages(self, user_id: str) -> list[tuple[int, str, str, int]]:
        # two workers cutting the same user's new messages into episodes: the second waits, then
        # reads what is still unprocessed (on SQLite the write lock did the same)
        await self.lock_user(user_id)
        return await super().unprocessed_messages(user_id)

    # -- facts: one row, vector and words included ---------------------------------------------------

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
        await self.lock_user(user_id)  # before the statistics row (trigger) is locked
        cur = await self.conn.execute(
            "INSERT INTO knowledge(user_id, statement, key, candidate_id, episode_id, confidence, valid_at,"
            " invalid_at, created_at, status, created_by, embedding, search)"
            f" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'active', ?, ?, {search_value('?', '?')}) RETURNING id",
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
                list(embedding),
                search_text(statement),
                search_scope(user_id),
            ),
        )
        row = await cur.fetchone()
        return int(row[0])

    async def insert_knowledge_many(
        self,
        rows: Sequence[tuple[str, str, Vector, int | None, int | None, float]],
        *,
        created_at: int,
        created_by: str,
    ) -> list[int]:
        """Ids drawn from the sequence first (one round trip), then one pipelined executemany."""
        if not rows:
            return []
        for user in sorted({r[0] for r in rows}):  # in one order: two batches never wait on each other
            await self.lock_user(user)
        source = self.id_source("knowledge")
        await source.reserve(len(rows))
        ids = [source.take() for _ in rows]
        await self.conn.executemany(
            "INSERT INTO knowledge(id, user_id, statement, key, confidence, valid_at, invalid_at, created_at,"
            " status, created_by, embedding, search)"
            f" VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'active', ?, ?, {search_value('?', '?')})",
            [
                (
                    kid,
                    u,
                    text,
                    value_key(text),
                    conf,
                    start,
                    end,
                    created_at,
                    created_by,
                    emb.tolist() if isinstance(emb, np.ndarray) else list(emb),
                    search_text(text),
                    search_scope(u),
                )
                for kid, (u, text, emb, start, end, conf) in zip(ids, rows, strict=True)
            ],
        )
        return ids

    async def delete_knowledge(self, knowledge_id: int) -> None:
        await self._lock_owner("knowledge", knowledge_id)
        await super().delete_knowledge(knowledge_id)

    async def erase_user_rows(self, user_id: str, redacted_at: int) -> None:
        """Foreign keys deferred to COMMIT (SQLite's PRAGMA defer_foreign_keys): the portable
        deletes then need no unlinking of the knowledge <-> candidates cycle. The rows' vectors and
        words go with them (columns of `knowledge`); `Store.compact()` rewrites the tables."""
        await self.lock_user(user_id)
        await self.conn.execute("SET CONSTRAINTS ALL DEFERRED")
        await super().erase_user_rows(user_id, redacted_at)

    # -- retrieval arms -------------------------------------------------------------------------------

    async def active_vectors(self, user_id: str) -> list[tuple[int, str, bytes]]:
        rows = await fetchall(
            self.conn,
            "SELECT id, statement, embedding FROM knowledge WHERE user_id = ? AND status = 'active'"
            " AND embedding IS NOT NULL ORDER BY id",
            (user_id,),
        )
        # pgvector's codec reads a vector as its `Vector` (to_numpy) or, in older versions, an array
        return [(int(r[0]), str(r[1]), _f32(r[2])) for r in rows]

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
        """Exact cosine KNN over this user's facts that pass the belief rule (`_belief_filter`,
        the text arm's own SQL), cut at k only after every predicate: top_k is always full. The
        user's facts are found through knowledge_user_status; no ANN index (see schema.py).

        Sequential scans are off for this statement's transaction (a `reading()` of its own in
        retrieval): for a large user the planner preferred reading the whole table, and a
        sequential scan of a table over a quarter of shared_buffers goes through a small ring
        buffer, so every query read every page of every user again (a 20,000-fact user among
        30,000 facts: 26 ms warm, and the text arm's pages evicted too). Through the user's index
        only their pages are read, and they stay cached: 22 ms, and the text arm then finds its
        rows in shared buffers (5 ms instead of 28)."""
        condition, args = _belief_filter(at_time, known_at, include_expired)
        await self.conn.execute("SET LOCAL enable_seqscan = off")
        rows = await fetchall(
            self.conn,
            f"SELECT k.id, k.embedding <=> ? FROM knowledge k WHERE k.user_id = ? AND k.embedding IS NOT NULL"
            f" AND {_condition(condition)} ORDER BY 2, k.id LIMIT ?",
            (list(embedding), user_id, *args, int(k)),
        )
        if self.writing:  # the rest of a write transaction plans as usual
            await self.conn.execute("SET LOCAL enable_seqscan = DEFAULT")
        return [int(r[0]) for r in rows if max_distance is None or float(r[1]) <= max_distance]

    async def store_generation(self) -> Any:
        """PostgreSQL has no cheap "did anything commit since" counter (`user_text_stats` reads
        the user's trigger-kept statistics row instead)."""
        return None

    async def user_text_stats(self, user_id: str, terms: Sequence[str] = ()) -> _UserStats:
        """The user's fact count, largest id and total length come from `knowledge_stats` (one
        row, kept exact by triggers: schema migration 2); document frequencies are counted as
        asked and kept while the count and largest id stay the same (statements never change,
        so the same set of facts has the same frequencies)."""
        row = await (
            await self.conn.execute("SELECT docs, top_id, words FROM knowledge_stats WHERE user_id = ?", (user_id,))
        ).fetchone()
        n, top, tokens = (int(row[0]), int(row[1]), int(row[2])) if row is not None else (0, 0, 0)
        stats = self.text_stats.get(user_id)
        if stats is None or (stats.docs, stats.top) != (n, top):
            if len(self.text_stats) > 10_000:
                self.text_stats.clear()
            stats = self.text_stats[user_id] = _UserStats(None, n, top, tokens)
        await self._count_terms(user_id, stats, terms)
        return stats

    async def term_documents(self, user_id: str, terms: Sequence[str]) -> list[int]:
        """One scalar subquery a term, each a count over the GIN index with the user's scope (the
        scope alone: a bitmap count reads no row whose page is all-visible)."""
        scope = f"'{search_scope(user_id)}'"
        counts = ", ".join(f"(SELECT count(*) FROM knowledge k WHERE {_MATCH})" for _ in terms)
        [row] = await fetchall(self.conn, f"SELECT {counts}", [a for t in terms for a in (scope, t)])
        return [int(c) for c in row]

    async def text_rows(
        self,
        user_id: str,
        terms: Sequence[str],
        condition: str,
        args: Sequence[Any],
        excluding: Sequence[str] = (),
    ) -> list[tuple[int, str, int]]:
        """The user's facts holding ANY of the terms and none of `excluding` (a tsquery with the
        user's scope lexeme, over the GIN index), with the belief filter in the same WHERE."""
        match_args = [f"'{search_scope(user_id)}'", " | ".join(terms)]
        if excluding:
            match_args.append(" | ".join(excluding))
        rows = await fetchall(
            self.conn,
            f"SELECT k.id, k.statement, {_WORDS} FROM knowledge k WHERE k.user_id || '' = ?"
            f" AND {_MATCH_EXCLUDING if excluding else _MATCH} AND {_condition(condition)}",
            (user_id, *match_args, *args),
        )
        return [(int(r[0]), r[1], int(r[2])) for r in rows]

    # -- ids and claims -------------------------------------------------------------------------------

    def id_source(self, table: str) -> IdSource:
        return _IdentityIds(self, table)

    async def claim_candidate(self, candidate_id: int, reviewer: str, now: int, until: int) -> bool:
        """Lease a pending candidate unless someone else holds an unexpired lease, or another
        transaction is working on its row right now (SKIP LOCKED: skipped, not waited for)."""
        await self._lock_owner("candidates", candidate_id)
        cur = await self.conn.execute(
            "UPDATE candidates SET claimed_by = ?, claimed_until = ? WHERE id = ("
            " SELECT id FROM candidates WHERE id = ? AND status = 'pending'"
            " AND (claimed_by IS NULL OR claimed_by = ? OR claimed_until <= ?) FOR UPDATE SKIP LOCKED)",
            (reviewer, until, candidate_id, reviewer, now),
        )
        return cur.rowcount == 1

    async def claim_episodes(self, user_id: str, token: str, now: int, until: int) -> list[int]:
        """Lease every open or failed episode of the user not leased by someone else, skipping rows
        another worker is claiming at this moment; in start order (NULL first, as on SQLite)."""
        await self.lock_user(user_id)
        rows = await fetchall(
            self.conn,
            "WITH picked AS (SELECT id FROM episodes WHERE user_id = ? AND status IN ('open', 'failed')"
            " AND (claimed_until IS NULL OR claimed_until <= ? OR claimed_by = ?) FOR UPDATE SKIP LOCKED)"
            " UPDATE episodes e SET claimed_by = ?, claimed_until = ? FROM picked WHERE e.id = picked.id"
            " RETURNING e.id, e.start_at",
            (user_id, now, token, token, until),
        )
        rows.sort(key=lambda r: (r[1] is not None, r[1] or 0, r[0]))
        return [int(r[0]) for r in rows]


__all__ = ["PostgresTx", "search_scope", "search_text", "search_value"]


def _f32(vector: Any) -> bytes:
    """A vector as read from pgvector, as little-endian float32 bytes."""
    values = vector.to_numpy() if hasattr(vector, "to_numpy") else vector
    return np.asarray(values, dtype="<f4").tobytes()

"""`SqlTx`: every operation the engine performs on its store, as methods of one transaction.

A service never writes SQL: it opens `store.transaction()` (or `store.reading()`) and calls these
methods, so a decision and its audit rows commit together or not at all, on either backend. The
statements here are portable (SQLite and PostgreSQL run them as written; `?` placeholders become
`$n` in the PostgreSQL connection). What only one backend can do (SQLite's FTS5 and sqlite-vec
mirror tables, PostgreSQL's pgvector and tsvector columns, how each hands out ids and claims
rows) is declared here and written in `engine/storage/sqlite/tx.py` and
`engine/storage/postgres/tx.py`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ...categories import ANY_SPECIAL, category_of
from ...errors import NotFoundError, UserInputError
from ...models import AuditEvent, Candidate, CandidateContext, Discarded, Episode, Knowledge, Tombstone, to_jsonable
from ...text import ValueIndex, value_key
from ...timeutil import from_us, to_us
from .conn import SqlConn
from .policies import PolicyOps
from .records import (
    AUDIT_COLS,
    CANDIDATE_COLS,
    CANDIDATE_FROM,
    DISCARDED_COLS,
    KNOWLEDGE_COLS,
    MAX_ID,
    TOMBSTONE_COLS,
    audit_from_row,
    candidate_from_row,
    discarded_from_row,
    knowledge_from_row,
    tombstone_from_row,
)
from .stats import StatsOps
from .team import TeamOps
from .text_arm import (  # noqa: F401 - re-exported: the backends, tests and benchmarks import them from here
    _WORDS,
    BM25_B,
    BM25_K1,
    COMMON_TERM_MIN_FACTS,
    STILL_TRUE_SQL,
    TextArmOps,
    _belief_filter,
    _UserStats,
    fts_tokens,
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
)


def queue_filters(
    user_id: str | None,
    kind: str | None,
    min_confidence: float | None,
    max_confidence: float | None,
    unsupported: bool | None,
    search: str | None,
    assigned_to: str | None = None,
    status_clause: str = "c.status = 'pending'",
    category: str | None = None,
) -> tuple[str, list[Any]]:
    """The queue filter as SQL. `status_clause` lets progress (engine/team.py) count the decided
    candidates of the very same filter; `assigned_to` is the "my queue" filter; `category` one
    special category, or ANY_SPECIAL for every candidate that has one (engine/categories.py)."""
    where: list[str] = [status_clause]
    args: list[Any] = []
    if assigned_to is not None:
        where.append("c.user_id IN (SELECT a.user_id FROM assignments a WHERE a.reviewer = ?)")
        args.append(assigned_to)
    if user_id is not None:
        where.append("c.user_id = ?")
        args.append(user_id)
    if kind is not None:
        where.append("c.kind = ?")
        args.append(kind)
    if min_confidence is not None:
        where.append("c.confidence >= ?")
        args.append(min_confidence)
    if max_confidence is not None:
        where.append("c.confidence <= ?")
        args.append(max_confidence)
    if unsupported is not None:
        where.append("c.unsupported = ?")
        args.append(int(unsupported))
    if category == ANY_SPECIAL:
        where.append("c.category IS NOT NULL")
    elif category is not None:
        where.append("c.category = ?")
        args.append(category)
    if search:
        where.append("(c.statement LIKE ? ESCAPE '\\' OR c.user_id LIKE ? ESCAPE '\\')")
        pattern = "%" + search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
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


def _pending_where(filters: dict[str, Any]) -> tuple[str, list[Any]]:
    """`queue_filters` from the keyword filters of `pending_count` / `pending_mark`."""
    return queue_filters(
        filters.get("user_id"),
        filters.get("kind"),
        filters.get("min_confidence"),
        filters.get("max_confidence"),
        filters.get("unsupported"),
        filters.get("search"),
        filters.get("assigned_to"),
        category=filters.get("category"),
    )


# -- dedup ----------------------------------------------------------------------------------------


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


# -- discarded statements ---------------------------------------------------------------------------

_DISCARDED_INSERT_FIELDS = (
    "user_id",
    "episode_id",
    "run_id",
    "statement",
    "evidence",
    "gate",
    "kind",
    "confidence",
    "valid_at",
    "invalid_at",
    "matched_entity",
    "matched_id",
    "matched_statement",
    "created_at",
)


def mark_ended_facts(prediction: str, facts: list[Knowledge]) -> str:
    """The stored prediction with every listed fact that has since ended marked as such
    ("- User lives in Lisbon. (superseded by #15)"): a prediction is read later than it was made."""
    ended = {k.statement.rstrip(". ").casefold(): k.status_note() for k in facts if k.status != "active"}
    if not ended:
        return prediction
    lines = []
    for line in prediction.splitlines():
        body = line.lstrip("-• ").rstrip(". ").casefold()
        lines.append(f"{line} ({ended[body]})" if body in ended else line)
    return "\n".join(lines)


# -- capture and processing -----------------------------------------------------------------------


_RUN_FIELDS: dict[str, Any] = {
    "id": None,
    "episode_id": None,
    "user_id": None,
    "extractor": None,
    "model": None,
    "prompt_version": None,
    "mode": None,
    "prediction": "",
    "existing_ids": "[]",
    "covered": "[]",
    "claims": 0,
    "predicted": 0,
    "below_confidence": 0,
    "invalid": 0,
    "tombstoned": 0,
    "duplicates": 0,
    "supersedes_dropped": 0,
    "unsupported": 0,
    "queued": 0,
    "dates_dropped": 0,
    "started_at": None,
    "finished_at": None,
    "duration_ms": None,
    "error": None,
    "calibration": None,
}


# -- erasure and export ---------------------------------------------------------------------------

# Every table that holds rows of one user, children before parents (erasure deletes in this order
# with foreign keys deferred, so the knowledge <-> candidate cycle needs no unlinking first).
USER_TABLES = (
    "discarded",
    "flags",
    "second_reviews",
    "assignments",
    "tombstones",
    "candidates",
    "knowledge",
    "extraction_runs",
    "messages",
    "episodes",
)


class IdSource:
    """Ids for rows one write transaction inserts with explicit ids (see `SqlTx.id_source`):
    `reserve(n)` makes n more available (it may reach the database), `take()` hands one out
    without awaiting, so the pipeline's gates can number survivors as they pass."""

    def __init__(self) -> None:
        self._ready: list[int] = []

    async def reserve(self, n: int) -> None:
        missing = n - len(self._ready)
        if missing > 0:
            self._ready.extend(await self._fetch(missing))

    async def _fetch(self, n: int) -> list[int]:
        raise NotImplementedError

    def take(self) -> int:
        if not self._ready:
            raise RuntimeError("IdSource.take() without a reserve()")
        return self._ready.pop(0)


async def returned_id(cursor: Any) -> int:
    """The id an `INSERT ... RETURNING id` gave back."""
    row = await cursor.fetchone()
    return int(row[0])


async def fetchall(conn: SqlConn, sql: str, args: Sequence[Any] = ()) -> list[Any]:
    """The rows of one statement, read in one call (`execute_fetchall`: one thread hop on aiosqlite)."""
    return list(await conn.execute_fetchall(sql, args))


LEGACY_EMBEDDER = "hashing"


async def recorded_embedder(tx: SqlTx) -> tuple[str, int | None]:
    """(name, dimensions) of the embedder the store's vectors come from; `hashing` when no name
    was recorded (databases made before names were: see `Memory._check_embedder`)."""
    name = await tx.meta_value("embedder")
    width = await tx.meta_value("embedding_dimensions")
    return name or LEGACY_EMBEDDER, None if width is None else int(width)


class SqlTx(TextArmOps, TeamOps, StatsOps, PolicyOps):
    """One transaction (or one consistent read) on a store: the engine's operations on it.

    `conn` has aiosqlite's cursor API (`execute(sql, args) -> cursor` with async `fetchall()` and
    `fetchone()`, `rowcount`; `executemany`), which the SQLite backend passes as it is and the
    PostgreSQL backend provides over asyncpg. `text_stats` is the store's per-connection cache of
    BM25 statistics (`user_text_stats`). The team and stats statements live in the mixins
    `TeamOps` (sql/team.py) and `StatsOps` (sql/stats.py), kept apart only for size."""

    backend = "sql"

    def __init__(self, conn: SqlConn, text_stats: dict[str, _UserStats] | None = None) -> None:
        self.conn = conn
        self.text_stats: dict[str, _UserStats] = {} if text_stats is None else text_stats

    # -- serialising a user's writes ----------------------------------------------------------------

    async def lock_user(self, user_id: str) -> None:
        """Hold `user_id`'s write lock until this transaction ends. SQLite's BEGIN IMMEDIATE already
        holds the whole file's write lock, so there is nothing more to take; PostgreSQL takes the
        user's advisory lock (postgres/tx.py)."""

    # -- what each backend writes itself ------------------------------------------------------------

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
        raise NotImplementedError

    async def insert_knowledge_many(
        self,
        rows: Sequence[tuple[str, str, list[float], int | None, int | None, float]],
        *,
        created_at: int,
        created_by: str,
    ) -> list[int]:
        """Bulk `insert_knowledge` for (user_id, statement, embedding, valid_at, invalid_at,
        confidence) rows, ids in row order."""
        raise NotImplementedError

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
        raise NotImplementedError

    def id_source(self, table: str) -> IdSource:
        """Ids for rows this transaction will insert with explicit ids (the pipeline's batches)."""
        raise NotImplementedError

    async def erase_user_rows(self, user_id: str, redacted_at: int) -> None:
        """Delete every row of the user and redact the text of their audit rows (the one UPDATE
        the audit log's trigger allows); the caller owns the transaction."""
        for table in USER_TABLES:
            await self.conn.execute(f"DELETE FROM {table} WHERE user_id = ?", (user_id,))
        await self.conn.execute(
            "UPDATE audit_log SET before = NULL, after = NULL, reason = NULL, note = NULL, redacted_at = ?"
            " WHERE user_id = ? AND redacted_at IS NULL AND action != 'erase'",
            (redacted_at, user_id),
        )

    # -- portable operations --------------------------------------------------------------------------
    async def audit(
        self,
        *,
        at: int,
        actor: str,
        action: str,
        user_id: str,
        entity: str,
        entity_id: int | None,
        before: Any = None,
        after: Any = None,
        reason: str | None = None,
        note: str | None = None,
    ) -> int:
        """Append one audit row; `note` is the reviewer's optional free-text note on a decision."""
        cur = await self.conn.execute(
            "INSERT INTO audit_log(at, actor, action, user_id, entity, entity_id, before, after, reason, note)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (
                at,
                actor,
                action,
                user_id,
                entity,
                entity_id,
                json.dumps(to_jsonable(before)) if before is not None else None,
                json.dumps(to_jsonable(after)) if after is not None else None,
                reason,
                note,
            ),
        )
        return await returned_id(cur)

    async def audit_events(
        self,
        user_id: str | None,
        entity: str | None = None,
        entity_ids: Sequence[int] | None = None,
        limit: int | None = 1000,
    ) -> list[AuditEvent]:
        where: list[str] = []
        args: list[Any] = []
        if user_id is not None:
            where.append("user_id = ?")
            args.append(user_id)
        if entity is not None:
            where.append("entity = ?")
            args.append(entity)
        if entity_ids is not None:
            where.append(f"entity_id IN ({','.join('?' * len(entity_ids))})")
            args.extend(entity_ids)
        sql = f"SELECT {AUDIT_COLS} FROM audit_log"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id"
        if limit is not None:  # None: every event (no portable "no limit" value: SQLite's -1 is an error on PostgreSQL)
            sql += " LIMIT ?"
            args.append(limit)
        rows = await (await self.conn.execute(sql, args)).fetchall()
        return [audit_from_row(r) for r in rows]

    async def meta_value(self, key: str) -> str | None:
        row = await (await self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,))).fetchone()
        return None if row is None else str(row[0])

    async def set_meta(self, key: str, value: str | int) -> None:
        await self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, str(value)),
        )

    async def decision_audit_row(self, candidate_id: int, decision: str) -> tuple[int, str | None] | None:
        """(audit id, the candidate's state before) of the candidate's latest `decision` row."""
        row = await (
            await self.conn.execute(
                "SELECT id, before FROM audit_log WHERE entity = 'candidate' AND entity_id = ? AND action = ?"
                " ORDER BY id DESC LIMIT 1",
                (candidate_id, decision),
            )
        ).fetchone()
        return None if row is None else (int(row[0]), row[1])

    async def chain_audit_rows(
        self, candidate_id: int, decision_row: int, actions: Sequence[str]
    ) -> list[tuple[int, str]]:
        """(candidate id, its state before) of the chain links a decision re-pointed or cut: rows of
        `actions` written by the decision's own transaction (after the candidate's previous audit
        row, before its decision row) on candidates that named it as `supersedes_candidate_id`.
        The JSON is read here, not in SQL, so both backends run the same statement."""
        prev = await (
            await self.conn.execute(
                "SELECT coalesce(max(id), 0) FROM audit_log WHERE entity = 'candidate' AND entity_id = ? AND id < ?",
                (candidate_id, decision_row),
            )
        ).fetchone()
        marks = ", ".join("?" * len(actions))
        rows = await fetchall(
            self.conn,
            f"SELECT entity_id, before FROM audit_log WHERE entity = 'candidate' AND action IN ({marks})"
            " AND id > ? AND id < ? ORDER BY id",
            (*actions, int(prev[0]), decision_row),
        )
        return [
            (int(r[0]), r[1])
            for r in rows
            if r[1] is not None and json.loads(r[1]).get("supersedes_candidate_id") == candidate_id
        ]

    async def audit_state(self, entity: str, entity_id: int, up_to_id: int) -> str | None:
        """The `after` JSON of the entity's last audit row at or before audit id `up_to_id`: the
        state a decision left it in."""
        row = await (
            await self.conn.execute(
                "SELECT after FROM audit_log WHERE entity = ? AND entity_id = ? AND id <= ? ORDER BY id DESC LIMIT 1",
                (entity, entity_id, up_to_id),
            )
        ).fetchone()
        return None if row is None else row[0]

    async def later_audit_actions(self, entity: str, entity_id: int, after_id: int) -> list[str]:
        """The actions of the entity's audit rows after audit id `after_id`, in order."""
        rows = await fetchall(
            self.conn,
            "SELECT action FROM audit_log WHERE entity = ? AND entity_id = ? AND id > ? ORDER BY id",
            (entity, entity_id, after_id),
        )
        return [str(r[0]) for r in rows]

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

    async def audit_many(self, rows: Sequence[dict[str, Any]]) -> None:
        """Bulk form of `audit`: each dict holds audit()'s keyword arguments."""
        await self.conn.executemany(
            "INSERT INTO audit_log(at, actor, action, user_id, entity, entity_id, before, after, reason, note)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    r["at"],
                    r["actor"],
                    r["action"],
                    r["user_id"],
                    r["entity"],
                    r.get("entity_id"),
                    json.dumps(to_jsonable(r["before"])) if r.get("before") is not None else None,
                    json.dumps(to_jsonable(r["after"])) if r.get("after") is not None else None,
                    r.get("reason"),
                    r.get("note"),
                )
                for r in rows
            ],
        )

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

    async def users(self) -> list[str]:
        rows = await (
            await self.conn.execute(
                "SELECT user_id FROM knowledge UNION SELECT user_id FROM candidates UNION"
                " SELECT user_id FROM messages UNION SELECT user_id FROM tombstones ORDER BY 1"
            )
        ).fetchall()
        return [r[0] for r in rows]

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
    ) -> int:
        """One pending candidate; `category` is the extractor's label, checked and else derived from
        the statement (engine.categories), so every path that queues sets it the same way."""
        cur = await self.conn.execute(
            "INSERT INTO candidates(user_id, episode_id, run_id, statement, key, evidence, kind, supersedes_id,"
            " confidence, valid_at, invalid_at, unsupported, status, created_at, created_by, reason,"
            " supersedes_candidate_id, category)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?) RETURNING id",
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
                category_of(statement, category),
            ),
        )
        return await returned_id(cur)

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
                        else category_of(row["statement"], row.get(f))
                        if f == "category"
                        else row.get(f, "" if f == "evidence" else None)
                        for f in _CANDIDATE_INSERT_FIELDS
                    ),
                )
                for cid, row in zip(ids, rows, strict=True)
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
        *,
        user_id: str | None = None,
        kind: str | None = None,
        min_confidence: float | None = None,
        max_confidence: float | None = None,
        unsupported: bool | None = None,
        search: str | None = None,
        limit: int = 50,
        offset: int = 0,
        newest_first: bool = False,
        assigned_to: str | None = None,
        sort: str = "age",
        category: str | None = None,
    ) -> list[Candidate]:
        where, args = queue_filters(
            user_id, kind, min_confidence, max_confidence, unsupported, search, assigned_to, category=category
        )
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

    async def pending_count(self, **filters: Any) -> int:
        where, args = _pending_where(filters)
        row = await (await self.conn.execute(f"SELECT count(*) FROM candidates c WHERE {where}", args)).fetchone()
        return int(row[0])

    async def pending_mark(self, **filters: Any) -> tuple[int, int]:
        """(how many candidates are pending under the filters, the largest of their ids or 0)."""
        where, args = _pending_where(filters)
        [row] = await fetchall(
            self.conn, f"SELECT count(*), coalesce(max(c.id), 0) FROM candidates c WHERE {where}", args
        )
        return int(row[0]), int(row[1])

    async def rule_decisions(self, extractor: str) -> dict[str, tuple[int, int]]:
        """{rule: (approved, rejected)} over the decided candidates of `extractor`'s runs that
        name their rule: what the offline extractor calibrates its confidence on."""
        rows = await fetchall(
            self.conn,
            "SELECT c.rule, sum(CASE WHEN c.status = 'approved' THEN 1 ELSE 0 END),"
            " sum(CASE WHEN c.status = 'rejected' THEN 1 ELSE 0 END) FROM candidates c"
            " JOIN extraction_runs r ON r.id = c.run_id WHERE r.extractor = ? AND c.rule IS NOT NULL"
            " AND c.status IN ('approved', 'rejected') GROUP BY c.rule",
            [extractor],
        )
        return {str(r[0]): (int(r[1]), int(r[2])) for r in rows}

    async def pending_age(self, cutoff_us: int, **filters: Any) -> tuple[int | None, int]:
        """(created_at of the oldest candidate pending under the filters or None, how many of them
        were created before `cutoff_us`): the queue's age against its SLA."""
        where, args = _pending_where(filters)
        [row] = await fetchall(
            self.conn,
            f"SELECT min(c.created_at), coalesce(sum(CASE WHEN c.created_at < ? THEN 1 ELSE 0 END), 0)"
            f" FROM candidates c WHERE {where}",
            [cutoff_us, *args],
        )
        return (None if row[0] is None else int(row[0])), int(row[1])

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

    async def matching_tombstone(self, user_id: str, statement: str) -> Tombstone | None:
        """The live tombstone of this user that blocks `statement`'s value (engine.text's rule), if any."""
        rows = await (
            await self.conn.execute(
                f"SELECT {TOMBSTONE_COLS} FROM tombstones WHERE user_id = ? AND lifted_at IS NULL ORDER BY id",
                (user_id,),
            )
        ).fetchall()
        return ValueIndex((r[2], tombstone_from_row(r)) for r in rows).find(value_key(statement))

    async def live_keys(self, user_id: str) -> list[tuple[str, str, int]]:
        """Keys of this user's ACTIVE facts and PENDING candidates: the only things a new claim can
        duplicate. Superseded and retracted facts are deliberately absent, so a fact that becomes true
        again can be learned again."""
        rows = await (
            await self.conn.execute(
                "SELECT key, 'knowledge', id FROM knowledge WHERE user_id = ? AND status = 'active'"
                " UNION ALL SELECT key, 'candidate', id FROM candidates WHERE user_id = ? AND status = 'pending'",
                (user_id, user_id),
            )
        ).fetchall()
        return [(r[0], r[1], r[2]) for r in rows]

    async def gate_view(self, user_id: str, known: Sequence[Candidate] = (), *, whole: bool = True) -> GateView:
        """One query for the keys (stored, never recomputed) of the user's active facts, live tombstones
        and pending candidates; whole candidate rows are read only for pending candidates not in
        `known` (what the caller already holds, e.g. from its previous episode), and not at all
        with `whole=False` (`pending` is then empty: the intake of one statement needs only keys)."""
        rows = await fetchall(
            self.conn,
            "SELECT 'knowledge', id, key, statement FROM knowledge WHERE user_id = ? AND status = 'active'"
            " UNION ALL SELECT 'tombstone', id, key, statement FROM tombstones WHERE user_id = ? AND lifted_at IS NULL"
            # pending candidates that state a value (retraction requests are not values)
            " UNION ALL SELECT 'candidate', id, key, statement FROM candidates WHERE user_id = ? AND status = 'pending'"
            " AND kind != 'retraction' ORDER BY 1, 2",
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
        return GateView(stones, live, pending, active_ids, facts, await self._corrected_away(user_id, active_ids))

    async def admission_rows(self, user_id: str) -> list[tuple[str, int, str, str]]:
        """(entity, id, key, statement) of the user's ACTIVE facts and LIVE tombstones: what the
        activation gate (engine.gate.Admission) checks a new active fact against. Pending
        candidates are not read: a decision on a user with a long queue stays one short read."""
        rows = await fetchall(
            self.conn,
            "SELECT 'knowledge', id, key, statement FROM knowledge WHERE user_id = ? AND status = 'active'"
            " UNION ALL SELECT 'tombstone', id, key, statement FROM tombstones WHERE user_id = ? AND lifted_at IS NULL"
            " ORDER BY 1, 2",
            (user_id, user_id),
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

    async def insert_discarded_many(self, rows: Sequence[dict[str, Any]]) -> None:
        """What the gates of one run dropped (dicts keyed by the column names), in one executemany."""
        if rows:
            await self.conn.executemany(
                f"INSERT INTO discarded({', '.join(_DISCARDED_INSERT_FIELDS)})"
                f" VALUES ({', '.join('?' * len(_DISCARDED_INSERT_FIELDS))})",
                [tuple(row.get(f, "" if f == "evidence" else None) for f in _DISCARDED_INSERT_FIELDS) for row in rows],
            )

    async def list_discarded(self, user_id: str | None, *, limit: int, offset: int = 0) -> list[Discarded]:
        """Newest first: a curator looks at what was dropped lately."""
        where, args = ("WHERE user_id = ?", [user_id]) if user_id is not None else ("", [])
        rows = await (
            await self.conn.execute(
                f"SELECT {DISCARDED_COLS} FROM discarded {where} ORDER BY id DESC LIMIT ? OFFSET ?",
                (*args, int(limit), int(offset)),
            )
        ).fetchall()
        return [discarded_from_row(r) for r in rows]

    async def get_discarded(self, discarded_id: int) -> Discarded:
        row = await (
            await self.conn.execute(f"SELECT {DISCARDED_COLS} FROM discarded WHERE id = ?", (discarded_id,))
        ).fetchone()
        if row is None:
            raise NotFoundError(f"no discarded statement {discarded_id}")
        return discarded_from_row(row)

    async def mark_discarded_queued(self, discarded_id: int, candidate_id: int, by: str, at: int) -> bool:
        """False when it was queued already (the guard that makes "queue anyway" happen once)."""
        cur = await self.conn.execute(
            "UPDATE discarded SET queued_candidate_id = ?, queued_by = ?, queued_at = ?"
            " WHERE id = ? AND queued_candidate_id IS NULL",
            (candidate_id, by, at, discarded_id),
        )
        return cur.rowcount == 1

    async def duplicate_of(self, user_id: str, statement: str) -> tuple[str, int] | None:
        """('knowledge' | 'candidate', id) of the ACTIVE fact or PENDING candidate of this user that
        holds the statement's value (the duplicate gate, engine.text's rule), or None."""
        live = await self.live_keys(user_id)
        return ValueIndex((k, (e, i)) for k, e, i in live).find(value_key(statement))

    async def knowledge_by_ids(self, ids: Sequence[int]) -> dict[int, Knowledge]:
        if not ids:
            return {}
        rows = await (
            await self.conn.execute(
                f"SELECT {KNOWLEDGE_COLS} FROM knowledge WHERE id IN ({','.join('?' * len(ids))})", list(ids)
            )
        ).fetchall()
        return {r[0]: knowledge_from_row(r) for r in rows}

    async def user_episode_ids(self, user_id: str, limit: int) -> list[int]:
        """The ids of the user's newest `limit` episodes, oldest first (the Messages view)."""
        rows = await (
            await self.conn.execute(
                "SELECT id FROM episodes WHERE user_id = ? ORDER BY start_at DESC, id DESC LIMIT ?",
                (user_id, int(limit)),
            )
        ).fetchall()
        return [r[0] for r in reversed(list(rows))]

    async def episode_with_messages(self, episode_id: int) -> Episode | None:
        return (await self.episodes_with_messages([episode_id])).get(episode_id)

    async def episodes_with_messages(self, episode_ids: Sequence[int]) -> dict[int, Episode]:
        """Episodes with their messages in conversation order, in two queries however many."""
        from ...models import Episode, Message

        if not episode_ids:
            return {}
        marks = ",".join("?" * len(episode_ids))
        rows = await (
            await self.conn.execute(
                "SELECT id, user_id, title, narrative, start_at, end_at, status, error FROM episodes"
                f" WHERE id IN ({marks})",
                list(episode_ids),
            )
        ).fetchall()
        out = {
            row[0]: Episode(
                id=row[0],
                user_id=row[1],
                title=row[2],
                narrative=row[3],
                messages=[],
                start_at=from_us(row[4]),
                end_at=from_us(row[5]),
                status=row[6],
                error=row[7],
            )
            for row in rows
        }
        msgs = await (
            await self.conn.execute(
                f"SELECT id, user_id, role, content, at, episode_id FROM messages WHERE episode_id IN ({marks})"
                " ORDER BY episode_id, at, id",
                list(episode_ids),
            )
        ).fetchall()
        for m in msgs:
            out[m[5]].messages.append(Message(role=m[2], content=m[3], at=from_us(m[4]), id=m[0], user_id=m[1]))
        return out

    async def candidate_context(self, cand: Candidate) -> CandidateContext:
        from ...models import CandidateContext

        ctx = CandidateContext(candidate=cand)
        if cand.run_id is not None:
            run = await (
                await self.conn.execute(
                    "SELECT prediction, mode, existing_ids FROM extraction_runs WHERE id = ?", (cand.run_id,)
                )
            ).fetchone()
            if run is not None:
                ctx.prediction, ctx.mode = run[0], run[1]
                ids = [int(i) for i in json.loads(run[2] or "[]")]
                found = await self.knowledge_by_ids([i for i in ids if i > 0])
                # Negative ids are the pending candidates the extractor was shown (extraction.base):
                # one still pending is shown as such, one approved since as the fact it became.
                from ...extraction.base import pending_record

                for i in ids:
                    if i < 0:
                        try:
                            shown = await self.get_candidate(-i, cand.user_id)
                        except NotFoundError:
                            continue
                        if shown.status == "pending":
                            found[i] = pending_record(shown)
                        elif shown.knowledge_id is not None:
                            found.update(await self.knowledge_by_ids([shown.knowledge_id]))
                            ids[ids.index(i)] = shown.knowledge_id
                ctx.existing = [found[i] for i in ids if i in found and found[i].user_id == cand.user_id]
                ctx.prediction = mark_ended_facts(ctx.prediction, ctx.existing)
        if cand.episode_id is not None:
            ctx.episode = await self.episode_with_messages(cand.episode_id)
            if ctx.episode is not None:
                ctx.messages = ctx.episode.messages
        if cand.supersedes_id is not None:
            try:
                ctx.superseded = await self.get_knowledge(cand.user_id, cand.supersedes_id)
            except NotFoundError:
                ctx.superseded = None
        return ctx

    async def insert_messages(self, rows: Sequence[tuple[str, str, str, int]]) -> list[int]:
        """(user_id, role, content, at) rows, in order; returns their ids."""
        ids = []
        for row in rows:
            cur = await self.conn.execute(
                "INSERT INTO messages(user_id, role, content, at) VALUES (?, ?, ?, ?) RETURNING id", row
            )
            ids.append(await returned_id(cur))
        return ids

    async def unprocessed_count(self, user_id: str) -> int:
        row = await (
            await self.conn.execute(
                "SELECT count(*) FROM messages WHERE user_id = ? AND episode_id IS NULL", (user_id,)
            )
        ).fetchone()
        return int(row[0])

    async def users_with_work(self) -> list[str]:
        rows = await (
            await self.conn.execute(
                "SELECT DISTINCT user_id FROM messages WHERE episode_id IS NULL"
                " UNION SELECT DISTINCT user_id FROM episodes WHERE status IN ('open', 'failed') ORDER BY 1"
            )
        ).fetchall()
        return [r[0] for r in rows]

    async def unprocessed_messages(self, user_id: str) -> list[tuple[int, str, str, int]]:
        """Messages not yet in an episode, by time then arrival: tracked per message, so a message
        back-filled with an older time or sharing a second with a processed one is still picked up."""
        rows = await (
            await self.conn.execute(
                "SELECT id, role, content, at FROM messages WHERE user_id = ? AND episode_id IS NULL ORDER BY at, id",
                (user_id,),
            )
        ).fetchall()
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    async def create_episodes(
        self,
        user_id: str,
        episodes: Sequence[tuple[str, str, Sequence[int], int, int]],
        created_at: int,
    ) -> list[int] | None:
        """Create (title, narrative, message ids, start_at, end_at) episodes of one user and move their
        messages into them, one executemany per table; ids from `id_source`. None when another process
        took any of the messages first (the caller rolls back)."""
        if not episodes:
            return []
        source = self.id_source("episodes")
        await source.reserve(len(episodes))
        ids = [source.take() for _ in episodes]
        await self.conn.executemany(
            "INSERT INTO episodes(id, user_id, title, narrative, start_at, end_at, status, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, 'open', ?)",
            [
                (eid, user_id, title, narrative, start, end, created_at)
                for eid, (title, narrative, _, start, end) in zip(ids, episodes, strict=True)
            ],
        )
        cur = await self.conn.executemany(
            "UPDATE messages SET episode_id = ? WHERE id = ? AND episode_id IS NULL AND user_id = ?",
            [
                (eid, mid, user_id)
                for eid, (_, _, message_ids, _, _) in zip(ids, episodes, strict=True)
                for mid in message_ids
            ],
        )
        return ids if cur.rowcount == sum(len(e[2]) for e in episodes) else None

    async def claim_episodes(self, user_id: str, token: str, now: int, until: int) -> list[int]:
        """Lease every open or failed episode of the user not leased by someone else."""
        rows = await (
            await self.conn.execute(
                "SELECT id FROM episodes WHERE user_id = ? AND status IN ('open', 'failed')"
                " AND (claimed_until IS NULL OR claimed_until <= ? OR claimed_by = ?) ORDER BY start_at, id",
                (user_id, now, token),
            )
        ).fetchall()
        ids = [r[0] for r in rows]
        if ids:
            await self.conn.execute(
                f"UPDATE episodes SET claimed_by = ?, claimed_until = ? WHERE id IN ({','.join('?' * len(ids))})",
                (token, until, *ids),
            )
        return ids

    async def leases_elsewhere(self, user_id: str, token: str, now: int) -> tuple[int, int | None]:
        """(episodes with work that another worker's unexpired lease holds, when the last lease ends)."""
        row = await (
            await self.conn.execute(
                "SELECT count(*), max(claimed_until) FROM episodes WHERE user_id = ? AND status IN ('open', 'failed')"
                " AND claimed_until > ? AND claimed_by != ?",
                (user_id, now, token),
            )
        ).fetchone()
        return int(row[0]), (int(row[1]) if row[1] is not None else None)

    async def renew_leases(self, token: str, until: int) -> int:
        """Extend every lease this worker still holds (its episodes not yet finished)."""
        cur = await self.conn.execute(
            "UPDATE episodes SET claimed_until = ? WHERE claimed_by = ? AND status IN ('open', 'failed')",
            (until, token),
        )
        return cur.rowcount

    async def insert_runs_many(self, runs: Sequence[dict[str, Any]]) -> None:
        """Finished extraction runs with the ids the caller handed out (`id_source`, under the write
        lock), in one executemany; a field a run lacks takes the column's default."""
        if runs:
            names = list(_RUN_FIELDS)
            await self.conn.executemany(
                f"INSERT INTO extraction_runs({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                [tuple(run.get(n, default) for n, default in _RUN_FIELDS.items()) for run in runs],
            )

    async def held_episodes(self, episode_ids: Sequence[int], token: str) -> set[int]:
        """Which of these episodes this worker still holds the lease on (inside a write transaction,
        nobody can take one away before it commits)."""
        if not episode_ids:
            return set()
        rows = await fetchall(
            self.conn,
            f"SELECT id FROM episodes WHERE claimed_by = ? AND id IN ({','.join('?' * len(episode_ids))})",
            (token, *episode_ids),
        )
        return {int(r[0]) for r in rows}

    async def finish_episodes_many(self, rows: Sequence[tuple[str, str | None, int]]) -> None:
        """(status, error, episode id): processed or failed, attempt counted, lease released."""
        if rows:
            await self.conn.executemany(
                "UPDATE episodes SET status = ?, error = ?, attempts = attempts + 1, claimed_by = NULL,"
                " claimed_until = NULL WHERE id = ?",
                rows,
            )

    async def user_row_counts(self, user_id: str) -> dict[str, int]:
        """Rows of each table that belong to the user, and audit rows whose text is not yet redacted."""
        counts: dict[str, int] = {}
        for table in USER_TABLES:
            row = await (
                await self.conn.execute(f"SELECT count(*) FROM {table} WHERE user_id = ?", (user_id,))
            ).fetchone()
            counts[table] = int(row[0])
        row = await (
            await self.conn.execute(
                "SELECT count(*) FROM audit_log WHERE user_id = ? AND redacted_at IS NULL AND action != 'erase'",
                (user_id,),
            )
        ).fetchone()
        counts["audit_log"] = int(row[0])
        return counts

    async def user_candidates(self, user_id: str) -> list[Candidate]:
        """Every candidate of the user, whatever its status, oldest first (export)."""
        rows = await (
            await self.conn.execute(
                f"SELECT {CANDIDATE_COLS} FROM {CANDIDATE_FROM} WHERE c.user_id = ? ORDER BY c.created_at, c.id",
                (user_id,),
            )
        ).fetchall()
        return [candidate_from_row(r) for r in rows]

    async def user_messages(self, user_id: str) -> list[tuple[int, str, str, int]]:
        """(id, role, content, at) of every message of the user, in conversation order (export)."""
        rows = await (
            await self.conn.execute(
                "SELECT id, role, content, at FROM messages WHERE user_id = ? ORDER BY at, id", (user_id,)
            )
        ).fetchall()
        return [(r[0], r[1], r[2], r[3]) for r in rows]

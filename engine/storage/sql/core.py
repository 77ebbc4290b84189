"""`TxCore`: the room every other room of the transaction stands on: the connection, the user's
write lock, ids handed out ahead, the audit log (append, read, the rows a decision wrote), the
store's `meta` settings, and what concerns every table of one user (erasure, counts).

Each room of `engine/storage/sql/` (core, knowledge, queue, tombstones, capture, context, and the
team, stats, policies and text-arm rooms) is a `Protocol` with its statements written in it:
`SqlTx` (sql/tx.py) subclasses them all, and a service annotates its `tx` with the rooms it may
touch (engine/storage/rooms.py), so mypy holds it to them. STORAGE.md maps each table to its room.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, Protocol

from ...models import (
    AuditEvent,
)
from ..events import Audited
from .conn import SqlConn
from .guard import json_column
from .records import (
    AUDIT_COLS,
    audit_from_row,
)

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


class IdSource(ABC):
    """Ids for rows one write transaction inserts with explicit ids (see `SqlTx.id_source`):
    `reserve(n)` makes n more available (it may reach the database), `take()` hands one out
    without awaiting, so the pipeline's gates can number survivors as they pass."""

    def __init__(self) -> None:
        self._ready: list[int] = []

    async def reserve(self, n: int) -> None:
        missing = n - len(self._ready)
        if missing > 0:
            self._ready.extend(await self._fetch(missing))

    @abstractmethod
    async def _fetch(self, n: int) -> list[int]:
        """`n` new ids from the database (the backend's sequence or counter)."""

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


async def recorded_embedder(tx: TxCore) -> tuple[str, int | None]:
    """(name, dimensions) of the embedder the store's vectors come from; `hashing` when no name
    was recorded (databases made before names were: see `Memory._check_embedder`)."""
    name = await tx.meta_value("embedder")
    width = await tx.meta_value("embedding_dimensions")
    return name or LEGACY_EMBEDDER, None if width is None else int(width)


class TxCore(Protocol):
    """The connection and the audit log; `SqlTx.__init__` sets `conn` and `events`."""

    conn: SqlConn
    events: list[Audited]
    """The audit rows this transaction wrote, as typed events: `Store.transaction()` hands them on
    after the commit (engine/storage/events.py)."""

    async def announce(self, user_ids: Sequence[str]) -> None:
        """Before the commit of a transaction that changed these users' candidates: what the
        backend sends from inside it (PostgreSQL's NOTIFY, postgres/tx.py). Nothing on SQLite,
        whose store tells its own process's subscribers after the commit."""
        return None

    async def lock_user(self, user_id: str) -> None:
        """Hold `user_id`'s write lock until this transaction ends. SQLite's BEGIN IMMEDIATE already
        holds the whole file's write lock, so there is nothing more to take; PostgreSQL takes the
        user's advisory lock (postgres/tx.py)."""
        return None  # a body, so that the Protocol does not read the method as abstract

    @abstractmethod
    def id_source(self, table: str) -> IdSource:
        """Ids for rows this transaction will insert with explicit ids (the pipeline's batches)."""

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

    async def users(self) -> list[str]:
        rows = await (
            await self.conn.execute(
                "SELECT user_id FROM knowledge UNION SELECT user_id FROM candidates UNION"
                " SELECT user_id FROM messages UNION SELECT user_id FROM tombstones ORDER BY 1"
            )
        ).fetchall()
        return [r[0] for r in rows]

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
        self.events.append(Audited(action, actor, user_id, entity, entity_id))
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
                json_column(self.conn, before) if before is not None else None,
                json_column(self.conn, after) if after is not None else None,
                reason,
                note,
            ),
        )
        return await returned_id(cur)

    async def audit_many(self, rows: Sequence[dict[str, Any]]) -> None:
        """Bulk form of `audit`: each dict holds audit()'s keyword arguments."""
        self.events.extend(
            Audited(r["action"], r["actor"], r["user_id"], r["entity"], r.get("entity_id")) for r in rows
        )
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
                    json_column(self.conn, r["before"]) if r.get("before") is not None else None,
                    json_column(self.conn, r["after"]) if r.get("after") is not None else None,
                    r.get("reason"),
                    r.get("note"),
                )
                for r in rows
            ],
        )

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
        self, candidate_id: int, decision_row: int, actions: Sequence[str], made: int | None = None
    ) -> list[tuple[int, str]]:
        """(candidate id, its state before) of the links a decision re-pointed or cut: rows of
        `actions` written by the decision's own transaction (after the candidate's previous audit
        row, before its decision row) on candidates that named it as `supersedes_candidate_id`, or
        that were pointed at the fact it made (`made`: engine.gate's I5). The JSON is read here,
        not in SQL, so both backends run the same statement."""
        prev = await (
            await self.conn.execute(
                "SELECT coalesce(max(id), 0) FROM audit_log WHERE entity = 'candidate' AND entity_id = ? AND id < ?",
                (candidate_id, decision_row),
            )
        ).fetchone()
        marks = ", ".join("?" * len(actions))
        rows = await fetchall(
            self.conn,
            f"SELECT entity_id, before, after FROM audit_log WHERE entity = 'candidate' AND action IN ({marks})"
            " AND id > ? AND id < ? ORDER BY id",
            (*actions, int(prev[0]), decision_row),
        )
        out = []
        for entity_id, before, after in rows:
            if before is None:
                continue
            was, became = json.loads(before), json.loads(after or "{}")
            if was.get("supersedes_candidate_id") == candidate_id or (
                made is not None and was.get("supersedes_id") is None and became.get("supersedes_id") == made
            ):
                out.append((int(entity_id), before))
        return out

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

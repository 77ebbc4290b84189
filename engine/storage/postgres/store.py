"""PostgresStore: the Store of STORAGE.md over an asyncpg pool.

Transactions: every write transaction is a pooled connection at READ COMMITTED. What keeps two
writers from deciding the same thing twice is what kept them apart on SQLite minus the global lock:
guarded UPDATEs (`... WHERE status = 'pending'`, which PostgreSQL re-checks against the committed
row after waiting for a concurrent writer), row locks taken by `SELECT ... FOR UPDATE` (SKIP LOCKED
for the queue and episode leases, PostgresTx), and unique indexes. Reads (`reading()`) run at
REPEATABLE READ READ ONLY: one snapshot for every statement of the read, and never a lock a
writer waits on.

New work without polling: `subscribe()` LISTENs on a connection of its own; the trigger of schema
migration 1 NOTIFYs channel `memdesk_candidates` with the user id when candidates are inserted.

Erasure (`compact()`): deleting rows leaves dead tuples, and a plain VACUUM only marks their space
reusable; the bytes stay in the table's pages until overwritten. VACUUM FULL rewrites each table
(and its indexes and TOAST table) into new files from live rows only and unlinks the old ones, so
the database's files no longer hold the erased text. What it cannot reach, and the README says:
the write-ahead log still holds the inserted rows (and full-page images) until its segments are
recycled and overwritten, and WAL archives, base backups, streaming replicas' own WAL and
pg_dump files keep them for as long as they are kept. VACUUM FULL takes an ACCESS EXCLUSIVE lock
per table for the time of its rewrite, and only the table's owner (or a superuser; from
PostgreSQL 17 the MAINTAIN privilege) may run it, so `compact()` reports False when it could not.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import asyncpg

from ...errors import AgentIdentityError, UserInputError
from ...models import AgentLogin
from ...timeutil import from_us
from ..base import TABLES, Store
from ..sql.vector_swap import VectorSwap
from ..urls import masked
from . import schema
from .connection import Conn, PgConn, connect, create_pool

if TYPE_CHECKING:
    from ..sql.text_arm import _UserStats
    from .tx import PostgresTx

log = logging.getLogger(__name__)

Verify = Callable[[Any], Awaitable[None]]

# Tables an erasure deletes from or redacts: what compact() rewrites.
ERASE_TABLES: tuple[str, ...] = (
    "messages",
    "episodes",
    "extraction_runs",
    "candidates",
    "knowledge",
    "knowledge_stats",
    "tombstones",
    "audit_log",
    "discarded",
    "flags",
    "second_reviews",
    "assignments",
)

# Columns a dump leaves out: `search` is derived from the statement (PostgresTx.search_text), and
# rebuilt by `load`, as SQLite rebuilds its FTS rows; `audit_log.db_role` is set by the server on
# insert (schema migration 5: the role that loads the row).
_DERIVED = {"knowledge": {"search"}, "audit_log": {"db_role", "tx"}}  # tx: migration 8

_OWNER_ONLY = (
    "only the database's owner may read or change which logins may propose as which agents"
    " (agent_logins): run this as the owner role; nothing was changed"
)


def _key(table: str) -> str:
    return "key" if table == "meta" else "id"


class PostgresStore(Store):
    """A memdesk store in one PostgreSQL database. `load` copes with references that point
    forward in TABLES order (messages -> episodes, candidates <-> knowledge, a fact superseded by
    a later fact)."""

    backend = "postgres"
    TABLES = TABLES

    def __init__(self, url: str, pool: asyncpg.Pool) -> None:
        self.url = url
        self.target = masked(url)
        self.pool = pool
        # BM25 statistics per user, shared by every pooled connection: each use re-checks them
        # against the user's fact count and largest id (PostgresTx.store_generation).
        self._stats: dict[str, _UserStats] = {}
        self._columns: dict[str, list[str]] = {}
        # Forward references `load` could not set yet: (table, column, target) -> {row id: value}.
        self._pending_refs: dict[tuple[str, str, str], dict[int, int]] = {}
        self._listeners: list[Callable[[], Awaitable[None]]] = []

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        dimensions: int,
        embedder: str | None = None,
        verify: Verify | None = None,
        max_version: int | None = None,
        min_size: int = 1,
        max_size: int = 10,
    ) -> PostgresStore:
        """Migrate the database (creating the schema in an empty one), then open the pool. A
        database of a newer schema is refused before anything is written to it, and so is one
        that `verify` (given a read transaction on an existing store, before any migration)
        refuses. `dimensions` and `embedder` describe a NEW store's vectors."""
        conn = await connect(url, vector=False)
        try:

            async def check(version: int) -> None:
                if version >= 1 and verify is not None:
                    async with conn.transaction(isolation="repeatable_read", readonly=True):
                        await verify(_make_tx(PgConn(conn), {}, writing=False))

            await schema.migrate(
                conn, dimensions, embedder=embedder, max_version=max_version, target=masked(url), verify=check
            )
        finally:
            await conn.close()
        pool = await create_pool(url, min_size=min_size, max_size=max_size)
        return cls(url, pool)

    def _tx(self, conn: Conn, *, writing: bool) -> PostgresTx:
        return _make_tx(PgConn(conn), self._stats, writing=writing)

    # -- transactions ---------------------------------------------------------------------------------

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[PostgresTx]:
        """One write transaction on a pooled connection, READ COMMITTED; committed on exit, rolled
        back on any exception (a cancelled caller included: asyncpg resets the connection before
        the pool hands it out again)."""
        try:
            async with self.pool.acquire() as conn, conn.transaction(isolation="read_committed"):
                yield self._tx(conn, writing=True)
        except asyncpg.PostgresError as exc:
            # the candidates trigger of schema migration 10: a proposal under a name its login may
            # not use. The transaction is rolled back; the caller gets the engine's own error.
            if exc.sqlstate == schema.AGENT_IDENTITY_SQLSTATE:
                hint = getattr(exc, "hint", None)
                raise AgentIdentityError(f"refused: {exc}" + (f" ({hint})" if hint else "")) from None
            raise

    def announce_here(self, user_ids: Sequence[str]) -> None:
        """Nothing more: the transaction's NOTIFY (`PostgresTx.announce`) reaches this process's
        listeners as it reaches every other's."""

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[PostgresTx]:
        """A consistent read-only snapshot (REPEATABLE READ READ ONLY): every statement of the read
        sees the same committed state, and no writer waits for it."""
        async with self.pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
            yield self._tx(conn, writing=False)

    async def close(self) -> None:
        for stop in list(self._listeners):
            with contextlib.suppress(Exception):
                await stop()
        await self.pool.close()

    async def schema_version(self) -> int:
        async with self.pool.acquire() as conn:
            return await schema.current_version(conn)

    # -- who an agent's login may propose as (schema migration 10) ----------------------------------

    async def agent_refusal(self, agent: str) -> str | None:
        """Why this pool's login may not propose as `agent` (None: it may), answered by the server's
        `may_propose_as`, the function its candidates trigger calls: the same rule, asked first."""
        async with self.pool.acquire() as conn:
            row = await conn.fetchrow("SELECT session_user::text, may_propose_as($1)", agent)
        if row is not None and row[1] is True:
            return None
        login = "?" if row is None else row[0]
        return (
            f'refused: the database login "{login}" may not propose as agent "{agent}": review policies'
            f" trust agents by name, so the database holds each login to the names its owner allowed"
            f" (the owner runs `memdesk agents allow DB {login} {agent}`); nothing was queued"
        )

    async def agent_logins(self) -> list[AgentLogin]:
        """The owner's map (owner only: no other role may read it)."""
        try:
            async with self.reading() as tx:
                rows = await tx.conn.execute_fetchall(
                    "SELECT login, agent, granted_by, granted_at FROM agent_logins ORDER BY login, agent"
                )
        except asyncpg.InsufficientPrivilegeError:
            raise UserInputError(_OWNER_ONLY) from None
        return [AgentLogin(r[0], r[1], r[2], from_us(r[3])) for r in rows]

    async def set_agent_login(self, login: str, agent: str, *, allow: bool, actor: str, at: int) -> bool:
        """Allow or revoke one (login, agent) pair, audited (`agent_allow` / `agent_revoke`, entity
        `agent_login`) in the same transaction; False when nothing changed (already so). Allowing
        names an existing login role: a typo would otherwise map a name no one logs in as."""
        try:
            async with self.transaction() as tx:
                if allow:
                    found = await (
                        await tx.conn.execute("SELECT rolcanlogin FROM pg_roles WHERE rolname = ?", (login,))
                    ).fetchone()
                    can_login = None if found is None else found[0]
                    if can_login is None:
                        raise UserInputError(f'there is no role "{login}" on this server: create the login first')
                    if not can_login:
                        raise UserInputError(
                            f'role "{login}" cannot log in: a proposal is checked against the login that'
                            " inserts it, so map a login role (CREATE ROLE name LOGIN IN ROLE memdesk_agent)"
                        )
                    cur = await tx.conn.execute(
                        "INSERT INTO agent_logins(login, agent, granted_by, granted_at) VALUES (?, ?, ?, ?)"
                        " ON CONFLICT (login, agent) DO NOTHING",
                        (login, agent, actor, at),
                    )
                else:
                    cur = await tx.conn.execute(
                        "DELETE FROM agent_logins WHERE login = ? AND agent = ?", (login, agent)
                    )
                if cur.rowcount != 1:
                    return False
                await tx.audit(
                    at=at,
                    actor=actor,
                    action="agent_allow" if allow else "agent_revoke",
                    user_id="",
                    entity="agent_login",
                    entity_id=None,
                    before=None if allow else {"login": login, "agent": agent},
                    after={"login": login, "agent": agent} if allow else None,
                )
                return True
        except asyncpg.InsufficientPrivilegeError:
            raise UserInputError(_OWNER_ONLY) from None

    # -- whole-store copies (`memdesk migrate`) -------------------------------------------------------

    async def columns(self, table: str) -> list[str]:
        """The table's columns in their order, less the derived ones."""
        if table not in self._columns:
            if table not in TABLES:
                raise ValueError(f"unknown table {table!r}")
            async with self.pool.acquire() as conn:
                rows = await conn.fetch(
                    "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema()"
                    " AND table_name = $1 ORDER BY ordinal_position",
                    table,
                )
            skip = _DERIVED.get(table, set())
            self._columns[table] = [r[0] for r in rows if r[0] not in skip]
        return self._columns[table]

    async def dump(self, table: str, *, batch: int = 1000) -> AsyncIterator[list[dict[str, Any]]]:
        """Every row of `table` in key order, `batch` rows at a time, from one snapshot of the
        table (a REPEATABLE READ transaction and a server-side cursor held for the whole dump).
        Knowledge rows carry "embedding" as a list of floats."""
        cols = await self.columns(table)
        select = ", ".join(f'"{c}"' for c in cols)
        async with self.pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
            cursor = await conn.cursor(f"SELECT {select} FROM {table} ORDER BY {_key(table)}")
            while True:
                rows = await cursor.fetch(batch)
                if not rows:
                    break
                out = [dict(r) for r in rows]
                if table == "knowledge":
                    for row in out:
                        row["embedding"] = _floats(row["embedding"])
                yield out

    async def load(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        """Insert rows with the ids they carry (one transaction). Knowledge rows get their `search`
        vector from the statement; meta rows replace the value a key already has (the source's
        embedder and width describe the vectors being copied). A reference to a row not loaded
        yet (an episode loaded after its messages, a fact superseded by a later fact) is written
        once its target exists: NULL until then, set by the load that brings the target. Each
        identity sequence is then moved past the largest id."""
        if not rows:
            return
        cols = await self.columns(table)
        names = list(rows[0])
        unknown = [n for n in names if n not in cols and not (table == "knowledge" and n == "embedding")]
        if unknown:
            raise ValueError(f"{table}: columns this store does not have: {', '.join(unknown)}")
        data = [dict(r) for r in rows]
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute("SET CONSTRAINTS ALL DEFERRED")
            if table != "meta":
                await self._hold_forward_refs(conn, table, data)
            values = [f"${i}" for i in range(1, len(names) + 1)]
            insert_cols = [f'"{n}"' for n in names]
            if table == "knowledge":
                from .tx import search_scope, search_text, search_value

                insert_cols.append("search")
                values.append(search_value(f"${len(names) + 1}", f"${len(names) + 2}"))
            sql = f"INSERT INTO {table}({', '.join(insert_cols)}) VALUES ({', '.join(values)})"
            if table == "meta":
                sql += " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
            records = [tuple(row.get(n) for n in names) for row in data]
            if table == "knowledge":
                records = [
                    (*rec, search_text(row["statement"]), search_scope(row["user_id"]))
                    for rec, row in zip(records, data, strict=True)
                ]
            await conn.executemany(sql, records)
            await self._apply_pending_refs(conn)
            if table != "meta":
                # the audit log names ids of every table: all counters move past them
                await schema.sync_sequences(conn, schema.IDENTITY_TABLES if table == "audit_log" else (table,))

    async def _hold_forward_refs(self, conn: Conn, table: str, data: list[dict[str, Any]]) -> None:
        """Set to NULL (and remember) each reference of these rows whose target row is neither in
        the database nor among the rows themselves."""
        for src, column, target in schema.FOREIGN_KEYS:
            if src != table:
                continue
            wanted = {int(r[column]) for r in data if r.get(column) is not None}
            if not wanted:
                continue
            present = {
                int(r[0])
                for r in await conn.fetch(f"SELECT id FROM {target} WHERE id = ANY($1::bigint[])", list(wanted))
            }
            if target == table:
                present |= {int(r["id"]) for r in data}
            missing = wanted - present
            if not missing:
                continue
            held = self._pending_refs.setdefault((table, column, target), {})
            for row in data:
                if row.get(column) is not None and int(row[column]) in missing:
                    held[int(row["id"])] = int(row[column])
                    row[column] = None

    async def _apply_pending_refs(self, conn: Conn) -> None:
        """Write the held references whose targets exist now."""
        for (table, column, target), held in list(self._pending_refs.items()):
            if not held:
                continue
            done = await conn.fetch(
                f"UPDATE {table} t SET {column} = p.v FROM unnest($1::bigint[], $2::bigint[]) AS p(id, v)"
                f" WHERE t.id = p.id AND EXISTS (SELECT 1 FROM {target} x WHERE x.id = p.v) RETURNING t.id",
                list(held),
                list(held.values()),
            )
            for r in done:
                held.pop(int(r[0]), None)

    def unresolved_references(self) -> dict[str, int]:
        """References `load` still holds back because their target never arrived, per
        'table.column' (empty after a complete copy)."""
        return {f"{t}.{c}": len(h) for (t, c, _), h in self._pending_refs.items() if h}

    async def counts(self) -> dict[str, int]:
        async with self.pool.acquire() as conn:
            return {t: int(await conn.fetchval(f"SELECT count(*) FROM {t}")) for t in TABLES}

    async def is_empty(self) -> bool:
        async with self.pool.acquire() as conn:
            for table in TABLES:
                if table != "meta" and await conn.fetchval(f"SELECT EXISTS (SELECT 1 FROM {table})"):
                    return False
        return True

    # -- erasure --------------------------------------------------------------------------------------

    def vector_swap(self) -> VectorSwap:
        from .reembed import PostgresVectorSwap

        return PostgresVectorSwap()

    async def compact(self) -> bool:
        """VACUUM FULL every table an erasure touches (see the module docstring for why FULL, and
        what the WAL and backups keep). False when some table could not be rewritten: this role
        does not own it (VACUUM skips such a table with only a warning, so ownership is checked
        first and those tables are not attempted)."""
        return await self._vacuum("FULL, ANALYZE", ERASE_TABLES, "compact")

    async def clear_copy(self) -> None:
        """Empty every memdesk table but `meta` of a destination an interrupted `memdesk migrate`
        left (engine/transfer.py), so the copy starts over. The audit log refuses TRUNCATE by a
        trigger of its own, which is disabled for this one statement (owner only, as the copy's
        creator is) inside the same transaction: nothing else can write between."""
        tables = [t for t in (*self.TABLES, "knowledge_stats") if t != "meta"]
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute("ALTER TABLE audit_log DISABLE TRIGGER USER")
            await conn.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY")
            await conn.execute("ALTER TABLE audit_log ENABLE TRIGGER USER")

    async def settle(self) -> bool:
        """VACUUM (ANALYZE) every memdesk table. Right after a bulk load the rows carry no hint
        bits (the first query to read each row checks the commit log and writes the page back),
        the visibility map is empty (no index-only scan, no bitmap count without heap reads) and
        the planner's statistics are those of the empty table: 100,000 facts just loaded made a
        100-fact user's retrieve p95 14-20 ms; after this, 4-7 ms (benchmarks/README.md).
        Autovacuum gets there by itself within minutes; `memdesk migrate` and the benchmark do
        not wait for it."""
        return await self._vacuum("ANALYZE", (*self.TABLES, "knowledge_stats"), "settle")

    async def _vacuum(self, options: str, tables: Sequence[str], what: str) -> bool:
        """VACUUM (`options`) the `tables` this role owns; False, with a warning, when it owns
        not all of them (VACUUM itself would skip those with only a warning)."""
        async with self.pool.acquire() as conn:
            owned = {
                r[0]
                for r in await conn.fetch(
                    "SELECT c.relname FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace"
                    " AND c.relname = ANY($1::text[]) AND pg_has_role(current_user, c.relowner, 'USAGE')",
                    list(tables),
                )
            }
            doable = [t for t in tables if t in owned]
            if doable:
                await conn.execute(f"VACUUM ({options}) {', '.join(doable)}")
        if len(doable) != len(tables):
            log.warning(
                "%s: this role does not own %s; not vacuumed", what, ", ".join(t for t in tables if t not in owned)
            )
            return False
        return True

    # -- notifications --------------------------------------------------------------------------------

    async def subscribe(self, channel: str, callback: Callable[[str], None]) -> Callable[[], Awaitable[None]]:
        """Call `callback(payload)` on this event loop for every NOTIFY on `channel`, from a
        connection of its own (a pooled connection would lose its LISTEN when released). The
        returned coroutine function UNLISTENs and closes it.

        A lost connection (the server restarted, an administrator ended the session) is opened
        again, after 0.5 s and then twice as long each failed try (at most 30 s), for as long as
        the subscription lasts; once listening again, `callback("")` says that notifications may
        have been missed meanwhile (a workstation then reloads its queue)."""

        retry: asyncio.Task[None] | None = None
        stopped = False
        current: Conn | None = None

        def deliver(_conn: Conn, _pid: int, _channel: str, payload: object) -> None:
            try:
                callback(str(payload))
            except Exception:  # a failing subscriber must not take the listener down
                log.exception("subscriber of %s failed", channel)

        async def listen() -> Conn:
            conn = await connect(self.url, vector=False)
            await conn.add_listener(channel, deliver)
            conn.add_termination_listener(lost)
            return conn

        def lost(_conn: Conn) -> None:
            nonlocal retry
            if not stopped and retry is None:
                log.warning("the connection listening on %s was lost; opening it again", channel)
                retry = asyncio.get_running_loop().create_task(relisten())

        async def relisten() -> None:
            nonlocal current, retry
            delay = 0.5
            while not stopped:
                await asyncio.sleep(delay)
                try:
                    conn = await listen()
                except Exception as exc:  # the server still down, a refused login: try again later
                    log.warning(
                        "listening on %s again failed (%s); next try in %.1f s", channel, exc, min(delay * 2, 30.0)
                    )
                    delay = min(delay * 2, 30.0)
                    continue
                if stopped:  # stopped while connecting
                    await _close_quietly(conn)
                    break
                current, retry = conn, None
                deliver(conn, 0, channel, "")  # anything announced while nobody listened
                return
            retry = None

        current = await listen()

        async def stop() -> None:
            nonlocal stopped
            if stopped:
                return
            stopped = True
            with contextlib.suppress(ValueError):
                self._listeners.remove(stop)
            if retry is not None:
                retry.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await retry
            if current is not None:
                with contextlib.suppress(Exception):
                    await current.remove_listener(channel, deliver)
                await _close_quietly(current)

        self._listeners.append(stop)
        return stop


async def _close_quietly(conn: Conn) -> None:
    with contextlib.suppress(Exception):
        await asyncio.wait_for(conn.close(), timeout=5)


def _make_tx(conn: PgConn, stats: dict[str, _UserStats], *, writing: bool) -> PostgresTx:
    from .tx import PostgresTx

    return PostgresTx(conn, stats, writing=writing)


def _floats(value: Any) -> list[float]:
    """A pgvector value (Vector, numpy array or list) as a list of Python floats."""
    if hasattr(value, "to_list"):
        return [float(x) for x in value.to_list()]
    return [float(x) for x in value]

"""PostgreSQL connections: an asyncpg pool, and `PgConn`, the cursor API the portable SQL runs on.

Driver choice: asyncpg rather than psycopg 3.
- Speed: asyncpg speaks the wire protocol itself (Cython), with the binary format for parameters
  and results, so an integer or a 384-float vector crosses as bytes, not as text to parse. Its
  published benchmarks run several times psycopg's rows per second, and memdesk's reads are many
  small queries, where per-query overhead is most of the cost.
- Prepared statements for free: every parameterised query is prepared once per connection and
  cached (`statement_cache_size`), so the engine's few hundred fixed SQL texts are parsed and
  planned once per pooled connection, not once per call.
- A built-in pool (`asyncpg.create_pool`) with an `init` hook, where each new connection gets the
  pgvector codec; psycopg needs the separate psycopg_pool package for the same.
- `Connection.add_listener` delivers LISTEN/NOTIFY callbacks on the event loop without polling,
  which is how new candidates reach open workstations.
- pgvector ships an asyncpg codec (`pgvector.asyncpg.register_vector`) that sends vectors in
  binary.
What it costs: asyncpg is strict about types (an int for a float8 parameter is fine, a float for
a bigint is not; `$1 IS NULL` needs a cast so the server can infer the type), and it has no
DB-API cursor. `PgConn` below is the thin layer that gives the portable SQL the aiosqlite shape
it was written for (STORAGE.md): `?` placeholders, `execute() -> cursor`, `rowcount`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from ...errors import UserInputError

Conn = asyncpg.Connection | PoolConnectionProxy
"""A connection of its own or one borrowed from the pool (same API)."""

# Statements prepared and kept per pooled connection. The engine has a few hundred fixed SQL texts
# (plus IN-lists of varying length); asyncpg's default of 100 would evict and re-prepare them.
STATEMENT_CACHE_SIZE = 1024

SERVER_SETTINGS = {
    "application_name": "memdesk",
    # JIT compilation pays off for long analytical queries; memdesk's are short, and the JIT's
    # compile time (tens of ms) would land on exactly the per-user scans a large user triggers.
    "jit": "off",
}


# -- placeholders ------------------------------------------------------------------------------------

_TOKENS = re.compile(
    r"""
      '(?:[^']|'')*'          # a string literal ('' is an escaped quote)
    | "(?:[^"]|"")*"          # a quoted identifier
    | --[^\n]*                # a line comment
    | /\*.*?\*/               # a block comment
    | \?                      # a placeholder
    | \bLIKE\b               # SQLite's case-insensitive LIKE
    """,
    re.VERBOSE | re.DOTALL | re.IGNORECASE,
)


@lru_cache(maxsize=4096)
def to_dollar(sql: str) -> str:
    """The portable SQL as PostgreSQL must read it, cached per SQL text (the engine's SQL is a
    fixed set): `?` placeholders become `$1..$n` in order, and `LIKE` becomes `ILIKE`, because
    SQLite's LIKE ignores case (ASCII letters) and PostgreSQL's does not: a search for "lisbon"
    must find "Lisbon" on both. Nothing inside a string literal, a quoted identifier or a comment
    is touched."""
    counter = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal counter
        token = match.group(0)
        if token == "?":
            counter += 1
            return f"${counter}"
        if token.upper() == "LIKE":
            return "ILIKE"
        return token

    return _TOKENS.sub(replace, sql)


_RETURNS_ROWS = re.compile(r"^\s*(?:SELECT|WITH|VALUES|SHOW|EXPLAIN|TABLE)\b", re.IGNORECASE)
_COUNTED = re.compile(r"^\s*(?:UPDATE|DELETE)\b", re.IGNORECASE)
_RETURNING = re.compile(r"\bRETURNING\b", re.IGNORECASE)


@lru_cache(maxsize=4096)
def _returns_rows(sql: str) -> bool:
    """Whether a statement yields rows (a query, or a write with RETURNING): those run through
    fetch; other writes through execute, whose status ("UPDATE 3") carries the row count."""
    if _RETURNS_ROWS.match(sql):
        return True
    return bool(_RETURNING.search(_TOKENS.sub(lambda m: m.group(0) if m.group(0) in ("?", "LIKE") else " ", sql)))


def _status_count(status: str) -> int:
    """The row count of a command status: 'INSERT 0 5' -> 5, 'UPDATE 3' -> 3, 'SELECT 2' -> 2;
    -1 for a status without one ('CREATE TABLE', 'SET')."""
    last = status.rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else -1


class PgCursor:
    """What `PgConn.execute` returns: the rows already fetched, and the count of rows the
    statement touched (a query's row count, as PostgreSQL reports it, where SQLite says -1)."""

    __slots__ = ("_pos", "_rows", "rowcount")

    def __init__(self, rows: list[asyncpg.Record], rowcount: int) -> None:
        self._rows = rows
        self._pos = 0
        self.rowcount = rowcount

    async def fetchall(self) -> list[asyncpg.Record]:
        rows = self._rows[self._pos :]
        self._pos = len(self._rows)
        return rows

    async def fetchone(self) -> asyncpg.Record | None:
        if self._pos >= len(self._rows):
            return None
        row = self._rows[self._pos]
        self._pos += 1
        return row

    def __aiter__(self) -> PgCursor:
        return self

    async def __anext__(self) -> asyncpg.Record:
        row = await self.fetchone()
        if row is None:
            raise StopAsyncIteration
        return row

    async def close(self) -> None:
        self._rows = []


class PgConn:
    """One asyncpg connection with aiosqlite's cursor API (STORAGE.md), for the portable SQL.

    Transactions are not begun here: `PostgresStore.transaction()` / `reading()` own them."""

    __slots__ = ("raw",)

    def __init__(self, raw: Conn) -> None:
        self.raw = raw

    async def execute(self, sql: str, args: Sequence[Any] | dict[str, Any] = ()) -> PgCursor:
        if isinstance(args, dict):
            raise TypeError("PgConn takes positional ? parameters only")
        query = to_dollar(sql)
        try:
            if _returns_rows(sql):
                rows = await self.raw.fetch(query, *args)
                return PgCursor(rows, len(rows))
            status = await self.raw.execute(query, *args) if args else await self._execute_simple(query)
        except (asyncpg.CharacterNotInRepertoireError, asyncpg.UntranslatableCharacterError) as exc:
            # Text PostgreSQL cannot hold (a NUL, where a caller's text did not pass through
            # limits.check_unicode): the user's input, reported as such, and the transaction rolls back.
            raise UserInputError(f"the text holds a character PostgreSQL cannot store ({exc})") from None
        return PgCursor([], _status_count(status))

    async def _execute_simple(self, query: str) -> str:
        """A statement without parameters. asyncpg sends those through the simple protocol, which
        also runs several statements at once (the migrations rely on that)."""
        return await self.raw.execute(query)

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> PgCursor:
        """The statement once per row. Its cursor's rowcount is the total of rows touched, as
        sqlite3's is: an INSERT of one VALUES row inserts exactly one row or raises, so inserts go
        through asyncpg's pipelined executemany (which reports no counts); an UPDATE or DELETE
        can touch none, so those run row by row and their statuses are added up."""
        batch = [tuple(r) for r in rows]
        query = to_dollar(sql)
        if not batch:
            return PgCursor([], 0)
        if _COUNTED.match(sql):
            total = 0
            for args in batch:
                total += _status_count(await self.raw.execute(query, *args))
            return PgCursor([], total)
        await self.raw.executemany(query, batch)
        return PgCursor([], len(batch))

    async def execute_fetchall(self, sql: str, args: Sequence[Any] = ()) -> list[asyncpg.Record]:
        """aiosqlite's shortcut: execute, then every row."""
        return await (await self.execute(sql, args)).fetchall()

    async def fetchval(self, sql: str, args: Sequence[Any] = ()) -> Any:
        """The first column of the first row, or None (PostgreSQL-side code; not part of the
        aiosqlite API)."""
        return await self.raw.fetchval(to_dollar(sql), *args)


async def _init_connection(conn: asyncpg.Connection) -> None:
    """Per pooled connection: the pgvector codec (vectors cross in binary as numpy arrays)."""
    from pgvector.asyncpg import register_vector

    await register_vector(conn)


async def create_pool(url: str, *, min_size: int = 1, max_size: int = 10) -> asyncpg.Pool:
    """The pool the store's transactions draw from. The schema (and so the `vector` type the codec
    needs) must exist before the first connection is made: migrate first."""
    pool = await asyncpg.create_pool(
        url,
        min_size=min_size,
        max_size=max_size,
        init=_init_connection,
        statement_cache_size=STATEMENT_CACHE_SIZE,
        server_settings=SERVER_SETTINGS,
    )
    assert pool is not None
    return pool


async def connect(url: str, *, vector: bool = True) -> asyncpg.Connection:
    """One connection outside the pool (migrations, LISTEN, VACUUM)."""
    conn = await asyncpg.connect(url, statement_cache_size=STATEMENT_CACHE_SIZE, server_settings=SERVER_SETTINGS)
    if vector:
        await _init_connection(conn)
    return conn

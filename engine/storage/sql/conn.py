"""`SqlConn`: the connection `SqlTx` and its mixins are written against.

The SQLite backend passes an `aiosqlite.Connection` as it is; the PostgreSQL backend provides the
same calls over asyncpg (`engine.storage.postgres.connection.PgConn`, `?` placeholders rewritten
to `$n`). Both satisfy these Protocols structurally: nothing registers or inherits, so the
portable SQL layer names no driver (the import contracts in pyproject.toml keep it that way).
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable
from typing import Any, Protocol


class SqlCursor(Protocol):
    """What a statement gives back: its rows (tuples or records that index and unpack like tuples)
    and how many rows it changed."""

    @property
    def rowcount(self) -> int: ...

    async def fetchone(self) -> Any: ...

    async def fetchall(self) -> Iterable[Any]: ...


class SqlConn(Protocol):
    """One connection, in aiosqlite's cursor style. `execute_fetchall` runs a statement and reads
    its rows in one call: on aiosqlite that is one hop to its thread instead of two."""

    def execute(self, sql: str, parameters: Any = ..., /) -> Awaitable[SqlCursor]: ...

    def executemany(self, sql: str, parameters: Any, /) -> Awaitable[SqlCursor]: ...

    def execute_fetchall(self, sql: str, parameters: Any = ..., /) -> Awaitable[Iterable[Any]]: ...

"""Opening SQLite with sqlite-vec loaded, and the one way the engine writes: `transaction()`.

Driver choice: the stdlib `sqlite3` when its build can load extensions, otherwise `pysqlite3`
(pysqlite3-binary bundles a recent SQLite that can). Some Python builds (pyenv's default among
them) ship a `sqlite3` without `enable_load_extension`; sqlite-vec cannot load there.

Writes use BEGIN IMMEDIATE so that the write lock is taken up front: a deferred transaction that
reads and then writes can fail with SQLITE_BUSY even with a busy timeout, which is the "database is
locked" error other processes would otherwise see. All statements of one Memory go through one
aiosqlite connection, serialised by an asyncio lock so coroutines never interleave inside one
another's transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from types import ModuleType
from typing import Any

import aiosqlite

from .errors import ConfigurationError

BUSY_TIMEOUT_MS = 60_000


def _can_load_extensions(module: ModuleType) -> bool:
    try:
        conn = module.connect(":memory:")
    except Exception:
        return False
    try:
        return hasattr(conn, "enable_load_extension")
    finally:
        conn.close()


def sqlite_module() -> ModuleType:
    """The DB-API module to use, or a ConfigurationError that names the fix."""
    if _can_load_extensions(sqlite3):
        return sqlite3
    try:
        from pysqlite3 import dbapi2  # type: ignore[import-not-found]
    except ImportError:
        dbapi2 = None
    if dbapi2 is not None and _can_load_extensions(dbapi2):
        return dbapi2
    fallback = "pysqlite3 is not installed" if dbapi2 is None else "the installed pysqlite3 cannot load them either"
    raise ConfigurationError(
        f"This Python's sqlite3 cannot load extensions, so sqlite-vec cannot be loaded, and {fallback}. "
        "Fix: `pip install pysqlite3-binary` (Linux x86_64), or use a Python built with loadable SQLite "
        "extensions (e.g. python.org or Homebrew builds)."
    )


def _connect_sync(path: str) -> Any:
    import sqlite_vec

    module = sqlite_module()
    conn = module.connect(path, isolation_level=None, check_same_thread=False)
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.enable_load_extension(False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if path != ":memory:":
        conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    # Reads through a memory map: the vector arm scans every embedding of a user's partition, and
    # copying those pages through the page cache costs more than the distance maths (18 -> 10 ms
    # CPU for 22,000 vectors of 384 floats). Writes still go through the WAL as before.
    if path != ":memory:":
        conn.execute("PRAGMA mmap_size = 268435456")
    conn.execute("PRAGMA foreign_keys = ON")
    # Freed pages are zeroed, so erased text does not linger in the file.
    conn.execute("PRAGMA secure_delete = ON")
    return conn


def _is_busy(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "database is locked" in text or "database is busy" in text


class Database:
    """One aiosqlite connection plus the lock that keeps transactions whole."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn
        self.lock = asyncio.Lock()

    @classmethod
    async def open(cls, path: str) -> Database:
        # Choose the driver here, before aiosqlite starts its worker thread: a ConfigurationError
        # raised inside that thread leaves it reporting to an event loop that may already be gone.
        sqlite_module()
        factory: Callable[[], Any] = lambda: _connect_sync(path)  # noqa: E731
        conn = aiosqlite.Connection(factory, 64)
        await conn
        return cls(conn)

    async def close(self) -> None:
        await self.conn.close()

    async def _begin(self, statement: str) -> None:
        """BEGIN that survives the caller's cancellation (a UI cancelling a stale read, say).

        aiosqlite runs a queued statement even after the task awaiting it is cancelled, so a
        cancelled BEGIN would leave the shared connection inside a transaction nobody ends, and
        every later BEGIN would fail with "cannot start a transaction within a transaction".
        The ROLLBACK is queued behind the BEGIN, so it always ends exactly that transaction.
        """
        try:
            await self.conn.execute(statement)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):  # the BEGIN itself failed: no transaction to end
                await self.conn.execute("ROLLBACK")
            raise

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception. Lock contention beyond the
        busy timeout is retried, so a caller does not see "database is locked" under load."""
        async with self.lock:
            for attempt in range(20):
                try:
                    await self._begin("BEGIN IMMEDIATE")
                    break
                except Exception as exc:  # driver-specific OperationalError
                    if not _is_busy(exc) or attempt == 19:
                        raise
                    await asyncio.sleep(0.05 * (attempt + 1))
            try:
                yield self.conn
            except BaseException:
                await self.conn.execute("ROLLBACK")
                raise
            else:
                for attempt in range(20):
                    try:
                        await self.conn.execute("COMMIT")
                        break
                    except Exception as exc:
                        if not _is_busy(exc) or attempt == 19:
                            await self.conn.execute("ROLLBACK")
                            raise
                        await asyncio.sleep(0.05 * (attempt + 1))

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[aiosqlite.Connection]:
        """A consistent snapshot for multi-statement reads."""
        async with self.lock:
            await self._begin("BEGIN")
            try:
                yield self.conn
            finally:
                await self.conn.execute("COMMIT")

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
import os
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import aiosqlite

from ...errors import ConfigurationError

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
        from pysqlite3 import dbapi2
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


def _precheck(path: str, max_version: int | None) -> None:
    """What can go wrong at open, found on this thread before aiosqlite's worker starts (an error
    raised inside that thread is reported to an event loop that may already be closed, as a
    second traceback): a database of a newer schema is refused BEFORE anything writes to it
    (switching to WAL rewrites its header), and a file that cannot be written is reported as
    such, not as SQLite's "unable to open database file"."""
    module = sqlite_module()
    try:
        conn = module.connect(path, isolation_level=None)
    except module.Error as exc:
        raise _explained(exc, path) from None
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if max_version is not None and version > max_version:
            raise ConfigurationError(
                f"{path} has schema version {version}; this memdesk knows up to {max_version}: upgrade memdesk"
            )
        if path != ":memory:":
            conn.execute("PRAGMA journal_mode = WAL")
    except module.Error as exc:
        raise _explained(exc, path) from None
    finally:
        conn.close()


def read_only_reason(path: str | os.PathLike[str]) -> str | None:
    """Why `path` cannot be written, or None. memdesk writes the database file and a write-ahead
    log and index beside it, so the directory must be writable too."""
    where = Path(path).expanduser().resolve()
    try:
        read_only_fs = bool(os.statvfs(where.parent).f_flag & os.ST_RDONLY)
    except OSError:
        read_only_fs = False
    if read_only_fs:
        problem = "is on a read-only file system"
    elif not os.access(where.parent, os.W_OK):
        problem = f"is in a directory this user cannot write ({where.parent})"
    elif where.exists() and not os.access(where, os.W_OK):
        problem = "is a read-only file"
    else:
        return None
    return (
        f"{path} {problem}; memdesk writes its database and a write-ahead log beside it:"
        " copy it to a writable directory"
    )


def _explained(exc: BaseException, path: str) -> BaseException:
    """An open that fails because the file or its directory cannot be written says so: SQLite's
    own words ("attempt to write a readonly database", "unable to open database file") do not say
    which file, or that the fix is a writable location."""
    text = str(exc).lower()
    if path != ":memory:" and ("readonly" in text or "read-only" in text or "unable to open" in text):
        reason = read_only_reason(path)
        if reason is not None:
            return ConfigurationError(f"{reason} ({exc})")
    return exc


def _is_busy(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "database is locked" in text or "database is busy" in text


class Database:
    """One aiosqlite connection plus the lock that keeps transactions whole."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn
        self.lock = asyncio.Lock()

    @classmethod
    async def open(cls, path: str, max_version: int | None = None) -> Database:
        """Open `path`; a database whose schema version is above `max_version` is refused before
        anything is written to it."""
        # Choose the driver here, before aiosqlite starts its worker thread: a ConfigurationError
        # raised inside that thread leaves it reporting to an event loop that may already be gone.
        _precheck(path, max_version)
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
    async def transaction(self, *, foreign_keys: bool = True) -> AsyncIterator[aiosqlite.Connection]:
        """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception. Lock contention beyond the
        busy timeout is retried, so a caller does not see "database is locked" under load.

        `foreign_keys=False` is for `SqliteStore.load` alone: a whole-store copy loads rows that
        name rows of a later batch or table (candidates and facts name each other), which the
        source already held consistent and the copy's verification compares row for row. The
        pragma is a no-op inside a transaction, so it is switched around it, under the lock."""
        async with self.lock:
            if not foreign_keys:
                await self.conn.execute("PRAGMA foreign_keys = OFF")
                try:
                    async with self._transaction() as conn:
                        yield conn
                finally:
                    await self.conn.execute("PRAGMA foreign_keys = ON")
                return
            async with self._transaction() as conn:
                yield conn

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """BEGIN IMMEDIATE ... COMMIT for `transaction`, which holds the lock."""
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
            await self._rollback()
            raise
        else:
            for attempt in range(20):
                try:
                    await self.conn.execute("COMMIT")
                    break
                except Exception as exc:
                    if not _is_busy(exc) or attempt == 19:
                        await self._rollback()
                        raise
                    await asyncio.sleep(0.05 * (attempt + 1))

    async def _rollback(self) -> None:
        """ROLLBACK only when a transaction is still open. On some errors ("database or disk is
        full", an I/O error, an interrupt) SQLite has already rolled the transaction back itself;
        a second ROLLBACK then fails with "cannot rollback - no transaction is active", and that
        error would replace the one that says what happened. A failure of the ROLLBACK itself is
        not allowed to hide the original error either: the caller re-raises that one."""
        if self.conn.in_transaction:
            with contextlib.suppress(Exception):
                await self.conn.execute("ROLLBACK")

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[aiosqlite.Connection]:
        """A consistent snapshot for multi-statement reads."""
        async with self.lock:
            await self._begin("BEGIN")
            try:
                yield self.conn
            finally:
                await self.conn.execute("COMMIT")

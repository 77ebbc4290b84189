"""Where the engine keeps its data: `open_store(target)` gives a `Store` for a SQLite file (the
embedded default) or a PostgreSQL database (`postgresql://…`, for teams), behind one interface.

`base.Store` is the interface; `sql.tx.SqlTx` holds every operation as portable SQL; each backend
(`sqlite/`, `postgres/`) adds what only it can do. No module outside this package imports a
database driver (tests/test_layers.py and the import-linter contract in pyproject.toml check it).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from ..errors import IncompleteStoreError, MemdeskError, UserInputError
from .base import NEW_CANDIDATES, TABLES, Store, Verify
from .sql.tombstones import GateView
from .sql.tx import SqlTx
from .urls import is_postgres_url, masked, refuse_foreign_url


def server_went_away(exc: BaseException) -> bool:
    """A lost PostgreSQL connection, however asyncpg reports it: the server shut down or restarted
    (AdminShutdown and friends), the socket closed (ConnectionDoesNotExist, a ConnectionError), or
    a transaction's exit found its connection closed (InterfaceError). Here, beside the driver, so
    the command line can tell an operator what happened without naming a driver."""
    try:
        import asyncpg
    except ImportError:
        return False
    lost: tuple[type[BaseException], ...] = (
        asyncpg.ConnectionDoesNotExistError,
        asyncpg.PostgresConnectionError,
        asyncpg.exceptions.OperatorInterventionError,
        ConnectionError,
    )
    return isinstance(exc, lost) or (isinstance(exc, asyncpg.InterfaceError) and "connection is closed" in str(exc))


def is_permission_error(error: BaseException) -> bool:
    """Whether the database refused the statement for the connecting role's rights (PostgreSQL's
    SQLSTATE 42501, insufficient_privilege): an agent's login running a reviewer's statement."""
    return getattr(error, "sqlstate", None) == "42501"


def database_errors() -> tuple[type[Exception], ...]:
    """The exceptions a database driver raises, for callers that must turn them into a message
    without importing a driver themselves: sqlite3's DatabaseError (and pysqlite3's, a different
    class, when the engine runs on it), and asyncpg's PostgresError and InterfaceError when asyncpg
    is installed."""
    import sqlite3

    errors: list[type[Exception]] = [sqlite3.DatabaseError]
    try:
        from .sqlite.connection import sqlite_module

        driver = sqlite_module()
        if driver.DatabaseError is not sqlite3.DatabaseError:
            errors.append(driver.DatabaseError)
    except MemdeskError:
        pass
    try:
        import asyncpg
    except ImportError:
        pass
    else:
        errors += [asyncpg.PostgresError, asyncpg.InterfaceError]
    return tuple(errors)


async def inspect(target: str | os.PathLike[str]) -> tuple[bool, int]:
    """(exists, schema version) of the store at `target`, WITHOUT creating or migrating anything;
    version 0 means "there, but not a memdesk store". For commands that must refuse a typo rather
    than open (and so create) an empty store, and that can say why a store cannot be reached.

    Raises UserInputError for what the caller can fix (not a SQLite file; a PostgreSQL server that
    cannot be reached, refuses the login, or has no such database; a malformed URL), with the URL's
    password masked, and MemdeskError where the file sits on a read-only file system."""
    refuse_foreign_url(target)
    if is_postgres_url(target):
        return await _inspect_postgres(str(target))
    return _inspect_sqlite(Path(target))


def _inspect_sqlite(path: Path) -> tuple[bool, int]:
    """PRAGMA user_version, read-only, through the engine's own SQLite library: a second copy of
    SQLite in the process (the stdlib's, when the engine runs on pysqlite3) would drop the file
    locks of every open store when it closes the file."""
    from contextlib import closing

    from .sqlite.connection import sqlite_module

    sqlite3 = sqlite_module()

    if not path.exists():
        return False, 0
    if path.is_dir():
        raise UserInputError(f"{path} is a directory, not a database file")
    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as conn:
            return True, int(conn.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.DatabaseError as exc:
        from .sqlite.connection import read_only_reason

        # A WAL database on a read-only file system cannot even be read (SQLite must create its
        # shared-memory index beside it): that is where the file is, not what it is.
        reason = read_only_reason(path)
        if reason is not None:
            raise MemdeskError(reason) from None
        if "not a database" in str(exc):
            raise UserInputError(f"{path} is not a SQLite database") from None
        raise UserInputError(f"{path} cannot be opened as a SQLite database ({exc})") from None


async def _inspect_postgres(url: str) -> tuple[bool, int]:
    """Connect once and read the migration level. Every way a connection fails is something the
    caller gave (a URL, a password, a database name) or must start (the server): one line naming
    the masked URL and the driver's reason. The driver's own message never holds the password."""
    import asyncpg

    from .postgres import schema
    from .postgres.connection import connect

    shown = masked(url)
    try:
        conn = await asyncio.wait_for(connect(url, vector=False), timeout=_CONNECT_SECONDS)
    except asyncpg.InvalidPasswordError:
        raise UserInputError(f"{shown}: the server refused the login (wrong user or password)") from None
    except asyncpg.InvalidCatalogNameError:
        raise UserInputError(f"{shown}: no such database on that server (create it with createdb)") from None
    except (OSError, TimeoutError) as exc:
        why = exc.strerror or type(exc).__name__ if isinstance(exc, OSError) else "timed out"
        raise UserInputError(f"{shown}: cannot reach the PostgreSQL server ({why})") from None
    except (asyncpg.PostgresError, asyncpg.InterfaceError, ValueError, OverflowError) as exc:
        # OverflowError: a port past 65535 reaches the socket layer unchecked
        raise UserInputError(f"{shown}: cannot open ({_without(str(exc), url)})") from None
    try:
        return True, await schema.current_version(conn)
    finally:
        await conn.close()


_CONNECT_SECONDS = 15.0


def _without(text: str, url: str) -> str:
    """A driver message with the URL (and so its password) replaced by its masked form."""
    return text.replace(url, masked(url))


MIGRATE_INCOMPLETE = "migrate_incomplete"
"""The meta key `memdesk migrate` writes into its destination before the first row and deletes
once the row-for-row check has passed; its value names the source."""


async def open_store(
    target: str | os.PathLike[str],
    *,
    dimensions: int,
    embedder: str,
    verify: Verify | None = None,
    allow_incomplete: bool = False,
) -> Store:
    """Open (creating and migrating as needed) the store at `target`: a filesystem path, ":memory:",
    or a postgresql:// URL. `dimensions` and `embedder` describe a NEW store's vectors; `verify`
    runs on an existing store before any migration (Memory's embedder check). A store an
    interrupted `memdesk migrate` left is refused (IncompleteStoreError) unless `allow_incomplete`
    (only migrate itself, to start the copy over)."""
    store: Store
    if is_postgres_url(target):
        from .postgres.store import PostgresStore

        store = await PostgresStore.open(str(target), dimensions=dimensions, embedder=embedder, verify=verify)
    else:
        from .sqlite.store import SqliteStore

        store = await SqliteStore.open(str(target), dimensions=dimensions, embedder=embedder, verify=verify)
    if not allow_incomplete:
        async with store.reading() as tx:
            source = await tx.meta_value(MIGRATE_INCOMPLETE)
        if source is not None:
            await store.close()
            shown = masked(str(target)) if is_postgres_url(target) else str(target)
            raise IncompleteStoreError(
                f"{shown} is an incomplete copy of {source}: a `memdesk migrate` into it was interrupted. "
                f"Run `memdesk migrate SOURCE {shown}` again to start the copy over."
            )
    return store


__all__ = [
    "MIGRATE_INCOMPLETE",
    "NEW_CANDIDATES",
    "TABLES",
    "GateView",
    "SqlTx",
    "Store",
    "database_errors",
    "inspect",
    "is_postgres_url",
    "masked",
    "open_store",
    "refuse_foreign_url",
]

"""`SqliteStore`: one database file, written by one connection and read by two others.

Writes are serialised: one aiosqlite connection, an asyncio lock so coroutines never interleave
inside one another's transaction, and BEGIN IMMEDIATE so the file's write lock is taken up front
(see `connection.py`). Reads never take that lock: in WAL mode a reader connection sees the last
committed state while a writer works, so the workstation's lists and an agent's retrieval do not
wait behind a long pipeline batch. Two readers let retrieval run its two arms at once (each
aiosqlite connection is its own thread, and SQLite releases the GIL while it works). An in-memory
database is one connection (a second one would open a different, empty database).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from ...errors import ConfigurationError, NotFoundError
from ..base import NEW_CANDIDATES, TABLES, Store, Verify
from ..sql.core import fetchall
from ..sql.text_arm import _UserStats
from ..sql.vector_swap import VectorSwap
from .connection import Database
from .schema import MIGRATIONS, SCHEMA_VERSION
from .tx import SqliteTx

READERS = 2


class SqliteStore(Store):
    backend = "sqlite"

    def __init__(self, path: str, writer: Database, readers: list[Database]) -> None:
        self.target = self.path = path
        self._writer = writer
        self._readers = readers
        self._free: asyncio.Queue[Database] = asyncio.Queue()
        for reader in readers:
            self._free.put_nowait(reader)
        self._stats: dict[int, dict[str, _UserStats]] = {}
        self._here: list[Callable[[str], None]] = []  # this process's subscribers (announce_here)

    @classmethod
    async def open(cls, path: str, *, dimensions: int, embedder: str, verify: Verify | None = None) -> SqliteStore:
        """Open `path` (creating and migrating it as needed; `dimensions` and `embedder` name what
        a NEW store's vectors will be). A store of a newer schema is refused before anything is
        written to it, and so is one that `verify` (given a read transaction on an existing store,
        before any migration) refuses."""
        if path != ":memory:":
            parent = Path(path).expanduser().resolve().parent
            if not parent.is_dir():
                raise NotFoundError(f"directory {parent} does not exist")
        writer = await Database.open(path, max_version=SCHEMA_VERSION)
        readers: list[Database] = []
        try:
            await _migrate(writer, path, dimensions, embedder, verify)
            if path != ":memory:":
                for _ in range(READERS):
                    readers.append(await Database.open(path, max_version=SCHEMA_VERSION))
        except BaseException:
            for db in (writer, *readers):
                await db.close()
            raise
        return cls(path, writer, readers)

    def _tx(self, db: Database) -> SqliteTx:
        return SqliteTx(db.conn, self._stats.setdefault(id(db), {}))

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[SqliteTx]:
        async with self._writer.transaction():
            yield self._tx(self._writer)

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[SqliteTx]:
        if not self._readers:
            async with self._writer.reading():
                yield self._tx(self._writer)
            return
        reader = await self._free.get()
        try:
            async with reader.reading():
                yield self._tx(reader)
        finally:
            self._free.put_nowait(reader)

    async def close(self) -> None:
        for db in (*self._readers, self._writer):
            with contextlib.suppress(Exception):
                await db.close()

    async def schema_version(self) -> int:
        return await _user_version(self._writer)

    # -- moving a whole store -----------------------------------------------------------------------

    async def dump(self, table: str, *, batch: int = 1000) -> AsyncIterator[list[dict[str, Any]]]:
        from .dump import dump_rows

        async with self.reading() as tx:
            async for rows in dump_rows(tx.conn, table, batch=batch):
                yield rows

    async def load(self, table: str, rows: list[dict[str, Any]]) -> None:
        from .dump import load_rows

        # references are not checked row by row: see Database.transaction(foreign_keys=False)
        async with self._writer.transaction(foreign_keys=False) as conn:
            await load_rows(conn, table, rows)

    async def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        async with self.reading() as tx:
            for table in TABLES:
                [row] = await fetchall(tx.conn, f"SELECT count(*) FROM {table}")
                out[table] = int(row[0])
        return out

    # -- after an erasure ---------------------------------------------------------------------------

    def vector_swap(self) -> VectorSwap:
        from .reembed import SqliteVectorSwap

        return SqliteVectorSwap()

    async def compact(self) -> bool:
        """VACUUM (outside any transaction: it refuses to run inside one), then a TRUNCATE
        checkpoint of the write-ahead log, which still holds the old pages; True when the log was
        emptied (another process holding the file open can keep it from being truncated)."""
        db = self._writer
        async with db.lock:
            await db.conn.execute("VACUUM")
            if self.path == ":memory:":
                return True
            row = await (await db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")).fetchone()
        # (busy, log frames, checkpointed frames): busy=0 means the log was reset to zero bytes
        return row is not None and int(row[0]) == 0

    # -- new work for open workstations ---------------------------------------------------------------

    def announce_here(self, user_ids: Sequence[str]) -> None:
        """This process's own commits reach its subscribers at once, each user whose candidates
        changed (another process's commits, from the data_version watcher below)."""
        for callback in list(self._here):
            for user_id in user_ids:
                callback(user_id)

    async def subscribe(self, channel: str, callback: Callable[[str], None]) -> Callable[[], Awaitable[None]]:
        """One file on one host has no server to announce anything: a watcher reads PRAGMA
        data_version (which moves when another connection commits) twice a second and calls
        `callback("")` when it moved. Cheap: no query of any table. This process's own commits
        are announced at once, with the user (`announce_here`)."""
        watcher = await Database.open(self.path) if self.path != ":memory:" else None
        if channel == NEW_CANDIDATES:
            self._here.append(callback)

        async def watch() -> None:
            if watcher is None:
                return
            last = None
            while True:
                row = await (await watcher.conn.execute("PRAGMA data_version")).fetchone()
                if last is not None and row[0] != last:  # type: ignore[index]
                    callback("")
                last = row[0]  # type: ignore[index]
                await asyncio.sleep(0.5)

        task = asyncio.get_running_loop().create_task(watch())

        async def stop() -> None:
            if callback in self._here:
                self._here.remove(callback)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            if watcher is not None:
                await watcher.close()

        return stop


async def _user_version(db: Database) -> int:
    row = await (await db.conn.execute("PRAGMA user_version")).fetchone()
    return int(row[0])  # type: ignore[index]


async def _migrate(db: Database, path: str, dimensions: int, embedder: str, verify: Verify | None) -> None:
    """Walk the SQLite migrations (`schema.MIGRATIONS`) from the file's PRAGMA user_version."""
    version = await _user_version(db)
    if version > SCHEMA_VERSION:
        raise ConfigurationError(
            f"{path} has schema version {version}; this memdesk knows up to {SCHEMA_VERSION}: upgrade memdesk"
        )
    if version >= 1 and verify is not None:
        async with db.reading() as conn:
            await verify(SqliteTx(conn))
    if version >= SCHEMA_VERSION:
        return
    async with db.transaction() as conn:
        # re-read inside the write lock: another process may have migrated meanwhile
        version = (await (await conn.execute("PRAGMA user_version")).fetchone())[0]  # type: ignore[index]
        # a migration that rebuilds the vector table keeps the width the database has
        width = dimensions
        if version >= 1:
            row = await (await conn.execute("SELECT value FROM meta WHERE key = 'embedding_dimensions'")).fetchone()
            if row is not None:
                width = int(row[0])
        for target in sorted(v for v in MIGRATIONS if version < v <= SCHEMA_VERSION):
            for statement in MIGRATIONS[target](width):
                await conn.execute(statement)
            await conn.execute(f"PRAGMA user_version = {target}")
        if version == 0:
            await conn.execute("INSERT INTO meta(key, value) VALUES ('embedder', ?)", (embedder,))

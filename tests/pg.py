"""A PostgreSQL server with pgvector for the test session, and a fresh empty database per test.

Where the server comes from:
- `MEMDESK_TEST_PG_URL` names an existing server (a superuser URL, or one whose role may CREATE
  DATABASE and whose template1 has the `vector` extension); nothing is started then.
- otherwise the `pgserver` wheel (a dev dependency; it bundles PostgreSQL 16 and pgvector) runs one
  from a data directory of this checkout under the system temp directory. initdb runs once; later
  sessions start the existing cluster in about a second.

Why a fixed data directory rather than a new one per session: a session killed hard (SIGKILL, a
CI timeout) leaves its server running. With a directory of its own that server would be orphaned
for good once pytest rotates its temp directories away; with one fixed directory the next session
finds it and uses it. `pgserver` counts the processes holding a server in `.handle_pids.json` and
the last one to leave stops it; a killed session never leaves, so its pid is pruned here before
the server is taken, or the server would never be stopped again.

Databases are named `memdesk_t_<host>_<pid>_<n>`: a test's database is dropped (WITH (FORCE),
which also ends connections a failed test left open) when the test ends, and a new session drops
the databases of sessions on this host whose process no longer exists.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import itertools
import json
import os
import re
import shutil
import socket
import tempfile
import threading
import warnings
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import pytest

ENV_URL = "MEMDESK_TEST_PG_URL"
_PREFIX = "memdesk_t_"
_HOST = hashlib.sha1(socket.gethostname().encode()).hexdigest()[:6]
_T = TypeVar("_T")


def _run(factory: Callable[[], Awaitable[_T]]) -> _T:
    """Run a coroutine to completion on a private event loop in a worker thread.

    The fixtures here are synchronous (usable from sync and async tests alike); asyncio.run on the
    main thread would replace, and then clear, the event loop pytest-asyncio has installed."""
    result: list[Any] = []
    error: list[BaseException] = []

    def target() -> None:
        try:
            result.append(asyncio.run(factory()))  # type: ignore[arg-type]
        except BaseException as exc:
            error.append(exc)

    thread = threading.Thread(target=target, name="memdesk-test-pg")
    thread.start()
    thread.join()
    if error:
        raise error[0]
    return result[0]  # type: ignore[no-any-return]


async def _admin(url: str, *statements: str) -> list[Any]:
    """Run statements one by one outside a transaction (CREATE/DROP DATABASE refuse to run in one);
    the rows of the last."""
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        rows: list[Any] = []
        for statement in statements:
            rows = await conn.fetch(statement)
        return rows
    finally:
        await conn.close()


def with_database(url: str, database: str) -> str:
    """`url` pointing at another database (the path of a postgresql:// URL; query kept: pgserver's
    URLs carry the socket directory as `?host=`)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, parts.fragment))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class PgServer:
    """The session's server: `url` is the maintenance database; `database()` gives a test its own."""

    def __init__(self, url: str, stop: Callable[[], None] | None = None) -> None:
        self.url = url
        self._stop = stop
        self._counter = itertools.count(1)
        self._lock = threading.Lock()

    def prepare(self) -> None:
        """pgvector in template1 (so every new database has it: CREATE EXTENSION needs a superuser
        for an untrusted extension, which the application role is not), and the databases of dead
        sessions of this host dropped."""
        pattern = re.compile(rf"^{_PREFIX}{_HOST}_(\d+)_\d+$")

        async def go() -> None:
            await _admin(with_database(self.url, "template1"), "CREATE EXTENSION IF NOT EXISTS vector")
            rows = await _admin(self.url, f"SELECT datname FROM pg_database WHERE datname LIKE '{_PREFIX}%'")
            stale = [r[0] for r in rows if (m := pattern.match(r[0])) and not _pid_alive(int(m.group(1)))]
            if stale:
                await _admin(self.url, *(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)' for name in stale))

        _run(go)

    @contextlib.contextmanager
    def _cluster_lock(self, kind: int) -> Iterator[None]:
        """An advisory file lock shared by every session on this server (pytest-xdist's workers are
        processes of their own): CREATE and DROP DATABASE hold it shared, `quiet()` exclusively."""
        tag = hashlib.sha1(self.url.encode()).hexdigest()[:8]
        path = Path(tempfile.gettempdir()) / f"memdesk-test-pg-{tag}.lock"
        with path.open("a") as handle:
            fcntl.flock(handle, kind)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def quiet(self) -> Iterator[None]:
        """While held, no session makes or drops a database on this server: a test that reads the
        server's data files after VACUUM FULL (erasure, compact) found the dead rows still there
        when another worker's DROP DATABASE ran meanwhile."""
        with self._cluster_lock(fcntl.LOCK_EX):
            yield

    def create_database(self) -> str:
        """A new empty database (pgvector installed, no memdesk schema yet); its URL."""
        with self._lock:
            name = f"{_PREFIX}{_HOST}_{os.getpid()}_{next(self._counter)}"
        with self._cluster_lock(fcntl.LOCK_SH):
            _run(lambda: _admin(self.url, f'CREATE DATABASE "{name}"'))
        return with_database(self.url, name)

    def drop_database(self, url: str) -> None:
        name = urlsplit(url).path.lstrip("/")
        if not name.startswith(_PREFIX):
            raise ValueError(f"refusing to drop {name!r}: not a test database")
        with self._cluster_lock(fcntl.LOCK_SH):
            _run(lambda: _admin(self.url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))

    @contextlib.contextmanager
    def database(self) -> Iterator[str]:
        url = self.create_database()
        try:
            yield url
        finally:
            self.drop_database(url)

    def stop(self) -> None:
        if self._stop is not None:
            self._stop()
            self._stop = None


def _data_dir() -> Path:
    """One data directory per checkout and system user (two checkouts may pin different pgserver
    builds, whose clusters need not be compatible)."""
    root = Path(__file__).resolve().parent.parent
    tag = hashlib.sha1(str(root).encode()).hexdigest()[:8]
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(tempfile.gettempdir()) / f"memdesk-test-pg-{uid}-{tag}"


def _prune_dead_handles(pgdata: Path) -> None:
    """Drop the pids of processes that no longer exist from pgserver's handle list."""
    path = pgdata / ".handle_pids.json"
    try:
        pids = json.loads(path.read_text())
    except (OSError, ValueError):
        return
    alive = [p for p in pids if isinstance(p, int) and _pid_alive(p)]
    if alive != pids:
        path.write_text(json.dumps(alive))


def start_server() -> PgServer:
    """The server for this session: MEMDESK_TEST_PG_URL, or pgserver's."""
    if os.environ.get(ENV_URL):
        server = PgServer(os.environ[ENV_URL])
        server.prepare()
        return server
    with warnings.catch_warnings():  # platformdirs: "XDG_RUNTIME_DIR is not set" (it falls back to /tmp)
        warnings.simplefilter("ignore")
        import pgserver  # type: ignore[import-untyped]

    pgdata = _data_dir()
    pgdata.mkdir(exist_ok=True)
    _prune_dead_handles(pgdata)
    try:
        handle = pgserver.get_server(pgdata, cleanup_mode="stop")
    except Exception:
        # A cluster this pgserver cannot start (made by another PostgreSQL version, a half-done
        # initdb): it holds nothing but test databases, so it is made again.
        shutil.rmtree(pgdata, ignore_errors=True)
        pgdata.mkdir()
        handle = pgserver.get_server(pgdata, cleanup_mode="stop")
    server = PgServer(handle.get_uri(), stop=handle.cleanup)
    try:
        server.prepare()
    except BaseException:
        server.stop()
        raise
    return server


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """The session's PostgreSQL (started on first use; stopped at session end unless another
    session still holds it)."""
    server = start_server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server: PgServer) -> Iterator[str]:
    """The URL of a fresh empty database on the session's server, dropped after the test."""
    with pg_server.database() as url:
        yield url


@pytest.fixture
def pg_quiet(pg_server: PgServer, pg_url: str) -> Iterator[None]:
    """For the test's duration (after its own database was made: `pg_url`), no database is made or
    dropped on the server by any worker (`PgServer.quiet`)."""
    with pg_server.quiet():
        yield

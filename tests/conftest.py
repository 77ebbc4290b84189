"""Fixtures shared by the tests: the backend every engine test runs on, a store and a `mem` on it
with its fake `clock`; and for the workstation tests the seeded database of tests/tui_seed.py,
built once per session (seeding is the slow part), of which every test gets its own copy, so a
test that decides or corrects something never changes what the next one sees. Helpers are imported
one way: `from tests.engine_helpers import ...`, `from tests.pilot_helpers import ...`."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from engine import Memory
from tests.engine_helpers import Clock, open_memory
from tests.pg import pg_quiet, pg_server, pg_url  # noqa: F401  (fixtures: the session's PostgreSQL, a database per test)
from tests.tui_seed import seed_sync

BACKENDS = ("sqlite", "postgres")

# The inner loop's fast subset is `uv run pytest -m "not slow"` (README "The tests"): these are the
# files that start processes (the CLI, workers, a browser, lint-imports) or drive the workstation
# (Pilot sessions, snapshots), marked `slow` here in one place rather than test by test.
SLOW_FILES = (
    "test_cli.py",
    "test_cli_urls.py",
    "test_concurrency.py",
    "test_dependencies.py",
    "test_gate_concurrency.py",
    "test_hostile_cli.py",
    "test_layers.py",
    "test_mcp.py",
    "test_mcp_agent.py",
    "test_pending_list.py",
    "test_process_faults.py",
    "test_serve.py",
    "test_team_tui.py",
    "test_typed_decisions.py",
    "test_whole_queue.py",
    "test_wordllama_embedder.py",
)
SLOW_PREFIXES = ("test_tui_", "test_snapshots_")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        name = item.path.name
        if name in SLOW_FILES or name.startswith(SLOW_PREFIXES):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The storage backend an engine test runs on: every engine test runs on each (ids `[sqlite]`,
    `[postgres]`), as one behaviour contract must hold whatever holds the rows."""
    return str(request.param)


@pytest.fixture
def new_target(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[[str], str]]:
    """`new_target(name)`: a fresh, empty store target on this test's backend (a file under
    tmp_path, or a new PostgreSQL database dropped when the test ends), for tests needing several."""
    with ExitStack() as stack:

        def make(name: str) -> str:
            if backend == "sqlite":
                return str(tmp_path / f"{name}.db")
            server = request.getfixturevalue("pg_server")
            return stack.enter_context(server.database())

        yield make


@pytest.fixture
def store_target(new_target: Callable[[str], str]) -> str:
    """What `Memory(...)` opens for this test: a tmp_path file for SQLite, a fresh database's URL
    for PostgreSQL."""
    return new_target("memdesk")


@pytest.fixture
def clock() -> Clock:
    """The fake clock an engine test's `mem` reads; a module whose story starts on another day
    overrides this fixture (test_one_gate.py)."""
    return Clock()


@pytest.fixture
async def mem(store_target: str, clock: Clock) -> AsyncIterator[Memory]:
    """A Memory on this test's backend, open for the test, on `clock`."""
    async with open_memory(store_target, clock) as m:
        yield m


@pytest.fixture(autouse=True)
def _no_cursor_blink(monkeypatch: pytest.MonkeyPatch) -> None:
    """The workstation's setting for tests: no blinking cursor, so snapshots are stable."""
    monkeypatch.setenv("MEMDESK_CURSOR_BLINK", "0")


@pytest.fixture(scope="session")
def tui_template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    path = tmp_path_factory.mktemp("tui-seed") / "seed.db"
    return path, seed_sync(str(path))


@pytest.fixture(scope="session")
def tui_template_drawn(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    path = tmp_path_factory.mktemp("tui-seed-drawn") / "seed.db"
    return path, seed_sync(str(path), drawn=True)


@pytest.fixture
def tui_db_drawn(tui_template_drawn: tuple[Path, dict[str, int]], tmp_path: Path) -> tuple[str, dict[str, int]]:
    """The seeded database with every approval drawn for second review (tests/tui_seed.py)."""
    source, ids = tui_template_drawn
    target = tmp_path / "tui.db"
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{source}{suffix}").exists():
            shutil.copyfile(f"{source}{suffix}", f"{target}{suffix}")
    return str(target), dict(ids)


@pytest.fixture
def tui_db(tui_template: tuple[Path, dict[str, int]], tmp_path: Path) -> tuple[str, dict[str, int]]:
    """(path of a private copy of the seeded database, ids by name)."""
    source, ids = tui_template
    target = tmp_path / "tui.db"
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{source}{suffix}").exists():
            shutil.copyfile(f"{source}{suffix}", f"{target}{suffix}")
    return str(target), dict(ids)

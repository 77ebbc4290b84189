"""Choosing the SQLite driver, and what every connection is set up with.

`sqlite_module()` is exercised with stand-in modules for both candidates, so each branch runs on
any machine: the stdlib when it can load extensions, pysqlite3 when only it can, and one
ConfigurationError naming the fix when neither can.
"""

from __future__ import annotations

import sqlite3
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from engine import ConfigurationError, Memory
from engine.storage.sqlite import connection as engine_db
from engine.storage.sqlite.schema import SCHEMA_VERSION
from tests.engine_helpers import Clock, open_memory


class _Conn:
    def __init__(self, loadable: bool) -> None:
        if loadable:
            self.enable_load_extension = lambda flag: None

    def close(self) -> None:
        pass


def fake_driver(name: str, loadable: bool) -> types.ModuleType:
    module = types.ModuleType(name)
    module.connect = lambda *args, **kwargs: _Conn(loadable)  # type: ignore[attr-defined]
    return module


def install_pysqlite3(monkeypatch: pytest.MonkeyPatch, dbapi2: types.ModuleType | None) -> None:
    """Make `from pysqlite3 import dbapi2` yield `dbapi2`, or fail with ImportError when None."""
    if dbapi2 is None:
        monkeypatch.setitem(sys.modules, "pysqlite3", None)  # None in sys.modules -> ImportError
        monkeypatch.setitem(sys.modules, "pysqlite3.dbapi2", None)
        return
    package = types.ModuleType("pysqlite3")
    package.dbapi2 = dbapi2  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pysqlite3", package)
    monkeypatch.setitem(sys.modules, "pysqlite3.dbapi2", dbapi2)


def test_stdlib_is_used_when_it_can_load_extensions(monkeypatch: pytest.MonkeyPatch) -> None:
    stdlib = fake_driver("sqlite3", loadable=True)
    monkeypatch.setattr(engine_db, "sqlite3", stdlib)
    install_pysqlite3(monkeypatch, fake_driver("pysqlite3.dbapi2", loadable=True))
    assert engine_db.sqlite_module() is stdlib


def test_pysqlite3_is_used_when_the_stdlib_cannot_load_extensions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_db, "sqlite3", fake_driver("sqlite3", loadable=False))
    fallback = fake_driver("pysqlite3.dbapi2", loadable=True)
    install_pysqlite3(monkeypatch, fallback)
    assert engine_db.sqlite_module() is fallback


def test_a_stdlib_that_cannot_even_connect_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    broken = types.ModuleType("sqlite3")

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise sqlite3.OperationalError("unable to open")

    broken.connect = refuse  # type: ignore[attr-defined]
    monkeypatch.setattr(engine_db, "sqlite3", broken)
    fallback = fake_driver("pysqlite3.dbapi2", loadable=True)
    install_pysqlite3(monkeypatch, fallback)
    assert engine_db.sqlite_module() is fallback


def test_neither_driver_gives_one_error_naming_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_db, "sqlite3", fake_driver("sqlite3", loadable=False))
    install_pysqlite3(monkeypatch, None)
    with pytest.raises(ConfigurationError, match="pip install pysqlite3-binary") as err:
        engine_db.sqlite_module()
    assert "not installed" in str(err.value)


def test_an_installed_pysqlite3_without_extensions_is_named_as_such(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_db, "sqlite3", fake_driver("sqlite3", loadable=False))
    install_pysqlite3(monkeypatch, fake_driver("pysqlite3.dbapi2", loadable=False))
    with pytest.raises(ConfigurationError, match="pysqlite3-binary") as err:
        engine_db.sqlite_module()
    assert "cannot load them either" in str(err.value)


async def test_opening_memory_without_a_driver_raises_the_configuration_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine_db, "sqlite3", fake_driver("sqlite3", loadable=False))
    install_pysqlite3(monkeypatch, None)
    with pytest.raises(ConfigurationError, match="pysqlite3-binary"):
        await Memory(tmp_path / "x.db").open()


def test_the_real_choice_on_this_machine_loads_sqlite_vec() -> None:
    module = engine_db.sqlite_module()
    conn = engine_db._connect_sync(":memory:")
    try:
        assert conn.execute("SELECT vec_version()").fetchone()[0].startswith("v")
        assert module.__name__ in ("sqlite3", "pysqlite3.dbapi2")
    finally:
        conn.close()


async def test_connections_use_wal_a_busy_timeout_and_foreign_keys(tmp_path: Path) -> None:
    async with open_memory(tmp_path / "pragmas.db", Clock()) as mem:
        conn = mem.store._writer.conn

        async def pragma(name: str) -> Any:
            return (await (await conn.execute(f"PRAGMA {name}")).fetchone())[0]  # type: ignore[index]

        assert await pragma("journal_mode") == "wal"
        assert await pragma("busy_timeout") == engine_db.BUSY_TIMEOUT_MS
        assert await pragma("foreign_keys") == 1
        assert await pragma("user_version") == SCHEMA_VERSION


async def test_a_database_from_a_newer_memdesk_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "future.db"
    async with open_memory(db, Clock()) as mem:
        await mem.store._writer.conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(ConfigurationError, match="upgrade memdesk"):
        await Memory(db).open()

"""Where the engine keeps its data: `open_store(target)` gives a `Store` for a SQLite file (the
embedded default) or a PostgreSQL database (`postgresql://…`, for teams), behind one interface.

`base.Store` is the interface; `sql.tx.SqlTx` holds every operation as portable SQL; each backend
(`sqlite/`, `postgres/`) adds what only it can do. No module outside this package imports a
database driver (tests/test_layers.py and the import-linter contract in pyproject.toml check it).
"""

from __future__ import annotations

import os
import re

from .base import NEW_CANDIDATES, TABLES, Store, Verify
from .sql.tx import GateView, SqlTx

_URL = re.compile(r"^postgres(?:ql)?://", re.IGNORECASE)


def is_postgres_url(target: str | os.PathLike[str]) -> bool:
    return isinstance(target, str) and bool(_URL.match(target))


def masked(target: str) -> str:
    """The target for messages: a URL's password replaced by ***."""
    return re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", target) if is_postgres_url(target) else target


async def open_store(
    target: str | os.PathLike[str], *, dimensions: int, embedder: str, verify: Verify | None = None
) -> Store:
    """Open (creating and migrating as needed) the store at `target`: a filesystem path, ":memory:",
    or a postgresql:// URL. `dimensions` and `embedder` describe a NEW store's vectors; `verify`
    runs on an existing store before any migration (Memory's embedder check)."""
    if is_postgres_url(target):
        from .postgres.store import PostgresStore

        return await PostgresStore.open(str(target), dimensions=dimensions, embedder=embedder, verify=verify)
    from .sqlite.store import SqliteStore

    return await SqliteStore.open(str(target), dimensions=dimensions, embedder=embedder, verify=verify)


__all__ = ["NEW_CANDIDATES", "TABLES", "GateView", "SqlTx", "Store", "is_postgres_url", "masked", "open_store"]

"""The storage rooms a newcomer can list (STORAGE.md "What a backend must write"): what a backend
writes is an `@abstractmethod`, so a backend missing one fails when it is built, not when the
method is first called; both backends write all of them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from engine.storage.base import Store
from engine.storage.postgres.store import PostgresStore
from engine.storage.postgres.tx import PostgresTx
from engine.storage.sql.core import IdSource
from engine.storage.sql.tx import SqlTx
from engine.storage.sql.vector_swap import VectorSwap
from engine.storage.sqlite.store import SqliteStore
from engine.storage.sqlite.tx import SqliteTx

ROOT = Path(__file__).resolve().parents[1]
BASES: dict[str, type[Any]] = {"Store": Store, "SqlTx": SqlTx, "IdSource": IdSource, "VectorSwap": VectorSwap}


def documented() -> dict[str, set[str]]:
    """STORAGE.md's table: class -> the methods it says a backend writes."""
    text = (ROOT / "STORAGE.md").read_text()
    section = text.split("## What a backend must write", 1)[1].split("\n## ", 1)[0]
    out = {}
    for line in section.splitlines():
        if m := re.match(r"\| `(\w+)` \([^)]*\) \| (.*) \|$", line):
            out[m.group(1)] = set(re.findall(r"`(\w+)`", m.group(2))) - {"transaction", "TxCore"}
            out[m.group(1)] -= {"KnowledgeOps", "TextArmOps"}
    return out


def test_storage_md_lists_exactly_what_a_backend_writes() -> None:
    listed = documented()
    assert set(listed) == set(BASES)
    for name, base in BASES.items():
        assert listed[name] == set(base.__abstractmethods__), name


@pytest.mark.parametrize("backend", [SqliteTx, PostgresTx, SqliteStore, PostgresStore], ids=lambda c: c.__name__)
def test_both_backends_write_every_method(backend: type[Any]) -> None:
    assert backend.__abstractmethods__ == frozenset()


def _with(base: type[Any], methods: set[str]) -> type[Any]:
    def stub(*_args: Any, **_kwargs: Any) -> None:
        return None

    return type(f"Partial{base.__name__}", (base,), dict.fromkeys(methods, stub))


@pytest.mark.parametrize(
    ("base", "missing"),
    [(base, m) for base in BASES.values() for m in sorted(base.__abstractmethods__)],
    ids=lambda v: v if isinstance(v, str) else v.__name__,
)
def test_a_backend_missing_one_method_fails_when_it_is_built(base: type[Any], missing: str) -> None:
    required = set(base.__abstractmethods__)
    args: tuple[Any, ...] = (None,) if base is SqlTx else ()
    with pytest.raises(TypeError, match=missing):
        _with(base, required - {missing})(*args)
    _with(base, required)(*args)  # the positive control: with every method written, it is built

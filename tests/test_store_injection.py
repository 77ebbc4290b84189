"""`Memory(..., store=)`: an opened Store injected like httpx's `transport=`. The Memory uses that
store (not `path`), still checks the embedder on it, and closes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import EmbedderMismatchError, HashingEmbedder, Memory
from engine.embedders import embedder_name
from engine.storage.sqlite.store import SqliteStore


async def _store(path: Path, embedder: HashingEmbedder) -> SqliteStore:
    return await SqliteStore.open(str(path), dimensions=embedder.dimensions, embedder=embedder_name(embedder))


async def test_memory_uses_the_injected_store(tmp_path: Path) -> None:
    embedder = HashingEmbedder()
    store = await _store(tmp_path / "given.db", embedder)
    elsewhere = tmp_path / "not-opened.db"
    async with Memory(elsewhere, embedder=embedder, store=store) as mem:
        assert mem.store is store
        await mem.add_knowledge("ana", "User lives in Lisbon.", actor="curator")
    assert not elsewhere.exists()  # path was not opened: the injected store was used
    async with Memory(tmp_path / "given.db", embedder=embedder) as again:  # and the fact is in its file
        assert [k.statement for k in await again.knowledge("ana")] == ["User lives in Lisbon."]


async def test_the_embedder_check_runs_on_an_injected_store(tmp_path: Path) -> None:
    store = await _store(tmp_path / "given.db", HashingEmbedder())
    mem = Memory(tmp_path / "given.db", embedder=HashingEmbedder(dimensions=64), store=store)
    with pytest.raises(EmbedderMismatchError):
        await mem.open()
    assert mem.ctx._store is None  # closed on the refusal

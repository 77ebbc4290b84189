"""engine.collector: a bulk import raises the collector's first threshold and always puts back
what the process had, nested and concurrent imports included."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from engine import HashingEmbedder, Memory
from engine.collector import BULK_THRESHOLD, fewer_collections


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*saved)


def test_raised_inside_and_restored_after_even_on_an_error(thresholds: tuple[int, int, int]) -> None:
    with fewer_collections():
        assert gc.get_threshold() == (BULK_THRESHOLD, 10, 10)
        with fewer_collections():  # nested: still raised, and the inner end restores nothing
            pass
        assert gc.get_threshold()[0] == BULK_THRESHOLD
    assert gc.get_threshold() == thresholds
    with pytest.raises(RuntimeError), fewer_collections():
        raise RuntimeError("boom")
    assert gc.get_threshold() == thresholds


def test_a_process_that_turned_collection_off_or_set_a_higher_threshold_keeps_it(
    thresholds: tuple[int, int, int],
) -> None:
    gc.set_threshold(0, 10, 10)
    with fewer_collections():
        assert gc.get_threshold() == (0, 10, 10)
    gc.set_threshold(BULK_THRESHOLD * 2, 5, 5)
    with fewer_collections():
        assert gc.get_threshold() == (BULK_THRESHOLD * 2, 5, 5)
    assert gc.get_threshold() == (BULK_THRESHOLD * 2, 5, 5)


async def test_two_concurrent_imports_leave_the_thresholds_as_they_were(
    tmp_path: object, thresholds: tuple[int, int, int]
) -> None:
    seen: list[int] = []

    class Watching(HashingEmbedder):
        async def embed_array(self, texts: list[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
            seen.append(gc.get_threshold()[0])
            await asyncio.sleep(0)  # let the other import start or end meanwhile
            return await super().embed_array(texts)

    async with Memory(":memory:", embedder=Watching(dimensions=64)) as mem:
        await asyncio.gather(
            mem.add_knowledge_many("a", [f"User collects stamp {i}" for i in range(30)], "import", batch_size=10),
            mem.add_knowledge_many("b", ["User plays chess"], "import"),
        )
        assert seen and all(first == BULK_THRESHOLD for first in seen)
    assert gc.get_threshold() == thresholds

"""Fewer garbage collections while a bulk import runs, and the collector as it was afterwards.

An import of 120,000 facts allocates tens of millions of short-lived tuples, lists and dicts, and
CPython's cyclic collector starts a young-generation pass every 700 allocations: 3,380 passes and
0.9 s of a 15 s build (benchmarks/import_scale.py), each walking objects that the engine's caches
and the import's own indexes keep alive anyway. Inside `fewer_collections()` the first threshold
is at least `BULK_THRESHOLD`; the collector stays on (cycles are still found, later), and the
thresholds the process had come back when the outermost block ends, however it ends. Nested and
concurrent blocks (two imports on one event loop) count: only the outermost one sets and restores.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

BULK_THRESHOLD: Final = 50_000
"""Allocations between young-generation collections inside a block (CPython's default is 700):
16 collections instead of 3,380 in the benchmark's build."""

_depth = 0
_saved: tuple[int, int, int] | None = None


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Run the block with the collector's first threshold raised (module docstring)."""
    global _depth, _saved
    if _depth == 0:
        _saved = gc.get_threshold()
        first, second, third = _saved
        if 0 < first < BULK_THRESHOLD:  # 0: the process turned automatic collection off; keep that
            gc.set_threshold(BULK_THRESHOLD, second, third)
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0 and _saved is not None:
            gc.set_threshold(*_saved)
            _saved = None

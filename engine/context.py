"""`EngineContext`: what every engine service works with, and nothing else.

The services (review, team, the extraction pipeline, stats, export, erasure) take this, not
`Memory`: the store, the embedder, the configuration and the clock. `Memory` builds one and is a
façade over the services; no service reaches back into it, so there is no import circle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from .config import MemoryConfig
from .embedders import Embedder
from .storage import Store
from .timeutil import Clock

if TYPE_CHECKING:
    from .claims.judge import ValueJudge


@dataclass(slots=True)
class EngineContext:
    embedder: Embedder
    config: MemoryConfig
    clock: Clock
    target: str
    """Where the store is (a path or a URL with its password masked), for messages."""
    _store: Store | None = field(default=None, repr=False)
    judge: ValueJudge | None = None
    """With an LLM configured: same / replaces / both for a free-text statement's neighbours
    (engine.gate.neighbours); None: people answer those questions (marks)."""

    @property
    def store(self) -> Store:
        if self._store is None:
            raise RuntimeError("Memory is not open: use `async with Memory(...)` or `await mem.open()`")
        return self._store

    def now(self) -> datetime:
        return self.clock()

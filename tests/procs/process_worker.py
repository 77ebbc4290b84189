"""A `process` worker in its own OS process, driven by tests/test_process_leases.py.

``hang DB LEASE_SECONDS``: open the store with a short episode lease and run `process()` with an
extractor that prints ``extracting <episode id>`` (flushed) and then never returns, so the parent
can SIGKILL the worker while it holds its episodes' leases. Nothing is shared with the parent but
the database file: what is exercised is the lease in the database, not an in-process lock.
"""

from __future__ import annotations

import asyncio
import sys

from engine import Episode, Extraction, Knowledge, Memory, MemoryConfig


class Hang:
    name = "hang"
    model: str | None = None
    prompt_version: str | None = None

    async def extract(self, episode: Episode, existing: list[Knowledge]) -> Extraction:
        print(f"extracting {episode.id}", flush=True)
        await asyncio.Event().wait()  # a model that never answers
        raise AssertionError("unreachable")


async def hang(db: str, lease: float) -> None:
    async with Memory(db, extractor=Hang(), config=MemoryConfig(episode_lease_seconds=lease)) as mem:
        await mem.process()


if __name__ == "__main__":
    if sys.argv[1] != "hang":
        raise SystemExit(f"unknown mode {sys.argv[1]!r}")
    asyncio.run(hang(sys.argv[2], float(sys.argv[3])))

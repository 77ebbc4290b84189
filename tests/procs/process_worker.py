"""Ingest and `process` workers in their own OS processes, driven by tests/test_process_faults.py and
tests/test_concurrency.py. TARGET is a database path or a postgresql:// URL: each process opens its
own Memory (its own connections or pool), as a worker on another host would.

Nothing is shared with the parent but the database and stdin/stdout, so what is exercised is the
store's own guarantees (leases, row locks, the writer lock), not an in-process lock.

``hang TARGET LEASE_SECONDS``: open the store with a short episode lease and run `process()` with an
extractor that prints ``extracting <episode id>`` (flushed) and then never returns, so the parent
can SIGKILL the worker while it holds its episodes' leases.

``ingest TARGET NAME COUNT``: print ``ready``, wait for ``go``, then store COUNT exchanges, one per
call, for five users (each exchange a day after the previous one of that user, so each is an episode
of its own once processed); the last line is JSON: name and the ids of the user messages stored.

``process TARGET NAME``: print ``ready``, wait for ``go``, then call `process()` again and again
(while ingest workers are still writing) until ``stop`` arrives on stdin, then twice more, with an
extractor that records every episode and message it was given and queues one claim per user
message; the last line is JSON: name, rounds, episodes, message ids seen, errors (any exception
`process` raised, as text: the test asserts there are none).
"""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime, timedelta

from engine import Episode, Extraction, GapItem, Knowledge, Memory, MemoryConfig

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


class Hang:
    name = "hang"
    model: str | None = None
    prompt_version: str | None = None

    async def extract(self, episode: Episode, existing: list[Knowledge]) -> Extraction:
        print(f"extracting {episode.id}", flush=True)
        await asyncio.Event().wait()  # a model that never answers
        raise AssertionError("unreachable")


class Recorder:
    """Queues every user message as a claim of its own, and remembers what it was given."""

    name = "recorder"
    model: str | None = None
    prompt_version: str | None = None

    def __init__(self) -> None:
        self.episodes: list[int] = []
        self.messages: list[int] = []

    async def extract(self, episode: Episode, existing: list[Knowledge]) -> Extraction:
        self.episodes.append(episode.id)
        self.messages.extend(m.id for m in episode.messages if m.id is not None and m.role == "user")
        await asyncio.sleep(0.005)  # a model call: other workers get to run meanwhile
        items = [GapItem(m.content, evidence=m.content) for m in episode.messages if m.role == "user"]
        return Extraction("", items)


def wait_for_go() -> None:
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        raise SystemExit("expected 'go' on stdin")


async def hang(target: str, lease: float) -> None:
    async with Memory(target, extractor=Hang(), config=MemoryConfig(episode_lease_seconds=lease)) as mem:
        await mem.process()


async def ingest(target: str, name: str, count: int) -> None:
    stored: list[int] = []
    async with Memory(target) as mem:
        wait_for_go()
        for i in range(count):
            user = f"user{i % 5}"
            at = START + timedelta(days=i // 5, minutes=int(name[-1]) if name[-1].isdigit() else 0)
            ids = await mem.add_exchange(user, f"I keep a stamp numbered {name}-{i}.", "ok", at=at)
            stored.append(ids[0])
    print(json.dumps({"name": name, "messages": stored}), flush=True)


async def process(target: str, name: str) -> None:
    recorder = Recorder()
    errors: list[str] = []
    rounds = 0
    async with Memory(target, extractor=recorder) as mem:
        wait_for_go()
        stop = asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        last = 2  # rounds after `stop`: the ingesters are done, the workers still race each other
        while last > 0:
            if stop.done():
                last -= 1
            rounds += 1
            try:
                await mem.process()
            except Exception as exc:  # reported, never swallowed
                errors.append(f"{type(exc).__module__}.{type(exc).__name__}: {exc}")
            await asyncio.sleep(0.01)
    print(
        json.dumps(
            {
                "name": name,
                "rounds": rounds,
                "episodes": recorder.episodes,
                "messages": recorder.messages,
                "errors": errors,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "hang":
        asyncio.run(hang(sys.argv[2], float(sys.argv[3])))
    elif mode == "ingest":
        asyncio.run(ingest(sys.argv[2], sys.argv[3], int(sys.argv[4])))
    elif mode == "process":
        asyncio.run(process(sys.argv[2], sys.argv[3]))
    else:
        raise SystemExit(f"unknown mode {mode!r}")

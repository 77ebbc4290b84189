"""Offline `process()` throughput: exchanges per second over 10,000 exchanges, and peak memory.

    uv run python benchmarks/ingest.py [--exchanges 10000] [--users 200]

The conversations are generated from templates (first-person facts, repeats, updates, questions,
small talk, assistant-stated facts) so that every gate of the pipeline does real work. Capture
(add_exchanges) and processing are timed separately; the figure the target applies to is
processing (target: >= 1,000 exchanges/s on a 2-core machine). Processing is also reported per
CPU second of this process (both threads: the event loop and SQLite's), which stays meaningful on
a machine shared with other work, where the wall-clock rate mostly measures the neighbours.
`--concurrency N` processes N users at once (the offline extractor does not wait on anything, so
this mostly shows the cost of interleaving). Prints JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import resource
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from engine import Memory

CITIES = ["Lisbon", "Porto", "Berlin", "Madrid", "Oslo", "Turin", "Ghent", "Leeds", "Kyoto", "Quito"]
JOBS = ["a nurse", "a teacher", "a plumber", "an architect", "a data analyst", "a baker"]
PETS = ["a dog named Rex", "a cat named Miso", "a parrot named Kiwi", "a rabbit named Bun"]
FOODS = ["pizza", "ramen", "paella", "tacos", "curry"]
TEMPLATES = [
    lambda r: f"I live in {r.choice(CITIES)}.",
    lambda r: f"I moved to {r.choice(CITIES)} last year.",
    lambda r: f"I work as {r.choice(JOBS)}.",
    lambda r: f"I have {r.choice(PETS)}.",
    lambda r: f"My favourite food is {r.choice(FOODS)}.",
    lambda r: "I'm allergic to peanuts.",
    lambda r: "I might learn Japanese someday.",
    lambda r: "What's the weather like in Oslo?",
    lambda r: "Thanks, that was helpful!",
    lambda r: f"My sister's name is {r.choice(['Maria', 'Ines', 'Sofia', 'Lena'])}.",
]
REPLIES = ["Noted!", "As you know, Paris is the capital of France.", "Sounds great.", "You probably live in Madrid?"]


def exchanges(n: int, users: int, seed: int = 7) -> list[tuple[str, str, str, datetime]]:
    rng = random.Random(seed)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    clock = {f"user{u:04d}": start for u in range(users)}
    out = []
    for _ in range(n):
        user = f"user{rng.randrange(users):04d}"
        gap = timedelta(minutes=rng.choice([1, 2, 3, 5, 45, 240]))
        clock[user] += gap
        out.append((user, rng.choice(TEMPLATES)(rng), rng.choice(REPLIES), clock[user]))
    return out


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--exchanges", type=int, default=10_000)
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=1)
    args = parser.parse_args()
    data = exchanges(args.exchanges, args.users)
    with tempfile.TemporaryDirectory() as tmp:
        async with Memory(Path(tmp) / "ingest.db") as mem:
            t0 = time.perf_counter()
            await mem.pipeline.add_exchanges(data)
            capture_s = time.perf_counter() - t0
            t1, c1 = time.perf_counter(), time.process_time()
            report = await mem.process(concurrency=args.concurrency)
            process_s, process_cpu = time.perf_counter() - t1, time.process_time() - c1
    print(
        json.dumps(
            {
                "benchmark": "ingest",
                "date": datetime.now(UTC).date().isoformat(),
                "machine": f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}",
                "exchanges": args.exchanges,
                "users": args.users,
                "capture_exchanges_per_s": round(args.exchanges / capture_s, 1),
                "process_exchanges_per_s": round(args.exchanges / process_s, 1),
                "process_seconds": round(process_s, 2),
                "process_cpu_seconds": round(process_cpu, 2),
                "process_exchanges_per_cpu_s": round(args.exchanges / process_cpu, 1),
                "concurrency": args.concurrency,
                "load_average_1m": round(os.getloadavg()[0], 2),
                "episodes": report.episodes,
                "claims": report.claims,
                "queued": report.queued,
                "discards": {
                    "predicted": report.predicted,
                    "below_confidence": report.below_confidence,
                    "invalid": report.invalid,
                    "tombstoned": report.tombstoned,
                    "duplicates": report.duplicates,
                },
                "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                "target_process_exchanges_per_s": 1000,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    asyncio.run(main())

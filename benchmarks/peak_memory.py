"""Peak memory on the peer-style workload: what a memv user's program does, end to end, with the
default (WordLlama) embedder, on one SQLite file.

    uv run python benchmarks/peak_memory.py [--exchanges 10000] [--users 200] [--tracemalloc]
        [--budget-mb 250] [--out FILE]

The workload is benchmarks/ingest.py's (10,000 generated exchanges of 200 users, every gate of the
pipeline at work), carried through to the end as memv's quick start does: capture
(`add_exchanges`), extraction (`process()`, the offline extractor), every candidate decided (bulk
approval a page of 200 at a time, as a reviewer with `A` would; what bulk approval skips is
rejected, so the queue ends empty and every approved fact has been embedded), then one `retrieve`
per user and question shape. memv does the same with its LLM extractor and no review step.

Peak memory is the process's peak resident set (`getrusage` ru_maxrss: what the operating system
had to give it, native allocations, the embedder's table and SQLite's page cache and memory map
included), printed after each phase, so a phase that raises it shows. `--tracemalloc` also
reports the peak of Python's own allocations (slower: every allocation is traced). Prints JSON;
exits 1 when the peak passes `--budget-mb` (the issue's target: 250 MB).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ingest import exchanges

from engine import Memory

QUESTIONS = ["where does the user live?", "what is the user's job?", "does the user have a pet?"]


def peak_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


async def workload(path: Path, n: int, users: int, phases: dict[str, dict[str, float]]) -> dict[str, int]:
    def mark(name: str, started: float) -> None:
        phases[name] = {"peak_rss_mb": peak_mb(), "seconds": round(time.perf_counter() - started, 2)}
        if tracemalloc.is_tracing():
            phases[name]["python_peak_mb"] = round(tracemalloc.get_traced_memory()[1] / 2**20, 1)

    counts = {"approved": 0, "rejected": 0, "retrieved": 0}
    t = time.perf_counter()
    async with Memory(path) as mem:
        mark("open", t)
        t = time.perf_counter()
        await mem.pipeline.add_exchanges(exchanges(n, users))
        mark("capture", t)
        t = time.perf_counter()
        await mem.process()
        mark("process", t)
        t = time.perf_counter()
        while batch := await mem.review.pending(limit=200):
            result = await mem.review.bulk_approve([c.id for c in batch], "ana")
            counts["approved"] += len(result.approved)
            for cid, _why in result.skipped:
                await mem.review.reject(cid, "ana", reason="peak-memory benchmark")
                counts["rejected"] += 1
        await mem.policies.settled()
        mark("decide", t)
        t = time.perf_counter()
        for u in range(users):
            for question in QUESTIONS:
                await mem.retrieve(f"user{u:04d}", question)
                counts["retrieved"] += 1
        mark("retrieve", t)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--exchanges", type=int, default=10_000)
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--tracemalloc", action="store_true")
    parser.add_argument("--budget-mb", type=float, default=250.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.tracemalloc:
        tracemalloc.start()
    phases: dict[str, dict[str, float]] = {"start": {"peak_rss_mb": peak_mb()}}
    with tempfile.TemporaryDirectory() as tmp:
        counts = asyncio.run(workload(Path(tmp) / "peer.db", args.exchanges, args.users, phases))
    peak = peak_mb()
    report = {
        "benchmark": "peak_memory",
        "date": datetime.now(UTC).date().isoformat(),
        "machine": f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}",
        "embedder": os.environ.get("MEMDESK_EMBEDDER") or "wordllama (default)",
        "exchanges": args.exchanges,
        "users": args.users,
        **counts,
        "phases": phases,
        "peak_rss_mb": peak,
        "budget_mb": args.budget_mb,
        "within_budget": peak <= args.budget_mb,
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    sys.exit(0 if peak <= args.budget_mb else 1)


if __name__ == "__main__":
    main()

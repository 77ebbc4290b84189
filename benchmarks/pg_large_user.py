"""Large-user retrieve latency on PostgreSQL (issue 11's floor: p95 <= 50 ms), reduced workload.

    MEMDESK_EMBEDDER=hashing uv run python benchmarks/pg_large_user.py [--facts 10000 --users 100]

Builds (once; the database `memdesk_bench_large` is kept between runs on the test server of
tests/pg.py, or MEMDESK_TEST_PG_URL) one large user with `--large-facts` facts among `--facts`
facts of `--users` ordinary users, then times `retrieve` for the large user with benchmarks/
retrieval.py's questions, then for random ordinary users, twice, and prints p50/p95 in ms.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.retrieval import LARGE_USER, QUERIES, StepClock, build
from engine import Memory
from tests.pg import _admin, start_server, with_database

NAME = "memdesk_bench_large"


async def main(args: argparse.Namespace) -> None:
    server = start_server()
    rows = await _admin(server.url, f"SELECT 1 FROM pg_database WHERE datname = '{NAME}'")
    if args.rebuild and rows:
        await _admin(server.url, f'DROP DATABASE "{NAME}" WITH (FORCE)')
        rows = []
    url = with_database(server.url, NAME)
    if not rows:
        await _admin(server.url, f'CREATE DATABASE "{NAME}"')
        async with Memory(url, clock=StepClock()) as mem:
            print("built", await build(mem, args, random.Random(args.seed)), flush=True)
    rng = random.Random(args.seed + 1)
    async with Memory(url, clock=StepClock()) as mem:
        await mem.retrieve(QUERIES[0], user_id=LARGE_USER, top_k=10)
        for run in (1, 2):
            for group in ("large", "ordinary"):
                times = []
                for _ in range(args.queries):
                    q = rng.choice(QUERIES)
                    user = LARGE_USER if group == "large" else f"user{rng.randrange(args.users):05d}"
                    t = time.perf_counter()
                    out = await mem.retrieve(q, user_id=user, top_k=10)
                    times.append((time.perf_counter() - t) * 1000)
                    assert len(out.items) == 10
                times.sort()
                p95 = times[int(0.95 * len(times)) - 1]
                print(f"run {run}: {group} user p50 {statistics.median(times):.1f} ms  p95 {p95:.1f} ms", flush=True)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--facts", type=int, default=10_000)
    p.add_argument("--users", type=int, default=100)
    p.add_argument("--large-facts", type=int, default=20_000)
    p.add_argument("--superseded", type=int, default=0)
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--rebuild", action="store_true")
    p.add_argument("--no-settle", action="store_true")
    a = p.parse_args()
    asyncio.run(main(a))

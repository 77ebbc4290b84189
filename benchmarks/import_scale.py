"""Bulk import at scale: is `add_knowledge_many` linear and lossless?

    uv run python benchmarks/import_scale.py [--large 20000] [--users 1000] [--per-user 100] [--json]

Two figures, both with HashingEmbedder (the embedder's own cost is not what is measured):

1. One user, `--large` facts (20,000) in ONE `add_knowledge_many` call (batches of 1,000, one
   transaction each). Each batch is timed (by the embedder call that starts it), and the last
   1,000 must take at most 1.5 times as long as the first 1,000 (issue 26): the gate's index is
   read once per call and kept up to date, exact values are found by a dict and look-alikes by a
   word-level deletion-neighbourhood index, so no batch scans the facts before it.
2. The peer-style build (the shape of benchmarks/retrieval.py's store): `--users` users of
   `--per-user` facts each, one `add_knowledge_many` call per user, then the large user; facts per
   second over the whole build. memv 0.1.2 builds about 800 facts/s on this machine (issue 26's
   figure); the target is at least 10 times that.

Every statement is distinct (each carries its own note number) but many are look-alikes of
another ("magnets from Iceland" / "magnets from Ireland"): lossless means `skipped` stays empty,
and the look-alikes are counted in `marked` instead, with the "may replace" marks an import puts
on free text near another fact (engine.gate.ImportNeighbours: one matrix product a batch). This
workload is made of near neighbours, so it marks far more than real imports: more than one mark a
fact, each an audit note the credential guard reads.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from engine import Memory
from engine.embedders import HashingEmbedder

VERBS = ["collects magnets from", "has visited", "wants to visit", "buys tea from", "has friends in", "studied in"]
PLACES = ["Iceland", "Ireland", "Austria", "Australia", "Chile", "China", "Niger", "Nigeria", "Oman", "Romania"]
HOBBIES = ["plays the violin", "plays the viola", "likes jazz", "likes jam", "owns a horse", "owns a house"]
MEMV_FACTS_PER_S = 800.0


def statement(rng: random.Random, n: int) -> str:
    if rng.random() < 0.5:
        return f"User {rng.choice(VERBS)} {rng.choice(PLACES)} (note {n})"
    return f"User {rng.choice(HOBBIES)} since {2000 + n % 25} (note {n})"


class TimedEmbedder(HashingEmbedder):
    """HashingEmbedder that notes when each call starts: one call per batch of an import (which
    asks for the batch as one matrix, `embed_array`)."""

    def __init__(self) -> None:
        super().__init__()
        self.starts: list[float] = []
        self.seconds = 0.0

    async def embed(self, texts: list[str]) -> list[list[float]]:
        self.starts.append(time.perf_counter())
        out = await super().embed(texts)
        self.seconds += time.perf_counter() - self.starts[-1]
        return out

    async def embed_array(self, texts: list[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        self.starts.append(time.perf_counter())
        out = await super().embed_array(texts)
        self.seconds += time.perf_counter() - self.starts[-1]
        return out


async def one_large_user(path: Path, facts: int, rng: random.Random) -> dict[str, Any]:
    embedder = TimedEmbedder()
    async with Memory(path, embedder=embedder) as mem:
        statements = [statement(rng, n) for n in range(facts)]
        t0 = time.perf_counter()
        added = await mem.add_knowledge_many("large", statements, actor="bench", batch_size=1000)
        end = time.perf_counter()
    marks = [*embedder.starts, end]
    batches = [round(b - a, 3) for a, b in itertools.pairwise(marks)]
    return {
        "facts": facts,
        "seconds": round(end - t0, 2),
        "facts_per_s": round(facts / (end - t0), 1),
        "batch_seconds": batches,
        "first_1000_s": batches[0],
        "last_1000_s": batches[-1],
        "last_over_first": round(batches[-1] / batches[0], 2),
        "added": len(added),
        "skipped": len(added.skipped),
        "marked": len(added.marked),
    }


async def peer_build(path: Path, users: int, per_user: int, large: int, rng: random.Random) -> dict[str, Any]:
    embedder = TimedEmbedder()
    async with Memory(path, embedder=embedder) as mem:
        skipped = marked = total = 0
        t0 = time.perf_counter()
        for u in range(users):
            out = await mem.add_knowledge_many(f"user{u:05d}", [statement(rng, n) for n in range(per_user)], "bench")
            skipped, marked, total = skipped + len(out.skipped), marked + len(out.marked), total + per_user
        out = await mem.add_knowledge_many("large", [statement(rng, n) for n in range(large)], "bench")
        skipped, marked, total = skipped + len(out.skipped), marked + len(out.marked), total + large
        seconds = time.perf_counter() - t0
    rate = total / seconds
    return {
        "facts": total,
        "seconds": round(seconds, 2),
        "facts_per_s": round(rate, 1),
        "times_memv": round(rate / MEMV_FACTS_PER_S, 1),
        "embedding_seconds": round(embedder.seconds, 2),
        "facts_per_s_without_embedding": round(total / (seconds - embedder.seconds), 1),
        "skipped": skipped,
        "marked": marked,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--large", type=int, default=20_000)
    parser.add_argument("--users", type=int, default=1_000)
    parser.add_argument("--per-user", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        large = asyncio.run(one_large_user(Path(tmp) / "large.db", args.large, rng))
        peer = asyncio.run(peer_build(Path(tmp) / "peer.db", args.users, args.per_user, args.large, rng))
    result = {"one_user": large, "peer_build": peer}
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(
        f"one user, {large['facts']:,} facts: {large['facts_per_s']:,} facts/s; first 1,000 {large['first_1000_s']} s,"
        f" last 1,000 {large['last_1000_s']} s ({large['last_over_first']}x; target <= 1.5x);"
        f" skipped {large['skipped']}, marked {large['marked']}"
    )
    print(
        f"peer-style build, {peer['facts']:,} facts: {peer['facts_per_s']:,} facts/s = {peer['times_memv']}x memv's"
        f" {MEMV_FACTS_PER_S:g} (target >= 10x); skipped {peer['skipped']}, marked {peer['marked']};"
        f" of {peer['seconds']} s, {peer['embedding_seconds']} s in HashingEmbedder"
        f" ({peer['facts_per_s_without_embedding']:,} facts/s without it)"
    )


if __name__ == "__main__":
    main()

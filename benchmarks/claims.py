"""The claim reader on value-identity pairs: does `relation(read_claim(a), read_claim(b))` say what
a person would (same / replaces / distinct)? And how fast is `read_claim` on 20,000 statements?

    uv run python benchmarks/claims.py                    # dev split only (the one rules are tuned on)
    uv run python benchmarks/claims.py --split heldout    # the held-out split, fixed before tuning
    uv run python benchmarks/claims.py --split all --no-save

The set (benchmarks/data/claim_pairs.jsonl): pairs worded the ways agents and LLM extractors write
("User ...", "The user ...", "User's ...", adverbs, time tails, negations), each with the relation
a person gives it. The held-out split was written and committed before any rule was tuned on the
dev split (git log of the file), and is run on its own.

For each split and expected relation it counts: right; "unknown" (one side is free text: the gate
falls back to its embedder neighbours and a person, so nothing is lost, but nothing is automated
either); and wrong, by what it was taken for. The wrong answers that cost most are listed by name:
a distinct pair read as "same" (a true fact dropped as a duplicate), a distinct pair read as
"replaces" (a true fact ended), a replacement read as "same" (the new value dropped).

Speed: `read_claim` on 20,000 distinct generated statements, cache cleared first (the uncached
rate is what a gate pass over a new large user pays once), then again (cached).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.claims import read_claim, relation  # noqa: E402

DATA = ROOT / "benchmarks" / "data" / "claim_pairs.jsonl"
RESULTS = ROOT / "benchmarks" / "results"
COSTLY = {("distinct", "same"), ("distinct", "replaces"), ("replaces", "same")}


def load(split: str) -> list[dict[str, str]]:
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if split == "all" or r["split"] == split]


def score(rows: list[dict[str, str]]) -> dict[str, object]:
    by_class: dict[str, Counter[str]] = {}
    costly: list[dict[str, str]] = []
    for row in rows:
        got = relation(read_claim(row["a"]), read_claim(row["b"]))
        expected = row["relation"]
        by_class.setdefault(expected, Counter())[got] += 1
        if (expected, got) in COSTLY:
            costly.append({"expected": expected, "got": got, "a": row["a"], "b": row["b"]})
    table = {}
    for expected, counts in sorted(by_class.items()):
        total = sum(counts.values())
        table[expected] = {
            "pairs": total,
            "right": counts[expected],
            "right_pct": round(100 * counts[expected] / total, 1),
            "unknown": counts["unknown"],
            "wrong": {k: v for k, v in counts.items() if k not in (expected, "unknown")},
        }
    return {"by_relation": table, "costly_errors": costly}


def speed(n: int = 20_000) -> dict[str, float]:
    rng = random.Random(7)
    shapes = [
        "User lives in City {i}",
        "The user works at Company {i}.",
        "User's favourite food is dish {i}",
        "User has a dog named Rex {i}",
        "User is not vegan ({i})",
        "User likes thing {i}",
        "User went to the market on day {i} and bought apples",
        "User's sister {i} lives in Oslo",
        "Something else entirely, note {i}",
        "User is {i}",
    ]
    statements = [rng.choice(shapes).format(i=i) for i in range(n)]
    read_claim.cache_clear()
    start = time.perf_counter()
    for s in statements:
        read_claim(s)
    cold = time.perf_counter() - start
    start = time.perf_counter()
    for s in statements:
        read_claim(s)
    warm = time.perf_counter() - start
    return {
        "statements": n,
        "uncached_per_s": round(n / cold),
        "uncached_us_each": round(1e6 * cold / n, 1),
        "cached_per_s": round(n / warm),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--split", choices=["dev", "heldout", "heldout2", "heldout3", "all"], default="dev")
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--no-speed", action="store_true")
    args = parser.parse_args()
    splits = ["dev", "heldout", "heldout2", "heldout3"] if args.split == "all" else [args.split]
    result: dict[str, object] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load": os.getloadavg()[0]},
        "splits": {split: score(load(split)) for split in splits},
    }
    if not args.no_speed:
        result["speed"] = speed()
    text = json.dumps(result, indent=1, ensure_ascii=False)
    print(text)
    if not args.no_save:
        RESULTS.mkdir(exist_ok=True)
        name = f"claims-{args.split}-{datetime.now(UTC).date().isoformat()}.json"
        (RESULTS / name).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

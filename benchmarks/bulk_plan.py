"""Bulk approve's preparation on the event loop, at 10,000 marked rows.

    uv run python benchmarks/bulk_plan.py [--rows 10000] [--repeat 5]

What runs between `b` and the question on screen, for N marked candidates of which every third
would replace something (left for one-by-one review): the marked ids in list order, the split into
approved and left out (`review_app.queue_cursor.bulk_plan`), the question's text, and, after the
decision, where the cursor rests (`after_bulk`). Beside it, the split as it was written before
(`[c for c in chosen if c.id not in set(ids)]`, a set rebuilt per row), timed on a tenth of the
rows and extrapolated only in words: it is quadratic (issue 29.7 measured 5.1 s at 10,000).

Target (issue 29): well under 0.2 s at 10,000. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from datetime import UTC, datetime

from engine.models import Candidate
from review_app.queue_cursor import after_bulk, bulk_plan


def rows(n: int) -> list[Candidate]:
    at = datetime(2026, 3, 10, tzinfo=UTC)
    return [
        Candidate(
            id=i,
            user_id=f"u-{i % 50}",
            statement=f"User {i} keeps item number {i}",
            kind="update" if i % 3 == 0 else "new",
            status="pending",
            confidence=0.9,
            created_at=at,
            supersedes_id=i if i % 3 == 0 else None,
        )
        for i in range(1, n + 1)
    ]


def in_list_order(marked: set[int], order: list[int]) -> list[int]:
    """PendingList.marked_in_order, on the same data structures."""
    index = {cid: n for n, cid in enumerate(order)}
    end = len(order)
    return sorted(marked, key=lambda cid: index.get(cid, end))


def once(chosen: list[Candidate]) -> float:
    order = [c.id for c in chosen]
    by_id = {c.id: c for c in chosen}
    started = time.perf_counter()
    ids = in_list_order(set(order), order)
    plan = bulk_plan([by_id[c] for c in ids])
    question = plan.question("the marked candidates")
    keep = after_bulk(order, order[len(order) // 2], set(plan.ids))
    elapsed = time.perf_counter() - started
    assert len(plan.approve) + len(plan.left_out) == len(chosen) and question and keep is not None
    return elapsed


def before(chosen: list[Candidate]) -> float:
    started = time.perf_counter()
    approve = [c for c in chosen if c.kind != "retraction" and c.supersedes_id is None]
    ids = [c.id for c in approve]
    left_out = [c for c in chosen if c.id not in set(ids)]
    assert len(left_out) + len(approve) == len(chosen)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    chosen = rows(args.rows)
    times = [once(chosen) for _ in range(args.repeat)]
    tenth = rows(args.rows // 10)
    old = before(tenth)
    print(
        json.dumps(
            {
                "benchmark": "bulk_plan",
                "rows": args.rows,
                "left_out": sum(1 for c in chosen if c.supersedes_id is not None),
                "now_median_s": round(statistics.median(times), 4),
                "now_max_s": round(max(times), 4),
                "target_s": 0.2,
                "old_split_at_a_tenth_s": round(old, 4),
                "old_split_rows": len(tenth),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()

"""A reviewer in its own OS process, driven by tests/test_concurrency.py.

Two modes, both talking to the parent over stdin/stdout only (no shared Python state, so the
engine's cross-process guarantees are what is exercised, not an in-process lock). DB is a database
path or a postgresql:// URL; the worker opens its own Memory (its own connections, or asyncpg pool,
as a reviewer on another host would):

``race DB NAME SEED``: open the store, print ``ready``, wait for ``go`` on stdin (so every worker
starts at once), then keep taking pages of the pending queue in a shuffled order and deciding each
candidate (approve, or reject when ``id % 3 == 0``). A conflict (another process decided it or
holds its lease) is expected and counted; ANY other exception is reported back as text, because
"database is locked" (or a PostgreSQL serialization or deadlock error) reaching a caller is exactly
what the test must catch. The last line is one
JSON object: name, decided ids, conflicts, errors.

``stream DB NAME``: decide every pending candidate in id order (confirm the supersession for an
update with a target, reject when ``id % 4 == 0``, approve otherwise) and print ``<id> <decision>``,
flushed, only after the call has returned. The parent SIGKILLs this process mid-stream; every id
printed is a decision the engine reported as done and must therefore be durable.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys

from engine import AlreadyDecidedError, ClaimedError, Memory


async def race(db: str, name: str, seed: int) -> None:
    rng = random.Random(seed)
    decided: list[int] = []
    errors: list[str] = []
    conflicts = 0
    async with Memory(db) as mem:
        print("ready", flush=True)
        if sys.stdin.readline().strip() != "go":
            raise SystemExit("expected 'go' on stdin")
        try:
            while True:
                page = await mem.review.pending(limit=40)
                if not page:
                    break
                rng.shuffle(page)
                for cand in page:
                    try:
                        if cand.id % 3 == 0:
                            await mem.review.reject(cand.id, reviewer=name, reason=f"rejected by {name}")
                        else:
                            await mem.review.approve(cand.id, reviewer=name)
                    except (AlreadyDecidedError, ClaimedError):
                        conflicts += 1
                        continue
                    decided.append(cand.id)
        except Exception as exc:  # reported, never swallowed: the test asserts there are none
            errors.append(f"{type(exc).__module__}.{type(exc).__name__}: {exc}")
    print(json.dumps({"name": name, "decided": decided, "conflicts": conflicts, "errors": errors}), flush=True)


async def stream(db: str, name: str) -> None:
    async with Memory(db) as mem:
        page = await mem.review.pending(limit=10_000)
        for cand in sorted(page, key=lambda c: c.id):
            if cand.kind == "update" and cand.supersedes_id is not None:
                await mem.review.confirm_supersession(cand.id, reviewer=name)
                decision = "confirm_supersession"
            elif cand.id % 4 == 0:
                await mem.review.reject(cand.id, reviewer=name, reason="stream reject")
                decision = "reject"
            else:
                await mem.review.approve(cand.id, reviewer=name)
                decision = "approve"
            print(f"{cand.id} {decision}", flush=True)
    print("done", flush=True)


def main(argv: list[str]) -> None:
    mode, db, name = argv[1], argv[2], argv[3]
    if mode == "race":
        asyncio.run(race(db, name, int(argv[4])))
    elif mode == "stream":
        asyncio.run(stream(db, name))
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv)

"""An agent or reviewer in its own OS process, driven by tests/test_gate_concurrency.py (issue 17,
failure 1: the queue's gate and the activation gate under real concurrency).

``propose DB NAME LIMIT``: open the store (max_pending_proposals_per_user=LIMIT), print ``ready``,
wait for ``go``, then propose "User owns a boat named Wave{i}" for i in 0..29 to user ``dup-u`` (the
same 30 values every worker proposes) and 30 values of its own to user ``lim-u`` (to run into the
per-user limit), as fast as it can.

``mixed DB NAME SEED``: the same start, then 120 random steps on user ``mix-u``: propose one of a
few dozen values (several about the same slot, so replacement detection fires), decide a pending
candidate (approve, reject with a tombstone, confirm the supersession, confirm the correction,
keep both), or correct an active fact to one of those values.

Refusals a caller can cause (UserInputError: tombstoned, duplicate, a decision required, over the
limit...) and conflicts (ConflictError: decided or changed by someone else) are expected and
counted. ANY other exception is reported as text: a lock timeout, a serialization failure or an
IntegrityError reaching a caller is what the test must catch. The last line is one JSON object.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
from collections import Counter

from engine import ConflictError, Memory, MemoryConfig, UserInputError
from engine.review import replaces

SLOTS = ("lives in", "works at", "owns a boat named", "is allergic to")
PLACES = ("Lisbon", "Porto", "Faro", "Braga", "Evora", "Coimbra")


def value(rng: random.Random) -> str:
    return f"User {rng.choice(SLOTS)} {rng.choice(PLACES)}"


async def wait_for_go(mem: Memory) -> None:
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        raise SystemExit("expected 'go' on stdin")


async def propose(db: str, name: str, limit: int) -> None:
    outcomes: Counter[str] = Counter()
    errors: list[str] = []
    config = MemoryConfig(max_pending_proposals_per_user=limit)
    async with Memory(db, config=config) as mem:
        await wait_for_go(mem)
        for i in range(30):
            for uid, text in (("dup-u", f"User owns a boat named Wave{i}"), ("lim-u", f"User {name} said thing {i}")):
                try:
                    out = await mem.propose(uid, text, actor=name)
                    outcomes["queued" if out.candidate_id is not None else "duplicate"] += 1
                except UserInputError:
                    outcomes["refused"] += 1
                except Exception as exc:  # reported, never swallowed
                    errors.append(f"{type(exc).__module__}.{type(exc).__name__}: {exc}")
    print(json.dumps({"name": name, "outcomes": outcomes, "errors": errors}), flush=True)


async def mixed(db: str, name: str, seed: int) -> None:
    rng = random.Random(seed)
    outcomes: Counter[str] = Counter()
    errors: list[str] = []
    async with Memory(db) as mem:
        await wait_for_go(mem)
        for _ in range(120):
            step = rng.choice(("propose", "propose", "decide", "decide", "correct"))
            try:
                if step == "propose":
                    await mem.propose("mix-u", value(rng), actor=name)
                elif step == "decide":
                    page = await mem.review.pending("mix-u", limit=20)
                    if not page:
                        continue
                    cand = rng.choice(page)
                    if replaces(cand):
                        how = rng.choice(("confirm_supersession", "confirm_correction", "keep_both"))
                        await getattr(mem.review, how)(cand.id, name)
                    elif rng.random() < 0.25:
                        await mem.review.reject(cand.id, name, "no")
                    else:
                        await mem.review.approve(cand.id, name)
                else:
                    facts = await mem.knowledge("mix-u")
                    if not facts:
                        continue
                    await mem.correct("mix-u", rng.choice(facts).id, value(rng), name, "fix")
                outcomes[step] += 1
            except (UserInputError, ConflictError):
                outcomes[f"{step} refused"] += 1
            except Exception as exc:  # reported, never swallowed
                errors.append(f"{step}: {type(exc).__module__}.{type(exc).__name__}: {exc}")
    print(json.dumps({"name": name, "outcomes": outcomes, "errors": errors}), flush=True)


def main(argv: list[str]) -> None:
    mode, db, name, arg = argv[1], argv[2], argv[3], int(argv[4])
    if mode == "propose":
        asyncio.run(propose(db, name, arg))
    elif mode == "mixed":
        asyncio.run(mixed(db, name, arg))
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv)

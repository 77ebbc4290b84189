"""An agent, reviewer or support person in its own OS process, driven by tests/test_gate_concurrency.py.

``DB USER NAME SEED MODE`` opens its own Memory (its own connections or asyncpg pool, as on another
host), prints ``ready``, waits for ``go`` on stdin so that every worker starts at the same instant,
then:

- ``propose``: proposes "User owns a boat named Wave{i}" for i in 0..29, then 40 values of its own
  ("... Skiff{NAME}{i}");
- ``mixed``: 60 random public writes on USER (propose, approve, reject with a tombstone, correct,
  retract, add) over a small pool of colliding statements.

The engine's typed refusals are expected and counted; ANY other exception is reported as text
(the parent asserts there are none). The last line is one JSON object.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys

from engine import Memory
from engine.errors import ConflictError, UserInputError

POOL = [
    "User owns a boat named Wave1",
    "User owns a boat named Wave2",
    "user owns a boat named wave1.",
    "User lives in Lisbon",
    "User lives in Porto",
    "User is allergic to peanuts",
]


async def main(db: str, user: str, name: str, seed: int, mode: str) -> None:
    rng = random.Random(seed)
    refused = 0
    errors: list[str] = []
    async with Memory(db) as mem:
        print("ready", flush=True)
        if sys.stdin.readline().strip() != "go":
            raise SystemExit("expected 'go' on stdin")

        async def attempt(call: object) -> None:
            nonlocal refused
            try:
                await call  # type: ignore[misc]
            except (UserInputError, ConflictError):
                refused += 1
            except Exception as exc:  # reported, never swallowed
                errors.append(f"{type(exc).__module__}.{type(exc).__name__}: {exc}")

        if mode == "propose":
            for i in range(30):
                await attempt(mem.propose(user, f"User owns a boat named Wave{i}", actor=name))
            for i in range(40):
                await attempt(mem.propose(user, f"User owns a boat named Skiff{name}{i}", actor=name))
        else:
            for _ in range(60):
                op = rng.choice(["propose", "approve", "reject", "correct", "retract", "add"])
                pending = [c.id for c in await mem.review.pending(user, limit=50)]
                facts = [k.id for k in await mem.knowledge(user)]
                text = rng.choice(POOL)
                if op == "propose":
                    await attempt(mem.propose(user, text, actor=name))
                elif op == "approve" and pending:
                    await attempt(mem.review.approve(rng.choice(pending), name))
                elif op == "reject" and pending:
                    await attempt(mem.review.reject(rng.choice(pending), name, reason="no"))
                elif op == "correct" and facts:
                    await attempt(mem.correct(user, rng.choice(facts), text, actor=name, reason="fix"))
                elif op == "retract" and facts:
                    await attempt(mem.retract(user, rng.choice(facts), actor=name, reason="gone"))
                elif op == "add":
                    await attempt(mem.add_knowledge(user, text, actor=name, settle="keep_both"))
    print(json.dumps({"name": name, "refused": refused, "errors": errors}), flush=True)


if __name__ == "__main__":
    db, user, name, seed, mode = sys.argv[1:6]
    asyncio.run(main(db, user, name, int(seed), mode))

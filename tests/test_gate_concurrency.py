"""The one gate under real concurrency: four OS processes writing one user's memory at the same
instant, on one PostgreSQL database and on one SQLite file (issue 17: on PostgreSQL four agents
queued one value four times, and 4 x 40 proposals passed the per-user limit, because `propose`
read its checks before it held the user's lock).

Each worker (tests/procs/gate_worker.py) has its own Memory, so what is exercised is the
database's locking (PostgreSQL's per-user advisory lock, SQLite's write lock), not an asyncio lock.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from engine import Memory, MemoryConfig
from engine.text import same_value
from tests.test_concurrency import final_reports, spawn, start_all

WORKER = Path(__file__).parent / "procs" / "gate_worker.py"


async def test_four_agents_at_once_queue_each_value_once_and_keep_the_limit(store_target: str) -> None:
    procs = [spawn(store_target, "dup-u", f"agent{i}", str(i), "propose", worker=WORKER) for i in range(4)]
    start_all(procs)
    reports = final_reports(procs)
    assert [r["errors"] for r in reports] == [[], [], [], []]
    async with Memory(store_target) as mem:
        pending = await mem.review.pending("dup-u", limit=1000)
        statements = [c.statement for c in pending]
        # each Wave value once, whoever proposed it first; the rest were duplicates of it
        waves = [s for s in statements if "Wave" in s]
        assert sorted(waves) == sorted({f"User owns a boat named Wave{i}" for i in range(30)})
        # the per-user limit of pending agent requests holds across processes
        limit = MemoryConfig().max_pending_proposals_per_user
        assert len(pending) == limit, (len(pending), limit)
        # positive control: approving everything makes one fact per value (I2)
        result = await mem.review.bulk_approve([c.id for c in pending], reviewer="ana")
        assert len(result.approved) == limit and result.skipped == []
        facts = await mem.knowledge("dup-u")
        assert len({f.statement for f in facts}) == len(facts) == limit


async def test_four_writers_at_once_never_break_the_invariants(store_target: str) -> None:
    procs = [spawn(store_target, "mix-u", f"w{i}", str(100 + i), "mixed", worker=WORKER) for i in range(4)]
    start_all(procs)
    reports = final_reports(procs)
    assert [r["errors"] for r in reports] == [[], [], [], []]
    async with Memory(store_target) as mem:
        active = await mem.knowledge("mix-u")
        for a, b in itertools.combinations(active, 2):  # I2
            assert not same_value(a.statement, b.statement), (a, b)
        for stone in await mem.tombstones("mix-u"):  # I1
            assert not [k for k in active if same_value(stone.key, k.statement)], stone
        events = await mem.history("mix-u")
        made = {e.entity_id for e in events if e.entity == "knowledge" and e.action in ("create", "inject")}
        assert {k.id for k in active} <= made  # I3
        assert sum(r["refused"] for r in reports) > 0  # the gate was exercised, not bypassed

"""Issue 17, failure 1: agents and reviewers in separate OS processes on one PostgreSQL database and
one SQLite file. Before the one gate, four processes proposing the same 30 values on PostgreSQL
queued about a hundred candidates (the tombstone, duplicate and limit checks were read without the
user's lock) and the per-user limit was overrun. Now every way into the queue and every activation
takes the user's lock (SQLite: BEGIN IMMEDIATE; PostgreSQL: pg_advisory_xact_lock), so:

- each value is queued once, and the per-user limit holds exactly;
- proposing, deciding and correcting at once leave I1 (no active fact beside a live tombstone of its
  value), I2 (no two active facts of one value), I3 (an audit row for every active fact) and no
  unexpected error (lock timeout, serialization failure, IntegrityError) reaching a caller.

The workers are tests/procs/gate_worker.py, each with its own Memory (its own connections or pool).
"""

from __future__ import annotations

from pathlib import Path

from test_concurrency import final_reports, rows, spawn, start_all

from engine import Memory
from engine.text import ValueIndex, value_key

WORKER = Path(__file__).parent / "procs" / "gate_worker.py"
LIMIT = 50


async def test_four_agents_proposing_at_once_queue_each_value_once(store_target: str) -> None:
    async with Memory(store_target):
        pass  # the schema exists before the workers race to open it
    procs = [spawn("propose", store_target, f"agent{n}", str(LIMIT), worker=WORKER) for n in range(4)]
    start_all(procs)
    reports = final_reports(procs)
    assert [r["errors"] for r in reports] == [[]] * 4
    async with Memory(store_target) as mem:
        boats = await rows(mem, "SELECT statement FROM candidates WHERE user_id = 'dup-u' ORDER BY id")
        # every value once, whoever got there first; the other three were told it is a duplicate
        assert sorted(str(r[0]) for r in boats) == sorted({f"User owns a boat named Wave{i}" for i in range(30)})
        assert sum(r["outcomes"].get("duplicate", 0) for r in reports) == 90
        # 4 agents x 30 distinct values against a limit of 50: exactly 50 queued, 70 refused
        limited = await rows(mem, "SELECT count(*) FROM candidates WHERE user_id = 'lim-u' AND status = 'pending'")
        assert int(limited[0][0]) == LIMIT  # type: ignore[call-overload]
        assert sum(r["outcomes"].get("refused", 0) for r in reports) == 4 * 30 - LIMIT
        # control: the agents really ran side by side (more than one got its own values queued)
        queued_by = await rows(mem, "SELECT DISTINCT created_by FROM candidates WHERE user_id = 'lim-u'")
        assert len(queued_by) > 1


async def test_proposing_deciding_and_correcting_at_once_keep_i1_to_i3(store_target: str) -> None:
    async with Memory(store_target):
        pass
    procs = [spawn("mixed", store_target, f"worker{n}", str(n), worker=WORKER) for n in range(4)]
    start_all(procs)
    reports = final_reports(procs)
    assert {r["name"]: r["errors"] for r in reports if r["errors"]} == {}
    done = sum(sum(v for k, v in r["outcomes"].items() if "refused" not in k) for r in reports)
    assert done > 40  # control: work really happened (not everything refused)
    async with Memory(store_target) as mem:
        active = await rows(mem, "SELECT id, statement FROM knowledge WHERE user_id = 'mix-u' AND status = 'active'")
        stones = await rows(mem, "SELECT id, statement FROM tombstones WHERE user_id = 'mix-u' AND lifted_at IS NULL")
        assert active, "nothing became active: the test proved nothing"
        # I2: no two active facts hold one value (engine.text's notion of one value)
        seen: ValueIndex[int] = ValueIndex()
        for kid, text in active:
            assert seen.find(value_key(str(text))) is None, f"fact {kid} repeats an active value: {text!r}"
            seen.add(value_key(str(text)), int(kid))  # type: ignore[call-overload]
        # I1: no live tombstone holds an active value
        for tid, text in stones:
            assert seen.find(value_key(str(text))) is None, f"tombstone {tid} {text!r} is live beside an active fact"
        # I3: every active fact has its audit row
        audited = await rows(
            mem, "SELECT DISTINCT entity_id FROM audit_log WHERE entity = 'knowledge' AND user_id = 'mix-u'"
        )
        assert {int(k) for k, _ in active} <= {int(r[0]) for r in audited}  # type: ignore[call-overload]

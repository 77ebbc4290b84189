"""The audit log: a row for every mutation (actor, action, user, entity, before/after, reason),
written in the same transaction as the change, and append-only at the database level."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine import Memory
from engine.storage import SqlTx
from tests.engine_helpers import Clock, audit_rows_since, last_audit_id, snapshot, sql


def shape(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """(actor, action, user, entity, entity_id, has before, has after, reason) of audit rows."""
    return [(r[1], r[2], r[3], r[4], r[5], r[6] is not None, r[7] is not None, r[8]) for r in rows]


async def test_every_mutation_writes_its_audit_rows(mem: Memory, clock: Clock) -> None:
    async def step(action: Any) -> list[tuple[Any, ...]]:
        mark = await last_audit_id(mem)
        clock.advance(seconds=1)
        await action
        return shape(await audit_rows_since(mem, mark))

    assert await step(mem.add_knowledge("ana", "Ana lives in Lisbon", actor="sup", reason="form")) == [
        ("sup", "inject", "ana", "knowledge", 1, False, True, "form")
    ]
    assert await step(
        mem.queue_candidate(
            "ana", "Ana lives in Porto", kind="update", supersedes_id=1, actor="agent", reason="she said so"
        )
    ) == [("agent", "queue", "ana", "candidate", 1, False, True, "she said so")]
    assert await step(mem.review.confirm_supersession(1, reviewer="rev", reason="moved")) == [
        ("rev", "create", "ana", "knowledge", 2, False, True, "moved"),
        ("rev", "supersede", "ana", "knowledge", 1, True, True, "moved"),
        ("rev", "confirm_supersession", "ana", "candidate", 1, True, True, "moved"),
    ]
    assert await step(mem.review.undo(1, reviewer="rev")) == [
        ("rev", "undo_supersede", "ana", "knowledge", 1, True, True, None),
        ("rev", "undo_create", "ana", "knowledge", 2, True, False, None),
        ("rev", "undo", "ana", "candidate", 1, True, True, "undo confirm_supersession"),
    ]
    await step(mem.queue_candidate("ana", "Ana has a cat"))
    assert await step(mem.review.approve(2, reviewer="rev", statement="Ana has two cats")) == [
        ("rev", "create", "ana", "knowledge", 3, False, True, None),  # 2 was undone: never reused
        ("rev", "edit_approve", "ana", "candidate", 2, True, True, None),
    ]
    await step(mem.queue_candidate("ana", "Ana is allergic to peanuts"))
    assert await step(mem.review.reject(3, reviewer="rev", reason="brother")) == [
        ("rev", "create", "ana", "tombstone", 1, False, True, "brother"),
        ("rev", "reject", "ana", "candidate", 3, True, True, "brother"),
    ]
    assert await step(mem.lift_tombstone("ana", 1, actor="cur", reason="confirmed")) == [
        ("cur", "lift", "ana", "tombstone", 1, True, True, "confirmed")
    ]
    assert await step(mem.correct("ana", 3, "Ana has three cats", actor="sup", reason="count")) == [
        ("sup", "create", "ana", "knowledge", 4, False, True, "count"),
        ("sup", "correct", "ana", "knowledge", 3, True, True, "count"),
    ]
    assert await step(mem.retract("ana", 4, actor="sup", reason="no cats")) == [
        ("sup", "retract", "ana", "knowledge", 4, True, True, "no cats"),
        ("sup", "create", "ana", "tombstone", 2, False, True, "no cats"),
    ]
    # Reads write nothing.
    assert await step(mem.retrieve("cats", user_id="ana")) == []
    assert await step(mem.history("ana")) == []


async def test_before_and_after_hold_the_full_rows(mem: Memory, clock: Clock) -> None:
    old = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="sup")
    mark = await last_audit_id(mem)
    at = clock.advance(hours=1)
    await mem.retract("ana", old.id, actor="sup", reason="moved away", tombstone=False)
    [row] = await audit_rows_since(mem, mark)
    before, after = json.loads(row[6]), json.loads(row[7])
    assert before["status"] == "active" and before["expired_at"] is None
    assert (after["status"], after["end_reason"], after["expired_at"]) == ("retracted", "moved away", at.isoformat())
    assert {k for k in before if before[k] != after[k]} == {"status", "end_reason", "expired_at"}
    [event] = [e for e in await mem.history("ana", old.id) if e.action == "retract"]
    assert (event.at, event.actor, event.before, event.after) == (at, "sup", before, after)


async def test_a_failed_decision_leaves_no_audit_row_and_no_change(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="sup")
    cid = await mem.queue_candidate("ana", "Ana lives in Porto", kind="update", supersedes_id=old.id)
    before = await snapshot(mem)
    real_audit = SqlTx.audit

    async def failing_on_the_last_row(tx: Any, **kwargs: Any) -> int:
        if kwargs["entity"] == "candidate":  # the decision's own row, written after everything else
            raise RuntimeError("disk full")
        return await real_audit(tx, **kwargs)

    monkeypatch.setattr(SqlTx, "audit", failing_on_the_last_row)
    with pytest.raises(RuntimeError, match="disk full"):
        await mem.review.confirm_supersession(cid, reviewer="rev")
    monkeypatch.setattr(SqlTx, "audit", real_audit)

    assert await snapshot(mem) == before  # no new fact, old fact active, no audit row, candidate pending
    # Positive control: the same decision, with audit working, goes through.
    await mem.review.confirm_supersession(cid, reviewer="rev")
    assert len((await snapshot(mem))["audit_log"]) == len(before["audit_log"]) + 4  # 3 rows and the draw


async def test_a_refused_decision_writes_no_audit_row(mem: Memory) -> None:
    cid = await mem.queue_candidate("ana", "Ana lives in Lisbon")
    await mem.review.approve(cid, reviewer="rev")
    mark = await last_audit_id(mem)
    with pytest.raises(Exception, match="already approved"):
        await mem.review.reject(cid, reviewer="other", reason="late")
    assert await audit_rows_since(mem, mark) == []


async def test_audit_log_refuses_update_and_delete(mem: Memory) -> None:
    await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="sup")
    before = await snapshot(mem)
    for statement in (
        "UPDATE audit_log SET actor = 'mallory'",
        "UPDATE audit_log SET reason = 'rewritten'",
        "DELETE FROM audit_log",
        "DELETE FROM audit_log WHERE id = 1",
        # Even the redaction form is refused when it also rewrites an identifying column.
        "UPDATE audit_log SET before = NULL, after = NULL, reason = NULL, redacted_at = 1, actor = 'x'",
    ):
        with pytest.raises(Exception, match="append-only"):
            async with sql(mem, write=True) as conn:
                await conn.execute(statement)
    assert await snapshot(mem) == before
    # Inserting stays possible (positive control: the triggers do not block the table).
    async with mem.store.transaction() as tx:
        await tx.audit(at=1, actor="t", action="note", user_id="ana", entity="knowledge", entity_id=1)
    assert len((await snapshot(mem))["audit_log"]) == len(before["audit_log"]) + 1


async def test_history_of_a_fact_never_includes_a_deleted_fact_that_had_its_id(mem: Memory) -> None:
    """Undo deletes the row it created; a later fact must not inherit that row's audit events."""
    c1 = await mem.queue_candidate("ana", "Ana lives in Lisbon")
    first = await mem.review.approve(c1, reviewer="rev")
    await mem.review.undo(c1, reviewer="rev")
    c2 = await mem.queue_candidate("ana", "Ana plays chess")
    second = await mem.review.approve(c2, reviewer="rev")

    assert second.id != first.id
    events = await mem.history("ana", second.id)
    assert [(e.action, e.entity_id) for e in events] == [("create", second.id)]
    assert all(e.after is None or e.after.get("statement") != "Ana lives in Lisbon" for e in events)
    # The deleted fact's own trail is still there, under its own id.
    trail = [e.action for e in await mem.history("ana") if e.entity == "knowledge" and e.entity_id == first.id]
    assert trail == ["create", "undo_create"]


async def test_tombstone_ids_are_not_reused_after_undo(mem: Memory) -> None:
    c1 = await mem.queue_candidate("ana", "Ana is allergic to peanuts")
    first = await mem.review.reject(c1, reviewer="rev", reason="brother")
    await mem.review.undo(c1, reviewer="rev")
    c2 = await mem.queue_candidate("ana", "Ana likes jazz")
    second = await mem.review.reject(c2, reviewer="rev", reason="no")
    assert first is not None and second is not None and second.id != first.id

"""Knowledge operations support teams use: trusted injection, correction, retraction, history and
tombstone lifting. Every call names the user; another user's id reads as unknown and changes nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest

from engine import InvalidStatementError, Memory, NotFoundError
from engine.errors import StaleSupersessionError
from tests.engine_helpers import Clock, snapshot


async def test_add_knowledge_is_active_at_once_and_audited(mem: Memory, clock: Clock) -> None:
    start = clock.now - timedelta(days=365)
    fact = await mem.add_knowledge(
        "ana", "  Ana lives in Lisbon ", actor="support", valid_at=start, reason="onboarding form"
    )
    assert (fact.statement, fact.status, fact.created_by, fact.valid_at, fact.created_at) == (
        "Ana lives in Lisbon",
        "active",
        "support",
        start,
        clock.now,
    )
    [event] = await mem.history("ana", fact.id)
    assert (event.action, event.actor, event.entity, event.entity_id, event.reason) == (
        "inject",
        "support",
        "knowledge",
        fact.id,
        "onboarding form",
    )
    assert event.before is None and event.after is not None and event.after["statement"] == "Ana lives in Lisbon"
    with pytest.raises(InvalidStatementError):
        await mem.add_knowledge("ana", "   ", actor="support")
    with pytest.raises(InvalidStatementError):
        await mem.add_knowledge("", "Nobody's fact", actor="support")


async def test_correct_supersedes_with_end_reason_corrected(mem: Memory, clock: Clock) -> None:
    old = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")
    at = clock.advance(days=1)
    new = await mem.correct("ana", old.id, "Ana lives in Porto", actor="support", reason="typo in the city")

    ended = await mem.get_knowledge("ana", old.id)
    assert (ended.status, ended.end_reason, ended.superseded_by, ended.expired_at) == (
        "superseded",
        "corrected",
        new.id,
        at,
    )
    assert (new.status, new.statement, new.created_at) == ("active", "Ana lives in Porto", at)
    assert [k.id for k in await mem.knowledge("ana")] == [new.id]
    assert {k.id for k in await mem.knowledge("ana", include_expired=True)} == {old.id, new.id}
    # The old version is not current belief any more, but is still what was believed before.
    now_items = await mem.retrieve("Ana lives in", user_id="ana", top_k=5)
    assert [i.knowledge.id for i in now_items.items] == [new.id]
    then = await mem.retrieve("Ana lives in", user_id="ana", top_k=5, known_at=at - timedelta(seconds=1))
    assert [i.knowledge.id for i in then.items] == [old.id]
    # History follows the whole chain: inject, then the new version's creation and the correction.
    actions = [(e.action, e.entity_id) for e in await mem.history("ana", new.id)]
    assert actions == [("inject", old.id), ("create", new.id), ("correct", old.id)]
    # A superseded version cannot be corrected again; a correction needs a reason.
    before = await snapshot(mem)
    with pytest.raises(StaleSupersessionError):
        await mem.correct("ana", old.id, "Ana lives in Faro", actor="support", reason="again")
    with pytest.raises(InvalidStatementError):
        await mem.correct("ana", new.id, "Ana lives in Faro", actor="support", reason=" ")
    assert await snapshot(mem) == before


async def test_correct_keeps_or_replaces_the_interval(mem: Memory, clock: Clock) -> None:
    start = clock.now - timedelta(days=30)
    old = await mem.add_knowledge("ana", "Ana works at Acme", actor="support", valid_at=start)
    kept = await mem.correct("ana", old.id, "Ana works at ACME Corp", actor="support", reason="name")
    assert (kept.valid_at, kept.invalid_at) == (start, None)
    changed = await mem.correct(
        "ana", kept.id, "Ana works at ACME Corp", actor="support", reason="ended", invalid_at=clock.now
    )
    assert (changed.valid_at, changed.invalid_at) == (start, clock.now)


async def test_retract_ends_belief_with_the_reason_and_tombstones_by_default(mem: Memory, clock: Clock) -> None:
    fact = await mem.add_knowledge("ana", "Ana is allergic to peanuts", actor="support")
    at = clock.advance(hours=2)
    retracted = await mem.retract("ana", fact.id, actor="support", reason="she never said that")

    assert (retracted.status, retracted.end_reason, retracted.expired_at, retracted.superseded_by) == (
        "retracted",
        "she never said that",
        at,
        None,
    )
    assert await mem.knowledge("ana") == []
    assert [k.id for k in await mem.knowledge("ana", include_expired=True)] == [fact.id]  # the row stays
    [stone] = await mem.tombstones("ana")
    assert (stone.statement, stone.reason, stone.knowledge_id) == (
        "Ana is allergic to peanuts",
        "she never said that",
        fact.id,
    )
    assert await mem.is_tombstoned("ana", "ana is allergic to peanuts!") is not None
    result = await mem.retrieve("peanuts", user_id="ana", top_k=5)
    assert result.items == []
    with pytest.raises(StaleSupersessionError):
        await mem.retract("ana", fact.id, actor="support", reason="again")


async def test_retract_without_tombstone_leaves_the_value_learnable(mem: Memory) -> None:
    fact = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")
    retracted = await mem.retract("ana", fact.id, actor="support", reason="moved away", tombstone=False)
    assert (retracted.status, retracted.end_reason) == ("retracted", "moved away")
    assert await mem.tombstones("ana") == []
    assert await mem.is_tombstoned("ana", "Ana lives in Lisbon") is None
    with pytest.raises(InvalidStatementError):
        await mem.retract("ana", (await mem.add_knowledge("ana", "x y", actor="s")).id, actor="s", reason="")


async def test_lift_tombstone_needs_a_reason_and_is_audited(mem: Memory, clock: Clock) -> None:
    cid = await mem.queue_candidate("ana", "Ana is allergic to peanuts")
    stone = await mem.review.reject(cid, reviewer="rev", reason="wrong person")
    assert stone is not None
    with pytest.raises(InvalidStatementError):
        await mem.lift_tombstone("ana", stone.id, actor="support", reason="  ")
    assert await mem.is_tombstoned("ana", "Ana is allergic to peanuts") is not None

    at = clock.advance(days=1)
    lifted = await mem.lift_tombstone("ana", stone.id, actor="support", reason="confirmed by her doctor")

    assert (lifted.lifted_at, lifted.lifted_by, lifted.lift_reason) == (at, "support", "confirmed by her doctor")
    assert await mem.is_tombstoned("ana", "Ana is allergic to peanuts") is None
    assert await mem.tombstones("ana") == []
    assert [t.id for t in await mem.tombstones("ana", include_lifted=True)] == [stone.id]
    event = (await mem.history("ana"))[-1]
    assert (event.action, event.entity, event.entity_id, event.actor, event.reason) == (
        "lift",
        "tombstone",
        stone.id,
        "support",
        "confirmed by her doctor",
    )
    assert event.before is not None and event.before["lifted_at"] is None
    assert event.after is not None and event.after["lifted_by"] == "support"
    with pytest.raises(StaleSupersessionError):
        await mem.lift_tombstone("ana", stone.id, actor="support", reason="twice")


async def test_another_users_ids_read_as_unknown_and_change_nothing(mem: Memory) -> None:
    fact = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")
    cid = await mem.queue_candidate("ana", "Ana is allergic to peanuts")
    stone = await mem.review.reject(cid, reviewer="rev", reason="wrong person")
    assert stone is not None
    await mem.add_knowledge("bob", "Bob lives in Lisbon", actor="support")
    before = await snapshot(mem)

    for attempt in (
        mem.correct("bob", fact.id, "Bob lives in Porto", actor="support", reason="r"),
        mem.retract("bob", fact.id, actor="support", reason="r"),
        mem.history("bob", fact.id),
        mem.versions("bob", fact.id),
        mem.get_knowledge("bob", fact.id),
        mem.lift_tombstone("bob", stone.id, actor="support", reason="r"),
        mem.review.undo(cid, reviewer="rev", user_id="bob"),
    ):
        with pytest.raises(NotFoundError):
            await attempt
    assert await snapshot(mem) == before
    # The same ids with their owner work (positive controls), and bob's own history holds only his.
    assert [e.entity_id for e in await mem.history("ana", fact.id)] == [fact.id]
    assert {e.user_id for e in await mem.history("bob")} == {"bob"}
    assert (await mem.lift_tombstone("ana", stone.id, actor="support", reason="ok")).lifted_by == "support"
    assert (await mem.correct("ana", fact.id, "Ana lives in Porto", actor="s", reason="r")).user_id == "ana"


async def test_no_decision_or_correction_deletes_a_row(mem: Memory) -> None:
    a = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")
    b = await mem.correct("ana", a.id, "Ana lives in Porto", actor="support", reason="moved")
    c = await mem.add_knowledge("ana", "Ana has a cat", actor="support")
    await mem.retract("ana", c.id, actor="support", reason="wrong")
    cid = await mem.queue_candidate("ana", "Ana lives in Faro", kind="update", supersedes_id=b.id)
    await mem.review.confirm_supersession(cid, reviewer="rev")
    rows = await mem.knowledge("ana", include_expired=True)
    assert [(k.id, k.status, k.end_reason) for k in rows] == [
        (a.id, "superseded", "corrected"),
        (b.id, "superseded", "superseded"),
        (c.id, "retracted", "wrong"),
        (rows[3].id, "active", None),
    ]

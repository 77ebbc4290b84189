"""The pending queue and the review decisions: what each decision writes, what a refused decision
leaves (nothing), leases between reviewers, and undo as the exact inverse."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from engine import AlreadyDecidedError, ClaimedError, DecisionRequiredError, Memory, NotFoundError, UndoRefusedError
from engine.errors import StaleSupersessionError
from tests.engine_helpers import DRAWS, Clock, open_memory, row, snapshot, vec_row


async def visible_statements(mem: Memory, user_id: str, query: str) -> set[str]:
    result = await mem.retrieve(query, user_id=user_id, top_k=50)
    return {i.knowledge.statement for i in result.items}


async def test_pending_candidates_are_invisible_until_approved(mem: Memory, clock: Clock) -> None:
    cid = await mem.queue_candidate("ana", "Ana is allergic to peanuts", confidence=0.9)
    other = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")

    # The trusted fact is visible (positive control); the candidate is not, by any read of facts.
    assert await visible_statements(mem, "ana", "Ana is allergic to peanuts") == {"Ana lives in Lisbon"}
    assert [k.statement for k in await mem.knowledge("ana")] == ["Ana lives in Lisbon"]
    assert [k.statement for k in await mem.knowledge("ana", include_expired=True)] == ["Ana lives in Lisbon"]
    as_of = await mem.retrieve("peanuts", user_id="ana", top_k=5, at_time=clock.now, known_at=clock.now)
    assert [i.knowledge.id for i in as_of.items] == [other.id]
    assert [c.id for c in await mem.review.pending(user_id="ana")] == [cid]

    clock.advance(minutes=1)
    fact = await mem.review.approve(cid, reviewer="rev")

    assert fact.status == "active" and fact.candidate_id == cid
    assert await visible_statements(mem, "ana", "Ana is allergic to peanuts") == {
        "Ana is allergic to peanuts",
        "Ana lives in Lisbon",
    }
    assert {k.statement for k in await mem.knowledge("ana")} == {"Ana is allergic to peanuts", "Ana lives in Lisbon"}
    assert await mem.review.pending(user_id="ana") == []
    cand = await mem.review.get(cid)
    assert (cand.status, cand.decision, cand.decided_by, cand.knowledge_id) == ("approved", "approve", "rev", fact.id)


async def test_approve_with_edit_stores_the_edited_statement_and_interval(mem: Memory, clock: Clock) -> None:
    cid = await mem.queue_candidate("ana", "Ana lives in Lisbon")
    start, end = clock.now.replace(year=2020), clock.now.replace(year=2024)
    fact = await mem.review.approve(
        cid, reviewer="rev", statement="Ana lived in Lisbon", valid_at=start, invalid_at=end
    )
    assert (fact.statement, fact.valid_at, fact.invalid_at) == ("Ana lived in Lisbon", start, end)
    cand = await mem.review.get(cid)
    assert (cand.decision, cand.statement) == ("edit_approve", "Ana lived in Lisbon")


@pytest.mark.parametrize("second", ["approve", "reject", "confirm", "keep_both"])
@pytest.mark.parametrize("first", ["approve", "reject"])
async def test_a_second_decision_raises_and_changes_nothing(mem: Memory, first: str, second: str) -> None:
    old = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")
    cid = await mem.queue_candidate("ana", "Ana lives in Porto", kind="update", supersedes_id=old.id)
    if first == "approve":
        await mem.review.keep_both(cid, reviewer="ana-rev")
    else:
        await mem.review.reject(cid, reviewer="ana-rev", reason="not said")
    before = await snapshot(mem)

    with pytest.raises(AlreadyDecidedError) as err:
        if second == "approve":
            await mem.review.approve(cid, reviewer="other")
        elif second == "reject":
            await mem.review.reject(cid, reviewer="other", reason="late")
        elif second == "confirm":
            await mem.review.confirm_supersession(cid, reviewer="other")
        else:
            await mem.review.keep_both(cid, reviewer="other")

    assert err.value.decided_by == "ana-rev"
    assert await snapshot(mem) == before


async def test_cross_user_candidate_ids_are_not_found_and_change_nothing(mem: Memory) -> None:
    old = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")
    cid = await mem.queue_candidate("ana", "Ana lives in Porto", kind="update", supersedes_id=old.id)
    before = await snapshot(mem)

    for attempt in (
        mem.review.approve(cid, reviewer="rev", user_id="bob"),
        mem.review.confirm_supersession(cid, reviewer="rev", user_id="bob"),
        mem.review.keep_both(cid, reviewer="rev", user_id="bob"),
        mem.review.reject(cid, reviewer="rev", reason="x", user_id="bob"),
        mem.review.get(cid, user_id="bob"),
    ):
        with pytest.raises(NotFoundError):
            await attempt
    assert await snapshot(mem) == before
    # A candidate cannot point at another user's fact either.
    with pytest.raises(NotFoundError):
        await mem.queue_candidate("bob", "Bob lives in Porto", kind="update", supersedes_id=old.id)
    assert await snapshot(mem) == before

    # Positive control: the owner's user_id works.
    fact = await mem.review.confirm_supersession(cid, reviewer="rev", user_id="ana")
    assert fact.statement == "Ana lives in Porto"
    with pytest.raises(NotFoundError):
        await mem.review.undo(cid, reviewer="rev", user_id="bob")
    assert (await mem.review.undo(cid, reviewer="rev", user_id="ana")).status == "pending"


async def test_confirm_supersession_ends_the_old_fact(mem: Memory, clock: Clock) -> None:
    old = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")
    cid = await mem.queue_candidate("ana", "Ana lives in Porto", kind="update", supersedes_id=old.id)
    decided_at = clock.advance(hours=1)
    new = await mem.review.confirm_supersession(cid, reviewer="rev")

    ended = await mem.get_knowledge("ana", old.id)
    assert (ended.status, ended.expired_at, ended.superseded_by, ended.end_reason) == (
        "superseded",
        decided_at,
        new.id,
        "superseded",
    )
    assert (new.status, new.created_at, new.expired_at) == ("active", decided_at, None)
    assert [k.id for k in await mem.knowledge("ana")] == [new.id]
    assert [k.id for k in await mem.versions("ana", new.id)] == [old.id, new.id]
    # The vector index carries the same belief interval as the row.
    vec = await vec_row(mem, old.id)
    assert vec is not None and vec[2] == "superseded" and vec[6] == (await row(mem, "knowledge", old.id))[10]


async def test_contradiction_records_its_own_end_reason(mem: Memory) -> None:
    old = await mem.add_knowledge("ana", "Ana is vegetarian", actor="support")
    cid = await mem.queue_candidate("ana", "Ana eats fish", kind="contradiction", supersedes_id=old.id)
    await mem.review.confirm_supersession(cid, reviewer="rev")
    assert (await mem.get_knowledge("ana", old.id)).end_reason == "contradicted"


async def test_keep_both_leaves_both_active_and_plain_approve_of_an_update_is_refused(mem: Memory) -> None:
    """Issue 9: `approve` on an update used to keep both silently. Now it is refused and changes
    nothing; keep_both (with or without an edit) is the explicit path."""
    old = await mem.add_knowledge("ana", "Ana has a cat", actor="support")
    c1 = await mem.queue_candidate("ana", "Ana has a dog", kind="update", supersedes_id=old.id)
    c2 = await mem.queue_candidate("ana", "Ana has a parrot", kind="update", supersedes_id=old.id)
    await mem.review.keep_both(c1, reviewer="rev")
    before = await snapshot(mem)
    for attempt in (
        mem.review.approve(c2, reviewer="rev"),
        mem.review.approve(c2, reviewer="rev", statement="Ana has two parrots"),  # edit-then-approve too
    ):
        with pytest.raises(DecisionRequiredError, match=f"fact {old.id}"):
            await attempt
    assert await snapshot(mem) == before
    edited = await mem.review.keep_both(c2, reviewer="rev", statement="Ana has two parrots")
    assert edited.statement == "Ana has two parrots"
    assert {k.statement for k in await mem.knowledge("ana")} == {
        "Ana has a cat",
        "Ana has a dog",
        "Ana has two parrots",
    }
    assert (await mem.get_knowledge("ana", old.id)).status == "active"
    assert (await mem.review.get(c1)).decision == "keep_both"


async def test_supersession_of_a_fact_that_is_no_longer_active_is_refused(mem: Memory) -> None:
    old = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")
    c1 = await mem.queue_candidate("ana", "Ana lives in Porto", kind="update", supersedes_id=old.id)
    c2 = await mem.queue_candidate("ana", "Ana lives in Faro", kind="update", supersedes_id=old.id)
    await mem.review.confirm_supersession(c1, reviewer="rev")
    before = await snapshot(mem)
    with pytest.raises(StaleSupersessionError):
        await mem.review.confirm_supersession(c2, reviewer="rev")
    assert await snapshot(mem) == before
    assert (await mem.review.get(c2)).status == "pending"


async def test_reject_writes_a_tombstone_and_keeps_the_candidate(mem: Memory) -> None:
    cid = await mem.queue_candidate("ana", "Ana is allergic to peanuts")
    stone = await mem.review.reject(cid, reviewer="rev", reason="she said her brother is")
    assert stone is not None and stone.reason == "she said her brother is" and stone.candidate_id == cid
    cand = await mem.review.get(cid)
    assert (cand.status, cand.reason, cand.decided_by) == ("rejected", "she said her brother is", "rev")
    assert await mem.knowledge("ana", include_expired=True) == []
    with pytest.raises(Exception, match="reason"):
        await mem.review.reject(await mem.queue_candidate("ana", "Ana likes jazz"), reviewer="rev", reason="  ")


async def test_a_lease_blocks_other_reviewers_until_it_expires(mem: Memory, clock: Clock) -> None:
    cid = await mem.queue_candidate("ana", "Ana lives in Lisbon")
    await mem.review.claim(cid, reviewer="xavier", ttl_seconds=60)
    before = await snapshot(mem)

    with pytest.raises(ClaimedError) as err:
        await mem.review.approve(cid, reviewer="yara")
    assert err.value.claimed_by == "xavier"
    with pytest.raises(ClaimedError):
        await mem.review.reject(cid, reviewer="yara", reason="no")
    with pytest.raises(ClaimedError):
        await mem.review.claim(cid, reviewer="yara")
    clock.advance(seconds=59)
    with pytest.raises(ClaimedError):
        await mem.review.approve(cid, reviewer="yara")
    assert await snapshot(mem) == before

    clock.advance(seconds=1)  # the lease runs out exactly at claimed_until
    fact = await mem.review.approve(cid, reviewer="yara")
    assert (await mem.review.get(cid)).decided_by == "yara" and fact.created_by == "yara"


async def test_the_lease_holder_may_decide(mem: Memory) -> None:
    cid = await mem.queue_candidate("ana", "Ana lives in Lisbon")
    await mem.review.claim(cid, reviewer="xavier", ttl_seconds=60)
    await mem.review.approve(cid, reviewer="xavier")
    assert (await mem.review.get(cid)).claimed_by is None


# -- undo -----------------------------------------------------------------------------------------


async def test_undo_of_approve_restores_the_exact_previous_state(mem: Memory, clock: Clock) -> None:
    cid = await mem.queue_candidate("ana", "Ana lives in Lisbon", evidence="I live in Lisbon", confidence=0.8)
    before = await snapshot(mem)
    clock.advance(minutes=5)
    fact = await mem.review.approve(cid, reviewer="rev", statement="Ana lives in Lisbon, Portugal")
    clock.advance(minutes=5)

    restored = await mem.review.undo(cid, reviewer="rev")

    after = await snapshot(mem)
    assert restored.status == "pending"
    for table in sorted(set(after) - {"audit_log"}):  # the audit log only grows
        assert after[table] == before[table], table
    assert await mem.knowledge("ana", include_expired=True) == []
    assert await visible_statements(mem, "ana", "Lisbon") == set()
    # The audit log only grows: approve + undo rows were added, none removed.
    assert after["audit_log"][: len(before["audit_log"])] == before["audit_log"]
    actions = [r[3] for r in after["audit_log"][len(before["audit_log"]) :] if r[3] not in DRAWS]
    assert actions == ["create", "edit_approve", "undo_create", "undo"]
    # The candidate can be decided again, with its original (unedited) statement.
    again = await mem.review.approve(cid, reviewer="rev")
    assert again.statement == "Ana lives in Lisbon" and fact.statement == "Ana lives in Lisbon, Portugal"


async def test_undo_of_confirm_supersession_restores_both_facts(mem: Memory, clock: Clock) -> None:
    old = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")
    cid = await mem.queue_candidate("ana", "Ana lives in Porto", kind="update", supersedes_id=old.id)
    before = await snapshot(mem)
    clock.advance(minutes=5)
    await mem.review.confirm_supersession(cid, reviewer="rev")
    assert (await mem.get_knowledge("ana", old.id)).status == "superseded"

    await mem.review.undo(cid, reviewer="rev")

    after = await snapshot(mem)
    for table in sorted(set(after) - {"audit_log"}):  # the audit log only grows
        assert after[table] == before[table], table
    assert await visible_statements(mem, "ana", "Ana lives in Lisbon") == {"Ana lives in Lisbon"}


async def test_undo_of_reject_removes_the_tombstone(mem: Memory) -> None:
    cid = await mem.queue_candidate("ana", "Ana is allergic to peanuts")
    before = await snapshot(mem)
    await mem.review.reject(cid, reviewer="rev", reason="wrong person")
    assert await mem.is_tombstoned("ana", "Ana is allergic to peanuts") is not None

    await mem.review.undo(cid, reviewer="rev")

    after = await snapshot(mem)
    for table in ("knowledge", "candidates", "tombstones"):
        assert after[table] == before[table], table
    assert await mem.is_tombstoned("ana", "Ana is allergic to peanuts") is None


async def test_undo_is_refused_when_a_later_change_depends_on_the_decision(mem: Memory, clock: Clock) -> None:
    cid = await mem.queue_candidate("ana", "Ana lives in Lisbon")
    fact = await mem.review.approve(cid, reviewer="rev")
    clock.advance(minutes=1)
    await mem.correct("ana", fact.id, "Ana lives in Lisbon's Alfama district", actor="support", reason="more precise")
    before = await snapshot(mem)

    with pytest.raises(UndoRefusedError):
        await mem.review.undo(cid, reviewer="rev")
    assert await snapshot(mem) == before


async def test_undo_is_refused_when_a_later_supersession_ended_the_fact(mem: Memory) -> None:
    cid = await mem.queue_candidate("ana", "Ana lives in Lisbon")
    fact = await mem.review.approve(cid, reviewer="rev")
    c2 = await mem.queue_candidate("ana", "Ana lives in Porto", kind="update", supersedes_id=fact.id)
    await mem.review.confirm_supersession(c2, reviewer="rev")
    before = await snapshot(mem)
    with pytest.raises(UndoRefusedError):
        await mem.review.undo(cid, reviewer="rev")
    assert await snapshot(mem) == before
    # Undoing the later decision first restores the fact; then the earlier one undoes too (a chain
    # unwinds in reverse order): the update, pending again, now replaces the candidate it named.
    await mem.review.undo(c2, reviewer="rev")
    assert (await mem.get_knowledge("ana", fact.id)).status == "active"
    await mem.review.undo(cid, reviewer="rev")
    again = await mem.review.get(c2)
    assert (again.status, again.supersedes_id, again.supersedes_candidate_id) == ("pending", None, cid)


async def test_undo_is_refused_while_a_pending_candidate_would_supersede_the_fact(mem: Memory) -> None:
    """Deleting the approved fact must not leave a candidate pointing at nothing: a pending update
    is re-pointed at the candidate (the chain it was before the approval); a decided one is history
    that names the fact, so undo is refused."""
    cid = await mem.queue_candidate("ana", "Ana lives in Lisbon")
    fact = await mem.review.approve(cid, reviewer="rev")
    c2 = await mem.queue_candidate("ana", "Ana lives in Porto", kind="update", supersedes_id=fact.id)
    await mem.review.undo(cid, reviewer="rev")
    assert (await mem.review.get(c2)).supersedes_candidate_id == cid
    fact = await mem.review.approve(cid, reviewer="rev")  # the approval again re-points the chain
    assert (await mem.review.get(c2)).supersedes_id == fact.id
    # Once decided, the update is history that still names the fact: undo stays refused, clearly.
    await mem.review.reject(c2, reviewer="rev", reason="not said", tombstone=False)
    with pytest.raises(UndoRefusedError, match=str(c2)):
        await mem.review.undo(cid, reviewer="rev")
    # Positive control: with no candidate naming it, the same approval undoes.
    c3 = await mem.queue_candidate("ana", "Ana likes jazz")
    await mem.review.approve(c3, reviewer="rev")
    assert (await mem.review.undo(c3, reviewer="rev")).status == "pending"


async def test_undo_of_a_pending_candidate_is_refused(mem: Memory) -> None:
    cid = await mem.queue_candidate("ana", "Ana lives in Lisbon")
    with pytest.raises(UndoRefusedError):
        await mem.review.undo(cid, reviewer="rev")


async def test_two_reviewers_racing_on_one_candidate_exactly_one_wins(new_target: Callable[[str], str]) -> None:
    """Two Memory objects on one file (two connections, as two workstations would have)."""
    db = new_target("race")
    async with open_memory(db, Clock()) as first, open_memory(db, Clock()) as second:
        ids = [await first.queue_candidate("ana", f"Ana fact {i}") for i in range(20)]
        outcomes: list[str] = []

        async def decide(mem: Memory, cid: int, how: str) -> None:
            try:
                if how == "approve":
                    await mem.review.approve(cid, reviewer="xavier")
                else:
                    await mem.review.reject(cid, reviewer="yara", reason="no")
                outcomes.append(how)
            except AlreadyDecidedError:
                outcomes.append("refused")

        for cid in ids:
            await asyncio.gather(decide(first, cid, "approve"), decide(second, cid, "reject"))
        assert outcomes.count("refused") == len(ids)
        facts = await first.knowledge("ana")
        stones = await first.tombstones("ana")
        assert len(facts) + len(stones) == len(ids)  # each candidate has exactly one outcome's effect
        for cid in ids:
            cand = await second.review.get(cid)
            assert cand.status in ("approved", "rejected")
            assert (cand.knowledge_id is not None) == (cand.status == "approved")


async def test_a_retraction_request_retracts_on_approval_and_undoes_exactly(mem: Memory) -> None:
    fact = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")
    cid = await mem.queue_candidate(
        "ana",
        "Forget that Ana lives in Lisbon",
        kind="retraction",
        supersedes_id=fact.id,
        reason="user asked to forget it",
    )
    before = await snapshot(mem)
    retracted = await mem.review.approve(cid, reviewer="rev")
    assert (retracted.status, retracted.end_reason) == ("retracted", "user asked to forget it")
    assert await mem.is_tombstoned("ana", "Ana lives in Lisbon") is not None

    await mem.review.undo(cid, reviewer="rev")
    after = await snapshot(mem)
    for table in sorted(set(after) - {"audit_log"}):  # the audit log only grows
        assert after[table] == before[table], table
    assert await mem.is_tombstoned("ana", "Ana lives in Lisbon") is None
    # Rejecting a retraction request keeps the fact and writes no tombstone.
    assert await mem.review.reject(cid, reviewer="rev", reason="keep it") is None
    assert (await mem.get_knowledge("ana", fact.id)).status == "active"

"""Issue 17's numbered failures, one test each (items 2-6, 8's undo part and 11; item 1, the
concurrent proposals, is tests/test_gate_concurrency.py): every one failed on 39e3e71 and passes now.
Each runs on both backends; each must-not sits beside the positive control that shows the same call
can succeed. "Nothing changed" is checked against the whole database (engine_helpers.snapshot)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from engine import (
    AssignedError,
    DecisionRequiredError,
    DuplicateFactError,
    Memory,
    SecondOpinionError,
    TombstonedError,
    UndoRefusedError,
    UserInputError,
)
from tests.engine_helpers import Clock, snapshot
from tests.tui_seed import ScriptedExtractor


def day(y: int, m: int = 1, d: int = 1) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


@pytest.fixture
def clock() -> Clock:
    return Clock(day(2026, 3, 1))


async def active(mem: Memory, uid: str) -> list[str]:
    return sorted(k.statement for k in await mem.knowledge(uid))


async def live_stones(mem: Memory, uid: str) -> list[str]:
    return sorted(t.statement for t in await mem.tombstones(uid))


# -- 2. a tombstoned value never comes back --------------------------------------------------------


async def test_edit_approve_into_a_tombstoned_value_is_refused(mem: Memory) -> None:
    rejected = await mem.queue_candidate("u", "User is allergic to peanuts")
    stone = await mem.review.reject(rejected, "ben", "not true")
    assert stone is not None
    cid = await mem.queue_candidate("u", "User is allergic to cats")
    before = await snapshot(mem)
    with pytest.raises(TombstonedError) as err:
        await mem.review.approve(cid, "ben", statement="User is allergic to peanuts")
    assert err.value.tombstone_id == stone.id and "peanuts" in str(err.value)
    assert await snapshot(mem) == before
    # lifting it is an explicit argument, audited as a lift; never both live
    fact = await mem.review.approve(cid, "ben", statement="User is allergic to peanuts", lift_tombstone=True)
    assert fact.statement == "User is allergic to peanuts"
    assert await live_stones(mem, "u") == []
    assert "lift" in [e.action for e in await mem.history("u")]


async def test_correct_into_a_tombstoned_value_is_refused(mem: Memory) -> None:
    fact = await mem.add_knowledge("u", "User is allergic to cats", actor="s")
    rejected = await mem.queue_candidate("u", "User is allergic to peanuts")
    await mem.review.reject(rejected, "ben", "not true")
    before = await snapshot(mem)
    with pytest.raises(TombstonedError):
        await mem.correct("u", fact.id, "User is allergic to peanuts", "s", "typo")
    assert await snapshot(mem) == before
    fixed = await mem.correct("u", fact.id, "User is allergic to dogs", "s", "typo")  # control
    assert await active(mem, "u") == [fixed.statement]


@pytest.mark.parametrize("bulk", [False, True])
async def test_a_proposal_queued_before_its_value_was_retracted_cannot_be_approved(mem: Memory, bulk: bool) -> None:
    waiting = await mem.propose("u", "User is allergic to peanuts", actor="agent")
    other = await mem.propose("u", "User has a red bicycle", actor="agent")
    assert waiting.candidate_id is not None and other.candidate_id is not None
    # meanwhile support adds the value directly, then retracts it with a tombstone
    fact = await mem.add_knowledge("u", "User is allergic to peanuts", actor="support")
    await mem.retract("u", fact.id, "support", "a misdiagnosis")
    assert await live_stones(mem, "u") == ["User is allergic to peanuts"]
    before = await snapshot(mem)
    if bulk:
        result = await mem.review.bulk_approve([waiting.candidate_id, other.candidate_id], "ben")
        assert [c for c, _ in result.skipped] == [waiting.candidate_id]
        assert "tombstone" in result.skipped[0][1]
        assert [k.statement for k in result.approved] == ["User has a red bicycle"]  # control
    else:
        with pytest.raises(TombstonedError):
            await mem.review.approve(waiting.candidate_id, "ben")
        assert await snapshot(mem) == before
        await mem.review.approve(other.candidate_id, "ben")  # control
    assert await active(mem, "u") == ["User has a red bicycle"]
    assert await live_stones(mem, "u") == ["User is allergic to peanuts"]
    assert (await mem.review.get(waiting.candidate_id)).status == "pending"


async def test_a_tombstone_over_an_active_value_is_refused(mem: Memory) -> None:
    await mem.add_knowledge("u", "User likes jazz", actor="s")
    cid = await mem.propose("u", "user likes jazz!", actor="agent")
    assert cid.duplicate_of is not None  # the queue's door already says so; queue one by hand
    async with mem.store.transaction() as tx:
        raw = await tx.insert_candidate(
            user_id="u", statement="User likes jazz", kind="new", confidence=1.0, created_at=0, created_by="x"
        )
    before = await snapshot(mem)
    with pytest.raises(UserInputError, match="retract"):
        await mem.review.reject(raw, "ben", "no")
    assert await snapshot(mem) == before
    assert await mem.review.reject(raw, "ben", "no", tombstone=False) is None  # control


# -- 3. never two identical active facts -------------------------------------------------------------


async def test_edit_approve_equal_to_an_active_fact_is_refused(mem: Memory) -> None:
    tea = await mem.add_knowledge("u", "User likes green tea", actor="s")
    cid = await mem.queue_candidate("u", "User likes black coffee")
    before = await snapshot(mem)
    with pytest.raises(DuplicateFactError) as err:
        await mem.review.approve(cid, "ben", statement="user likes green tea.")
    assert err.value.knowledge_id == tea.id
    assert await snapshot(mem) == before
    await mem.review.approve(cid, "ben", statement="User likes black tea")  # control


async def test_keep_both_with_the_old_value_is_refused(mem: Memory) -> None:
    lisbon = await mem.add_knowledge("u", "User lives in Lisbon", actor="s")
    cid = await mem.queue_candidate("u", "User lives in Porto", kind="update", supersedes_id=lisbon.id)
    before = await snapshot(mem)
    with pytest.raises(DuplicateFactError):
        await mem.review.keep_both(cid, "ben", statement="User lives in Lisbon")
    assert await snapshot(mem) == before
    await mem.review.keep_both(cid, "ben")  # control
    assert await active(mem, "u") == ["User lives in Lisbon", "User lives in Porto"]


async def test_add_knowledge_twice_is_refused_and_the_batch_skips_repeats(mem: Memory) -> None:
    first = await mem.add_knowledge("u", "User likes jazz", actor="s")
    before = await snapshot(mem)
    with pytest.raises(DuplicateFactError) as err:
        await mem.add_knowledge("u", "User likes jazz", actor="s")
    assert err.value.knowledge_id == first.id
    assert await snapshot(mem) == before
    added = await mem.add_knowledge_many("u", ["User likes jazz", "User keeps bees", "user keeps bees."], "s")
    assert [k.statement for k in added] == ["User keeps bees"]
    assert [i for i, _ in added.skipped] == [0, 2]
    assert await active(mem, "u") == ["User keeps bees", "User likes jazz"]


async def test_approving_a_pending_fact_after_the_same_was_added_is_refused(mem: Memory) -> None:
    cid = await mem.queue_candidate("u", "User likes jazz")
    await mem.add_knowledge("u", "User likes jazz", actor="s")
    before = await snapshot(mem)
    with pytest.raises(DuplicateFactError):
        await mem.review.approve(cid, "ben")
    assert await snapshot(mem) == before
    await mem.review.reject(cid, "ben", "already known", tombstone=False)  # what the reviewer does instead
    assert await active(mem, "u") == ["User likes jazz"]


# -- 4. replacement detection for every source ---------------------------------------------------------


async def test_an_agents_contradicting_proposal_asks_the_question(mem: Memory) -> None:
    lisbon = await mem.add_knowledge("u", "User lives in Lisbon", actor="s")
    out = await mem.propose("u", "User lives in Porto", actor="agent")
    assert out.candidate_id is not None
    cand = await mem.review.get(out.candidate_id)
    assert cand.supersedes_id == lisbon.id
    with pytest.raises(DecisionRequiredError):
        await mem.review.approve(cand.id, "ben")
    result = await mem.review.bulk_approve([cand.id], "ben")
    assert result.approved == [] and [c for c, _ in result.skipped] == [cand.id]
    assert await active(mem, "u") == ["User lives in Lisbon"]
    # control: an unrelated proposal is plain and bulk approves
    plain = await mem.propose("u", "User keeps bees", actor="agent")
    assert plain.candidate_id is not None
    assert (await mem.review.get(plain.candidate_id)).supersedes_id is None
    # a curator's candidate gets the same detection
    curated = await mem.queue_candidate("u", "User lives in Faro", actor="curator")
    assert (await mem.review.get(curated)).supersedes_id == lisbon.id


async def test_a_candidate_queued_before_the_fact_it_would_replace_asks_the_question(mem: Memory) -> None:
    """I5: "Lisbon" and "Porto" queued together, neither active, so the intake saw nothing to
    replace. Once Lisbon is approved, Porto is re-pointed at it in the same transaction (audited):
    a plain approve asks the question instead of leaving Porto active beside Lisbon. Undoing
    Lisbon's approval puts Porto back as it was."""
    lisbon_c = await mem.queue_candidate("u", "User lives in Lisbon", actor="curator")
    porto_c = await mem.queue_candidate("u", "User lives in Porto", actor="curator")
    bees_c = await mem.queue_candidate("u", "User keeps bees", actor="curator")  # the control
    assert (await mem.review.get(porto_c)).supersedes_id is None
    lisbon = await mem.review.approve(lisbon_c, "ana")
    porto = await mem.review.get(porto_c)
    assert (porto.kind, porto.supersedes_id) == ("update", lisbon.id)
    assert (await mem.review.get(bees_c)).supersedes_id is None
    retargets = [e for e in await mem.history("u") if e.action == "gate_retarget"]
    assert [(e.entity_id, e.actor) for e in retargets] == [(porto_c, "memdesk")]
    before = await snapshot(mem)
    with pytest.raises(DecisionRequiredError):
        await mem.review.approve(porto_c, "ben")
    assert await snapshot(mem) == before  # the refusal changed nothing
    # undo of Lisbon's approval takes the re-pointing back with it
    await mem.review.undo(lisbon_c, "ana")
    porto = await mem.review.get(porto_c)
    assert (porto.kind, porto.supersedes_id, porto.supersedes_candidate_id) == ("new", None, None)
    # approved again, the question comes back; confirmed, Porto ends Lisbon
    lisbon = await mem.review.approve(lisbon_c, "ana")
    await mem.review.confirm_supersession(porto_c, "ben")
    await mem.review.approve(bees_c, "ben")
    assert await active(mem, "u") == ["User keeps bees", "User lives in Porto"]


async def test_an_undone_decision_back_in_the_queue_meets_the_facts_active_now(mem: Memory) -> None:
    """I5 for a candidate an undo puts back: Porto was approved (edited into another value) before
    Lisbon became active; undone, it is pending as "User lives in Porto" again, and Lisbon is
    what it would replace."""
    porto_c = await mem.queue_candidate("u", "User lives in Porto", actor="curator")
    lisbon_c = await mem.queue_candidate("u", "User lives in Lisbon", actor="curator")
    await mem.review.approve(porto_c, "ana", statement="User works at SAP")
    lisbon = await mem.review.approve(lisbon_c, "ana")
    back = await mem.review.undo(porto_c, "ana")
    assert (back.status, back.kind, back.supersedes_id) == ("pending", "update", lisbon.id)
    with pytest.raises(DecisionRequiredError):
        await mem.review.approve(porto_c, "ana")
    assert await active(mem, "u") == ["User lives in Lisbon"]


async def test_a_direct_add_about_a_known_slot_must_say_how_it_relates(mem: Memory) -> None:
    lisbon = await mem.add_knowledge("u", "User lives in Lisbon", actor="s")
    before = await snapshot(mem)
    with pytest.raises(UserInputError, match="supersede"):
        await mem.add_knowledge("u", "User lives in Porto", actor="s")
    assert await snapshot(mem) == before
    porto = await mem.add_knowledge("u", "User lives in Porto", actor="s", settle="supersede")
    assert await active(mem, "u") == ["User lives in Porto"]
    assert (await mem.get_knowledge("u", lisbon.id)).superseded_by == porto.id


# -- 5. corrections stick ------------------------------------------------------------------------------


async def test_a_corrected_away_value_comes_back_as_a_contradiction(mem: Memory) -> None:
    old = await mem.add_knowledge("u", "User is allergic to penicillin", actor="s")
    new = await mem.correct("u", old.id, "User is allergic to amoxicillin", "s", "doctor's letter")
    cid = await mem.queue_candidate("u", "User is allergic to penicillin")
    cand = await mem.review.get(cid)
    assert cand.kind == "contradiction" and cand.supersedes_id == new.id
    with pytest.raises(DecisionRequiredError):
        await mem.review.approve(cid, "ben")
    assert await active(mem, "u") == ["User is allergic to amoxicillin"]


async def test_correct_with_tombstone_blocks_the_old_value(mem: Memory) -> None:
    old = await mem.add_knowledge("u", "User is allergic to penicillin", actor="s")
    await mem.correct("u", old.id, "User is allergic to amoxicillin", "s", "sure", tombstone=True)
    assert await live_stones(mem, "u") == ["User is allergic to penicillin"]
    with pytest.raises(TombstonedError):
        await mem.propose("u", "User is allergic to penicillin", actor="agent")
    # control: without tombstone the value may be queued (as a contradiction)
    other = await mem.add_knowledge("u", "User owns a cat", actor="s")
    await mem.correct("u", other.id, "User owns a dog", "s", "misheard")
    assert (await mem.propose("u", "User owns a cat", actor="agent")).candidate_id is not None


# -- 6. supersede with no start ends the old fact in valid time ------------------------------------------


async def test_supersede_without_a_start_closes_the_old_fact(mem: Memory, clock: Clock) -> None:
    ania = await mem.add_knowledge("u", "User's girlfriend is named Ania", actor="s", valid_at=day(2024))
    clock.now = day(2026, 3, 5)
    broke = await mem.add_knowledge("u", "User broke up with Ania", actor="s")
    await mem.supersede("u", ania.id, broke.id, "s", "they broke up")
    ended = await mem.get_knowledge("u", ania.id)
    assert ended.invalid_at == day(2026, 3, 5)  # when the new fact was stated (added)
    later = [k.statement for k in await mem.knowledge("u", at_time=day(2027))]
    assert later == ["User broke up with Ania"]
    earlier = [k.statement for k in await mem.knowledge("u", at_time=day(2025))]
    assert "User's girlfriend is named Ania" in earlier  # control: its period still reads it
    # an explicit start wins
    a = await mem.add_knowledge("u", "User works at SAP", actor="s", valid_at=day(2020))
    b = await mem.add_knowledge("u", "User is unemployed", actor="s")
    await mem.supersede("u", a.id, b.id, "s", "left", start=day(2025, 6))
    assert (await mem.get_knowledge("u", a.id)).invalid_at == day(2025, 6)


# -- 7. "it was never true" ---------------------------------------------------------------------------


async def test_confirm_correction_is_never_read_by_as_of(mem: Memory, clock: Clock) -> None:
    peanuts = await mem.add_knowledge("u", "User is allergic to peanuts", actor="s", valid_at=day(2024))
    clock.now = day(2026, 2, 3)
    cid = await mem.queue_candidate(
        "u", "User is not allergic to peanuts", kind="contradiction", supersedes_id=peanuts.id
    )
    fixed = await mem.review.confirm_correction(cid, "ben", reason="a misdiagnosis")
    old = await mem.get_knowledge("u", peanuts.id)
    assert old.status != "active" and old.end_reason == "corrected" and old.superseded_by == fixed.id
    # the correction says what was always the case: as-of 2025-06 reads it, never the old fact
    assert [k.statement for k in await mem.knowledge("u", at_time=day(2025, 6))] == [fixed.statement]
    result = await mem.retrieve("peanuts allergy", "u", at_time=day(2025, 6))
    assert all(i.knowledge.id != peanuts.id for i in result.items)
    # control: a supersession keeps the old fact's period readable
    sap = await mem.add_knowledge("u", "User works at SAP", actor="s", valid_at=day(2020))
    c2 = await mem.queue_candidate("u", "User works at Bosch", kind="update", supersedes_id=sap.id, valid_at=day(2025))
    await mem.review.confirm_supersession(c2, "ben")
    assert "User works at SAP" in [k.statement for k in await mem.knowledge("u", at_time=day(2024))]


# -- 8. undo by the rules of deciding ----------------------------------------------------------------


async def test_a_chain_unwinds_in_reverse_order(mem: Memory) -> None:
    c183 = await mem.queue_candidate("u", "User lives in Salford")
    salford = await mem.review.approve(c183, "ben")
    c225 = await mem.queue_candidate("u", "User lives in Bolton")
    assert (await mem.review.get(c225)).supersedes_id == salford.id
    await mem.review.confirm_supersession(c225, "ben")
    before = await snapshot(mem)
    with pytest.raises(UndoRefusedError):
        await mem.review.undo(c183, "ben")  # out of order: the later decision still stands
    assert await snapshot(mem) == before
    await mem.review.undo(c225, "ben")
    assert await active(mem, "u") == ["User lives in Salford"]
    await mem.review.undo(c183, "ben")
    assert await active(mem, "u") == []
    assert (await mem.review.get(c183)).status == "pending"
    # the later candidate now waits on the earlier one, as a chain made in the queue would
    waiting = await mem.review.get(c225)
    assert (waiting.supersedes_id, waiting.supersedes_candidate_id) == (None, c183)
    await mem.review.approve(c183, "ben")
    bolton = await mem.review.confirm_supersession(c225, "ben")
    assert await active(mem, "u") == [bolton.statement]


async def test_the_flagger_cannot_undo_another_reviewers_decision(mem: Memory) -> None:
    cid = await mem.queue_candidate("u", "User keeps bees")
    await mem.team.flag(cid, "ana", "not sure")
    await mem.review.approve(cid, "ben")
    before = await snapshot(mem)
    with pytest.raises(SecondOpinionError):
        await mem.review.undo(cid, "ana")
    assert await snapshot(mem) == before
    await mem.review.undo(cid, "ben")  # control: the decider may
    assert (await mem.review.get(cid)).status == "pending"


async def test_while_a_user_is_assigned_only_the_assignee_may_undo(mem: Memory) -> None:
    cid = await mem.queue_candidate("u", "User keeps bees")
    await mem.review.approve(cid, "ben")
    await mem.team.take_user("u", "cara")
    before = await snapshot(mem)
    with pytest.raises(AssignedError):
        await mem.review.undo(cid, "ben")
    assert await snapshot(mem) == before
    await mem.review.undo(cid, "cara")  # control
    assert await active(mem, "u") == []


# -- 11. one stated-at rule ------------------------------------------------------------------------------


async def test_review_and_pipeline_read_the_same_stated_at(new_target: Callable[[str], str]) -> None:
    clock = Clock(day(2026, 1, 5))
    async with Memory(new_target("said"), extractor=ScriptedExtractor(), clock=clock) as mem:
        await mem.add_exchange("u", "FACT: User lives in Lisbon", "Nice.", at=day(2026, 1, 5))
        clock.now = day(2026, 1, 6)
        await mem.process("u")
        [first] = await mem.review.pending("u")
        lisbon = await mem.review.approve(first.id, "ben")
        near = datetime(2026, 5, 1, 9, tzinfo=UTC)
        said = near + timedelta(minutes=5)
        # the first message is close to the evidence (over the threshold), the second holds it
        # exactly: the one rule takes the message that holds it (engine.stated), not the first close one
        await mem.add_exchange("u", "maybe User lives in Port soon", "Hm?", at=near)
        await mem.add_exchange("u", "FACT: User lives in Porto", "Big move!", at=said)
        clock.now = day(2026, 5, 9)
        await mem.process("u")
        [porto_cand] = await mem.review.pending("u")
        if porto_cand.supersedes_id is None:  # the extractor called it new: the reviewer links it
            await mem.review.retarget(porto_cand.id, "ben", lisbon.id)
        porto = await mem.review.confirm_supersession(porto_cand.id, "ben")
        assert porto.valid_at == said
        assert (await mem.get_knowledge("u", lisbon.id)).invalid_at == said

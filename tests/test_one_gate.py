"""Issue 17's numbered failures, one test each, on both backends, each the scenario the issue reports
against 39e3e71 (before engine/gate.py), now passing. The invariants themselves are checked over random
sequences in tests/test_gate_model.py and under concurrency in tests/test_gate_concurrency.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from engine import (
    AssignedError,
    DecisionRequiredError,
    DuplicateFactError,
    Memory,
    MemoryConfig,
    SecondOpinionError,
    SettleRequiredError,
    TombstonedError,
    UserInputError,
)
from engine.models import Episode, Extraction, GapItem, Knowledge, Message
from engine.stated import stated_at
from tests.engine_helpers import Clock, open_memory, snapshot

U = "ana"


def day(y: int, m: int = 1, d: int = 1) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


# -- 2. a tombstoned value never comes back --------------------------------------------------------


async def test_an_edited_approval_cannot_bring_back_a_rejected_value(store_target: str) -> None:
    async with open_memory(store_target) as mem:
        peanuts = await mem.queue_candidate(U, "User is allergic to peanuts")
        stone = await mem.review.reject(peanuts, "ben", reason="misheard")
        assert stone is not None
        other = await mem.queue_candidate(U, "User is allergic to shellfish")
        before = await snapshot(mem)
        with pytest.raises(TombstonedError, match=f"tombstone {stone.id}"):
            await mem.review.approve(other, "ben", statement="User is allergic to peanuts")
        assert await snapshot(mem) == before
        # positive control: the reviewer who means it lifts the tombstone in the same decision
        fact = await mem.review.approve(other, "ben", statement="User is allergic to peanuts", lift_tombstone=True)
        assert fact.status == "active" and await mem.tombstones(U) == []
        lifts = [e for e in await mem.history(U) if e.action == "lift"]
        assert [(e.entity_id, e.actor) for e in lifts] == [(stone.id, "ben")]


async def test_a_correction_cannot_bring_back_a_rejected_value(store_target: str) -> None:
    async with open_memory(store_target) as mem:
        stone = await mem.review.reject(await mem.queue_candidate(U, "User is allergic to peanuts"), "b", reason="x")
        assert stone is not None
        fact = await mem.add_knowledge(U, "User is allergic to shellfish", actor="support")
        with pytest.raises(TombstonedError):
            await mem.correct(U, fact.id, "User is allergic to peanuts", actor="support", reason="typo")
        assert (await mem.get_knowledge(U, fact.id)).status == "active"
        fixed = await mem.correct(U, fact.id, "User is allergic to pecans", actor="support", reason="typo")
        assert fixed.status == "active"  # positive control


async def test_a_proposal_queued_before_its_value_was_tombstoned_is_not_approved(store_target: str) -> None:
    async with open_memory(store_target) as mem:
        jazz = await mem.propose(U, "User likes jazz", actor="agent")
        assert jazz.candidate_id is not None
        fact = await mem.add_knowledge(U, "User likes jazz", actor="support")  # the pending one is not active
        await mem.retract(U, fact.id, actor="support", reason="she never did", tombstone=True)
        with pytest.raises(TombstonedError):
            await mem.review.approve(jazz.candidate_id, "ben")
        result = await mem.review.bulk_approve([jazz.candidate_id], "ben")
        assert result.approved == [] and "already rejected" in result.skipped[0][1]
        assert (await mem.review.get(jazz.candidate_id)).status == "pending"


async def test_a_tombstone_is_refused_over_a_value_an_active_fact_holds(store_target: str) -> None:
    async with open_memory(store_target) as mem:
        cid = await mem.queue_candidate(U, "User likes tea")
        await mem.add_knowledge(U, "User likes tea", actor="support")
        with pytest.raises(UserInputError, match="retract that fact"):
            await mem.review.reject(cid, "ben", reason="dup")
        # positive control: without a tombstone the rejection is fine
        assert await mem.review.reject(cid, "ben", reason="dup", tombstone=False) is None


# -- 3. never two active facts with one value -------------------------------------------------------


async def test_no_path_makes_a_second_active_fact_with_one_value(store_target: str) -> None:
    async with open_memory(store_target) as mem:
        tea = await mem.add_knowledge(U, "User likes green tea", actor="support")
        cid = await mem.queue_candidate(U, "User likes black coffee")
        with pytest.raises(DuplicateFactError, match=f"fact {tea.id}"):
            await mem.review.approve(cid, "ben", statement="user likes green tea.")
        with pytest.raises(DuplicateFactError):
            await mem.add_knowledge(U, "User likes green tea", actor="support")
        lisbon = await mem.add_knowledge(U, "User lives in Lisbon", actor="support")
        porto = await mem.queue_candidate(U, "User lives in Porto")
        assert (await mem.review.get(porto)).supersedes_id == lisbon.id
        with pytest.raises(DuplicateFactError):
            await mem.review.keep_both(porto, "ben", statement="User lives in Lisbon")
        # approving a pending value after the same fact was added directly
        jazz = await mem.propose(U, "User likes jazz", actor="agent")
        await mem.add_knowledge(U, "User likes jazz", actor="support")
        assert jazz.candidate_id is not None
        with pytest.raises(DuplicateFactError):
            await mem.review.approve(jazz.candidate_id, "ben")
        # the batch form skips and reports
        added = await mem.add_knowledge_many(U, ["User likes jazz", "User likes chess", "user likes chess"], "imp")
        assert [k.statement for k in added] == ["User likes chess"]
        assert [i for i, _ in added.skipped] == [0, 2]
        assert await mem.review.approve(cid, "ben")  # positive control: a new value is approved


# -- 4. an agent's statement about a known thing is a replacement -----------------------------------


async def test_an_agents_porto_beside_an_active_lisbon_asks_the_question(store_target: str) -> None:
    async with open_memory(store_target) as mem:
        lisbon = await mem.add_knowledge(U, "User lives in Lisbon", actor="support")
        porto = await mem.propose(U, "User lives in Porto", actor="agent")
        assert porto.candidate_id is not None
        cand = await mem.review.get(porto.candidate_id)
        assert cand.supersedes_id == lisbon.id
        with pytest.raises(DecisionRequiredError):
            await mem.review.approve(cand.id, "ben")
        skipped = await mem.review.bulk_approve([cand.id], "ben")
        assert skipped.approved == [] and "supersede or keep both" in skipped.skipped[0][1]
        await mem.review.confirm_supersession(cand.id, "ben")
        assert [k.statement for k in await mem.knowledge(U)] == ["User lives in Porto"]
        # a fact added directly asks it too
        with pytest.raises(SettleRequiredError, match="User lives in Porto"):
            await mem.add_knowledge(U, "User lives in Faro", actor="support")
        await mem.add_knowledge(U, "User lives in Faro", actor="support", settle="supersede")
        assert [k.statement for k in await mem.knowledge(U)] == ["User lives in Faro"]


# -- 5. corrections stick --------------------------------------------------------------------------


def mention(text: str) -> object:
    class Repeats:
        name, model, prompt_version = "scripted", None, None

        async def extract(self, episode: Episode, existing: list[Knowledge]) -> Extraction:
            return Extraction("", [GapItem(text, evidence=episode.messages[0].content)])

    return Repeats()


async def test_a_corrected_away_value_comes_back_as_a_contradiction(store_target: str) -> None:
    clock = Clock()
    async with Memory(store_target, clock=clock, extractor=mention("User is allergic to penicillin")) as mem:
        old = await mem.add_knowledge(U, "User is allergic to penicillin", actor="support")
        new = await mem.correct(U, old.id, "User is allergic to amoxicillin", actor="support", reason="misheard")
        clock.advance(days=1)
        await mem.add_exchange(U, "I'm allergic to penicillin, remember", "ok", at=clock.now)
        await mem.process(U)
        [cand] = await mem.review.pending(U)
        assert (cand.kind, cand.supersedes_id) == ("contradiction", new.id)
        proposal = await mem.propose("bo", "User is allergic to penicillin", actor="agent")  # control: no history
        assert (await mem.review.get(proposal.candidate_id or 0)).supersedes_id is None
        # a support agent who is sure tombstones the old value as they correct it
        sure = await mem.add_knowledge("cy", "User is allergic to penicillin", actor="support")
        await mem.correct("cy", sure.id, "User is allergic to amoxicillin", "support", "sure", tombstone=True)
        with pytest.raises(TombstonedError):
            await mem.propose("cy", "User is allergic to penicillin", actor="agent")


# -- 6 and 7. valid time of a manual supersession; "it was never true" -------------------------------


async def test_a_supersession_with_no_start_ends_the_old_fact_when_the_new_one_was_stated(store_target: str) -> None:
    clock = Clock(day(2026, 2, 3))
    async with open_memory(store_target, clock) as mem:
        ania = await mem.add_knowledge(U, "User's girlfriend is named Ania", actor="s", valid_at=day(2025))
        clock.advance(days=1)
        split = await mem.add_knowledge(U, "User broke up with Ania", actor="s")
        ended = await mem.supersede(U, ania.id, split.id, actor="s", reason="they split")
        assert ended.invalid_at == split.created_at
        later = await mem.knowledge(U, at_time=day(2027))
        assert [k.id for k in later] == [split.id]
        assert ania.id in [k.id for k in await mem.knowledge(U, at_time=day(2025, 6))]  # its own period
        # a start the curator gives wins
        other = await mem.add_knowledge("bo", "User's girlfriend is named Ola", actor="s", valid_at=day(2024))
        gone = await mem.add_knowledge("bo", "User broke up with Ola", actor="s")
        closed = await mem.supersede("bo", other.id, gone.id, actor="s", reason="x", start=day(2025, 5))
        assert closed.invalid_at == day(2025, 5)


async def test_confirm_correction_says_the_old_fact_was_never_true(store_target: str) -> None:
    clock = Clock(day(2026, 2, 3))
    async with open_memory(store_target, clock) as mem:
        peanuts = await mem.add_knowledge(U, "User is allergic to peanuts", actor="s", valid_at=day(2025))
        cid = await mem.queue_candidate(
            U, "User is not allergic to peanuts", kind="contradiction", supersedes_id=peanuts.id
        )
        await mem.review.confirm_correction(cid, "ben", reason="it was a misdiagnosis")
        old = await mem.get_knowledge(U, peanuts.id)
        assert (old.status, old.end_reason, old.invalid_at) == ("superseded", "corrected", None)
        assert "User is allergic to peanuts" not in [k.statement for k in await mem.knowledge(U, at_time=day(2025, 6))]
        # control: a confirmed supersession leaves the old fact readable for its period
        p2 = await mem.add_knowledge("bo", "User is allergic to peanuts", actor="s", valid_at=day(2025))
        c2 = await mem.queue_candidate(
            "bo", "User is not allergic to peanuts", kind="contradiction", supersedes_id=p2.id
        )
        await mem.review.confirm_supersession(c2, "ben", valid_at=day(2026))
        assert "User is allergic to peanuts" in [k.statement for k in await mem.knowledge("bo", at_time=day(2025, 6))]


# -- 8. undo by the rules of deciding ----------------------------------------------------------------


async def test_a_chain_unwinds_in_reverse_order(store_target: str) -> None:
    async with open_memory(store_target) as mem:
        salford = await mem.queue_candidate(U, "User lives in Salford")
        bolton = await mem.queue_candidate(U, "User lives in Bolton", kind="update", supersedes_candidate_id=salford)
        await mem.review.approve(salford, "ben")
        await mem.review.confirm_supersession(bolton, "ben")
        before = await snapshot(mem)
        await mem.review.undo(bolton, "ben")
        await mem.review.undo(salford, "ben")  # refused before: "candidate 225 was changed after it"
        assert await mem.knowledge(U) == []
        assert {c.id for c in await mem.review.pending(U)} == {salford, bolton}
        assert (await mem.review.get(bolton)).supersedes_candidate_id == salford
        assert before != await snapshot(mem)


async def test_undo_follows_flags_and_assignments(store_target: str) -> None:
    async with open_memory(store_target, config=MemoryConfig(second_review_rate=0.0)) as mem:
        cid = await mem.queue_candidate(U, "User keeps bees")
        await mem.team.flag(cid, "ana", "is this right?")
        await mem.review.approve(cid, "ben")
        with pytest.raises(SecondOpinionError):
            await mem.review.undo(cid, "ana")
        await mem.review.undo(cid, "ben")  # control: the reviewer who decided may
        other = await mem.queue_candidate("bo", "User sails")
        await mem.team.take_user("bo", "cy")
        await mem.review.approve(other, "cy")
        with pytest.raises(AssignedError):
            await mem.review.undo(other, "ben")
        await mem.review.undo(other, "cy")  # control: the assignee may


# -- 11. one stated-at rule ------------------------------------------------------------------------


def test_the_stated_at_rule_takes_the_exact_quote_over_an_earlier_near_match() -> None:
    t0 = day(2026, 3)
    said = [
        Message("user", "I live in Porto, more or less, kind of", t0),
        Message("assistant", "ok", t0 + timedelta(minutes=1)),
        Message("user", "I live in Porto now", t0 + timedelta(minutes=2)),
    ]
    assert stated_at("I live in Porto now", said, 80.0) == (t0 + timedelta(minutes=2), True)
    assert stated_at("nothing like it", said, 80.0) == (t0 + timedelta(minutes=2), False)
    assert stated_at("", [], 80.0) == (None, False)

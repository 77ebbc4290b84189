"""engine/team.py: progress, per-reviewer figures, second opinions, sampled second review and
assignment. Every refusal is checked against the whole database (nothing changed) and paired with
the positive control that the same call by the right reviewer works."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from engine import Memory, MemoryConfig, QueueFilter
from engine.erase import erase_user
from engine.errors import (
    AlreadyDecidedError,
    AssignedError,
    ClaimedError,
    SecondOpinionError,
    UndoRefusedError,
    UserInputError,
)
from engine.storage.sqlite.schema import SCHEMA_VERSION
from engine.team import sample_point, sampled
from tests.engine_helpers import Clock, audit_rows_since, last_audit_id, open_memory, snapshot, sql, sqlite_only


async def queue(mem: Memory, user: str, *statements: str) -> list[int]:
    return [await mem.queue_candidate(user, s) for s in statements]


async def table_rows(mem: Memory, query: str) -> list[tuple[object, ...]]:
    async with sql(mem) as conn:
        return [tuple(r) for r in await (await conn.execute(query)).fetchall()]


# -- schema -------------------------------------------------------------------------------------------


@sqlite_only("reads sqlite_master and PRAGMA user_version (PostgreSQL's migrations: test_postgres_store)")
async def test_a_new_database_has_the_team_tables(new_target: Callable[[str], str]) -> None:
    async with open_memory(new_target("m")) as mem:
        names = {r[0] for r in await table_rows(mem, "SELECT name FROM sqlite_master WHERE type = 'table'")}
        version = (await table_rows(mem, "PRAGMA user_version"))[0][0]
    assert {"flags", "second_reviews", "assignments"} <= names
    assert version == SCHEMA_VERSION


# -- progress -----------------------------------------------------------------------------------------


async def test_progress_counts_done_and_remaining_for_the_filter_and_the_reviewers_pace(
    new_target: Callable[[str], str],
) -> None:
    clock = Clock()
    async with open_memory(new_target("m"), clock) as mem:
        a = await queue(mem, "u1", "User likes tea", "User has a cat", "User rides a bike", "User reads")
        b = await queue(mem, "u2", "User likes jazz")
        clock.advance(minutes=1)
        await mem.review.approve(a[0], "ana")
        clock.advance(seconds=30)
        await mem.review.reject(a[1], "ana", "not true")
        clock.advance(seconds=90)
        await mem.review.approve(a[2], "ana")
        clock.advance(hours=2)  # a break: not a decision time
        await mem.review.approve(b[0], "ana")
        clock.advance(seconds=60)

        every = await mem.team.progress("ana")
        assert (every.done, every.remaining, every.total) == (4, 1, 5)
        assert every.reviewer_decisions == 4
        assert every.seconds_per_decision == 60.0  # median of 30 s and 90 s; the 2 h gap is a break
        assert every.per_hour == 60.0
        assert every.eta_seconds == 60.0

        only_u1 = await mem.team.progress("ana", filter=QueueFilter(user_id="u1"))
        assert (only_u1.done, only_u1.remaining) == (3, 1)
        assert (await mem.team.progress("ana", filter=QueueFilter(kind="update"))).total == 0

        # undo puts the candidate back: pending again, never counted twice
        await mem.review.undo(b[0], "ana")
        again = await mem.team.progress("ana")
        assert (again.done, again.remaining) == (3, 2)

        # bob has not decided anything: no pace, no estimate (but the same done/remaining)
        bob = await mem.team.progress("bob")
        assert (bob.done, bob.remaining, bob.seconds_per_decision, bob.eta_seconds) == (3, 2, None, None)

        # the window: decisions before `since` are not "done" in it
        later = await mem.team.progress("ana", since=clock.now)
        assert (later.done, later.remaining) == (0, 2)
        with pytest.raises(UserInputError, match="unknown kind 'colour'"):
            await mem.team.progress("ana", filter=QueueFilter(kind="colour"))  # type: ignore[arg-type]


async def test_progress_defaults_to_the_current_utc_day(new_target: Callable[[str], str]) -> None:
    clock = Clock()
    async with open_memory(new_target("m"), clock) as mem:
        [c1, c2] = await queue(mem, "u1", "User likes tea", "User has a cat")
        await mem.review.approve(c1, "ana")
        clock.advance(days=1)
        await mem.review.approve(c2, "ana")
        today = await mem.team.progress("ana")
    assert (today.done, today.remaining, today.total) == (1, 0, 1)
    assert today.eta_seconds == 0.0


# -- second opinions ----------------------------------------------------------------------------------


async def test_the_flagger_cannot_decide_a_flagged_candidate_but_another_reviewer_can(
    new_target: Callable[[str], str],
) -> None:
    clock = Clock()
    async with open_memory(new_target("m"), clock) as mem:
        [cid] = await queue(mem, "u1", "User is a pilot")
        await mem.review.claim(cid, "ana")
        mark = await last_audit_id(mem)
        flag = await mem.team.flag(cid, "ana", "  not sure: the evidence is a joke?  ", lean="reject")
        assert (flag.flagged_by, flag.note, flag.lean) == ("ana", "not sure: the evidence is a joke?", "reject")
        cand = await mem.review.get(cid)
        assert (cand.flagged_by, cand.claimed_by) == ("ana", None)  # the flagger's lease is released
        [audit] = await audit_rows_since(mem, mark)
        assert audit[1:6] == ("ana", "flag", "u1", "candidate", cid)
        assert audit[8] == "not sure: the evidence is a joke?"

        before = await snapshot(mem)
        with pytest.raises(SecondOpinionError, match="another reviewer must decide it"):
            await mem.review.approve(cid, "ana")
        with pytest.raises(SecondOpinionError):
            await mem.review.reject(cid, "ana", "wrong")
        with pytest.raises(SecondOpinionError):
            await mem.review.claim(cid, "ana")
        bulk = await mem.review.bulk_approve([cid], "ana")
        assert bulk.approved == [] and [c for c, _ in bulk.skipped] == [cid]
        assert "second opinion" in bulk.skipped[0][1]
        assert await snapshot(mem) == before

        # positive control: another reviewer decides it
        fact = await mem.review.approve(cid, "bob")
        assert fact.statement == "User is a pilot"
        assert (await mem.review.get(cid)).decided_by == "bob"
        # the comparison: ana leaned reject, bob approved
        figures = await mem.team.figures()
        [comp] = figures.comparisons
        assert (comp.source, comp.first, comp.first_said, comp.second, comp.second_said) == (
            "second_opinion",
            "ana",
            "reject",
            "bob",
            "approve",
        )
        assert figures.agreement == 0.0


async def test_flag_refusals_change_nothing(new_target: Callable[[str], str]) -> None:
    clock = Clock()
    async with open_memory(new_target("m"), clock) as mem:
        [cid, other, done] = await queue(mem, "u1", "User is a pilot", "User is tall", "User is kind")
        await mem.review.approve(done, "ana")
        await mem.team.flag(cid, "ana")
        await mem.review.claim(other, "bob")
        before = await snapshot(mem)
        flags_before = await table_rows(mem, "SELECT * FROM flags")
        with pytest.raises(UserInputError, match="already flagged"):
            await mem.team.flag(cid, "bob")
        with pytest.raises(AlreadyDecidedError):
            await mem.team.flag(done, "bob")
        with pytest.raises(ClaimedError):
            await mem.team.flag(other, "ana")
        with pytest.raises(UserInputError, match="lean"):
            await mem.team.flag(other, "bob", lean="maybe")
        with pytest.raises(UserInputError, match="max_reason_chars"):
            await mem.team.flag(other, "bob", "x" * 1001)
        with pytest.raises(UserInputError, match="only ana"):
            await mem.team.withdraw_flag(cid, "bob")
        assert await snapshot(mem) == before
        assert await table_rows(mem, "SELECT * FROM flags") == flags_before
        # positive controls: the holder may flag; the flagger may withdraw and then decide
        assert (await mem.team.flag(other, "bob", lean="approve")).lean == "approve"
        withdrawn = await mem.team.withdraw_flag(cid, "ana")
        assert withdrawn.withdrawn_by == "ana"
        assert (await mem.review.get(cid)).flagged_by is None
        await mem.review.approve(cid, "ana")
        assert [f.candidate_id for f in await mem.team.flags()] == [other]


# -- second review ------------------------------------------------------------------------------------


def test_the_sample_is_a_pure_function_of_the_id() -> None:
    points = [sample_point(i) for i in range(1, 2001)]
    assert all(0.0 <= p < 1.0 for p in points)
    share = sum(p < 0.1 for p in points) / len(points)
    assert 0.08 < share < 0.12  # close to the rate over consecutive ids
    assert [sampled(i, 0.1) for i in range(1, 50)] == [sampled(i, 0.1) for i in range(1, 50)]
    assert not any(sampled(i, 0.0) for i in range(1, 200))
    assert all(sampled(i, 1.0) for i in range(1, 200))


async def test_sampled_approvals_go_blind_to_another_reviewer(new_target: Callable[[str], str]) -> None:
    clock = Clock()
    config = MemoryConfig(second_review_rate=0.5)
    async with open_memory(new_target("m"), clock, config=config) as mem:
        ids = await queue(mem, "u1", *[f"User owns {n} boats" for n in range(1, 41)])
        for cid in ids:
            clock.advance(seconds=20)
            await mem.review.approve(cid, "ana")
        async with mem.ctx.store.reading() as tx:  # each approval's secret draw, stored with it
            in_sample = [cid for cid in ids if await tx.policy_sampled(cid, "ana")]
        assert 0 < len(in_sample) < len(ids)  # the draw splits 40 both ways (all one way: 2 in 2**40)

        # the queue is the stored draws; the approver never sees their own
        assert [b.candidate_id for b in await mem.team.second_review_queue("bob")] == in_sample
        assert await mem.team.second_review_count("bob") == len(in_sample)
        assert await mem.team.second_review_queue("ana") == []
        with pytest.raises(UserInputError, match="another reviewer"):
            await mem.team.blind_review(in_sample[0], "ana")
        out_of_sample = next(cid for cid in ids if cid not in in_sample)
        with pytest.raises(UserInputError, match="not in the second-review sample"):
            await mem.team.second_review(out_of_sample, "bob", approve=True)

        blind = await mem.team.blind_review(in_sample[0], "bob")
        assert blind.statement == (await mem.review.get(in_sample[0])).statement
        for hidden in ("decided_by", "decision", "reason", "decided_at"):
            assert not hasattr(blind, hidden)

        agree = await mem.team.second_review(in_sample[0], "bob", approve=True, note="checked the source")
        assert (agree.verdict, agree.first_reviewer, agree.first_decision) == ("agree", "ana", "approve")
        with pytest.raises(AlreadyDecidedError):
            await mem.team.second_review(in_sample[0], "cy", approve=True)

        target = await mem.review.get(in_sample[1])
        before = await snapshot(mem)
        with pytest.raises(UserInputError, match="needs a reason"):
            await mem.team.second_review(in_sample[1], "bob", approve=False)
        assert await snapshot(mem) == before

        mark = await last_audit_id(mem)
        overturn = await mem.team.second_review(in_sample[1], "bob", approve=False, reason="they own a kayak")
        assert overturn.verdict == "overturn"
        fact = await mem.get_knowledge("u1", target.knowledge_id)  # type: ignore[arg-type]
        assert (fact.status, fact.end_reason) == ("retracted", "overturned on second review: they own a kayak")
        assert await mem.is_tombstoned("u1", target.statement) is not None
        actions = [(r[2], r[4]) for r in await audit_rows_since(mem, mark)]
        assert actions == [("second_review", "knowledge"), ("retract", "knowledge"), ("create", "tombstone")]
        assert await mem.team.second_review_count("bob") == len(in_sample) - 2

        # the checked approvals can no longer be undone: a later row names their fact
        with pytest.raises(UndoRefusedError):
            await mem.review.undo(in_sample[0], "ana")
        figures = await mem.team.figures()
        assert figures.agreement == 0.5
        by = {f.reviewer: f for f in figures.reviewers}
        assert (by["ana"].compared, by["ana"].agreed, by["bob"].second_reviews_done) == (2, 1, 2)


async def test_a_disagreement_on_a_fact_that_already_ended_is_recorded_without_a_retraction(
    new_target: Callable[[str], str],
) -> None:
    async with open_memory(new_target("m"), config=MemoryConfig(second_review_rate=1.0)) as mem:
        [cid] = await queue(mem, "u1", "User lives in Oslo")
        fact = await mem.review.approve(cid, "ana")
        # the queue offers active facts only; a fact retracted after listing is "disagree"
        assert [b.candidate_id for b in await mem.team.second_review_queue("bob")] == [cid]
        await mem.retract("u1", fact.id, actor="cy", reason="moved away")
        assert await mem.team.second_review_queue("bob") == []
        record = await mem.team.second_review(cid, "bob", approve=False, reason="was never in Oslo")
        assert record.verdict == "disagree"
        assert (await mem.get_knowledge("u1", fact.id)).end_reason == "moved away"


# -- assignment ---------------------------------------------------------------------------------------


async def test_taking_a_users_items_makes_them_mine_and_refuses_the_others(new_target: Callable[[str], str]) -> None:
    clock = Clock()
    async with open_memory(new_target("m"), clock) as mem:
        [a1, a2] = await queue(mem, "u1", "User likes tea", "User has a cat")
        [b1] = await queue(mem, "u2", "User likes jazz")
        taken = await mem.team.take_user("u1", "bob")
        assert (taken.user_id, taken.reviewer) == ("u1", "bob")
        mine = QueueFilter(assigned_to="bob")
        assert [c.id for c in await mem.review.pending(filter=mine)] == [a1, a2]
        assert await mem.review.count(filter=mine) == 2
        assert (await mem.team.progress("bob", filter=mine)).remaining == 2

        before = await snapshot(mem)
        with pytest.raises(AssignedError, match="bob has taken"):
            await mem.review.approve(a1, "ana")
        with pytest.raises(AssignedError):
            await mem.review.claim(a1, "ana")
        with pytest.raises(UserInputError, match="taken by bob"):
            await mem.team.take_user("u1", "ana")
        with pytest.raises(UserInputError, match="taken by bob"):
            await mem.team.release_user("u1", "ana")
        assert await snapshot(mem) == before

        # positive controls: bob decides his, ana decides the others
        await mem.review.approve(a1, "bob")
        await mem.review.approve(b1, "ana")
        # a candidate queued later belongs to the assignee too
        [a3] = await queue(mem, "u1", "User sings")
        assert (await mem.review.get(a3)).assigned_to == "bob"
        # bob asks for a second opinion on one of his: the flag outranks the assignment
        await mem.team.flag(a2, "bob")
        await mem.review.approve(a2, "ana")

        over = await mem.team.take_user("u1", "ana", force=True)
        assert over.reviewer == "ana"
        await mem.review.approve(a3, "ana")
        released = await mem.team.release_user("u1", "ana")
        assert released.reviewer == "ana"
        assert await mem.team.assignments() == []
        actions = [
            r[0] for r in await table_rows(mem, "SELECT action FROM audit_log WHERE entity = 'assignment' ORDER BY id")
        ]
        assert actions == ["assign", "assign", "unassign"]


# -- figures ------------------------------------------------------------------------------------------


async def test_reviewer_figures_per_reviewer_and_per_day(new_target: Callable[[str], str]) -> None:
    clock = Clock()
    async with open_memory(new_target("m"), clock) as mem:
        ids = await queue(mem, "u1", *[f"User knows {n} languages" for n in range(1, 8)])
        await mem.review.approve(ids[0], "ana")
        clock.advance(seconds=40)
        await mem.review.reject(ids[1], "ana", "no")
        clock.advance(seconds=20)
        await mem.review.approve(ids[2], "ana")
        clock.advance(seconds=5)
        await mem.review.approve(ids[3], "bob")
        await mem.team.flag(ids[4], "bob", "ask ana")
        clock.advance(days=1)
        await mem.review.approve(ids[5], "bob")
        clock.advance(seconds=10)
        await mem.review.undo(ids[5], "bob")

        figures = await mem.team.figures()
        by = {f.reviewer: f for f in figures.reviewers}
        assert [f.reviewer for f in figures.reviewers] == ["ana", "bob"]
        ana, bob = by["ana"], by["bob"]
        assert (ana.decisions, ana.approved, ana.rejected, ana.approval_rate) == (3, 2, 1, 2 / 3)
        assert ana.seconds_per_decision == 30.0  # median of 40 s and 20 s
        assert (bob.decisions, bob.undone, bob.flags_raised, bob.seconds_per_decision) == (2, 1, 1, None)
        days = [(d.day.isoformat(), d.reviewer, d.decisions, d.approved, d.rejected) for d in figures.daily]
        assert days == [("2026-03-02", "bob", 1, 1, 0), ("2026-03-01", "ana", 3, 2, 1), ("2026-03-01", "bob", 1, 1, 0)]
        one_day = await mem.team.figures(since=clock.now - timedelta(hours=1))
        assert [(f.reviewer, f.decisions) for f in one_day.reviewers] == [("bob", 1)]
        assert (await mem.team.figures(user_id="nobody")).reviewers == []


async def test_erasing_a_user_removes_their_team_rows(new_target: Callable[[str], str]) -> None:
    async with open_memory(new_target("m"), config=MemoryConfig(second_review_rate=1.0)) as mem:
        [c1, c2] = await queue(mem, "u1", "User likes tea", "User has a cat")
        await mem.review.approve(c1, "ana")
        await mem.team.second_review(c1, "bob", approve=True)
        await mem.team.flag(c2, "ana", "private note about the user")
        await mem.team.take_user("u1", "cy")
        await erase_user(mem, "u1", "dpo")
        for table in ("flags", "second_reviews", "assignments"):
            assert await table_rows(mem, f"SELECT * FROM {table}") == []

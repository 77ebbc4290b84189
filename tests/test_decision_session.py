"""The DecisionSession on its own, with no Textual app: the in-flight slot, the undo stack, and
engine refusals turned into messages (review_app/decision_session.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from engine.errors import (
    AlreadyDecidedError,
    ClaimedError,
    DecisionRequiredError,
    StaleSupersessionError,
    TombstonedError,
    UndoRefusedError,
)
from review_app.decision_session import DecisionSession, Outcome


class FakeReview:
    """Records undo calls; refuses the ids in `refuse`."""

    def __init__(self, refuse: Sequence[int] = ()) -> None:
        self.undone: list[int] = []
        self.refuse = set(refuse)

    async def undo(self, candidate_id: int, reviewer: str) -> object:
        if candidate_id in self.refuse:
            raise UndoRefusedError(f"Candidate {candidate_id} cannot be undone: a later change depends on it")
        self.undone.append(candidate_id)
        return None


def session(refuse: Sequence[int] = ()) -> tuple[DecisionSession, FakeReview, set[int]]:
    review = FakeReview(refuse)
    claimed = {1, 2, 3}
    return DecisionSession(review, "ana", claimed), review, claimed


async def test_a_second_change_is_refused_while_one_is_in_flight_and_accepted_after() -> None:
    s, _, claimed = session()
    gate = asyncio.Event()
    calls: list[int] = []

    async def slow() -> None:
        calls.append(1)
        await gate.wait()

    first = s.decide(1, slow)
    assert first is not None and s.busy
    task = asyncio.ensure_future(first)
    await asyncio.sleep(0)
    # every kind of change is refused while the first runs: nothing is started
    assert s.decide(2, slow) is None
    assert s.change(2, slow, "retargeted") is None
    assert s.undo() is None

    async def many(ids: Sequence[int]) -> tuple[list[int], list[str]]:
        return list(ids), []

    assert s.decide_many([2, 3], many, "Approved") is None
    gate.set()
    outcome = await task
    assert outcome.done == [1] and not s.busy and calls == [1]
    assert 1 not in claimed  # a decision ends its lease
    # positive control: once it is saved, the next decision runs
    second = s.decide(2, slow)
    assert second is not None
    assert (await second).done == [2]
    assert s.undo_stack == [[1], [2]] and s.decided == 2


@pytest.mark.parametrize(
    ("error", "said", "elsewhere"),
    [
        (AlreadyDecidedError(5, "approved", "ben"), "Candidate 5 was already decided by ben.", True),
        (ClaimedError(5, "ben"), "Candidate 5 is being reviewed by ben.", False),
        (
            StaleSupersessionError("The fact it replaces changed meanwhile"),
            "changed meanwhile. Nothing was changed.",
            False,
        ),
        (DecisionRequiredError(5, "fact #2"), "or keep_both (keep both active). Nothing was changed.", False),
    ],
)
async def test_refusals_become_messages_and_record_nothing(error: Exception, said: str, elsewhere: bool) -> None:
    s, _, _ = session()

    async def refused() -> None:
        raise error

    work = s.decide(5, refused)
    assert work is not None
    outcome = await work
    assert said in (outcome.message or "") and outcome.severity == "warning"
    assert outcome.decided_elsewhere is elsewhere and not outcome.ok
    assert s.undo_stack == [] and s.decided == 0 and not s.busy


async def test_a_fault_propagates_and_frees_the_slot() -> None:
    s, _, _ = session()

    async def fault() -> None:
        raise TombstonedError(7, "User lives in Lisbon")

    work = s.decide(5, fault)
    assert work is not None
    with pytest.raises(TombstonedError):
        await work
    assert not s.busy and s.undo_stack == []


async def test_a_bulk_decision_is_one_undo_entry_undone_latest_first() -> None:
    s, review, claimed = session()

    async def each(ids: Sequence[int]) -> tuple[list[int], list[str]]:
        return [i for i in ids if i != 3], ["#3 already decided by ben"]

    work = s.decide_many([1, 2, 3], each, "Rejected")
    assert work is not None
    outcome = await work
    assert outcome.done == [1, 2] and outcome.severity == "warning"
    assert outcome.message == "Rejected 2 candidates; skipped 1: #3 already decided by ben."
    assert s.undo_stack == [[1, 2]] and s.decided == 2 and claimed == {3}
    undo = s.undo()
    assert undo is not None
    undone = await undo
    assert review.undone == [2, 1] and undone.done == [1, 2]
    assert undone.message == "Undid the 2 decisions of one bulk action."
    assert s.undo_stack == [] and s.decided == 0


async def test_a_refused_undo_keeps_what_was_not_undone() -> None:
    s, review, _ = session(refuse=[1])

    async def each(ids: Sequence[int]) -> tuple[list[int], list[str]]:
        return list(ids), []

    first = s.decide_many([1, 2], each, "Approved")
    assert first is not None
    await first
    undo = s.undo()
    assert undo is not None
    outcome = await undo
    assert review.undone == [2] and outcome.severity == "error" and outcome.title == "Undo refused"
    assert "(1 of the group were undone)" in (outcome.message or "")
    assert s.undo_stack == [[1]] and s.decided == 1
    # control: with nothing left to undo the session says so and calls nothing
    s.undo_stack.clear()
    again = s.undo()
    assert again is not None
    assert (await again) == Outcome(message="Nothing to undo in this session.")
    assert review.undone == [2]


async def test_a_change_that_is_not_a_decision_is_not_undoable() -> None:
    s, _, _ = session()

    async def retarget() -> None:
        return None

    work = s.change(4, retarget, "Candidate 4 replaces nothing now.")
    assert work is not None
    outcome = await work
    assert outcome.ok and outcome.message == "Candidate 4 replaces nothing now."
    assert s.undo_stack == [] and s.decided == 0

"""One `QueueFilter` (issue 21): the queue's page, its count, its mark and the team's progress
read the same filter through one SQL where-builder, so they agree on every filter; a filter that
could only match nothing by a typo is refused before it runs."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from engine import ANY_SPECIAL, Candidate, Memory, QueueFilter, UserInputError
from engine.queue_filter import CANDIDATE_KINDS


async def test_page_count_mark_and_progress_agree_on_every_filter(store_target: str) -> None:
    async with Memory(store_target) as mem:
        await mem.queue_candidate("ana", "User keeps three quokkas", confidence=0.9)
        await mem.queue_candidate("ana", "User has a criminal record", confidence=0.4)
        await mem.queue_candidate("bob", "User likes 100% rye bread", confidence=0.75)
        await mem.queue_candidate("bob", "User is a trade union member", confidence=None)
        await mem.propose("carl", "User plays the oboe", "agent:t")
        await mem.team.take_user("bob", "rev")
        every = await mem.review.pending(limit=100)
        assert len(every) == 5
        cases: list[tuple[QueueFilter, Callable[[Candidate], bool]]] = [
            (QueueFilter(), lambda c: True),
            (QueueFilter(user_id="ana"), lambda c: c.user_id == "ana"),
            (QueueFilter(kind="proposed"), lambda c: c.kind == "proposed"),
            (QueueFilter(min_confidence=0.5), lambda c: c.confidence is not None and c.confidence >= 0.5),
            (QueueFilter(max_confidence=0.8), lambda c: c.confidence is not None and c.confidence <= 0.8),
            (QueueFilter(category=ANY_SPECIAL), lambda c: c.category is not None),
            (QueueFilter(category="trade_union"), lambda c: c.category == "trade_union"),
            (QueueFilter(search="100%"), lambda c: "100%" in c.statement),  # % is matched literally
            (QueueFilter(search="bo"), lambda c: "bo" in c.statement or "bo" in c.user_id),
            (QueueFilter(assigned_to="rev"), lambda c: c.user_id == "bob"),
            (QueueFilter(user_id="bob", max_confidence=0.8), lambda c: c.user_id == "bob" and c.confidence == 0.75),
        ]
        for queue, keep in cases:
            expected = [c.id for c in every if keep(c)]
            assert [c.id for c in await mem.review.pending(limit=100, filter=queue)] == expected, queue
            assert await mem.review.count(filter=queue) == len(expected), queue
            mark = await mem.review.mark(filter=queue)
            assert (mark.count, mark.newest_id) == (len(expected), max(expected, default=0)), queue
            assert (await mem.team.progress("rev", filter=queue)).remaining == len(expected), queue
        # the user shorthand narrows a filter; on another user's filter it is refused, not emptied
        assert [c.user_id for c in await mem.review.pending("ana", filter=QueueFilter(max_confidence=0.5))] == ["ana"]
        assert await mem.review.count("ana", filter=QueueFilter(user_id="ana")) == 2
        with pytest.raises(UserInputError, match="filter is on user 'bob'"):
            await mem.review.count("ana", filter=QueueFilter(user_id="bob"))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"kind": "colour"}, "unknown kind"),
        ({"category": "hobbies"}, "unknown category"),
        ({"min_confidence": 1.5}, "between 0 and 1"),
        ({"min_confidence": 0.8, "max_confidence": 0.2}, "must not be above"),
    ],
)
def test_a_filter_that_cannot_match_by_a_typo_is_refused(fields: dict[str, object], message: str) -> None:
    with pytest.raises(UserInputError, match=message):
        QueueFilter(**fields)  # type: ignore[arg-type]


def test_every_kind_and_bound_that_can_match_is_accepted() -> None:
    """The positive control of the refusals above."""
    for kind in CANDIDATE_KINDS:
        assert QueueFilter(kind=kind).describe() == f"kind {kind}"
    assert QueueFilter(category=ANY_SPECIAL, min_confidence=0.2, max_confidence=0.2).active
    assert not QueueFilter().active

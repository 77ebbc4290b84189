"""The queue screen's Textual-free controllers on their own (issue 30): where the cursor goes
(review_app/queue_cursor.py), the leases' one owner (review_app/leases.py), and when the list is
read again (review_app/queue_watch.py). No app runs here; each rule is paired with its control."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from engine.errors import AlreadyDecidedError, ClaimedError
from engine.models import Candidate, QueueMark
from review_app.decision_session import DecisionSession
from review_app.leases import Leases
from review_app.queue_cursor import Gone, QueueCursor, after_bulk, bulk_plan, decided_text, gone_text, holders
from review_app.queue_watch import QueueWatcher

NOW = datetime(2026, 3, 10, 12, tzinfo=UTC)


def cand(cid: int, **changes: Any) -> Candidate:
    fields: dict[str, Any] = {
        "id": cid,
        "user_id": "u",
        "statement": f"s{cid}",
        "kind": "new",
        "status": "pending",
        "confidence": 0.9,
        "created_at": NOW,
    }
    fields.update(changes)
    return Candidate(**fields)


def page(*ids: int) -> list[Candidate]:
    return [cand(i) for i in ids]


# -- the cursor ------------------------------------------------------------------------------------


def test_a_reload_keeps_the_cursor_on_its_candidate_not_on_its_row_number() -> None:
    """Rows above the cursor left (decided elsewhere): the cursor follows its candidate (#5, now
    row 1). Control: with no candidate to follow (it left the filter), the row number is kept."""
    placed = QueueCursor().place(page(4, 5, 6), keep=5, previous_row=3, gone=None)
    assert placed.rows[placed.index].id == 5
    placed = QueueCursor().place(page(4, 6, 7, 8), keep=5, previous_row=2, gone=None)
    assert placed.index == 2


def test_a_row_decided_elsewhere_under_the_cursor_is_kept_where_it_was() -> None:
    """#3 was under the cursor and was decided elsewhere while #1 above also left: its row comes
    back after #2 (the row that was above it), marked, with the cursor on it. Control: no gone row,
    nothing is inserted."""
    gone = Gone(3, "Candidate 3 was rejected by cy meanwhile.", cand(3, status="rejected", decided_by="cy"))
    placed = QueueCursor().place(page(2, 4, 5), keep=3, previous_row=2, gone=gone, above=[1, 2])
    assert [c.id for c in placed.rows] == [2, 3, 4, 5]
    assert placed.rows[placed.index].id == 3 and placed.gone == {3: gone.what}
    plain = QueueCursor().place(page(2, 4, 5), keep=3, previous_row=2, gone=None, above=[1, 2])
    assert [c.id for c in plain.rows] == [2, 4, 5] and plain.gone == {}


def test_an_erased_candidate_leaves_no_row() -> None:
    gone = Gone(3, gone_text(None, 3), None)
    placed = QueueCursor().place(page(2, 4), keep=3, previous_row=1, gone=gone, above=[2])
    assert [c.id for c in placed.rows] == [2, 4] and placed.gone == {}
    assert "removed elsewhere" in gone.what


def test_deferred_rows_stay_at_the_end_in_the_order_deferred() -> None:
    cursor = QueueCursor()
    cursor.defer(2)
    cursor.defer(1)
    cursor.defer(2)  # deferred again: last
    assert [c.id for c in cursor.arrange(page(1, 2, 3, 4))] == [3, 4, 1, 2]


@pytest.mark.parametrize(
    ("cursor", "done", "expected"),
    [
        (9, {6, 7, 8}, 9),  # marks above the cursor: it stays on its own candidate
        (2, {2, 4}, 3),  # on a decided row: the first row after it left pending (not 5)
        (4, {3, 4}, 5),
        (12, {11, 12}, 10),  # nothing after it: the nearest before it
        (1, {1, 2, 3}, 4),
        (None, {1}, None),
    ],
)
def test_after_a_bulk_decision_no_row_left_pending_is_skipped(
    cursor: int | None, done: set[int], expected: int | None
) -> None:
    assert after_bulk(list(range(1, 13)), cursor, done) == expected


def test_bulk_plan_splits_in_one_pass_and_lists_every_row() -> None:
    chosen = [cand(1), cand(2, kind="update", supersedes_id=7), cand(3, kind="retraction", supersedes_id=8), cand(4)]
    plan = bulk_plan(chosen)
    assert plan.ids == [1, 4] and [c.id for c in plan.left_out] == [2, 3]
    question = plan.question("the 4 marked candidates")
    assert "#1 u: s1" in question and "#4 u: s4" in question
    assert "#2 would replace fact #7" in question and "#3 asks to retract fact #8" in question


def test_holders_name_only_live_leases_of_others() -> None:
    rows = [
        cand(1, claimed_by="cy", claimed_until=NOW + timedelta(minutes=5)),
        cand(2, claimed_by="cy", claimed_until=NOW - timedelta(minutes=5)),  # expired
        cand(3, claimed_by="bo", claimed_until=NOW + timedelta(minutes=5)),  # this reviewer's own
        cand(4),
    ]
    assert holders(rows, "bo", NOW) == {1: "cy"}


# -- the leases ------------------------------------------------------------------------------------


class FakeReview:
    def __init__(self, refuse: set[int] | None = None) -> None:
        self.calls: list[tuple[str, int]] = []
        self.refuse = refuse or set()

    async def claim(self, candidate_id: int, reviewer: str, ttl_seconds: float | None = None) -> object:
        if candidate_id in self.refuse:
            raise ClaimedError(candidate_id, "cy")
        self.calls.append(("claim", candidate_id))
        return None

    async def release(self, candidate_id: int, reviewer: str) -> None:
        self.calls.append(("release", candidate_id))


async def test_leases_have_one_owner_and_a_decision_ends_a_lease_without_a_release() -> None:
    review = FakeReview(refuse={9})
    leases = Leases(lambda: review, "bo", lambda: True)
    await leases.claim(1)
    await leases.claim(2)
    with pytest.raises(ClaimedError):
        await leases.claim(9)  # refused: nothing held
    assert list(leases) == [1, 2] and 9 not in leases
    session = DecisionSession(_NoUndo(), "bo", leases)

    async def decide() -> None:
        return None

    work = session.decide(1, decide)
    assert work is not None
    await work
    assert list(leases) == [2]  # the decision ended #1's lease: no release sent for it
    await leases.release_all()
    assert review.calls == [("claim", 1), ("claim", 2), ("release", 2)]
    assert len(leases) == 0


async def test_a_release_after_the_store_closed_writes_nothing() -> None:
    review = FakeReview()
    open_ = [True]
    leases = Leases(lambda: review, "bo", lambda: open_[0])
    await leases.claim(1)
    open_[0] = False
    await leases.release(1)
    assert review.calls == [("claim", 1)] and len(leases) == 0


class _NoUndo:
    async def undo(self, candidate_id: int, reviewer: str) -> object:
        return None


# -- the watcher -----------------------------------------------------------------------------------


class Loop:
    """Timers and workers run by hand: `run()` fires what is due, in order."""

    def __init__(self) -> None:
        self.timers: list[Callable[[], None]] = []
        self.tasks: list[Coroutine[Any, Any, None]] = []

    def later(self, delay: float, callback: Callable[[], None]) -> object:
        self.timers.append(callback)
        return None

    def spawn(self, coro: Coroutine[Any, Any, None]) -> object:
        self.tasks.append(coro)
        return None

    async def run(self) -> None:
        while self.timers or self.tasks:
            timers, self.timers = self.timers, []
            for timer in timers:
                timer()
            tasks, self.tasks = self.tasks, []
            for task in tasks:
                await task


def watcher(marks: list[QueueMark], busy: list[bool] | None = None) -> tuple[QueueWatcher, Loop, list[int]]:
    loop, reloads = Loop(), []
    flags = busy if busy is not None else [False]

    async def read_mark() -> QueueMark:
        return marks[0]

    w = QueueWatcher(
        read_mark=read_mark,
        reload=lambda: reloads.append(1),
        busy=lambda: flags[0],
        fresh=lambda: lambda: True,
        spawn=loop.spawn,
        later=loop.later,
    )
    return w, loop, reloads


async def test_announcements_settle_into_one_look_and_reload_only_on_change() -> None:
    marks = [QueueMark(10, 50)]
    w, loop, reloads = watcher(marks)
    w.saw(QueueMark(10, 50))
    for _ in range(5):  # a burst of commits (SQLite reports every one, leases included)
        w.announced()
    assert len(loop.timers) == 1
    await loop.run()
    assert reloads == []  # nothing changed: a lease, not a decision
    marks[0] = QueueMark(9, 50)  # decided elsewhere
    w.announced()
    await loop.run()
    assert reloads == [1]


async def test_the_screens_own_decision_is_not_news() -> None:
    marks = [QueueMark(9, 50)]
    w, loop, reloads = watcher(marks)
    w.saw(QueueMark(10, 50))
    w.own_decision()
    w.announced()
    await loop.run()
    assert reloads == []
    marks[0] = QueueMark(10, 51)  # control: a new candidate arrived
    w.announced()
    await loop.run()
    assert reloads == [1]


async def test_while_a_decision_is_saved_the_look_waits() -> None:
    marks = [QueueMark(9, 50)]
    busy = [True]
    w, loop, reloads = watcher(marks, busy)
    w.saw(QueueMark(10, 50))
    w.announced()
    loop.timers.pop()()  # the settle timer fires
    await loop.tasks.pop()  # the look, while busy: asks again later
    assert reloads == [] and len(loop.timers) == 1
    busy[0] = False
    await loop.run()
    assert reloads == [1]


async def test_the_watcher_listens_and_stops_listening() -> None:
    w, _, _ = watcher([QueueMark(0, 0)])
    stopped: list[bool] = []

    async def subscribe(callback: Callable[[], None]) -> Callable[[], Any]:
        async def stop() -> None:
            stopped.append(True)

        return stop

    await w.start(subscribe)
    assert stopped == []
    await w.stop()
    assert stopped == [True]
    await w.stop()  # a second stop is a no-op
    assert stopped == [True]


def test_a_decision_elsewhere_reads_the_same_however_the_screen_learns_it() -> None:
    """A reload that no longer lists the row (`gone_text`) and a claim refused with
    AlreadyDecidedError (its status and who) word it alike, so a browser or terminal waiting for
    "rejected by ana" sees it on either path; an erased row says so (control)."""
    rejected = cand(7, status="rejected", decision="reject", decided_by="ana")
    error = AlreadyDecidedError(7, "rejected", "ana")
    assert gone_text(rejected, 7) == decided_text(7, error.status, error.decided_by)
    assert gone_text(rejected, 7) == "Candidate 7 was rejected by ana meanwhile."
    assert decided_text(7, "approved", None) == "Candidate 7 was approved by someone else meanwhile."
    assert gone_text(None, 7) == "Candidate 7 was removed elsewhere."

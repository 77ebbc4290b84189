"""Issue 19.1 and 19.2: lists that follow decisions made elsewhere, and keys that land on the item
on screen. Keys are sent as fast as a terminal delivers them (`pilot.press` with several keys, no
pause between them); every test checks the database afterwards, each must-not beside its positive
control."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from textual import events
from textual.widgets import Input

from engine import AlreadyDecidedError, Memory
from engine.storage import NEW_CANDIDATES
from review_app.app import ReviewApp
from review_app.modals import ReplaceChoiceModal
from tests.pilot_helpers import db, keys, settle
from tests.test_tui_list import row_ids
from tests.test_tui_queue import SIZE, notes, queue, settle_until
from tests.tui_seed import T0, SeededDb, fixed_clock


def burst(app: ReviewApp, *pressed: str) -> None:
    """Deliver keys the way a terminal driver does when they arrive together: all posted to the
    app's queue at once, none waiting for the previous one to be handled (`pilot.press` waits for
    the app to go idle between keys, which hides the race)."""
    for key in pressed:
        app.post_message(events.Key(key, key if len(key) == 1 else None))


def status(path: str, cid: int) -> str:
    [(value,)] = db(path, "SELECT status FROM candidates WHERE id = ?", cid)
    return str(value)


def decided_by_ana(path: str) -> list[tuple[Any, ...]]:
    return db(path, "SELECT id FROM candidates WHERE decided_by = 'ana'")


async def test_a_decision_elsewhere_leaves_the_open_list_and_the_count(tui_db: SeededDb) -> None:
    """Another reviewer rejects a row further down: it leaves ana's list and the count drops by
    one without a key press; ana's cursor and the item she sees do not move."""
    path, ids = tui_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = queue(app)
        total = screen.total
        assert screen.current_id == ids["bees"]
        assert ids["unsupported"] in row_ids(app)  # positive control: listed before
        async with Memory(path, clock=fixed_clock) as ben:
            await ben.review.reject(ids["unsupported"], "ben", "not true", tombstone=False)
        await settle_until(pilot, lambda: ids["unsupported"] not in row_ids(app), "the decided row leaving")
        assert screen.total == total - 1
        assert f"{total - 1} pending" in str(screen.query_one("#queue-header").render())
        assert (screen.pending_list.cursor_id, screen.current_id) == (ids["bees"], ids["bees"])
    assert status(path, ids["unsupported"]) == "rejected"
    assert status(path, ids["bees"]) == "pending"


async def test_the_row_under_the_cursor_decided_elsewhere_stays_and_keys_act_on_nothing(tui_db: SeededDb) -> None:
    """ben (whose clock sees ana's lease expired) approves the candidate ana is looking at: her
    cursor stays on it, the row says so, and `a` `a` typed at once decide nothing. Control: after
    `n`, `a` approves the next candidate, the one then shown."""
    path, ids = tui_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = queue(app)
        assert screen.current_id == ids["bees"]
        async with Memory(path, clock=lambda: T0 + timedelta(hours=1)) as ben:
            await ben.review.approve(ids["bees"], "ben")
        await settle_until(pilot, lambda: ids["bees"] in screen.pending_list.gone, "the decided row being marked")
        assert screen.pending_list.cursor_id == ids["bees"]
        assert screen.current_id is None
        assert "approved by ben" in screen.pending_list.gone[ids["bees"]]
        assert "approved by ben" in str(screen.query_one("#queue-line").render())
        burst(app, "a", "a", "e", "r")  # nothing opens, nothing is decided
        await settle(pilot)
        assert app.screen is screen
        assert decided_by_ana(path) == []
        await pilot.press("n")
        await settle_until(pilot, lambda: screen.current_id == ids["madrid"], "the next candidate shown")
        await keys(pilot, "k")  # madrid replaces a fact: keep both, a decision of ana's
    assert status(path, ids["madrid"]) == "approved"
    assert decided_by_ana(path) == [(ids["madrid"],)]
    assert db(path, "SELECT decided_by FROM candidates WHERE id = ?", ids["bees"]) == [("ben",)]


async def test_a_key_typed_during_a_move_is_refused_not_applied_to_the_next_item(tui_db: SeededDb) -> None:
    """`n` `a` at once: the `a` arrives before the next candidate is claimed and shown, so it is
    refused (never applied to the candidate being left, nor to one not yet seen). Control: once
    shown, `a` approves it."""
    path, ids = tui_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = queue(app)
        await keys(pilot, "n", "n")
        assert screen.current_id == ids["contradiction"]
        burst(app, "n", "a")
        await settle(pilot)
        assert screen.current_id == ids["markup"]
        assert decided_by_ana(path) == []  # neither the contradiction left nor the markup row unseen
        await keys(pilot, "a")
    assert decided_by_ana(path) == [(ids["markup"],)]
    assert status(path, ids["contradiction"]) == "pending"


async def test_p_onto_an_item_the_reviewer_flagged_stays_there_and_decides_nothing(tui_db: SeededDb) -> None:
    """The old screen said "moving on" and moved to another item, and the next `a` decided that
    one. Now the cursor stays on the flagged row, says why, and `a` decides nothing. Control: `p`
    onto a plain row then `a` approves that row."""
    path, ids = tui_db
    async with Memory(path, clock=fixed_clock) as mem:
        await mem.team.flag(ids["markup"], "ana", "unsure about the markup")
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = queue(app)
        for _ in range(4):
            await keys(pilot, "n")
        assert screen.current_id == ids["unsupported"]
        burst(app, "p", "a")
        await settle(pilot)
        assert screen.pending_list.cursor_id == ids["markup"]  # where the reviewer put it
        assert screen.current_id is None
        assert any("second opinion" in n for n in notes(app))
        assert app.screen is screen  # no decision dialog for another item
        await keys(pilot, "a")
        assert decided_by_ana(path) == []
        await keys(pilot, "n")
        assert screen.current_id == ids["unsupported"]
        await keys(pilot, "a")
    assert decided_by_ana(path) == [(ids["unsupported"],)]
    assert status(path, ids["markup"]) == "pending"


async def test_a_search_lands_on_its_first_result(tui_db: SeededDb) -> None:
    """The cursor was further down; a search for cho puts it on the first match, which is shown."""
    path, ids = tui_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = queue(app)
        for _ in range(6):
            await keys(pilot, "n")
        assert screen.current_id == ids["proposed"]  # the last cho row
        await keys(pilot, "slash")
        screen.query_one("#queue-search", Input).value = "cho"
        await settle(pilot)
        await keys(pilot, "enter")
        assert row_ids(app) == [ids["unsupported"], ids["low"], ids["proposed"]]
        assert screen.pending_list.cursor_row == 0
        assert screen.current_id == ids["unsupported"]
        await keys(pilot, "a")
    assert decided_by_ana(path) == [(ids["unsupported"],)]


async def test_postgres_announces_decisions_and_undo(pg_url: str) -> None:
    """A decision and its undo NOTIFY the channel open workstations LISTEN on (a rolled-back one
    does not); positive control: a proposal is announced as before."""
    async with Memory(pg_url, clock=fixed_clock) as mem:
        got: list[str] = []
        stop = await mem.store.subscribe(NEW_CANDIDATES, got.append)

        async def announced(n: int) -> None:
            for _ in range(100):
                if len(got) >= n:
                    return
                await asyncio.sleep(0.02)
            raise AssertionError(f"{n} announcements expected, got {got}")

        try:
            outcome = await mem.propose("u-pg", "Pat plays the oboe", "agent")
            assert outcome.candidate_id is not None
            await announced(1)
            await mem.review.approve(outcome.candidate_id, "ana")
            await announced(2)
            await mem.review.undo(outcome.candidate_id, "ana")
            await announced(3)
            before = len(got)
            await mem.review.approve(outcome.candidate_id, "ana")
            await announced(before + 1)
            with pytest.raises(AlreadyDecidedError):
                await mem.review.approve(outcome.candidate_id, "ana")  # refused: rolled back
            await asyncio.sleep(0.3)
            assert len(got) == before + 1
            assert set(got) == {"u-pg"}
        finally:
            await stop()


async def test_defer_moves_the_item_to_the_end_and_a_key_typed_meanwhile_decides_nothing(tui_db: SeededDb) -> None:
    """`d` `a` at once: bees goes to the end of the list, the cursor stays at its place, and the
    `a` (typed before the next item was shown) decides nothing. Control: then `k` keeps both for
    madrid, the item shown, and bees is still pending at the end, decidable when reached."""
    path, ids = tui_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = queue(app)
        assert screen.current_id == ids["bees"]
        burst(app, "d", "a")
        await settle(pilot)
        assert row_ids(app)[-1] == ids["bees"]
        assert screen.pending_list.cursor_row == 0
        assert screen.current_id == ids["madrid"]
        assert decided_by_ana(path) == []
        assert db(path, "SELECT claimed_by FROM candidates WHERE id = ?", ids["bees"]) == [(None,)]  # released
        await keys(pilot, "k")
        assert row_ids(app)[-1] == ids["bees"]
    assert decided_by_ana(path) == [(ids["madrid"],)]
    assert status(path, ids["bees"]) == "pending"


async def test_a_move_while_a_decision_is_saved_keeps_the_cursor_where_the_reviewer_put_it(tui_db: SeededDb) -> None:
    """`a` then `n` at once: the first row is approved; the `n` moved the cursor down while the
    decision was being saved, and the row leaving above it must not carry the cursor one further
    (onto an item the reviewer did not choose). What is shown is what is under the cursor, and a
    later `a` decides exactly that. Control: the shown item is decidable."""
    path, _ = tui_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = queue(app)
        rows = screen.pending_list
        first, second = rows.row_ids[:2]
        assert screen.current_id == first
        burst(app, "a", "n")
        await settle(pilot)
        assert decided_by_ana(path) == [(first,)]
        assert rows.cursor_id == screen.current_id
        assert rows.cursor_id == second  # where `n` put it, not one further (`third`)
        chosen = rows.cursor_id
        await keys(pilot, "a")
        if isinstance(app.screen, ReplaceChoiceModal):  # an update: the reviewer says which
            await keys(pilot, "k")
    assert sorted(decided_by_ana(path)) == sorted([(first,), (chosen,)])


async def test_a_reason_typed_in_one_burst_with_a_backspace_is_stored_as_typed(tui_db: SeededDb) -> None:
    """Keys that arrive together in the reject dialog: "Nox", Backspace, "pe", Enter. Textual's Input
    ran Backspace after the characters queued with it (textual#6605) and stored "Nop"; the
    workstation's text boxes run their editing keys in order. Control: typed one at a time, the same
    keys give the same reason."""
    path, _ = tui_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        first = queue(app).current_id
        assert first is not None
        await keys(pilot, "r")
        burst(app, "N", "o", "x", "backspace", "p", "e", "enter")
        await settle(pilot)
        assert db(path, "SELECT status, reason FROM candidates WHERE id = ?", first) == [("rejected", "Nope")]
        second = queue(app).current_id
        assert second is not None and second != first
        await keys(pilot, "r", "N", "o", "x", "backspace", "p", "e", "enter")
        assert db(path, "SELECT status, reason FROM candidates WHERE id = ?", second) == [("rejected", "Nope")]


@pytest.mark.parametrize(
    ("opener", "gap", "field", "typed", "expected"),
    [
        ("e", 0.0, "#edit-statement", ("end", "X"), "{before}X"),
        ("e", 0.05, "#edit-statement", ("end", "X"), "{before}X"),
        ("r", 0.0, "#reason-input", ("N", "o", "x", "backspace", "p", "e"), "Nope"),
    ],
)
async def test_keys_typed_with_the_key_that_opens_a_dialog_reach_its_text_box(
    tui_db: SeededDb, opener: str, gap: float, field: str, typed: tuple[str, ...], expected: str
) -> None:
    """The opening key and what follows it, with no gap at all (a macro, a paste, tmux's
    send-keys) or 50 ms later:
    - with no gap the keys used to reach the list before the opening key's binding had run, and
      were dropped (the editor opened with "Ana keeps bees", not "...beesX");
    - at 50 ms, focusing the field used to select all of it after the keys had arrived, so the
      statement became "X" (the field now opens with nothing selected).
    Nothing is decided until the reviewer confirms; Escape then leaves the candidate pending."""
    path, _ = tui_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        first = queue(app).current_id
        assert first is not None
        before = db(path, "SELECT statement FROM candidates WHERE id = ?", first)[0][0]
        burst(app, opener)
        if gap:
            await asyncio.sleep(gap)
        burst(app, *typed)
        await settle(pilot)
        assert app.screen.query_one(field, Input).value == expected.format(before=before)
        assert queue(app).pending_list.cursor_id == first  # End went to the dialog, not to the list
        assert db(path, "SELECT status FROM candidates WHERE id = ?", first) == [("pending",)]
        await keys(pilot, "escape")
    assert db(path, "SELECT status FROM candidates WHERE id = ?", first) == [("pending",)]


async def test_letters_typed_in_the_search_box_are_searched_not_decided(tui_db: SeededDb) -> None:
    """The decision keys act as each key arrives (priority bindings), but never while the search
    box has focus: "bees" typed there searches and decides nothing. Control: `a` after Enter
    approves the first result."""
    path, ids = tui_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await keys(pilot, "slash")
        burst(app, "b", "e", "e", "s", "a", "r")
        await settle(pilot)
        assert app.screen.query_one("#queue-search", Input).value == "beesar"
        assert decided_by_ana(path) == []
        for _ in range(2):
            await keys(pilot, "backspace")
        await keys(pilot, "enter")
        await settle_until(pilot, lambda: queue(app).current_id == ids["bees"], "the search result shown")
        await keys(pilot, "a")
    assert decided_by_ana(path) == [(ids["bees"],)]

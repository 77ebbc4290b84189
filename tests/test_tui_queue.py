"""The Queue screen driven through Pilot, with every outcome checked in the DATABASE afterwards
(through a fresh Memory), not in the widgets that claim it happened."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import Static

from engine import Memory
from engine.errors import UserInputError
from review_app.app import ReviewApp
from review_app.keymap import KeymapError, load_keymap
from review_app.modals import EditModal, ErrorModal, ReasonModal, ReplaceChoiceModal
from review_app.screens.queue import PAGE_SIZE, QueueScreen
from review_app.widgets.pending_list import PendingList
from tests.pilot_helpers import (
    queue,
    row,
    settle,
    sqlite3,  # the engine's own SQLite library (see there)
)
from tests.tui_seed import MARKUP_STATEMENT, T0, SeededDb, fixed_clock

SIZE = (160, 48)


async def settle_until(pilot: Pilot[Any], done: Callable[[], bool], what: str) -> None:
    """Settle until `done()` holds: a key press on a loaded machine can be handled after the first
    settle returned. Bounded; on failure it says what the reviewer was told and what had focus."""
    deadline = asyncio.get_running_loop().time() + 60  # a loaded CI machine: seconds, not a count
    while asyncio.get_running_loop().time() < deadline:
        await settle(pilot)
        if done():
            return
        await asyncio.sleep(0.05)
    app = pilot.app
    assert isinstance(app, ReviewApp)
    raise AssertionError(f"{what} never happened; notifications: {notes(app)}; focus: {app.focused!r}")


async def go_to(pilot: Pilot[Any], candidate_id: int) -> None:
    """Move the cursor (with `n`) until the candidate is shown."""
    app = pilot.app
    assert isinstance(app, ReviewApp)
    for _ in range(20):
        if queue(app).current_id == candidate_id:
            return
        await pilot.press("n")
        await settle(pilot)
    raise AssertionError(f"candidate {candidate_id} never became current")


def notes(app: ReviewApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def test_approve_makes_the_fact_retrievable_and_releases_the_lease_on_quit(tui_db: SeededDb) -> None:
    path, ids = tui_db
    async with Memory(path, clock=fixed_clock) as mem:  # positive control: not retrievable before
        assert not [
            i
            for i in (await mem.retrieve("Ana keeps bees", user_id="u-ana")).items
            if i.knowledge.statement == "Ana keeps bees"
        ]
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert queue(app).current_id == ids["bees"]
        assert row(path, "SELECT claimed_by FROM candidates WHERE id = ?", ids["bees"]) == ("ana",)
        await pilot.press("a")
        await settle(pilot)
        assert queue(app).current_id == ids["madrid"]  # advanced to the next one
        assert queue(app).decisions.decided == 1
    async with Memory(path, clock=fixed_clock) as mem:
        found = [i.knowledge for i in (await mem.retrieve("Ana keeps bees", user_id="u-ana")).items]
        assert [k.statement for k in found if k.statement == "Ana keeps bees"] == ["Ana keeps bees"]
        assert not [
            i
            for i in (await mem.retrieve("Ana keeps bees", user_id="u-ben")).items
            if i.knowledge.statement == "Ana keeps bees"
        ]  # another user's facts never leak
        cand = await mem.review.get(ids["bees"])
        assert (cand.status, cand.decided_by) == ("approved", "ana")
    # the lease on the candidate shown at quit was released
    assert row(path, "SELECT claimed_by FROM candidates WHERE id = ?", ids["madrid"]) == (None,)


async def test_reject_writes_a_tombstone_and_escape_writes_nothing(tui_db: SeededDb) -> None:
    path, ids = tui_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        assert isinstance(app.screen, ReasonModal)
        await pilot.press("escape")  # cancelled: nothing happens
        await settle(pilot)
        assert row(path, "SELECT status FROM candidates WHERE id = ?", ids["bees"]) == ("pending",)
        await pilot.press("r")
        await settle(pilot)
        await pilot.press("enter")  # empty reason: refused inline, the modal stays
        await settle(pilot)
        assert isinstance(app.screen, ReasonModal)
        assert "reason is required" in str(app.screen.query_one("#reason-error", Static).content)
        await pilot.press(*"made up")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, QueueScreen)
    assert row(path, "SELECT status, reason, decided_by FROM candidates WHERE id = ?", ids["bees"]) == (
        "rejected",
        "made up",
        "ana",
    )
    async with Memory(path, clock=fixed_clock) as mem:
        stones = [t for t in await mem.tombstones("u-ana") if t.candidate_id == ids["bees"]]
        assert [(t.statement, t.reason, t.created_by) for t in stones] == [("Ana keeps bees", "made up", "ana")]
        assert await mem.is_tombstoned("u-ana", "Ana keeps bees") is not None
        assert await mem.is_tombstoned("u-ben", "Ana keeps bees") is None
        assert "Ana keeps bees" not in [k.statement for k in await mem.knowledge("u-ana")]


async def test_confirm_supersession_expires_the_old_fact(tui_db: SeededDb) -> None:
    path, ids = tui_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("s")  # bees is a 'new' candidate: refused with a message, nothing changes
        await settle(pilot)
        assert any("no fact to supersede" in n for n in notes(app))
        assert row(path, "SELECT status FROM candidates WHERE id = ?", ids["bees"]) == ("pending",)
        await go_to(pilot, ids["madrid"])
        await pilot.press("a")  # a plain approve would leave Porto active beside Madrid: it asks, s or k
        await settle(pilot)
        assert isinstance(app.screen, ReplaceChoiceModal)
        await pilot.press("escape")  # no choice: nothing decided
        await settle(pilot)
        assert row(path, "SELECT status FROM candidates WHERE id = ?", ids["madrid"]) == ("pending",)
        assert queue(app).current_id == ids["madrid"]
        await pilot.press("a")
        await settle(pilot)
        await pilot.press("s")  # the dialog's s: confirm the supersession
        await settle(pilot)
    async with Memory(path, clock=fixed_clock) as mem:
        old = await mem.get_knowledge("u-ana", ids["porto"])
        cand = await mem.review.get(ids["madrid"])
        assert cand.status == "approved" and cand.decision == "confirm_supersession"
        assert old.status == "superseded"
        assert old.superseded_by == cand.knowledge_id
        assert old.expired_at == T0
        assert [k.statement for k in await mem.knowledge("u-ana") if "lives in" in k.statement] == [
            "Ana lives in Madrid"
        ]


async def test_keep_both_leaves_both_active(tui_db: SeededDb) -> None:
    path, ids = tui_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await go_to(pilot, ids["madrid"])
        await pilot.press("k")
        await settle(pilot)
    async with Memory(path, clock=fixed_clock) as mem:
        lives = sorted(k.statement for k in await mem.knowledge("u-ana") if "lives in" in k.statement)
        assert lives == ["Ana lives in Madrid", "Ana lives in Porto"]
        assert (await mem.get_knowledge("u-ana", ids["porto"])).status == "active"
        assert (await mem.review.get(ids["madrid"])).decision == "keep_both"


async def test_edit_with_inverted_interval_shows_error_and_saves_nothing(tui_db: SeededDb) -> None:
    path, ids = tui_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, EditModal)
        modal.query_one("#edit-valid-at").value = "2025-06-01"  # type: ignore[attr-defined]
        modal.query_one("#edit-invalid-at").value = "2024-01-01"  # type: ignore[attr-defined]
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert app.screen is modal  # still open
        error = str(modal.query_one("#edit-invalid-at-error", Static).content)
        assert (
            "'Valid until' (2024-01-01) must be later than 'Valid from' (2025-06-01)" in error
            and "Nothing was saved" in error
        )
        assert row(path, "SELECT status FROM candidates WHERE id = ?", ids["bees"]) == ("pending",)
        assert row(path, "SELECT count(*) FROM knowledge WHERE statement LIKE '%bees%'") == (0,)
        # positive control: the same modal with a valid interval saves the edit
        modal.query_one("#edit-statement").value = "Ana keeps two hives of bees"  # type: ignore[attr-defined]
        modal.query_one("#edit-invalid-at").value = "2026-01-01"  # type: ignore[attr-defined]
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, QueueScreen)
    async with Memory(path, clock=fixed_clock) as mem:
        cand = await mem.review.get(ids["bees"])
        assert cand.decision == "edit_approve"
        fact = await mem.get_knowledge("u-ana", cand.knowledge_id)  # type: ignore[arg-type]
        assert fact.statement == "Ana keeps two hives of bees"
        assert (fact.valid_at, fact.invalid_at) == (datetime(2025, 6, 1, tzinfo=UTC), datetime(2026, 1, 1, tzinfo=UTC))


def _state(path: str) -> dict[str, list[tuple[Any, ...]]]:
    """Everything a decision may touch, minus the lease columns (a lease is not a decision)."""
    with sqlite3.connect(path) as conn:
        return {
            "candidates": conn.execute(
                "SELECT id, user_id, statement, key, kind, supersedes_id, confidence, valid_at, invalid_at, status,"
                " decided_by, decided_at, decision, reason, knowledge_id FROM candidates ORDER BY id"
            ).fetchall(),
            "knowledge": conn.execute("SELECT * FROM knowledge ORDER BY id").fetchall(),
            "tombstones": conn.execute("SELECT * FROM tombstones ORDER BY id").fetchall(),
        }


async def test_undo_restores_the_previous_state_exactly(tui_db: SeededDb) -> None:
    path, ids = tui_db
    before = _state(path)
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        await pilot.press("shift+tab", "enter")  # the first preset reason: "Not true"
        await settle(pilot)
        await go_to(pilot, ids["madrid"])
        await pilot.press("s")
        # the decision is committed before the screen records it for undo; a `u` in between is
        # answered with a bell, so wait for the screen as a reviewer waits for the row to leave
        await settle_until(
            pilot,
            lambda: len(queue(app).decisions.undo_stack) == 2 and not queue(app).decisions.busy,
            "recording both decisions",
        )
        changed = _state(path)
        assert changed != before  # positive control: the two decisions did change the database
        assert row(path, "SELECT status FROM knowledge WHERE id = ?", ids["porto"]) == ("superseded",)
        await pilot.press("u")  # undo the supersession (the last decision) ...
        await settle_until(
            pilot,
            lambda: row(path, "SELECT status FROM knowledge WHERE id = ?", ids["porto"]) == ("active",),
            "undoing the supersession",
        )
        assert row(path, "SELECT status, expired_at, superseded_by FROM knowledge WHERE id = ?", ids["porto"]) == (
            "active",
            None,
            None,
        )
        assert row(path, "SELECT status FROM candidates WHERE id = ?", ids["bees"]) == ("rejected",)
        assert queue(app).current_id == ids["madrid"]  # the undone candidate is shown again
        await settle_until(pilot, lambda: not queue(app).decisions.busy, "finishing the first undo")
        await pilot.press("u")  # ... then the rejection
        await settle_until(
            pilot,
            lambda: not queue(app).decisions.undo_stack and not queue(app).decisions.busy,
            "undoing the rejection",
        )
        await pilot.press("u")  # nothing left: a message, no change
        await settle(pilot)
        assert any("Nothing to undo" in n for n in notes(app))
    assert _state(path) == before


async def test_two_apps_cannot_decide_the_same_candidate_twice(tui_db: SeededDb) -> None:
    path, ids = tui_db
    first = ReviewApp(path, "ana", clock=fixed_clock)
    # ben's clock is an hour later, so ana's lease looks expired to him: both end up showing the
    # same candidate, the worst case the engine's pending guard must survive
    later = ReviewApp(path, "ben", clock=lambda: T0 + timedelta(hours=1))
    same_time = ReviewApp(path, "cy", clock=fixed_clock)
    async with first.run_test(size=SIZE) as p1:
        await settle(p1)
        assert queue(first).current_id == ids["bees"]
        async with same_time.run_test(size=SIZE) as p3:  # the lease holds: cy is moved on
            await settle(p3)
            assert queue(same_time).current_id != ids["bees"]
            assert any("being reviewed by ana" in n for n in notes(same_time))
        async with later.run_test(size=SIZE) as p2:
            await settle(p2)
            assert queue(later).current_id == ids["bees"]  # ben took over the lease
            await p1.press("a")  # ana's decision is refused while ben holds the lease
            await settle(p1)
            assert any("being reviewed by ben" in n for n in notes(first))
            assert row(path, "SELECT status FROM candidates WHERE id = ?", ids["bees"]) == ("pending",)
            await p2.press("a")
            await settle(p2)
            await p1.press("a")  # now it is decided: refused, and ana's list is refreshed
            await settle(p1)
            # refused by the engine, or already marked by the live list (SQLite's commit watcher)
            assert any("already decided by ben" in n or "approved by ben" in n for n in notes(first))
            # the decided row stays under ana's cursor, marked, with nothing to decide
            assert queue(first).current_id is None
            assert queue(first).pending_list.cursor_id == ids["bees"]
            assert "approved by ben" in queue(first).pending_list.gone[ids["bees"]]
            # ben moved on to madrid and holds it: ana's cursor stops there too, deciding nothing
            await p1.press("n")
            await settle(p1)
            assert queue(first).pending_list.cursor_id == ids["madrid"]
            assert queue(first).current_id is None
            assert any(f"Candidate {ids['madrid']} is being reviewed by ben" in n for n in notes(first))
            await p1.press("a")
            await settle(p1)
            assert row(path, "SELECT status FROM candidates WHERE id = ?", ids["madrid"]) == ("pending",)
            await p1.press("n")
            await settle(p1)
            assert queue(first).current_id == ids["contradiction"]
            assert (queue(first).decisions.decided, queue(later).decisions.decided) == (0, 1)
    assert row(path, "SELECT status, decided_by FROM candidates WHERE id = ?", ids["bees"]) == ("approved", "ben")
    assert row(path, "SELECT count(*) FROM knowledge WHERE statement = 'Ana keeps bees'") == (1,)
    assert row(
        path,
        "SELECT count(*) FROM audit_log WHERE entity = 'candidate' AND entity_id = ? AND action = 'approve'",
        ids["bees"],
    ) == (1,)


async def test_markup_and_escapes_in_a_statement_are_shown_literally(tui_db: SeededDb) -> None:
    path, ids = tui_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await go_to(pilot, ids["markup"])
        gap = app.screen.query_one("#pane-gap", Static).content
        assert isinstance(gap, Text)
        assert "Ben wrote [b]bold[/b] [link=http://x]x[/link] and ␛[31mred" in gap.plain
        assert "\x1b" not in gap.plain
        assert not any("link" in str(span.style) for span in gap.spans)
        rows = app.screen.query_one(PendingList)
        cell = rows.cells(ids["markup"])["statement"]
        assert cell.plain.startswith("Ben wrote [b]bold[/b] [link=")
        # positive control: a plain statement is shown as it is
        assert rows.cells(ids["bees"])["statement"].plain == "Ana keeps bees"
    # display only: the stored statement keeps its escape character
    assert row(path, "SELECT statement FROM candidates WHERE id = ?", ids["markup"]) == (MARKUP_STATEMENT,)


async def test_a_worker_error_opens_the_error_modal_and_changes_nothing(tui_db: SeededDb) -> None:
    path, ids = tui_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)

        async def broken(*args: Any, **kwargs: Any) -> Any:
            raise UserInputError("the embedder refused the statement")

        app.memory.review.approve = broken  # type: ignore[method-assign]
        await pilot.press("a")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, ErrorModal)
        assert modal.title_text == f"Approving candidate {ids['bees']} failed"
        assert "the embedder refused the statement" in modal.detail
        assert "Nothing was changed" in modal.detail
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, QueueScreen)
        assert app.is_running
    assert row(path, "SELECT status FROM candidates WHERE id = ?", ids["bees"]) == ("pending",)


async def test_a_keymap_override_changes_a_key(tui_db: SeededDb, tmp_path: Path) -> None:
    path, ids = tui_db
    keymap_file = tmp_path / "keys.toml"
    keymap_file.write_text('[keymap]\n"queue.approve" = "y"\n', encoding="utf-8")
    app = ReviewApp(path, "ana", clock=fixed_clock, keymap=load_keymap(keymap_file))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("a")  # no longer bound
        await settle(pilot)
        assert row(path, "SELECT status FROM candidates WHERE id = ?", ids["bees"]) == ("pending",)
        await pilot.press("y")
        await settle(pilot)
        assert row(path, "SELECT status FROM candidates WHERE id = ?", ids["bees"]) == ("approved",)
        titles = {c.title: c.help for c in app.get_system_commands(app.screen)}
        assert "key y" in titles["Approve"] and "queue.approve" in titles["Approve"]
        assert "Reject" in titles and "Queue" in titles  # screen and app bindings are palette entries


def test_a_bad_keymap_file_is_refused_with_its_name(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[keymap]\nqueue.approve = 3\n", encoding="utf-8")
    with pytest.raises(KeymapError, match=r"bad\.toml"):
        load_keymap(bad)
    broken = tmp_path / "broken.toml"
    broken.write_text("[keymap\n", encoding="utf-8")
    with pytest.raises(KeymapError, match="not valid TOML"):
        load_keymap(broken)


async def test_the_list_loads_pages_not_the_whole_queue(tmp_path: Path) -> None:
    path = str(tmp_path / "big.db")
    total = PAGE_SIZE * 2 + 50
    async with Memory(path, clock=lambda: T0 - timedelta(days=1)) as mem:
        for i in range(total):
            await mem.queue_candidate("u-big", f"Fact number {i}", created_at=T0 - timedelta(days=1, seconds=-i))
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = queue(app)
        table = screen.query_one(PendingList)
        assert screen.total == total
        assert table.row_count == PAGE_SIZE  # one page, not the table
        table.move_cursor(PAGE_SIZE - 1)
        await settle(pilot)
        assert table.row_count == 2 * PAGE_SIZE  # the next page came when the cursor neared the end
        first = table.row_ids[0]
        assert table.cells(first)["statement"].plain == "Fact number 0"  # oldest first


async def test_bulk_approve_asks_first_and_leaves_supersessions_and_retractions_pending(tui_db: SeededDb) -> None:
    path, ids = tui_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        await pilot.press("n")  # "no": nothing is decided
        await settle(pilot)
        assert row(path, "SELECT count(*) FROM candidates WHERE status = 'pending'") == (8,)
        await pilot.press("b")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
    with sqlite3.connect(path) as conn:
        left = dict(conn.execute("SELECT kind, count(*) FROM candidates WHERE status = 'pending' GROUP BY kind"))
        approved = conn.execute("SELECT count(*) FROM candidates WHERE status = 'approved' AND decided_by = 'ana'")
        assert approved.fetchone() == (5,)
    assert left == {"update": 1, "contradiction": 1, "retraction": 1}
    assert row(path, "SELECT status FROM knowledge WHERE id = ?", ids["porto"]) == ("active",)


async def test_a_deferred_row_stays_after_every_page_that_loads_later(tmp_path: Path) -> None:
    """`d` on the first row of a long queue: when the next page loads, the deferred row moves after
    it (it used to stay at the end of the first page only), and the cursor stays on its candidate."""
    path = str(tmp_path / "big.db")
    async with Memory(path, clock=lambda: T0 - timedelta(days=1)) as mem:
        for i in range(PAGE_SIZE + 30):
            await mem.queue_candidate("u-big", f"Fact number {i}", created_at=T0 - timedelta(days=1, seconds=-i))
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = queue(app)
        rows = screen.pending_list
        skipped = rows.cursor_id
        assert skipped is not None
        await pilot.press("d")
        await settle(pilot)
        assert rows.row_ids[-1] == skipped and rows.row_count == PAGE_SIZE
        rows.move_cursor(PAGE_SIZE - 5)  # near the end: the next page loads
        under = rows.cursor_id
        await settle(pilot)
        assert rows.row_count == PAGE_SIZE + 30
        assert rows.row_ids[-1] == skipped  # after the new page too
        assert rows.cursor_id == under  # the cursor did not move to another candidate
        assert db_pending(path) == PAGE_SIZE + 30  # nothing decided


def db_pending(path: str) -> int:
    return int(row(path, "SELECT count(*) FROM candidates WHERE status = 'pending'")[0])


async def test_a_row_re_pointed_by_an_approval_shows_its_new_kind_and_asks(tmp_path: Path) -> None:
    """Lisbon and Porto queued together (both `new`): approving Lisbon re-points Porto at it (the
    gate's I5). The reviewer, advanced to Porto, sees it as an update in the list and in the
    detail, and `a` asks supersede or keep both; the bees row, about something else, stays new."""
    path = str(tmp_path / "i5.db")
    async with Memory(path, clock=fixed_clock) as mem:
        lisbon = await mem.queue_candidate("u-ana", "User lives in Lisbon", actor="curator")
        porto = await mem.queue_candidate("u-ana", "User lives in Porto", actor="curator")
        bees = await mem.queue_candidate("u-ana", "User keeps bees", actor="curator")
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        rows = app.screen.query_one(PendingList)
        assert queue(app).current_id == lisbon
        assert [rows.cells(c)["kind"].plain for c in (porto, bees)] == ["new", "new"]
        await pilot.press("a")
        await settle_until(pilot, lambda: queue(app).current_id == porto, "advancing to Porto")
        assert [rows.cells(c)["kind"].plain for c in (porto, bees)] == ["update", "new"]
        await pilot.press("a")
        await settle_until(pilot, lambda: isinstance(app.screen, ReplaceChoiceModal), "the replace question")
        await pilot.press("s")
        await settle_until(pilot, lambda: queue(app).current_id == bees, "advancing to bees")
    assert row(path, "SELECT decision FROM candidates WHERE id = ?", porto) == ("confirm_supersession",)
    assert row(path, "SELECT status FROM knowledge WHERE statement = ?", "User lives in Lisbon") == ("superseded",)

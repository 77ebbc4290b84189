"""The queue list for teams (issue 13): order and groups, the whole statement, who holds a lease,
marks with a bulk reject undone as one step, empty states that say why, Esc that clears a search,
a footer that fits, help for every screen, and the 80x24 floor. Driven by the keys a reviewer
presses; decisions are checked in the database afterwards."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from rich.text import Text
from textual.widget import Widget
from textual.widgets import Button, DataTable, Input, Static

from engine import Memory
from review_app.app import ReviewApp
from review_app.modals import EditModal, ReasonModal, StateCheckbox
from review_app.screens.help import HelpScreen
from review_app.screens.knowledge import KnowledgeScreen
from review_app.screens.queue import QueueScreen
from review_app.screens.stats import StatsScreen
from review_app.screens.tombstones import TombstonesScreen
from review_app.widgets.candidate_detail import CandidateDetail
from review_app.widgets.keybar import KeyBar
from review_app.widgets.literal import visible
from tests.pilot_helpers import db, keys, queue, settle
from tests.test_tui_hostile import screen_text
from tests.tui_seed import MARKUP_STATEMENT, T0, SeededDb, fixed_clock

WIDE = (160, 48)
SMALL = (80, 24)


def cells(app: ReviewApp, column: str) -> list[str]:
    rows = queue(app).pending_list
    return [rows.cells(cid)[column].plain for cid in rows.row_ids]


def row_ids(app: ReviewApp) -> list[int]:
    return queue(app).pending_list.row_ids


def shown_text(widget: Static) -> str:
    content = widget.content
    return content.plain if isinstance(content, Text) else str(content)


async def test_order_and_group_by_user_kind_and_confidence(tui_db: SeededDb) -> None:
    path, ids = tui_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        age_order = row_ids(app)
        assert age_order[:2] == [ids["bees"], ids["madrid"]]  # oldest first
        await keys(pilot, "o")  # by user: each user's candidates together, the name on the group's first row
        assert queue(app).sort == "user"
        assert cells(app, "user") == ["u-ana", "", "", "u-ben", "", "u-cho", "", ""]
        assert row_ids(app)[:3] == [ids["bees"], ids["madrid"], ids["retraction"]]
        assert "by user" in str(queue(app).pending_list.border_title)
        await keys(pilot, "o")  # by kind
        kinds = [k for k in cells(app, "kind") if k]
        assert kinds == sorted(kinds) and len(kinds) == len(set(kinds))  # one label per group
        await keys(pilot, "o")  # by confidence, highest first
        confidences = [float(queue(app).pending_list.candidates[i].confidence) for i in row_ids(app)]
        assert confidences == sorted(confidences, reverse=True)
        await keys(pilot, "o")  # and back to age
        assert row_ids(app) == age_order


async def test_the_whole_statement_and_the_lease_holder_are_shown(tui_db: SeededDb) -> None:
    path, ids = tui_db
    async with Memory(path, clock=fixed_clock) as mem:
        await mem.review.claim(ids["low"], "bob")
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await settle(pilot)
        statements = dict(zip(row_ids(app), cells(app, "statement"), strict=True))
        assert statements[ids["low"]].startswith("⊘ bob: Cho might move")
        assert not statements[ids["unsupported"]].startswith("⊘")  # positive control: not leased
        rows = queue(app).pending_list
        rows.move_cursor(rows.index_of(ids["markup"]) or 0)
        await settle(pilot)
        line = shown_text(queue(app).query_one("#queue-line", Static))
        assert visible(MARKUP_STATEMENT) in line  # the full statement, which the column cuts
        rows.move_cursor(rows.index_of(ids["low"]) or 0)  # held: the reviewer is told, and stays
        await settle(pilot)
        assert "being reviewed by bob" in " ".join(screen_text(app).split())
        assert queue(app).pending_list.cursor_id == ids["low"]  # the cursor never moves by itself (issue 19.2)
        assert queue(app).current_id is None  # nothing to decide there
        await pilot.press("n")
        await settle(pilot)
        assert queue(app).current_id == ids["proposed"]  # positive control: the next one is shown


async def test_marked_candidates_are_rejected_with_one_reason_and_undone_as_one_step(tui_db: SeededDb) -> None:
    path, ids = tui_db
    stones_before = db(path, "SELECT count(*) FROM tombstones")[0][0]
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await keys(pilot, "space", "down", "space")  # bees and the contradiction, not madrid
        assert queue(app).pending_list.marked == {ids["bees"], ids["contradiction"]}
        await keys(pilot, "r")
        modal = app.screen
        assert isinstance(modal, ReasonModal) and "2 marked" in modal.title_text
        await pilot.press(*"duplicate import")
        await keys(pilot, "enter")
        assert isinstance(app.screen, QueueScreen)
        rejected = db(
            path,
            "SELECT id, reason, decided_by FROM candidates WHERE status = 'rejected' AND decided_by = "
            "'ana' ORDER BY id",
        )
        assert rejected == sorted(
            [(ids["bees"], "duplicate import", "ana"), (ids["contradiction"], "duplicate import", "ana")]
        )
        assert db(path, "SELECT status FROM candidates WHERE id = ?", ids["madrid"]) == [("pending",)]
        audit = db(path, "SELECT entity_id FROM audit_log WHERE action = 'reject' AND actor = 'ana' ORDER BY id")
        assert sorted(a[0] for a in audit) == sorted([ids["bees"], ids["contradiction"]])  # one decision each
        assert db(path, "SELECT count(*) FROM tombstones")[0][0] == stones_before + 2
        assert queue(app).decisions.decided == 2 and not queue(app).pending_list.marked
        await keys(pilot, "u")  # ONE undo for the whole bulk decision
        assert db(path, "SELECT status FROM candidates WHERE id IN (?, ?)", ids["bees"], ids["contradiction"]) == [
            ("pending",),
            ("pending",),
        ]
        assert db(path, "SELECT count(*) FROM tombstones")[0][0] == stones_before
        assert queue(app).decisions.decided == 0
        await keys(pilot, "u")
        assert "Nothing to undo" in screen_text(app) or not queue(app).decisions.undo_stack


async def test_a_search_that_matches_nothing_says_so_and_escape_clears_it(tui_db: SeededDb) -> None:
    path, _ = tui_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await keys(pilot, "slash", "z", "z", "z")
        assert row_ids(app) == []
        placeholder = queue(app).query_one(CandidateDetail).placeholder
        assert placeholder.startswith("No candidate matches the search; 8 pending in all.")
        assert "The queue is empty" not in screen_text(app)
        await keys(pilot, "escape")  # leaves the box AND clears the search
        assert queue(app).query_one("#queue-search", Input).value == ""
        assert len(row_ids(app)) == 8
        await keys(pilot, "slash", "c", "h", "o", "enter")  # Enter keeps a search ...
        assert len(row_ids(app)) == 3
        await keys(pilot, "escape")  # ... and Esc from the list clears it
        assert len(row_ids(app)) == 8


async def test_the_footer_fits_what_matters_and_help_lists_every_screen(tui_db: SeededDb) -> None:
    path, _ = tui_db
    for size, wanted, absent in (
        (WIDE, ("a Approve", "r Reject", "u Undo", "1 Queue", "4 Stats", "q Quit", "? all keys"), ()),
        (SMALL, ("a Approve", "r Reject", "e Edit", "u Undo", "? all keys"), ("q Quit",)),
    ):
        app = ReviewApp(path, "ana", clock=fixed_clock, keymap={"queue.undo": "ctrl+z"} if size == SMALL else None)
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            bar = queue(app).query_one(KeyBar)
            line = bar.render()
            assert isinstance(line, Text) and line.cell_len <= size[0]
            plain = line.plain.replace("^z", "u")
            for hint in wanted:
                assert hint in plain, (hint, plain)
            for hint in absent:
                assert hint not in plain
            await keys(pilot, "question_mark")
            assert isinstance(app.screen, HelpScreen)
            table = app.screen.query_one(DataTable)
            listed = {table.get_cell(k, "id").plain: table.get_cell(k, "keys").plain for k in table.rows}
            for cls in (QueueScreen, KnowledgeScreen, TombstonesScreen, StatsScreen, ReviewApp, ReasonModal, EditModal):
                for binding in cls.BINDINGS:
                    ident = getattr(binding, "id", None)
                    assert ident in listed, ident
            if size == SMALL:
                assert listed["queue.undo"] == "^z"  # the keymap applies to every screen's rows


def inside(widget: Widget, box: Widget) -> bool:
    region, outer = widget.region, box.region
    return region.height >= 1 and outer.y <= region.y and region.bottom <= outer.bottom and region.bottom <= 24


async def test_80x24_keeps_dialog_buttons_checkbox_table_rows_and_figures(tui_db: SeededDb) -> None:
    path, ids = tui_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await keys(pilot, "r")
        modal = app.screen
        assert isinstance(modal, ReasonModal)
        box = modal.query_one("#reason-box")
        for selector in ("#ok", "#cancel", "#reason-tombstone", "#reason-input"):
            assert inside(modal.query_one(selector), box), selector
        checkbox = modal.query_one(StateCheckbox)
        assert checkbox.label.plain == "[x] Write a tombstone (ctrl+t)"
        await pilot.click("#reason-tombstone")
        await settle(pilot)
        assert checkbox.label.plain == "[ ] Write a tombstone (ctrl+t)"  # the state, as text
        modal.query_one("#reason-input", Input).value = "not true"
        await pilot.click("#ok")
        await settle(pilot)
        assert db(path, "SELECT status FROM candidates WHERE id = ?", ids["bees"]) == [("rejected",)]
        assert db(path, "SELECT count(*) FROM tombstones WHERE candidate_id = ?", ids["bees"]) == [(0,)]
        await keys(pilot, "e")
        modal = app.screen
        assert isinstance(modal, EditModal)
        box = modal.query_one("#edit-box")
        for selector in ("#edit-ok", "#edit-cancel", "#edit-statement", "#edit-invalid-at"):
            assert inside(modal.query_one(selector), box), selector
        assert isinstance(modal.query_one("#edit-ok"), Button)
        await keys(pilot, "escape", "2")
        screen = app.screen
        assert isinstance(screen, KnowledgeScreen)
        assert screen.table.size.height - 1 >= 5  # room for five rows under the header
        await keys(pilot, "4")
        assert isinstance(app.screen, StatsScreen)
        text = ""
        for panel in app.screen.query(".stats-panel"):
            panel.scroll_visible(animate=False, immediate=True)
            await settle(pilot)
            text += screen_text(app)
        for header in ("approved", "rejected", "rate", "count", "of claims"):
            assert header in text, header
        assert "appr…" not in text and "rej…" not in text


async def test_stats_draws_an_empty_queue_flat_and_counts_one_day(tmp_path: Path) -> None:
    path = str(tmp_path / "one.db")
    async with Memory(path, clock=lambda: T0 - timedelta(hours=3)) as mem:
        cid = await mem.queue_candidate("u1", "U1 likes tea")
        await mem.review.approve(cid, "ana")
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await keys(pilot, "4")
        spark = app.screen.query_one("#stats-queue-spark")
        assert list(spark.data or []) == []  # type: ignore[attr-defined]  # not a full bar
        decided = app.screen.query_one("#stats-decided-spark")
        assert list(decided.data or []) == [1.0]  # type: ignore[attr-defined]  # positive control
        assert "(1 day, UTC)" in screen_text(app)

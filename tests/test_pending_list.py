"""The PendingList widget on its own (review_app/widgets/pending_list.py): a removal redraws no
other row's cells (why approve-and-advance costs one cheap frame), the reviewer's keys move the
cursor and say so, and what a row shows follows marks, holders and groups."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from textual.app import App, ComposeResult
from textual.message import Message

from engine.models import Candidate
from review_app.widgets.pending_list import PendingList

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def cand(i: int, user: str = "u-ana", kind: str = "new", **extra: Any) -> Candidate:
    return Candidate(
        id=i,
        user_id=user,
        statement=f"Fact number {i}",
        kind=kind,  # type: ignore[arg-type]
        status="pending",
        confidence=0.9,
        created_at=NOW - timedelta(hours=i),
        evidence="",
        **extra,
    )


class Host(App[None]):
    def __init__(self, rows: list[Candidate]) -> None:
        super().__init__()
        self.rows = rows
        self.said: list[Message] = []

    def compose(self) -> ComposeResult:
        yield PendingList(id="pending")

    def on_mount(self) -> None:
        widget = self.query_one(PendingList)
        widget.load(self.rows, sort="age", now=NOW)
        widget.focus()

    def on_pending_list_highlighted(self, message: PendingList.Highlighted) -> None:
        self.said.append(message)

    def on_pending_list_near_end(self, message: PendingList.NearEnd) -> None:
        self.said.append(message)


async def test_a_removal_redraws_no_other_rows_cells() -> None:
    app = Host([cand(i) for i in range(1, 101)])
    async with app.run_test(size=(100, 30)) as pilot:
        widget = app.query_one(PendingList)
        await pilot.pause()
        rendered: list[int] = []
        original = widget._cells

        def counting(index: int) -> Any:
            rendered.append(widget.row_ids[index])
            return original(index)

        widget._cells = counting  # type: ignore[method-assign]
        widget.remove_row(1)
        await pilot.pause()
        # the rows below moved up one line: only the row that came into view at the bottom is new
        assert len(rendered) <= 1, rendered
        assert widget.row_ids[:2] == [2, 3] and widget.cursor_id == 2
        # control: a change to what a row shows (a mark) redraws that row, and only it
        rendered.clear()
        widget.toggle_mark(3)
        await pilot.pause()
        assert rendered == [3]
        assert widget.cells(3)["mark"].plain == "●"


async def test_keys_move_the_cursor_and_say_so_and_the_end_asks_for_more() -> None:
    app = Host([cand(i) for i in range(1, 41)])
    async with app.run_test(size=(100, 30)) as pilot:
        widget = app.query_one(PendingList)
        await pilot.pause()
        await pilot.press("down", "down")
        await pilot.pause()
        highlighted = [m.candidate_id for m in app.said if isinstance(m, PendingList.Highlighted)]
        assert highlighted == [2, 3] and widget.cursor_row == 2
        await pilot.press("end")
        await pilot.pause()
        assert widget.cursor_id == 40
        assert any(isinstance(m, PendingList.NearEnd) and m.loaded == 40 for m in app.said)
        assert widget.scroll_y > 0  # the cursor's row is in view
        app.said.clear()
        await pilot.press("home")
        await pilot.pause()
        assert widget.cursor_row == 0 and widget.scroll_y == 0
        # control: a key that does not move the cursor (up on the first row) says nothing
        app.said.clear()
        await pilot.press("up")
        await pilot.pause()
        assert not [m for m in app.said if isinstance(m, PendingList.Highlighted)]


async def test_a_click_selects_the_row_under_the_mouse() -> None:
    app = Host([cand(i) for i in range(1, 11)])
    async with app.run_test(size=(100, 30)) as pilot:
        widget = app.query_one(PendingList)
        await pilot.pause()
        await pilot.click(PendingList, offset=(5, 4))  # line 0 is the header: line 4 is the 4th row
        await pilot.pause()
        assert widget.cursor_id == 4
        await pilot.click(PendingList, offset=(5, 0))  # control: the header selects nothing
        await pilot.pause()
        assert widget.cursor_id == 4


async def test_groups_holders_and_narrow_columns() -> None:
    rows = [cand(1, "u-ana"), cand(2, "u-ana"), cand(3, "u-ben", kind="update", unsupported=True)]
    app = Host(rows)
    async with app.run_test(size=(100, 30)) as pilot:
        widget = app.query_one(PendingList)
        widget.load(rows, sort="user", now=NOW)
        await pilot.pause()
        # grouped by user: the user is shown on a group's first row only
        assert [widget.cells(i)["user"].plain for i in (1, 2, 3)] == ["u-ana", "", "u-ben"]
        widget.set_holder(2, "ben")
        assert widget.cells(2)["statement"].plain == "⊘ ben: Fact number 2"
        widget.set_holder(2, None)
        assert widget.cells(2)["statement"].plain == "Fact number 2"
        assert widget.cells(3)["kind"].plain == "update⚠"
        widget.set_narrow(True)
        await pilot.pause()
        assert list(widget.cells(3)) == ["mark", "user", "kind", "statement"]
        assert widget.cells(3)["kind"].plain == "upd⚠"  # an update never looks like a new fact
        widget.remove_row(1)
        await pilot.pause()
        assert widget.cells(2)["user"].plain == "u-ana"  # now the first of its group


async def test_removing_a_row_above_the_cursor_keeps_the_cursor_on_its_candidate() -> None:
    app = Host([cand(i) for i in range(1, 11)])
    async with app.run_test(size=(100, 30)) as pilot:
        widget = app.query_one(PendingList)
        widget.move_cursor(4)
        await pilot.pause()
        assert widget.cursor_id == 5
        widget.remove_row(2)  # decided elsewhere, above the reviewer
        assert widget.cursor_id == 5
        widget.remove_row(5)  # control: the row under the cursor leaves, the next takes its place
        assert widget.cursor_id == 6 and widget.cursor_row == 3

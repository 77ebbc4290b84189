"""Flows of the Knowledge, Tombstones, Stats and Help screens, driven through Pilot and checked
against the database afterwards through a fresh `Memory` (what the screen shows is not evidence
that anything was stored).
"""

from __future__ import annotations

import asyncio
import io
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Static

from engine import Memory
from engine.stats import DayFigures
from review_app.app import ReviewApp
from review_app.modals import ReasonModal
from review_app.screens import knowledge as knowledge_screen
from review_app.screens.help import HelpScreen
from review_app.screens.knowledge import KnowledgeScreen
from review_app.screens.queue import QueueScreen
from review_app.screens.tombstones import STATEMENT_WIDTH, TombstonesScreen
from review_app.widgets.knowledge_correct import CorrectModal
from review_app.widgets.literal import clipped, visible
from review_app.widgets.stats_render import daily_series
from tests.pilot_helpers import settle
from tests.tui_seed import MARKUP_STATEMENT, SeededDb, fixed_clock

SIZE = (160, 48)


async def open_mode(pilot: Pilot[Any], key: str) -> None:
    await settle(pilot)
    await pilot.press(key)
    await settle(pilot)


def table_rows(table: DataTable[Any]) -> dict[str, list[str]]:
    """Row key -> the plain text of every cell, as displayed."""
    out: dict[str, list[str]] = {}
    for row_key in table.rows:
        out[str(row_key.value)] = [str(getattr(cell, "plain", cell)) for cell in table.get_row(row_key)]
    return out


def shown(static: Static) -> str:
    """The text a Static displays, whatever renderable it holds (Rich tables included)."""
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(static.content)
    return console.export_text()


def move_to(table: DataTable[Any], key: int) -> None:
    table.move_cursor(row=table.get_row_index(str(key)))


async def fresh(db: str) -> Memory:
    return await Memory(db, clock=fixed_clock).open()


# -- Knowledge ------------------------------------------------------------------------------------


async def test_correct_requires_a_reason_then_supersedes_the_old_version(tui_db: SeededDb) -> None:
    db, ids = tui_db
    app = ReviewApp(db, "sam", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await open_mode(pilot, "2")
        screen = app.screen
        assert isinstance(screen, KnowledgeScreen)
        assert screen.user_id == "u-ana"
        move_to(screen.table, ids["nurse"])
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, CorrectModal)
        modal.query_one("#correct-statement", Input).value = "Ana works as a midwife"
        await pilot.press("ctrl+s")  # no reason yet
        await settle(pilot)
        assert app.screen is modal, "a correction without a reason must not be accepted"
        assert "reason is required" in shown(modal.query_one("#correct-reason-error", Static))
        mem = await fresh(db)
        try:
            assert (await mem.get_knowledge("u-ana", ids["nurse"])).status == "active"
        finally:
            await mem.close()

        modal.query_one("#correct-reason", Input).value = "the user is a midwife"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert app.screen is screen
        rows = table_rows(screen.table)
        assert [r[1] for r in rows.values()] == ["Ana lives in Porto", "Ana works as a midwife"]
        assert "corrected" in shown(screen.query_one("#knowledge-status", Static))

    mem = await fresh(db)
    try:
        old = await mem.get_knowledge("u-ana", ids["nurse"])
        assert old.status == "superseded" and old.end_reason == "corrected"
        assert old.superseded_by is not None
        new = await mem.get_knowledge("u-ana", old.superseded_by)
        assert (new.statement, new.status, new.created_by) == ("Ana works as a midwife", "active", "sam")
        events = await mem.history("u-ana", new.id)
        assert any(e.action == "correct" and e.reason == "the user is a midwife" for e in events)
    finally:
        await mem.close()


async def test_retract_with_tombstone_removes_the_fact_from_retrieval(tui_db: SeededDb) -> None:
    db, ids = tui_db
    app = ReviewApp(db, "sam", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await open_mode(pilot, "2")
        screen = app.screen
        assert isinstance(screen, KnowledgeScreen)
        move_to(screen.table, ids["porto"])
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, ReasonModal)
        modal.query_one("#reason-input", Input).value = "wrong city"
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is screen
        assert str(ids["porto"]) not in table_rows(screen.table), "a retracted fact leaves the active view"
        assert "tombstone written" in shown(screen.query_one("#knowledge-status", Static))

    mem = await fresh(db)
    try:
        porto = await mem.get_knowledge("u-ana", ids["porto"])
        assert (porto.status, porto.end_reason) == ("retracted", "wrong city")
        assert await mem.is_tombstoned("u-ana", "Ana lives in Porto") is not None
        found = [i.knowledge.id for i in (await mem.retrieve("Ana lives works", user_id="u-ana")).items]
        assert ids["porto"] not in found
        assert ids["nurse"] in found  # positive control: the other fact is still retrieved
    finally:
        await mem.close()


async def test_a_large_user_shows_a_bounded_table_and_search_narrows_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(knowledge_screen, "MAX_ROWS", 5)
    db = str(tmp_path / "large.db")
    async with Memory(db, clock=fixed_clock) as mem:
        facts = await mem.add_knowledge_many("u-big", [f"Big likes colour number {i}" for i in range(8)], actor="t")
    app = ReviewApp(db, "sam", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await open_mode(pilot, "2")
        screen = app.screen
        assert isinstance(screen, KnowledgeScreen)
        assert list(table_rows(screen.table)) == [str(k.id) for k in facts[:5]]  # the oldest five, not all 8
        assert "search to narrow" in shown(screen.query_one("#knowledge-mode", Static))
        await pilot.press("slash")
        screen.query_one("#knowledge-search", Input).value = "number 7"
        await pilot.press("enter")
        await settle(pilot)
        assert list(table_rows(screen.table)) == [str(facts[7].id)]  # beyond the cut, found by search
        assert "search to narrow" not in shown(screen.query_one("#knowledge-mode", Static))


async def test_as_of_date_shows_the_version_valid_then(tmp_path: Path) -> None:
    db = str(tmp_path / "asof.db")
    async with Memory(db, clock=fixed_clock) as mem:
        rui = await mem.add_knowledge(
            "u-dan",
            "Dan's manager is Rui",
            actor="t",
            valid_at=datetime(2020, 1, 1, tzinfo=UTC),
            invalid_at=datetime(2024, 1, 1, tzinfo=UTC),
        )
        sofia = await mem.add_knowledge(
            "u-dan", "Dan's manager is Sofia", actor="t", valid_at=datetime(2024, 1, 1, tzinfo=UTC)
        )
    app = ReviewApp(db, "sam", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await open_mode(pilot, "2")
        screen = app.screen
        assert isinstance(screen, KnowledgeScreen)
        assert set(table_rows(screen.table)) == {str(rui.id), str(sofia.id)}

        await pilot.press("d")
        asof = screen.query_one("#knowledge-asof", Input)
        assert screen.focused is asof
        asof.value = "2022-06-01"
        await pilot.press("enter")
        await settle(pilot)
        assert set(table_rows(screen.table)) == {str(rui.id)}

        screen.query_one("#knowledge-asof", Input).value = "2025-02-01"
        await pilot.press("d", "enter")
        await settle(pilot)
        assert set(table_rows(screen.table)) == {str(sofia.id)}

        screen.query_one("#knowledge-asof", Input).value = "not a date"
        await pilot.press("d", "enter")
        await settle(pilot)
        error = shown(screen.query_one("#knowledge-asof-error", Static))
        assert "not an ISO 8601 date" in error
        assert set(table_rows(screen.table)) == {str(sofia.id)}, "a bad date keeps the last good view"


async def test_expired_toggle_and_history_show_the_chain(tui_db: SeededDb) -> None:
    db, ids = tui_db
    app = ReviewApp(db, "sam", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await open_mode(pilot, "2")
        screen = app.screen
        assert isinstance(screen, KnowledgeScreen)
        assert str(ids["lisbon"]) not in table_rows(screen.table)
        await pilot.press("x")
        await settle(pilot)
        rows = table_rows(screen.table)
        assert rows[str(ids["lisbon"])][2:4] == ["superseded", "corrected"]
        move_to(screen.table, ids["porto"])
        await settle(pilot)
        versions = shown(screen.query_one("#knowledge-versions", Static))
        audit = shown(screen.query_one("#knowledge-audit", Static))
        assert versions.index("Ana lives in Lisbon") < versions.index("Ana lives in Porto")
        assert "correct" in audit and "moved" in audit and "support" in audit


async def test_user_text_with_markup_is_shown_literally(tui_db: SeededDb) -> None:
    db, ids = tui_db
    async with Memory(db, clock=fixed_clock) as mem:
        fact = await mem.review.approve(ids["markup"], reviewer="curator")
        await mem.retract("u-ben", fact.id, actor="support", reason="[i]spam[/i]", tombstone=True)
    shown = visible(MARKUP_STATEMENT)
    assert "␛[31mred" in shown and "[b]bold[/b]" in shown
    app = ReviewApp(db, "sam", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await open_mode(pilot, "2")
        screen = app.screen
        assert isinstance(screen, KnowledgeScreen)
        screen.query_one("#knowledge-user").value = "u-ben"  # type: ignore[attr-defined]
        await settle(pilot)
        await pilot.press("x")
        await settle(pilot)
        row = table_rows(screen.table)[str(fact.id)]
        assert row[1] == shown and row[3] == "[i]spam[/i]"
        move_to(screen.table, fact.id)
        await settle(pilot)
        assert shown in app.export_screenshot().replace("&#160;", " ")

        await open_mode(pilot, "3")
        stones = app.screen
        assert isinstance(stones, TombstonesScreen)
        # the table cuts the statement to its column, visibly: "…" (issue 29.6), the detail has it whole
        cut = clipped(MARKUP_STATEMENT, STATEMENT_WIDTH).plain
        assert cut.endswith("…") and len(cut) == STATEMENT_WIDTH and shown.startswith(cut[:-1])
        texts = [r for r in table_rows(stones.table).values() if r[2] == cut]
        assert texts and texts[0][3] == "[i]spam[/i]"


# -- Tombstones -----------------------------------------------------------------------------------


async def test_lift_needs_a_reason_and_ends_the_tombstone(tui_db: SeededDb) -> None:
    db, ids = tui_db
    app = ReviewApp(db, "sam", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await open_mode(pilot, "3")
        screen = app.screen
        assert isinstance(screen, TombstonesScreen)
        rows = table_rows(screen.table)
        assert str(ids["age_tombstone"]) not in rows, "lifted tombstones are hidden by default"
        assert {str(ids["queen_tombstone"])} <= set(rows)
        move_to(screen.table, ids["queen_tombstone"])
        await pilot.press("l")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, ReasonModal)
        await pilot.press("enter")  # empty reason
        await settle(pilot)
        assert app.screen is modal
        modal.query_one("#reason-input", Input).value = "the user really is royalty"
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is screen
        assert str(ids["queen_tombstone"]) not in table_rows(screen.table)
        await pilot.press("x")
        await settle(pilot)
        lifted = table_rows(screen.table)[str(ids["queen_tombstone"])][6]
        assert "by sam" in lifted and "royalty" in lifted

    mem = await fresh(db)
    try:
        assert await mem.is_tombstoned("u-ana", "Ana is the queen of Spain") is None
        assert await mem.is_tombstoned("u-cho", "Cho works at Initech") is not None  # control: untouched
        events = await mem.history("u-ana")
        assert any(e.action == "lift" and e.actor == "sam" and e.reason == "the user really is royalty" for e in events)
    finally:
        await mem.close()


async def test_tombstones_per_user(tui_db: SeededDb) -> None:
    db, _ = tui_db
    app = ReviewApp(db, "sam", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await open_mode(pilot, "3")
        screen = app.screen
        assert isinstance(screen, TombstonesScreen)
        assert {r[1] for r in table_rows(screen.table).values()} == {"u-ana", "u-cho"}
        screen.query_one("#tombstones-user").value = "u-cho"  # type: ignore[attr-defined]
        await settle(pilot)
        assert {r[1] for r in table_rows(screen.table).values()} == {"u-cho"}


# -- Stats ----------------------------------------------------------------------------------------


def test_daily_series_fills_quiet_days_and_tracks_the_queue() -> None:
    daily = [
        DayFigures(date(2026, 3, 1), queued=3, decided=1),
        DayFigures(date(2026, 3, 4), queued=1, decided=2),
    ]
    points = daily_series(daily, until=date(2026, 3, 5))
    assert [p.day.day for p in points] == [1, 2, 3, 4, 5]
    assert [p.decided for p in points] == [1, 0, 0, 2, 0]
    assert [p.queue_size for p in points] == [2, 2, 2, 1, 1]
    tail = daily_series(daily, until=date(2026, 3, 5), max_days=2)
    assert [(p.day.day, p.queue_size) for p in tail] == [(4, 1), (5, 1)]  # earlier days still counted
    assert daily_series([]) == []


async def test_stats_screen_shows_the_engine_numbers(tui_db: SeededDb) -> None:
    db, _ = tui_db
    app = ReviewApp(db, "sam", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await open_mode(pilot, "4")
        headline = shown(app.screen.query_one("#stats-headline", Static))
        assert "pending 8" in headline and "decided 9" in headline
        queue_chart = app.screen.query_one("#stats-queue-spark")
        assert list(queue_chart.data or [])[-1] == 8  # type: ignore[attr-defined]


# -- Help -----------------------------------------------------------------------------------------


async def test_help_lists_every_binding_of_the_queue_screen_as_mapped(tui_db: SeededDb) -> None:
    db, _ = tui_db
    app = ReviewApp(db, "sam", clock=fixed_clock, keymap={"app.mode.stats": "f4"})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, QueueScreen)
        wanted = {b.id for b in QueueScreen.BINDINGS if hasattr(b, "id") and b.id}  # type: ignore[union-attr]
        wanted |= {b.id for b in ReviewApp.BINDINGS if hasattr(b, "id") and b.id}  # type: ignore[union-attr]
        assert len(wanted) > 10
        await pilot.press("question_mark")
        await settle(pilot)
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        rows = list(table_rows(help_screen.query_one("#help-table", DataTable)).values())
        listed = {r[2] for r in rows}
        assert wanted <= listed, wanted - listed
        keys = {r[2]: r[1] for r in rows}
        assert keys["app.mode.stats"] == "f4"  # the keymap, not the default "4"
        assert keys["app.mode.queue"] == "1"
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, QueueScreen)


# -- engine: the connection survives a cancelled read ---------------------------------------------


async def test_a_cancelled_read_leaves_the_connection_usable(tmp_path: Path) -> None:
    async with Memory(str(tmp_path / "c.db"), clock=fixed_clock) as mem:
        await mem.add_knowledge("u1", "U1 likes tea", actor="t")
        task = asyncio.ensure_future(mem.knowledge("u1"))
        await asyncio.sleep(0)  # the read is now awaiting its BEGIN
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert [k.statement for k in await mem.knowledge("u1")] == ["U1 likes tea"]
        await mem.add_knowledge("u1", "U1 likes jazz", actor="t")  # and writes still work


@pytest.mark.parametrize("size", [SIZE, (80, 24)])
async def test_an_imports_marks_show_beside_the_facts_audit_events(tmp_path: Path, size: tuple[int, int]) -> None:
    """An import marks a look-alike in the fact's audit row ("looks like fact #N"): the Knowledge
    screen's audit pane shows it, at both widths; a fact without a mark shows none (control)."""
    db = str(tmp_path / "import.db")
    async with Memory(db, clock=fixed_clock) as mem:
        horse, house = await mem.add_knowledge_many("u-ana", ["Ana owns a horse", "Ana owns a house"], "import:csv")
    app = ReviewApp(db, "sam", clock=fixed_clock)
    async with app.run_test(size=size) as pilot:
        await open_mode(pilot, "2")
        screen = app.screen
        assert isinstance(screen, KnowledgeScreen)
        move_to(screen.table, house.id)
        await settle(pilot)
        assert f"≈ looks like fact #{horse.id}" in shown(screen.query_one("#knowledge-audit", Static))
        move_to(screen.table, horse.id)
        await settle(pilot)
        audit = shown(screen.query_one("#knowledge-audit", Static))
        assert "inject" in audit and "≈" not in audit

"""Snapshots of the Queue screen and its modals: seeded database, fixed clock, no blinking cursor,
so every SVG is identical on every run and machine (regenerate with --snapshot-update, then LOOK)."""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot

from engine.errors import UserInputError
from review_app.app import ReviewApp
from tests.pilot_helpers import settle, then
from tests.tui_seed import SeededDb, fixed_clock

WIDE = (160, 48)
MEDIUM = (120, 36)
NARROW = (100, 30)


@pytest.fixture
def app(tui_db: SeededDb) -> ReviewApp:
    """A fresh copy per snapshot: the app takes leases, so no snapshot sees another's."""
    return ReviewApp(tui_db[0], "ana", clock=fixed_clock)


def test_queue_wide(snap_compare: Any, app: ReviewApp) -> None:
    assert snap_compare(app, terminal_size=WIDE, run_before=then())


def test_queue_narrow_uses_tabs(snap_compare: Any, app: ReviewApp) -> None:
    assert snap_compare(app, terminal_size=NARROW, run_before=then())


def test_queue_medium_uses_tabs(snap_compare: Any, app: ReviewApp) -> None:
    assert snap_compare(app, terminal_size=MEDIUM, run_before=then())


def test_queue_update_shows_the_word_diff(snap_compare: Any, app: ReviewApp) -> None:
    assert snap_compare(app, terminal_size=WIDE, run_before=then("n"))


def test_queue_retraction_request(snap_compare: Any, app: ReviewApp) -> None:
    assert snap_compare(app, terminal_size=WIDE, run_before=then("n", "n", "n", "n", "n", "n", "n"))


def test_reject_modal(snap_compare: Any, app: ReviewApp) -> None:
    assert snap_compare(app, terminal_size=WIDE, run_before=then("r"))


def test_edit_modal_with_inline_error(snap_compare: Any, app: ReviewApp) -> None:
    async def run(pilot: Pilot[Any]) -> None:
        await then("e")(pilot)
        pilot.app.screen.query_one("#edit-valid-at").value = "2025-06-01"  # type: ignore[attr-defined]
        pilot.app.screen.query_one("#edit-invalid-at").value = "2024-01-01"  # type: ignore[attr-defined]
        await pilot.press("ctrl+s")
        await settle(pilot)

    assert snap_compare(app, terminal_size=WIDE, run_before=run)


def test_bulk_confirm_modal(snap_compare: Any, app: ReviewApp) -> None:
    assert snap_compare(app, terminal_size=WIDE, run_before=then("b"))


def test_error_modal(snap_compare: Any, app: ReviewApp) -> None:
    async def run(pilot: Pilot[Any]) -> None:
        await settle(pilot)

        async def broken(*args: Any, **kwargs: Any) -> Any:
            raise UserInputError("the statement is empty")

        app.memory.review.approve = broken  # type: ignore[method-assign]
        await pilot.press("a")
        await settle(pilot)

    assert snap_compare(app, terminal_size=WIDE, run_before=run)


def test_filter_modal(snap_compare: Any, app: ReviewApp) -> None:
    assert snap_compare(app, terminal_size=WIDE, run_before=then("f"))


def test_search_filters_the_list(snap_compare: Any, app: ReviewApp) -> None:
    assert snap_compare(app, terminal_size=WIDE, run_before=then("slash", "c", "h", "o"))

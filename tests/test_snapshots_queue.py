"""Snapshots of the Queue screen and its dialogs at 80x24 (the floor), 120x36 and 160x48: seeded
database, fixed clock, no blinking cursor, so every SVG is identical on every run and machine
(regenerate with --snapshot-update, then LOOK at what changed)."""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot

from engine.errors import UserInputError
from review_app.app import ReviewApp
from tests.pilot_helpers import settle, then
from tests.tui_seed import SeededDb, fixed_clock

WIDE = (160, 48)
SIZES = [
    pytest.param((80, 24), id="80x24"),
    pytest.param((100, 30), id="100x30"),
    pytest.param((120, 36), id="120x36"),
    pytest.param(WIDE, id="160x48"),
]


@pytest.fixture
def app(tui_db: SeededDb) -> ReviewApp:
    """A fresh copy per snapshot: the app takes leases, so no snapshot sees another's."""
    return ReviewApp(tui_db[0], "ana", clock=fixed_clock)


@pytest.mark.parametrize("size", SIZES)
def test_queue(snap_compare: Any, app: ReviewApp, size: tuple[int, int]) -> None:
    assert snap_compare(app, terminal_size=size, run_before=then())


@pytest.mark.parametrize("size", SIZES)
def test_reject_modal(snap_compare: Any, app: ReviewApp, size: tuple[int, int]) -> None:
    assert snap_compare(app, terminal_size=size, run_before=then("r"))


@pytest.mark.parametrize("size", SIZES)
def test_edit_modal_with_inline_error(snap_compare: Any, app: ReviewApp, size: tuple[int, int]) -> None:
    async def run(pilot: Pilot[Any]) -> None:
        await then("e")(pilot)
        pilot.app.screen.query_one("#edit-valid-at").value = "2025-06-01"  # type: ignore[attr-defined]
        pilot.app.screen.query_one("#edit-invalid-at").value = "2024-01-01"  # type: ignore[attr-defined]
        await pilot.press("ctrl+s")
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run)


@pytest.mark.parametrize("size", SIZES)
def test_bulk_confirm_modal(snap_compare: Any, app: ReviewApp, size: tuple[int, int]) -> None:
    assert snap_compare(app, terminal_size=size, run_before=then("b"))


@pytest.mark.parametrize("size", SIZES)
def test_bulk_reject_of_marked_rows(snap_compare: Any, app: ReviewApp, size: tuple[int, int]) -> None:
    assert snap_compare(app, terminal_size=size, run_before=then("o", "space", "space", "r"))


@pytest.mark.parametrize("size", SIZES)
def test_error_modal(snap_compare: Any, app: ReviewApp, size: tuple[int, int]) -> None:
    async def run(pilot: Pilot[Any]) -> None:
        await settle(pilot)

        async def broken(*args: Any, **kwargs: Any) -> Any:
            raise UserInputError("the statement is empty")

        app.memory.review.approve = broken  # type: ignore[method-assign]
        await pilot.press("a")
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run)


@pytest.mark.parametrize("size", SIZES)
def test_filter_modal(snap_compare: Any, app: ReviewApp, size: tuple[int, int]) -> None:
    assert snap_compare(app, terminal_size=size, run_before=then("f"))


def test_queue_update_shows_the_word_diff(snap_compare: Any, app: ReviewApp) -> None:
    assert snap_compare(app, terminal_size=WIDE, run_before=then("n"))


def test_queue_retraction_request(snap_compare: Any, app: ReviewApp) -> None:
    assert snap_compare(app, terminal_size=WIDE, run_before=then("n", "n", "n", "n", "n", "n", "n"))


def test_search_filters_the_list(snap_compare: Any, app: ReviewApp) -> None:
    assert snap_compare(app, terminal_size=WIDE, run_before=then("slash", "c", "h", "o"))


def test_search_matching_nothing_says_why(snap_compare: Any, app: ReviewApp) -> None:
    assert snap_compare(app, terminal_size=WIDE, run_before=then("slash", "z", "z", "z"))


@pytest.fixture
def chain_app(tmp_path: Any) -> ReviewApp:
    import asyncio

    from tests.tui_seed import seed_chain

    path = str(tmp_path / "chain.db")
    asyncio.run(seed_chain(path))
    return ReviewApp(path, "ana", clock=fixed_clock)


@pytest.mark.parametrize("size", SIZES)
def test_chain_view(snap_compare: Any, chain_app: ReviewApp, size: tuple[int, int]) -> None:
    assert snap_compare(chain_app, terminal_size=size, run_before=then("l"))


@pytest.mark.parametrize("size", SIZES)
def test_discarded_list(snap_compare: Any, chain_app: ReviewApp, size: tuple[int, int]) -> None:
    assert snap_compare(chain_app, terminal_size=size, run_before=then("5"))


@pytest.mark.parametrize("size", SIZES)
def test_supersede_or_keep_both_question(snap_compare: Any, app: ReviewApp, size: tuple[int, int]) -> None:
    assert snap_compare(app, terminal_size=size, run_before=then("n", "a"))

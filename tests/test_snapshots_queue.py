"""Snapshots of the Queue screen and its modals: seeded database, fixed clock, no blinking cursor,
so every SVG is identical on every run and machine (regenerate with --snapshot-update, then LOOK)."""

from __future__ import annotations

import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from engine.errors import UserInputError
from review_app.app import ReviewApp
from tests.tui_seed import fixed_clock, seed_sync

WIDE = (160, 48)
MEDIUM = (120, 36)
NARROW = (100, 30)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("seed") / "seed.db"
    seed_sync(str(path))
    return path


@pytest.fixture
def app(template: Path, tmp_path: Path) -> ReviewApp:
    """A fresh copy per snapshot: the app takes leases, so no snapshot sees another's."""
    target = tmp_path / "snap.db"
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{template}{suffix}").exists():
            shutil.copyfile(f"{template}{suffix}", f"{target}{suffix}")
    return ReviewApp(str(target), "ana", clock=fixed_clock)


async def settle(pilot: Pilot[Any]) -> None:
    for _ in range(4):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def then(*keys: str) -> Callable[[Pilot[Any]], Awaitable[None]]:
    """run_before: wait for the queue, press `keys`, wait for every worker they started."""

    async def run(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)

    return run


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

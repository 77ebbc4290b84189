"""Snapshots of the Knowledge, Tombstones, Stats and Help screens and their dialogs at 160x48.

Every snapshot runs on a copy of the seeded database (tests/tui_seed.py) with the fixed clock, so
the SVGs are identical on every run and machine. `run_before` drives the app and then waits for
every worker, so the picture is of the finished screen, never of a half-loaded one.
"""

from __future__ import annotations

import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from review_app.app import ReviewApp
from tests.tui_seed import fixed_clock, seed_sync

SIZE = (160, 48)


@pytest.fixture(scope="module")
def seeded_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("seed") / "seed.db"
    seed_sync(str(path))
    return path


@pytest.fixture
def db(seeded_file: Path, tmp_path: Path) -> str:
    """A private copy: a snapshot that changes data must not change the next one's."""
    target = tmp_path / "seed.db"
    shutil.copy(seeded_file, target)
    return str(target)


async def settle(pilot: Pilot[Any]) -> None:
    for _ in range(3):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


def keys(*pressed: str) -> Callable[[Pilot[Any]], Awaitable[None]]:
    """A run_before that presses `pressed` one at a time, letting the workers finish between."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        for key in pressed:
            await pilot.press(key)
            await settle(pilot)

    return run_before


def app(db: str) -> ReviewApp:
    return ReviewApp(db, "ana", clock=fixed_clock)


def test_knowledge_with_history(db: str, snap_compare: Any) -> None:
    # the second fact (Porto) has a chain: Lisbon -> Porto, corrected by support
    assert snap_compare(app(db), terminal_size=SIZE, run_before=keys("2", "down"))


def test_knowledge_showing_expired(db: str, snap_compare: Any) -> None:
    assert snap_compare(app(db), terminal_size=SIZE, run_before=keys("2", "x"))


def test_correct_modal(db: str, snap_compare: Any) -> None:
    assert snap_compare(app(db), terminal_size=SIZE, run_before=keys("2", "c"))


def test_retract_modal(db: str, snap_compare: Any) -> None:
    assert snap_compare(app(db), terminal_size=SIZE, run_before=keys("2", "down", "t"))


def test_tombstones(db: str, snap_compare: Any) -> None:
    assert snap_compare(app(db), terminal_size=SIZE, run_before=keys("3", "x"))


def test_lift_modal(db: str, snap_compare: Any) -> None:
    assert snap_compare(app(db), terminal_size=SIZE, run_before=keys("3", "l"))


def test_stats(db: str, snap_compare: Any) -> None:
    assert snap_compare(app(db), terminal_size=SIZE, run_before=keys("4"))


def test_help(db: str, snap_compare: Any) -> None:
    assert snap_compare(app(db), terminal_size=SIZE, run_before=keys("2", "question_mark"))

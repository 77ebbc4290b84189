"""Snapshots of the Knowledge, Tombstones, Stats and Help screens and their dialogs at 80x24 (the
floor), 100x30, 120x36 and 160x48.

Every snapshot runs on a copy of the seeded database (tests/tui_seed.py) with the fixed clock, so
the SVGs are identical on every run and machine. `run_before` drives the app and then waits for
every worker, so the picture is of the finished screen, never of a half-loaded one.
"""

from __future__ import annotations

from typing import Any

import pytest

from review_app.app import ReviewApp
from tests.pilot_helpers import then
from tests.tui_seed import SeededDb, fixed_clock

WIDE = (160, 48)
SIZES = [
    pytest.param((80, 24), id="80x24"),
    pytest.param((100, 30), id="100x30"),
    pytest.param((120, 36), id="120x36"),
    pytest.param(WIDE, id="160x48"),
]


def app(db: str) -> ReviewApp:
    return ReviewApp(db, "ana", clock=fixed_clock)


@pytest.mark.parametrize("size", SIZES)
def test_knowledge_with_history(tui_db: SeededDb, snap_compare: Any, size: tuple[int, int]) -> None:
    # the second fact (Porto) has a chain: Lisbon -> Porto, corrected by support
    assert snap_compare(app(tui_db[0]), terminal_size=size, run_before=then("2", "down"))


def test_knowledge_showing_expired(tui_db: SeededDb, snap_compare: Any) -> None:
    assert snap_compare(app(tui_db[0]), terminal_size=WIDE, run_before=then("2", "x"))


@pytest.mark.parametrize("size", SIZES)
def test_correct_modal(tui_db: SeededDb, snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(app(tui_db[0]), terminal_size=size, run_before=then("2", "c"))


@pytest.mark.parametrize("size", SIZES)
def test_retract_modal(tui_db: SeededDb, snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(app(tui_db[0]), terminal_size=size, run_before=then("2", "down", "t"))


@pytest.mark.parametrize("size", SIZES)
def test_retract_modal_without_a_tombstone(tui_db: SeededDb, snap_compare: Any, size: tuple[int, int]) -> None:
    """The note under the box says what the unticked box will do (no tombstone)."""
    assert snap_compare(app(tui_db[0]), terminal_size=size, run_before=then("2", "down", "t", "ctrl+t"))


@pytest.mark.parametrize("size", SIZES)
def test_add_fact_modal(tui_db: SeededDb, snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(app(tui_db[0]), terminal_size=size, run_before=then("2", "n"))


@pytest.mark.parametrize("size", SIZES)
def test_tombstones(tui_db: SeededDb, snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(app(tui_db[0]), terminal_size=size, run_before=then("3", "x"))


@pytest.mark.parametrize("size", SIZES)
def test_lift_modal(tui_db: SeededDb, snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(app(tui_db[0]), terminal_size=size, run_before=then("3", "l"))


@pytest.mark.parametrize("size", SIZES)
def test_stats(tui_db: SeededDb, snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(app(tui_db[0]), terminal_size=size, run_before=then("4"))


@pytest.mark.parametrize("size", SIZES)
def test_help(tui_db: SeededDb, snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(app(tui_db[0]), terminal_size=size, run_before=then("2", "question_mark"))


@pytest.mark.parametrize("size", SIZES)
def test_messages_view(tui_db: SeededDb, snap_compare: Any, size: tuple[int, int]) -> None:
    """A user's messages with what extraction made of each; `]` lands on one that yielded nothing."""
    assert snap_compare(app(tui_db[0]), terminal_size=size, run_before=then("2", "m", "right_square_bracket"))


@pytest.mark.parametrize("size", SIZES)
def test_user_picker(tui_db: SeededDb, snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(app(tui_db[0]), terminal_size=size, run_before=then("3", "u", "b"))

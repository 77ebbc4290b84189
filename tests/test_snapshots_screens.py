"""Snapshots of the Knowledge, Tombstones, Stats and Help screens and their dialogs at 160x48.

Every snapshot runs on a copy of the seeded database (tests/tui_seed.py) with the fixed clock, so
the SVGs are identical on every run and machine. `run_before` drives the app and then waits for
every worker, so the picture is of the finished screen, never of a half-loaded one.
"""

from __future__ import annotations

from typing import Any

from review_app.app import ReviewApp
from tests.pilot_helpers import then
from tests.tui_seed import SeededDb, fixed_clock

SIZE = (160, 48)


def app(db: str) -> ReviewApp:
    return ReviewApp(db, "ana", clock=fixed_clock)


def test_knowledge_with_history(tui_db: SeededDb, snap_compare: Any) -> None:
    # the second fact (Porto) has a chain: Lisbon -> Porto, corrected by support
    assert snap_compare(app(tui_db[0]), terminal_size=SIZE, run_before=then("2", "down"))


def test_knowledge_showing_expired(tui_db: SeededDb, snap_compare: Any) -> None:
    assert snap_compare(app(tui_db[0]), terminal_size=SIZE, run_before=then("2", "x"))


def test_correct_modal(tui_db: SeededDb, snap_compare: Any) -> None:
    assert snap_compare(app(tui_db[0]), terminal_size=SIZE, run_before=then("2", "c"))


def test_retract_modal(tui_db: SeededDb, snap_compare: Any) -> None:
    assert snap_compare(app(tui_db[0]), terminal_size=SIZE, run_before=then("2", "down", "t"))


def test_tombstones(tui_db: SeededDb, snap_compare: Any) -> None:
    assert snap_compare(app(tui_db[0]), terminal_size=SIZE, run_before=then("3", "x"))


def test_lift_modal(tui_db: SeededDb, snap_compare: Any) -> None:
    assert snap_compare(app(tui_db[0]), terminal_size=SIZE, run_before=then("3", "l"))


def test_stats(tui_db: SeededDb, snap_compare: Any) -> None:
    assert snap_compare(app(tui_db[0]), terminal_size=SIZE, run_before=then("4"))


def test_help(tui_db: SeededDb, snap_compare: Any) -> None:
    assert snap_compare(app(tui_db[0]), terminal_size=SIZE, run_before=then("2", "question_mark"))

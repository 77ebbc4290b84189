"""Snapshots of the team views at 80x24 and 160x48: the queue's progress line (with a measured
pace, a second opinion to give and second reviews waiting), the flag dialog, the blind second
review and the Reviewers view. Seeded database, fixed clock (regenerate with --snapshot-update,
then LOOK)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from engine import Memory, MemoryConfig
from review_app.app import ReviewApp
from tests.pilot_helpers import then
from tests.tui_seed import T0, SeededDb

WIDE = (160, 48)
SMALL = (80, 24)
SIZES = [pytest.param(WIDE, id="160x48"), pytest.param(SMALL, id="80x24")]
CONFIG = MemoryConfig(second_review_rate=1.0)  # the draw is secret: every approval drawn, so the picture is fixed


class _Clock:
    def __init__(self) -> None:
        self.now = T0 - timedelta(minutes=10)

    def __call__(self) -> Any:
        return self.now


async def _team_day(path: str, ids: dict[str, int]) -> None:
    """Earlier today: ana decided two candidates a minute apart, bob flagged one for a second
    opinion leaning reject, and cy second-reviewed one of the curator's approvals."""
    clock = _Clock()
    async with Memory(path, clock=clock, config=CONFIG) as mem:
        await mem.review.approve(ids["markup"], "ana")
        clock.now += timedelta(minutes=1)
        await mem.review.reject(ids["unsupported"], "ana", "no evidence")
        clock.now += timedelta(minutes=1)
        await mem.team.flag(ids["low"], "bob", "is 'might' a fact?", lean="reject")
        [first, *_] = await mem.team.second_review_queue("cy")
        await mem.team.second_review(first.candidate_id, "cy", approve=True)


@pytest.fixture
def app(tui_db_drawn: SeededDb) -> ReviewApp:
    path, ids = tui_db_drawn
    asyncio.run(_team_day(path, ids))
    return ReviewApp(path, "ana", clock=lambda: T0, config=CONFIG)


@pytest.mark.parametrize("size", SIZES)
def test_queue_progress_line(snap_compare: Any, app: ReviewApp, size: tuple[int, int]) -> None:
    assert snap_compare(app, terminal_size=size, run_before=then())


@pytest.mark.parametrize("size", SIZES)
def test_flag_modal(snap_compare: Any, app: ReviewApp, size: tuple[int, int]) -> None:
    assert snap_compare(app, terminal_size=size, run_before=then("exclamation_mark"))


@pytest.mark.parametrize("size", SIZES)
def test_second_review(snap_compare: Any, app: ReviewApp, size: tuple[int, int]) -> None:
    assert snap_compare(app, terminal_size=size, run_before=then("v"))


@pytest.mark.parametrize("size", SIZES)
def test_reviewers_view(snap_compare: Any, app: ReviewApp, size: tuple[int, int]) -> None:
    assert snap_compare(app, terminal_size=size, run_before=then("4", "w"))

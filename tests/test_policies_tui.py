"""The workstation's header carries the policies' alarms (engine.policies.PolicyAlarms.header):
the second-review backlog and its age, and suspended scopes; nothing when there is nothing."""

from __future__ import annotations

import re
from datetime import timedelta

from engine import Memory, MemoryConfig
from review_app.app import ReviewApp
from review_app.widgets.progress import ProgressHeader
from tests.pilot_helpers import settle
from tests.test_tui_queue import queue, row, settle_until
from tests.tui_seed import T0, SeededDb, fixed_clock

SIZE = (160, 48)
CONFIG = MemoryConfig(policy_min_decisions=10, second_review_rate=0.0)


def header(app: ReviewApp) -> str:
    return queue(app).query_one(ProgressHeader).render().plain


async def test_the_header_shows_the_second_review_backlog_of_policy_approvals(tui_db: SeededDb) -> None:
    path, _ = tui_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:  # control: no policy, nothing to report
        await settle(pilot)
        assert "⚠" not in header(app) and "2nd review" not in header(app)
    earlier = T0 - timedelta(hours=60)
    async with Memory(path, clock=lambda: earlier, config=CONFIG) as mem:
        await mem.policies.add("homes", "lead", slots=("home",), agents=("bot",), target=0.7, sample_rate=1.0)
        for i in range(10):
            outcome = await mem.propose(f"earn{i}", f"User lives in Earned{i}", actor="bot")
            await mem.review.approve(outcome.candidate_id or 0, "bob")
        await mem.policies.enable("homes", "lead")
        approved = await mem.propose("zed", "User lives in Porto", actor="bot")
        assert approved.accepted_by == "policy:homes"
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle_until(pilot, lambda: "⚠" in header(app), "the alarm line")
        # the policy's approval and bob's in the people's sample (the app's default rate)
        found = re.search(r"⚠ 2nd review (\d+), oldest 60 h PAST SLA", header(app))
        assert found and int(found.group(1)) >= 1, header(app)
        waiting = int(found.group(1))
        # the reviewer opens the second review (v) and upholds the oldest: one fewer waits
        await pilot.press("v")
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        await pilot.press("escape")
        left = f"2nd review {waiting - 1}," if waiting > 1 else None
        await settle_until(
            pilot, lambda: (left in header(app)) if left else "⚠" not in header(app), "the alarm to count down"
        )
    assert row(path, "SELECT verdict, reviewer FROM second_reviews WHERE reviewer != 'lead'") == ("agree", "ana")

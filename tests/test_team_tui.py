"""The team keys of the workstation driven through Pilot (`!` second opinion, `m`/`M` my queue,
`v` second review, `w` Reviewers in Stats, the progress line), each outcome checked in the
DATABASE afterwards, each must-not paired with the same keys doing it."""

from __future__ import annotations

from typing import Any

from textual.widgets import DataTable, Static

from engine import Memory, MemoryConfig
from review_app.app import ReviewApp
from review_app.modals import ConfirmModal, ReasonModal
from review_app.screens.queue import QueueScreen
from review_app.screens.queue_team import FlagModal
from review_app.screens.reviewers import ReviewersScreen
from review_app.screens.second_review import SecondReviewScreen
from review_app.widgets.progress import ProgressHeader
from tests.pilot_helpers import settle
from tests.test_tui_queue import notes, queue, row, settle_until
from tests.tui_seed import SeededDb, fixed_clock

SIZE = (160, 48)


def progress_line(app: ReviewApp) -> str:
    return queue(app).query_one(ProgressHeader).render().plain


def table_rows(table: DataTable[Any]) -> list[list[str]]:
    return [[str(getattr(c, "plain", c)) for c in table.get_row_at(i)] for i in range(table.row_count)]


async def test_the_progress_line_counts_from_the_database_and_follows_the_filter(tui_db: SeededDb) -> None:
    path, ids = tui_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "0/8 done · 8 left" in progress_line(app)
        await pilot.press("a")  # bees
        await settle_until(pilot, lambda: "1/8 done · 7 left" in progress_line(app), "the progress update")
    assert row(path, "SELECT status, decided_by FROM candidates WHERE id = ?", ids["bees"]) == ("approved", "ana")
    # reopened: the figure comes from the database, not from the session
    app = ReviewApp(path, "bob", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "1/8 done · 7 left" in progress_line(app)
        assert "your pace: not measured yet" in progress_line(app)


async def test_flagging_sends_the_item_to_another_reviewer(tui_db: SeededDb) -> None:
    path, ids = tui_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("exclamation_mark")
        await settle(pilot)
        assert isinstance(app.screen, FlagModal)
        await pilot.press("escape")  # cancelled: no flag
        await settle(pilot)
        assert row(path, "SELECT count(*) FROM flags") == (0,)
        await pilot.press("exclamation_mark")
        await settle(pilot)
        await pilot.press(*"is this a joke?")
        await pilot.press("enter")
        await settle_until(pilot, lambda: queue(app).current_id == ids["madrid"], "moving past the flagged item")
        assert "⚑" in queue(app).pending_list.cells(ids["bees"])["kind"].plain
        assert "1 of yours with others" in progress_line(app)
    assert row(path, "SELECT candidate_id, flagged_by, note, lean FROM flags") == (
        ids["bees"],
        "ana",
        "is this a joke?",
        None,
    )
    assert row(path, "SELECT status, claimed_by FROM candidates WHERE id = ?", ids["bees"]) == ("pending", None)
    async with Memory(path, clock=fixed_clock) as mem:
        assert [f.candidate_id for f in await mem.team.flags()] == [ids["bees"]]

    # another reviewer sees it marked, is told why, and decides it with the usual key
    app = ReviewApp(path, "bob", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert queue(app).current_id == ids["bees"]
        assert "1 second opinion to give" in progress_line(app)
        line = queue(app).query_one("#queue-line", Static)
        await settle_until(pilot, lambda: "is this a joke?" in str(line.render()), "the flag note beside the item")
        assert "ana asked for a second opinion" in str(line.render())  # on screen, not a toast that fades
        await pilot.press("n")
        await settle_until(pilot, lambda: queue(app).current_id == ids["madrid"], "moving on")
        assert "is this a joke?" not in str(line.render())  # positive control: it belongs to its item
        await pilot.press("p")
        await settle_until(pilot, lambda: "is this a joke?" in str(line.render()), "the note again with its item")
        await pilot.press("a")
        await settle_until(pilot, lambda: queue(app).current_id == ids["madrid"], "the decision")
    assert row(path, "SELECT status, decided_by FROM candidates WHERE id = ?", ids["bees"]) == ("approved", "bob")


async def test_my_queue_takes_a_users_items_and_gives_them_back(tui_db: SeededDb) -> None:
    path, ids = tui_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = queue(app).pending_list
        assert table.row_count == 8
        await pilot.press("m")  # on bees, of u-ana: asks first
        await settle(pilot)
        assert isinstance(app.screen, ConfirmModal)
        await pilot.press("n")
        await settle(pilot)
        assert row(path, "SELECT count(*) FROM assignments") == (0,)
        await pilot.press("m")
        await settle(pilot)
        await pilot.press("y")
        await settle_until(pilot, lambda: table.row_count == 3, "the filtered list")
        assert {table.cells(cid)["user"].plain for cid in table.row_ids} == {"u-ana"}
        assert "my queue" in str(queue(app).query_one("#queue-header", Static).render())
        await pilot.press("m")  # back to everyone's
        await settle_until(pilot, lambda: table.row_count == 8, "the whole list")
    assert row(path, "SELECT user_id, reviewer FROM assignments") == ("u-ana", "ana")

    # bob is refused ana's user (the engine says so; the queue moves on)
    app = ReviewApp(path, "bob", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert queue(app).current_id != ids["bees"]
        assert any("reviewed by ana" in n for n in notes(app))
    assert row(path, "SELECT status FROM candidates WHERE id = ?", ids["bees"]) == ("pending",)

    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("M")  # give u-ana back
        await settle_until(pilot, lambda: any("back in everyone's queue" in n for n in notes(app)), "the release")
    assert row(path, "SELECT count(*) FROM assignments") == (0,)


async def test_second_review_is_blind_until_the_verdict_and_can_overturn(tui_db_drawn: SeededDb) -> None:
    path, _ = tui_db_drawn  # every seeded approval drawn for second review when it was made
    app = ReviewApp(path, "ana", clock=fixed_clock, config=MemoryConfig(second_review_rate=1.0))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "◎ 4 to second-review (v)" in progress_line(app)
        await pilot.press("v")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SecondReviewScreen)
        listed = table_rows(screen.query_one("#sr-list", DataTable))
        assert [r[1] for r in listed] == [
            "Ana works as a nurse",
            "Ben is allergic to peanuts",
            "Cho plays the cello",
            "Ben drives a Tesla",
        ]
        detail = str(screen.query_one("#sr-detail", Static).render())
        assert "Ana works as a nurse" in detail
        assert "curator" not in detail  # blind: not who approved it
        await pilot.press("a")
        await settle_until(pilot, lambda: any("approved by curator" in n for n in notes(app)), "the reveal")
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        assert isinstance(app.screen, ReasonModal)
        await pilot.press(*"never said so")
        await pilot.press("enter")
        await settle_until(pilot, lambda: screen.query_one("#sr-list", DataTable).row_count == 2, "the overturn")
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, QueueScreen)
        await settle_until(pilot, lambda: "◎ 2 to second-review" in progress_line(app), "the progress update")
    async with Memory(path, clock=fixed_clock) as mem:
        reviews = await mem.team.second_reviews()
        assert [(r.reviewer, r.verdict, r.first_reviewer) for r in reviews] == [
            ("ana", "agree", "curator"),
            ("ana", "overturn", "curator"),
        ]
        peanuts = await mem.get_knowledge("u-ben", reviews[1].knowledge_id)
        assert (peanuts.statement, peanuts.status) == ("Ben is allergic to peanuts", "retracted")
        nurse = await mem.get_knowledge("u-ana", reviews[0].knowledge_id)
        assert nurse.status == "active"


async def test_the_reviewers_view_shows_the_engine_figures(tui_db: SeededDb) -> None:
    path, _ = tui_db
    async with Memory(path, clock=fixed_clock) as mem:
        figures = await mem.team.figures()
    # the curator decided; lead only second-reviewed the seed's health fact (the two-person rule)
    [curator, lead] = figures.reviewers
    assert (lead.reviewer, lead.decisions, lead.second_reviews_done) == ("lead", 0, 1)
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        await pilot.press("w")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ReviewersScreen)
        rows = table_rows(screen.query_one("#rv-reviewers", DataTable))
        assert [r[:3] for r in rows] == [["curator", str(curator.decisions), "78%"], ["lead", "0", "—"]], rows
        assert curator.decisions == 9 and curator.approved == 7  # 6 approvals, 1 supersession, 2 rejections
        daily = table_rows(screen.query_one("#rv-daily", DataTable))
        assert [d[:3] for d in daily] == [["2026-02-23", "curator", "1"], ["2026-02-08", "curator", "8"]]
        await pilot.press("p")  # the last 7 days: nothing
        await settle(pilot)
        assert screen.query_one("#rv-reviewers", DataTable).row_count == 0
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, ReviewersScreen)


def test_the_progress_line_has_a_compact_form_and_an_empty_state() -> None:
    from datetime import UTC, datetime

    from engine.team import Progress
    from review_app.widgets.progress import progress_text

    busy = Progress(
        "ana",
        datetime(2026, 3, 10, tzinfo=UTC),
        done=2,
        remaining=6,
        reviewer_decisions=2,
        seconds_per_decision=60.0,
        flagged_by_me=0,
        second_opinions=1,
        second_reviews=3,
    )
    assert "2/8 done · 6 left · ≈6m to go at your 60/h (1m each) · ⚑ 1 second opinion to give · ◎ 3 to" in (
        progress_text(busy).plain
    )
    compact = progress_text(busy, compact=True).plain
    assert "2/8 · 6 left · ≈6m (60/h) · ⚑1 to give · ◎3 2nd review (v)" in compact
    assert len(compact) <= 80
    empty = Progress("ana", datetime(2026, 3, 10, tzinfo=UTC), 0, 0, 0, None, 0, 0, 0)
    assert "nothing in this filter today" in progress_text(empty).plain
    assert "█" not in progress_text(empty).plain  # an empty filter is not drawn as a full bar


def test_the_blind_view_of_an_agent_proposal_shows_no_confidence() -> None:
    """An approved agent proposal has confidence None (nobody measured one): the second reviewer's
    view says so instead of failing to format it; an extracted fact shows its number (control)."""
    from engine.team import BlindReview
    from review_app.screens.second_review import blind_text

    proposal = BlindReview(
        candidate_id=1,
        user_id="u1",
        knowledge_id=2,
        statement="User keeps bees",
        kind="proposed",
        confidence=None,
        evidence="",
        valid_at=None,
        invalid_at=None,
    )
    assert "confidence —" in blind_text(proposal).plain
    extracted = BlindReview(
        candidate_id=3,
        user_id="u1",
        knowledge_id=4,
        statement="User keeps bees",
        kind="new",
        confidence=0.8,
        evidence="",
        valid_at=None,
        invalid_at=None,
    )
    assert "confidence 0.80" in blind_text(extracted).plain


async def test_the_knowledge_screen_is_blind_while_a_second_review_waits(tui_db: SeededDb) -> None:
    """Issue 17, item 7: `v`, Esc, `2` (Knowledge) must not answer the blind review. The fact's
    author and its audit rows read "hidden" for ana, who must second-review it; after her verdict
    (the real keys), the same screen names the curator and the reason (positive control)."""
    from engine.blind import HIDDEN
    from review_app.screens.knowledge import KnowledgeScreen
    from tests.test_tui_screens import move_to, shown
    from tests.test_tui_screens import table_rows as knowledge_rows

    path, ids = tui_db
    config = MemoryConfig(second_review_rate=1.0)
    async with Memory(path, clock=fixed_clock, config=config) as mem:
        bees = await mem.review.approve(ids["bees"], "curator", reason="she said so twice")

    async def knowledge_view(pilot: Any) -> tuple[list[str], str]:
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, KnowledgeScreen)
        await settle_until(pilot, lambda: str(bees.id) in knowledge_rows(screen.table), "the facts")
        move_to(screen.table, bees.id)
        await settle_until(
            pilot, lambda: f"#{bees.id}" in str(screen.query_one("#knowledge-audit-box").border_title), "the history"
        )
        return knowledge_rows(screen.table)[str(bees.id)], shown(screen.query_one("#knowledge-audit", Static))

    app = ReviewApp(path, "ana", clock=fixed_clock, config=config)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        assert isinstance(app.screen, SecondReviewScreen)
        row_cells, audit = await knowledge_view(pilot)
        assert row_cells[-1] == "(hidden)"  # the By column (the audit pane says until when)
        assert "curator" not in audit and "she said so twice" not in audit
        assert "hidden until your second" in audit
        assert "create" in audit  # what happened stays; who and why do not

        # the verdict, with the keys: 1 (the queue), v, the bees item, a; then the same view shows it all
        await pilot.press("1")
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        review_screen = app.screen
        assert isinstance(review_screen, SecondReviewScreen)
        table = review_screen.query_one("#sr-list", DataTable)
        await settle_until(pilot, lambda: str(ids["bees"]) in [str(k.value) for k in table.rows], "the list")
        table.move_cursor(row=table.get_row_index(str(ids["bees"])))
        await settle_until(
            pilot,
            lambda: review_screen.current is not None and review_screen.current.candidate_id == ids["bees"],
            "the bees item",
        )
        await pilot.press("a")
        await settle_until(pilot, lambda: any("approved by curator" in n for n in notes(app)), "the reveal")
        row_cells, audit = await knowledge_view(pilot)
        assert row_cells[-1] == "curator"
        assert "she said so twice" in audit and HIDDEN not in audit
    assert row(path, "SELECT reviewer, verdict FROM second_reviews WHERE candidate_id = ?", ids["bees"]) == (
        "ana",
        "agree",
    )

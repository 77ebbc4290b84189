"""Issue 9 in the workstation, by the keys a reviewer presses, checked in the database afterwards:
`e` on a replacement asks supersede-or-keep-both and applies the edited value; the chain view
and `l`; `t` retargets and un-targets; Knowledge `s` marks a fact superseded by another; the
Discarded screen queues a dropped statement anyway; bulk approve decides exactly what it listed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Static

from engine import Memory
from review_app.app import ReviewApp
from review_app.modals import ConfirmModal, EditModal, PickFactModal, ReasonModal, ReplaceChoiceModal
from review_app.screens.discarded import DiscardedScreen
from review_app.screens.knowledge import KnowledgeScreen
from review_app.screens.queue import QueueScreen
from tests.pilot_helpers import db, keys, settle
from tests.test_tui_list import queue, row_ids
from tests.tui_seed import T0, SeededDb, fixed_clock, seed_chain

SIZE = (160, 48)


async def go_to(pilot: Pilot[Any], app: ReviewApp, candidate_id: int) -> None:
    for _ in range(20):
        if queue(app).current_id == candidate_id:
            return
        await keys(pilot, "n")
    raise AssertionError(f"candidate {candidate_id} never became current")


@pytest.fixture
def chain_db(tmp_path: Path) -> tuple[str, dict[str, int]]:
    import asyncio

    path = str(tmp_path / "chain.db")
    return path, asyncio.run(seed_chain(path))


@pytest.mark.parametrize("choice", ["s", "c", "k"])
async def test_edit_on_a_replacement_asks_and_applies_the_edited_value(tui_db: SeededDb, choice: str) -> None:
    path, ids = tui_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await go_to(pilot, app, ids["madrid"])
        await keys(pilot, "e")
        modal = app.screen
        assert isinstance(modal, EditModal)
        modal.query_one("#edit-statement", Input).value = "Ana lives in Madrid, Spain"
        modal.query_one("#edit-valid-at", Input).value = "2026-03-01"
        await keys(pilot, "ctrl+s")
        assert isinstance(app.screen, ReplaceChoiceModal)  # the same question as `a`
        assert db(path, "SELECT status FROM candidates WHERE id = ?", ids["madrid"]) == [("pending",)]
        await keys(pilot, choice)
    [(decision, kid)] = db(path, "SELECT decision, knowledge_id FROM candidates WHERE id = ?", ids["madrid"])
    new = db(path, "SELECT statement, valid_at, status FROM knowledge WHERE id = ?", kid)
    march = int(datetime(2026, 3, 1, tzinfo=UTC).timestamp() * 1_000_000)
    assert new == [("Ana lives in Madrid, Spain", march, "active")]
    [(status, superseded_by, invalid_at, end_reason)] = db(
        path, "SELECT status, superseded_by, invalid_at, end_reason FROM knowledge WHERE id = ?", ids["porto"]
    )
    if choice == "s":
        assert decision == "confirm_supersession"
        assert (status, superseded_by, invalid_at) == ("superseded", kid, march)  # valid time closed there
    elif choice == "c":
        assert decision == "confirm_correction"  # it was never true: no as-of date reads it again
        assert (status, superseded_by, invalid_at, end_reason) == ("superseded", kid, None, "corrected")
    else:
        assert decision == "keep_both"
        assert (status, superseded_by, invalid_at) == ("active", None, None)


async def test_the_chain_is_shown_and_l_walks_it(chain_db: tuple[str, dict[str, int]]) -> None:
    path, ids = chain_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert queue(app).current_id == ids["lisbon"]
        assert [link.candidate_id for link in queue(app).chain] == [ids["lisbon"], ids["porto"], ids["faro"]]
        gap = app.screen.query_one("#pane-gap", Static).content
        text = " ".join(str(getattr(gap, "plain", gap)).split())
        assert "▶ User lives in Lisbon, pending #" in text and "→ User lives in Porto, pending #" in text
        assert "from 8 Feb 2026" in text  # Porto's start: the message that said it
        await keys(pilot, "l")
        assert queue(app).current_id == ids["porto"]
        await keys(pilot, "l")
        assert queue(app).current_id == ids["faro"]
        await keys(pilot, "l")
        assert queue(app).current_id == ids["lisbon"]  # round to the first link
        await keys(pilot, "l", "s")  # Porto replaces Lisbon, still pending: refused, nothing changes
        assert db(path, "SELECT status FROM candidates WHERE id = ?", ids["porto"]) == [("pending",)]
        await keys(pilot, "p", "a")  # Lisbon replaces nothing: approved; Porto is re-pointed at the new fact
    [(kid,)] = db(path, "SELECT knowledge_id FROM candidates WHERE id = ?", ids["lisbon"])
    assert db(path, "SELECT supersedes_id, supersedes_candidate_id FROM candidates WHERE id = ?", ids["porto"]) == [
        (kid, None)
    ]


async def test_retarget_makes_a_new_candidate_an_update_and_refuses_to_unlink_it(tui_db: SeededDb) -> None:
    path, ids = tui_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert queue(app).current_id == ids["bees"]
        await keys(pilot, "t")
        picker = app.screen
        assert isinstance(picker, PickFactModal)
        offered = [fid for fid, _ in picker.facts]
        assert sorted(offered) == sorted([ids["porto"], ids["nurse"]])  # u-ana's active facts only
        await keys(pilot, *["down"] * offered.index(ids["nurse"]), "enter")  # the nurse fact
        assert db(path, "SELECT kind, supersedes_id, status FROM candidates WHERE id = ?", ids["bees"]) == [
            ("update", ids["nurse"], "pending")
        ]
        assert queue(app).current_id == ids["bees"]
        await keys(pilot, "a")  # now a replacement: the question comes
        assert isinstance(app.screen, ReplaceChoiceModal)
        await keys(pilot, "escape", "t")  # unlinking an update of a fact is refused (issue 26: I4)
        assert not isinstance(app.screen, ConfirmModal)
        assert any("keep both" in str(n.message) for n in app._notifications)
    assert db(path, "SELECT kind, supersedes_id, status FROM candidates WHERE id = ?", ids["bees"]) == [
        ("update", ids["nurse"], "pending")
    ]
    assert [
        a[0]
        for a in db(
            path,
            "SELECT action FROM audit_log WHERE entity_id = ? AND entity = 'candidate' AND action = 'retarget'",
            ids["bees"],
        )
    ] == ["retarget"]


async def test_knowledge_marks_a_fact_superseded_by_another(tui_db: SeededDb) -> None:
    path, ids = tui_db
    app = ReviewApp(path, "sam", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await keys(pilot, "2")
        screen = app.screen
        assert isinstance(screen, KnowledgeScreen)
        screen.table.move_cursor(row=screen.table.get_row_index(str(ids["nurse"])))
        await keys(pilot, "s")
        picker = app.screen
        assert isinstance(picker, PickFactModal)
        assert [fid for fid, _ in picker.facts] == [ids["porto"]]  # the other active fact
        await keys(pilot, "enter")  # picked, but a reason is required: the dialog stays
        assert app.screen is picker
        assert db(path, "SELECT status FROM knowledge WHERE id = ?", ids["nurse"]) == [("active",)]
        picker.query_one("#pick-reason", Input).value = "test of the screen"
        picker.query_one("#pick-start", Input).focus()
        await pilot.press(*"soon", "ctrl+s")  # not a date: said in words, nothing changes
        assert app.screen is picker
        assert "is not a date" in str(picker.query_one("#pick-error", Static).content)
        assert db(path, "SELECT status FROM knowledge WHERE id = ?", ids["nurse"]) == [("active",)]
        await pilot.press(*["backspace"] * 4, *"2026-02-01", "ctrl+s")
        assert app.screen is screen
    feb = int(datetime(2026, 2, 1, tzinfo=UTC).timestamp() * 1_000_000)
    assert db(
        path, "SELECT status, end_reason, superseded_by, invalid_at FROM knowledge WHERE id = ?", ids["nurse"]
    ) == [("superseded", "superseded", ids["porto"], feb)]  # valid time closed at the start given
    assert db(
        path, "SELECT actor, reason FROM audit_log WHERE action = 'supersede' AND entity_id = ?", ids["nurse"]
    ) == [("sam", "test of the screen")]


async def test_the_discarded_list_queues_a_statement_anyway(chain_db: tuple[str, dict[str, int]]) -> None:
    path, ids = chain_db
    # the dropped repeat says what the nurse fact says: while that fact is active the queue's intake
    # refuses it (tests/test_whole_queue.py checks the refusal); the fact ended, it can be queued
    async with Memory(path) as mem:
        await mem.retract("u-ana", ids["nurse_fact"], actor="cur", reason="she changed jobs", tombstone=False)
    app = ReviewApp(path, "cur", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await keys(pilot, "5")
        screen = app.screen
        assert isinstance(screen, DiscardedScreen)
        item = screen.items[ids["discarded"]]
        assert (item.gate, item.matched_entity, item.matched_id) == ("predicted", "knowledge", ids["nurse_fact"])
        detail = str(screen.query_one("#discarded-detail", Static).content)
        assert "gate: predicted" in detail and f"knowledge #{ids['nurse_fact']}" in detail
        await keys(pilot, "a")
        assert isinstance(app.screen, ReasonModal)
        await pilot.press(*"second job")
        await keys(pilot, "enter")
        await keys(pilot, "a")  # once only: the second time is refused with who queued it
        assert isinstance(app.screen, DiscardedScreen)
    [(cid, by)] = db(path, "SELECT queued_candidate_id, queued_by FROM discarded WHERE id = ?", ids["discarded"])
    assert by == "cur"
    assert db(path, "SELECT status, statement, created_by FROM candidates WHERE id = ?", cid) == [
        ("pending", "User works as a nurse", "cur")
    ]
    assert db(path, "SELECT count(*) FROM candidates") == [(5,)]  # exactly one new candidate


async def test_bulk_approve_decides_exactly_the_listed_ids(tui_db: SeededDb) -> None:
    path, ids = tui_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await keys(pilot, "b")
        modal = app.screen
        assert isinstance(modal, ConfirmModal)
        assert "Approve 5 of" in modal.message and f"#{ids['bees']} u-ana: Ana keeps bees" in modal.message
        assert f"#{ids['madrid']} would replace fact #{ids['porto']}" in modal.message  # and why
        async with Memory(path, clock=lambda: T0 + timedelta(seconds=1)) as mem:  # arrives while it is open
            late = await mem.queue_candidate("u-ana", "Ana collects stamps")
        await keys(pilot, "y")
        assert ids["bees"] not in row_ids(app) and isinstance(app.screen, QueueScreen)
    assert db(path, "SELECT status FROM candidates WHERE id = ?", late) == [("pending",)]
    approved = {r[0] for r in db(path, "SELECT id FROM candidates WHERE status = 'approved' AND decided_by = 'ana'")}
    assert approved == {ids[n] for n in ("bees", "markup", "unsupported", "low", "proposed")}


async def test_the_bulk_question_lists_every_candidate_it_decides(tui_db: SeededDb) -> None:
    """Eleven new candidates: the question names all eleven (it used to show five and "… and 6
    more"), the dialog scrolls to the last, and `y` approves exactly those eleven."""
    path, ids = tui_db
    async with Memory(path, clock=lambda: T0 + timedelta(seconds=1)) as mem:
        extra = [await mem.queue_candidate("u-ben", f"Ben owns a bike number {i}") for i in range(6)]
    listed = [ids[n] for n in ("bees", "markup", "unsupported", "low", "proposed")] + extra
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await keys(pilot, "b")
        modal = app.screen
        assert isinstance(modal, ConfirmModal)
        assert "Approve 11 of" in modal.message and "more" not in modal.message
        assert all(f"#{cid} " in modal.message for cid in listed)
        assert f"#{ids['madrid']} would replace fact #{ids['porto']}" in modal.message  # left out, and why
        await keys(pilot, "end")
        await keys(pilot, "y")
    approved = {r[0] for r in db(path, "SELECT id FROM candidates WHERE status = 'approved' AND decided_by = 'ana'")}
    assert approved == set(listed)

"""Issue 29.1-29.3 on a team floor: two workstations on one database (SQLite and PostgreSQL), each a
real app driven with the keys a reviewer presses; the database is read after every key.

- The cursor stays on the candidate the reviewer put it on, whatever the other reviewer decides or
  leases: a row decided elsewhere stays, marked "decided by ...", and keys act on nothing there.
- Bulk approve leaves the cursor where bulk reject does: on its candidate (#9 after marking
  #6-#8), never skipping a row left pending.
- Search then Esc puts the cursor back on the candidate it was on.

Each must-not is paired with its positive control: the same key, on a row the reviewer chose and
can decide, decides it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from engine import Memory
from review_app.app import ReviewApp
from review_app.modals import ConfirmModal, ReasonModal
from review_app.screens.queue import QueueScreen
from tests.pilot_helpers import settle
from tests.test_tui_queue import notes, queue, settle_until
from tests.tui_seed import T0, fixed_clock

SIZE = (160, 48)
ROWS = 12


@pytest.fixture(params=["sqlite", "postgres"])
async def floor(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, list[int]]:
    """A database with ROWS agent proposals for two users, oldest first (so #n is row n), on each
    backend; returns (target, candidate ids in list order)."""
    target = str(tmp_path / "floor.db") if request.param == "sqlite" else request.getfixturevalue("pg_url")
    ids: list[int] = []
    async with Memory(target, clock=fixed_clock) as mem:
        for n in range(1, ROWS + 1):
            outcome = await mem.propose(f"u-{n % 2}", f"User {n} keeps item number {n}", "agent")
            assert outcome.candidate_id is not None
            ids.append(outcome.candidate_id)
    return target, ids


async def decided(target: str, ids: list[int]) -> dict[int, tuple[str, str | None]]:
    """Every candidate of `ids` that is no longer pending: id -> (status, decided_by), read on a
    connection of the test's own."""
    async with Memory(target, clock=fixed_clock) as mem:
        out: dict[int, tuple[str, str | None]] = {}
        for cid in ids:
            cand = await mem.review.get(cid)
            if cand.status != "pending":
                out[cid] = (cand.status, cand.decided_by)
        return out


@asynccontextmanager
async def workstation(target: str, reviewer: str) -> AsyncIterator[tuple[ReviewApp, Pilot[Any]]]:
    app = ReviewApp(target, reviewer, clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        yield app, pilot


async def press(pilot: Pilot[Any], *pressed: str) -> None:
    for key in pressed:
        await pilot.press(key)
        await settle(pilot)


def cursor(app: ReviewApp) -> int | None:
    return queue(app).pending_list.cursor_id


async def until(pilot: Pilot[Any], done: Callable[[], bool], what: str) -> None:
    await settle_until(pilot, done, what)


async def test_another_reviewers_decision_and_leases_never_move_the_cursor(floor: tuple[str, list[int]]) -> None:
    """The issue's story. cy opens first and holds #1; bo opens and rests on #1 (cy's): refused,
    "being reviewed by cy", the cursor stays. cy approves #1 and moves on to #2, then #3 (leases):
    bo's cursor stays on #1, now marked "decided by cy", and bo's `a` decides nothing (the issue saw
    it approve #2). bo walks to #2: cy rejects it under bo's cursor, it stays marked, `a` decides
    nothing. Control: bo's `n` then `a` approves #3's successor that bo chose and sees."""
    target, ids = floor
    async with workstation(target, "cy") as (cy, pc), workstation(target, "bo") as (bo, pb):
        assert queue(cy).current_id == ids[0]
        assert cursor(bo) == ids[0] and queue(bo).current_id is None
        assert any("being reviewed by cy" in n for n in notes(bo))
        await press(pb, "a")  # on cy's row: nothing
        assert await decided(target, ids) == {}
        assert cursor(bo) == ids[0]

        await press(pc, "a")  # cy approves #1 and opens #2
        await until(pb, lambda: ids[0] in queue(bo).pending_list.gone, "bo's row marked decided")
        assert await decided(target, ids) == {ids[0]: ("approved", "cy")}
        assert cursor(bo) == ids[0] and queue(bo).current_id is None
        line = str(queue(bo).query_one("#queue-line").render())
        assert "approved by cy" in line and "Nothing here to decide" in line
        assert "decided by cy" in queue(bo).pending_list.cells(ids[0])["statement"].plain
        await press(pb, "a")  # the issue: this approved #2 under bo's name
        assert await decided(target, ids) == {ids[0]: ("approved", "cy")}
        assert cursor(bo) == ids[0]

        await press(pc, "n")  # cy's lease moves on to #3: bo's cursor does not follow
        await settle(pb)
        assert cursor(bo) == ids[0]

        await press(pb, "n")  # bo chooses #2 (free again: cy moved on) and opens it
        await until(pb, lambda: queue(bo).current_id == ids[1], "bo's #2 opened")
        await press(pc, "p")  # cy comes back to #2: refused (bo holds it), cy's cursor stays there
        assert cursor(cy) == ids[1] and queue(cy).current_id is None
        assert cursor(bo) == ids[1]
        await press(pb, "a")  # control: bo approves the row bo chose and sees
        assert await decided(target, ids) == {ids[0]: ("approved", "cy"), ids[1]: ("approved", "bo")}
        assert cursor(bo) == ids[2]  # approve-and-advance: the reviewer's own decision moves on
        await until(pc, lambda: ids[1] in queue(cy).pending_list.gone, "cy's row marked decided")
        assert cursor(cy) == ids[1]  # cy's cursor stays on #2, marked
        await press(pc, "a", "r")  # nothing here to decide: no dialog, nothing stored
        assert not isinstance(cy.screen, ReasonModal)
        assert await decided(target, ids) == {ids[0]: ("approved", "cy"), ids[1]: ("approved", "bo")}


async def test_a_row_decided_elsewhere_under_the_cursor_stays_and_keys_decide_nothing(
    floor: tuple[str, list[int]],
) -> None:
    """bo looks at #3 (opened, leased); ana, through the library, with bo's lease expired on her clock,
    rejects it. bo's cursor stays on #3, marked rejected by ana; `a` and `r` decide nothing; a row
    above leaving (decided by ana too) does not move the cursor off its candidate. Control: `n`
    `a` approves #4."""
    target, ids = floor
    async with workstation(target, "bo") as (bo, pb):
        await press(pb, "n", "n")
        assert queue(bo).current_id == ids[2]
        async with Memory(target, clock=lambda: T0 + timedelta(hours=1)) as ana:
            await ana.review.reject(ids[2], "ana", "not true", tombstone=False)
            await ana.review.approve(ids[0], "ana")
        await until(pb, lambda: ids[2] in queue(bo).pending_list.gone, "the row marked")
        await until(pb, lambda: ids[0] not in queue(bo).pending_list.row_ids, "the row above gone")
        assert cursor(bo) == ids[2]
        assert queue(bo).pending_list.row_ids[:3] == [ids[1], ids[2], ids[3]]  # kept in its place
        await press(pb, "a", "r")
        assert not isinstance(bo.screen, ReasonModal)
        assert await decided(target, ids) == {ids[2]: ("rejected", "ana"), ids[0]: ("approved", "ana")}
        await press(pb, "n")
        await until(pb, lambda: queue(bo).current_id == ids[3], "#4 opened")
        await press(pb, "a")
        assert (await decided(target, ids))[ids[3]] == ("approved", "bo")


@pytest.mark.parametrize("verb", ["approve", "reject"])
async def test_bulk_approve_and_bulk_reject_leave_the_cursor_on_its_candidate(
    floor: tuple[str, list[int]], verb: str
) -> None:
    """Marks on #6, #7, #8 (space moves down), the cursor on #9: `b` `y` (or `r` `1`) decides
    exactly #6-#8, and the cursor is on #9 afterwards, the row the reviewer was on (the issue saw
    bulk approve land on #12, #9-#11 skipped). The next `a` then approves #9: no row was skipped."""
    target, ids = floor
    async with workstation(target, "bo") as (bo, pb):
        await press(pb, *["n"] * 5)
        assert cursor(bo) == ids[5]
        await press(pb, "space", "space", "space")
        assert queue(bo).pending_list.marked == {ids[5], ids[6], ids[7]}
        assert cursor(bo) == ids[8]
        if verb == "approve":
            await press(pb, "b")
            assert isinstance(bo.screen, ConfirmModal)
            await press(pb, "y")
        else:
            await press(pb, "r")
            assert isinstance(bo.screen, ReasonModal)
            await press(pb, "1")
        status = "approved" if verb == "approve" else "rejected"
        await until(pb, lambda: ids[5] not in queue(bo).pending_list.row_ids, "the marked rows leaving")
        assert await decided(target, ids) == {ids[n]: (status, "bo") for n in (5, 6, 7)}
        assert cursor(bo) == ids[8]
        await until(pb, lambda: queue(bo).current_id == ids[8], "#9 shown")
        await press(pb, "a")
        assert (await decided(target, ids))[ids[8]] == ("approved", "bo")
        assert cursor(bo) == ids[9]


async def test_bulk_approve_with_the_cursor_on_a_marked_row_lands_on_the_next_row_left_pending(
    floor: tuple[str, list[int]],
) -> None:
    """Marks on #2 and #4, the cursor back on #2: after `b` `y` the cursor is on #3 (the first row
    after it left pending), not on #5."""
    target, ids = floor
    if "floor.db" not in target:
        pytest.skip("one backend is enough for the cursor rule; the two-workstation tests run on both")
    async with workstation(target, "bo") as (bo, pb):
        await press(pb, "n", "space", "n", "space", "p", "p", "p")
        assert cursor(bo) == ids[1] and queue(bo).pending_list.marked == {ids[1], ids[3]}
        await press(pb, "b", "y")
        await until(pb, lambda: ids[1] not in queue(bo).pending_list.row_ids, "the marked rows leaving")
        assert await decided(target, ids) == {ids[1]: ("approved", "bo"), ids[3]: ("approved", "bo")}
        assert cursor(bo) == ids[2]


async def test_search_then_escape_puts_the_cursor_back(floor: tuple[str, list[int]]) -> None:
    """The cursor on #5; `/` "number 1" narrows the list (cursor on its first row); Esc clears the
    search and the cursor is on #5 again, shown, and `a` approves #5. Control of the must-not: before
    the fix Esc put the cursor on the first row (#1)."""
    target, ids = floor
    if "floor.db" not in target:
        pytest.skip("the search is the screen's, the same on both backends")
    async with workstation(target, "bo") as (bo, pb):
        await press(pb, "n", "n", "n", "n")
        assert cursor(bo) == ids[4]
        await press(pb, "slash", *"number 1")
        await until(pb, lambda: queue(bo).pending_list.row_count == 4, "the search's rows")  # 1, 10, 11, 12
        assert cursor(bo) == ids[0]
        await press(pb, "escape")
        await until(pb, lambda: queue(bo).pending_list.row_count == ROWS, "the whole list back")
        assert cursor(bo) == ids[4]
        await until(pb, lambda: queue(bo).current_id == ids[4], "#5 shown")
        await press(pb, "a")
        assert await decided(target, ids) == {ids[4]: ("approved", "bo")}


def test_queue_screen_keeps_its_controllers_textual_free() -> None:
    """The controllers the screen applies import no Textual (they are tested without an app)."""
    import ast

    root = Path(__file__).resolve().parent.parent / "review_app"
    for name in ("leases.py", "queue_cursor.py", "queue_watch.py", "decision_session.py"):
        tree = ast.parse((root / name).read_text())
        imported = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)} | {
            alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
        }
        assert not any(m == "textual" or m.startswith(("textual.", "rich")) for m in imported), (name, imported)
    assert QueueScreen.__mro__  # the screen still composes them


async def test_the_policies_look_after_a_decision_never_holds_the_key_press(tmp_path: Path) -> None:
    """Issue 29.7, the workstation's half: with a policies' look that takes as long as it likes (here
    it waits until the test lets it go), `a` commits the approval and the next `a` approves the
    next row meanwhile: the slot was not held. Control: once let go, the look runs for the user,
    once for the decisions that came while it waited."""
    import asyncio

    target = str(tmp_path / "looks.db")
    ids: list[int] = []
    async with Memory(target, clock=fixed_clock) as mem:
        for n in range(1, 4):
            outcome = await mem.propose("u-1", f"User keeps item number {n}", "agent")
            assert outcome.candidate_id is not None
            ids.append(outcome.candidate_id)
    gate = asyncio.Event()
    looked: list[str] = []

    async def slow_look(user_id: str) -> object:
        await gate.wait()
        looked.append(user_id)
        return None

    app = ReviewApp(target, "bo", clock=fixed_clock)
    # the engine runs the look in the background once the decision commits (engine/second_look.py)
    app.memory.policies.second_look._look = slow_look
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(40):
            await pilot.pause()
            if queue_or_none(app) is not None and queue(app).current_id == ids[0]:
                break
        await pilot.press("a")
        await until_decided(target, ids[0])
        await paused_until(pilot, lambda: queue(app).current_id == ids[1], "#2 shown")
        assert not queue(app).decisions.busy and looked == []
        await pilot.press("a")
        await until_decided(target, ids[1])
        assert looked == []
        gate.set()
        await paused_until(pilot, lambda: looked == ["u-1", "u-1"], "the looks")
    assert await decided(target, ids) == {ids[0]: ("approved", "bo"), ids[1]: ("approved", "bo")}


async def paused_until(pilot: Pilot[Any], done: Callable[[], bool], what: str) -> None:
    """Wait for `done` without waiting for every worker (the look's worker is held on purpose)."""
    for _ in range(600):
        await pilot.pause(0.05)
        if done():
            return
    raise AssertionError(f"{what} never happened")


def queue_or_none(app: ReviewApp) -> QueueScreen | None:
    screens = [s for s in app.screen_stack if isinstance(s, QueueScreen)]
    return screens[-1] if screens else None


async def until_decided(target: str, cid: int) -> None:
    import asyncio

    for _ in range(200):
        async with Memory(target, clock=fixed_clock) as mem:
            if (await mem.review.get(cid)).status != "pending":
                return
        await asyncio.sleep(0.05)
    raise AssertionError(f"candidate {cid} was never decided")


async def test_the_shown_candidate_is_redrawn_when_a_bulk_approval_re_points_it(tmp_path: Path) -> None:
    """ "I live in Lisbon", then "I moved to Porto": Porto is queued as the update of pending Lisbon (a
    chain). Lisbon marked, the cursor on Porto, `b` `y`: Lisbon becomes a fact and the gate
    re-points Porto at it. The cursor stays on Porto (leased all along), and its panes now show the
    fact it would replace, not the chain through a candidate that is no longer pending: before, they
    kept the old link until the reviewer moved away and back. Control: the row's candidate is the
    same one, shown without a release and a new claim."""
    target = str(tmp_path / "chain.db")
    async with Memory(target) as mem:
        await mem.add_exchange("ana", "I live in Lisbon.", "Noted.", at=T0)
        await mem.add_exchange("ana", "Actually I moved to Porto.", "Nice!", at=T0 + timedelta(days=3))
        await mem.process()
        pending = await mem.review.pending("ana")
    lisbon = next(c for c in pending if "Lisbon" in c.statement)
    porto = next(c for c in pending if "Porto" in c.statement)
    assert porto.supersedes_candidate_id == lisbon.id
    async with workstation(target, "bo") as (bo, pb):
        while cursor(bo) != lisbon.id:
            await press(pb, "n")
        await press(pb, "space")  # marks Lisbon, moves down onto Porto
        assert cursor(bo) == porto.id
        await until(pb, lambda: queue(bo).current_id == porto.id, "Porto shown")
        await press(pb, "b", "y")
        await until(pb, lambda: lisbon.id not in queue(bo).pending_list.row_ids, "Lisbon leaving")
        async with Memory(target) as mem:
            [fact] = await mem.knowledge("ana")
        await until(
            pb,
            lambda: (ctx := queue(bo).current) is not None and ctx.candidate.supersedes_id == fact.id,
            "Porto redrawn as the update of the new fact",
        )
        assert cursor(bo) == porto.id and queue(bo).current_id == porto.id
        ctx = queue(bo).current
        assert ctx is not None and ctx.superseded is not None and ctx.superseded.id == fact.id

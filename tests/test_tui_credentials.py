"""Issue 27 in the workstation: an edit that puts a credential in a statement is refused where the
reviewer typed it, with the kind named and the value never shown back, and nothing is written;
the same edit without the secret is saved (the positive control). Keys pressed as a reviewer would."""

from __future__ import annotations

from pathlib import Path

from engine import Memory
from review_app.app import ReviewApp
from review_app.modals import EditModal
from review_app.screens.queue import QueueScreen
from tests.pilot_helpers import row, settle
from tests.tui_seed import SeededDb, fixed_clock

SIZE = (160, 48)


async def test_an_edit_holding_a_pin_is_refused_and_nothing_is_written(tui_db: SeededDb) -> None:
    path, ids = tui_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, EditModal)
        modal.query_one("#edit-statement").value = "Ana's bank PIN is 4931"  # type: ignore[attr-defined]
        await pilot.press("ctrl+s")
        await settle(pilot)
        shown = " ".join(str(getattr(w, "content", "")) for w in app.screen.query("Static"))
        assert "holds a credential (PIN)" in shown, shown
        assert "4931" not in shown.replace("Ana's bank PIN is 4931", "")
        assert row(path, "SELECT status FROM candidates WHERE id = ?", ids["bees"]) == ("pending",)
        assert row(path, "SELECT count(*) FROM knowledge WHERE statement LIKE '%4931%'") == (0,)
    data = b"".join(p.read_bytes() for p in Path(path).parent.iterdir() if p.is_file())
    assert b"4931" not in data
    # positive control: the same edit without the secret is saved
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, EditModal)
        modal.query_one("#edit-statement").value = "Ana keeps two hives of bees"  # type: ignore[attr-defined]
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, QueueScreen)
    async with Memory(path, clock=fixed_clock) as mem:
        assert (await mem.review.get(ids["bees"])).decision == "edit_approve"

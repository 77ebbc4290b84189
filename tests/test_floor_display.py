"""Issue 29.6's display items: every display of user or model text shows what the engine ignores
(`engine.text.reveal`), and the reject dialog numbers nine reasons, as the README's `1`-`9` says."""

from __future__ import annotations

from pathlib import Path

from engine import Memory
from engine.text import canonical
from review_app.app import ReviewApp
from review_app.modals import ReasonModal
from review_app.screens.queue import REJECT_REASONS
from review_app.widgets.literal import literal, visible
from tests.pilot_helpers import keys, settle
from tests.test_tui_queue import queue
from tests.tui_seed import fixed_clock


def test_what_canonical_drops_is_shown_by_name() -> None:
    """U+180B (a Mongolian variation selector, category Mn) and U+E0100 are dropped by `canonical`
    but passed every category test of the display: "bees" and "be\u180bes" looked the same. Control:
    accents, an emoji with its presentation selector, newlines and tabs are shown as typed."""
    for hidden in ("\u180b", "\U000e0100", "\u200b", "\u2060"):
        value = f"be{hidden}es"
        assert canonical(value) == canonical("bees")
        assert f"⟨U+{ord(hidden):04X}⟩" in visible(value)
        assert f"⟨U+{ord(hidden):04X}⟩" in literal(value).plain
    for plain in ("café", "I ❤️ tea", "two\nlines\tand a tab"):
        assert visible(plain) == plain


async def test_the_reject_dialog_numbers_nine_reasons_and_9_rejects_with_the_ninth(tmp_path: Path) -> None:
    target = str(tmp_path / "reasons.db")
    async with Memory(target, clock=fixed_clock) as mem:
        outcome = await mem.propose("u-1", "User keeps bees", "agent")
        assert outcome.candidate_id is not None
        cid = outcome.candidate_id
    assert len(REJECT_REASONS) == 9 and len(set(REJECT_REASONS)) == 9
    app = ReviewApp(target, "bo", clock=fixed_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert queue(app).current_id == cid
        await keys(pilot, "r")
        assert isinstance(app.screen, ReasonModal) and app.screen.presets == list(REJECT_REASONS)
        await keys(pilot, "9")
    async with Memory(target, clock=fixed_clock) as mem:
        cand = await mem.review.get(cid)
    assert (cand.status, cand.reason, cand.decided_by) == ("rejected", REJECT_REASONS[8], "bo")

"""What the support desk's changes look like where a reviewer reads (issue 29, items 5 and 8):

- `review.get` and `conversations()` read with `viewer=` a second reviewer waiting on a blind
  review name neither who decided nor how (the approver, a read with no viewer, and the second
  reviewer after their verdict see it all: the positive controls);
- an approval whose fact was since corrected, retracted or superseded says so in the Messages view
  (`EpisodeYield.fact_labels`), and the Versions pane labels each version and keeps its # and
  Statement columns after a retraction with a long reason;
- the prediction pane lists pending candidates apart from the facts already known, and the offline
  prediction counts only facts as "already known".
On both backends where a store is involved."""

from __future__ import annotations

import io
from collections.abc import Callable
from datetime import UTC, datetime

from rich.console import Console

from engine import Memory, MemoryConfig
from engine.blind import HIDDEN
from engine.models import Candidate, CandidateContext, Knowledge
from review_app.screens.messages import extracted_cell, item_text, message_rows
from review_app.widgets.candidate_detail import prediction_text
from review_app.widgets.knowledge_format import versions_renderable
from tests.engine_helpers import Clock
from tests.pilot_helpers import settle
from tests.tui_seed import ScriptedExtractor, SeededDb

BLIND = MemoryConfig(second_review_rate=1.0)  # every approval is in the second-review sample


async def _approved_by_ana(mem: Memory) -> tuple[int, int]:
    """ana's message "FACT: Ana keeps bees", extracted and approved by rita with a note and an edit.
    Returns (candidate id, fact id)."""
    await mem.add_exchange("ana", "FACT: Ana keeps bees", "Sweet.")
    await mem.process()
    [cand] = await mem.review.pending()
    fact = await mem.review.approve(cand.id, "rita", statement="Ana keeps honey bees", reason="she said so")
    return cand.id, fact.id


def _scripted(target: str, clock: Clock, config: MemoryConfig | None = None) -> Memory:
    return Memory(target, extractor=ScriptedExtractor(), clock=clock, config=config)


# -- item 8: blind means blind, in review.get and conversations ------------------------------------


async def test_get_and_conversations_hide_the_first_decision_from_the_blind_reviewer(
    new_target: Callable[[str], str],
) -> None:
    clock = Clock()
    async with _scripted(new_target("m"), clock, BLIND) as mem:
        cid, _ = await _approved_by_ana(mem)
        assert [b.candidate_id for b in await mem.team.second_review_queue("bob")] == [cid]

        def shown(c: Candidate) -> tuple[str | None, str | None, str | None]:
            return c.decided_by, c.decision, c.reason

        seen = await mem.review.get(cid, viewer="bob")
        assert shown(seen) == (HIDDEN, None, None) and seen.status == "approved"  # what happened stays
        [episode] = await mem.conversations("ana", viewer="bob")
        assert [shown(c) for c in episode.candidates] == [(HIDDEN, None, None)]
        assert "rita" not in repr(episode.candidates) and "she said so" not in repr(episode.candidates)

        # positive controls: the approver and a read with no reviewer see who, how and why
        for viewer in ("rita", None):
            assert shown(await mem.review.get(cid, viewer=viewer)) == ("rita", "edit_approve", "she said so")
            [episode] = await mem.conversations("ana", viewer=viewer)
            assert shown(episode.candidates[0]) == ("rita", "edit_approve", "she said so")

        # after bob's verdict the first decision is his to read
        await mem.team.second_review(cid, "bob", approve=True)
        assert shown(await mem.review.get(cid, viewer="bob")) == ("rita", "edit_approve", "she said so")
        [episode] = await mem.conversations("ana", viewer="bob")
        assert episode.candidates[0].decided_by == "rita"


async def test_nothing_is_hidden_when_no_review_waits(new_target: Callable[[str], str]) -> None:
    """The rule is per item: with the sample off, the same reads show everything to bob."""
    async with _scripted(new_target("m"), Clock(), MemoryConfig(second_review_rate=0.0)) as mem:
        cid, _ = await _approved_by_ana(mem)
        assert (await mem.review.get(cid, viewer="bob")).decided_by == "rita"
        [episode] = await mem.conversations("ana", viewer="bob")
        assert episode.candidates[0].decision == "edit_approve"


# -- item 5: an approval since ended says how, in the Messages view --------------------------------


async def test_the_messages_view_says_corrected_retracted_or_superseded(new_target: Callable[[str], str]) -> None:
    clock = Clock()
    async with _scripted(new_target("m"), clock) as mem:
        cid, kid = await _approved_by_ana(mem)
        [episode] = await mem.conversations("ana")
        assert episode.fact_labels == {cid: "active"}  # control: an approval whose fact stands
        [row] = [r for r in message_rows([episode]) if r.items]
        assert extracted_cell(row).plain == f"#{cid} approved: Ana keeps honey bees"

        clock.advance(minutes=1)
        new = await mem.correct("ana", kid, "Ana keeps bumblebees", "sam", "misheard", never_true=True)
        [episode] = await mem.conversations("ana")
        assert episode.fact_labels == {cid: "corrected"}
        [row] = [r for r in message_rows([episode]) if r.items]
        assert extracted_cell(row).plain == f"#{cid} approved → corrected: Ana keeps honey bees"

        clock.advance(minutes=1)
        await mem.add_exchange("ana", "FACT: Ana plays chess", "Nice.")
        await mem.process()
        [chess] = await mem.review.pending()
        chess_fact = await mem.review.approve(chess.id, "rita")
        await mem.retract("ana", chess_fact.id, "sam", "asked to forget", tombstone=False)
        labels = {}
        for ep in await mem.conversations("ana"):
            labels |= ep.fact_labels
        assert labels == {cid: "corrected", chess.id: "retracted"}
        decided = await mem.review.get(chess.id)
        assert item_text(decided, labels[chess.id]).plain == f"#{chess.id} approved → retracted: Ana plays chess"
        assert new.status == "active"


def test_knowledge_label_says_what_the_status_alone_cannot() -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)

    def fact(status: str, end_reason: str | None = None) -> Knowledge:
        return Knowledge(1, "u", "s", status, at, "x", end_reason=end_reason)  # type: ignore[arg-type]

    assert fact("superseded", "corrected").label == "corrected"
    assert fact("superseded", "superseded").label == "superseded"
    assert fact("superseded", "contradicted").label == "contradicted"
    assert fact("retracted", "a free-text reason").label == "retracted"
    assert fact("active").label == "active"


# -- item 5: the Versions pane after a retraction --------------------------------------------------


def _render(renderable: object, width: int) -> str:
    out = io.StringIO()
    Console(file=out, width=width, color_system=None, legacy_windows=False).print(renderable)
    return out.getvalue()


def test_the_versions_pane_keeps_its_columns_after_a_retraction_with_a_long_reason() -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    old = Knowledge(1, "u", "User lives in Lisbon", "superseded", at, "x", end_reason="corrected", superseded_by=2)
    reason = "the customer called to say this was never true and asked us to remove it " * 2
    new = Knowledge(2, "u", "User lives in Porto", "retracted", at, "x", end_reason=reason.strip())
    shown = _render(versions_renderable(new, [old, new]), 80)
    header = next(line for line in shown.splitlines() if "Status" in line)
    assert "#" in header and "Statement" in header, shown
    assert "User lives in Lisbon" in shown and "User lives in Porto" in shown, shown
    assert "corrected by #2" in shown and "retracted" in shown
    assert "why: the customer called" in shown  # the reason, wrapped under the statement
    # control: before the retraction (an active version), the same columns
    active = Knowledge(2, "u", "User lives in Porto", "active", at, "x")
    assert "Statement" in _render(versions_renderable(active, [old, active]), 80)


# -- item 5: the prediction pane ------------------------------------------------------------------


def test_the_prediction_pane_lists_pending_candidates_apart_from_known_facts() -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    cand = Candidate(9, "u", "User lives in Porto", "new", "pending", 0.9, at, run_id=1)
    known = Knowledge(3, "u", "User keeps bees", "active", at, "x")
    waiting = Knowledge(-7, "u", "User plays chess", "pending", at, "x")
    text = prediction_text(CandidateContext(cand, prediction="p", mode="predict", existing=[known, waiting])).plain
    facts_part, _, pending_part = text.partition("still pending review")
    assert "Predicted from these facts:\n  #3 User keeps bees" in facts_part
    assert "chess" not in facts_part
    assert "candidate #7 User plays chess" in pending_part
    # control: with no pending candidate there is no pending section
    plain = prediction_text(CandidateContext(cand, prediction="p", mode="predict", existing=[known])).plain
    assert "pending review" not in plain and "#3 User keeps bees" in plain


async def test_the_offline_prediction_counts_only_facts_as_already_known() -> None:
    from engine.extraction.offline import OfflineExtractor
    from engine.models import Episode, Message

    at = datetime(2026, 1, 1, tzinfo=UTC)
    said = Message("user", "I live in Porto and I keep bees.", at, id=1, user_id="u")
    episode = Episode(1, "u", "", "", [said], start_at=at, end_at=at)
    known = Knowledge(3, "u", "User keeps bees", "active", at, "x")
    waiting = Knowledge(-7, "u", "User lives in Porto", "pending", at, "x")
    with_pending = await OfflineExtractor().extract(episode, [known, waiting])
    assert with_pending.prediction.startswith("From the 1 fact already known (and 1 candidate pending review)")
    alone = await OfflineExtractor().extract(episode, [known])
    assert alone.prediction.startswith("From the 1 fact already known, ")


async def test_the_versions_pane_in_the_workstation_after_a_retraction(tui_db: SeededDb) -> None:
    """The pane as a support agent sees it: `2` (Knowledge), `x` (show expired), the retracted fact
    selected; rendered at the pane's own width, # and Statement are there beside the label, and
    the long reason is under the statement. Control: the same pane before the retraction."""
    from textual.widgets import Static

    from review_app.app import ReviewApp
    from review_app.screens.knowledge import KnowledgeScreen
    from tests.test_tui_screens import SIZE, move_to, open_mode
    from tests.tui_seed import fixed_clock

    db, ids = tui_db
    reason = "the customer called to say this was never true and asked us to remove it, twice over " * 2

    async def pane() -> str:
        app = ReviewApp(db, "sam", clock=fixed_clock)
        async with app.run_test(size=SIZE) as pilot:
            await open_mode(pilot, "2")
            screen = app.screen
            assert isinstance(screen, KnowledgeScreen)
            await pilot.press("x")
            await settle(pilot)
            move_to(screen.table, ids["porto"])
            await settle(pilot)
            static = screen.query_one("#knowledge-versions", Static)
            return _render(static.content, static.size.width)

    before = await pane()
    async with Memory(db, clock=fixed_clock) as mem:
        await mem.retract("u-ana", ids["porto"], actor="support", reason=reason.strip(), tombstone=False)
    after = await pane()
    for shown in (before, after):
        header = next(line for line in shown.splitlines() if "Status" in line)
        assert "#" in header and "Statement" in header, shown
        assert "Ana lives in Lisbon" in shown and "Ana lives in Porto" in shown, shown
    assert "retracted" in after and "why: the customer called" in after
    assert "retracted" not in before and "active" in before

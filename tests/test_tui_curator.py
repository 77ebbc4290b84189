"""Issue 19 (items 6, 7, 8): what the workstation's dialogs say, adding a fact, and hidden code
points made visible. Keys are pressed through Pilot and the database is read afterwards through a
fresh `Memory` (what the screen shows is not evidence that anything was stored).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from textual.widgets import DataTable, Input, Static

from engine import Memory, TombstonedError
from engine.models import Knowledge
from review_app.app import ReviewApp
from review_app.keymap import KeymapError, load_keymap
from review_app.modals import TOMBSTONE_OFF_NOTE, EditModal, ReasonModal, ReasonResult, ReplaceChoiceModal
from review_app.registry import binding_classes, bindings_of
from review_app.screens import knowledge as knowledge_screen
from review_app.screens.knowledge import KnowledgeScreen
from review_app.screens.messages import MessagesScreen, extracted_cell, message_rows
from review_app.screens.tombstones import TombstonesScreen
from review_app.widgets.candidate_detail import prediction_text
from review_app.widgets.literal import visible
from review_app.widgets.user_picker import UserPickerModal, matching
from tests.pilot_helpers import db as db_rows
from tests.pilot_helpers import keys, settle
from tests.test_cli import memdesk
from tests.test_tui_screens import open_mode, shown, table_rows
from tests.tui_seed import SeededDb, fixed_clock

SIZE = (160, 48)
TROJAN = "Ana is allergic to\u202e stun\u202c peanuts\u200b and \u2066admin\u2069"
"""A Trojan-Source style statement: a right-to-left override reverses what follows it on screen,
a zero-width space and bidi isolates are invisible; stored as is."""


async def fresh(db: str) -> Memory:
    return await Memory(db, clock=fixed_clock).open()


async def facts_of(db: str, user: str) -> dict[str, Knowledge]:
    mem = await fresh(db)
    try:
        return {k.statement: k for k in await mem.knowledge(user)}
    finally:
        await mem.close()


# -- hidden characters (item 8) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stored", "shown_as"),
    [
        ("a\u200bb", "a⟨U+200B⟩b"),  # zero-width space
        ("x\u202ey", "x⟨U+202E⟩y"),  # right-to-left override
        ("\u2066i\u2069", "⟨U+2066⟩i⟨U+2069⟩"),  # isolates
        ("\ufeffbom", "⟨U+FEFF⟩bom"),
        ("soft\u00adhyphen", "soft⟨U+00AD⟩hyphen"),
        ("nb\u00a0sp", "nb⟨U+00A0⟩sp"),
        ("line\u2028sep", "line⟨U+2028⟩sep"),
        ("\u3164", "⟨U+3164⟩"),  # Hangul filler: a letter that draws nothing
        ("tag\U000e0041", "tag⟨U+E0041⟩"),
    ],
)
def test_invisible_code_points_are_named(stored: str, shown_as: str) -> None:
    assert visible(stored) == shown_as


def test_visible_text_is_left_alone() -> None:
    """Positive control: ordinary text of many scripts, emoji and plain spaces are unchanged."""
    for text in ("Ana lives in Lisbon", "Ана живёт в Лиссабоне", "אנה גרה בליסבון", "安娜 🍵 café", "a\tb\nc"):
        assert visible(text) == text


async def test_a_trojan_source_statement_is_shown_as_stored_in_the_knowledge_screen(tui_db: SeededDb) -> None:
    db, _ = tui_db
    mem = await fresh(db)
    fact = await mem.add_knowledge("u-ana", TROJAN, actor="seed")
    await mem.close()
    app = ReviewApp(db, "sam", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await open_mode(pilot, "2")
        screen = app.screen
        assert isinstance(screen, KnowledgeScreen)
        cells = table_rows(screen.table)[str(fact.id)]
        assert cells[1] == "Ana is allergic to⟨U+202E⟩ stun⟨U+202C⟩ peanuts⟨U+200B⟩ and ⟨U+2066⟩admin⟨U+2069⟩"
        assert "\u202e" not in "".join(cells)
        # the other rows are shown as they are (control)
        assert "Ana works as a nurse" in [row[1] for row in table_rows(screen.table).values()]
    assert TROJAN in await facts_of(db, "u-ana")  # the stored value is untouched


def test_the_cli_shows_hidden_characters_too(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    done = memdesk("add", db, "--user", "ana", "Ana lives in Porto", "--actor", "sup")
    assert done.returncode == 2  # no such database yet (control for the next call)
    asyncio.run(_make_db(str(db)))
    done = memdesk("add", db, "--user", "ana", TROJAN, "--actor", "sup")
    assert done.returncode == 0, done.stderr
    assert "⟨U+202E⟩" in done.stdout and "\u202e" not in done.stdout
    assert TROJAN in asyncio.run(facts_of(str(db), "ana"))


async def _make_db(path: str) -> None:
    async with Memory(path) as mem:
        await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="seed")


# -- add a fact (item 7) ------------------------------------------------------------------------------


def test_memdesk_add_stores_an_audited_fact_and_refuses_bad_input(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    asyncio.run(_make_db(str(db)))
    done = memdesk("add", db, "--user", "ana", "Ana moved to Glasgow", "--valid-from", "2026-01-02", "--actor", "kim")
    assert done.returncode == 0, done.stderr
    assert "Ana moved to Glasgow" in done.stdout
    fact = asyncio.run(facts_of(str(db), "ana"))["Ana moved to Glasgow"]
    assert fact.created_by == "kim" and fact.valid_at == datetime(2026, 1, 2, tzinfo=UTC)

    async def audit() -> list[Any]:
        async with Memory(str(db)) as mem:
            return await mem.history("ana", fact.id)

    assert [e.actor for e in asyncio.run(audit())] == ["kim"]
    before = asyncio.run(facts_of(str(db), "ana"))
    for bad in (["   "], ["Ana x", "--valid-from", "yesterday-ish"]):
        refused = memdesk("add", db, "--user", "ana", *bad, "--actor", "kim")
        assert refused.returncode == 2, refused.stdout
        assert refused.stderr.strip() and "Traceback" not in refused.stderr
    assert asyncio.run(facts_of(str(db), "ana")).keys() == before.keys()


async def test_n_on_the_knowledge_screen_adds_a_fact_audited_under_the_reviewer(tui_db: SeededDb) -> None:
    db, _ = tui_db
    app = ReviewApp(db, "sam", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await open_mode(pilot, "2")
        assert isinstance(app.screen, KnowledgeScreen) and app.screen.user_id == "u-ana"
        await keys(pilot, "n")
        assert isinstance(app.screen, EditModal)
        await pilot.press(*"Ana moved to Glasgow")
        await pilot.press("tab")
        await pilot.press(*"2026-01-02")
        await keys(pilot, "enter")
        assert isinstance(app.screen, KnowledgeScreen)
        status = shown(app.screen.query_one("#knowledge-status", Static))
        assert "added for u-ana by sam" in status
    fact = (await facts_of(db, "u-ana"))["Ana moved to Glasgow"]
    assert fact.created_by == "sam" and fact.valid_at == datetime(2026, 1, 2, tzinfo=UTC)
    mem = await fresh(db)
    events = await mem.history("u-ana", fact.id)
    await mem.close()
    assert [e.actor for e in events] == ["sam"]


@pytest.mark.parametrize(("choice", "old_status"), [("s", "superseded"), ("c", "superseded"), ("k", "active")])
async def test_an_added_fact_that_would_replace_one_asks_first(tui_db: SeededDb, choice: str, old_status: str) -> None:
    """`n` with a statement about something the user already has a fact for asks the queue's
    question (supersede, correct, keep both) and adds it that way; Escape adds nothing."""
    db, _ = tui_db
    app = ReviewApp(db, "sam", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await open_mode(pilot, "2")
        for statement in ("User lives in Leeds", "User lives in Glasgow"):
            await keys(pilot, "n")
            await pilot.press(*statement)
            await keys(pilot, "enter")
        assert isinstance(app.screen, ReplaceChoiceModal)
        await keys(pilot, "escape")  # nothing added
        assert "User lives in Glasgow" not in await facts_of(db, "u-ana")
        await keys(pilot, "n")
        await pilot.press(*"User lives in Glasgow")
        await keys(pilot, "enter", choice)
        assert isinstance(app.screen, KnowledgeScreen)
    facts = await facts_of(db, "u-ana")
    glasgow = facts["User lives in Glasgow"]
    rows = db_rows(
        db, "SELECT status, end_reason, superseded_by FROM knowledge WHERE statement = ?", "User lives in Leeds"
    )
    expected = {"s": ("superseded", "superseded", glasgow.id), "c": ("superseded", "corrected", glasgow.id)}
    assert rows == [expected.get(choice, ("active", None, None))] and rows[0][0] == old_status
    assert glasgow.created_by == "sam"


def test_memdesk_add_asks_how_a_replacement_settles(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    asyncio.run(_make_db(str(db)))
    assert memdesk("add", db, "--user", "ana", "User lives in Leeds", "--actor", "kim").returncode == 0
    asked = memdesk("add", db, "--user", "ana", "User lives in Glasgow", "--actor", "kim")
    assert asked.returncode == 2 and "pass --settle supersede, correct or keep-both" in asked.stderr
    assert "User lives in Glasgow" not in asyncio.run(facts_of(str(db), "ana"))
    done = memdesk("add", db, "--user", "ana", "User lives in Glasgow", "--actor", "kim", "--settle", "supersede")
    assert done.returncode == 0, done.stderr
    assert "User lives in Leeds" not in asyncio.run(facts_of(str(db), "ana"))  # superseded: not active


async def test_a_refused_add_says_why_and_changes_nothing(tui_db: SeededDb, monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine's typed refusals become a message; the screen stays usable and nothing is stored.
    (The engine's tombstone check on add_knowledge is another change's; here the engine raises it.)"""
    db, _ = tui_db
    before = await facts_of(db, "u-ana")

    async def tombstoned(self: Memory, user_id: str, statement: str, *args: Any, **kwargs: Any) -> Knowledge:
        raise TombstonedError(4)

    monkeypatch.setattr(Memory, "add_knowledge", tombstoned)
    app = ReviewApp(db, "sam", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await open_mode(pilot, "2")
        await keys(pilot, "n")
        await pilot.press(*"Ana is the queen of Spain")
        await keys(pilot, "enter")
        assert isinstance(app.screen, KnowledgeScreen)
        status = shown(app.screen.query_one("#knowledge-status", Static))
        assert "Not added: a reviewer already rejected this value" in status and "Lift the tombstone" in status
    assert (await facts_of(db, "u-ana")).keys() == before.keys()


async def test_add_fact_maps_each_refusal_to_words() -> None:
    class Refusing:
        def __init__(self, exc: Exception) -> None:
            self.exc = exc

        async def add_knowledge(self, *args: Any, **kwargs: Any) -> Knowledge:
            raise self.exc

    from engine import DuplicateFactError, UserInputError
    from review_app.modals import EditResult

    result = EditResult("Ana x", None, None)
    for exc, words in (
        (TombstonedError(4), "already rejected this value for this user (tombstone 4)"),
        (DuplicateFactError(9, "Ana x"), "fact 9 of this user already says 'Ana x'"),
        (UserInputError("bad"), "Not added: bad"),
    ):
        said = await knowledge_screen.add_fact(Refusing(exc), "u", result, "sam")  # type: ignore[arg-type]
        assert isinstance(said, str) and words in said


# -- dialogs (item 6) -----------------------------------------------------------------------------


class _Host(App[None]):
    """A bare app that opens one dialog and keeps what it returned."""

    def __init__(self, modal: Any) -> None:
        super().__init__()
        self.modal = modal
        self.result: Any = "not dismissed"

    def on_mount(self) -> None:
        self.push_screen(self.modal, self._done)

    def _done(self, result: Any) -> None:
        self.result = result


def _reason_modal() -> ReasonModal:
    return ReasonModal(
        "Reject candidate 7",
        presets=("Not true", "Not about the user"),
        tombstone=True,
        note="A tombstone will be written.",
    )


@pytest.mark.parametrize(
    ("typed", "reason"),
    [
        (["2"], "Not about the user"),  # a digit in the empty reason picks that preset
        ([*"said 2 times", "enter"], "said 2 times"),  # control: inside a typed reason a digit is text
    ],
)
async def test_a_number_key_picks_a_reject_reason(typed: list[str], reason: str) -> None:
    app = _Host(_reason_modal())
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press(*typed)
        await pilot.pause()
    assert app.result == ReasonResult(reason, True)


async def test_a_space_in_the_reason_keeps_the_tombstone_and_the_note_follows_the_box() -> None:
    app = _Host(_reason_modal())
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        modal = app.screen
        note = modal.query_one("#reason-note", Static)
        assert "will be written" in shown(note)
        await pilot.press("tab", "shift+tab", *"not", "space", *"her", "space")  # away and back, then type
        await pilot.pause()
        assert modal.query_one("#reason-input", Input).value == "not her "
        assert "will be written" in shown(note) and modal.query_one("#reason-tombstone").value is True
        await pilot.press("ctrl+t")  # the box's own key
        await pilot.pause()
        assert TOMBSTONE_OFF_NOTE in shown(note) and "will be written" not in shown(note)
        await pilot.press("ctrl+s")
        await pilot.pause()
    assert isinstance(app.result, ReasonResult) and app.result.tombstone is False


async def test_a_backwards_interval_is_refused_in_the_forms_words() -> None:
    app = _Host(EditModal("Ana lives in Porto"))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        modal = app.screen
        modal.query_one("#edit-valid-at", Input).value = "2025-05-01"
        modal.query_one("#edit-invalid-at", Input).value = "2024-01-01"
        await pilot.press("ctrl+s")
        await pilot.pause()
        error = shown(modal.query_one("#edit-invalid-at-error", Static))
        assert "'Valid until' (2024-01-01) must be later than 'Valid from' (2025-05-01)" in error
        assert "invalid_at" not in error and app.result == "not dismissed"
        modal.query_one("#edit-invalid-at", Input).value = "2026-01-01"  # control: a forward one saves
        await pilot.press("ctrl+s")
        await pilot.pause()
    assert app.result.invalid_at == datetime(2026, 1, 1, tzinfo=UTC)


async def test_the_prediction_pane_labels_pending_candidates_pending(tmp_path: Path) -> None:
    """A pending candidate shown to the extractor beside the facts is labelled pending; an ended fact
    still reads superseded (control)."""
    from tests.tui_seed import ScriptedExtractor

    async with Memory(str(tmp_path / "p.db"), extractor=ScriptedExtractor(), clock=fixed_clock) as mem:
        old = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="seed")
        await mem.correct("ana", old.id, "Ana lives in Porto", actor="seed", reason="moved")
        await mem.add_exchange("ana", "FACT: Ana plays the cello", "Nice.")
        await mem.process()
        await mem.add_exchange("ana", "FACT: Ana keeps bees", "Sweet.")
        await mem.process()
        [second] = [c for c in await mem.review.pending(user_id="ana") if c.statement == "Ana keeps bees"]
        ctx = await mem.review.context(second.id)
    pending = [k for k in ctx.existing if k.status == "pending"]
    assert [k.statement for k in pending] == ["Ana plays the cello"]
    line = next(li for li in prediction_text(ctx).plain.splitlines() if f"candidate #{-pending[0].id} " in li)
    assert "superseded" not in line and "pending" in line
    ended = replace(old, status="superseded", superseded_by=old.id + 1)
    assert ended.described() == f"Ana lives in Lisbon (superseded by #{old.id + 1})"


# -- help and keymap (item 6) -------------------------------------------------------------------------


async def test_help_lists_the_second_review_the_reviewers_screen_and_the_flag_dialog(tui_db: SeededDb) -> None:
    from review_app.screens.help import HelpScreen
    from review_app.screens.queue_team import FlagModal
    from review_app.screens.reviewers import ReviewersScreen
    from review_app.screens.second_review import SecondReviewScreen

    wanted: set[str] = set()
    for cls in (SecondReviewScreen, ReviewersScreen, FlagModal):
        ids = {b.id for b in bindings_of(cls) if b.id}
        assert ids, cls  # each has keys of its own (control: the check below is not vacuous)
        wanted |= ids
    db, _ = tui_db
    app = ReviewApp(db, "sam", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await open_mode(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        rows = list(table_rows(app.screen.query_one("#help-table", DataTable)).values())
        listed = {r[2] for r in rows}
        assert wanted <= listed, wanted - listed
        assert {"knowledge.add", "reason.tombstone"} <= listed
        assert {r[0] for r in rows} >= {"secondreview", "reviewers", "flag"}


def test_the_registry_finds_every_screen_and_dialog_class() -> None:
    """Every Screen subclass in review_app that has keys is in the registry, without a list."""
    from textual.screen import Screen

    import review_app.app  # noqa: F401  (imports every screen)

    def subclasses(root: type[Any]) -> set[type[Any]]:
        out = set(root.__subclasses__())
        for sub in list(out):
            out |= subclasses(sub)
        return out

    screens = {c for c in subclasses(Screen) if c.__module__.startswith("review_app.") and "BINDINGS" in c.__dict__}
    assert len(screens) >= 15
    assert screens <= set(binding_classes())


def test_an_unknown_keymap_id_is_an_error_at_start(tui_db: SeededDb, tmp_path: Path) -> None:
    db, _ = tui_db
    with pytest.raises(KeymapError, match=r"unknown binding id 'queue.aprove' \(did you mean 'queue.approve'\?\)"):
        ReviewApp(db, "sam", keymap={"queue.aprove": "y"})
    ReviewApp(db, "sam", keymap={"queue.approve": "y", "queue.flag": "f9"})  # control: known ids start
    keymap_file = tmp_path / "keys.toml"
    keymap_file.write_text('[keymap]\n"second.nope" = "y"\n', encoding="utf-8")
    with pytest.raises(KeymapError, match=r"keys\.toml"):
        load_keymap(keymap_file)
    done = memdesk("review", db, "--reviewer", "sam", "--keymap", keymap_file)
    assert done.returncode == 2 and "unknown binding id 'second.nope'" in done.stderr


# -- the Messages view (item 7) -----------------------------------------------------------------------


async def _conversation_db(path: str) -> None:
    from tests.tui_seed import ScriptedExtractor

    async with Memory(path, extractor=ScriptedExtractor(), clock=fixed_clock) as mem:
        await mem.add_exchange("ana", "FACT: Ana keeps bees", "Sweet.")
        await mem.add_exchange("ana", "I moved to Glasgow last week", "Welcome to Scotland!")
        await mem.process()


async def test_message_rows_mark_a_message_that_yielded_nothing(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    await _conversation_db(db)
    async with Memory(db, clock=fixed_clock) as mem:
        rows = message_rows(await mem.conversations("ana"))
    by_text = {r.message.content: r for r in rows}
    bees, glasgow = by_text["FACT: Ana keeps bees"], by_text["I moved to Glasgow last week"]
    assert [i.statement for i in bees.items] == ["Ana keeps bees"] and not bees.yielded_nothing  # control
    assert glasgow.items == [] and glasgow.yielded_nothing
    assert not by_text["Sweet."].yielded_nothing  # the assistant's lines are never the user's facts
    assert extracted_cell(glasgow).plain == "∅ nothing extracted"


async def test_the_messages_view_finds_the_missed_fact_and_n_adds_it(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    await _conversation_db(db)
    app = ReviewApp(db, "sam", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await open_mode(pilot, "2")
        await keys(pilot, "m")
        screen = app.screen
        assert isinstance(screen, MessagesScreen)
        assert "1 yielded nothing" in shown(screen.query_one("#messages-title", Static))
        await keys(pilot, "right_square_bracket")
        current = screen.rows[screen.table.cursor_row]
        assert current.message.content == "I moved to Glasgow last week"
        await keys(pilot, "n")
        assert isinstance(app.screen, EditModal)
        await pilot.press(*"Ana lives in Glasgow")
        await keys(pilot, "enter")
        assert app.screen is screen
        assert "added for ana by sam" in shown(screen.query_one("#messages-status", Static))
        await keys(pilot, "escape")
        assert isinstance(app.screen, KnowledgeScreen)
        assert "Ana lives in Glasgow" in [row[1] for row in table_rows(app.screen.table).values()]
    fact = (await facts_of(db, "ana"))["Ana lives in Glasgow"]
    assert fact.created_by == "sam"


async def test_the_discarded_screen_shows_the_source_message(tmp_path: Path) -> None:
    from tests.tui_seed import ScriptedExtractor

    db = str(tmp_path / "d.db")
    async with Memory(db, extractor=ScriptedExtractor(), clock=fixed_clock) as mem:
        await mem.add_exchange("ana", "FACT: Ana keeps bees", "Sweet.")
        await mem.process()
        await mem.add_exchange("ana", "Hello again", "Hi.")
        await mem.add_exchange("ana", "FACT: Ana keeps bees", "You said.")
        await mem.process()
        [dropped] = await mem.discarded("ana")
    assert dropped.episode_id is not None
    app = ReviewApp(db, "sam", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await open_mode(pilot, "5")
        await settle(pilot)
        detail = shown(app.screen.query_one("#discarded-detail", Static))
        assert "source messages:" in detail
        assert "▶ " in detail and "FACT: Ana keeps bees" in detail
        assert "Hello again" not in detail  # only the quoting message is marked and shown (control)


# -- the user picker (item 6) ---------------------------------------------------------------------


def test_matching_finds_part_of_an_id_prefix_first() -> None:
    users = ["u-ana", "u-ben", "benedict", "u-chloe"]
    assert matching(users, "ben") == ["benedict", "u-ben"]
    assert matching(users, "") == users  # control: nothing typed, everyone
    assert matching(users, "zz") == []


@pytest.mark.parametrize(("mode", "screen_type"), [("2", KnowledgeScreen), ("3", TombstonesScreen)])
async def test_typing_part_of_a_user_id_picks_that_user(tui_db: SeededDb, mode: str, screen_type: type[Any]) -> None:
    db, _ = tui_db
    app = ReviewApp(db, "sam", clock=fixed_clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_mode(pilot, mode)
        screen = app.screen
        assert isinstance(screen, screen_type)
        before = screen.user_id
        await keys(pilot, "u")
        assert isinstance(app.screen, UserPickerModal)
        await pilot.press(*"ben")
        await keys(pilot, "enter")
        assert app.screen is screen
        assert screen.user_id == "u-ben" != before
        await settle(pilot)
        statements = [row[2 if mode == "3" else 1] for row in table_rows(screen.table).values()]
        users = {row[1] for row in table_rows(screen.table).values()} if mode == "3" else {"u-ben"}
        assert users <= {"u-ben"}
        if mode == "2":  # the facts shown are ben's, read from the database
            assert set(statements) == {k.statement for k in (await facts_of(db, "u-ben")).values()}
        await keys(pilot, "u", "escape")  # control: cancelling keeps the user
        assert screen.user_id == "u-ben"


async def test_the_confirm_dialog_scrolls_to_every_line() -> None:
    """A bulk question with 40 ids: every id is in the dialog and the list scrolls to the last."""
    from textual.containers import VerticalScroll

    from review_app.modals import ConfirmModal

    lines = "\n".join(f"  #{i} u-ana: fact {i}" for i in range(1, 41))
    app = _Host(ConfirmModal(f"Approve 40 candidates? Exactly these:\n{lines}"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        scroll = app.screen.query_one("#confirm-scroll", VerticalScroll)
        assert "#40 u-ana: fact 40" in shown(app.screen.query_one("#confirm-message", Static))
        assert scroll.max_scroll_y > 0 and scroll.scroll_y == 0  # taller than the dialog: it scrolls
        await pilot.press("end")
        await pilot.pause()
        assert scroll.scroll_y == scroll.max_scroll_y
        await pilot.press("y")
        await pilot.pause()
    assert app.result is True


async def test_the_edit_form_says_what_hidden_characters_its_statement_holds() -> None:
    app = _Host(EditModal(TROJAN))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        modal = app.screen
        warning = shown(modal.query_one("#edit-statement-error", Static))
        assert "Holds hidden characters" in warning and "⟨U+202E⟩" in warning
        modal.query_one("#edit-statement", Input).value = "Ana is allergic to peanuts"  # control: plain text
        await pilot.pause()
        assert shown(modal.query_one("#edit-statement-error", Static)).strip() == ""


@pytest.fixture
def web_creds(tmp_path: Path) -> Path:
    """The reviewers file of tests/test_serve.py (its REVIEWER and PASSWORD log in)."""
    from review_app.auth import hash_password, write_credentials
    from tests.test_serve import PASSWORD, REVIEWER

    path = tmp_path / "reviewers.toml"
    write_credentials(path, {REVIEWER: hash_password(PASSWORD)})
    return path


async def test_the_browser_gets_hidden_characters_named_too(tmp_path: Path, web_creds: Path) -> None:
    """`memdesk serve` runs the same widgets: what reaches the browser's terminal over the websocket
    names the override (⟨U+202E⟩) and never carries the raw code point."""
    from tests.test_serve import logged_in, origin, read_ws_until, running, terminal_text

    db = str(tmp_path / "web.db")
    async with Memory(db, clock=fixed_clock) as mem:
        await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="seed")
        await mem.propose("ana", TROJAN, actor="agent")
    async with running(db, web_creds) as (_, client):
        cookie, proof = await logged_in(client)
        ws = await client.ws_connect("/ws?width=120&height=36", headers={**cookie, "Origin": origin(client)})
        await ws.send_str(json.dumps(["proof", proof]))  # the session proof the page sends first
        stream = bytearray()
        await read_ws_until(ws, stream, "Confidence")  # the gap pane of the proposal
        await read_ws_until(ws, stream, "⟨U+2069⟩")
        text = terminal_text(bytes(stream))
        assert "⟨U+202E⟩" in text and "⟨U+200B⟩" in text
        assert "\u202e" not in text and "\u200b" not in text and "\u2066" not in text
        await ws.close()


# -- every size (item 5) -----------------------------------------------------------------------------


def test_the_progress_line_is_never_cut() -> None:
    from engine.team import Progress
    from review_app.widgets.progress import fitted_lines, progress_text

    busy = Progress(
        "ana",
        datetime(2026, 3, 10, tzinfo=UTC),
        done=12345,
        remaining=67890,
        reviewer_decisions=2,
        seconds_per_decision=60.0,
        flagged_by_me=13,
        second_opinions=11,
        second_reviews=33,
    )
    assert progress_text(busy, compact=True).cell_len > 80  # the case that used to end in "…"
    for width in (80, 100):
        lines = fitted_lines(busy, width)
        assert all(line.cell_len <= width and "…" not in line.plain for line in lines)
        joined = " · ".join(line.plain.strip() for line in lines)
        assert joined == progress_text(busy, compact=True).plain.strip()  # every figure, in order
    assert len(fitted_lines(busy, 160)) == 1  # control: a wide screen keeps one line


@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
async def test_small_terminals_keep_the_tabs_and_the_knowledge_columns(tui_db: SeededDb, size: tuple[int, int]) -> None:
    from textual.widgets import Tab, Tabs

    db, ids = tui_db
    app = ReviewApp(db, "sam", clock=fixed_clock)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        tabs = app.screen.query_one("#detail-tabs Tabs", Tabs)
        for tab in tabs.query(Tab):
            assert tabs.region.contains_region(tab.region), tab.label.plain  # drawn whole, not "iction"
        await open_mode(pilot, "2")
        screen = app.screen
        assert isinstance(screen, KnowledgeScreen)
        labels = [str(c.label) for c in screen.table.columns.values()]
        assert labels[:4] == ["#", "Statement", "Status", "Valid (from → until)"]
        statement = next(c for c in screen.table.columns.values() if str(c.label) == "Statement")
        assert statement.width >= 24
        screen.table.move_cursor(row=screen.table.get_row_index(str(ids["porto"])))
        await settle(pilot)
        audit = shown(screen.query_one("#knowledge-audit", Static))
        mem = await fresh(db)
        events = await mem.history("u-ana", ids["porto"])
        await mem.close()
        assert len(events) >= 2
        for event in events:  # each action and actor whole (it read "c…")
            assert event.action in audit and event.actor in audit

"""Issue 29.3: keys typed in one burst land in order, in every field of every form.

A burst is delivered as a terminal driver delivers keys that arrive together: all posted to the
app's queue at once (`pilot.press` waits for the app to go idle between keys, which hides the
race). The reported case, "Add a fact" with the statement, Tab and `2026-11-03` in one burst,
stored "User has type 1 diabetes2026-11-03" with no date; it is checked in the database. Every
form with text fields is then walked field by field in one burst, each field given its own token;
the control types the same keys one at a time.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widgets import Input, Static

from engine import Memory, QueueFilter
from review_app.app import ReviewApp
from review_app.modals import EditModal, PickFactModal, ReasonModal
from review_app.screens.knowledge import KnowledgeScreen
from review_app.screens.queue_team import FlagModal
from review_app.widgets.knowledge_correct import CorrectModal
from review_app.widgets.queue_filter import FilterModal
from tests.pilot_helpers import keys, settle
from tests.test_tui_queue import queue
from tests.tui_seed import SeededDb, fixed_clock

SIZE = (160, 48)
_NAMES = {" ": "space", "-": "minus", ".": "full_stop", ":": "colon"}


def burst(app: App[Any], *typed: str) -> None:
    """Post every key at once; a string of several characters is typed character by character,
    a key name in brackets (`<tab>`) is that key."""
    for item in typed:
        if item.startswith("<") and item.endswith(">"):
            app.post_message(_key(item[1:-1], None))
            continue
        for ch in item:
            app.post_message(_key(_NAMES.get(ch, ch), ch))


def _key(key: str, char: str | None) -> Any:
    from textual import events

    return events.Key(key, char)


async def test_add_a_fact_typed_in_one_burst_stores_the_statement_and_the_date(tui_db: SeededDb) -> None:
    """Knowledge `n`, then statement, Tab, date, Enter in one burst: the fact is stored with that
    statement and valid from 2026-11-03 (the issue stored "...diabetes2026-11-03", no date)."""
    path, _ = tui_db
    app = ReviewApp(path, "sam", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await keys(pilot, "2")
        assert isinstance(app.screen, KnowledgeScreen)
        await keys(pilot, "n")
        assert isinstance(app.screen, EditModal)
        burst(app, "User has type 1 diabetes", "<tab>", "2026-11-03", "<enter>")
        await settle(pilot)
        assert isinstance(app.screen, KnowledgeScreen)
    async with Memory(path, clock=fixed_clock) as mem:
        facts = {k.statement: k for k in await mem.knowledge("u-ana")}
    assert "User has type 1 diabetes2026-11-03" not in facts
    assert facts["User has type 1 diabetes"].valid_at == datetime(2026, 11, 3, tzinfo=UTC)


async def test_edit_and_approve_typed_in_one_burst_stores_each_field(tui_db: SeededDb) -> None:
    """Queue `e`, End, " too", Tab, a date, Tab, an end date, Enter, all at once: the approved fact
    has the edited statement and both dates."""
    path, _ = tui_db
    app = ReviewApp(path, "sam", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        first = queue(app).current_id
        assert first is not None
        before = queue(app).pending_list.candidates[first].statement
        burst(app, "e", "<end>", " too", "<tab>", "2025-01-02", "<tab>", "2025-03-04", "<enter>")
        await settle(pilot)
    async with Memory(path, clock=fixed_clock) as mem:
        cand = await mem.review.get(first)
        assert cand.status == "approved"
        facts = {k.statement: k for k in await mem.knowledge(cand.user_id, include_expired=True)}
    fact = facts[f"{before} too"]
    assert (fact.valid_at, fact.invalid_at) == (
        datetime(2025, 1, 2, tzinfo=UTC),
        datetime(2025, 3, 4, tzinfo=UTC),
    )


class Host(App[None]):
    """A bare app that opens one form (the forms need nothing of the workstation to type into)."""

    def __init__(self, form: Screen[Any]) -> None:
        super().__init__()
        self.form = form

    def compose(self) -> ComposeResult:
        yield Static("host")

    def on_mount(self) -> None:
        self.push_screen(self.form)


async def _forms(path: str) -> dict[str, Screen[Any]]:
    async with Memory(path, clock=fixed_clock) as mem:
        cand = (await mem.review.pending(limit=1))[0]
        fact = (await mem.knowledge("u-ana"))[0]
    return {
        "edit": EditModal("", None, None),
        "correct": CorrectModal(fact),
        "pick": PickFactModal("Pick", [(fact.id, fact.statement)], ask_reason=True, ask_start="start"),
        "filter": FilterModal(QueueFilter(), ["u-ana"]),
        "flag": FlagModal(cand),
        "reason": ReasonModal("Why", presets=("One", "Two")),
    }


@pytest.mark.parametrize("one_by_one", [False, True], ids=["burst", "one-by-one"])
@pytest.mark.parametrize("form", ["edit", "correct", "pick", "filter", "flag", "reason"])
async def test_every_field_of_every_form_gets_what_was_typed_in_it(
    tui_db: SeededDb, form: str, one_by_one: bool
) -> None:
    """Walk the form's focus chain with Tab, typing a token into each text field on the way
    (`w0x`, `w1x`, ...: letters no form binds). Each field then holds its own token and no
    other: in one burst as typed one at a time."""
    path, _ = tui_db
    app = Host((await _forms(path))[form])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        chain = list(app.screen.focus_chain)
        fields = [w for w in chain if isinstance(w, Input)]
        assert fields, f"{form} has no text field"
        plan: list[str] = []
        start = chain.index(app.screen.focused) if app.screen.focused in chain else 0
        expected: dict[str, str] = {}
        for n, widget in enumerate(chain[start:] + chain[:start]):
            if isinstance(widget, Input):
                token = f"w{n}x"
                plan.append(token)
                expected[widget.id or ""] = token
            plan.append("<tab>")
        if one_by_one:
            for item in plan:
                if item == "<tab>":
                    await pilot.press("tab")
                else:
                    await pilot.press(*item)
        else:
            burst(app, *plan)
        await settle(pilot)
        for widget in fields:
            value = widget.value
            token = expected[widget.id or ""]
            assert token in value, (form, widget.id, value)
            others = [t for i, t in expected.items() if i != widget.id]
            assert not any(t in value for t in others), (form, widget.id, value)

"""The workstation's modal dialogs: confirm, reason, error and edit.

Each modal returns a typed value through `dismiss` so that a screen can push it with a callback
(or `push_screen_wait` inside a worker) and never has to read widget state itself. Validation
happens here, before anything reaches the engine, so that "nothing saved until valid" holds by
construction: the modal simply does not dismiss while its input is wrong. The engine still checks
again (`check_interval` is the single interval rule), so a modal bug cannot store a bad interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar, TypeVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from engine.errors import UserInputError
from engine.timeutil import check_interval, parse_datetime

from .widgets.in_order_input import FIELDS_IN_ORDER, FieldsInOrder, InOrderInput, KeepsTypedAhead
from .widgets.literal import literal, visible

_R = TypeVar("_R")


@dataclass(frozen=True, slots=True)
class ReasonResult:
    """What a reviewer gave as the reason for a rejection or retraction."""

    reason: str
    tombstone: bool


@dataclass(frozen=True, slots=True)
class EditResult:
    """An edited candidate: None for an interval end means an open end."""

    statement: str
    valid_at: datetime | None
    invalid_at: datetime | None


def format_day_or_time(value: datetime | None) -> str:
    """An interval end as the user would type it back: a date when it is midnight UTC."""
    if value is None:
        return ""
    if value.hour == value.minute == value.second == value.microsecond == 0:
        return value.date().isoformat()
    return value.isoformat()


class StateCheckbox(Checkbox):
    """A checkbox whose state is written out: "[x] Write a tombstone" / "[ ] Write a tombstone".

    Textual's checkbox always draws its X and shows the state only by colour, which a reviewer on
    a monochrome terminal, a screen reader or a text snapshot cannot read.
    """

    BUTTON_LEFT = ""
    BUTTON_INNER = ""
    BUTTON_RIGHT = ""

    def __init__(self, text: str, value: bool = False, *, id: str | None = None) -> None:
        self.text = text
        super().__init__(self._label_for(value), value, id=id)

    def _label_for(self, value: bool) -> Content:
        return Content(f"[{'x' if value else ' '}] {self.text}")

    def watch_value(self) -> None:
        super().watch_value()
        self.label = self._label_for(self.value)


class ConfirmModal(ModalScreen[bool]):
    """A yes/no question; `y`/Enter say yes, `n`/Escape say no."""

    CSS_PATH = "modals.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes"),
        Binding("enter", "answer(True)", "Yes", show=False, id="confirm.enter"),
        Binding("n", "answer(False)", "No", id="confirm.no"),
        Binding("escape", "answer(False)", "No", show=False, id="confirm.escape"),
    ]

    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box", id="confirm-box"):
            # Scrolls: a bulk question lists every id it will decide, however many (never "… and 3
            # more": a reviewer says yes only to what they could read).
            with VerticalScroll(id="confirm-scroll"):
                yield Static(literal(self.message), id="confirm-message")
            with Horizontal(classes="modal-buttons"):
                yield Button("Yes (y)", id="yes", variant="primary")
                yield Button("No (n)", id="no")

    def on_mount(self) -> None:
        self.query_one("#confirm-scroll", VerticalScroll).focus()  # arrows and PageDown scroll the list

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class TombstoneCheckbox(StateCheckbox):
    """The reason dialog's tombstone box: toggled by ctrl+t or the mouse, never by focus and space.

    A reviewer types the reason in the input beside it; were the box focusable, a Tab too many and
    then a space in the reason would silently untick it (issue 19) and the rejected value would come
    back in the next extraction.
    """

    can_focus = False


TOMBSTONE_OFF_NOTE = "No tombstone: extraction may queue this value again."
"""What the reason dialog says while its tombstone box is unticked, unless the caller says more."""


class ReasonModal(KeepsTypedAhead, ModalScreen["ReasonResult | None"]):
    """Ask why (a rejection, a retraction): numbered common reasons, or free text.

    A digit typed into the still-empty reason picks that preset (presets are numbered 1..9), so a
    reviewer rejects with `r` `2` and never leaves the keyboard's home row for Shift+Tab. An empty
    reason is refused inline rather than dismissed, because the engine requires one and a reviewer
    who pressed Enter by accident should not lose the dialog. When the dialog offers a tombstone, its
    note says what the box's current state will do (`note` ticked, `note_off` unticked).
    """

    CSS_PATH = "modals.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="reason.cancel"),
        Binding("ctrl+s", "submit", "Confirm", id="reason.submit"),
        Binding("ctrl+t", "toggle_tombstone", "Tombstone on/off", id="reason.tombstone"),
        *FIELDS_IN_ORDER,
    ]

    def __init__(
        self,
        title: str,
        *,
        presets: Sequence[str] = (),
        note: str | None = None,
        tombstone: bool | None = None,
        note_off: str | None = None,
    ) -> None:
        super().__init__()
        self.title_text = title
        self.presets = list(presets)[:9]
        self.note = note
        self.note_off = note_off if note_off is not None else TOMBSTONE_OFF_NOTE
        self.tombstone = tombstone

    def _note_text(self, ticked: bool) -> str | None:
        if self.tombstone is None or ticked:
            return self.note
        return self.note_off

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box", id="reason-box"):
            yield Static(literal(self.title_text), classes="modal-title")
            if self.presets:
                yield OptionList(
                    *[
                        Option(Text.assemble((f"{i + 1} ", "bold"), literal(p)), id=f"preset-{i}")
                        for i, p in enumerate(self.presets)
                    ],
                    id="reason-presets",
                )
            hint = (
                f"1-{len(self.presets)} picks a reason; or type one, then Enter"
                if self.presets
                else "type a reason, then Enter"
            )
            yield InOrderInput(placeholder=hint, id="reason-input")
            yield Static("", id="reason-error", classes="inline-error")
            note = self._note_text(bool(self.tombstone))
            if note:
                yield Static(literal(note), id="reason-note", classes="modal-note")
            if self.tombstone is not None:
                yield TombstoneCheckbox("Write a tombstone (ctrl+t)", self.tombstone, id="reason-tombstone")
            with Horizontal(classes="modal-buttons"):
                yield Button("Confirm", id="ok", variant="primary")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#reason-input", Input).focus()

    def _tombstone_value(self) -> bool:
        if self.tombstone is None:
            return False
        return self.query_one("#reason-tombstone", Checkbox).value

    def action_toggle_tombstone(self) -> None:
        if self.tombstone is not None:
            box = self.query_one("#reason-tombstone", Checkbox)
            box.value = not box.value

    @on(Checkbox.Changed, "#reason-tombstone")
    def _tombstone_changed(self, event: Checkbox.Changed) -> None:
        event.stop()
        note = self._note_text(event.value)
        for shown in self.query("#reason-note").results(Static):
            shown.update(literal(note or ""))

    def _submit(self, reason: str) -> None:
        cleaned = reason.strip()
        if not cleaned:
            self.query_one("#reason-error", Static).update("A reason is required: pick one or type it.")
            self.query_one("#reason-input", Input).focus()
            return
        self.dismiss(ReasonResult(cleaned, self._tombstone_value()))

    @on(Input.Changed, "#reason-input")
    def _digit_picks(self, event: Input.Changed) -> None:
        """A lone digit typed into the empty reason picks that numbered preset."""
        value = event.value
        if len(value) == 1 and value.isdigit() and 1 <= int(value) <= len(self.presets):
            event.stop()
            self._submit(self.presets[int(value) - 1])

    @on(OptionList.OptionSelected, "#reason-presets")
    def _preset(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._submit(self.presets[event.option_index])

    @on(Input.Submitted, "#reason-input")
    def _typed(self, event: Input.Submitted) -> None:
        event.stop()
        self._submit(event.value)

    @on(Button.Pressed, "#ok")
    def _ok(self) -> None:
        self.action_submit()

    @on(Button.Pressed, "#cancel")
    def _cancel_pressed(self) -> None:
        self.dismiss(None)

    def action_submit(self) -> None:
        self._submit(self.query_one("#reason-input", Input).value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ErrorModal(ModalScreen[None]):
    """Something failed: what, why, and what was kept. The detail is shown literally (it may quote
    user text inside an engine error message)."""

    CSS_PATH = "modals.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="error.close"),
        Binding("enter", "close", "Close", show=False, id="error.enter"),
    ]

    def __init__(self, title: str, detail: str) -> None:
        super().__init__()
        self.title_text = title
        self.detail = detail

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box", id="error-box"):
            yield Static(literal(self.title_text), classes="modal-title error-title")
            yield Static(literal(self.detail), id="error-detail")
            with Horizontal(classes="modal-buttons"):
                yield Button("Close", id="close", variant="error")

    def on_mount(self) -> None:
        self.query_one("#close", Button).focus()

    @on(Button.Pressed, "#close")
    def _close_pressed(self) -> None:
        self.dismiss(None)

    def action_close(self) -> None:
        self.dismiss(None)


class StatementForm(KeepsTypedAhead, ModalScreen[_R]):
    """A statement and its valid-time interval (and, when ASKS_REASON, a reason), validated by the
    engine's own rules (`parse_datetime`, `check_interval`) before the dialog may close.

    Subclasses compose the fields with ids `{PREFIX}-statement`, `{PREFIX}-valid-at`,
    `{PREFIX}-invalid-at` (and `{PREFIX}-reason`), each followed by a `{PREFIX}-<field>-error`
    Static, and buttons `{PREFIX}-ok` / `{PREFIX}-cancel`; `make_result` builds what is returned.
    """

    PREFIX: ClassVar[str] = "edit"
    ASKS_REASON: ClassVar[bool] = False
    BINDINGS: ClassVar[list[BindingType]] = [*FIELDS_IN_ORDER]
    """Inherited by every form: Tab and Shift+Tab move between fields in the order typed."""

    def _error(self, field: str, message: str) -> None:
        self.query_one(f"#{self.PREFIX}-{field}-error", Static).update(literal(message))

    def _value(self, field: str) -> str:
        return self.query_one(f"#{self.PREFIX}-{field}", Input).value

    def make_result(self, statement: str, valid_at: datetime | None, invalid_at: datetime | None, reason: str) -> _R:
        raise NotImplementedError

    def validate_fields(self) -> _R | None:
        """The result, or None after showing every problem under its field."""
        fields = ("statement", "valid-at", "invalid-at", *(("reason",) if self.ASKS_REASON else ()))
        for field in fields:
            self._error(field, "")
        ok = True
        statement = self._value("statement").strip()
        if not statement:
            self._error("statement", "The statement cannot be empty.")
            ok = False
        reason = self._value("reason").strip() if self.ASKS_REASON else ""
        if self.ASKS_REASON and not reason:
            self._error("reason", "A reason is required.")
            ok = False
        ends: dict[str, datetime | None] = {}
        for field, what in (("valid-at", "valid from"), ("invalid-at", "valid until")):
            raw = self._value(field)
            if not raw.strip():
                ends[field] = None
                continue
            try:
                ends[field] = parse_datetime(raw, what)
            except UserInputError as exc:
                self._error(field, str(exc))
                ok = False
        if not ok:
            return None
        start, end = ends["valid-at"], ends["invalid-at"]
        if start is not None and end is not None and end <= start:
            # The engine's rule, said in the form's own words (its message names columns).
            self._error(
                "invalid-at",
                f"'Valid until' ({format_day_or_time(end)}) must be later than 'Valid from' "
                f"({format_day_or_time(start)}). Nothing was saved.",
            )
            return None
        try:
            check_interval(start, end)
        except UserInputError as exc:
            self._error("invalid-at", f"{exc}. Nothing was saved.")
            return None
        return self.make_result(statement, ends["valid-at"], ends["invalid-at"], reason)

    def on_mount(self) -> None:
        statement = self.query_one(f"#{self.PREFIX}-statement", Input)
        statement.focus()
        self._warn_hidden(statement.value)

    def _warn_hidden(self, value: str) -> None:
        """An input field draws hidden code points as nothing; say under it what it really holds."""
        shown = visible(value)
        if shown != value:
            self._error("statement", f"Holds hidden characters: {shown}")

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        if event.input.id == f"{self.PREFIX}-statement":
            self._error("statement", "")
            self._warn_hidden(event.value)

    def action_submit(self) -> None:
        result = self.validate_fields()
        if result is not None:
            self.dismiss(result)

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Input.Submitted)
    def _enter(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_submit()

    @on(Button.Pressed)
    def _button(self, event: Button.Pressed) -> None:
        if event.button.id == f"{self.PREFIX}-ok":
            self.action_submit()
        elif event.button.id == f"{self.PREFIX}-cancel":
            self.dismiss(None)


class EditModal(StatementForm["EditResult | None"]):
    """Edit a statement and its valid-time interval before approving.

    Dates are ISO 8601 (a date alone is midnight UTC); an empty field is an open end. Errors are
    shown under the field that caused them, and nothing is returned until all of them are gone.
    """

    CSS_PATH = "modals.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="edit.cancel"),
        Binding("ctrl+s", "submit", "Save", id="edit.submit"),
    ]

    def __init__(
        self,
        statement: str,
        valid_at: datetime | None = None,
        invalid_at: datetime | None = None,
        *,
        title: str = "Edit, then approve",
        save_label: str = "Save and approve",
    ) -> None:
        super().__init__()
        self.statement = statement
        self.valid_at = valid_at
        self.invalid_at = invalid_at
        self.title_text = title
        self.save_label = save_label

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box", id="edit-box"):
            yield Static(literal(self.title_text), classes="modal-title")
            yield Label("Statement")
            # No select-all on focus: keys typed while the dialog opens (End, then a letter) edit the
            # statement at its end instead of replacing the whole of it with the letter.
            yield InOrderInput(self.statement, id="edit-statement", select_on_focus=False)
            yield Static("", id="edit-statement-error", classes="inline-error")
            yield Label("Valid from (ISO date, empty = always)")
            yield InOrderInput(format_day_or_time(self.valid_at), id="edit-valid-at", placeholder="e.g. 2024-05-01")
            yield Static("", id="edit-valid-at-error", classes="inline-error")
            yield Label("Valid until (ISO date, empty = until further notice)")
            yield InOrderInput(format_day_or_time(self.invalid_at), id="edit-invalid-at", placeholder="e.g. 2025-01-01")
            yield Static("", id="edit-invalid-at-error", classes="inline-error")
            with Horizontal(classes="modal-buttons"):
                yield Button(self.save_label, id="edit-ok", variant="primary")
                yield Button("Cancel", id="edit-cancel")

    def make_result(
        self, statement: str, valid_at: datetime | None, invalid_at: datetime | None, reason: str
    ) -> EditResult:
        return EditResult(statement, valid_at, invalid_at)


class ReplaceChoiceModal(ModalScreen["str | None"]):
    """The question a replacement asks, by `a` and by `e` on a candidate that would replace
    something: `s` supersedes (the world changed: the old value ends, readable for its period),
    `c` corrects (it was never true: as-of never reads the old value again), `k` keeps both,
    Escape decides nothing.

    The engine refuses a plain approve of such a candidate (DecisionRequiredError); this dialog is
    where the reviewer makes the choice the engine requires, with both values in view."""

    CSS_PATH = "modals.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "choose('supersede')", "Supersede", id="choice.supersede"),
        Binding("c", "choose('correct')", "Correct", id="choice.correct"),
        Binding("k", "choose('keep_both')", "Keep both", id="choice.keep_both"),
        Binding("escape", "choose(None)", "Cancel", id="choice.cancel"),
    ]

    def __init__(self, title: str, old: str, new: str) -> None:
        super().__init__()
        self.title_text = title
        self.old = old
        self.new = new

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box", id="choice-box"):
            yield Static(literal(self.title_text), classes="modal-title")
            values = Text.assemble(("now  ", "dim"), literal(self.old), ("\nnew  ", "dim"), literal(self.new, "bold"))
            yield Static(values, id="choice-values")
            yield Static(
                "s supersede: the world changed (the old value ends where the new one starts, and stays "
                "true for its own period). c correct: the old value was never true (no date reads it again). "
                "k keep both: both are true at once.",
                classes="modal-note",
            )
            with Horizontal(classes="modal-buttons"):
                yield Button("Supersede (s)", id="choice-supersede", variant="primary")
                yield Button("Correct (c)", id="choice-correct")
                yield Button("Keep both (k)", id="choice-keep")
                yield Button("Cancel", id="choice-cancel")

    def action_choose(self, choice: str | None) -> None:
        self.dismiss(choice)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        choices = {"choice-supersede": "supersede", "choice-correct": "correct", "choice-keep": "keep_both"}
        self.dismiss(choices.get(event.button.id or ""))


@dataclass(frozen=True, slots=True)
class PickResult:
    """A fact picked from a list, and the reason given (empty when none was asked)."""

    fact_id: int
    reason: str
    start: datetime | None = None  # when the picked fact starts, where asked (None: not given)


class PickFactModal(FieldsInOrder, ModalScreen["PickResult | None"]):
    """Pick one of a user's active facts (retarget a candidate at it; mark a fact superseded by it),
    with a reason when the change needs one. Enter on a fact picks it; Escape picks nothing."""

    CSS_PATH = "modals.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="pick.cancel"),
        Binding("ctrl+s", "submit", "Confirm", id="pick.submit"),
        *FIELDS_IN_ORDER,
    ]

    def __init__(
        self,
        title: str,
        facts: Sequence[tuple[int, str]],
        *,
        ask_reason: bool = False,
        note: str | None = None,
        ask_start: str | None = None,
    ) -> None:
        super().__init__()
        self.title_text = title
        self.facts = list(facts)
        self.ask_reason = ask_reason
        self.note = note
        self.ask_start = ask_start  # the start field's placeholder, when the change takes a start date

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box", id="pick-box"):
            yield Static(literal(self.title_text), classes="modal-title")
            yield OptionList(
                *[
                    Option(Text.assemble((f"#{fid} ", "bold"), literal(text)), id=f"fact-{fid}")
                    for fid, text in self.facts
                ],
                id="pick-facts",
            )
            if self.ask_reason:
                yield InOrderInput(placeholder="reason (required, kept in the audit log)", id="pick-reason")
            if self.ask_start:
                yield InOrderInput(placeholder=self.ask_start, id="pick-start")
            yield Static("", id="pick-error", classes="inline-error")
            if self.note:
                yield Static(literal(self.note), classes="modal-note")
            with Horizontal(classes="modal-buttons"):
                yield Button("Confirm", id="pick-ok", variant="primary")
                yield Button("Cancel", id="pick-cancel")

    def on_mount(self) -> None:
        self.query_one("#pick-facts", OptionList).focus()

    def action_submit(self) -> None:
        options = self.query_one("#pick-facts", OptionList)
        if options.highlighted is None or not self.facts:
            self.query_one("#pick-error", Static).update("Pick a fact first (arrows, then Enter).")
            return
        reason = self.query_one("#pick-reason", Input).value.strip() if self.ask_reason else ""
        if self.ask_reason and not reason:
            self.query_one("#pick-error", Static).update("A reason is required.")
            self.query_one("#pick-reason", Input).focus()
            return
        start: datetime | None = None
        if self.ask_start:
            raw = self.query_one("#pick-start", Input).value.strip()
            try:
                start = parse_datetime(raw, "the start") if raw else None
            except UserInputError:
                self.query_one("#pick-error", Static).update(
                    f"The start {raw!r} is not a date: write it as 2026-02-03 (or leave it empty)."
                )
                self.query_one("#pick-start", Input).focus()
                return
        self.dismiss(PickResult(self.facts[options.highlighted][0], reason, start))

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(OptionList.OptionSelected, "#pick-facts")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if self.ask_reason and not self.query_one("#pick-reason", Input).value.strip():
            self.query_one("#pick-reason", Input).focus()
            return
        self.action_submit()

    @on(Input.Submitted, "#pick-reason")
    def _reason_entered(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_submit()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "pick-ok":
            self.action_submit()
        elif event.button.id == "pick-cancel":
            self.dismiss(None)


__all__ = [
    "TOMBSTONE_OFF_NOTE",
    "ConfirmModal",
    "EditModal",
    "EditResult",
    "ErrorModal",
    "PickFactModal",
    "PickResult",
    "ReasonModal",
    "ReasonResult",
    "ReplaceChoiceModal",
    "StateCheckbox",
    "StatementForm",
    "TombstoneCheckbox",
    "format_day_or_time",
]

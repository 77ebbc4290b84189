"""The correction dialog of the Knowledge screen: a new statement and interval plus a reason.

A correction is one engine call that needs all four values, so they are asked for in one dialog
rather than an edit dialog followed by a reason dialog: a support agent fixing a fact while the
user waits should not be able to lose the edit by cancelling the second step. Validation runs here
through the engine's own rules (`parse_datetime`, `check_interval`) and the dialog does not
dismiss while anything is wrong; the engine checks again on write.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Label, Static

from engine.models import Knowledge

from ..modals import StatementForm, format_day_or_time
from .in_order_input import InOrderInput
from .literal import literal


@dataclass(frozen=True, slots=True)
class CorrectResult:
    """A correction as typed: None for an interval end means an open end."""

    statement: str
    valid_at: datetime | None
    invalid_at: datetime | None
    reason: str


class CorrectModal(StatementForm["CorrectResult | None"]):
    """Correct one fact: statement and interval pre-filled from the current version."""

    CSS_PATH = "knowledge_correct.tcss"
    PREFIX = "correct"
    ASKS_REASON = True
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="correct.cancel"),
        Binding("ctrl+s", "submit", "Save", id="correct.submit"),
    ]

    def __init__(self, fact: Knowledge) -> None:
        super().__init__()
        self.fact = fact

    def compose(self) -> ComposeResult:
        with Vertical(id="correct-box"):
            yield Static(literal(f"Correct fact #{self.fact.id} of {self.fact.user_id}"), classes="correct-title")
            yield Label("Current statement")
            yield Static(literal(self.fact.statement), id="correct-current")
            yield Label("New statement")
            yield InOrderInput(self.fact.statement, id="correct-statement")
            yield Static("", id="correct-statement-error", classes="inline-error")
            yield Label("Valid from (ISO date, empty = always)")
            yield InOrderInput(
                format_day_or_time(self.fact.valid_at), id="correct-valid-at", placeholder="e.g. 2024-05-01"
            )
            yield Static("", id="correct-valid-at-error", classes="inline-error")
            yield Label("Valid until (ISO date, empty = until further notice)")
            yield InOrderInput(
                format_day_or_time(self.fact.invalid_at), id="correct-invalid-at", placeholder="e.g. 2025-01-01"
            )
            yield Static("", id="correct-invalid-at-error", classes="inline-error")
            yield Label("Reason (required, kept in the audit log)")
            yield InOrderInput("", id="correct-reason", placeholder="e.g. the user told support it is wrong")
            yield Static("", id="correct-reason-error", classes="inline-error")
            yield Static(
                "The old version stays in the history, superseded (end reason: corrected).", classes="correct-note"
            )
            with Horizontal(classes="correct-buttons"):
                yield Button("Save correction", id="correct-ok", variant="primary")
                yield Button("Cancel", id="correct-cancel")

    def make_result(
        self, statement: str, valid_at: datetime | None, invalid_at: datetime | None, reason: str
    ) -> CorrectResult:
        return CorrectResult(statement, valid_at, invalid_at, reason)

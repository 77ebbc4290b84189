"""The dialog that edits the queue's filter (an `engine.QueueFilter`, which the queue passes as it
is to `ReviewService.pending` / `count` / `mark` and `TeamService.progress`)."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Select, Static

from engine import ANY_SPECIAL, CANDIDATE_KINDS, CATEGORIES, QueueFilter

from ..modals import StateCheckbox
from ..widgets.literal import literal
from .in_order_input import FIELDS_IN_ORDER, FieldsInOrder, InOrderInput

# Special categories the filter offers: "any" (every one) first, then each (engine.categories).
CATEGORY_CHOICES: tuple[str, ...] = (ANY_SPECIAL, *CATEGORIES)


def _parse_confidence(raw: str, what: str) -> float | None:
    text = raw.strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{what} must be a number between 0 and 1") from None
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{what} must be between 0 and 1")
    return value


class FilterModal(FieldsInOrder, ModalScreen["QueueFilter | None"]):
    """Edit the queue filter; Escape keeps the current one, "Clear" removes every filter."""

    CSS_PATH = "queue_filter.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="filter.cancel"),
        Binding("ctrl+s", "apply", "Apply", id="filter.apply"),
        *FIELDS_IN_ORDER,
    ]

    def __init__(self, current: QueueFilter, users: list[str]) -> None:
        super().__init__()
        self.current = current
        self.users = users

    def compose(self) -> ComposeResult:
        cur = self.current
        with Vertical(classes="modal-box", id="filter-box"):
            yield Static("Filter the queue", classes="modal-title")
            yield Label("User")
            # Select.NULL is "no selection"; Select.BLANK is Widget.BLANK (False), an illegal value.
            yield Select(
                [(literal(u), u) for u in self.users],
                value=cur.user_id if cur.user_id is not None else Select.NULL,
                prompt="any user",
                id="filter-user",
            )
            yield Label("Kind")
            yield Select(
                [(k, k) for k in CANDIDATE_KINDS],
                value=cur.kind if cur.kind is not None else Select.NULL,
                prompt="any kind",
                id="filter-kind",
            )
            yield Label("Confidence from – to (0–1, empty = open)")
            with Horizontal(id="filter-confidence"):
                yield InOrderInput(
                    "" if cur.min_confidence is None else f"{cur.min_confidence:g}", id="filter-min", placeholder="0"
                )
                yield InOrderInput(
                    "" if cur.max_confidence is None else f"{cur.max_confidence:g}", id="filter-max", placeholder="1"
                )
            yield Label("Special category")
            yield Select(
                [(c.replace("_", " "), c) for c in CATEGORY_CHOICES],
                value=cur.category if cur.category is not None else Select.NULL,
                prompt="no category filter",
                id="filter-category",
            )
            yield StateCheckbox("Unsupported evidence only", cur.unsupported is True, id="filter-unsupported")
            yield Static("", id="filter-error", classes="inline-error")
            with Horizontal(classes="modal-buttons"):
                yield Button("Apply", id="apply", variant="primary")
                yield Button("Clear", id="clear")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#filter-user", Select).focus()

    def _read(self) -> QueueFilter | None:
        user = self.query_one("#filter-user", Select).value
        kind = self.query_one("#filter-kind", Select).value
        category = self.query_one("#filter-category", Select).value
        try:
            low = _parse_confidence(self.query_one("#filter-min", Input).value, "'from'")
            high = _parse_confidence(self.query_one("#filter-max", Input).value, "'to'")
        except ValueError as exc:
            self.query_one("#filter-error", Static).update(literal(str(exc)))
            return None
        if low is not None and high is not None and low > high:
            self.query_one("#filter-error", Static).update("'from' must not be above 'to'")
            return None
        return QueueFilter(
            user_id=user if isinstance(user, str) else None,
            kind=next((k for k in CANDIDATE_KINDS if k == kind), None),
            min_confidence=low,
            max_confidence=high,
            unsupported=True if self.query_one("#filter-unsupported", Checkbox).value else None,
            search=self.current.search,
            assigned_to=self.current.assigned_to,
            category=category if isinstance(category, str) else None,
        )

    def action_apply(self) -> None:
        result = self._read()
        if result is not None:
            self.dismiss(result)

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Input.Submitted)
    def _enter(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_apply()

    @on(Button.Pressed, "#apply")
    def _apply_pressed(self) -> None:
        self.action_apply()

    @on(Button.Pressed, "#clear")
    def _clear_pressed(self) -> None:
        self.dismiss(QueueFilter(search=self.current.search))

    @on(Button.Pressed, "#cancel")
    def _cancel_pressed(self) -> None:
        self.dismiss(None)

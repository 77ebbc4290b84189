"""A user picker you type into: the list narrows to the users whose id contains what was typed.

Textual's Select searches only by prefix and only once its list is open, so with ids such as
`u-ben` a reviewer could not type "ben" to get there. Here `u` opens this dialog with the cursor in
a search field; arrows move in the list without leaving the field; Enter picks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from .in_order_input import InOrderInput, KeepsTypedAhead
from .literal import literal

ALL_USERS = ""
"""The value for "every user" (the engine refuses an empty user id, so it cannot clash)."""


def matching(users: Sequence[str], typed: str) -> list[str]:
    """The users whose id contains `typed` (case-insensitive), those starting with it first."""
    needle = typed.strip().casefold()
    if not needle:
        return list(users)
    hits = [u for u in users if needle in u.casefold()]
    return sorted(hits, key=lambda u: (not u.casefold().startswith(needle), hits.index(u)))


class UserPickerModal(KeepsTypedAhead, ModalScreen["str | None"]):
    """Pick a user by typing part of the id; returns the id, ALL_USERS, or None when cancelled."""

    CSS_PATH = "../modals.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="user_picker.cancel"),
        Binding("down", "move(1)", "Next user", show=False, id="user_picker.down"),
        Binding("up", "move(-1)", "Previous user", show=False, id="user_picker.up"),
    ]

    def __init__(self, users: Sequence[str], *, allow_all: bool = False) -> None:
        super().__init__()
        self.users = list(users)
        self.allow_all = allow_all
        self.shown: list[str] = []

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box", id="user-picker-box"):
            yield Static("Which user? Type part of the id; arrows, then Enter.", classes="modal-title")
            yield InOrderInput(placeholder="type to search users", id="user-picker-input")
            yield OptionList(id="user-picker-list")

    def on_mount(self) -> None:
        self._fill("")
        self.query_one("#user-picker-input", Input).focus()

    def _fill(self, typed: str) -> None:
        self.shown = ([ALL_USERS] if self.allow_all and not typed.strip() else []) + matching(self.users, typed)
        options = self.query_one("#user-picker-list", OptionList)
        options.clear_options()
        options.add_options(
            [Option("All users" if u == ALL_USERS else literal(u), id=f"user-{i}") for i, u in enumerate(self.shown)]
        )
        if self.shown:
            options.highlighted = 0

    @on(Input.Changed, "#user-picker-input")
    def _typed(self, event: Input.Changed) -> None:
        self._fill(event.value)

    def action_move(self, step: int) -> None:
        options = self.query_one("#user-picker-list", OptionList)
        if self.shown:
            now = options.highlighted if options.highlighted is not None else 0
            options.highlighted = max(0, min(len(self.shown) - 1, now + step))

    @on(Input.Submitted, "#user-picker-input")
    def _enter(self, event: Input.Submitted) -> None:
        event.stop()
        highlighted = self.query_one("#user-picker-list", OptionList).highlighted
        if highlighted is None or not self.shown:
            self.app.bell()
            return
        self.dismiss(self.shown[highlighted])

    @on(OptionList.OptionSelected, "#user-picker-list")
    def _clicked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self.shown[event.option_index])

    def action_cancel(self) -> None:
        self.dismiss(None)

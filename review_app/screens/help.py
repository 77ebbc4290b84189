"""The Help screen (`?`): every key binding of the app and of the screen it was opened over.

The keys are read from the live binding maps with the app's keymap applied, so a reviewer who
remapped `a` to `enter` sees `enter`: a help page that lists the defaults would be wrong exactly
for the people who customised it. The binding ids are listed too, because they are what a keymap
file names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.dom import DOMNode
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Static

from ..widgets.literal import literal


@dataclass(frozen=True, slots=True)
class HelpRow:
    """One binding as shown: every key it is on now, its id (for the keymap file), what it does."""

    scope: str
    keys: str
    binding_id: str
    description: str
    action: str


def _scope_name(node: DOMNode) -> str:
    from textual.app import App

    if isinstance(node, App):
        return "everywhere"
    return type(node).__name__.removesuffix("Screen").lower() or "screen"


def binding_rows(screen: Screen[Any]) -> list[HelpRow]:
    """The bindings of `screen` then of its app, keymap applied, one row per binding (keys that
    share a binding are joined). System bindings (Textual's own ctrl+c hint) are left out."""
    app = screen.app
    rows: list[HelpRow] = []
    for node in (screen, app):
        bindings_map = node._bindings.copy()
        if app._keymap:
            bindings_map.apply_keymap(app._keymap)
        keys_of: dict[str, list[str]] = {}
        first: dict[str, Binding] = {}
        for key, binding in bindings_map:
            if binding.system:
                continue
            ident = binding.id or f"{binding.action}|{binding.description}"
            keys_of.setdefault(ident, []).append(app.get_key_display(binding) or key)
            first.setdefault(ident, binding)
        for ident, binding in first.items():
            rows.append(HelpRow(
                scope=_scope_name(node), keys=", ".join(keys_of[ident]), binding_id=binding.id or "",
                description=binding.description or binding.tooltip or binding.action, action=binding.action,
            ))
    return rows


class HelpScreen(ModalScreen[None]):
    """Every binding of the app and of the screen beneath; Escape or `?` closes it."""

    CSS_PATH = "help.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close help", id="help.close"),
        Binding("question_mark", "close", "Close help", show=False, id="help.toggle"),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box"):
            yield Static("", id="help-title")
            yield DataTable(id="help-table", cursor_type="row", zebra_stripes=True)
            yield Static(
                "Keys are shown as currently mapped. A keymap file remaps them by id: "
                '[keymap] app.mode.queue = "f1". Every action is also in the command palette (ctrl+p).',
                id="help-foot", markup=False,
            )

    def _beneath(self) -> Screen[Any] | None:
        stack = self.app.screen_stack
        if self in stack:
            index = stack.index(self)
            return stack[index - 1] if index > 0 else None
        return stack[-1] if stack else None

    def on_mount(self) -> None:
        table = self.query_one("#help-table", DataTable)
        table.add_column("Where", key="scope")
        table.add_column("Key", key="keys")
        table.add_column("Binding id", key="id")
        table.add_column("What it does", key="description")
        beneath = self._beneath()
        title = self.query_one("#help-title", Static)
        if beneath is None:
            title.update("Key bindings")
            return
        title.update(Text.assemble(("Key bindings", "bold"), f" · {_scope_name(beneath)} screen and everywhere"))
        for i, row in enumerate(binding_rows(beneath)):
            table.add_row(literal(row.scope), literal(row.keys), literal(row.binding_id), literal(row.description),
                          key=str(i))
        table.focus()

    def action_close(self) -> None:
        self.dismiss(None)

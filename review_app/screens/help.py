"""The Help screen (`?`): every key of every screen and dialog, with its binding id.

Built from the registry of every screen and dialog class (review_app.registry) and each class's
`BINDINGS` (through `BindingsMap`, with the
reviewer's keymap applied by id), so a reviewer who remapped `a` to `enter` sees `enter`, and the
screen they came from is listed first. The binding ids are listed because they are what a keymap
file names. The footer shows only what fits; this is where the rest lives.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingsMap, BindingType
from textual.containers import Vertical
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


def _scope_name(cls: type[Any]) -> str:
    from textual.app import App

    if issubclass(cls, App):
        return "everywhere"
    name = cls.__name__.removesuffix("Screen").removesuffix("Modal")
    return {"DataTable": "lists", "Tabs": "detail tabs"}.get(name, name.lower())


def scopes() -> list[type[Any]]:
    """Every class whose bindings the workstation offers: the app, each screen, each dialog, and
    the two Textual widgets whose keys matter (lists; the detail tabs of the narrow layout). Found,
    not listed by hand (review_app.registry): a new screen or dialog is in help once it exists."""
    from ..registry import binding_classes

    return list(binding_classes())


def class_rows(cls: type[Any], keymap: Mapping[str, str], key_display: Any) -> list[HelpRow]:
    """The bindings of one class, keymap applied, one row per binding (keys sharing one are joined).
    Textual's system bindings (ctrl+c's hint) are left out."""
    bindings: Iterable[BindingType] = getattr(cls, "BINDINGS", [])
    bindings_map = BindingsMap(bindings)
    if keymap:
        bindings_map.apply_keymap(dict(keymap))
    keys_of: dict[str, list[str]] = {}
    first: dict[str, Binding] = {}
    for key, binding in bindings_map:
        if binding.system:
            continue
        ident = binding.id or f"{binding.action}|{binding.description}"
        keys_of.setdefault(ident, []).append(key_display(binding) or key)
        first.setdefault(ident, binding)
    return [
        HelpRow(
            scope=_scope_name(cls),
            keys=", ".join(keys_of[ident]),
            binding_id=binding.id or "",
            description=binding.description or binding.tooltip or binding.action,
            action=binding.action,
        )
        for ident, binding in first.items()
    ]


def binding_rows(screen: Screen[Any]) -> list[HelpRow]:
    """Every binding of the workstation, the screen `screen`'s class (and the app) first."""
    app = screen.app
    keymap: Mapping[str, str] = getattr(app, "key_overrides", {})
    ordered = scopes()
    first = [type(screen)] if type(screen) in ordered else []
    from textual.app import App

    order = [
        *first,
        *[c for c in ordered if issubclass(c, App)],
        *[c for c in ordered if c not in first and not issubclass(c, App)],
    ]
    rows: list[HelpRow] = []
    for cls in order:
        rows += class_rows(cls, keymap, app.get_key_display)
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
                '[keymap] app.mode.queue = "f1". Every action is also in the command palette (ctrl+p). '
                "Under 130 columns the queue's detail panes are tabs: Tab moves the focus to them, "
                "then left/right switch.",
                id="help-foot",
                markup=False,
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
            beneath = self
        where = _scope_name(type(beneath))
        title.update(Text.assemble(("Key bindings", "bold"), f" · every screen and dialog, {where} first"))
        for i, row in enumerate(binding_rows(beneath)):
            table.add_row(
                literal(row.scope), literal(row.keys), literal(row.binding_id), literal(row.description), key=str(i)
            )
        table.focus()

    def action_close(self) -> None:
        self.dismiss(None)

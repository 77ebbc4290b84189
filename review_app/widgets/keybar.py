"""The footer of every workstation screen: the keys that matter most, as many as the width allows.

Textual's `Footer` lists every shown binding in declaration order and simply cuts the line where
the terminal ends: at 160 columns the queue's footer stopped at "2 Knowledg", so 3, 4, `?` and `q`
were never seen, and at 80 columns half the decision keys were missing. Here each screen names its
bindings in order of importance (binding ids) and the bar shows that order until the next hint
would not fit, always ending with `?` (the full list). Keys come from the screen's
`active_bindings`, so a keymap override and a disabled action (the search box has focus) show as
they are. A click on a hint runs its action, as with Textual's footer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual import events
from textual.app import RenderResult
from textual.binding import Binding
from textual.dom import DOMNode
from textual.screen import Screen
from textual.widget import Widget

HELP_ID = "app.help"
APP_KEYS: tuple[str, ...] = (
    "app.mode.queue",
    "app.mode.knowledge",
    "app.mode.tombstones",
    "app.mode.stats",
    "app.mode.discarded",
    "app.quit",
)
"""The app-wide keys, after each screen's own in every footer."""


def key_hints(screen: Screen[Any], priority: Sequence[str]) -> list[tuple[str, str, Binding, DOMNode]]:
    """(key as displayed, description, binding, node) for each id of `priority` that is active on
    `screen` now, in priority order; bindings without an id, or not shown, are left to `?`."""
    by_id: dict[str, tuple[str, Binding, DOMNode]] = {}
    for key, active in screen.active_bindings.items():
        binding = active.binding
        if binding.id and binding.id not in by_id and active.enabled:
            by_id[binding.id] = (screen.app.get_key_display(binding) or key, binding, active.node)
    out = []
    for ident in priority:
        if ident in by_id:
            key, binding, node = by_id[ident]
            out.append((key, binding.description or binding.action, binding, node))
    return out


class KeyBar(Widget):
    """A one-line footer of prioritised key hints that always ends with `? all keys`."""

    DEFAULT_CSS: ClassVar[str] = """
    KeyBar {
        dock: bottom;
        height: 1;
        background: $panel;
        color: $text-muted;
    }
    """

    def __init__(self, priority: Sequence[str], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.priority = tuple(i for i in priority if i != HELP_ID)
        self._spans: list[tuple[int, int, Binding, DOMNode]] = []

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._on_bindings_updated)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _on_bindings_updated(self, _screen: Screen[Any]) -> None:
        self.refresh()

    def on_resize(self, _event: events.Resize) -> None:
        self.refresh()

    def render(self) -> RenderResult:
        width = self.size.width
        hints = key_hints(self.screen, self.priority)
        tail = key_hints(self.screen, (HELP_ID,))
        tail_key = tail[0][0] if tail else "?"
        more = Text.assemble((tail_key, "bold reverse"), " all keys ")
        line = Text(" ")
        spans: list[tuple[int, int, Binding, DOMNode]] = []
        for key, description, binding, node in hints:
            hint = Text.assemble((key, "bold reverse"), f" {description}  ")
            if line.cell_len + hint.cell_len + more.cell_len > width:
                break
            spans.append((line.cell_len, line.cell_len + hint.cell_len, binding, node))
            line.append_text(hint)
        if tail:
            spans.append((line.cell_len, line.cell_len + more.cell_len, tail[0][2], tail[0][3]))
        line.append_text(more)
        self._spans = spans
        return line

    async def on_click(self, event: events.Click) -> None:
        for start, end, binding, node in self._spans:
            if start <= event.x < end:
                await self.app.run_action(binding.action, node)
                return

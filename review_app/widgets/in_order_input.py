"""A text box whose editing keys act in the order they were typed.

Textual's `Input` inserts a printable key as it handles the key, but runs its own bound keys
(Backspace, Delete, arrows, Home, End, Enter, ...) as binding actions after the key has bubbled up:
keys that arrive together (a paste of typed keystrokes, a macro, a chorded keyboard, a loaded
machine) are then applied out of order. "x", Backspace, "a", "b", "c" in one burst gave "xab"
(Textualize/textual#6605; the fix proposed upstream, #6631, runs the widget's own bindings inline as
this does). A reason or a corrected statement typed that way would be stored as something other
than what the reviewer typed, so every text box of the workstation is this one.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, cast

from textual import events
from textual.binding import Binding
from textual.widgets import Input

if TYPE_CHECKING:
    from textual.screen import Screen


@cache
def _editing_actions(cls: type[Input]) -> dict[str, str]:
    """Key -> action of the Input class's own bindings (each of a binding's comma-separated keys)."""
    actions: dict[str, str] = {}
    for base in reversed(cls.__mro__):
        for binding in getattr(base, "BINDINGS", ()):
            if isinstance(binding, Binding):
                for key in binding.key.split(","):
                    actions[key.strip()] = binding.action
    return actions


class InOrderInput(Input):
    """`Input`, with its own bound keys run as they arrive, in order with typed characters."""

    async def _on_key(self, event: events.Key) -> None:
        action = None if event.is_printable else _editing_actions(type(self)).get(event.key)
        if action is None:
            await super()._on_key(event)
            return
        event.stop()
        event.prevent_default()
        await self.run_action(action)


class KeepsTypedAhead:
    """For a dialog that opens with a text box focused: keys typed right after the key that opened
    it are typed into that box, in order.

    Textual puts the dialog on the screen stack at once but composes it later; keys that arrive
    meanwhile find nothing focused and are forwarded to the dialog itself, which handles them only
    after composing, when the box has focus but the keys are no longer on their way to it: they were
    dropped (`e`, End, X in one burst opened the editor without the X). A printable or editing key
    that reaches the dialog itself while a text box has focus (a key typed into the box never does:
    the box stops it) is passed on to the box. Keys the dialog binds itself (Escape, ctrl+s) act as
    before."""

    async def on_key(self, event: events.Key) -> None:
        if not (event.is_printable or event.key in _editing_actions(InOrderInput)):
            return
        target = cast("Screen[object]", self).focused
        if isinstance(target, Input):
            event.stop()
            event.prevent_default()
            target.post_message(events.Key(event.key, event.character))

"""A text box whose editing keys act in the order they were typed.

Textual's `Input` inserts a printable key as it handles the key, but runs its own bound keys
(Backspace, Delete, arrows, Home, End, Enter, ...) as binding actions after the key has bubbled up:
keys that arrive together (a paste of typed keystrokes, a macro, a chorded keyboard, a loaded
machine) are then applied out of order. "x", Backspace, "a", "b", "c" in one burst gave "xab"
(Textualize/textual#6605; the fix proposed upstream, #6631, runs the widget's own bindings inline as
this does). A reason or a corrected statement typed that way would be stored as something other
than what the reviewer typed, so every text box of the workstation is this one.

Moving between fields has the same race one level up: Tab is the screen's binding, run after the
key has bubbled up from the text box, by when the keys typed after it have already been sent to
that same box. "User has type 1 diabetes", Tab, "2026-11-03" in one burst stored "User has type 1
diabetes2026-11-03" with no date. Every form therefore binds Tab and Shift+Tab as priority
bindings (`FIELDS_IN_ORDER`, acted on by `FieldsInOrder`): Textual runs a priority binding as the
key arrives, before it forwards the next key to whatever has focus, so each key lands in the field
that had focus when it was typed.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, cast

from textual import events
from textual.binding import Binding, BindingType
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


FIELDS_IN_ORDER: list[BindingType] = [
    Binding("tab", "focus_in_order(1)", "Next field", show=False, priority=True, id="form.next_field"),
    Binding("shift+tab", "focus_in_order(-1)", "Previous field", show=False, priority=True, id="form.previous_field"),
]
"""Tab and Shift+Tab of a form, run as they arrive (see the module docstring)."""

_FOCUS_KEYS = {"tab": 1, "shift+tab": -1}


class FieldsInOrder:
    """The action of `FIELDS_IN_ORDER`, for a dialog (its BINDINGS add FIELDS_IN_ORDER)."""

    def action_focus_in_order(self, step: int) -> None:
        screen = cast("Screen[object]", self)
        if screen.focused is None:
            # Still composing: the keys typed before this Tab are queued for the dialog itself
            # (`KeepsTypedAhead`); the Tab joins them there, so it moves focus after they landed.
            screen.post_message(events.Key("tab" if step > 0 else "shift+tab", None))
            return
        if step > 0:
            screen.focus_next()
        else:
            screen.focus_previous()


class KeepsTypedAhead(FieldsInOrder):
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
        screen = cast("Screen[object]", self)
        step = _FOCUS_KEYS.get(event.key)
        if step is not None and screen.focused is not None:  # a Tab typed ahead, now in its turn
            event.stop()
            event.prevent_default()
            self.action_focus_in_order(step)
            return
        if not (event.is_printable or event.key in _editing_actions(InOrderInput)):
            return
        target = screen.focused
        if isinstance(target, Input):
            event.stop()
            event.prevent_default()
            target.post_message(events.Key(event.key, event.character))

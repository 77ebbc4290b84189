"""Showing text a user or a model wrote exactly as it was written.

Textual parses markup in strings handed to Static/Label; a statement such as `[b]x[/b]` or
`[link=http://x]` would be rendered (or rejected as bad markup) instead of shown. Wrapping the value
in `rich.text.Text` bypasses markup entirely. Control characters are made visible for DISPLAY only
(ESC as ␛, other C0 codes as their Control Pictures): a raw ESC would otherwise reach the terminal
as an escape sequence. The stored value is never altered.

Invisible code points are shown by name as `⟨U+XXXX⟩`: format characters (Unicode category Cf:
zero-width space/joiners, bidi embeddings, overrides and isolates, BOM, soft hyphen, tag characters),
line/paragraph separators, space characters other than U+0020, blank-looking letters (Hangul fillers,
braille blank), surrogates, private-use and unassigned code points. Otherwise a statement such as
"Ana is ⟨U+202E⟩ nagev" (Trojan Source) would look to a reviewer like something other than what is
stored, and a reviewer approves what is stored. `visible` is the one function every screen, dialog,
toast and CLI line uses to show such text; it starts from the engine's `engine.text.reveal` (every
Default_Ignorable_Code_Point that `canonical` drops, the Mongolian and supplementary variation
selectors among them, which no category test here catches), so what the engine ignores when it
judges is exactly what the reviewer is shown as ⟨U+XXXX⟩.
"""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING, Protocol

from rich.style import Style
from rich.text import Text

if TYPE_CHECKING:  # a type only: the command line shows text with `visible` and loads no Textual
    from textual.notifications import SeverityLevel

from engine.text import reveal

_KEEP = {"\n", "\t"}

# Categories with no glyph of their own (or none a reviewer could tell from a space or nothing).
_HIDDEN_CATEGORIES = frozenset({"Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"})
# Letters and symbols that render as blank space although their category says they are visible.
_BLANK_LOOKING = frozenset({0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800, 0x034F, 0x180E, 0x17B4, 0x17B5})


def _hidden(ch: str) -> bool:
    """Whether `ch` would be invisible or mistakable for a plain space on screen."""
    if ch == " ":
        return False
    return unicodedata.category(ch) in _HIDDEN_CATEGORIES or ord(ch) in _BLANK_LOOKING or 0xFE00 <= ord(ch) <= 0xFE0E


def codepoint_tag(ch: str) -> str:
    """How a hidden code point is written on screen: `⟨U+200B⟩`."""
    return f"⟨U+{ord(ch):04X}⟩"


def visible(value: str) -> str:
    """`value` as a reviewer must see it: C0 controls (except newline and tab) and DEL as symbols,
    C1 controls as �, and every invisible or space-like code point as `⟨U+XXXX⟩`."""
    out: list[str] = []
    for ch in reveal(value):
        code = ord(ch)
        if ch in _KEEP:
            out.append(ch)
        elif code < 0x20:
            out.append(chr(0x2400 + code))  # U+2400.. Control Pictures; ESC -> ␛
        elif code == 0x7F:
            out.append("␡")
        elif 0x80 <= code < 0xA0:
            out.append("�")
        elif code >= 0xA0 and _hidden(ch):
            out.append(codepoint_tag(ch))
        else:
            out.append(ch)
    return "".join(out)


def literal(value: str | None, style: str | Style = "") -> Text:
    """A Text that renders `value` as typed: no markup, no escapes."""
    return Text(visible(value or ""), style=style)


def clipped(value: str | None, width: int, style: str | Style = "") -> Text:
    """`literal(value)` cut to `width` cells with "…" when it is longer: a table column that cuts a
    statement silently shows a different statement ("User is not" for "User is not vegan")."""
    text = literal((value or "").replace("\n", " "), style)
    text.truncate(width, overflow="ellipsis")
    return text


class _Notifier(Protocol):
    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None: ...


def tell(
    node: _Notifier,
    message: str,
    *,
    title: str = "",
    severity: SeverityLevel = "information",
    timeout: float | None = None,
) -> None:
    """The workstation's only way to raise a notification: never markup, control characters shown.

    Notifications quote reviewer names ("being reviewed by X"), engine errors (which quote
    statements) and user ids; with Textual's default `markup=True` a reviewer called `evil[/nope]`
    would crash every other reviewer's workstation and `[@click=app.quit]` would become a live link.
    """
    node.notify(visible(message), title=visible(title), severity=severity, timeout=timeout, markup=False)

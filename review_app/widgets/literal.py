"""Showing text a user or a model wrote exactly as it was written.

Textual parses markup in strings handed to Static/Label; a statement such as `[b]x[/b]` or
`[link=http://x]` would be rendered (or rejected as bad markup) instead of shown. Wrapping the value
in `rich.text.Text` bypasses markup entirely. Control characters are made visible for DISPLAY only
(ESC as ␛, other C0 codes as their Control Pictures): a raw ESC would otherwise reach the terminal
as an escape sequence. The stored value is never altered.
"""

from __future__ import annotations

from typing import Protocol

from rich.style import Style
from rich.text import Text
from textual.notifications import SeverityLevel

_KEEP = {"\n", "\t"}


def visible(value: str) -> str:
    """`value` with C0 control characters (except newline and tab) and DEL shown as symbols."""
    out: list[str] = []
    for ch in value:
        code = ord(ch)
        if ch in _KEEP:
            out.append(ch)
        elif code < 0x20:
            out.append(chr(0x2400 + code))  # U+2400.. Control Pictures; ESC -> ␛
        elif code == 0x7F:
            out.append("␡")
        elif 0x80 <= code < 0xA0:
            out.append("�")
        else:
            out.append(ch)
    return "".join(out)


def literal(value: str | None, style: str | Style = "") -> Text:
    """A Text that renders `value` as typed: no markup, no escapes."""
    return Text(visible(value or ""), style=style)


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

"""The text the credential detectors read, with the way back to the original characters.

Detectors read the canonical text (`engine.text`): NFKC (fullwidth `ｐａｓｓｗｏｒｄ` is
`password`), Default_Ignorable_Code_Point dropped (a zero-width space inside a key does not hide
it), and every non-ASCII look-alike read as its ASCII letter (a Cyrillic `а` in `pаssword`).
Two steps of `canonical` are left out on purpose: the case fold, because a key's case is part of its
shape (`AKIA...` is upper case, a GitHub token mixes cases), so the patterns say `(?i)` where case
does not matter; and the whitespace collapse, which would only shift offsets.

What is removed is the ORIGINAL span: each character of the view remembers the index of the
character it came from, so the marker replaces exactly what the person typed, look-alikes and
invisible characters included.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from ..text import _IGNORABLE, _confusable_map


@dataclass(frozen=True, slots=True)
class View:
    """`text` as detectors read it; `origin[i]` is the index in the original of `text[i]` (None
    when the two are the same string)."""

    text: str
    origin: tuple[int, ...] | None
    length: int  # of the original

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original span of the view's `[start, end)`."""
        if self.origin is None:
            return start, end
        if start >= len(self.origin):
            return self.length, self.length
        first = self.origin[start]
        last = self.origin[end - 1] + 1 if end > start else first
        return first, last


def view_of(text: str) -> View:
    """The detection view of `text` (module docstring). ASCII text is its own view."""
    if text.isascii():
        return View(text, None, len(text))
    table = _confusable_map()
    out: list[str] = []
    origin: list[int] = []
    for i, ch in enumerate(text):
        if ch.isascii():
            out.append(ch)
            origin.append(i)
            continue
        if _IGNORABLE.match(ch):
            continue
        piece = unicodedata.normalize("NFKC", ch)
        for part in piece:
            if _IGNORABLE.match(part):
                continue
            mapped = part if part.isascii() else table.get(part, part)
            for sub in mapped:
                out.append(sub)
                origin.append(i)
    return View("".join(out), tuple(origin), len(text))

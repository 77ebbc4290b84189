"""Run every detector over the canonical view of a text and merge what they find.

Each detector module exposes `find(text) -> Iterable[(start, end, kind)]` over the view's text.
Spans are mapped back to the original (view.py), overlaps merged (the earliest start wins, then
the longest span, whose kind names the merged span), and spans inside an existing marker dropped,
so redacting twice changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from . import prose, structured, vendor
from .view import view_of

Detector = Callable[[str], Iterable[tuple[int, int, str]]]
DETECTORS: tuple[Detector, ...] = (structured.find, vendor.find, prose.find)

_MARKERS = re.compile(r"⟨credential removed:[^⟩]*⟩|\[credential removed:[^\]]*\]")


@dataclass(frozen=True, slots=True)
class Finding:
    """One credential: its span in the ORIGINAL text and the kind a marker names."""

    start: int
    end: int
    kind: str


def findings(text: str) -> list[Finding]:
    """Every credential of `text`, in order, none overlapping."""
    if not text:
        return []
    view = view_of(text)
    raw: list[tuple[int, int, str]] = []
    for detect in DETECTORS:
        for start, end, kind in detect(view.text):
            if end > start:
                raw.append((*view.span(start, end), kind))
    if not raw:
        return []
    kept_out = [(m.start(), m.end()) for m in _MARKERS.finditer(text)]
    raw.sort(key=lambda f: (f[0], -(f[1] - f[0])))
    merged: list[Finding] = []
    for start, end, kind in raw:
        if any(a <= start and end <= b for a, b in kept_out):
            continue
        if merged and start < merged[-1].end:
            last = merged[-1]
            if end > last.end:
                merged[-1] = Finding(last.start, end, last.kind)
            continue
        merged.append(Finding(start, end, kind))
    return merged

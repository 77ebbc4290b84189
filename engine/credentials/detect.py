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
from functools import lru_cache

# The modules by their full names, not `from . import`: that form imports the package, whose
# __init__ imports this module (tests/test_layers.py finds no import circle).
import engine.credentials.prose as prose
import engine.credentials.structured as structured
import engine.credentials.vendor as vendor

from ..text import canonical
from .view import view_of

Detector = Callable[[str], Iterable[tuple[int, int, str]]]
DETECTORS: tuple[Detector, ...] = (structured.find, vendor.find, prose.find)

# What any detector needs to see at least one of (a digit pair, a keyword's stem, a vendor prefix):
# text with none of them (most statements, every audit row of ids) skips the detectors, which the
# storage guard runs on every text it writes. Checked on the canonical text, so a fullwidth or
# look-alike keyword still passes. A seed phrase needs none of these: it is looked for in any text
# of twelve words or more.
_TRIGGER = re.compile(
    r"(?i)\d{3}|[a-z]{2} ?\d\d ?\d\d ?\d\d ?[a-d]\b|"
    r"pass|pw|mot de|mdp|wort|contrase|clave|senha|key|schl|pin|code|digo|otp|cvv|cvc|csc|combina|combo|"
    r"secret|token|geheim|cl[ée]|bearer|seed|mnemonic|recovery|phrase|://|begin|putty|eyj|sk-|sk_|rk_|aiza|"
    r"xox|xapp|gh[pousr]_|github_pat|gl[a-z]{2,6}-|akia|asia|aws|sg\.|npm_|pypi-|hf_|shp|_v1_|sq0|"
    r"accountkey|ya29|gocspx|whsec|hooks\.|webhook|heroku|ssn|social|insurance|nir\b|s[ée]cu|steuer|idnr|"
    r"nif\b|cpf|dni|nie\b|bsn|sin\b|codice|contribuinte|nino|sozial|seguridad|seguran|tax|itin|pesel|"
    r"identity|wallet|licen[cs]e|product|login|creds|credential|identifiants|zugangsdaten|\w@[\w.-]+:"
)
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
    return list(_findings(text))


@lru_cache(maxsize=8192)
def _findings(text: str) -> tuple[Finding, ...]:
    """Cached: one statement is written to several places in one transaction (the candidate, its
    audit row, the text index), and the guard reads each."""
    probe = text if text.isascii() else canonical(text)
    detectors: tuple[Detector, ...] = DETECTORS
    if _TRIGGER.search(probe) is None:
        if probe.count(" ") < 11:
            return ()
        detectors = (structured.seed_phrases,)
    view = view_of(text)
    raw: list[tuple[int, int, str]] = []
    for detect in detectors:
        for start, end, kind in detect(view.text):
            if end > start:
                raw.append((*view.span(start, end), kind))
    if not raw:
        return ()
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
    return tuple(merged)

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

# Each family of detectors runs only on a text holding what it needs, so that most statements and
# every audit row of ids skip them (the storage guard runs them on every text it writes). Each
# trigger is checked on the canonical text, so a fullwidth or look-alike keyword still passes.
# The structured family (numbers, keys in files, seed phrases) needs a number's shape, a product
# key's shape or one of these stems; a seed phrase needs none of them: it is looked for in any text
# of twelve words.
_NUMBER_SHAPE = re.compile(
    r"\d(?:[\d .\-]{6}|\d ?\d\d ?\d\d ?[a-d]|\d(?<=[a-z][a-z]\d\d)[ a-z0-9]{11}|\d[a-z]\d\d[a-z]\d{3})"
)
"""What every number the structured family knows holds at least, on the lower-case probe: a digit
and six more digits, spaces, dots or dashes (a card, grouped or not; an SSN, CPF, DNI or NIR; the
value after an ID keyword), a NINO's six digits and its letter, an IBAN's country and check digits before
eleven more characters, or a codice fiscale's digit-letter pattern. Every branch starts at a
digit, factored out in front, so `re` tries the rest only at the digits of a text. Counting digits anywhere was
looser: "since 2015 (note 70)" has six and none of these, and so does an audit note naming fact ids
("looks like fact #103925: ..."). tests/test_credential_triggers.py draws texts from every numeric
pattern of engine/credentials/structured.py and checks each passes."""
# ... and a product key may have no number at all, so its shape triggers too (four dash-joined groups)
_PRODUCT_SHAPE = re.compile(r"[a-z0-9]{4,5}(?:-[a-z0-9]{4,5}){3}")
_META = frozenset("\\[](){}|.?*+^$")


def _stems(source: str) -> re.Pattern[str]:
    """`source`, an alternation of stems, compiled with the literal characters its stems start with
    factored out ("p(?:ass|w|in|...)|..."): the triggers only ask whether a stem occurs, which the
    factored pattern answers the same, and Python's `re` tries one branch a first character
    instead of a hundred at every position of the text (a 200-character audit note: 39 µs, then 11)."""
    return re.compile(_factored(source.split("|")))


def _factored(stems: list[str]) -> str:
    groups: dict[str, list[str]] = {}
    for stem in stems:
        literal = bool(stem) and stem[0] not in _META and stem[1:2] not in ("?", "*", "+", "{")
        groups.setdefault(stem[0] if literal else "", []).append(stem[1:] if literal else stem)
    parts: list[str] = []
    for head, rests in groups.items():
        if not head:
            parts.extend(rests)
        elif len(rests) == 1:
            parts.append(re.escape(head) + rests[0])
        else:
            parts.append(f"{re.escape(head)}(?:{_factored(rests)})")
    return "|".join(parts)


_TRIGGER = _stems(
    r"pass|pw|mot de|mdp|wort|contrase|clave|senha|key|schl|pin|code|digo|otp|cvv|cvc|csc|combina|combo|"
    r"secret|token|geheim|cl[ée]|bearer|seed|mnemonic|recovery|phrase|://|begin|putty|eyj|sk-|sk_|rk_|aiza|"
    r"xox|xapp|gh[pousr]_|github_pat|gl[a-z]{2,6}-|akia|asia|aws|sg\.|npm_|pypi-|hf_|shp|_v1_|sq0|"
    r"accountkey|ya29|gocspx|whsec|hooks\.|webhook|heroku|ssn|social|insurance|nir\b|s[ée]cu|steuer|idnr|"
    r"nif\b|cpf|dni|nie\b|bsn|sin\b|codice|contribuinte|nino|sozial|seguridad|seguran|tax|itin|pesel|"
    r"identity|wallet|licen[cs]e|product|login|creds|credential|identifiants|zugangsdaten|\w@[\w.-]+:|"
    r"account|acct|a/c|routing|aba\b|konto|bankleitzahl|blz|compte|cuenta|conta|bsb"
)
# What the prose detector needs at least one of: every pattern of engine/credentials/prose.py
# starts from a keyword (a secret's name, a bank detail's name, a login word) or an e-mail
# pair, and each holds one of these stems. A text that reaches the detectors only through its
# digits ("since 2015", "note 120") is not read for prose: that family costs as much as the
# other two together and an import of dated statements runs it twice a fact (the statement and
# its value key). tests/test_credential_triggers.py checks every prose example against it.
_PROSE_TRIGGER = _stems(
    r"pass|pw|mot de|mdp|wort|contrase|clave|senha|wi-?fi|wlan|key|schl|pin|code|digo|otp|cvv|cvc|csc|"
    r"combin|combo|verification|secret|token|geheim|cl[ée]|bearer|api|access|client|auth|refresh|session|"
    r"private|signing|webhook|licen[cs]e|product|login|log-in|cred|username|identifiants|zugangsdaten|"
    r"account|acct|a/c|routing|aba|konto|bankleitzahl|blz|compte|cuenta|conta|bsb|@"
)
# What the vendor detector needs: every key shape of engine/credentials/vendor.py (and of the
# detect-secrets plugins it runs) is an unbroken run of twelve or more key characters, but for a
# password in a URL ("://user:pass@") and HTTP basic auth ("Authorization: Basic ..."), which are
# named here. tests/test_credential_triggers.py checks every vendor example against it.
_VENDOR_TRIGGER = re.compile(r"[a-z0-9_\-+/=.~]{12,}|://|basic")
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


@lru_cache(maxsize=1 << 16)
def families(text: str) -> tuple[Detector, ...]:
    """The detector families `text` is read by: each only when its trigger finds what every one
    of its patterns needs (tests/test_credential_triggers.py proves that over the corpora).
    Cached: a statement is asked about when it is checked and again when the storage guard writes
    it, and an import checks all its statements before it writes the first."""
    # the triggers are lower-case patterns on a lower-case probe: Python's `re` runs a case-blind
    # alternation of a hundred stems several times slower than the same one case-sensitive
    probe = text.lower() if text.isascii() else canonical(text)
    out: list[Detector] = []
    if (
        _NUMBER_SHAPE.search(probe) is not None
        or _TRIGGER.search(probe) is not None
        or ("-" in probe and _PRODUCT_SHAPE.search(probe) is not None)
    ):
        out.append(structured.find)
    elif probe.count(" ") >= 11:
        out.append(structured.seed_phrases)
    if _VENDOR_TRIGGER.search(probe) is not None:
        out.append(vendor.find)
    if _PROSE_TRIGGER.search(probe) is not None:
        out.append(prose.find)
    return tuple(out)


@lru_cache(maxsize=8192)
def _findings(text: str) -> tuple[Finding, ...]:
    """Cached: one statement is written to several places in one transaction (the candidate, its
    audit row, the text index), and the guard reads each."""
    detectors = families(text)
    if not detectors:
        return ()
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

"""Rules about the user's partner: married, engaged, broken up."""

from __future__ import annotations

import re

from ..offline_rules import Claim, _trim
from .registry import Reader, Rule, V, ex, pattern

R_MARRIED = pattern(rf"^I (?:am|have been) married to {V}")
R_GOT_MARRIED = pattern(r"^I (?:got|have got|have just got) (?P<what>married|engaged)(?: to (?P<v>.+))?")
R_BROKE_UP = pattern(rf"^I (?:broke up|split up|have broken up) with {V}")


def _married(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    v = _trim(m.group("v"))
    return [Claim("", "is married to", v)] if v else []


def _got_married(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    what = m.group("what").lower()
    v = _trim(m.group("v")) if m.group("v") else ""
    return [Claim("", f"is {what} to", v)] if v else [Claim("", "is", what)]


def _broke_up(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    v = _trim(m.group("v"))
    return [Claim("", "broke up with", v)] if v else []


RULES = (
    Rule("married", R_MARRIED, _married, (ex("I am married to Sam", "User is married to Sam"),)),
    Rule(
        "got_married",
        R_GOT_MARRIED,
        _got_married,
        (ex("I got engaged to Sam", "User is engaged to Sam"), ex("I got married", "User is married")),
        why_here="before have: 'I have got married' is not something the user has",
    ),
    Rule("broke_up", R_BROKE_UP, _broke_up, (ex("I broke up with Sam", "User broke up with Sam"),)),
)

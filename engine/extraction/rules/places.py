"""Rules about where the user lives, lived, stays and comes from."""

from __future__ import annotations

import re

from ..offline_rules import Claim, _place
from .registry import Reader, Rule, V, ex, pattern

R_STAY = pattern(rf"^I am staying in {V}")
R_LIVE = pattern(rf"^I (?:live|am living|have lived|have been living|reside|am based|am settled) in {V}")
R_MOVE = pattern(rf"^I (?:moved|have moved|am moving|relocated|move|moving) (?:back )?(?:from (?P<old>.+?) )?to {V}")
R_LIVED = pattern(rf"^I (?:lived|used to live) in {V}")
R_FROM = pattern(rf"^I (?:am from|come from|grew up in|was born in) {V}")


def _staying(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    v = _place(m.group("v"))
    return [Claim("", "is staying in", v)] if v else []


def _lives(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    v = _place(m.group("v"))
    return [Claim("", "lives in", v)] if v else []


def _lived(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    v = _place(m.group("v"))
    return [Claim("", "lived in", v)] if v else []


def _from(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    v = _place(m.group("v"))
    return [Claim("", "is from", v)] if v else []


RULES = (
    Rule("staying", R_STAY, _staying, (ex("I am staying in Rome", "User is staying in Rome"),)),
    Rule(
        "live",
        R_LIVE,
        _lives,
        (ex("I live in Porto", "User lives in Porto"), ex("I am based in Leeds", "User lives in Leeds")),
    ),
    Rule(
        "move",
        R_MOVE,
        _lives,
        (ex("I moved to Busan", "User lives in Busan"), ex("I moved from Lisbon to Porto", "User lives in Porto")),
    ),
    Rule(
        "lived",
        R_LIVED,
        _lived,
        (ex("I lived in Berlin", "User lived in Berlin"), ex("I used to live in Oslo", "User lived in Oslo")),
    ),
    Rule("from", R_FROM, _from, (ex("I am from Glasgow", "User is from Glasgow"),)),
)

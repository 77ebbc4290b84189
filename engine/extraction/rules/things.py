"""Rules about what the user has, drives, uses and plays: cars, pets, children, tools, games."""

from __future__ import annotations

import re

from ..offline_rules import (
    _ARTICLE,
    _BARE_HABIT,
    _FIELDS,
    _HOBBY_END,
    CAR_MAKES,
    Claim,
    _kids,
    _object_ok,
    _pets,
    _trim,
)
from .registry import Reader, Rule, V, ex, pattern

R_DRIVE = pattern(r"^I (?:drive|have|own) (?P<v>an? .+)")
R_SWITCH = pattern(rf"^I (?:switched|switch|have switched|changed|change) (?:from (?P<old>.+?) )?to {V}")
R_HAVE = pattern(rf"^I (?:have got|have|got|own|adopted|adopt|get) {V}")
R_PLAY = pattern(rf"^I (?:play|have played|have been playing|am playing) {V}")


def _drive(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    v = _trim(m.group("v"))
    words = _ARTICLE.sub("", v.casefold()).split()
    if words and (words[0] in CAR_MAKES or clause.lower().startswith("i drive")):
        return [Claim("", "drives", v)]
    return None


def _switch(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    v = _trim(m.group("v"))
    if not v:
        return []
    words = _ARTICLE.sub("", v.casefold()).split()
    if words and words[0] in CAR_MAKES:
        return [Claim("", "drives", v)]
    # Said as a person would: "User works day shifts", "User works in marketing", "User uses Linux".
    if words[-1] in ("shifts", "shift", "hours"):
        return [Claim("", "works", v)]
    if " ".join(words) in _FIELDS or words[-1] in _FIELDS:
        return [Claim("", "works in", v)]
    return [Claim("", "uses", v)]


def _have(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    return _pets(m.group("v")) or _kids(m.group("v")) or None


def _play(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    if _BARE_HABIT.match(clause):  # "I play every week": no object; the habit rules read it
        return None
    v = _trim(m.group("v"), _HOBBY_END)
    return [Claim("", "plays", v)] if v and _object_ok(v) else []


RULES = (
    Rule(
        "drive",
        R_DRIVE,
        _drive,
        (ex("I drive a Golf", "User drives a Golf"), ex("I have a Toyota Corolla", "User drives a Toyota Corolla")),
        why_here="before have: 'I have a Toyota' is a car; anything else it passes on",
    ),
    Rule(
        "switch",
        R_SWITCH,
        _switch,
        (
            ex("I switched to Linux", "User uses Linux"),
            ex("I switched to night shifts", "User works night shifts"),
        ),
    ),
    Rule(
        "have",
        R_HAVE,
        _have,
        (ex("I have two cats", "User has two cats"), ex("I have got three kids", "User has three children")),
        why_here="reads only pets and children; anything else the user has passes on to the habit rules",
    ),
    Rule(
        "play",
        R_PLAY,
        _play,
        (ex("I play tennis", "User plays tennis"),),
        why_here="before like and the habits: 'I play the guitar' is an object, not a verb to inflect",
    ),
)

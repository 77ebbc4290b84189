"""Rules about what the user does regularly: "I run every morning", "I have been swimming twice a
week", "I have cut down to one coffee a day". Last in the order: their patterns read almost any
"I <verb> ..." clause, so every narrower rule has had its turn first."""

from __future__ import annotations

import re

from ..offline_rules import _DRINKS, _FREQUENCY, GO_ACTIVITIES, Claim, _activity_base, _habit, _trim
from .registry import Reader, Rule, V, ex, pattern

R_CUT_DOWN = pattern(rf"^I (?:have )?(?:cut down|cut back) to {V}")
R_HABIT_ING = pattern(r"^I (?P<aux>have been|am|started|began|took up|have started) (?P<w>[a-z]+ing)\b(?P<rest>.*)$")
R_HABIT = pattern(r"^I (?P<verb>[a-z]+)(?: (?P<rest>.+))?$")


def _cut_down(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    if not _DRINKS.search(m.group("v")):
        return None
    v = _trim(m.group("v"))
    return [Claim("", "drinks", v)] if v else []


def _habit_ing(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    word, rest, aux = m.group("w").lower(), m.group("rest"), m.group("aux").lower()
    if aux == "am" and not _FREQUENCY.search(rest):
        return []  # "I'm cooking dinner" is what the user does now, not a habit
    base = _activity_base(word)
    content = rest.strip()
    if word in GO_ACTIVITIES and (not content or _FREQUENCY.match(content) or content.startswith(("on ", "in "))):
        return _habit("go", f"{word} {content}".strip())
    return _habit(base, content)


def _habit_verb(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    return _habit(m.group("verb"), m.group("rest") or "")


RULES = (
    Rule(
        "cut_down", R_CUT_DOWN, _cut_down, (ex("I have cut down to one coffee a day", "User drinks one coffee a day"),)
    ),
    Rule(
        "habit_ing",
        R_HABIT_ING,
        _habit_ing,
        (ex("I have been swimming twice a week", "User goes swimming twice a week"), ex("I am cooking dinner")),
        why_here="before habit: 'I am cooking dinner' stops here, said now, not a habit",
    ),
    Rule(
        "habit",
        R_HABIT,
        _habit_verb,
        (ex("I run every morning", "User runs every morning"),),
        why_here="last: it reads any 'I <verb> ...' clause, so it is the fallback",
    ),
)

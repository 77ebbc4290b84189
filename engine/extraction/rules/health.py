"""Rules about what the user eats and cannot: allergies, diets, intolerances, a diagnosis said as
an adjective ("I'm diabetic")."""

from __future__ import annotations

import re

from ..offline_rules import DIETS, PET_SPECIES, Claim, _plural, _trim, diet_of
from .registry import Reader, Rule, V, ex, pattern

_DIET_RE = "|".join(sorted(DIETS, key=len, reverse=True))
R_ALLERGIC = pattern(rf"^I am (?:very |severely |mildly |a bit )?allergic to {V}")
R_ALLERGY = pattern(r"^I (?:have|have got) an? (?P<v>.+?) allergy\b")
R_AM_DIET = pattern(r"^I am (?:a |an )?(?P<v>" + _DIET_RE + r")\b")
R_WENT_DIET = pattern(
    r"^I (?:switched|switch|went|have gone|turned|changed|have switched) (?:to )?(?:an? |fully )?(?P<v>"
    + _DIET_RE
    + r")\b"
)
R_AM_WORD = pattern(r"^I am (?:a |an )?(?P<v>[a-z][a-z-]+)$")
R_INTOLERANT = pattern(r"^I am (?P<v>(?:lactose|gluten|fructose|histamine|wheat) intolerant)\b")
R_DIABETIC = pattern(r"^I am (?:an? )?(?P<v>diabetic|coeliac|celiac|asthmatic|epileptic)\b")


def _allergic(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    v = _trim(m.group("v"))
    return [Claim("", "is allergic to", v)] if v else []


def _allergy(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    v = _trim(m.group("v"))
    v = _plural(v) if v.casefold() in PET_SPECIES else v
    return [Claim("", "is allergic to", v)] if v else []


def _is_word(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    return [Claim("", "is", m.group("v").lower())]


def _diet_word(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    diet = diet_of(m.group("v"))
    return [Claim("", "is", diet)] if diet else None


RULES = (
    Rule(
        "allergic",
        R_ALLERGIC,
        _allergic,
        (ex("I am allergic to peanuts", "User is allergic to peanuts"),),
        why_here="before the 'I am a ...' rules, whose looser patterns also match",
    ),
    Rule("allergy", R_ALLERGY, _allergy, (ex("I have a cat allergy", "User is allergic to cats"),)),
    Rule("am_diet", R_AM_DIET, _is_word, (ex("I am vegan", "User is vegan"),)),
    Rule(
        "went_diet",
        R_WENT_DIET,
        _is_word,
        (ex("I went vegetarian", "User is vegetarian"),),
        why_here="before switch: 'I switched to keto' is a diet, not a thing the user uses",
    ),
    Rule(
        "diet_word",
        R_AM_WORD,
        _diet_word,
        (ex("I am vegann", "User is vegan"),),
        why_here="after am_diet: only a misspelt diet word is left for it; any other word passes on",
    ),
    Rule("intolerant", R_INTOLERANT, _is_word, (ex("I am lactose intolerant", "User is lactose intolerant"),)),
    Rule("diagnosis", R_DIABETIC, _is_word, (ex("I am diabetic", "User is diabetic"),)),
)

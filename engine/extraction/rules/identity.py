"""Rules about who the user is and who their people are: name, favourites, a pet's or a relative's
name, what a relative does, age."""

from __future__ import annotations

import re

from ..offline_rules import (
    _NON_NAME_ENDINGS,
    _NOT_NAMES,
    _REL_ADJ,
    _REL_RE,
    _SPECIES_RE,
    DIETS,
    Claim,
    _pets,
    _relative,
    _trim,
)
from .registry import Reader, Rule, V, ex, pattern

R_NAME = pattern(rf"^(?:my name is|call me|people call me) {V}")
R_IAM_NAME = re.compile(r"^I am (?P<nm>[A-Z][\w'-]+)(?:,? (?P<rest>an? .+))?$")
R_FAV = pattern(rf"^my (?:favou?rite|fave?) (?P<what>[\w ]{{1,30}}?) (?:is|are) {V}")
R_MY_PET = pattern(rf"^my (?P<sp>{_SPECIES_RE})(?:'s name is| is (?:called|named)) (?P<v>(?-i:[A-Z])[\w'-]+)")
R_REL_NAME = pattern(rf"^my {_REL_ADJ}(?P<rel>{_REL_RE})(?:'s name is| is (?:called|named)) {V}")
R_HAVE_REL = pattern(
    rf"^I (?:have|have got) an? {_REL_ADJ}(?P<rel>{_REL_RE})(?: (?:called|named) {V}|, (?P<nm>(?-i:[A-Z])[\w'-]+)$)"
)
R_REL_PRED = pattern(
    rf"^my {_REL_ADJ}(?P<rel>{_REL_RE})(?:,? (?P<nm>(?-i:[A-Z])[\w'-]+),?)? "
    rf"(?P<verb>lives in|live in|is living in|works at|work at|works for|work for|works as|work as"
    rf"|got a (?:new )?job at|studies|study|is|are) {V}"
)
R_AGE = pattern(r"^I am (?P<v>\d{1,3})(?: years old| yrs old| y/?o)?$")
R_TURNED = pattern(r"^I (?:turned|am turning) (?P<v>\d{1,3})\b")


def _name(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    v = _trim(m.group("v"))
    return [Claim("name", "is", v)] if v else []


def _iam_name(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    name = m.group("nm")
    if name in _NOT_NAMES or name == "I":
        return None
    if name.casefold().endswith(_NON_NAME_ENDINGS) or name.casefold() in DIETS:
        return None
    out = [Claim("name", "is", name)]
    if m.group("rest"):
        out.extend(read(f"I am {m.group('rest')}"))
    return out


def _favourite(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    what, v = " ".join(m.group("what").lower().split()), _trim(m.group("v"))
    return [Claim(f"favourite {what}", "is", v)] if v else []


def _pet_name(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    return _pets(f"a {m.group('sp')} named {m.group('v')}")


def _relative_name(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    v = _trim(m.groupdict().get("v") or m.groupdict().get("nm") or "")
    return [Claim(m.group("rel").lower(), "is named", v)] if v else []


def _relative_says(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    name = m.group("nm") if m.group("nm") not in _NOT_NAMES else None
    return _relative(m.group("rel"), name, m.group("verb"), m.group("v"))


def _age(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    return [Claim("", "is", f"{int(m.group('v'))} years old")]


RULES = (
    Rule(
        "name",
        R_NAME,
        _name,
        (ex("my name is Quinn", "User's name is Quinn"), ex("call me Jo", "User's name is Jo")),
        why_here="first: 'my name is ...' is never read as anything else",
    ),
    Rule(
        "i_am_name",
        R_IAM_NAME,
        _iam_name,
        (
            ex("I am Quinn", "User's name is Quinn"),
            ex("I am Quinn, a nurse", "User's name is Quinn", "User works as a nurse"),
        ),
        why_here="before every 'I am ...' rule: a capitalised word alone is a name unless a word list says not",
    ),
    Rule("favourite", R_FAV, _favourite, (ex("my favourite food is sushi", "User's favourite food is sushi"),)),
    Rule("pet_name", R_MY_PET, _pet_name, (ex("my dog is called Rex", "User has a dog named Rex"),)),
    Rule(
        "relative_name",
        R_REL_NAME,
        _relative_name,
        (ex("my sister is called Ana", "User's sister is named Ana"),),
        why_here="before relative_says: 'my sister is called Ana' is a name, not 'is called Ana'",
    ),
    Rule(
        "have_relative", R_HAVE_REL, _relative_name, (ex("I have a brother called Max", "User's brother is named Max"),)
    ),
    Rule(
        "relative_says",
        R_REL_PRED,
        _relative_says,
        (
            ex("my sister lives in Leeds", "User's sister lives in Leeds"),
            ex("my brother Max works at Google", "User's brother Max works at Google"),
        ),
    ),
    Rule(
        "age",
        R_AGE,
        _age,
        (ex("I am 34", "User is 34 years old"), ex("I am 34 years old", "User is 34 years old")),
    ),
    Rule("turned", R_TURNED, _age, (ex("I turned 40", "User is 40 years old"),)),
)

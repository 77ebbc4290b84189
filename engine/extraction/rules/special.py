"""Rules for special categories (engine.categories): health, belief, orientation, origin, union, ...

Read before the general rules' claims are kept, and only when the claim they would make IS a special
category by engine.categories' own lists: "I'm Muslim" is a belief, never a name; "I'm on insulin"
a medicine; "we go to mosque on Fridays" a practice; "I'm in the union at work" a membership. A
clause these rules read but whose claim is not special passes (None) to the next special rule, and
in the end the general rules' reading stands unchanged (see `order.clause_claims`).
"""

from __future__ import annotations

import re

from ..offline_rules import Claim, _trim, third_person
from .registry import Handler, Reader, Rule, V, ex, pattern

R_SPECIAL_IS = pattern(
    r"^I am (?P<art>a |an )?(?:(?:practising|practicing|devout|observant|non-practising|proud|openly|born-again|"
    r"lapsed|strict|registered|card-carrying) )?(?P<v>[\w'-]+(?: [\w'-]+){0,2})$"
)
R_SPECIAL_ON = pattern(rf"^I am (?:now |currently )?on {V}")
R_SPECIAL_GO = pattern(
    r"^I (?P<verb>go to|attend|pray at|worship at|go on|march at|marched at|marched in|went to|volunteer for"
    r"|campaign for|campaigned for|canvass for|vote|voted|vote for|voted for) (?P<v>.+)"
)
R_SPECIAL_IN = pattern(r"^I am (?P<verb>in|a member of|part of|a steward in|a rep for|a rep in) (?P<v>.+)")
R_SPECIAL_HAVE = pattern(
    r"^I (?P<verb>have|have got|was diagnosed with|am diagnosed with|suffer from|live with|take|use|wear|need"
    r"|am recovering from|am expecting|had|am having) (?P<v>.+)"
)
R_SPECIAL_WAS = pattern(rf"^I was {V}")
R_SPECIAL_VERB = pattern(r"^I (?P<verb>[a-z]+)(?: (?P<v>.+))?$")
_SPECIAL_VERB = {
    "go to": "goes to",
    "attend": "attends",
    "pray at": "prays at",
    "worship at": "worships at",
    "go on": "goes on",
    "march at": "marches at",
    "went to": "went to",
    "volunteer for": "volunteers for",
    "campaign for": "campaigns for",
    "canvass for": "canvasses for",
    "vote": "votes",
    "vote for": "votes for",
    "have": "has",
    "have got": "has",
    "am diagnosed with": "is diagnosed with",
    "suffer from": "suffers from",
    "live with": "lives with",
    "take": "takes",
    "use": "uses",
    "wear": "wears",
    "need": "needs",
    "am recovering from": "is recovering from",
    "am expecting": "is expecting",
    "am having": "is having",
    "in": "is in",
    "a member of": "is a member of",
    "part of": "is part of",
    "a steward in": "is a steward in",
    "a rep for": "is a rep for",
    "a rep in": "is a rep in",
}


def _special(statement: str) -> bool:
    from ...categories import UNSURE, offline_category

    found = offline_category(statement)
    return found is not None and found != UNSURE


def _is(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    v = f"{m.group('art') or ''}{m.group('v')}"
    return [Claim("", "is", v)] if _special(f"User is {v}") else None


def _on(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    v = _trim(m.group("v"))
    return [Claim("", "takes", v)] if v and _special(f"User takes {v}") else None


def _was(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    v = _trim(m.group("v"))
    return [Claim("", "was", v)] if v and _special(f"User was {v}") else None


def _said_as(trim: bool) -> Handler:
    """The handler of the go / in / have rules: the verb said in the third person, the value kept
    as said (go, in) or trimmed of its trailing detail (have)."""

    def handler(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
        verb = " ".join(m.group("verb").lower().split())
        v = m.group("v").strip().rstrip(".!,;")
        if trim:
            v = _trim(v)
        said = _SPECIAL_VERB.get(verb, verb)
        return [Claim("", said, v)] if v and _special(f"User {said} {v}") else None

    return handler


def _verb(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    # any other verb ("I pray five times a day", "we celebrate Diwali"): taken only when special
    if m.group("verb").lower() in ("am", "was", "have", "had"):
        return None
    said = third_person(m.group("verb").lower())
    v = _trim(m.group("v") or "")
    return [Claim("", said, v)] if _special(f"User {said} {v}".rstrip()) else None


RULES = (
    Rule(
        "special_is",
        R_SPECIAL_IS,
        _is,
        (ex("I am Muslim", "User is Muslim"), ex("I am a practising Catholic", "User is a Catholic")),
        why_here="first: 'I am Muslim' would otherwise be read as a name",
    ),
    Rule("special_on", R_SPECIAL_ON, _on, (ex("I am on metformin twice a day", "User takes metformin twice a day"),)),
    Rule("special_was", R_SPECIAL_WAS, _was, (ex("I was in prison", "User was in prison"),)),
    Rule(
        "special_go",
        R_SPECIAL_GO,
        _said_as(trim=False),
        (ex("I go to mosque", "User goes to mosque"), ex("I vote Labour", "User votes Labour")),
    ),
    Rule(
        "special_in",
        R_SPECIAL_IN,
        _said_as(trim=False),
        (ex("I am a member of the Labour Party", "User is a member of the Labour Party"),),
    ),
    Rule("special_have", R_SPECIAL_HAVE, _said_as(trim=True), (ex("I have diabetes", "User has diabetes"),)),
    Rule(
        "special_verb",
        R_SPECIAL_VERB,
        _verb,
        (ex("I pray five times a day", "User prays five times a day"),),
        why_here="last: any other verb, taken only when its claim is special",
    ),
)

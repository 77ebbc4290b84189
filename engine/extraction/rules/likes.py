"""Rules about what the user likes, speaks, learns, studies, teaches, supports, trains for."""

from __future__ import annotations

import re

from ..offline_rules import _HOBBY_END, Claim, _object_ok, _trim
from .registry import Reader, Rule, V, ex, pattern

R_LIKE = pattern(
    r"^I (?P<verb>love|adore|really like|like|hate|detest|cannot stand|prefer|am crazy about|am obsessed with"
    r"|am mad about|am (?:a |an )?(?:big |huge |massive )?fan of|am into) (?P<v>.+)"
)
# Two or more capitalised words in a list: "Spanish, Catalan and French" is one value, said as said.
_LANGUAGES = re.compile(r"(?-i:[A-Z])\w+(?:(?:, | and | & )(?-i:[A-Z])\w+)+")
R_SPEAK = pattern(rf"^I (?:speak|can speak) {V}")
R_LEARN = pattern(rf"^I (?:am learning|have been learning|started learning|began learning|learn|started to learn) {V}")
R_STUDY = pattern(rf"^I (?:am studying|study|am a student of) {V}")
R_TEACH = pattern(rf"^I (?:teach|am teaching) {V}")
R_SUPPORT = pattern(rf"^I (?:support|root for) {V}")
R_TRAINING = pattern(rf"^I am training for {V}")

# The verb a liking is said with in a statement.
_LIKE_VERB = {
    "love": "loves",
    "adore": "loves",
    "really like": "loves",
    "am crazy about": "loves",
    "am obsessed with": "loves",
    "am mad about": "loves",
    "like": "likes",
    "hate": "hates",
    "detest": "hates",
    "cannot stand": "hates",
    "prefer": "prefers",
    "am into": "is into",
}


def _like(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    word = m.group("verb").lower()
    v = re.sub(r"^(?:a good|good|a nice|nice)\s+", "", _trim(m.group("v")), flags=re.IGNORECASE)
    if not _object_ok(v):
        return []
    if "fan" in word:
        return [Claim("", "is", f"a {'big ' if 'big' in word or 'huge' in word else ''}fan of {v}")]
    return [Claim("", _LIKE_VERB[word], v)]


def _speak(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    if lm := _LANGUAGES.match(m.group("v")):
        return [Claim("", "speaks", lm.group(0))]
    v = _trim(m.group("v"), _HOBBY_END)
    return [Claim("", "speaks", v)] if v else []


def _learn(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    v = _trim(m.group("v"), _HOBBY_END)
    return [Claim("", "is learning", v)] if v else []


def _study(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    v = _trim(m.group("v"))
    return [Claim("", "studies", v)] if v else []


def _teach(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    v = _trim(m.group("v"))
    return [Claim("", "teaches", v)] if v and _object_ok(v) else []


def _support(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    v = _trim(m.group("v"))
    return [Claim("", "supports", v)] if v and _object_ok(v) else []


def _training(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    v = _trim(m.group("v"))
    return [Claim("", "is training for", v)] if v else []


RULES = (
    Rule(
        "like",
        R_LIKE,
        _like,
        (
            ex("I love Indian food", "User loves Indian food"),
            ex("I am into climbing", "User is into climbing"),
            ex("I like it"),
        ),
        why_here="before the habit rules: 'I love hiking' is a liking, not a habit of loving",
    ),
    Rule(
        "speak",
        R_SPEAK,
        _speak,
        (
            ex("I speak Spanish and Portuguese", "User speaks Spanish and Portuguese"),
            ex("I speak French", "User speaks French"),
        ),
    ),
    Rule("learn", R_LEARN, _learn, (ex("I am learning Japanese", "User is learning Japanese"),)),
    Rule("study", R_STUDY, _study, (ex("I study law", "User studies law"),)),
    Rule("teach", R_TEACH, _teach, (ex("I teach maths", "User teaches maths"),)),
    Rule("support", R_SUPPORT, _support, (ex("I support Celtic", "User supports Celtic"),)),
    Rule("training", R_TRAINING, _training, (ex("I am training for a marathon", "User is training for a marathon"),)),
)

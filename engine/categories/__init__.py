"""Special categories of personal data (GDPR article 9, plus criminal records, article 10).

A candidate about one of these carries `category` (a column of `candidates`). The reviewer sees it
as a badge and can filter on it, and no review policy may ever approve such a candidate: that rule
is `is_special(cand.category)`, one line in a policy's verdict.

Where the label comes from: the LLM extractor's own `category` when the model gives one of
CATEGORIES, else these offline rules, applied to the statement at insert (the storage layer calls
`category_of` for every candidate, whatever path queued it: extraction, a curator, an agent).

The rules are word lists kept as data (`data/<category>.txt`, one phrase or pattern a line, with
`medications.txt` for medicines by name), read through `engine.text.canonical`, so "g\u0430y" in a
Cyrillic letter or a fullwidth word is read as what it looks like. Each list has three kinds of
line: a strong cue (a category), an unsure cue (`~`: "hospital", "court case", "union" alone),
and exclusions (`!`: "retail therapy", "political thriller", "in unison"), removed before the
cues are looked for. `_exclusions.txt` holds what every category sets aside: culture ABOUT a topic
(a film about prisons) is dropped, and a person's job or workplace ("works as a nurse on a cancer
ward") leaves only "unsure": a person looks, no policy decides.

A detector that is unsure says so: `category_of` returns UNSURE ("unsure"), and `is_special`
treats it as special, so the review policies never approve it unseen (fail closed).

Context: a partner's gender against the user's own implies an orientation ("User's husband is
called David" for a user known to be a man). `category_of(..., context=...)` takes the user's
known statements (facts) to read that; the storage layer passes them when a statement names a
gendered partner.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache, lru_cache
from importlib import resources
from typing import Final

from ..text import canonical

CATEGORIES: Final = (
    "health",
    "religion",
    "sexual_orientation",
    "gender_identity",
    "ethnic_origin",
    "political_opinion",
    "trade_union",
    "genetic_biometric",
    "criminal_record",
    "unsure",
)
"""Every value `category` may hold (None: no special category). "unsure" is a detector's doubt:
special for every policy, shown and filtered like the others."""

UNSURE: Final = "unsure"
ANY_SPECIAL: Final = "any"
"""The queue filter value meaning "any special category" (`category IS NOT NULL`)."""

# The order ties are broken in: the more specific reading first ("hormone therapy as part of
# transitioning" is gender identity before it is health; a BRCA gene is genetic before health).
_ORDER: Final = (
    "criminal_record",
    "gender_identity",
    "sexual_orientation",
    "genetic_biometric",
    "health",
    "trade_union",
    "religion",
    "political_opinion",
    "ethnic_origin",
)


_WORK_WORDS: Final = frozenset({"health", "criminal_record", "genetic_biometric"})
# Workplaces and professions: inside a job's span they say where or as what a person works.
_WORKPLACE: Final = re.compile(
    r"(?:the |a |an )?(?:hospitals?|clinics?|surgery|surgeries|pharmacy|pharmacies|prisons?|jails?|wards?|"
    r"hospices?|rehab|therapy|therapists?|psycholog\w*|psychiatr\w*|physio\w*|counsell?ors?|counsell?ing|"
    r"\w+ologists?|\w+iatrists?|mental health|disability services|dna|genetics?|genomics|biometrics?|"
    r"criminal (?:law|justice|courts?)|courts?|probation|parole)"
)


class _Rules:
    """One category's compiled lists: strong cues, unsure cues, exclusions (dropped) and set-asides
    (matches inside them are only unsure)."""

    def __init__(self, strong: list[str], unsure: list[str], drop: list[str], aside: list[str]) -> None:
        self.strong = _alternation(strong)
        self.unsure = _alternation(unsure)
        self.drop = _alternation(drop)
        self.aside = _alternation(aside)


def _alternation(patterns: list[str]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile(r"(?<![\w])(?:" + "|".join(f"(?:{p})" for p in patterns) + r")(?![\w])")


def _phrase(text: str) -> str:
    """A list phrase as a pattern: words in order, any spacing, `*` any word ending, an apostrophe
    either form (or none)."""
    out = []
    for word in canonical(text).split():
        piece = re.escape(word).replace(r"\*", r"\w*").replace("'", "['’]?").replace(r"\-", r"[- ]?")
        out.append(piece)
    return r"\s+".join(out)


def _read(name: str) -> list[str]:
    raw = resources.files(__package__).joinpath(f"data/{name}.txt").read_text(encoding="utf-8")
    return [line.strip() for line in raw.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _parse(lines: Iterable[str]) -> tuple[list[str], list[str], list[str], list[str]]:
    strong: list[str] = []
    unsure: list[str] = []
    drop: list[str] = []
    aside: list[str] = []
    for line in lines:
        target = strong
        if line.startswith("!"):
            target, line = drop, line[1:]
        elif line.startswith("?"):
            target, line = aside, line[1:]
        elif line.startswith("~"):
            target, line = unsure, line[1:]
        line = line.strip()
        target.append(line[3:].strip() if line.startswith("re:") else _phrase(line))
    return strong, unsure, drop, aside


@cache
def _rules() -> tuple[_Rules, dict[str, _Rules]]:
    """The shared set-asides and each category's rules, compiled once on first use."""
    shared = _Rules(*_parse(_read("_exclusions")))
    out: dict[str, _Rules] = {}
    for name in _ORDER:
        lines = _read(name)
        if name == "health":
            lines += [f"{m}" for m in _read("medications")]
        out[name] = _Rules(*_parse(lines))
    return shared, out


def _blank(text: str, pattern: re.Pattern[str] | None) -> str:
    """`text` with every match of `pattern` replaced by spaces of the same length (offsets kept)."""
    if pattern is None:
        return text
    return pattern.sub(lambda m: " " * len(m.group(0)), text)


# -- a partner's gender against the user's ---------------------------------------------------------

_WITH = r"\b(?:dating|married to|engaged to|in a relationship with|seeing|lives with|moved in with) (?:a )?"
_MALE_PARTNER = re.compile(r"\b(?:husband|boyfriend|fiancé|fiance|hubby)\b|" + _WITH + r"(?:man|guy)\b")
_FEMALE_PARTNER = re.compile(r"\b(?:wife|girlfriend|fiancée|fiancee|missus)\b|" + _WITH + r"(?:woman|lady|girl)\b")
_USER_MALE = re.compile(
    r"^(?:user|the user)\s+(?:is|was)\s+(?:a\s+)?(?:man|male|guy|boy|father|dad|husband|son|brother|"
    r"grandfather|gentleman|he/him)\b|\buser'?s pronouns are he\b|\b(?:user|i) (?:am|is) a (?:man|guy)\b|"
    r"^user'?s gender is (?:male|man)\b|^user identifies as (?:a )?(?:man|male)\b"
)
_USER_FEMALE = re.compile(
    r"^(?:user|the user)\s+(?:is|was)\s+(?:a\s+)?(?:woman|female|girl|lady|mother|mum|mom|wife|daughter|"
    r"sister|grandmother|she/her)\b|\buser'?s pronouns are she\b|\b(?:user|i) (?:am|is) a (?:woman|girl)\b|"
    r"^user'?s gender is (?:female|woman)\b|^user identifies as (?:a )?(?:woman|female)\b"
)
_SELF_MALE = re.compile(r"\b(?:and|,) (?:is|being) a (?:man|guy)\b|\bas a (?:man|guy)\b")
_SELF_FEMALE = re.compile(r"\b(?:and|,) (?:is|being) a (?:woman|girl)\b|\bas a (?:woman|girl)\b")


def names_partner(statement: str) -> bool:
    """Whether the statement names a gendered partner: only then does the user's gender matter
    (the storage layer reads the user's facts for it only in that case)."""
    text = canonical(statement)
    return bool(_MALE_PARTNER.search(text) or _FEMALE_PARTNER.search(text))


def gender_facts(statements: Iterable[str]) -> list[str]:
    """The statements among a user's facts that say the user's own gender ("User is a man"): all
    `category_of` needs of them as context (a large user's 20,000 facts are not passed along)."""
    out = []
    for fact in statements:
        known = canonical(fact)
        if _USER_MALE.search(known) or _USER_FEMALE.search(known):
            out.append(fact)
    return out


def _user_gender(text: str, context: Iterable[str] | None) -> str | None:
    if _SELF_MALE.search(text):
        return "m"
    if _SELF_FEMALE.search(text):
        return "f"
    for fact in context or ():
        known = canonical(fact)
        if _USER_MALE.search(known):
            return "m"
        if _USER_FEMALE.search(known):
            return "f"
    return None


def _partner_implies(text: str, context: Iterable[str] | None) -> bool:
    male, female = _MALE_PARTNER.search(text), _FEMALE_PARTNER.search(text)
    if not (male or female):
        return False
    gender = _user_gender(text, context)
    return (gender == "m" and bool(male)) or (gender == "f" and bool(female))


# -- the rules ------------------------------------------------------------------------------------


def offline_category(statement: str, context: Iterable[str] | None = None) -> str | None:
    """The special category the word lists find in the statement: the first category (in _ORDER)
    with a strong cue outside every exclusion; else UNSURE when a cue was found only inside a
    job's span or an unsure cue matched; else None."""
    return _offline(statement, tuple(context) if context is not None else None)


@lru_cache(maxsize=16_384)
def _offline(statement: str, context: tuple[str, ...] | None) -> str | None:
    """Cached: the pipeline and the storage layer read the same statement, and the offline
    extractor asks about the same clauses episode after episode."""
    text = canonical(statement)
    shared, rules = _rules()
    unsure = False
    if _partner_implies(_blank(text, shared.drop), context):
        return "sexual_orientation"
    aside_spans = [m.span() for m in shared.aside.finditer(text)] if shared.aside is not None else []
    for name in _ORDER:
        r = rules[name]
        # the category's own exclusions first ("political thrillers"), then the shared ones
        own = _blank(_blank(text, r.drop), shared.drop)
        if r.strong is not None:
            for m in r.strong.finditer(own):
                if any(a <= m.start() and m.end() <= b for a, b in aside_spans):
                    # inside a job's span: a workplace or a profession describes the work ("a nurse
                    # at the hospital", "works as a therapist", "a prison officer"); anything else
                    # named there ("works at the HIV clinic", "a union rep") is unsure: a person looks
                    unsure = unsure or not (name in _WORK_WORDS and _WORKPLACE.fullmatch(m.group(0)))
                    continue
                return name
        if r.unsure is not None and not unsure:
            for m in r.unsure.finditer(own):
                if not any(a <= m.start() and m.end() <= b for a, b in aside_spans):
                    unsure = True
                    break
    return UNSURE if unsure else None


def normalised(label: object) -> str | None:
    """A model's label as one of CATEGORIES, or None (an unknown label is not trusted)."""
    if not isinstance(label, str):
        return None
    text = label.strip().lower().replace(" ", "_").replace("-", "_")
    return text if text in CATEGORIES else None


def category_of(statement: str, label: object = None, context: Iterable[str] | None = None) -> str | None:
    """The category stored on a candidate: the model's label when it is one of CATEGORIES, else
    the offline rules on the statement (with the user's known statements as `context`, when the
    caller has them: a partner's gender against the user's)."""
    return normalised(label) or offline_category(statement, context)


def is_special(category: str | None) -> bool:
    """True for a special-category candidate, UNSURE included: no policy may approve it (it always
    reaches a person)."""
    return category is not None

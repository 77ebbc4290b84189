"""The pattern table of the offline extractor: how a first-person sentence becomes a claim
(subject, verb, value, negated), how a stored statement is read back into the same shape, and which
slot a claim fills.

One representation serves both directions on purpose: a claim extracted today and a fact approved
last month are compared as (slot, value key, polarity), so "I'm a nurse" is recognised as what
"User works as a nurse" already says, and "I moved to Porto" as an update of "User lives in Lisbon".
The rules are deliberately narrow: a sentence they cannot read yields nothing (a miss costs recall,
which the ablation measures), never a guessed fact.

Where things are: the rules that read one clause (each an id, a pattern, a handler and examples,
in one documented order) are the registry `engine.extraction.rules`; the word lists are data files
in `engine.extraction.wordlists`. This module keeps what those rules share with the statement
reader: the lexicons loaded from those files, clause splitting and normalising, dates, `Claim`,
`classify`, and the value helpers (`_trim`, `_pets`, `_kids`, `_habit`, ...). It imports nothing
of the registry, which imports it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from ..text import is_typo, key_to_match, value_key
from .wordlists import words

# The version of this rule table, recorded on every extraction run (the offline counterpart of a
# prompt version): approval rates are compared across rule changes with it.
RULES_VERSION = "rules-3"
# Confidence of a claim dated after its message ("I'm moving to Busan next month"): a plan.
PLAN_CONFIDENCE = 0.4

# -- lexicons ---------------------------------------------------------------------------------------

DIETS = words("diets")
PET_SPECIES = words("pet_species")
RELATIONS = words("relations")
# Subjects that take plural verbs ("User's parents live in Osaka").
PLURAL_RELATIONS = {"parents", "grandparents"}
# Words between "my" and the relation that do not change who is meant ("my older daughter Mia").
_REL_ADJ = r"(?:(?:older|younger|eldest|oldest|youngest|little|big|baby|elder|late)\s+)?"
JOB_NOUNS = words("job_nouns")
# "Students" are not "working as": their statement reads "User is a PhD student in Seoul".
STUDENT_NOUNS = {"student", "phd student", "pupil"}
# "I live in hope", "I live in the library basically": a home must look like a place.
IDIOM_PLACES = words("idiom_places")
# Activities people "go" to; "I stopped swimming" reads as "User no longer goes swimming".
GO_ACTIVITIES = words("go_activities")
# Verbs that state a habit on their own ("I surf", "I don't surf anymore").
ACTIVITY_VERBS = words("activity_verbs")
# Verbs of a habit sentence ("I drink about five coffees a day", "I go fishing every Sunday").
HABIT_VERBS = ACTIVITY_VERBS | {
    "go",
    "do",
    "drink",
    "eat",
    "walk",
    "read",
    "write",
    "visit",
    "call",
    "smoke",
    "take",
    "practise",
    "practice",
    "work",
    "wake",
    "get",
}
_FREQUENCY = re.compile(
    r"\b(?:every|each|daily|weekly|nightly|twice|once a|once every|\w+ times? a|a day|a week|a month|per day"
    r"|per week|on (?:weekends|weekdays|mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays))\b",
    re.IGNORECASE,
)
# Self-descriptions that are facts without being a job.
IDENTITY_NOUNS = {"night owl", "early bird", "morning person", "introvert", "extrovert", "insomniac"}
# What people say they are allergic to: the vocabulary an allergy's value is spell-checked against
# (with PET_SPECIES in the plural). A closed class the rules own, so a correction can only yield a
# value this slot expects; an allergen not listed is kept as written.
ALLERGENS = words("allergens")
# Languages, for the values of "speaks", "is learning", "studies", "teaches": spell-checked against
# this list and written with a capital ("english and welsh" -> "English and Welsh").
LANGUAGES = words("languages")
# Words that make a sentence a joke or sarcasm; its claims are not firm.
_JOKE = re.compile(
    r"\b(?:lol|lmao|rofl|haha+|hehe|jk|just kidding|only joking|kidding|yeah right|said no one|not really)\b"
    r"|(?:^|[,.!]\s*)ha[,.!]|\bha$|/s\b|^sure,? and\b|^oh yeah,|\bjust ask me\b|\bbasically\b|\bliterally\b",
    re.IGNORECASE,
)
# A message that takes back what the user said just before.
# "no wait, scratch that, I'm still vegetarian" (issue 20): a message that opens by taking back the
# one before it; its own claims still count.
_RETRACT = re.compile(
    r"^\W*(?:just kidding|jk|only joking|i was joking|i'm joking|kidding|no,? wait|wait,? no|scratch that|"
    r"forget (?:that|what i (?:just )?said)|ignore (?:that|what i (?:just )?said)|i take (?:that|it) back)\b",
    re.IGNORECASE,
)
# "I said married, we got engaged, not married": the word after "not" is taken back.
_CORRECTION = re.compile(r"\b(?:I said|I meant|I mean)\b.*?\bnot (?:a |an |the )?(?P<w>[\w-]+)", re.IGNORECASE)
CAR_MAKES = words("car_makes")
NUMBER_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}
MONTHS = {
    name: i + 1
    for i, name in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ]
    )
}
MONTHS.update({name[:3]: num for name, num in list(MONTHS.items())})
MONTHS["sept"] = 9

# Slots that hold several values at once: another value is a new fact, not an update.
MULTI_SLOTS = words("multi_slots")

# Statement verbs, longest first so that "is allergic to" wins over "is".
VERBS = [
    "is allergic to",
    "is learning",
    "is staying in",
    "is married to",
    "is engaged to",
    "is training for",
    "is named",
    "is from",
    "is into",
    "broke up with",
    "lives in",
    "live in",
    "lived in",
    "works as",
    "works at",
    "work at",
    "worked at",
    "works from",
    "works",
    "has",
    "have",
    "plays",
    "enjoys",
    "loves",
    "hates",
    "prefers",
    "supports",
    "teaches",
    "uses",
    "speaks",
    "studies",
    "drives",
    "goes",
    "does",
    "drinks",
    "eats",
    "cycles",
    "surfs",
    "swims",
    "runs",
    "jogs",
    "skis",
    "hikes",
    "climbs",
    "cooks",
    "bakes",
    "paints",
    "knits",
    "sings",
    "dances",
    "rows",
    "skates",
    "sails",
    "fishes",
    "meditates",
    "gardens",
    "walks",
    "reads",
    "writes",
    "visits",
    "calls",
    "smokes",
    "takes",
    "practises",
    "wakes",
    "gets",
    "are",
    "is",
]

# -- sentence-level patterns -----------------------------------------------------------------------

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_INTERROGATIVES = words("interrogatives")
_HEDGE = re.compile(
    r"\b(?:might|maybe|perhaps|probably|possibly|i think i|i guess|i suppose|not sure|thinking (?:about|of)"
    r"|considering|someday|some day|one day|hopefully|want to|wants to|plan to|planning to|hope to|would like to)\b",
    re.IGNORECASE,
)
_HYPOTHETICAL = re.compile(r"^\s*if\b|\bif i\b|\bi would\b|\bi'd\b|\bi wish\b|\bimagine\b", re.IGNORECASE)
_CONTRACTIONS = [
    (re.compile(r"\bi['’]m\b", re.IGNORECASE), "I am"),
    (re.compile(r"\bi['’]ve\b", re.IGNORECASE), "I have"),
    (re.compile(r"\bi['’]d\b", re.IGNORECASE), "I would"),
    (re.compile(r"\bi['’]ll\b", re.IGNORECASE), "I will"),
    (re.compile(r"\bwe['’]re\b", re.IGNORECASE), "we are"),
    (re.compile(r"\bwe['’]ve\b", re.IGNORECASE), "we have"),
    (re.compile(r"\b(he|she)['’]s\b", re.IGNORECASE), r"\1 is"),
    (re.compile(r"\bim\b(?= (?:a|an|from|allergic|vegan|vegetarian|learning|studying|staying|living|\d))"), "I am"),
    (re.compile(r"\bcan['’]t\b", re.IGNORECASE), "cannot"),
    (re.compile(r"\bwon['’]t\b", re.IGNORECASE), "will not"),
    (re.compile(r"\b(do|does|did|is|are|was|were|have|has|had)n['’]t\b", re.IGNORECASE), r"\1 not"),
]
# "... and work as a pharmacist", "... and works as a nurse": a second claim whose subject is the
# first clause's. Lower case only (a verb after "and", never a name: "Teach and Play Nursery"), and
# each with what must follow it, so "and live music" or "Marks and Spencer" stay one value.
_ELIDED_VERB = (
    r"(?-i:joined|moved|started|got|became|adopted|switched|live in|lived in|grew up in|work (?:as|at|for|from|in)"
    r"|worked (?:as|at|for)|teach|speak|study|play|own|drive|am|have (?:an?|one|two|three|four|\d)"
    r"|lives in|works (?:as|at|for|from|in)|teaches|speaks|studies|plays|is (?:an?|from)|has (?:an?|one|two|\d))\b"
)
# A new clause starts at a conjunction or punctuation followed by "I" or "my", or at "and" before
# a verb whose subject was dropped.
_CLAUSE = re.compile(
    r"\s*(?:[,;:]\s*)?\b(?:and|but|so|because|while|although|though|as)\s+(?=(?:I|my|we|our)\b)"
    rf"|[,;:]\s+(?=(?:I|my|we|our)\b)|\s+and\s+(?={_ELIDED_VERB})",
    re.IGNORECASE,
)
_ELIDED = re.compile(rf"^{_ELIDED_VERB}", re.IGNORECASE)
# Verbs that say the dropped subject is someone else, not the user ("... and works as a nurse").
_THIRD_PERSON = re.compile(r"^(?:lives|works|teaches|speaks|studies|plays|is|has)\b")
_LEAD = re.compile(
    r"^(?:(?:actually|also|well|oh|so|and|but|btw|anyway|anyways|yes|yeah|yep|no|nope|ok|okay|honestly|"
    r"hey|hi|hello|plus|though|then|if|when|once|because|now|basically|funnily enough|fun fact|big news|"
    r"news|update|i think|i guess|i suppose|i believe|maybe|perhaps|probably|by the way|wait|morning|"
    r"good news|guess what|cheers|lol|haha|ha|sure|oh yeah|right|so yeah|nowadays|these days)\b[\s,:!-]*)+",
    re.IGNORECASE,
)
_ADVERBS = re.compile(
    r"\b(?:still|also|currently|really|actually|just|finally|recently|already|officially|definitely|"
    r"totally|now|both|even|probably|maybe|perhaps|possibly|originally|mostly|usually|kind of|sort of)\b\s*",
    re.IGNORECASE,
)
_MODALS = re.compile(
    r"^I (?:(?:might|may|will|would|could|should|shall|must|can|am going to|want to|plan to)\s+)+", re.IGNORECASE
)
_VALUE_END = re.compile(
    r"\s*(?:[,;:!.()?\"]|\s[-–—]\s|\b(?:but|and I|and my|so|because|with|where|which|who|that|while|for|"
    r"since|until|till|though|too|as well|anymore|any more|any longer|these days|right now|again|lately|"
    r"remotely|full[- ]time|part[- ]time|nowadays|here|there)\b)",
    re.IGNORECASE,
)
_ARTICLE = re.compile(r"^(?:a|an|the)\s+", re.IGNORECASE)

# -- time expressions ------------------------------------------------------------------------------

_MONTH_RE = (
    r"(january|february|march|april|may|june|july|august|september|sept|october|november|december"
    r"|jan|feb|mar|apr|jun|jul|aug|sep|oct|nov|dec)"
)
_NUM_RE = r"(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten)"
_T_RANGE = re.compile(
    rf"\bfrom (?:{_MONTH_RE} )?(\d{{4}}) (?:to|until|till|through|-) (?:{_MONTH_RE} )?(\d{{4}})\b", re.IGNORECASE
)
_T_SINCE_YEAR = re.compile(rf"\bsince (?:{_MONTH_RE} )?(\d{{4}})\b", re.IGNORECASE)
_T_SINCE_MONTH = re.compile(rf"\bsince {_MONTH_RE}\b", re.IGNORECASE)
_T_SINCE_REL = re.compile(r"\bsince last (year|month)\b", re.IGNORECASE)
_T_UNTIL_MONTH = re.compile(rf"\b(?:until|till|through) {_MONTH_RE}(?: (\d{{4}}))?\b", re.IGNORECASE)
_T_UNTIL_YEAR = re.compile(r"\b(?:until|till) (\d{4})\b", re.IGNORECASE)
_T_REL = re.compile(r"\b(last|this|next) (year|month|week)\b", re.IGNORECASE)
_T_AGO = re.compile(rf"\b{_NUM_RE} (year|month|week|day)s? ago\b", re.IGNORECASE)
_DAY_NAMES = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_T_WEEKDAY = re.compile(r"\b(?:on|last) (monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", re.IGNORECASE)
_T_WEEKEND = re.compile(r"\b(?:last|this|at the|over the) weekend\b", re.IGNORECASE)
_ORDINALS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
}
_T_DAY_OF = re.compile(
    rf"\bon the (?:(\d{{1,2}})(?:st|nd|rd|th)?|({'|'.join(_ORDINALS)})) of {_MONTH_RE}\b", re.IGNORECASE
)
_T_ON_DATE = re.compile(rf"\bon (?:the )?(\d{{1,2}})(?:st|nd|rd|th)? (?:of )?{_MONTH_RE}\b", re.IGNORECASE)
_T_PART_OF = re.compile(
    rf"\b(?:at the (?:start|beginning|end) of|in (?:early|late|mid)|(?:early|late) in) {_MONTH_RE}\b", re.IGNORECASE
)
_T_IN_MONTH = re.compile(rf"\bin {_MONTH_RE}(?: (\d{{4}}))?\b", re.IGNORECASE)
_T_IN_YEAR = re.compile(r"\bin (\d{4})\b", re.IGNORECASE)
_T_DAY = re.compile(r"\b(yesterday|today)\b", re.IGNORECASE)
_FUTURE = re.compile(r"\b(?:will|going to|next|plan|planning|moving|starting)\b", re.IGNORECASE)
_PAST = re.compile(r"\b(?:lived|worked|was|were|studied|used to|played)\b", re.IGNORECASE)


def _jan1(year: int) -> datetime:
    return datetime(year, 1, 1, tzinfo=UTC)


def _month_start(year: int, month: int) -> datetime:
    while month < 1:
        month, year = month + 12, year - 1
    while month > 12:
        month, year = month - 12, year + 1
    return datetime(year, month, 1, tzinfo=UTC)


def _number(word: str) -> int:
    return int(word) if word.isdigit() else NUMBER_WORDS[word.lower()]


@dataclass(slots=True)
class TimeSpan:
    valid_at: datetime | None = None
    invalid_at: datetime | None = None


def take_times(text: str, at: datetime) -> tuple[str, TimeSpan]:
    """Read the simple relative and absolute dates of a sentence against the message time, and
    return the sentence without them (so "I live in Lisbon since 2021" has the value "Lisbon")."""
    span = TimeSpan()
    at = at.astimezone(UTC)

    def cut(pattern: re.Pattern[str], fn: Callable[[re.Match[str]], None]) -> None:
        nonlocal text
        m = pattern.search(text)
        if m is None:
            return
        fn(m)
        text = text[: m.start()] + " " + text[m.end() :]

    def rng(m: re.Match[str]) -> None:
        m1, y1, m2, y2 = m.groups()
        span.valid_at = _month_start(int(y1), MONTHS[m1.lower()]) if m1 else _jan1(int(y1))
        span.invalid_at = _month_start(int(y2), MONTHS[m2.lower()]) if m2 else _jan1(int(y2))

    def since_year(m: re.Match[str]) -> None:
        mon, year = m.groups()
        span.valid_at = _month_start(int(year), MONTHS[mon.lower()]) if mon else _jan1(int(year))

    def past_month(month: int) -> datetime:
        year = at.year if month <= at.month else at.year - 1
        return _month_start(year, month)

    def next_month(month: int) -> datetime:
        candidate = _month_start(at.year, month)
        return candidate if candidate > at else _month_start(at.year + 1, month)

    def since_month(m: re.Match[str]) -> None:
        span.valid_at = past_month(MONTHS[m.group(1).lower()])

    def since_rel(m: re.Match[str]) -> None:
        span.valid_at = _jan1(at.year - 1) if m.group(1).lower() == "year" else _month_start(at.year, at.month - 1)

    def until_month(m: re.Match[str]) -> None:
        mon, year = m.groups()
        month = MONTHS[mon.lower()]
        span.invalid_at = _month_start(int(year), month) if year else next_month(month)

    def until_year(m: re.Match[str]) -> None:
        span.invalid_at = _jan1(int(m.group(1)))

    def rel(m: re.Match[str]) -> None:
        which, unit = m.group(1).lower(), m.group(2).lower()
        shift = {"last": -1, "this": 0, "next": 1}[which]
        if unit == "year":
            span.valid_at = _jan1(at.year + shift)
        elif unit == "month":
            span.valid_at = _month_start(at.year, at.month + shift)
        else:
            monday = (at - timedelta(days=at.weekday())).replace(hour=0, minute=0, second=0, microsecond=0)
            span.valid_at = monday + timedelta(weeks=shift)

    midnight = at.replace(hour=0, minute=0, second=0, microsecond=0)

    def ago(m: re.Match[str]) -> None:
        n, unit = _number(m.group(1)), m.group(2).lower()
        if unit == "year":
            span.valid_at = _jan1(at.year - n)
        elif unit == "month":
            span.valid_at = _month_start(at.year, at.month - n)
        else:
            span.valid_at = midnight - timedelta(days=n * (7 if unit == "week" else 1))

    def weekday(m: re.Match[str]) -> None:
        # The most recent such day before the message ("on Tuesday" said on a Friday).
        back = (at.weekday() - _DAY_NAMES.index(m.group(1).lower())) % 7 or 7
        span.valid_at = midnight - timedelta(days=back)

    def weekend(m: re.Match[str]) -> None:
        back = (at.weekday() - 5) % 7 or 7
        span.valid_at = midnight - timedelta(days=back)

    def day_of(m: re.Match[str]) -> None:
        num = m.group(1) or m.group(2)
        day_n = int(num) if num.isdigit() else _ORDINALS[num.lower()]
        span.valid_at = past_month(MONTHS[m.group(3).lower()]).replace(day=min(day_n, 28))

    def on_date(m: re.Match[str]) -> None:
        day_n, month = int(m.group(1)), MONTHS[m.group(2).lower()]
        span.valid_at = past_month(month).replace(day=min(day_n, 28))

    def part_of(m: re.Match[str]) -> None:
        span.valid_at = past_month(MONTHS[m.group(1).lower()])

    future = _FUTURE.search(text) is not None
    past = _PAST.search(text) is not None

    def in_month(m: re.Match[str]) -> None:
        mon, year = m.groups()
        month = MONTHS[mon.lower()]
        if year:
            span.valid_at = _month_start(int(year), month)
        else:
            span.valid_at = next_month(month) if future else past_month(month)

    def in_year(m: re.Match[str]) -> None:
        year = int(m.group(1))
        span.valid_at = _jan1(year)
        if past:
            span.invalid_at = _jan1(year + 1)

    def day(m: re.Match[str]) -> None:
        midnight = at.replace(hour=0, minute=0, second=0, microsecond=0)
        span.valid_at = midnight - timedelta(days=1) if m.group(1).lower() == "yesterday" else midnight

    cut(_T_RANGE, rng)
    # In order, most specific first; each fills its end only while that end is still open.
    rules: tuple[tuple[str, re.Pattern[str], Callable[[re.Match[str]], None]], ...] = (
        ("valid_at", _T_SINCE_YEAR, since_year),
        ("valid_at", _T_SINCE_REL, since_rel),
        ("valid_at", _T_SINCE_MONTH, since_month),
        ("invalid_at", _T_UNTIL_MONTH, until_month),
        ("invalid_at", _T_UNTIL_YEAR, until_year),
        ("valid_at", _T_REL, rel),
        ("valid_at", _T_AGO, ago),
        ("valid_at", _T_PART_OF, part_of),
        ("valid_at", _T_DAY_OF, day_of),
        ("valid_at", _T_ON_DATE, on_date),
        ("valid_at", _T_IN_MONTH, in_month),
        ("valid_at", _T_IN_YEAR, in_year),
        ("valid_at", _T_DAY, day),
        ("valid_at", _T_WEEKDAY, weekday),
        ("valid_at", _T_WEEKEND, weekend),
    )
    for end, pattern, handler in rules:
        if getattr(span, end) is None:
            cut(pattern, handler)
    return " ".join(text.split()), span


# -- claims ----------------------------------------------------------------------------------------


def third_person(verb: str) -> str:
    """ "go" -> "goes", "cycle" -> "cycles": the verb of a statement about the user."""
    if verb in ("go", "do"):
        return verb + "es"
    if verb == "have":
        return "has"
    if verb.endswith(("s", "sh", "ch", "x", "z")):
        return verb + "es"
    if verb.endswith("y") and len(verb) > 1 and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


_HABIT_BASE = {third_person(v): v for v in HABIT_VERBS}
_PLURAL_VERBS = {
    "lives in": "live in",
    "is": "are",
    "works at": "work at",
    "works as": "work as",
    "has": "have",
    "is named": "are named",
    "is from": "are from",
    "studies": "study",
}
_SINGULAR_VERBS = {v: k for k, v in _PLURAL_VERBS.items()}


@dataclass(frozen=True, slots=True)
class Claim:
    """What a sentence or a stored statement says: `subject` is "" for the user, else what of the
    user it is about ("sister", "wife Priya", "favourite food", "name")."""

    subject: str
    verb: str
    value: str
    negated: bool = False

    @property
    def slot(self) -> str:
        return classify(self.subject, self.verb, self.value)

    @property
    def multi(self) -> bool:
        return self.slot.split(":", 1)[0] in MULTI_SLOTS or self.slot.startswith(("is:", "has:"))

    @property
    def key(self) -> str:
        """The value as compared: folded, without a leading article ("a nurse" == "nurse")."""
        return value_key(_ARTICLE.sub("", self.value))

    @property
    def statement(self) -> str:
        head = "User" if not self.subject else f"User's {self.subject}"
        verb = self.verb
        if _relation_of(self.subject) in PLURAL_RELATIONS:
            verb = _PLURAL_VERBS.get(verb, verb)
        if not self.negated:
            return f"{head} {verb} {self.value}".rstrip()
        if verb in ("is", "are") or verb.startswith(("is ", "are ")):
            be, _, rest = verb.partition(" ")
            return f"{head} {be} no longer {rest} {self.value}".replace("  ", " ").rstrip()
        return f"{head} no longer {verb} {self.value}".rstrip()


@lru_cache(maxsize=4096)
def _relation_of(subject: str) -> str:
    """The relation a subject names ("wife Priya" -> "wife", "twin brother" -> "twin brother")."""
    low = subject.casefold()
    for rel in _RELATIONS_LONGEST:
        if low == rel or low.startswith(rel + " "):
            return rel
    return ""


_SLOT_WORDS = {
    "home": "where they live",
    "origin": "where they are from",
    "job": "their work",
    "employer": "their employer",
    "former_employer": "their past employers",
    "former_home": "where they lived before",
    "allergy": "their allergies",
    "spouse": "their marriage",
    "relationship": "their relationship",
    "hobby": "their hobbies",
    "language": "the languages they speak",
    "learning": "what they are learning",
    "study": "their studies",
    "car": "their car",
    "stay": "where they are staying",
    "uses": "what they use",
    "team": "the team they support",
    "training": "what they train for",
    "workplace": "where they work from",
    "shift": "their working hours",
    "diet": "their diet",
    "age": "their age",
    "name": "their name",
    "pet": "their pets",
    "children": "their children",
}


def describe_slot(slot: str) -> str:
    """A slot as a reviewer reads it ("sister:home" -> "their sister's home"), never the key itself."""
    if slot in _SLOT_WORDS:
        return _SLOT_WORDS[slot]
    head, _, tail = slot.partition(":")
    if head == "favourite":
        return f"their favourite {tail}"
    if head == "likes":
        return f"how they feel about {tail}"
    if head == "habit":
        return f"their {tail} habit"
    if head == "pets":
        return f"their {_plural(tail)}"
    if head == "children":
        return "their children"
    if head in ("is", "has"):
        return f"whether they {'are' if head == 'is' else 'have'} {tail}"
    words = {
        "name": "name",
        "home": "home",
        "employer": "employer",
        "job": "work",
        "age": "age",
        "diet": "diet",
        "study": "studies",
        "origin": "origin",
    }
    if tail in words:
        return f"their {head}'s {words[tail]}"
    return f"their {head}"


def _activity_base(word: str) -> str:
    """ "swimming" -> "swim", "cycling" -> "cycle": the verb an -ing activity comes from."""
    w = word.casefold()
    if not w.endswith("ing") or len(w) < 5:
        return w
    stem = w[:-3]
    for cand in (stem, stem + "e", stem[:-1]):
        if cand in HABIT_VERBS or cand in _STOP_ING:
            return cand
    if len(stem) > 2 and stem[-1] == stem[-2]:
        return stem[:-1]
    return stem


@lru_cache(maxsize=16384)
def classify(subject: str, verb: str, value: str) -> str:
    """The slot of a claim: what it is about, so that two claims about the same thing meet."""
    low = value.casefold()
    verb = _SINGULAR_VERBS.get(verb, verb)
    if not subject:
        simple = {
            "lives in": "home",
            "is from": "origin",
            "works as": "job",
            "works at": "employer",
            "worked at": "former_employer",
            "lived in": "former_home",
            "is allergic to": "allergy",
            "is married to": "spouse",
            "is engaged to": "relationship",
            "broke up with": "relationship",
            "plays": "hobby",
            "enjoys": "hobby",
            "speaks": "language",
            "is learning": "learning",
            "studies": "study",
            "drives": "car",
            "is staying in": "stay",
            "uses": "uses",
            "supports": "team",
            "teaches": "job",
            "is training for": "training",
            "works from": "workplace",
            "works": "shift",
        }
        if verb in simple:
            return simple[verb]
        if verb in ("loves", "likes", "hates", "prefers", "is into"):
            return "likes:" + value_key(_ARTICLE.sub("", low))
        if verb in _HABIT_BASE:
            first = low.split()[0] if low.split() else ""
            if verb == "goes":
                return "habit:" + _activity_base(first)
            if verb == "does":
                return "habit:" + first
            return "habit:" + _HABIT_BASE[verb]
        if verb == "has":
            if m := _PET_VALUE.match(value):
                return "pet" if m.group("n").lower() in ("a", "an", "one") else f"pets:{m.group('sp').lower()}"
            if m := _KIDS_VALUE.match(value):
                return "children:" + _CHILD_NOUN.get(m.group("noun").lower().rstrip("s"), "child")
            return f"has:{value_key(low)}"
        if verb == "is":
            if low in DIETS or low.endswith(" intolerant"):
                return "diet" if low in DIETS else f"is:{value_key(low)}"
            if _AGE_VALUE.match(low):
                return "age"
            if m := _FAN_VALUE.match(low):
                return "likes:" + value_key(m.group(1))
            if low in ("married", "engaged", "single", "divorced"):
                return "relationship"
            return f"is:{value_key(low)}"
        return verb
    if subject == "name":
        return "name"
    if subject.startswith("favourite "):
        return "favourite:" + subject[len("favourite ") :]
    rel = _relation_of(subject)
    if rel:
        rel_verbs = {
            "is named": "name",
            "lives in": "home",
            "works at": "employer",
            "works as": "job",
            "studies": "study",
            "is from": "origin",
        }
        if verb in rel_verbs:
            return f"{rel}:{rel_verbs[verb]}"
        if verb == "is":
            if _AGE_VALUE.match(low):
                return f"{rel}:age"
            if low in DIETS:
                return f"{rel}:diet"
            if _ARTICLE.match(low) or low.startswith("retired "):
                return f"{rel}:job"
        return f"{rel}:{verb}"
    return f"{subject}:{verb}"


_SPECIES_RE = "|".join(sorted(PET_SPECIES, key=len, reverse=True))
_PET_VALUE = re.compile(rf"^(?P<n>an?|one|two|three|four|five|\d+) (?P<sp>{_SPECIES_RE})(?:e?s)?\b", re.IGNORECASE)
_CHILD_NOUN = {
    "child": "child",
    "children": "child",
    "kid": "child",
    "kids": "child",
    "son": "son",
    "daughter": "daughter",
    "boy": "son",
    "girl": "daughter",
}
_KIDS_VALUE = re.compile(
    r"^(?:an?|one|two|three|four|five|six|\d+) (?P<noun>children|child|kids|kid|sons|son|daughters|daughter|boys"
    r"|girls|boy|girl)(?: and an? (?:son|daughter))?$",
    re.IGNORECASE,
)
_AGE_VALUE = re.compile(r"^\d{1,3} years old$")
_FAN_VALUE = re.compile(r"^an? (?:big |huge |massive )?fan of (.+)$")

_RELATIONS_LONGEST = sorted(RELATIONS, key=len, reverse=True)
_REL_RE = "|".join(re.escape(r) for r in _RELATIONS_LONGEST)
_NAME = r"(?P<nm>(?-i:[A-Z])[\w'-]+)"
_NOT_NAMES = words("not_names")
_APPOSITIVE = re.compile(rf"\bmy {_REL_ADJ}(?P<rel>{_REL_RE}),? {_NAME}\b", re.IGNORECASE)
# The subject is lazy, so it grows word by word until a known verb follows ("User's favourite
# food is ..."); verbs are tried longest first.
_STATEMENT = re.compile(
    r"^User(?:'s (?P<subj>.+?))? (?P<verb>" + "|".join(re.escape(v) for v in VERBS) + r")(?: (?P<value>.+))?$",
    re.IGNORECASE,
)


_STOP_ING = words("stop_ing")
_NOT_OBJECTS = words("not_objects")
_NON_NAME_ENDINGS = ("ish", "ese", "ian", "ean", "ic", "ed", "ing", "ful", "ous", "ive")
_FIELDS = words("fields")
_EVALUATIVE = words("evaluative")
_NUMBER_AGE = re.compile(
    r"^(\d{1,3}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)(?: years old)?\b", re.IGNORECASE
)
_AGE_WORDS = {"eleven": 11, "twelve": 12}
_DRINKS = re.compile(r"\b(?:coffees?|teas?|beers?|cups?|glasses|pints?|drinks?)\b", re.IGNORECASE)


def _trim(raw: str, extra: re.Pattern[str] | None = None) -> str:
    """Cut a raw value at the first thing that ends it (punctuation, a conjunction, a trailing
    adverb); an empty or implausibly long result means the rule misfired."""
    m = _VALUE_END.search(raw)
    value = raw[: m.start()] if m else raw
    if extra is not None:
        m2 = extra.search(value)
        if m2:
            value = value[: m2.start()]
    value = value.strip(" '\"-")
    if not value or len(value.split()) > 8 or not value[0].isalnum():
        return ""
    return value


_JOB_END = re.compile(r"\s+(?:in|at|for|from|on)\b", re.IGNORECASE)
_HOBBY_END = re.compile(r"\s+(?:on|every|at|twice|once|most|each|whenever)\b", re.IGNORECASE)
_PLACE_END = re.compile(r"\s+(?:in the|near|close to|next to|on the)\b", re.IGNORECASE)
_DETAIL = re.compile(r"^(?P<head>.+?)\s+(?P<prep>in|at)\s+(?P<where>(?:the\s+)?(?-i:[A-Z]).*)$", re.IGNORECASE)


def _place(raw: str) -> str:
    """A home or a destination, or "" for what only sounds like one ("I live in hope", "I LIVE
    IN HOPE!", "I live in the library basically"): idioms are refused in any case, and a value that
    starts with a lowercase article or determiner is not a place name."""
    value = _trim(raw, _PLACE_END)
    low = value.casefold()
    if not value or low in IDIOM_PLACES or low.split()[0] in IDIOM_PLACES:
        return ""
    if re.match(r"(?-i:the|a|an|my|our|this|that|his|her|their)\b", value):
        return ""
    return value


def _job_value(raw: str) -> str:
    value = _trim(raw, _JOB_END)
    if not value:
        return ""
    if not _ARTICLE.match(value):
        value = ("an " if value[0].lower() in "aeiou" else "a ") + value
    return value


def _is_job(value: str) -> bool:
    words = _ARTICLE.sub("", value.casefold()).split()
    return bool(words) and (words[-1] in JOB_NOUNS or " ".join(words[-2:]) in JOB_NOUNS)


def _count_word(n: str) -> str:
    return n.lower() if not n.isdigit() else n


def _plural(noun: str) -> str:
    if noun.endswith(("s", "sh", "ch", "x")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "i", "o", "u"):
        return noun[:-1] + "ies"
    return noun + "s"


_PET_WITH_NAMES = re.compile(
    rf"^(?P<n>an?|one|two|three|four|five|\d+) (?P<sp>{_SPECIES_RE})(?:e?s)?"
    r"(?:,? (?:named|called) |, )(?P<names>(?-i:[A-Z])[\w'-]+(?:(?:, | and )(?-i:[A-Z])[\w'-]+)*)",
    re.IGNORECASE,
)
_SPECIES_WORD = {"puppy": "dog", "kitten": "cat", "bunny": "rabbit"}


def _pets(raw: str) -> list[Claim]:
    """ "a dog named Rex", "two cats, Kimchi and Mandu", "three horses": counts and names kept."""

    def one(n: str, species: str, names: str | None) -> Claim:
        species = _SPECIES_WORD.get(species.lower(), species.lower())
        count = _count_word(n)
        noun = species if count in ("a", "an", "one") else _plural(species)
        if count in ("a", "an"):
            count = "an" if species[0] in "aeiou" else "a"
        return Claim("", "has", f"{count} {noun}" + (f" named {names}" if names else ""))

    if (m := _PET_WITH_NAMES.match(raw.strip())) and m.group("n").lower() not in ("a", "an", "one"):
        return [
            one(
                m.group("n"),
                m.group("sp"),
                m.group("names").replace(", ", " and ", 1)
                if m.group("names").count(",") == 1 and " and " not in m.group("names")
                else m.group("names"),
            )
        ]
    out = []
    for part in re.split(r",\s*|\s+and\s+", raw):
        part = part.strip(" .!")
        m = re.match(
            rf"^(?P<n>an?|one|two|three|four|five|\d+) (?P<sp>{_SPECIES_RE})(?:e?s)?(?:,? (?:named|called) "
            r"(?P<name>[\w'-]+))?\b",
            part,
            re.IGNORECASE,
        )
        if m is not None:
            out.append(one(m.group("n"), m.group("sp"), m.group("name")))
    return out


def _kids(raw: str) -> list[Claim]:
    """ "two kids" -> "two children"; "two daughters", "a son and a daughter" keep their words."""
    m = re.match(
        r"^(?P<n>an?|one|two|three|four|five|six|\d+) (?P<noun>children|child|kids|kid|sons|son|daughters|daughter"
        r"|boys|girls|boy|girl)\b(?P<more> and an? (?:son|daughter)\b)?",
        raw,
        re.IGNORECASE,
    )
    if m is None:
        return []
    count = _count_word(m.group("n"))
    noun = m.group("noun").lower()
    if noun in ("kid", "kids", "child", "children"):
        n = _number(count) if not count.isdigit() else int(count)
        words = {
            1: "one child",
            2: "two children",
            3: "three children",
            4: "four children",
            5: "five children",
            6: "six children",
        }
        return [Claim("", "has", words.get(n, f"{n} children"))]
    noun = {"boy": "son", "boys": "sons", "girl": "daughter", "girls": "daughters"}.get(noun, noun)
    more = (m.group("more") or "").strip()
    return [Claim("", "has", f"{count} {noun}" + (f" {more}" if more else ""))]


def _verb_from_ing(word: str) -> str | None:
    base = _activity_base(word)
    return base if base in _STOP_ING or base in HABIT_VERBS else None


def _object_ok(value: str) -> bool:
    low = value.casefold()
    return bool(value) and low.split()[0] not in _NOT_OBJECTS and low not in _NOT_OBJECTS


def _habit(verb: str, rest: str) -> list[Claim]:
    """ "I go swimming every Saturday", "I surf", "I drink about five coffees a day": a habit, its
    frequency kept. A bare verb counts only for activities; others need a frequency."""
    verb = verb.lower()
    rest = rest.strip()
    if verb not in HABIT_VERBS:
        return []
    if verb == "go":
        first = rest.split()[0].lower().strip(",;:.!") if rest else ""
        if first not in GO_ACTIVITIES:
            return []
    elif verb not in ACTIVITY_VERBS and not _FREQUENCY.search(rest):
        return []
    value = _trim(rest) if rest else ""
    if rest and not value:
        return []
    if value and not _object_ok(value):
        return []
    return [Claim("", third_person(verb), value)]


def _self_job(raw: str) -> list[Claim]:
    """ "a firefighter in Leeds" -> works as a firefighter + lives in Leeds; "a nurse at the Alfred"
    -> works as a nurse + works at the Alfred; "a PhD student in Seoul" stays one statement."""
    value = _trim(raw)
    if not value:
        return []
    head, prep, where = value, "", ""
    if m := _DETAIL.match(value):
        head, prep, where = m.group("head"), m.group("prep").lower(), m.group("where")
    if not _is_job(head):
        return []
    head = re.sub(r"\bphysio$", "physiotherapist", head)
    low = _ARTICLE.sub("", head.casefold())
    if low in STUDENT_NOUNS or low.split()[-1] in STUDENT_NOUNS:
        return [Claim("", "is", value)]
    job = head if _ARTICLE.match(head) else ("an " if head[0].lower() in "aeiou" else "a ") + head
    out = [Claim("", "works as", job)]
    if any(w in _EVALUATIVE for w in low.split()):
        return []  # "I'm a terrible cook" is self-mockery, not a job
    if prep == "in" and (place := _place(where)):
        out.append(Claim("", "lives in", place))
    elif prep == "at":
        out.append(Claim("", "works at", where))
    return out


def _relative(rel: str, name: str | None, verb: str, raw: str) -> list[Claim]:
    """A claim about one of the user's people, the name kept in the subject ("User's wife Priya
    is a pharmacist") and the details of the value kept ("a doctor in Vancouver")."""
    subject = rel.lower() + (f" {name}" if name else "")
    verb = verb.lower()
    if verb in ("lives in", "live in", "is living in"):
        v = _place(raw)
        return [Claim(subject, "lives in", v)] if v else []
    if verb in ("works at", "work at", "works for", "work for") or verb.startswith("got a"):
        v = _trim(raw)
        return [Claim(subject, "works at", v)] if v else []
    if verb in ("works as", "work as"):
        v = _job_value(raw)
        return [Claim(subject, "works as", v)] if v else []
    if verb in ("studies", "study"):
        v = _trim(raw)
        return [Claim(subject, "studies", v)] if v else []
    if am := _NUMBER_AGE.match(raw):
        word = am.group(1).lower()
        age = int(word) if word.isdigit() else _AGE_WORDS.get(word) or _number(word)
        return [Claim(subject, "is", f"{age} years old")]
    v = _trim(raw)
    if re.match(r"^at (?:university|uni|college|school)\b", v, re.IGNORECASE):
        return [Claim(subject, "is", v)]
    if v.casefold() in DIETS:
        return [Claim(subject, "is", v.lower())]
    if v.lower().startswith("from ") and (place := _place(v[5:])):
        return [Claim(subject, "is from", place)]
    head = v
    if m := _DETAIL.match(v):
        head = m.group("head")
    plain = re.sub(r"^(?:an?\s+)?(?:retired|former|trainee|junior|senior|head)\s+", "a ", head, flags=re.IGNORECASE)
    if _ARTICLE.match(head) and _is_job(plain):
        return [Claim(subject, "is", v)]
    return []


_NEG_NO_LONGER = re.compile(r"\bno longer\s+|\bnot any ?more\s+", re.IGNORECASE)
_NEG_ANYMORE = re.compile(r"\s*\b(?:any ?more|any longer)\b", re.IGNORECASE)
_NEG_NOT = re.compile(r"^I (?:do not|does not|am not|have not|did not)\s+", re.IGNORECASE)
_NEG_STOPPED = re.compile(r"^I (?:stopped|quit|gave up) (?P<w>\w+ing)\b", re.IGNORECASE)
_ACTUALLY = re.compile(r"^\W*(?:oh,? |well,? |wait,? )?actually\b", re.IGNORECASE)
_PARTNER_AND_I = re.compile(r"^(?P<p>(?-i:[A-Z])[\w'-]+|my \w+) and I\b", re.IGNORECASE)
_SUBJECTS = [
    (re.compile(r"^we are\b", re.IGNORECASE), "I am"),
    (re.compile(r"^we were\b", re.IGNORECASE), "I was"),
    (re.compile(r"^we\b", re.IGNORECASE), "I"),
    (re.compile(r"^our\b", re.IGNORECASE), "my"),
    (re.compile(r"^(?:have |I have )?been\b", re.IGNORECASE), "I have been"),
    (re.compile(r"^(?:am )?allergic to\b", re.IGNORECASE), "I am allergic to"),
]


def _subject(c: str) -> str:
    """ "We moved", "Our son", "Been cycling", "Kenji and I got engaged": the user speaking for the
    household, or with the subject dropped, is still the user; a partner named beside "I" stays
    with the event ("I got engaged to Kenji")."""
    for pattern, repl in _SUBJECTS:
        c = pattern.sub(repl, c, count=1)
    if m := _PARTNER_AND_I.match(c):
        partner, rest = m.group("p"), c[m.end() :]
        c = "I" + rest
        if not partner.lower().startswith("my ") and re.match(
            r"^ (?:got|have got|just got) (?:married|engaged)\b", rest, re.IGNORECASE
        ):
            c = re.sub(r"\b(married|engaged)\b", rf"\1 to {partner}", c, count=1)
        elif not partner.lower().startswith("my ") and re.match(r"^ (?:broke|split) up\b", rest, re.IGNORECASE):
            c = re.sub(r"\bup\b", f"up with {partner}", c, count=1)
    return c


# Words that carry no claim, wherever they stand ("allergic to penicillin btw"), and asides that
# end a clause ("..., lol", "..., to be honest"). The evidence keeps them; the statement does not.
# A joke marker still makes the sentence a joke: confidence is read from the sentence, not the clause.
_FILLERS = re.compile(
    r"[\s,]*\b(?:btw|tbh|fyi|imo|imho|ngl)\b[\s,]*"
    r"|[\s,]+(?:by the way|to be honest|honestly|lol|lmao|haha+|hehe|you know)\W*$",
    re.IGNORECASE,
)


def normalise_clause(clause: str) -> tuple[str, bool] | None:
    """Strip discourse words, adverbs and modals; turn "no longer" / "not ... anymore" / "stopped
    -ing" / a correction ("actually I'm not ...") into (positive clause, negated). None for clauses
    that are negative without saying a previous state ended ("I don't eat meat" is not read: too
    easy to misstate as a fact)."""
    correction = _ACTUALLY.match(clause) is not None
    c = _LEAD.sub("", " ".join(_FILLERS.sub(" ", clause).split()))
    c = _subject(c)
    c = _ADVERBS.sub("", c)
    c = " ".join(c.split()).rstrip(" .!;,")
    if not c:
        return None
    negated = False
    if _NEG_NO_LONGER.search(c):
        c, negated = _NEG_NO_LONGER.sub("", c), True
    if _NEG_ANYMORE.search(c) or (correction and _NEG_NOT.match(c)):
        c = _NEG_ANYMORE.sub("", c)
        if _NEG_NOT.match(c):
            c = _NEG_NOT.sub(lambda m: "I am " if " am " in m.group(0) else "I ", c)
            negated = True
        elif re.search(r"\bnot\b", c, re.IGNORECASE):
            c = re.sub(r"\bnot\s+", "", c, count=1, flags=re.IGNORECASE)
            negated = True
    if m := _NEG_STOPPED.match(c):
        word = m.group("w").lower()
        base = _verb_from_ing(word)
        if word in GO_ACTIVITIES and base not in ("play", "drive", "work"):
            c, negated = f"I go {word}" + c[m.end() :], True
        elif base is None:
            return None
        else:
            c, negated = f"I {base}" + c[m.end() :], True
    if re.match(r"^I (?:do|does|did|am|have) not\b|^I (?:never|cannot)\b", c, re.IGNORECASE):
        return None
    c = _MODALS.sub("I ", c)
    c = re.sub(r"^I be\b", "I am", c, flags=re.IGNORECASE)
    c = re.sub(r"^I am going to\s+", "I ", c, flags=re.IGNORECASE)
    if c[:2].lower() == "i " or c.lower().startswith("my "):
        return c, negated
    return None


# -- tidying a claim's value: obvious typos and names ---------------------------------------------

TYPO_MIN_WORD = 6
"""Letters a word needs before it is spell-checked. engine.text's typo rule (one edit, in a word of
5 letters or more) decides what a typo is; five-letter words are left alone here because one edit
turns too many of them into another real word ("daisy" / "dairy", "mango" / "tango")."""


@lru_cache(maxsize=8)
def _vocabulary(words: frozenset[str]) -> dict[str, str]:
    return {key_to_match(w): w for w in words}


@lru_cache(maxsize=16384)
def spelled(word: str, words: frozenset[str]) -> str:
    """`word` as one of `words` when it is an obvious typo of exactly one of them (engine.text's
    rule: one edit inside a word), else unchanged. Only ever a word the rules hold: a vocabulary
    of a slot's values, never a general dictionary, so a correction cannot invent a value the slot
    does not expect, and a word not listed is kept as the user wrote it."""
    low = word.casefold()
    if low in words or len(low) < TYPO_MIN_WORD or not low.isalpha():
        return word
    key = key_to_match(low)
    hits = [w for k, w in _vocabulary(words).items() if is_typo(key, k)]
    return hits[0] if len(hits) == 1 else word


_ALLERGY_WORDS = frozenset(ALLERGENS | {_plural(s) for s in PET_SPECIES})
_LANGUAGE_WORDS = frozenset(LANGUAGES)
_JOB_WORDS = frozenset(w for j in JOB_NOUNS for w in j.split())
_DIET_WORDS = frozenset(DIETS)
# Verbs whose value (or the name in it) is a proper name: a place, an employer, a person.
_NAME_VERBS = words("name_verbs")
_LANGUAGE_VERBS = {"speaks", "is learning", "studies", "teaches"}
# Words of a name written small ("marks and spencer" -> "Marks and Spencer", "stoke-on-trent").
_NAME_SMALL_WORDS = words("name_small_words")
# What follows "works at" / "lives in" without being a name: left in lower case.
_NOT_A_NAME = re.compile(
    r"^(?:a|an|the|my|our|his|her|their|this|that|some|home|night|nights|weekends?|school|uni|university"
    r"|college|work|church|myself|hospital|town|the city|a startup)\b",
    re.IGNORECASE,
)


def _capitalised(name: str) -> str:
    """ "leeds" -> "Leeds", "marks and spencer" -> "Marks and Spencer", "stoke-on-trent" ->
    "Stoke-on-Trent": every word of a name written all in lower case, but the small ones inside."""

    def word(w: str, first: bool) -> str:
        parts = w.split("-")
        return "-".join(
            p if (p in _NAME_SMALL_WORDS and not (first and i == 0)) else p[:1].upper() + p[1:]
            for i, p in enumerate(parts)
        )

    return " ".join(word(w, i == 0) for i, w in enumerate(name.split(" ")))


def _is_lower_name(value: str) -> bool:
    return value == value.lower() and any(ch.isalpha() for ch in value) and not _NOT_A_NAME.match(value)


def tidy(claim: Claim) -> Claim:
    """A claim read from a user's own words, tidied for its statement: a value word that is an
    obvious typo of a word the rules hold for that slot (allergens, languages, job nouns) is
    spelled right, and a name the user wrote in lower case (a place, an employer, a person, a
    language, a pet's name) gets its capitals. Ordinary words stay as they are ("a pharmacist"),
    and so does a name already written with a capital. The evidence keeps the user's words."""
    verb, value = claim.verb, claim.value
    if verb == "is allergic to":
        value = re.sub(r"[A-Za-z]+", lambda m: spelled(m.group(0), _ALLERGY_WORDS), value)
    elif verb in _LANGUAGE_VERBS:
        value = re.sub(r"[A-Za-z]+", lambda m: spelled(m.group(0), _LANGUAGE_WORDS), value)
    elif verb in ("works as", "work as"):
        # Only the job's noun, the last word: the words before it are adjectives no list holds
        # ("a retired judge" must not become "a retiree judge").
        value = re.sub(r"[A-Za-z]+$", lambda m: spelled(m.group(0), _JOB_WORDS), value)
    if verb in _LANGUAGE_VERBS:
        value = re.sub(
            r"[A-Za-z]+", lambda m: m.group(0).capitalize() if m.group(0) in _LANGUAGE_WORDS else m.group(0), value
        )
    elif (verb in _NAME_VERBS or (claim.subject == "name" and verb == "is")) and _is_lower_name(value):
        value = _capitalised(value)
    elif verb in ("has", "have"):
        value = re.sub(r"\b(named|called) ([a-z][\w'-]*)", lambda m: f"{m.group(1)} {_capitalised(m.group(2))}", value)
    if value == claim.value:
        return claim
    return Claim(claim.subject, claim.verb, value, claim.negated)


def diet_of(word: str) -> str | None:
    """A diet said with a typo ("I'm vegitarian"): the diet it spells, or None."""
    fixed = spelled(word, _DIET_WORDS)
    return fixed if fixed in DIETS else None


# "I go most Thursdays", "I play online every night": a habit whose object was said before.
_BARE_HABIT = re.compile(
    r"^I (?P<verb>go|play)(?P<rest>(?: (?:online|outside|indoors))?(?: (?:regularly|often|most|every|each|twice"
    r"|once|daily|weekly|nightly|on|\w+ times)\b.*)?)$",
    re.IGNORECASE,
)


def with_earlier_object(clause: str, earlier: list[Claim]) -> tuple[str, Claim] | None:
    """ "I go most Thursdays" after "I'm into climbing" in the same sentence: the clause with the
    object given back ("I go climbing most Thursdays") and the earlier claim that named it, or None.
    Only an activity one goes to for "go" ("into jazz, I go to gigs" is not read), anything liked
    for "play"; the liking must be the user's (no relative's) and in the user's words of liking."""
    m = _BARE_HABIT.match(clause)
    if m is None:
        return None
    verb = m.group("verb").lower()
    for claim in reversed(earlier):
        if claim.subject or claim.negated:
            continue
        value = claim.value.casefold()
        if claim.verb == "is" and (fan := _FAN_VALUE.match(value)):
            value = fan.group(1)
        elif claim.verb not in ("is into", "loves", "likes"):
            continue
        if verb == "go" and value not in GO_ACTIVITIES:
            continue
        return f"I {verb} {value}{m.group('rest')}", claim
    return None


def with_partner(claim: Claim, withdrawn: list[Claim]) -> Claim:
    """ "User is engaged" said to correct a withdrawn "User is married to Kenji": "User is engaged
    to Kenji". Only a bare relationship status of the user takes the partner, and only from a
    withdrawn claim that named one."""
    if claim.subject or claim.negated or claim.verb != "is" or claim.value not in ("engaged", "married"):
        return claim
    for old in reversed(withdrawn):
        if not old.subject and old.verb in ("is married to", "is engaged to") and old.value:
            return Claim("", f"is {claim.value} to", old.value)
    return claim


def ends_habit(claim: Claim) -> bool:
    """A negated habit that names only its activity ("User no longer goes swimming", "User no
    longer swims") ends every habit of its slot, whatever detail that habit had ("twice a week")."""
    if not claim.negated or not claim.slot.startswith("habit:"):
        return False
    words = claim.value.split()
    return not words or (claim.verb == "goes" and len(words) == 1)


def in_words_of(claim: Claim, fact: Claim) -> Claim:
    """A habit's end said in the words of the fact it ends: "I stopped swimming" against "User
    swims twice a week" is "User no longer swims", not "no longer goes swimming"."""
    if ends_habit(claim) and fact.verb in _HABIT_BASE and fact.verb not in ("goes", "does") and fact.verb != claim.verb:
        return Claim(claim.subject, fact.verb, "", negated=True)
    return claim


def people(claims: Iterable[Claim]) -> dict[str, str]:
    """Who the user has named, by name: {"Max": "brother", "Luca": "husband"}, from claims such as
    "User's brother Max lives in Graz" or "User's partner is named Sam" (the latest wins)."""
    out: dict[str, str] = {}
    for c in claims:
        rel = _relation_of(c.subject)
        if not rel:
            continue
        rest = c.subject[len(rel) :].strip()
        if rest[:1].isupper() and " " not in rest:
            out[rest] = rel
        if c.verb == "is named" and c.value[:1].isupper() and " " not in c.value:
            out[c.value] = rel
    return out


_NAMED_SUBJECT = re.compile(r"^(?P<nm>(?-i:[A-Z])[\w'-]+) (?=(?:is|works|lives|got|studies|has|just)\b)")


def with_person(sentence: str, names: dict[str, str]) -> str:
    """ "Max is an engineer." read as "My brother Max is an engineer." once the user has said who
    Max is; a name the user never placed stays unread (it may be anyone)."""
    m = _NAMED_SUBJECT.match(sentence)
    if m is None or m.group("nm") not in names:
        return sentence
    return f"My {names[m.group('nm')]} {sentence}"


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def is_question(sentence: str) -> bool:
    s = sentence.strip()
    if s.endswith("?"):
        return True
    first = re.match(r"[\w']+", s.lower().replace("’", "'"))
    return first is not None and first.group(0) in _INTERROGATIVES


def confidence_of(sentence: str) -> float:
    """Firm claims 0.9; hedged or hypothetical ones 0.4 and jokes or sarcasm ("Sure, and I'm also
    the Queen of England, lol") 0.3, below the default gate of 0.7 so that the pipeline counts
    them instead of queuing them."""
    if _JOKE.search(sentence):
        return 0.3
    return 0.4 if (_HEDGE.search(sentence) or _HYPOTHETICAL.search(sentence)) else 0.9


def is_retraction(text: str) -> bool:
    """ "Just kidding about the allergy": the message takes back the user's previous one."""
    return _RETRACT.match(text) is not None


def corrected_words(text: str) -> list[str]:
    """ "I said married, we got engaged, not married" -> ["married"]: earlier claims with that word
    in this episode are taken back."""
    return [m.group("w").casefold() for m in _CORRECTION.finditer(text)]


_PARTNER_EVENT = re.compile(
    r"(?P<pre>^|[,:;!]\s*)(?P<p>(?-i:[A-Z])[\w'-]+) and I "
    r"(?P<ev>(?:have )?(?:just )?got (?:married|engaged)|broke up|split up)",
    re.IGNORECASE,
)
_HAVE_REL_PRONOUN = re.compile(rf"^(?:I|we) have an? (?P<rel>{_REL_RE}),\s+(?:he|she) is\b", re.IGNORECASE)
_PRONOUN_AFTER_REL = re.compile(
    rf"^(?P<who>my {_REL_ADJ}(?:{_REL_RE}))\b(?P<mid>[^.!?]*?,\s+)(?:she|he|they)\b", re.IGNORECASE
)


def expand(sentence: str) -> str:
    """Contractions spelled out, and "she"/"he" after "My sister ..., " read as the sister."""
    s = sentence.replace("’", "'")
    for pattern, repl in _CONTRACTIONS:
        s = pattern.sub(repl, s)
    s = _PARTNER_EVENT.sub(
        lambda m: f"{m.group('pre')}I {m.group('ev')} {'with' if 'up' in m.group('ev') else 'to'} {m.group('p')}", s
    )
    s = _HAVE_REL_PRONOUN.sub(lambda m: f"I have a {m.group('rel')}, my {m.group('rel').lower()} is", s)
    s = _PRONOUN_AFTER_REL.sub(lambda m: f"{m.group('who')}{m.group('mid')}{m.group('who').lower()}", s)
    return s


# Who a clause is about: "I" (or "we"), or one of the user's people ("my sister", "my brother Tom").
_CLAUSE_SUBJECT = re.compile(
    rf"^(?:(?P<me>I|we)\b|(?P<rel>my {_REL_ADJ}(?:{_REL_RE})(?: (?-i:[A-Z])[\w'-]+)?)\b)", re.IGNORECASE
)


def split_clauses(sentence: str) -> list[str]:
    """Clauses that start with "I", "my", "we" or "our", one claim's worth each: "I quit Emirates
    and joined Etihad" and "I live in leeds and work as a pharmacist" give the second clause its
    dropped subject back ("I"), "My sister lives in Manchester and works as a nurse" gives it "my
    sister". A third-person verb after a clause about the user has no subject to take back, so
    that clause stays unread."""
    parts = [c for c in _CLAUSE.split(sentence) if c and c.strip()]
    out: list[str] = []
    for part in parts:
        if out and _ELIDED.match(part):
            prev = _CLAUSE_SUBJECT.match(_LEAD.sub("", out[-1].strip()))
            if prev is not None and prev.group("rel"):
                part = f"{prev.group('rel')} {part}"
            elif not _THIRD_PERSON.match(part):
                part = f"I {part}"
        out.append(part)
    return out


def appositive_names(sentence: str) -> list[Claim]:
    """ "my partner Sam" states the partner's name, wherever it sits in the sentence."""
    out = []
    for m in _APPOSITIVE.finditer(sentence):
        name = m.group("nm")
        if name not in _NOT_NAMES:
            out.append(Claim(m.group("rel").lower(), "is named", name))
    return out


@lru_cache(maxsize=65_536)
def parse_statement(statement: str) -> Claim | None:
    """Read a stored third-person statement back into a claim with the same rules, so existing
    facts and new claims meet on slot and value. Statements a person wrote in other words may not
    parse; they can then only cover a claim with exactly their text. Cached (claims are frozen): a
    user's pending statements are read again each time one of its facts becomes active."""
    text = " ".join(statement.strip().rstrip(".").split())
    negated = False
    if " is no longer " in text:
        text, negated = text.replace(" is no longer ", " is ", 1), True
    elif " no longer " in text:
        text, negated = text.replace(" no longer ", " ", 1), True
    m = _STATEMENT.match(text)
    if m is None:
        return None
    subj = (m.group("subj") or "").strip().replace("favorite ", "favourite ")
    rel = _relation_of(subj)
    # The relation is folded, a name after it keeps its case ("wife Priya").
    subj = rel + subj[len(rel) :] if rel else subj.lower()
    verb = m.group("verb").lower()
    verb = _SINGULAR_VERBS.get(verb, verb) if rel in PLURAL_RELATIONS else verb
    value = (m.group("value") or "").strip()
    if not value and verb not in _HABIT_BASE:
        return None
    return Claim(subj, verb, value, negated)

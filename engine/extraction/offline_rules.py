"""The pattern table of the offline extractor: how a first-person sentence becomes a claim
(subject, verb, value, negated), how a stored statement is read back into the same shape, and which
slot a claim fills.

One representation serves both directions on purpose: a claim extracted today and a fact approved
last month are compared as (slot, value key, polarity), so "I'm a nurse" is recognised as what
"User works as a nurse" already says, and "I moved to Porto" as an update of "User lives in Lisbon".
The rules are deliberately narrow: a sentence they cannot read yields nothing (a miss costs recall,
which the ablation measures), never a guessed fact.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from ..text import value_key

# -- lexicons ---------------------------------------------------------------------------------------

DIETS = {
    "vegan", "vegetarian", "pescatarian", "pescetarian", "flexitarian", "keto", "paleo", "carnivore",
    "gluten-free", "lactose-free", "dairy-free", "halal", "kosher",
}
PET_SPECIES = {
    "dog", "puppy", "cat", "kitten", "parrot", "hamster", "rabbit", "bunny", "turtle", "tortoise", "fish",
    "goldfish", "snake", "lizard", "gecko", "horse", "pony", "ferret", "guinea pig", "budgie", "canary",
    "chinchilla", "rat", "mouse", "hedgehog", "iguana", "pig", "goat", "chicken", "duck",
}
RELATIONS = {
    "sister", "brother", "mother", "mum", "mom", "father", "dad", "wife", "husband", "partner",
    "girlfriend", "boyfriend", "son", "daughter", "cousin", "aunt", "uncle", "grandmother", "grandfather",
    "grandma", "grandpa", "niece", "nephew", "fiancé", "fiance", "fiancée", "fiancee", "best friend",
    "roommate", "flatmate", "boss", "stepmother", "stepfather", "stepsister", "stepbrother", "twin",
}
JOB_NOUNS = {
    "nurse", "teacher", "doctor", "engineer", "developer", "programmer", "designer", "architect", "lawyer",
    "accountant", "analyst", "scientist", "researcher", "chef", "cook", "baker", "barista", "waiter",
    "waitress", "plumber", "electrician", "carpenter", "mechanic", "pilot", "driver", "farmer", "dentist",
    "pharmacist", "therapist", "psychologist", "journalist", "writer", "editor", "photographer", "artist",
    "musician", "student", "librarian", "professor", "lecturer", "consultant", "manager", "director",
    "cashier", "clerk", "firefighter", "paramedic", "veterinarian", "vet", "surgeon", "midwife",
    "translator", "tutor", "salesperson", "recruiter", "secretary", "receptionist", "cleaner",
    "freelancer", "entrepreneur", "founder", "officer", "soldier", "police officer", "nanny",
    "hairdresser", "tailor", "butcher", "gardener", "builder", "technician", "administrator", "intern",
    "retiree", "physiotherapist", "optician", "economist", "biologist", "chemist", "physicist",
}
CAR_MAKES = {
    "tesla", "honda", "toyota", "ford", "bmw", "audi", "volkswagen", "vw", "mercedes", "kia", "hyundai",
    "nissan", "mazda", "subaru", "volvo", "renault", "peugeot", "fiat", "skoda", "seat", "chevrolet",
    "jeep", "porsche", "mini", "lexus", "polestar", "rivian", "dacia", "citroen", "citroën", "opel",
}
NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10,
}
MONTHS = {
    name: i + 1 for i, name in enumerate(
        ["january", "february", "march", "april", "may", "june", "july", "august", "september",
         "october", "november", "december"]
    )
}
MONTHS.update({name[:3]: num for name, num in list(MONTHS.items())})
MONTHS["sept"] = 9

# Slots that hold several values at once: another value is a new fact, not an update.
MULTI_SLOTS = {"pet", "allergy", "hobby", "language", "learning", "former_employer", "former_home", "switch"}

# Statement verbs, longest first so that "is allergic to" wins over "is".
VERBS = [
    "is allergic to", "is learning", "is staying in", "is married to", "is named", "is from",
    "lives in", "lived in", "works as", "works at", "worked at", "switched to", "has", "plays", "enjoys",
    "speaks", "studies", "drives", "is",
]

# -- sentence-level patterns -----------------------------------------------------------------------

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_INTERROGATIVES = {
    "what", "where", "when", "who", "whom", "whose", "why", "how", "which", "do", "does", "did", "is",
    "are", "was", "were", "can", "could", "should", "would", "will", "shall", "may", "am", "have",
    "has", "had", "isn't", "aren't", "don't", "doesn't", "didn't", "won't", "wouldn't", "shouldn't",
    "can't", "couldn't",
}
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
    (re.compile(r"\bim\b(?= (?:a|an|from|allergic|vegan|vegetarian|learning|studying|staying|living|\d))"), "I am"),
    (re.compile(r"\bcan['’]t\b", re.IGNORECASE), "cannot"),
    (re.compile(r"\bwon['’]t\b", re.IGNORECASE), "will not"),
    (re.compile(r"\b(do|does|did|is|are|was|were|have|has|had)n['’]t\b", re.IGNORECASE), r"\1 not"),
]
# A new clause starts at a conjunction or punctuation followed by "I" or "my".
_CLAUSE = re.compile(
    r"\s*(?:[,;:]\s*)?\b(?:and|but|so|because|while|although|though|as)\s+(?=(?:I|my)\b)|[,;:]\s+(?=(?:I|my)\b)",
    re.IGNORECASE,
)
_LEAD = re.compile(
    r"^(?:(?:actually|also|well|oh|so|and|but|btw|anyway|anyways|yes|yeah|yep|no|nope|ok|okay|honestly|"
    r"hey|hi|hello|plus|though|then|if|when|once|because|now|basically|funnily enough|fun fact|big news|"
    r"news|update|i think|i guess|i suppose|i believe|maybe|perhaps|probably)\b[\s,:!-]*)+",
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
_T_AGO = re.compile(rf"\b{_NUM_RE} (year|month)s? ago\b", re.IGNORECASE)
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
        text = text[: m.start()] + " " + text[m.end():]

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

    def ago(m: re.Match[str]) -> None:
        n, unit = _number(m.group(1)), m.group(2).lower()
        span.valid_at = _jan1(at.year - n) if unit == "year" else _month_start(at.year, at.month - n)

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
        ("valid_at", _T_SINCE_YEAR, since_year), ("valid_at", _T_SINCE_REL, since_rel),
        ("valid_at", _T_SINCE_MONTH, since_month), ("invalid_at", _T_UNTIL_MONTH, until_month),
        ("invalid_at", _T_UNTIL_YEAR, until_year), ("valid_at", _T_REL, rel), ("valid_at", _T_AGO, ago),
        ("valid_at", _T_IN_MONTH, in_month), ("valid_at", _T_IN_YEAR, in_year), ("valid_at", _T_DAY, day),
    )
    for end, pattern, handler in rules:
        if getattr(span, end) is None:
            cut(pattern, handler)
    return " ".join(text.split()), span


# -- claims ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Claim:
    """What a sentence or a stored statement says: `subject` is "" for the user, else what of the
    user it is about ("sister", "favourite food", "name")."""

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
        if not self.negated:
            return f"{head} {self.verb} {self.value}"
        if self.verb == "is" or self.verb.startswith("is "):
            return f"{head} is no longer {self.verb[3:]} {self.value}".replace("  ", " ")
        return f"{head} no longer {self.verb} {self.value}"


def classify(subject: str, verb: str, value: str) -> str:
    """The slot of a claim: what it is about, so that two claims about the same thing meet."""
    low = value.casefold()
    if not subject:
        simple = {
            "lives in": "home", "is from": "origin", "works as": "job", "works at": "employer",
            "worked at": "former_employer", "lived in": "former_home", "is allergic to": "allergy",
            "is married to": "spouse", "plays": "hobby", "enjoys": "hobby", "speaks": "language",
            "is learning": "learning", "studies": "study", "drives": "car", "is staying in": "stay",
            "switched to": "switch",
        }
        if verb in simple:
            return simple[verb]
        if verb == "has":
            if _PET_VALUE.match(value):
                return "pet"
            if _KIDS_VALUE.match(value):
                return "children"
            return f"has:{value_key(low)}"
        if verb == "is":
            if low in DIETS:
                return "diet"
            if _AGE_VALUE.match(low):
                return "age"
            return f"is:{value_key(low)}"
        return verb
    if subject == "name":
        return "name"
    if subject.startswith("favourite "):
        return "favourite:" + subject[len("favourite "):]
    if subject in RELATIONS:
        rel_verbs = {"is named": "name", "lives in": "home", "works at": "employer", "works as": "job"}
        if verb in rel_verbs:
            return f"{subject}:{rel_verbs[verb]}"
        if verb == "is":
            if _AGE_VALUE.match(low):
                return f"{subject}:age"
            if low in DIETS:
                return f"{subject}:diet"
            if _ARTICLE.match(low):
                return f"{subject}:role"
        return f"{subject}:{verb}"
    return f"{subject}:{verb}"


_PET_VALUE = re.compile(
    r"^(?:an?|one|two|three|\d+) (?:" + "|".join(sorted(PET_SPECIES, key=len, reverse=True)) + r")s?\b", re.IGNORECASE
)
_KIDS_VALUE = re.compile(r"^(?:an?|one|two|three|four|five|six|\d+) (?:children|child|kids|kid)$", re.IGNORECASE)
_AGE_VALUE = re.compile(r"^\d{1,3} years old$")

_REL_RE = "|".join(sorted((re.escape(r) for r in RELATIONS), key=len, reverse=True))
_NAME = r"(?P<nm>(?-i:[A-Z])[\w'-]+)"
_NOT_NAMES = {"Is", "Was", "Lives", "Works", "Has", "And", "But", "The", "Who", "Just", "Still", "Also", "Now"}
_APPOSITIVE = re.compile(rf"\bmy (?P<rel>{_REL_RE}),? {_NAME}\b", re.IGNORECASE)
# The subject is lazy, so it grows word by word until a known verb follows ("User's favourite
# food is ..."); verbs are tried longest first.
_STATEMENT = re.compile(
    r"^User(?:'s (?P<subj>.+?))? (?P<verb>" + "|".join(re.escape(v) for v in VERBS) + r") (?P<value>.+)$",
    re.IGNORECASE,
)

# First-person rules: (pattern, builder). Each pattern is matched at the start of a normalised
# clause ("I ..." or "my ..."), case-insensitively; `v` is the raw value, trimmed afterwards.
_V = r"(?P<v>.+)"


def _rule(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


R_NAME = _rule(rf"^(?:my name is|call me|people call me) {_V}")
R_FAV = _rule(rf"^my (?:favou?rite|fave?) (?P<what>[\w ]{{1,30}}?) (?:is|are) {_V}")
R_REL_NAME = _rule(rf"^my (?P<rel>{_REL_RE})(?:'s name is| is (?:called|named)) {_V}")
R_HAVE_REL = _rule(rf"^I (?:have|have got) an? (?P<rel>{_REL_RE}) (?:called|named) {_V}")
R_REL_PRED = _rule(
    rf"^my (?P<rel>{_REL_RE})(?: (?-i:[A-Z])[\w'-]+)? "
    rf"(?P<verb>lives in|is living in|works at|works for|works as|is) {_V}"
)
R_LIVE = _rule(rf"^I (?:live|am living|have lived|have been living|reside|am based|am settled) in {_V}")
R_MOVE = _rule(rf"^I (?:moved|have moved|am moving|relocated|move|moving) (?:from (?P<old>.+?) )?to {_V}")
R_LIVED = _rule(rf"^I (?:lived|used to live) in {_V}")
R_FROM = _rule(rf"^I (?:am from|come from|grew up in|was born in) {_V}")
R_STAY = _rule(rf"^I am staying in {_V}")
R_WORK_AT = _rule(r"^I (?:work|am working|have worked|have been working) (?:at|for) (?P<v>.+?)(?: as (?P<job>.+))?$")
R_WORK_AS = _rule(r"^I (?:work|am working|have worked|have been working) as (?P<v>.+?)(?: (?:at|for) (?P<emp>.+))?$")
R_WORKED = _rule(rf"^I (?:worked|used to work) (?:at|for) {_V}")
R_BECAME = _rule(r"^I (?:became|got a job as|started working as|am working as) (?P<v>an? .+)")
R_JOINED = _rule(rf"^I (?:joined|started (?:a new job |working )?at|got a (?:new )?job at) {_V}")
R_QUIT = _rule(rf"^I (?:quit|left) (?:my job at )?{_V}")
R_AM_A = _rule(r"^I am (?P<v>an? .+)")
R_AM_DIET = _rule(r"^I am (?:a |an )?(?P<v>" + "|".join(sorted(DIETS, key=len, reverse=True)) + r")\b")
R_WENT_DIET = _rule(
    r"^I (?:switched|switch|went|have gone|turned|changed|have switched) (?:to )?(?:an? |fully )?(?P<v>"
    + "|".join(sorted(DIETS, key=len, reverse=True)) + r")\b"
)
R_SWITCH = _rule(rf"^I (?:switched|switch|have switched|changed|change) (?:from (?P<old>.+?) )?to {_V}")
R_ALLERGIC = _rule(rf"^I am (?:very |severely |mildly |a bit )?allergic to {_V}")
R_ALLERGY = _rule(r"^I have an? (?P<v>.+?) allergy\b")
R_HAVE = _rule(rf"^I (?:have|have got|got|own|adopted|adopt|get) {_V}")
R_PLAY = _rule(rf"^I (?:play|have played|have been playing|am playing) {_V}")
R_ENJOY = _rule(r"^I (?:love|enjoy|like) (?P<v>\w+ing)\b")
R_SPEAK = _rule(rf"^I (?:speak|can speak) {_V}")
R_LEARN = _rule(rf"^I (?:am learning|have been learning|started learning|began learning|learn|started to learn) {_V}")
R_STUDY = _rule(rf"^I (?:am studying|study|am a student of) {_V}")
R_DRIVE = _rule(r"^I (?:drive|have|own) (?P<v>an? .+)")
R_AGE = _rule(r"^I am (?P<v>\d{1,3})(?: years old| yrs old| y/?o)?$")
R_TURNED = _rule(r"^I (?:turned|am turning) (?P<v>\d{1,3})\b")
R_MARRIED = _rule(rf"^I am married to {_V}")

_STOP_ING = {"play", "learn", "work", "live", "eat", "drive", "speak", "study", "run", "swim", "cook", "use",
             "paint", "write", "read", "sing", "dance", "climb", "hike", "bike", "ski", "surf", "teach"}


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
_HOBBY_END = re.compile(r"\s+(?:on|every|at|in|twice|once|most|each|whenever)\b", re.IGNORECASE)
_PLACE_END = re.compile(r"\s+(?:in the|near|close to|next to|on the)\b", re.IGNORECASE)


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


def _pets(raw: str) -> list[Claim]:
    out = []
    for part in re.split(r",\s*|\s+and\s+", raw):
        part = part.strip(" .!")
        m = re.match(
            r"^(?P<n>an?|one|two|three|\d+) (?P<sp>" + "|".join(sorted(PET_SPECIES, key=len, reverse=True))
            + r")(?:s)?(?:,? (?:named|called) (?P<name>[\w'-]+))?", part, re.IGNORECASE,
        )
        if m is None:
            continue
        n, species, name = m.group("n").lower(), m.group("sp").lower(), m.group("name")
        text = f"{n} {species}" + (f" named {name}" if name else "")
        out.append(Claim("", "has", text))
    return out


def _kids(raw: str) -> list[Claim]:
    m = re.match(r"^(?P<n>an?|one|two|three|four|five|six|\d+) (?:children|child|kids|kid)\b", raw, re.IGNORECASE)
    if m is None:
        return []
    n = _number(m.group("n"))
    words = {1: "one child", 2: "two children", 3: "three children", 4: "four children", 5: "five children",
             6: "six children"}
    return [Claim("", "has", words.get(n, f"{n} children"))]


def _verb_from_ing(word: str) -> str | None:
    base = word[:-3].lower()
    for cand in (base, base + "e", base[:-1]):
        if cand in _STOP_ING:
            return cand
    return None


def clause_claims(clause: str) -> list[Claim]:
    """The claims of one normalised clause ("I ..." / "my ..."), in the order a reader would list them."""
    out: list[Claim] = []
    if m := R_NAME.match(clause):
        v = _trim(m.group("v"))
        return [Claim("name", "is", v)] if v else []
    if m := R_FAV.match(clause):
        what, v = " ".join(m.group("what").lower().split()), _trim(m.group("v"))
        return [Claim(f"favourite {what}", "is", v)] if v else []
    if (m := R_REL_NAME.match(clause)) or (m := R_HAVE_REL.match(clause)):
        v = _trim(m.group("v"))
        return [Claim(m.group("rel").lower(), "is named", v)] if v else []
    if m := R_REL_PRED.match(clause):
        rel, verb = m.group("rel").lower(), m.group("verb").lower()
        raw = m.group("v")
        if verb in ("lives in", "is living in"):
            v = _trim(raw, _PLACE_END)
            return [Claim(rel, "lives in", v)] if v else []
        if verb in ("works at", "works for"):
            v = _trim(raw)
            return [Claim(rel, "works at", v)] if v else []
        if verb == "works as":
            v = _job_value(raw)
            return [Claim(rel, "works as", v)] if v else []
        if am := re.match(r"^(\d{1,3})(?: years old)?\b", raw):
            return [Claim(rel, "is", f"{am.group(1)} years old")]
        v = _trim(raw, _JOB_END)
        if v.casefold() in DIETS or (_ARTICLE.match(v) and len(v.split()) <= 4):
            return [Claim(rel, "is", v.lower() if v.casefold() in DIETS else v)]
        return []
    if m := R_AGE.match(clause):
        return [Claim("", "is", f"{int(m.group('v'))} years old")]
    if m := R_TURNED.match(clause):
        return [Claim("", "is", f"{int(m.group('v'))} years old")]
    if m := R_ALLERGIC.match(clause):
        v = _trim(m.group("v"))
        return [Claim("", "is allergic to", v)] if v else []
    if m := R_ALLERGY.match(clause):
        v = _trim(m.group("v"))
        return [Claim("", "is allergic to", v)] if v else []
    if (m := R_AM_DIET.match(clause)) or (m := R_WENT_DIET.match(clause)):
        return [Claim("", "is", m.group("v").lower())]
    if m := R_MARRIED.match(clause):
        v = _trim(m.group("v"))
        return [Claim("", "is married to", v)] if v else []
    if m := R_STAY.match(clause):
        v = _trim(m.group("v"), _PLACE_END)
        return [Claim("", "is staying in", v)] if v else []
    if (m := R_LIVE.match(clause)) or (m := R_MOVE.match(clause)):
        v = _trim(m.group("v"), _PLACE_END)
        return [Claim("", "lives in", v)] if v else []
    if m := R_LIVED.match(clause):
        v = _trim(m.group("v"), _PLACE_END)
        return [Claim("", "lived in", v)] if v else []
    if m := R_FROM.match(clause):
        v = _trim(m.group("v"), _PLACE_END)
        return [Claim("", "is from", v)] if v else []
    if m := R_WORK_AT.match(clause):
        v = _trim(m.group("v"))
        if v:
            out.append(Claim("", "works at", v))
        if m.group("job") and (job := _job_value(m.group("job"))):
            out.append(Claim("", "works as", job))
        return out
    if m := R_WORK_AS.match(clause):
        job = _job_value(m.group("v"))
        if job:
            out.append(Claim("", "works as", job))
        if m.group("emp") and (emp := _trim(m.group("emp"))):
            out.append(Claim("", "works at", emp))
        return out
    if m := R_WORKED.match(clause):
        v = _trim(m.group("v"))
        return [Claim("", "worked at", v)] if v else []
    if m := R_BECAME.match(clause):
        job = _job_value(m.group("v"))
        return [Claim("", "works as", job)] if job else []
    if m := R_JOINED.match(clause):
        v = _trim(m.group("v"))
        return [Claim("", "works at", v)] if v else []
    if m := R_QUIT.match(clause):
        v = _trim(m.group("v"))
        if v and v.casefold() not in ("my job", "it", "that", "work", "smoking"):
            return [Claim("", "works at", v, negated=True)]
        return []
    if m := R_AM_A.match(clause):
        job = _job_value(m.group("v"))
        return [Claim("", "works as", job)] if job and _is_job(job) else []
    if m := R_DRIVE.match(clause):
        v = _trim(m.group("v"))
        words = _ARTICLE.sub("", v.casefold()).split()
        if words and (words[0] in CAR_MAKES or clause.lower().startswith("i drive")):
            return [Claim("", "drives", v)]
    if m := R_SWITCH.match(clause):
        v = _trim(m.group("v"))
        if not v:
            return []
        words = _ARTICLE.sub("", v.casefold()).split()
        if words and words[0] in CAR_MAKES:
            return [Claim("", "drives", v)]
        return [Claim("", "switched to", v)]
    if (m := R_HAVE.match(clause)) and (owned := _pets(m.group("v")) or _kids(m.group("v"))):
        return owned
    if m := R_PLAY.match(clause):
        v = _trim(m.group("v"), _HOBBY_END)
        return [Claim("", "plays", v)] if v else []
    if m := R_ENJOY.match(clause):
        return [Claim("", "enjoys", m.group("v").lower())]
    if m := R_SPEAK.match(clause):
        v = _trim(m.group("v").replace(" and ", " & "), _HOBBY_END).replace(" & ", " and ")
        return [Claim("", "speaks", v)] if v else []
    if m := R_LEARN.match(clause):
        v = _trim(m.group("v"), _HOBBY_END)
        return [Claim("", "is learning", v)] if v else []
    if m := R_STUDY.match(clause):
        v = _trim(m.group("v"))
        return [Claim("", "studies", v)] if v else []
    return out


_NEG_NO_LONGER = re.compile(r"\bno longer\s+|\bnot any ?more\s+", re.IGNORECASE)
_NEG_ANYMORE = re.compile(r"\s*\b(?:any ?more|any longer)\b", re.IGNORECASE)
_NEG_NOT = re.compile(r"^I (?:do not|does not|am not|have not|did not)\s+", re.IGNORECASE)
_NEG_STOPPED = re.compile(r"^I (?:stopped|quit|gave up) (?P<w>\w+ing)\b", re.IGNORECASE)


def normalise_clause(clause: str) -> tuple[str, bool] | None:
    """Strip discourse words, adverbs and modals; turn "no longer" / "not ... anymore" / "stopped
    -ing" into (positive clause, negated). None for clauses that are negative without saying a
    previous state ended ("I don't eat meat" is not read: too easy to misstate as a fact)."""
    c = _LEAD.sub("", clause.strip())
    c = _ADVERBS.sub("", c)
    c = " ".join(c.split()).rstrip(" .!;,")
    if not c:
        return None
    negated = False
    if _NEG_NO_LONGER.search(c):
        c, negated = _NEG_NO_LONGER.sub("", c), True
    if _NEG_ANYMORE.search(c):
        c = _NEG_ANYMORE.sub("", c)
        if _NEG_NOT.match(c):
            c = _NEG_NOT.sub(lambda m: "I am " if " am " in m.group(0) else "I ", c)
            negated = True
        elif re.search(r"\bnot\b", c, re.IGNORECASE):
            c = re.sub(r"\bnot\s+", "", c, count=1, flags=re.IGNORECASE)
            negated = True
    if m := _NEG_STOPPED.match(c):
        base = _verb_from_ing(m.group("w"))
        if base is None:
            return None
        c, negated = f"I {base}" + c[m.end():], True
    if re.match(r"^I (?:do|does|did|am|have) not\b|^I (?:never|cannot)\b", c, re.IGNORECASE):
        return None
    c = _MODALS.sub("I ", c)
    c = re.sub(r"^I be\b", "I am", c, flags=re.IGNORECASE)
    c = re.sub(r"^I am going to\s+", "I ", c, flags=re.IGNORECASE)
    if c[:2].lower() == "i " or c.lower().startswith("my "):
        return c, negated
    return None


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def is_question(sentence: str) -> bool:
    s = sentence.strip()
    if s.endswith("?"):
        return True
    first = re.match(r"[\w']+", s.lower().replace("’", "'"))
    return first is not None and first.group(0) in _INTERROGATIVES


def confidence_of(sentence: str) -> float:
    """Firm claims 0.9; hedged or hypothetical ones 0.4, below the default gate of 0.7 so that the
    pipeline counts them instead of queuing them."""
    return 0.4 if (_HEDGE.search(sentence) or _HYPOTHETICAL.search(sentence)) else 0.9


def expand(sentence: str) -> str:
    s = sentence.replace("’", "'")
    for pattern, repl in _CONTRACTIONS:
        s = pattern.sub(repl, s)
    return s


def split_clauses(sentence: str) -> list[str]:
    return [c for c in _CLAUSE.split(sentence) if c and c.strip()]


def appositive_names(sentence: str) -> list[Claim]:
    """"my partner Sam" states the partner's name, wherever it sits in the sentence."""
    out = []
    for m in _APPOSITIVE.finditer(sentence):
        name = m.group("nm")
        if name not in _NOT_NAMES:
            out.append(Claim(m.group("rel").lower(), "is named", name))
    return out


def parse_statement(statement: str) -> Claim | None:
    """Read a stored third-person statement back into a claim with the same rules, so existing
    facts and new claims meet on slot and value. Statements a person wrote in other words may not
    parse; they can then only cover a claim with exactly their text."""
    text = " ".join(statement.strip().rstrip(".").split())
    negated = False
    if " is no longer " in text:
        text, negated = text.replace(" is no longer ", " is ", 1), True
    elif " no longer " in text:
        text, negated = text.replace(" no longer ", " ", 1), True
    m = _STATEMENT.match(text)
    if m is None:
        return None
    subj = (m.group("subj") or "").strip().lower().replace("favorite ", "favourite ")
    value = m.group("value").strip()
    return Claim(subj, m.group("verb").lower(), value, negated) if value else None

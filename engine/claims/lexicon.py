"""The slot lexicons, compiled: `slots.toml` (data) read once into precompiled patterns.

Why data: the ways of saying a slot ("resides in", "is based in", "moved to") grow with every
source that writes statements (agents, LLM extractors, curators), and each one must come with
examples that prove it reads what it should and nothing else. Keeping them in one data file with
their examples means a new phrasing is one line plus its test case, never a new code branch.

How a statement is read (all on the canonical text, engine.text.canonical):

1. Trailing punctuation is trimmed; the subject is split off: the user ("user", "the user") or
   the user's ("user's", "the user's"). Anything else is free text.
2. Adverbs that do not change the claim ("currently", "now") and negations ("does not",
   "no longer", "is not") are read off the front of the predicate; a possessive statement's
   first "is not" / "is no longer" is read the same way. A negation sets `negated`.
3. The predicate is matched, whole, against the patterns in file order (indexed by their first
   word, so a statement tries a handful of patterns, not all of them). The first pattern whose
   value survives the slot's checks (closed value set, rejects, the name shape) wins.
   A reported claim ("The user mentioned that they live in Porto") is read as the claim itself.
4. The value is trimmed: time tails ("since 2015", "in March") and the slot's trim words
   (", Portugal") are dropped; what the slot's cut words take off ("with his wife") is kept as
   the claim's detail; then punctuation, one leading article, and the slot's aliases.

A value that needs the capital letter of a name (`shape = "name"`: "User's wife is Ana", not
"User's wife is pregnant") is checked on the statement before case folding; where that cannot be
located (confusable letters changed the text), the reading fails and the statement stays free
text: a claim is made only from what is positively recognised. `shape = "proper"` (places,
employers, languages, hobbies) takes a capitalised value, or a short plain one without function
words ("User resides in porto", not "User lives in fear of losing her job").
"""

from __future__ import annotations

import re
import tomllib
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

from ..text import strip_ignorable

Cardinality = Literal["one", "many"]
FAMILY_SUFFIX = "_*"
_PUNCT = " .,;:!?\"'"
_LIST_SPLIT = re.compile(r"\s*,\s*(?:and\s+)?|\s+and\s+|\s*&\s*")
_TOKEN = re.compile(r"\{[^}]*\}\??|[^\s{]+")


class LexiconError(ValueError):
    """slots.toml does not say what the reader expects (raised at load, named by slot/pattern)."""


@dataclass(frozen=True, slots=True)
class Example:
    statement: str
    value: str
    negated: bool
    slot: str  # the concrete slot (a family's member: "favourite_food")


@dataclass(frozen=True, slots=True)
class SlotSpec:
    name: str  # "home", or a family "favourite_*"
    cardinality: Cardinality
    aliases: Mapping[str, str]
    kind_aliases: Mapping[str, str]
    thing_aliases: Mapping[str, str]
    values: frozenset[str] | None
    not_values: frozenset[str]
    reject: tuple[re.Pattern[str], ...]
    cut: tuple[str, ...]
    trim: tuple[str, ...]  # like cut, but what it takes off is not detail ("Lisbon, Portugal")
    shape: str | None  # the default shape of the slot's patterns
    list_values: bool  # "a, b and c" kept as one value, its items sorted
    examples: tuple[Example, ...]
    not_examples: tuple[str, ...]

    @property
    def family(self) -> bool:
        return self.name.endswith(FAMILY_SUFFIX)

    @property
    def prefix(self) -> str:
        """A family's member prefix ("favourite_"); a plain slot's own name."""
        return self.name[: -len("*")] if self.family else self.name


@dataclass(frozen=True, slots=True)
class Pattern:
    order: int
    slot: SlotSpec
    template: str
    possessive: bool
    regex: re.Pattern[str]
    first_words: frozenset[str] | None  # None: may start with anything
    value: str | None  # a fixed value
    negated: bool
    implies: tuple[tuple[str, str], ...]
    shape: str | None
    also_shape: str | None  # the shape an implied "{also}" value must have


@dataclass(frozen=True, slots=True)
class Reading:
    """What the lexicon read: a concrete slot, its canonical value, negation, implied claims."""

    slot: str
    cardinality: Cardinality
    value: str
    negated: bool
    implies: tuple[tuple[str, str], ...] = ()
    detail: str = ""  # what the slot's cut words took off the value (canonical), "" for none


def _alternatives(spec: str) -> str:
    """`a/b c/d` -> a regex alternation of the phrases, longest first, words joined by spaces."""
    alts = sorted({a.strip() for a in spec.split("/") if a.strip()}, key=len, reverse=True)
    if not alts:
        raise LexiconError(f"empty alternative in {spec!r}")
    return "(?:" + "|".join(r"\s+".join(re.escape(w) for w in a.split()) for a in alts) + ")"


def _first_words(spec: str) -> frozenset[str]:
    return frozenset(a.strip().split()[0] for a in spec.split("/") if a.strip())


def _compile(
    template: str, lists: Mapping[str, list[str]] | None = None
) -> tuple[re.Pattern[str], frozenset[str] | None]:
    """A predicate template (the mini-language in slots.toml's header) -> an anchored regex and
    the words it can start with. `{value:@jobs}` takes its alternatives from the named list."""

    def expand(spec: str) -> str:
        if not spec.startswith("@"):
            return spec
        words = (lists or {}).get(spec[1:])
        if not words:
            raise LexiconError(f"unknown or empty list {spec!r} in {template!r}")
        return "/".join(words)

    parts: list[str] = []
    # The words a match can start with: those of the first required token and of every optional
    # token before it; None (any word) when one of them is a free placeholder.
    first: set[str] | None = set()
    first_known = False
    prev_end = -1
    for index, m in enumerate(_TOKEN.finditer(template)):
        token = m.group(0)
        optional = token.endswith("?") and len(token) > 1
        if optional:
            token = token[:-1]
        if token.startswith("{"):
            inner = token[1:-1]
            name, _, spec = inner.partition(":")
            spec = expand(spec)
            if name == "value" and spec:
                piece, words = f"(?P<value>{_alternatives(spec)})", _first_words(spec)
            elif name == "value":
                piece, words = r"(?P<value>.+?)", None
            elif name == "kind":
                piece, words = f"(?P<kind>{_alternatives(spec)})", _first_words(spec)
            elif name == "num":
                piece, words = r"(?P<value>\d{1,3})", None
            elif name == "thing" and spec:
                piece, words = f"(?P<thing>{_alternatives(spec)})", _first_words(spec)
            elif name == "thing":
                piece, words = r"(?P<thing>[^\s,]+(?:\s+[^\s,]+){0,2}?)", None
            elif name == "also":
                piece, words = r"(?P<also>.+?)", None
            elif name == "_":
                piece, words = r".+?", None
            else:
                raise LexiconError(f"unknown placeholder {{{inner}}} in {template!r}")
        else:
            literal = token.replace("_", " ")  # "is_on/follows": a phrase among the words
            piece, words = _alternatives(literal), _first_words(literal)
        joined = m.start() == prev_end  # "{kind}," : no space between the tokens
        sep = "" if index == 0 or joined else r"\s+"
        if optional:
            parts.append(f"(?:{piece}\\s+)?" if index == 0 else f"(?:{sep}{piece})?")
            if index == 0:
                parts.append("\x00")  # the next token gets no separator
        else:
            if parts and parts[-1] == "\x00":
                parts.pop()
                sep = ""
            parts.append(sep + piece)
        if not first_known:
            if words is None or first is None:
                first, first_known = None, True
            else:
                first |= words
                first_known = not optional
        prev_end = m.end()
    if parts and parts[-1] == "\x00":
        raise LexiconError(f"a template cannot be one optional word: {template!r}")
    return re.compile("".join(parts)), (frozenset(first) if first_known and first is not None else None)


def _strs(raw: Any, where: str) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise LexiconError(f"{where}: expected a list of strings")
    return list(raw)


def _mapping(raw: Any, where: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise LexiconError(f"{where}: expected a table of strings")
    return dict(raw)


class Lexicon:
    """slots.toml, compiled. One instance per process (`lexicon()`); reading is pure."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        grammar = data.get("grammar", {})
        lists = data.get("lists", {})
        if not isinstance(lists, dict) or not all(
            isinstance(v, list) and all(isinstance(w, str) for w in v) for v in lists.values()
        ):
            raise LexiconError("lists: expected a table of word lists")
        self.lists: dict[str, list[str]] = dict(lists)
        self.job_words = frozenset(self.lists.get("jobs", ()))
        self.subjects = sorted(_strs(grammar.get("subjects"), "grammar.subjects"), key=len, reverse=True)
        self.possessives = sorted(_strs(grammar.get("possessives"), "grammar.possessives"), key=len, reverse=True)
        adverbs = "|".join(re.escape(a) for a in _strs(grammar.get("adverbs"), "grammar.adverbs"))
        # Adverbs at the start of the predicate, or right after a leading "is"/"has" (kept).
        self.adverbs = re.compile(rf"^(is |has )?(?:(?:{adverbs}) )+") if adverbs else None
        negs = grammar.get("negations", [])
        if not all(isinstance(n, list) and len(n) == 2 and all(isinstance(x, str) for x in n) for n in negs):
            raise LexiconError("grammar.negations: expected [from, to] pairs")
        self.negations: tuple[tuple[str, str], ...] = tuple(
            sorted(((n[0], n[1]) for n in negs), key=lambda n: len(n[0]), reverse=True)
        )
        reported = _strs(grammar.get("reported"), "grammar.reported")
        self.reported = re.compile(reported[0]) if reported else None
        pairs = grammar.get("they_forms", [])
        if not all(isinstance(n, list) and len(n) == 2 and all(isinstance(x, str) for x in n) for n in pairs):
            raise LexiconError("grammar.they_forms: expected [from, to] pairs")
        self.they_forms: tuple[tuple[str, str], ...] = tuple((n[0], n[1]) for n in pairs)
        copula = "|".join(re.escape(c) for c in _strs(grammar.get("copula_negations"), "grammar.copula_negations"))
        self.copula_negation = re.compile(
            rf"(?:^|(?<=\s))(?:is|are)\s+(?:{copula})\s+|(?:^|(?<=\s))(?:isn't|aren't)\s+"
        )
        self.first_copula = re.compile(r"(?:^|(?<=\s))(?:is|are|isn't|aren't)\s")
        self.articles = tuple(a + " " for a in _strs(grammar.get("articles"), "grammar.articles"))
        tails = _strs(grammar.get("tails"), "grammar.tails")
        for t in tails:
            re.compile(t)  # each one must compile on its own (named in the error)
        # One alternation, applied until nothing more comes off: every tail is anchored at the end.
        self.tails = re.compile("|".join(f"(?:{t})" for t in tails)) if tails else None
        self.function_words = frozenset(_strs(grammar.get("function_words"), "grammar.function_words"))
        self.reject_values = tuple(re.compile(t) for t in _strs(grammar.get("reject_values"), "grammar.reject_values"))
        self._rejects: dict[str, re.Pattern[str]] = {}

        self.slots: dict[str, SlotSpec] = {}
        self.patterns: list[Pattern] = []
        for raw in data.get("slot", []):
            spec = self._slot(raw)
            if spec.name in self.slots:
                raise LexiconError(f"slot {spec.name!r} is listed twice")
            self.slots[spec.name] = spec
            for possessive, key in ((False, "says"), (True, "says_of")):
                for entry in raw.get(key, []):
                    self.patterns.append(self._pattern(spec, entry, possessive, len(self.patterns)))
        self._by_word: dict[tuple[bool, str], tuple[Pattern, ...]] = {}
        self._generic = {
            p: tuple(x for x in self.patterns if x.possessive == p and x.first_words is None) for p in (False, True)
        }

    # -- loading ---------------------------------------------------------------------------------

    def _slot(self, raw: Mapping[str, Any]) -> SlotSpec:
        name = raw.get("name")
        if not isinstance(name, str) or not name:
            raise LexiconError(f"a slot without a name: {raw!r:.80}")
        card = raw.get("cardinality")
        if card not in ("one", "many"):
            raise LexiconError(f"slot {name}: cardinality must be 'one' or 'many', not {card!r}")
        values = raw.get("values")
        examples = []
        for ex in raw.get("examples", []):
            if not isinstance(ex, dict) or not isinstance(ex.get("say"), str) or not isinstance(ex.get("value"), str):
                raise LexiconError(f"slot {name}: an example needs say= and value=: {ex!r}")
            concrete = ex.get("slot", name)
            if name.endswith(FAMILY_SUFFIX) and concrete == name:
                raise LexiconError(f"slot {name}: a family's example names its concrete slot (slot=)")
            examples.append(Example(ex["say"], ex["value"], bool(ex.get("negated", False)), concrete))
        return SlotSpec(
            name=name,
            cardinality=card,
            aliases=_mapping(raw.get("aliases"), f"{name}.aliases"),
            kind_aliases=_mapping(raw.get("kind_aliases"), f"{name}.kind_aliases"),
            thing_aliases=_mapping(raw.get("thing_aliases"), f"{name}.thing_aliases"),
            values=frozenset(_strs(values, f"{name}.values")) if values is not None else None,
            not_values=frozenset(_strs(raw.get("not_values"), f"{name}.not_values")),
            reject=tuple(re.compile(r) for r in _strs(raw.get("reject"), f"{name}.reject")),
            cut=tuple(_strs(raw.get("cut"), f"{name}.cut")),
            trim=tuple(_strs(raw.get("trim"), f"{name}.trim")),
            shape=raw.get("shape"),
            list_values=bool(raw.get("list_values", False)),
            examples=tuple(examples),
            not_examples=tuple(_strs(raw.get("not_examples"), f"{name}.not_examples")),
        )

    def _pattern(self, spec: SlotSpec, entry: Any, possessive: bool, order: int) -> Pattern:
        if isinstance(entry, str):
            entry = {"say": entry}
        if not isinstance(entry, dict) or not isinstance(entry.get("say"), str):
            raise LexiconError(f"slot {spec.name}: a pattern is a string or a table with say=: {entry!r}")
        template = entry["say"]
        try:
            regex, first = _compile(template, self.lists)
        except re.error as exc:
            raise LexiconError(f"slot {spec.name}: pattern {template!r}: {exc}") from None
        if "(?P<value>" not in regex.pattern and "value" not in entry:
            raise LexiconError(f"slot {spec.name}: pattern {template!r} has no {{value}} and no value=")
        if spec.family and "(?P<thing>" not in regex.pattern:
            raise LexiconError(f"slot {spec.name}: a family's pattern needs {{thing}}: {template!r}")
        implies_raw = entry.get("implies")
        implies: tuple[tuple[str, str], ...] = ()
        if implies_raw is not None:
            if not isinstance(implies_raw, dict) or not {"slot", "value"} <= implies_raw.keys():
                raise LexiconError(f"slot {spec.name}: implies= needs slot= and value=: {template!r}")
            implies = ((str(implies_raw["slot"]), str(implies_raw["value"])),)
        shapes = (None, "name", "proper", "job", "activity")
        shape = entry.get("shape", spec.shape) or None
        also_shape = (implies_raw or {}).get("shape") or None
        if shape not in shapes or also_shape not in shapes:
            raise LexiconError(f"slot {spec.name}: unknown shape {shape!r} / {also_shape!r}")
        return Pattern(
            order=order,
            slot=spec,
            template=template,
            possessive=possessive,
            regex=regex,
            first_words=first,
            value=entry.get("value"),
            negated=bool(entry.get("negated", False)),
            implies=implies,
            shape=shape,
            also_shape=also_shape,
        )

    def check(self) -> None:
        """Cross-references that the loader cannot see one slot at a time: implied slots exist."""
        for p in self.patterns:
            for slot, _ in p.implies:
                if slot not in self.slots:
                    raise LexiconError(f"slot {p.slot.name}: {p.template!r} implies unknown slot {slot!r}")

    # -- reading ---------------------------------------------------------------------------------

    def slot_spec(self, slot: str) -> SlotSpec | None:
        """The spec of a concrete slot name ("home", "favourite_food")."""
        spec = self.slots.get(slot)
        if spec is not None:
            return None if spec.family else spec
        for family in self.slots.values():
            if family.family and slot.startswith(family.prefix) and len(slot) > len(family.prefix):
                return family
        return None

    def _candidates(self, possessive: bool, word: str) -> tuple[Pattern, ...]:
        key = (possessive, word)
        found = self._by_word.get(key)
        if found is None:
            own = [p for p in self.patterns if p.possessive == possessive and p.first_words and word in p.first_words]
            found = tuple(sorted([*own, *self._generic[possessive]], key=lambda p: p.order))
            self._by_word[key] = found
        return found

    def _split_subject(self, text: str) -> tuple[bool, str] | None:
        for p in self.possessives:
            if text.startswith(p + " "):
                return True, text[len(p) + 1 :]
        for s in self.subjects:
            if text.startswith(s + " "):
                return False, text[len(s) + 1 :]
        return None

    def _drop_adverbs(self, rest: str) -> str:
        if self.adverbs is None:
            return rest
        m = self.adverbs.match(rest)
        while m is not None:
            rest = (m.group(1) or "") + rest[m.end() :]
            m = self.adverbs.match(rest)
        return rest

    def _negation(self, possessive: bool, rest: str) -> tuple[str, bool]:
        negated = False
        if possessive:
            first = self.first_copula.search(rest)
            if first is not None:
                m = self.copula_negation.match(rest, first.start())
                if m is not None:
                    rest, negated = rest[: m.start()] + "is " + rest[m.end() :], True
                # "User's home is now in Porto": the adverb after the copula, as after the user.
                head, tail = rest[: first.start()], rest[first.start() :]
                if tail.startswith("is "):
                    rest = head + self._drop_adverbs(tail)
            return rest, negated
        changed = True
        while changed:
            changed = False
            rest = self._drop_adverbs(rest)
            for before, after in self.negations:
                if rest.startswith(before):
                    rest, negated, changed = after + rest[len(before) :], True, True
                    break
        return self._drop_adverbs(rest), negated

    def read(self, canonical_text: str, light: str) -> Reading | None:
        """The reading of one statement (`canonical_text` = engine.text.canonical of it, `light`
        = the statement NFKC'd with invisibles dropped, case kept), or None for free text."""
        text = canonical_text.strip().rstrip(_PUNCT).strip()
        split = self._split_subject(text)
        if split is None:
            return None
        possessive, rest = split
        if not possessive and self.reported is not None:
            # "The user mentioned that they live in Porto": what is reported is the claim.
            m = self.reported.match(rest)
            if m is not None:
                rest = rest[m.end() :]
                for before, after in self.they_forms:
                    if rest.startswith(before):
                        rest = after + rest[len(before) :]
                        break
        rest, negated = self._negation(possessive, rest)
        if not rest:
            return None
        reading = self._match(possessive, rest, negated, light)
        if reading is None:
            # A closed value ("went vegetarian") cannot take a time tail into its value, so the
            # predicate is tried once more without one ("went vegetarian last year").
            trimmed = self._trim_tails(rest)
            if trimmed and trimmed != rest:
                reading = self._match(possessive, trimmed, negated, light)
        return reading

    def _match(self, possessive: bool, rest: str, negated: bool, light: str) -> Reading | None:
        word = rest.split(" ", 1)[0]
        for pattern in self._candidates(possessive, word):
            m = pattern.regex.fullmatch(rest)
            if m is None:
                continue
            reading = self._finish(pattern, m, negated, light)
            if reading is not None:
                return reading
        return None

    def _trim_tails(self, value: str) -> str:
        if self.tails is None:
            return value
        m = self.tails.search(value)
        while m is not None and value:
            value = value[: m.start()].strip(_PUNCT)
            m = self.tails.search(value)
        return value

    def _finish(self, pattern: Pattern, m: re.Match[str], negated: bool, light: str) -> Reading | None:
        spec = pattern.slot
        groups = m.groupdict()
        raw = pattern.value if pattern.value is not None else groups.get("value")
        if raw is None:
            return None
        cleaned = self._clean(spec, raw)
        if cleaned is None:
            return None
        value, written, detail = cleaned
        if not self._shaped(pattern.shape, value, written, light):
            return None
        implies = pattern.implies
        if any(v == "{also}" for _, v in implies):
            also = groups.get("also")
            resolved = []
            for slot, v in implies:
                if v != "{also}":
                    resolved.append((slot, v))
                    continue
                other = self.slots.get(slot)
                cleaned_also = self._clean(other, also) if other is not None and also else None
                if cleaned_also is None or not self._shaped(pattern.also_shape, *cleaned_also[:2], light):
                    return None
                resolved.append((slot, cleaned_also[0]))
            implies = tuple(resolved)
        kind = groups.get("kind")
        if kind:
            kind = " ".join(kind.split())
            value = f"{spec.kind_aliases.get(kind, kind)} {value}"
        slot = spec.name
        if spec.family:
            thing = " ".join((groups.get("thing") or "").split())
            if not thing:
                return None
            thing = spec.thing_aliases.get(thing, thing)
            slot = spec.prefix + thing.replace(" ", "_")
        negated = negated != pattern.negated
        return Reading(
            slot=slot,
            cardinality=spec.cardinality,
            value=value,
            negated=negated,
            # A negated claim asserts nothing else: "User is no longer married to Sam" does not
            # say the user is married.
            implies=() if negated else implies,
            detail=detail,
        )

    def _looks_proper(self, value: str, written: str, light: str) -> bool:
        """A value that is a name as written ("Porto", "Meta", "Spanish"), or else a short plain
        one: at most three words, none of them a function word ("porto" passes; "fear of losing
        her job", "at conferences", "it when people are late" do not). Idioms built on the same
        verbs ("lives in fear", "speaks at conferences") are what this keeps out."""
        if _looks_like_name(written, light) or _looks_like_name(value, light):
            return True
        words = written.split()
        return len(words) <= 3 and not any(w in self.function_words for w in words)

    def _shaped(self, shape: str | None, value: str, written: str, light: str) -> bool:
        """Whether a value has the shape its pattern asks for (slots.toml's header)."""
        if shape == "name":
            return _looks_like_name(value, light)
        if shape == "proper":
            return self._looks_proper(value, written, light)
        if shape == "job":
            return self._looks_like_job(value)
        if shape == "activity":
            return self._looks_like_activity(value)
        return True

    def _looks_like_activity(self, value: str) -> bool:
        """An activity named by its -ing form ("swimming", "rock climbing"): at most three words,
        no function word, the last one ending in -ing ("goes swimming", not "goes home")."""
        words = value.split()
        return (
            0 < len(words) <= 3
            and not any(w in self.function_words for w in words)
            and words[-1].endswith("ing")
            and len(words[-1]) > 4
        )

    def _looks_like_job(self, value: str) -> bool:
        """A job title: at most four words, no function word, ending in a job noun of the
        `jobs` list ("senior product manager", "school principal"; not "a fan of jazz")."""
        words = value.split()
        return (
            0 < len(words) <= 4
            and not any(w in self.function_words for w in words)
            and (words[-1] in self.job_words or " ".join(words[-2:]) in self.job_words)
        )

    def _clean(self, spec: SlotSpec, raw: str) -> tuple[str, str, str] | None:
        """(the value, the value as it stood before its article was dropped, the detail the
        slot's cut words took off it), or None. Time tails go first and are not detail (valid
        time is kept apart); what a cut takes off ("with his wife", "every Sunday", "a little")
        is detail: it keeps the claim from being the same as the plain one, so a statement that
        says more is never dropped as a duplicate of one that says less."""
        value = self._trim_tails(" ".join(raw.split()).strip(_PUNCT))
        for trim in spec.trim:
            at = value.find(trim)
            if at > 0:
                value = value[:at]
        detail = ""
        for cut in spec.cut:
            at = value.find(cut)
            if at > 0:
                value, rest = value[:at], value[at:]
                detail = " ".join(x for x in (_strip_symbols(self._trim_tails(rest)), detail) if x)
        value = _strip_symbols(self._trim_tails(value))
        if not value or self._rejected(spec, value):
            return None
        written = value
        for article in self.articles:
            if value.startswith(article):
                value = value[len(article) :]
                break
        value = value.strip(_PUNCT)
        value = spec.aliases.get(value, value)
        if not value or value in spec.not_values:
            return None
        if spec.values is not None and value not in spec.values:
            return None
        if spec.list_values:
            items = sorted({item.strip(_PUNCT) for item in _LIST_SPLIT.split(value)} - {""})
            value = ", ".join(items)
        return value, written, detail

    def _rejected(self, spec: SlotSpec, value: str) -> bool:
        """Whether any of grammar.reject_values or the slot's `reject` patterns is found in
        `value`: one alternation a slot, compiled on first use (one search, not a dozen)."""
        combined = self._rejects.get(spec.name)
        if combined is None:
            sources = [r.pattern for r in (*self.reject_values, *spec.reject)]
            combined = re.compile("|".join(f"(?:{source})" for source in sources)) if sources else _NEVER
            self._rejects[spec.name] = combined
        return combined.search(value) is not None

    def examples(self) -> Iterator[tuple[SlotSpec, Example]]:
        for spec in self.slots.values():
            for ex in spec.examples:
                yield spec, ex


_NEVER = re.compile(r"(?!)")


def _strip_symbols(value: str) -> str:
    """Punctuation, and symbols such as an emoji, trimmed from both ends of a value ("Porto 🏠" is
    Porto): a trailing decoration is not part of what the statement claims."""
    start, end = 0, len(value)
    while start < end and (value[start] in _PUNCT or unicodedata.category(value[start])[0] == "S"):
        start += 1
    while end > start and (value[end - 1] in _PUNCT or unicodedata.category(value[end - 1])[0] == "S"):
        end -= 1
    return value[start:end].strip()


def _case_informative(light: str) -> bool:
    """Whether the writer's capitals say anything: not in ALL CAPS, not in Title Case Throughout
    (where "User's Wife Is Pregnant" would pass for a name)."""
    if not any(map(str.islower, light)):
        return False
    words = [w for w in light.split() if any(map(str.isalpha, w))]
    return len(words) < 3 or not all(next(filter(str.isalpha, w)).isupper() for w in words)


def light_form(statement: str) -> str:
    """The statement as written, for shape checks: NFKC, invisibles dropped, spaces collapsed."""
    return " ".join(strip_ignorable(unicodedata.normalize("NFKC", statement)).split()).rstrip(_PUNCT)


def _looks_like_name(value: str, light: str) -> bool:
    """Whether `value` (canonical) begins with a capital letter where the statement says it. The
    last occurrence is the value (values end statements); a statement whose case-folded form does
    not line up with its canonical one (confusable letters) gives no answer: not a name."""
    folded = light.casefold()
    if len(folded) != len(light) or not _case_informative(light):
        return False
    at = folded.rfind(value)
    if at < 0:
        return False
    return light[at].isupper()


@cache
def lexicon() -> Lexicon:
    """The lexicon of the installed package's slots.toml, loaded and checked once."""
    raw = resources.files("engine.claims").joinpath("slots.toml").read_text(encoding="utf-8")
    lex = Lexicon(tomllib.loads(raw))
    lex.check()
    return lex

"""The canonical text, and value keys: how two statements are recognised as "the same value".

`canonical` is the one form every judgement reads (value keys, claims, special categories,
credentials, review policies): Unicode NFKC, every Default_Ignorable_Code_Point removed (variation
selectors, tag characters, Mongolian free variation selectors, joiners, the soft hyphen; the
property comes from the `regex` package, which tracks Unicode, not from ranges kept here), case
folded, and the confusables skeleton (below). It keeps punctuation and spacing (collapsed), so a
detector can still read "password: x". `reveal` is its other half for people: every code point
the canonical form drops is shown as ⟨U+XXXX⟩, so a row never reads "User has a cat" while its
key holds something else.

The rule (one rule, used by the tombstone gate, the duplicate gate and `Memory.is_tombstoned` /
`is_duplicate`):

1. `value_key` folds what a person would not call a different statement: Unicode form (NFKC),
   case (casefold), punctuation and symbols, and runs of whitespace. This is what the `key`
   columns store.
2. `match_key` adds the confusables skeleton (`skeleton`): every NON-ASCII character that Unicode's
   confusables data lists as a look-alike of an ASCII character is read as that character, so
   "Usеr іs аllеrgіc" in Cyrillic letters is "user is allergic". ASCII is left alone on purpose:
   the data also calls "rn" a look-alike of "m" and "1" of "l", and folding those would make
   "burn" the same value as "bum". Accents are split off first (NFD) and kept, so "avó" and "avô"
   stay two people.
3. Nothing else is the same value. A LOOK-ALIKE (`looks_alike`, `ValueIndex.near`) is exactly
   ONE edit (insertion, deletion, substitution or transposition of two adjacent characters) that
   falls inside a word of five or more letters (in the longer of the two forms), with every number
   unchanged: "User owns a horse" / "User owns a house", "Sara" / "Sarah", "Iceland" / "Ireland".
   It may be a typo or another true value, so it is never dropped or refused: the gates queue or
   add it with a visible mark ("looks like #12", "near tombstone #3") for a person. Short words
   get no look-alike either ("hope" / "Hove"); two edits never ("peanuts" / "walnuts").

The rule is exact (no similarity threshold): a curator can predict what a rejection blocks.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from functools import cache, lru_cache
from importlib import resources
from typing import Final, Generic, TypeVar

import regex
from rapidfuzz import fuzz, process
from rapidfuzz.distance import OSA

_DIGITS = re.compile(r"\d+")
_IGNORABLE = regex.compile(r"\p{Default_Ignorable_Code_Point}")
_IGNORABLE_RUN = regex.compile(r"\p{Default_Ignorable_Code_Point}+")
_EMOJI_BASE = regex.compile(r"\p{Emoji}")
_EMOJI_PRESENTATION: Final = "\ufe0f"
TYPO_MIN_LETTERS = 5  # a word needs this many letters before one edit inside it counts as a typo

P = TypeVar("P")


def strip_ignorable(text: str) -> str:
    """`text` without its Default_Ignorable_Code_Points (nothing else changed)."""
    return _IGNORABLE.sub("", text)


def has_visible_text(text: str) -> bool:
    """Whether anything is left of `text` once invisible code points and whitespace are dropped
    (a statement made only of them is refused, not stored as an empty value)."""
    return bool(strip_ignorable(text).strip())


@lru_cache(maxsize=65_536)
def canonical(text: str) -> str:
    """The one canonical text (module docstring): NFKC, ignorables dropped, casefold, confusables
    skeleton, NFKC again, whitespace collapsed. Idempotent: canonical(canonical(t)) == canonical(t)."""
    folded = strip_ignorable(unicodedata.normalize("NFKC", text)).casefold()
    skel = skeleton(folded)
    out = strip_ignorable(unicodedata.normalize("NFKC", skel)).casefold() if skel != folded else folded
    return " ".join(out.split())


def reveal(text: str) -> str:
    """`text` as a person must see it: each code point `canonical` drops shown as ⟨U+XXXX⟩. An
    emoji's own presentation selector (U+FE0F right after an emoji) stays as it is: it changes
    how the emoji is drawn, not what it says, and showing it would clutter every ❤️."""

    def show(m: regex.Match[str]) -> str:
        run = m.group(0)
        start = m.start()
        if (
            run == _EMOJI_PRESENTATION
            and start > 0
            and _EMOJI_BASE.match(text[start - 1])
            and not text[start - 1].isascii()
        ):
            return run
        return "".join(f"⟨U+{ord(ch):04X}⟩" for ch in run)

    if not _IGNORABLE.search(text):
        return text
    return _IGNORABLE_RUN.sub(show, text)


def _ascii_key_table() -> dict[int, str | None]:
    table: dict[int, str | None] = {}
    for code in range(128):
        ch = chr(code)
        cat = unicodedata.category(ch)
        if cat[0] in ("P", "S", "Z") or ch.isspace():
            table[code] = " "
        elif cat[0] == "C":
            table[code] = None
    return table


_ASCII_KEY: Final = _ascii_key_table()


@lru_cache(maxsize=65_536)
def value_key(text: str) -> str:
    """Cached: the pipeline and the offline extractor key the same statements episode after episode.
    Reads the canonical text's first steps (NFKC, ignorables dropped, casefold), then folds
    punctuation and symbols to spaces; the skeleton is applied by `key_to_match`, so stored keys
    keep the letters a person typed."""
    if text.isascii():
        # the same steps on ASCII (tests/test_tombstones_and_dedup.py compares both on every ASCII
        # character): NFKC and the ignorables change nothing, case folds to lower case, punctuation,
        # symbols and whitespace become spaces, the other control characters go
        return " ".join(text.lower().translate(_ASCII_KEY).split())
    folded = strip_ignorable(unicodedata.normalize("NFKC", text)).casefold()
    kept = []
    for ch in folded:
        cat = unicodedata.category(ch)
        if cat[0] in ("P", "S", "Z") or ch.isspace():
            kept.append(" ")
        elif cat[0] == "C":
            continue
        else:
            kept.append(ch)
    # NFKC again: casefold can produce sequences that compose differently.
    return strip_ignorable(unicodedata.normalize("NFKC", " ".join("".join(kept).split())))


@cache
def _confusable_map() -> dict[str, str]:
    """Non-ASCII character -> the ASCII text it looks like, from the `confusable_homoglyphs`
    package's copy of Unicode's confusables data (loaded once). Where a character has several
    ASCII look-alikes, a single lowercase letter or digit is preferred, then the shortest."""
    raw = resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text(encoding="utf-8")
    data: dict[str, list[dict[str, str]]] = json.loads(raw)
    out: dict[str, str] = {}
    for char, glyphs in data.items():
        if len(char) != 1 or char.isascii():
            continue
        ascii_forms = [g["c"].replace("\u200e", "") for g in glyphs]
        ascii_forms = [f for f in ascii_forms if f and f.isascii() and f.strip()]
        if not ascii_forms:
            continue
        ascii_forms.sort(key=lambda f: (not (len(f) == 1 and (f.islower() or f.isdigit())), len(f), f))
        out[char] = ascii_forms[0].casefold()
    return out


@lru_cache(maxsize=65_536)
def skeleton(key: str) -> str:
    """The confusables skeleton of a value key (see the module docstring): cached, because every
    gate check maps the same tombstone and fact keys again."""
    if key.isascii():
        return key
    table = _confusable_map()
    decomposed = unicodedata.normalize("NFD", key)
    mapped = "".join(table.get(ch, ch) if not ch.isascii() else ch for ch in decomposed)
    return unicodedata.normalize("NFC", mapped)


def match_key(text: str) -> str:
    """The form two statements are compared in: value key, then skeleton, then folded again (a
    look-alike may map to punctuation or to two characters)."""
    return key_to_match(value_key(text))


@lru_cache(maxsize=65_536)
def key_to_match(key: str) -> str:
    """`match_key` from an already computed value key (what the database stores). A key stored
    before ignorables were dropped is folded again, so an old tombstone still matches."""
    if _IGNORABLE.search(key):
        key = value_key(key)
    skel = skeleton(key)
    return skel if skel == key else value_key(skel)


def _numbers(key: str) -> list[str]:
    return _DIGITS.findall(key)


def _span_letters(text: str, start: int, end: int) -> int:
    """Letters of the word(s) around text[start:end]: the edited region widened to whitespace."""
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    while end < len(text) and not text[end].isspace():
        end += 1
    return sum(1 for ch in text[start:end] if ch.isalpha())


def is_typo(a: str, b: str) -> bool:
    """Whether two DIFFERENT match keys are one edit apart inside a word of >= 5 letters."""
    if a == b or OSA.distance(a, b, score_cutoff=1) > 1 or _numbers(a) != _numbers(b):
        return False
    prefix = 0
    limit = min(len(a), len(b))
    while prefix < limit and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and a[len(a) - 1 - suffix] == b[len(b) - 1 - suffix]:
        suffix += 1
    # The longer form counts: a letter dropped from "peanuts" is still a typo of a 7-letter word.
    letters = max(_span_letters(a, prefix, len(a) - suffix), _span_letters(b, prefix, len(b) - suffix))
    return letters >= TYPO_MIN_LETTERS


def same_value(a: str, b: str) -> bool:
    """The rule, for two statements (or value keys): the same canonical text (equal match keys).
    Nothing else is the same value: a look-alike (`looks_alike`) is a question for a person."""
    return match_key(a) == match_key(b)


def looks_alike(a: str, b: str) -> bool:
    """Two statements whose texts differ by one edit inside a long word (`is_typo`): "User owns a
    horse" and "User owns a house", "User likes Sara" and "User likes Sarah". Possibly a typo,
    possibly another value: never dropped or refused for it, only marked ("looks like #12")."""
    ka, kb = match_key(a), match_key(b)
    return ka != kb and is_typo(ka, kb)


SCAN_LOOKUPS: Final = 8
"""Look-alike lookups a `ValueIndex` answers by scanning (rapidfuzz over the pool, C speed)
before it builds its deletion-neighbourhood index: one decision on a 20,000-fact user looks once,
and building the index for that (about 20 ms) would cost more than the scan; a batch looks
thousands of times, and each scan would make the batch quadratic."""


_LONG_WORD: Final = TYPO_MIN_LETTERS - 1
"""A word this long (in letters) can be the edited word of a look-alike: the longer form's word
has `TYPO_MIN_LETTERS`, so the shorter form's has at least one fewer."""


@lru_cache(maxsize=8192)
def _neighbourhood(mk: str) -> tuple[int, ...]:
    """Cached: a gate looks a key up (`near`) and then adds it (`add`)."""
    return tuple(_hashes(mk))


def _hashes(mk: str) -> Iterator[int]:
    """Hashes a look-alike of `mk` shares with it: `mk` with one of its long words left out (that
    word's position kept), and `mk` without its spaces. A look-alike is one edit inside one word
    of five or more letters, or an edit at a space that joins or splits words; the first kind
    keeps every other word and its place, the second keeps the text without spaces. (The word
    level of a deletion neighbourhood: a handful of entries a key, where every one-character
    deletion would be as many as the key has characters.)"""
    words = mk.split(" ")
    yield hash(("", mk.replace(" ", "")))
    for at, word in enumerate(words):
        if len(word) >= _LONG_WORD and (word.isalpha() or sum(ch.isalpha() for ch in word) >= _LONG_WORD):
            yield hash((at, " ".join(words[:at]), " ".join(words[at + 1 :])))


class ValueIndex(Generic[P]):
    """Match keys of one user's facts, candidates or tombstones, each with a payload, for repeated
    lookups in one gate pass or one import: `find` answers the same value (equal match keys)
    through a dict; `near` answers a look-alike (one edit, `is_typo`): by a scan for the first
    `SCAN_LOOKUPS` lookups, then through a word-level deletion-neighbourhood index
    (`_neighbourhood`), built once and kept up to date by `add`, so a lookup costs the length of
    the key and the few entries sharing a neighbour, not the size of the pool."""

    def __init__(self, items: Iterable[tuple[str, P]] = ()) -> None:
        self._keys: list[str] = []
        self._payloads: list[P] = []
        self._exact: dict[str, list[int]] = {}
        self._near: dict[int, list[int]] | None = None
        self._scans = 0
        for key, payload in items:
            self.add(key, payload)

    def add(self, key: str, payload: P) -> None:
        """`key` is a value key (as stored); it is compared in its match form."""
        mk = key_to_match(key)
        at = len(self._keys)
        self._keys.append(mk)
        self._payloads.append(payload)
        self._exact.setdefault(mk, []).append(at)
        if self._near is not None:
            self._index_near(mk, at)

    def _index_near(self, mk: str, at: int) -> None:
        assert self._near is not None
        for h in _neighbourhood(mk):
            self._near.setdefault(h, []).append(at)

    def find(self, key: str, skip: Callable[[P], bool] | None = None) -> P | None:
        """The payload of the first entry with the same value as the value key `key` (equal match
        keys), or None; entries whose payload `skip` accepts are passed over (the gate's facts
        ended or excluded in this transaction: skipping them costs nothing)."""
        for hit in self._exact.get(key_to_match(key), ()):
            if skip is None or not skip(self._payloads[hit]):
                return self._payloads[hit]
        return None

    def near(self, key: str, skip: Callable[[P], bool] | None = None) -> P | None:
        """The payload of the first entry (in the order added) that LOOKS LIKE the value key
        `key` (one edit inside a long word, `is_typo`) without being the same value, or None."""
        mk = key_to_match(key)
        if not mk or not self._keys:
            return None
        if self._near is None and self._scans < SCAN_LOOKUPS:
            self._scans += 1
            hits = sorted(
                index
                for choice, _, index in process.extract(mk, self._keys, scorer=OSA.distance, score_cutoff=1, limit=None)
                if choice != mk and is_typo(mk, choice)
            )
        else:
            if self._near is None:
                self._near = {}
                for at, known in enumerate(self._keys):
                    self._index_near(known, at)
            found: set[int] = set()
            for h in _neighbourhood(mk):
                found.update(self._near.get(h, ()))
            hits = sorted(i for i in found if self._keys[i] != mk and is_typo(mk, self._keys[i]))
        for index in hits:
            if skip is None or not skip(self._payloads[index]):
                return self._payloads[index]
        return None

    def __len__(self) -> int:
        return len(self._keys)

    def payloads(self) -> list[P]:
        """Every entry's payload, in the order added."""
        return list(self._payloads)


def best_match(key: str, keys: Iterable[str], threshold: float = 0.0) -> tuple[str, float] | None:
    """The first of `keys` with the same value as `key` or, failing that, one that looks like it
    (one edit: benchmarks match labels with a typo's tolerance), with its fuzz.ratio score;
    `threshold` optionally also requires that ratio (0-100), for a caller that wants a stricter
    match (benchmarks matching labels)."""
    pool = list(keys)
    if key in pool:
        return key, 100.0
    index = ValueIndex((k, k) for k in pool)
    found = index.find(key) or index.near(key)
    if found is None:
        return None
    score = float(fuzz.ratio(key, found))
    return (found, score) if score >= threshold else None

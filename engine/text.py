"""Value keys: how two statements are recognised as "the same value" for tombstones and dedup.

The key folds what a person would not call a different statement: Unicode form (NFKC), case
(casefold), punctuation and symbols, and runs of whitespace. Near matches beyond the key (a typo)
are caught by rapidfuzz against the user's own keys, with a configurable threshold, and then only
when every word that differs is a misspelling of its counterpart: a whole-ratio score alone calls
"allergic to peanuts" and "allergic to walnuts" the same value (92.3), and "is not allergic" the same
as "is allergic" (92.9), so a rejection of one would silently block the other.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from difflib import SequenceMatcher

from rapidfuzz import fuzz, process
from rapidfuzz.distance import Levenshtein

_DIGITS = re.compile(r"\d+")
DEFAULT_TOMBSTONE_THRESHOLD = 92.0
DEFAULT_DUPLICATE_THRESHOLD = 92.0


def value_key(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold()
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
    return unicodedata.normalize("NFKC", " ".join("".join(kept).split()))


def _numbers(key: str) -> list[str]:
    return _DIGITS.findall(key)


def _typo_budget(length: int) -> int:
    return 1 if length < 8 else 2


def typos_only(a: str, b: str) -> bool:
    """Whether two keys differ only by misspellings inside words: every differing run of words must
    be within a small edit distance of its counterpart (spaces ignored, so "ice cream" matches
    "icecream"). A word added or dropped is a different statement ("not", "ex-", a second city)."""
    wa, wb = a.split(), b.split()
    for tag, i1, i2, j1, j2 in SequenceMatcher(a=wa, b=wb, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        left, right = "".join(wa[i1:i2]), "".join(wb[j1:j2])
        if not left or not right:
            return False
        if Levenshtein.distance(left, right) > _typo_budget(max(len(left), len(right))):
            return False
    return True


def best_match(key: str, keys: Iterable[str], threshold: float) -> tuple[str, float] | None:
    """The closest key at or above `threshold` (0-100), an exact key first.

    Numbers must agree exactly: "is 31" and "is 32" are one character apart, and a near match
    there would let a tombstone on one age block the other. Beyond the score, the difference must
    be typos only (`typos_only`).
    """
    pool = list(keys)
    if key in pool:
        return key, 100.0
    if not key or not pool:
        return None
    numbers = _numbers(key)
    for choice, score, _ in process.extract(key, pool, scorer=fuzz.ratio, score_cutoff=threshold, limit=8):
        if _numbers(choice) == numbers and typos_only(key, choice):
            return choice, float(score)
    return None

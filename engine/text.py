"""Value keys: how two statements are recognised as "the same value" for tombstones and dedup.

The key folds what a person would not call a different statement: Unicode form (NFKC), case
(casefold), punctuation and symbols, and runs of whitespace. Near matches beyond the key (a typo, a
reordered word) are caught by rapidfuzz against the user's own keys, with a configurable threshold.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from rapidfuzz import fuzz, process

_DIGITS = re.compile(r"\d+")
DEFAULT_TOMBSTONE_THRESHOLD = 92.0
DEFAULT_DUPLICATE_THRESHOLD = 92.0


def value_key(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold()
    kept = []
    for ch in folded:
        cat = unicodedata.category(ch)
        if cat[0] in ("P", "S"):
            kept.append(" ")
        elif cat[0] == "Z" or ch.isspace():
            kept.append(" ")
        elif cat[0] == "C":
            continue
        else:
            kept.append(ch)
    # NFKC again: casefold can produce sequences that compose differently.
    return unicodedata.normalize("NFKC", " ".join("".join(kept).split()))


def _numbers(key: str) -> list[str]:
    return _DIGITS.findall(key)


def best_match(key: str, keys: Iterable[str], threshold: float) -> tuple[str, float] | None:
    """The closest key at or above `threshold` (0-100), an exact key first.

    Numbers must agree exactly: "is 31" and "is 32" are one character apart, and a near match
    there would let a tombstone on one age block the other.
    """
    pool = list(keys)
    if key in pool:
        return key, 100.0
    if not key or not pool:
        return None
    numbers = _numbers(key)
    for choice, score, _ in process.extract(key, pool, scorer=fuzz.ratio, score_cutoff=threshold, limit=8):
        if _numbers(choice) == numbers:
            return choice, float(score)
    return None

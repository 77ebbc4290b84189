"""Claims: every statement, from every source, read as (subject, slot, value, cardinality).

The interface the gate and the review policies read (DESIGN.md, "Additions (2026-12-05)"). A
statement the slot lexicons cannot read is a free-text claim (`slot is None`): it is compared with
the user's facts by its neighbours, never linked or approved by a machine on a guess.

The lexicons are data (`slots.toml`, compiled by `lexicon.py`), each way of saying a slot with
its examples, so the offline extractor's output, an LLM's, an agent's proposal, `memdesk add`, an
edit and an import are all read by the same rules. `read_claim` is the authority; an LLM's own
slot label (`claim_for`) is used only where the lexicons read nothing, and only if it names a
known slot.

`relation(a, b)` answers, for two claims of one user and ignoring time, whether b says the same
as a, replaces it, or is distinct; free text is "unknown" (the gate asks its neighbours, a judge
or a person). Whether the valid times overlap is the gate's question, not this module's.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from ..text import canonical
from .lexicon import Cardinality, lexicon, light_form

Relation = Literal["same", "replaces", "distinct", "unknown"]
USER = "user"
_TRAILING = " .!;:,"


@dataclass(frozen=True, slots=True)
class Claim:
    """One statement, read. `value` is in canonical text (articles and trailing punctuation
    trimmed); for free text it is the whole canonical statement without trailing punctuation.

    `implies` holds the other claims the statement makes by saying this one: "User is married to
    Sam" is partner = sam and implies marital_status = married, so "User is divorced" replaces it.
    """

    subject: str
    slot: str | None
    value: str
    cardinality: Cardinality | None = None
    negated: bool = False
    implies: tuple[Claim, ...] = ()
    # What the statement says beyond slot and value ("with his wife" in "User lives in Porto with
    # his wife"): not part of the value, but part of what makes two claims the same.
    detail: str = ""

    @property
    def free_text(self) -> bool:
        return self.slot is None

    @property
    def key(self) -> tuple[str, frozenset[tuple[str | None, str, bool]], str]:
        """What two claims must share to be "same" (relation): the subject, every claim the
        statement makes (its own and the implied ones, whichever leads) and its detail. For free
        text, the canonical text. Hashable, for an index of one user's facts."""
        return (self.subject, _all(self), self.detail)


@lru_cache(maxsize=131_072)
def read_claim(statement: str) -> Claim:
    """The claim a statement makes (module docstring). Cached: the gate reads a large user's
    20,000 facts on every pass, and a statement's claim never changes while the process runs."""
    canon = canonical(statement)
    reading = lexicon().read(canon, light_form(statement))
    if reading is None:
        return Claim(subject=USER, slot=None, value=canon.rstrip(_TRAILING))
    implied = tuple(
        Claim(subject=USER, slot=slot, value=value, cardinality=cardinality_of(slot)) for slot, value in reading.implies
    )
    return Claim(
        subject=USER,
        slot=reading.slot,
        value=reading.value,
        cardinality=reading.cardinality,
        negated=reading.negated,
        implies=implied,
        detail=reading.detail,
    )


def slot_names() -> frozenset[str]:
    """The known slots; a family is listed by its pattern ("favourite_*": any favourite_<thing>)."""
    return frozenset(lexicon().slots)


def known_slot(name: object) -> str | None:
    """`name` as a known concrete slot ("Home" -> "home", "favorite color" -> "favourite_color"),
    or None when it names none (an LLM's unknown label is ignored, never trusted)."""
    if not isinstance(name, str):
        return None
    key = "_".join(canonical(name).replace("-", " ").split())
    if key.startswith("favorite_"):
        key = "favourite_" + key[len("favorite_") :]
    spec = lexicon().slot_spec(key)
    if spec is None:
        return None
    if spec.family:
        thing = key[len(spec.prefix) :].replace("_", " ")
        return spec.prefix + spec.thing_aliases.get(thing, thing).replace(" ", "_")
    return key


def cardinality_of(slot: str | None) -> Cardinality | None:
    """ "one" or "many" for a known slot (a family member included), None otherwise."""
    if slot is None:
        return None
    spec = lexicon().slot_spec(slot)
    return spec.cardinality if spec is not None else None


def claim_for(statement: str, slot_hint: str | None) -> Claim:
    """The claim of a statement whose source also named a slot (an LLM extractor's `slot`).

    The lexicons stay the authority: when they read the statement, the hint is ignored. Only a
    free-text statement takes a known hint's slot (its value stays the whole canonical statement,
    so two hinted statements are "same" only when their texts are); an unknown hint is ignored."""
    claim = read_claim(statement)
    slot = known_slot(slot_hint)
    if not claim.free_text or slot is None:
        return claim
    return Claim(subject=claim.subject, slot=slot, value=claim.value, cardinality=cardinality_of(slot))


def _pair(a: Claim, b: Claim) -> Relation:
    """Two claims of one slot."""
    if a.value == b.value:
        return "same" if a.negated == b.negated else "replaces"
    if a.negated or b.negated:
        # "not vegan" says nothing about "vegetarian"; only its own value is contradicted.
        return "distinct"
    return "replaces" if a.cardinality == "one" else "distinct"


def relation(a: Claim, b: Claim) -> Relation:
    """How claim `b` stands to claim `a` (both of one user, time ignored): "same" (one slot, value
    and negation, and the same implied claims), "replaces" (one-valued slot with another value, or
    the same value negated; also through what either implies), "distinct", or "unknown" when
    either is free text (two free texts that are the identical canonical text are "same")."""
    if a.free_text and b.free_text and a.value == b.value:
        return "same"  # the identical canonical text (trailing punctuation aside) is one value
    if a.free_text or b.free_text:
        return "unknown"
    if a.subject != b.subject:
        return "distinct"
    if a.key == b.key:
        # The same claims, led by another slot: "works at Google as a nurse" and "works as a
        # nurse at Google".
        return "same"
    # What either statement implies counts too, and a replacement there wins over sameness of the
    # primary claims: "User is married to Tom" after "User is engaged to Tom" names the same
    # partner, but the marital status it implies replaces "engaged".
    for x in (a, *a.implies):
        for y in (b, *b.implies):
            if x.slot == y.slot and _pair(x, y) == "replaces":
                return "replaces"
    if a.slot == b.slot:
        found = _pair(a, b)
        if found == "same" and (_implied(a) != _implied(b) or a.detail != b.detail):
            # One says more: "User's husband is Sam" also says married, "User's partner is Sam"
            # does not; "User lives in Porto with his wife" says who with. Neither may be dropped
            # as the other's duplicate; both stay, unlinked.
            return "distinct"
        return found
    return "distinct"


def _all(claim: Claim) -> frozenset[tuple[str | None, str, bool]]:
    return _implied(claim) | {(claim.slot, claim.value, claim.negated)}


def _implied(claim: Claim) -> frozenset[tuple[str | None, str, bool]]:
    return frozenset((c.slot, c.value, c.negated) for c in claim.implies)


__all__ = [
    "Cardinality",
    "Claim",
    "Relation",
    "cardinality_of",
    "claim_for",
    "known_slot",
    "read_claim",
    "relation",
    "slot_names",
]

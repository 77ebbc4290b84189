"""Claims: every statement, from every source, read as (subject, slot, value, cardinality).

The interface the gate and the review policies read (DESIGN.md, "Additions (2026-12-05)"). A
statement the slot lexicons cannot read is a free-text claim (`slot is None`): it is compared with
the user's facts by its neighbours, never linked or approved by a machine on a guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..text import canonical

Cardinality = Literal["one", "many"]


@dataclass(frozen=True, slots=True)
class Claim:
    """One statement, read. `value` is in canonical text; for free text it is the whole statement."""

    subject: str
    slot: str | None
    value: str
    cardinality: Cardinality | None = None
    negated: bool = False

    @property
    def free_text(self) -> bool:
        return self.slot is None


def read_claim(statement: str) -> Claim:
    """The claim a statement makes. (Interface first: the slot lexicons fill this in.)"""
    return Claim(subject="user", slot=None, value=canonical(statement))


__all__ = ["Cardinality", "Claim", "read_claim"]

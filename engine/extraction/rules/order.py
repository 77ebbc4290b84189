"""The order in which the offline rules read a clause, and the two readers built on it.

Order matters: the first rule that reads a clause decides it (see `registry` for what a handler's
answer means), and many patterns overlap ("I am a vegan" matches the diet rule, the job rule and the
name rule's shape). The narrow rule goes first; each rule's `why_here` says which later rule it
keeps from misreading, and the examples test it through this order, not on its own. The families
below happen to be contiguous; the comments at each family mark where a reason crosses families.
"""

from __future__ import annotations

from ..offline_rules import Claim
from .habits import RULES as HABITS
from .health import RULES as HEALTH
from .identity import RULES as IDENTITY
from .likes import RULES as LIKES
from .partners import RULES as PARTNERS
from .places import RULES as PLACES
from .registry import Rule, first_match
from .special import RULES as SPECIAL
from .things import RULES as THINGS
from .work import RULES as WORK

ORDER: tuple[Rule, ...] = (
    # names first: "my name is", "I am Quinn", a relative's name before what the relative does
    *IDENTITY,
    # allergies and diets before "I am a ..." (work.am_a) reads them as a job
    *HEALTH,
    # "I got married" before "I got ..." (things.have)
    *PARTNERS,
    *PLACES,
    # "I quit X" before the habit rules; "I am a nurse" after the narrower "I am ..." rules above
    *WORK,
    # cars before pets and children; pets and children before the habits
    *THINGS,
    *LIKES,
    # the habits last: their patterns read any "I <verb> ..." clause
    *HABITS,
)

# The special-category rules, tried in this order when the general rules read nothing or only a name.
SPECIAL_ORDER: tuple[Rule, ...] = SPECIAL

RULES: tuple[Rule, ...] = ORDER + SPECIAL_ORDER


def general_claims(clause: str) -> tuple[Rule | None, list[Claim]]:
    """The rule of ORDER that reads the clause, and its claims."""
    return first_match(ORDER, clause, clause_claims)


def special_claims(clause: str) -> list[Claim]:
    """The special-category claim of a clause, or [] (see `special`)."""
    return first_match(SPECIAL_ORDER, clause, clause_claims)[1]


def clause_claims(clause: str) -> list[Claim]:
    """The claims of one normalised clause ("I ..." / "my ..."), in the order a reader would list them:
    the general rules' own, unless they read none or only a name, where a special-category
    claim ("I'm Muslim": a belief, not a name) is taken instead (`special_claims`)."""
    general = general_claims(clause)[1]
    if general and not any(c.subject == "name" for c in general):
        return general
    return special_claims(clause) or general

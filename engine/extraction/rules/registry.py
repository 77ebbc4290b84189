"""What a rule of the offline extractor is: an id, the pattern it matches at the start of a
normalised clause, the handler that turns the match into claims, and examples that are its tests.

A handler answers one of three things, and the difference is the whole contract of the cascade:

- a non-empty list: the claims of the clause; reading stops here;
- an empty list: the rule recognised the clause and it says nothing to keep ("I'm cooking dinner"
  is what the user does now, not a habit); reading stops here too, so no later, looser rule can
  guess a fact from it (fail closed: a clause a rule positively reads is never re-read looser);
- None: the rule does not apply after all ("I have a Toyota" matches the pets-and-children rule's
  pattern but names neither), and the next rule in the order is tried.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..offline_rules import Claim

# How a handler reads another clause from the top (only "I am Quinn, a nurse" needs it): passed in
# rather than imported, so no rule module imports the order that lists it.
Reader = Callable[[str], list[Claim]]
Handler = Callable[[re.Match[str], str, Reader], "list[Claim] | None"]


@dataclass(frozen=True, slots=True)
class Example:
    """A normalised clause and the statements the rule makes of it, in order; `()` says the rule
    reads the clause and keeps nothing (it stops the cascade all the same)."""

    clause: str
    statements: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    pattern: re.Pattern[str]
    handler: Handler
    examples: tuple[Example, ...]
    # Why this rule sits where it does in its order, when it matters ("" when it does not).
    why_here: str = ""


def first_match(order: Sequence[Rule], clause: str, read: Reader) -> tuple[Rule | None, list[Claim]]:
    """The first rule of `order` whose pattern matches and whose handler does not pass (None), and
    what it read; (None, []) when no rule reads the clause."""
    for rule in order:
        if (m := rule.pattern.match(clause)) is not None:
            found = rule.handler(m, clause, read)
            if found is not None:
                return rule, found
    return None, []


def ex(clause: str, *statements: str) -> Example:
    """An example, written the short way in the rule tables."""
    return Example(clause, statements)


# The raw value a pattern captures, trimmed by the handler afterwards.
V = r"(?P<v>.+)"


def pattern(text: str) -> re.Pattern[str]:
    """A rule's pattern: matched at the start of a normalised clause, case-insensitively (a part
    that must keep its case, a name's capital, says so inline with `(?-i:...)`)."""
    return re.compile(text, re.IGNORECASE)

"""Sensitive candidates: what two people must approve (the two-person rule) and no review policy
ever approves.

Why: a person slips on about one item in a hundred. On an ordinary fact the blind sample and the
user's own corrections catch that in time; on a special-category fact, a credential, a marked
item or a directive to agents, one slip is the harm (a PIN stored, an instruction planted). So
every person's approval of a sensitive candidate goes to the blind second review
(engine/review.py draws it at rate 1), whatever `second_review_rate` says.

Derived from the text, never from stored columns (an agent's row may carry any label):
- a special category or a detector's doubt (engine.categories.category_of, UNSURE counts);
- a credential-like phrase in the statement or its evidence (engine.credentials);
- a mark that it is near a rejected value (`near_tombstone`: someone already decided against
  that value, and one slip would bring it back). A look-alike or "may replace" mark is not enough:
  it is a question shown beside the item, which the first person answers by looking, and a slip
  there leaves a wrong fact, not a harmful one (counted by the fleet benchmark as such); making
  every mark a two-person item cost the held-out team about 17 second reviews a 1,000;
- a directive to agents (engine.directives).

The window: the first person's approval makes the fact active, so until the second person's
verdict it is retrievable. Holding it back would need a state between pending and active that
the gate, the second-review queue (which reviews active facts) and every reader know; instead the
second-review backlog's age is an alarm (`digest` exits 1 past the SLA; the header shows it), and
an overturn retracts the fact at once.
"""

from __future__ import annotations

from collections.abc import Iterable

from .categories import category_of, is_special
from .credentials import credential_like
from .directives import directive_reason
from .models import Candidate, Mark


def sensitive_reason(statement: str, evidence: str | None = None, marks: Iterable[Mark] = ()) -> str | None:
    """Why a candidate with this text, evidence and marks is sensitive (None when it is not)."""
    seen = tuple(m for m in marks if m.kind == "near_tombstone")
    if seen:
        return "marked (" + ", ".join(f"{m.kind.replace('_', ' ')} #{m.target_id}" for m in seen) + ")"
    if credential_like(statement):
        return "a credential-like phrase in the statement"
    if evidence and credential_like(evidence):
        return "a credential-like phrase in its evidence"
    category = category_of(statement)
    if is_special(category):
        return f"special category {category}"
    return directive_reason(statement)


def candidate_sensitive(cand: Candidate, statement: str | None = None) -> str | None:
    """Why `cand` is sensitive, reading its own statement and, when a person edited it before
    approving, the edited one too (an edit must not launder a sensitive claim, nor add one)."""
    why = sensitive_reason(cand.statement, cand.evidence, cand.marks or ())
    if why is None and statement is not None and statement.strip() != cand.statement.strip():
        why = sensitive_reason(statement)
        if why is not None:
            why = f"as edited: {why}"
    return why


__all__ = ["candidate_sensitive", "sensitive_reason"]

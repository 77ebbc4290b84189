"""Who may decide a pending candidate, before anything else is read: the flagger of a second
opinion may not, and while a user is assigned only the assignee may (engine/team.py explains both).

Its own module, below both: `review` asks it before every claim and decision and `team` before a
blind verdict, and the team service itself sits above review (it retracts through knowledge and
reads review's queue), so the rule cannot live in team without an import circle
(tests/test_layers.py)."""

from __future__ import annotations

from .errors import AssignedError, SecondOpinionError
from .models import Candidate


def check_may_decide(cand: Candidate, reviewer: str) -> None:
    """Called by ReviewService._check_open before every claim and decision (inside its transaction,
    on the row it just re-read): the flagger of a second opinion and anyone but the assignee of
    the candidate's user are refused. A flag outranks the assignment: when the assignee asks for a
    second opinion, someone else must be able to give it."""
    if cand.flagged_by is not None:
        if cand.flagged_by == reviewer:
            raise SecondOpinionError(cand.id, cand.flagged_by)
        return
    if cand.assigned_to is not None and cand.assigned_to != reviewer:
        raise AssignedError(cand.id, cand.user_id, cand.assigned_to)

"""Blind means blind: what a reviewer may not see while an approval waits for their blind second
review (engine/team.py), on every read path that names who decided something or why.

A second review is only worth something when the second reviewer judges the fact on its own. So
while an approval is in `reviewer`'s second-review queue (sampled, made by someone else, its fact
still active, nobody second-reviewed it), every read that passes `viewer=reviewer` gets the first
decision's traces redacted:

- the fact it created: `created_by` (the approving reviewer) reads HIDDEN;
- the candidate itself (`review.get`, `conversations`): `decided_by` reads HIDDEN, with no
  `decision` (how: approved as it was, edited, as a supersession) and no `reason`;
- its audit rows: every row the first decider wrote on that candidate or that fact, and every row
  they wrote in the decision's own transaction (same user, same instant: the supersession of the
  old fact, the lifted tombstone), reads actor HIDDEN with no reason, note, before or after.

The rule lives here, not in a screen, so the Knowledge screen, `Memory.history`, `Memory.knowledge`,
`Memory.versions`, `Memory.conversations` and `review.get` (each with `viewer=`) and anything built
on them agree; it ends by itself
when the verdict is recorded (the item leaves the queue) or the fact is no longer active. Without
`viewer` nothing is redacted (an administrator's or a script's read, which has no reviewer to
blind). The spots are read in the caller's transaction, so they match the rows they redact.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from .models import AuditEvent, Candidate, Knowledge
from .storage.rooms import BlindTx
from .storage.sql.team import HASH_SPACE
from .timeutil import to_us

if TYPE_CHECKING:
    from .config import MemoryConfig

SAMPLED_DECISIONS: tuple[str, ...] = ("approve", "edit_approve", "confirm_supersession", "keep_both")
"""Approvals that created a fact and can therefore be second-reviewed (and overturned)."""

HIDDEN = "(hidden until your second review)"
"""What a redacted reviewer name reads: says that something is hidden and until when."""


@dataclass(frozen=True, slots=True)
class BlindSpot:
    """One approval waiting for the viewer's blind second review."""

    candidate_id: int
    knowledge_id: int
    user_id: str
    decided_by: str
    decided_at_us: int


@dataclass(frozen=True, slots=True)
class BlindSpots:
    """The viewer's pending blind reviews, and the redaction they imply (pure: no I/O)."""

    spots: tuple[BlindSpot, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.spots)

    def hides_event(self, event: AuditEvent) -> bool:
        for s in self.spots:
            if event.user_id != s.user_id or event.actor != s.decided_by:
                continue
            on_it = (event.entity == "candidate" and event.entity_id == s.candidate_id) or (
                event.entity == "knowledge" and event.entity_id == s.knowledge_id
            )
            if on_it or to_us(event.at) == s.decided_at_us:
                return True
        return False

    def events(self, events: Iterable[AuditEvent]) -> list[AuditEvent]:
        """`events` with the first decisions' rows redacted (who and why; what happened stays)."""
        return [
            replace(e, actor=HIDDEN, reason=None, note=None, before=None, after=None) if self.hides_event(e) else e
            for e in events
        ]

    def candidates(self, candidates: Iterable[Candidate]) -> list[Candidate]:
        """`candidates` with the first decision of each one waiting for the viewer's review
        redacted: who decided it, how, and why (that it was approved stays)."""
        hidden = {(s.user_id, s.candidate_id) for s in self.spots}
        return [
            replace(c, decided_by=HIDDEN, decision=None, reason=None) if (c.user_id, c.id) in hidden else c
            for c in candidates
        ]

    def facts(self, facts: Iterable[Knowledge]) -> list[Knowledge]:
        """`facts` with the approver of each fact waiting for the viewer's review redacted."""
        hidden = {(s.user_id, s.knowledge_id) for s in self.spots}
        return [replace(k, created_by=HIDDEN) if (k.user_id, k.id) in hidden else k for k in facts]


def sample_bound(config: MemoryConfig) -> int:
    """The id-hash bound for a person's approval made before draws were stored (the legacy
    sample). Every approval since, a person's or a policy's, is sampled by a secret draw made and
    stored when it is made (engine/review.py, engine/policies.py), never by id: an agent that sees
    ids must not be able to tell which of its proposals a person will check."""
    return int(config.second_review_rate * HASH_SPACE)


async def blind_spots(tx: BlindTx, config: MemoryConfig, viewer: str | None, user_id: str | None = None) -> BlindSpots:
    """The approvals waiting for `viewer`'s blind second review (of one user, or all); none for
    no viewer."""
    if viewer is None:
        return BlindSpots()
    rows = await tx.blind_spot_rows(SAMPLED_DECISIONS, viewer, sample_bound(config), user_id)
    return BlindSpots(tuple(BlindSpot(int(r[0]), int(r[1]), str(r[2]), str(r[3]), int(r[4])) for r in rows))

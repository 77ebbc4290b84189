"""One reviewer's decisions during a queue session, apart from any widget.

The queue screen used to keep this state in its own fields: an in-flight flag set by hand in seven
places (and by neither the retarget nor the flag worker), the undo stack, and a try/except per
decision turning engine errors into toasts. Here it is kept once, with no Textual import, so it is
tested on its own (tests/test_decision_session.py):

- **In flight.** At most one change runs at a time. `decide`, `decide_many`, `change` and `undo`
  take the slot synchronously, at the key press, and return None when it is taken: the screen then
  refuses the key (a bell). A second key can therefore neither apply a decision twice nor land on a
  candidate the reviewer has not seen while the first is being saved.
- **Undo.** One entry per decision as the reviewer made it; a bulk decision is one entry, undone
  by one `u`, latest first. A refused undo puts back what was not undone.
- **What another reviewer or process did meanwhile** (the candidate decided or claimed elsewhere,
  a stale supersession, a chain out of order) and a decision that needs the reviewer's answer
  become an `Outcome` with a message that says nothing was changed. Anything else propagates to the
  worker's failure dialog, which names the decision and says whether anything was changed (a
  tombstoned or duplicate value after an edit is shown there, with its explanation).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from engine.errors import AlreadyDecidedError, ClaimedError, ConflictError, DecisionRequiredError, UndoRefusedError

Severity = Literal["information", "warning", "error"]


@dataclass(frozen=True)
class Outcome:
    """What a change did, for the screen to show: the ids it decided (or undid), a message, and
    whether the list must be re-read because the candidate was decided elsewhere."""

    done: list[int] = field(default_factory=list)
    message: str | None = None
    severity: Severity = "information"
    title: str | None = None
    decided_elsewhere: bool = False

    @property
    def ok(self) -> bool:
        return bool(self.done)


class Undoer(Protocol):
    async def undo(self, candidate_id: int, reviewer: str) -> object: ...


class LeaseBook(Protocol):
    """Where the session says a decision ended a lease (`review_app.leases.Leases`, or a set)."""

    def discard(self, candidate_id: int, /) -> None: ...


def explain(exc: Exception, candidate_id: int) -> Outcome:
    """An engine refusal in a reviewer's words; nothing was changed by the refused call."""
    if isinstance(exc, AlreadyDecidedError):
        return Outcome(
            message=f"Candidate {candidate_id} was already decided by {exc.decided_by or 'someone else'}.",
            severity="warning",
            decided_elsewhere=True,
        )
    if isinstance(exc, ClaimedError):
        return Outcome(message=f"Candidate {candidate_id} is being reviewed by {exc.claimed_by}.", severity="warning")
    return Outcome(message=f"{str(exc).rstrip('.')}. Nothing was changed.", severity="warning")


REFUSALS = (ConflictError, DecisionRequiredError)
"""The engine's refusals that are news about the queue, said in a line; the rest open a dialog."""


class DecisionSession:
    """The in-flight slot, the undo stack and the count of decisions of one queue session."""

    def __init__(self, review: Undoer, reviewer: str, claimed: LeaseBook) -> None:
        self._review = review
        self.reviewer = reviewer
        self._claimed = claimed
        """The app's leases (their one owner, review_app/leases.py); a decision ends its candidate's
        lease."""
        self.busy = False
        self.undo_stack: list[list[int]] = []
        self.decided = 0

    def _take(self) -> bool:
        if self.busy:
            return False
        self.busy = True
        return True

    def decide(self, candidate_id: int, op: Callable[[], Awaitable[object]]) -> Awaitable[Outcome] | None:
        """Run one decision on `candidate_id`; None (refuse the key) while another change runs."""
        if not self._take():
            return None
        return self._run(candidate_id, op, None)

    async def _run(self, candidate_id: int, op: Callable[[], Awaitable[object]], said: str | None) -> Outcome:
        """A decision (`said` None: it ends the lease and is undoable) or another change (`said`,
        the message for it: retarget, flag), with the engine's refusals as outcomes."""
        try:
            try:
                await op()
            except REFUSALS as exc:
                if isinstance(exc, AlreadyDecidedError):
                    self._claimed.discard(candidate_id)
                return explain(exc, candidate_id)
            if said is not None:
                return Outcome(done=[candidate_id], message=said)
            self._claimed.discard(candidate_id)
            self.undo_stack.append([candidate_id])
            self.decided += 1
            return Outcome(done=[candidate_id])
        finally:
            self.busy = False

    def decide_many(
        self, ids: Sequence[int], op: Callable[[Sequence[int]], Awaitable[tuple[list[int], list[str]]]], verb: str
    ) -> Awaitable[Outcome] | None:
        """A bulk decision: `op` decides each id in its own transaction and returns (done, skipped
        with why). One undo entry for all of them."""
        if not self._take():
            return None
        return self._decide_many(list(ids), op, verb)

    async def _decide_many(
        self, ids: list[int], op: Callable[[Sequence[int]], Awaitable[tuple[list[int], list[str]]]], verb: str
    ) -> Outcome:
        try:
            done, skipped = await op(ids)
            for cid in done:
                self._claimed.discard(cid)
            if done:
                self.undo_stack.append(done)
                self.decided += len(done)
            extra = f"; skipped {len(skipped)}: {'; '.join(skipped)}" if skipped else ""
            return Outcome(
                done=done,
                message=f"{verb} {len(done)} candidate{'s' if len(done) != 1 else ''}{extra}.",
                severity="warning" if skipped else "information",
            )
        finally:
            self.busy = False

    def change(self, candidate_id: int, op: Callable[[], Awaitable[object]], said: str) -> Awaitable[Outcome] | None:
        """A change that is not a decision (retarget, flag): in flight like one, not undoable."""
        if not self._take():
            return None
        return self._run(candidate_id, op, said)

    def undo(self) -> Awaitable[Outcome] | None:
        """Undo the latest entry; None while another change runs. With nothing to undo, the
        outcome says so."""
        if not self._take():
            return None
        return self._undo()

    async def _undo(self) -> Outcome:
        try:
            if not self.undo_stack:
                return Outcome(message="Nothing to undo in this session.")
            group = self.undo_stack.pop()
            undone: list[int] = []
            try:
                for cid in reversed(group):
                    await self._review.undo(cid, self.reviewer)
                    undone.append(cid)
            except UndoRefusedError as exc:
                self.undo_stack.append([c for c in group if c not in undone])
                self.decided = max(0, self.decided - len(undone))
                return Outcome(
                    done=undone,
                    message=str(exc) + (f" ({len(undone)} of the group were undone)" if undone else ""),
                    severity="error",
                    title="Undo refused",
                )
            except BaseException:
                left = [c for c in group if c not in undone]
                if left:
                    self.undo_stack.append(left)
                self.decided = max(0, self.decided - len(undone))
                raise
            self.decided = max(0, self.decided - len(undone))
            said = (
                f"Undid the decision on candidate {group[0]}."
                if len(group) == 1
                else f"Undid the {len(group)} decisions of one bulk action."
            )
            return Outcome(done=group, message=said)
        finally:
            self.busy = False

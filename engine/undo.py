"""Undo: the exact inverse of a candidate's decision, one inverse per decision action.

`ReviewService.undo` (engine/review.py) opens the transaction, reads the candidate and its
decision row, and hands them to `Undo`, which restores the chain links the decision re-pointed or
cut and then runs the inverse `INVERSES` names for the decision (an `AuditAction`):

- `reject`: the tombstone it wrote is lifted;
- `approve_retraction`: the tombstone is lifted and the retracted fact is back in force;
- every decision that made a fact (`approve`, `edit_approve`, `keep_both`, `confirm_supersession`,
  `confirm_correction`): the fact is deleted and what it superseded or corrected is back.

Each inverse refuses (UndoRefusedError) when anything the decision wrote is not as the decision
left it (`untouched`): undo never rewrites later history. A fact brought back passes the gate
(I1, I2: engine.gate). tests/test_undo.py undoes each decision on both backends."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from .actions import CHAIN, UNDOABLE, AuditAction
from .errors import UndoRefusedError
from .gate import Admission, point_pending_at, same_state
from .models import Candidate
from .storage.rooms import ReviewTx
from .storage.sql.records import candidate_from_row_json


@dataclass(slots=True)
class Undo:
    """One undo in progress: the transaction, the decided candidate, its decision's audit row,
    and who undoes it (their note on every audit row undo writes)."""

    tx: ReviewTx
    cand: Candidate
    decision_row: int
    reviewer: str
    now_us: int
    note: str | None

    @property
    def uid(self) -> str:
        return self.cand.user_id

    async def _audit(self, action: AuditAction, entity: str, entity_id: int, **row: Any) -> None:
        await self.tx.audit(
            at=self.now_us,
            actor=self.reviewer,
            action=action.value,
            user_id=self.uid,
            entity=entity,
            entity_id=entity_id,
            note=self.note,
            **row,
        )

    async def untouched(self, entity: str, entity_id: int) -> None:
        """Refuse unless the row is as the decision left it: no later change, or only later
        changes that were themselves undone (`UNDOABLE`) and left it in the same state."""
        tx = self.tx
        later = await tx.later_audit_actions(entity, entity_id, self.decision_row)
        if not later:
            return
        left = None
        if set(later) <= UNDOABLE:  # only changes that undo can take back
            left = await tx.audit_state(entity, entity_id, self.decision_row)
        now_state: Any = None
        if entity == "candidate":
            now_state = await tx.get_candidate(entity_id)
        elif entity == "knowledge":
            now_state = await tx.get_knowledge(self.uid, entity_id)
        if left is None or now_state is None or not same_state(entity, json.loads(left), now_state):
            raise UndoRefusedError(
                f"cannot undo the decision on candidate {self.cand.id}: {entity} {entity_id} "
                "was changed after it, and undo never rewrites later history"
            )

    async def unreferenced(self, knowledge_id: int) -> None:
        """Before the fact the decision made is deleted: another candidate's supersedes_id would
        dangle (and the foreign key would refuse the DELETE with a bare IntegrityError). A PENDING
        candidate naming it (queued after the approval, or back in the queue because its own
        decision was undone first: a chain unwinding in reverse order) is re-pointed at this
        candidate instead, the inverse of the chain re-point an approval does; a decided one is
        history that names the fact, so undo is refused."""
        tx, candidate_id = self.tx, self.cand.id
        naming = [await tx.get_candidate(i) for i in await tx.candidates_naming(knowledge_id, excluding=candidate_id)]
        decided = [c.id for c in naming if c.status != "pending"]
        if decided:
            raise UndoRefusedError(
                f"cannot undo the decision on candidate {candidate_id}: candidate(s)"
                f" {', '.join(map(str, decided))} refer to fact {knowledge_id}, which it created"
            )
        for waiting in naming:
            await tx.set_candidate_target(
                waiting.id, kind=waiting.kind, supersedes_id=None, supersedes_candidate_id=candidate_id
            )
            await self._audit(
                AuditAction.UNDO_CHAIN,
                "candidate",
                waiting.id,
                before=waiting,
                after=await tx.get_candidate(waiting.id),
                reason=f"fact {knowledge_id} is undone: now replaces candidate {candidate_id}",
            )

    async def unchain(self) -> None:
        """Restore the chain links the decision re-pointed or cut: its own transaction's rows,
        between the candidate's previous audit row and its decision row."""
        tx, cand = self.tx, self.cand
        for later_id, later_json in await tx.chain_audit_rows(
            cand.id, self.decision_row, CHAIN, made=cand.knowledge_id
        ):
            await self.untouched("candidate", later_id)
            was = candidate_from_row_json(later_json)
            now_row = await tx.get_candidate(int(later_id))
            await tx.set_candidate_target(
                was.id,
                kind=was.kind,
                supersedes_id=was.supersedes_id,
                supersedes_candidate_id=was.supersedes_candidate_id,
            )
            await self._audit(
                AuditAction.UNDO_CHAIN, "candidate", was.id, before=now_row, after=await tx.get_candidate(was.id)
            )

    async def lift_its_tombstone(self) -> None:
        """The tombstone the decision wrote (a rejection's, or an approved retraction's), if any."""
        stone = await self.tx.tombstone_for(candidate_id=self.cand.id)
        if stone is not None:
            await self.untouched("tombstone", stone.id)
            await self.tx.delete_tombstone(stone.id)
            await self._audit(AuditAction.UNDO_CREATE, "tombstone", stone.id, before=stone)

    # -- one inverse per decision ------------------------------------------------------------------

    async def rejected(self) -> None:
        await self.lift_its_tombstone()

    async def retraction_approved(self) -> None:
        tx, uid = self.tx, self.uid
        target = await tx.get_knowledge(uid, self.cand.knowledge_id)  # type: ignore[arg-type]
        await self.untouched("knowledge", target.id)
        await self.lift_its_tombstone()
        (await Admission.read(tx, uid)).check(target.statement, excluding={target.id})
        await tx.reactivate_knowledge(target.id)
        back = await tx.get_knowledge(uid, target.id)
        await self._audit(AuditAction.UNDO_RETRACT, "knowledge", target.id, before=target, after=back)
        await point_pending_at(tx, back, self.now_us, deciding=None)  # I5 for a fact back in force

    async def fact_made(self) -> None:
        """Approve, edit-approve, keep both, confirm a supersession or a correction: the fact it
        made is deleted, and what it superseded or corrected (in the same instant) is back."""
        tx, uid, cand = self.tx, self.uid, self.cand
        created = await tx.get_knowledge(uid, cand.knowledge_id)  # type: ignore[arg-type]
        await self.untouched("knowledge", created.id)
        await self.unreferenced(created.id)
        replaced = await tx.replaced_by(created.id)
        replacing = cand.decision in (AuditAction.CONFIRM_SUPERSESSION, AuditAction.CONFIRM_CORRECTION)
        mine = [k for k in replaced if replacing and k.expired_at == cand.decided_at]
        if len(replaced) > len(mine):
            later = next(k for k in replaced if k not in mine)
            raise UndoRefusedError(
                f"cannot undo the decision on candidate {cand.id}: fact {later.id} was marked"
                f" superseded by fact {created.id} afterwards"
            )
        for old in mine:
            await self.untouched("knowledge", old.id)
            (await Admission.read(tx, uid)).check(old.statement, excluding={created.id, old.id})
            await tx.reactivate_knowledge(old.id)
            back = await tx.get_knowledge(uid, old.id)
            await self._audit(AuditAction.UNDO_SUPERSEDE, "knowledge", old.id, before=old, after=back)
            await point_pending_at(tx, back, self.now_us, deciding=None)
        await tx.delete_knowledge(created.id)
        await self._audit(AuditAction.UNDO_CREATE, "knowledge", created.id, before=created)


INVERSES: dict[AuditAction, Callable[[Undo], Awaitable[None]]] = {
    AuditAction.REJECT: Undo.rejected,
    AuditAction.APPROVE_RETRACTION: Undo.retraction_approved,
    AuditAction.APPROVE: Undo.fact_made,
    AuditAction.EDIT_APPROVE: Undo.fact_made,
    AuditAction.KEEP_BOTH: Undo.fact_made,
    AuditAction.CONFIRM_SUPERSESSION: Undo.fact_made,
    AuditAction.CONFIRM_CORRECTION: Undo.fact_made,
}
"""The inverse of each decision (`actions.DECISIONS`, every one of them: tests/test_undo.py)."""


def inverse_of(cand: Candidate) -> Callable[[Undo], Awaitable[None]]:
    """The inverse of the candidate's decision; a decision with none is refused, not guessed."""
    try:
        return INVERSES[AuditAction(cand.decision or "")]
    except (ValueError, KeyError):
        raise UndoRefusedError(f"candidate {cand.id}: no undo is known for the decision {cand.decision!r}") from None

"""Knowledge operations shared by several decisions: ending belief in a fact as wrong.

A retraction is reached three ways (a support person's `Memory.retract`, a reviewer approving an
agent's retraction request, a second reviewer overturning an approval); all three write the same
rows and audit rows through `retract_in`, inside the caller's transaction.
"""

from __future__ import annotations

from .models import Knowledge
from .storage import SqlTx


async def retract_in(
    tx: SqlTx, fact: Knowledge, actor: str, reason: str, tombstone: bool, now_us: int,
    candidate_id: int | None = None, note: str | None = None,
) -> None:
    """End `fact` as retracted (audited), and by default tombstone its value so that extraction
    does not bring it back (audited too)."""
    await tx.end_knowledge(fact.id, status="retracted", expired_at=now_us, end_reason=reason)
    await tx.audit(at=now_us, actor=actor, action="retract", user_id=fact.user_id, entity="knowledge",
                   entity_id=fact.id, before=fact, after=await tx.get_knowledge(fact.user_id, fact.id),
                   reason=reason, note=note)
    if tombstone:
        tid = await tx.insert_tombstone(
            user_id=fact.user_id, statement=fact.statement, reason=reason, created_by=actor,
            created_at=now_us, knowledge_id=fact.id, candidate_id=candidate_id,
        )
        await tx.audit(at=now_us, actor=actor, action="create", user_id=fact.user_id, entity="tombstone",
                       entity_id=tid, after=await tx.get_tombstone(fact.user_id, tid), reason=reason, note=note)

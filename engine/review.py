"""Who may change a fact, and how: the review decisions on the pending queue.

Every decision is one BEGIN IMMEDIATE transaction that re-reads the candidate, refuses it unless it
is still pending (and not leased to another reviewer), applies the change, and writes its audit rows
before COMMIT. The candidate's own audit row is written last, so `undo` can ask "did anything touch
these rows after the decision?" by audit id alone.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from . import store, team
from .errors import (
    AlreadyDecidedError,
    ClaimedError,
    InvalidStatementError,
    StaleSupersessionError,
    UndoRefusedError,
    UserInputError,
)
from .models import Candidate, CandidateContext, Knowledge, Tombstone
from .timeutil import check_interval, to_us

if TYPE_CHECKING:
    from .memory import Memory


class _Keep:
    def __repr__(self) -> str:
        return "KEEP"


KEEP: Final[Any] = _Keep()
"""Default for the interval of an edit: keep the candidate's value (None means an open end)."""

SUPERSEDING_KINDS = ("update", "contradiction")


class ReviewService:
    def __init__(self, memory: Memory) -> None:
        self._m = memory

    # -- reading the queue ------------------------------------------------------------------------

    async def pending(
        self, user_id: str | None = None, limit: int = 50, offset: int = 0, *, kind: str | None = None,
        min_confidence: float | None = None, max_confidence: float | None = None,
        unsupported: bool | None = None, search: str | None = None, newest_first: bool = False,
        assigned_to: str | None = None,
    ) -> list[Candidate]:
        """One page of the queue, oldest first by default. Pages, never the whole table."""
        async with self._m.db.reading() as conn:
            return await store.pending(
                conn, user_id=user_id, kind=kind, min_confidence=min_confidence, max_confidence=max_confidence,
                unsupported=unsupported, search=search, limit=limit, offset=offset, newest_first=newest_first,
                assigned_to=assigned_to,
            )

    async def count(self, user_id: str | None = None, **filters: Any) -> int:
        async with self._m.db.reading() as conn:
            return await store.pending_count(conn, user_id=user_id, **filters)

    async def get(self, candidate_id: int, user_id: str | None = None) -> Candidate:
        async with self._m.db.reading() as conn:
            return await store.get_candidate(conn, candidate_id, user_id)

    async def context(self, candidate_id: int, user_id: str | None = None) -> CandidateContext:
        """The candidate with its prediction, source messages and the fact it would supersede."""
        async with self._m.db.reading() as conn:
            cand = await store.get_candidate(conn, candidate_id, user_id)
            return await store.candidate_context(conn, cand)

    # -- leases -----------------------------------------------------------------------------------

    async def claim(self, candidate_id: int, reviewer: str, ttl_seconds: float | None = None) -> Candidate:
        """Lease a candidate to `reviewer` so that a second reviewer is not shown the same item."""
        now = self._m.now()
        ttl = self._m.config.claim_ttl_seconds if ttl_seconds is None else ttl_seconds
        until = now + timedelta(seconds=ttl)
        async with self._m.db.transaction() as conn:
            cand = await store.get_candidate(conn, candidate_id)
            self._check_open(cand, reviewer, now)
            await store.claim_candidate(conn, candidate_id, reviewer, to_us(now), to_us(until))  # type: ignore[arg-type]
            return replace(cand, claimed_by=reviewer, claimed_until=until)

    async def release(self, candidate_id: int, reviewer: str) -> None:
        async with self._m.db.transaction() as conn:
            await store.release_candidate(conn, candidate_id, reviewer)

    @staticmethod
    def _check_open(cand: Candidate, reviewer: str, now: datetime) -> None:
        if cand.status != "pending":
            raise AlreadyDecidedError(cand.id, cand.status, cand.decided_by)
        if (
            cand.claimed_by is not None
            and cand.claimed_by != reviewer
            and cand.claimed_until is not None
            and cand.claimed_until > now
        ):
            raise ClaimedError(cand.id, cand.claimed_by)
        team.check_may_decide(cand, reviewer)  # second-opinion flags and assignments (engine/team.py)

    # -- decisions --------------------------------------------------------------------------------

    async def approve(
        self, candidate_id: int, reviewer: str, statement: str | None = None, valid_at: Any = KEEP,
        invalid_at: Any = KEEP, *, reason: str | None = None, user_id: str | None = None,
    ) -> Knowledge:
        """Approve as a new active fact (optionally edited). For an update this is "keep both": the
        old fact stays active. A retraction request, approved, retracts its target."""
        cand = await self.get(candidate_id, user_id)
        if cand.kind == "retraction":
            return await self._approve_retraction(cand, reviewer, reason)
        return await self._accept(cand, reviewer, statement, valid_at, invalid_at, reason, supersede=False)

    async def keep_both(self, candidate_id: int, reviewer: str, *, user_id: str | None = None) -> Knowledge:
        cand = await self.get(candidate_id, user_id)
        if cand.kind == "retraction":
            raise UserInputError("keep both applies to an update or contradiction, not a retraction request")
        return await self._accept(cand, reviewer, None, KEEP, KEEP, None, supersede=False, decision="keep_both")

    async def confirm_supersession(
        self, candidate_id: int, reviewer: str, statement: str | None = None, valid_at: Any = KEEP,
        invalid_at: Any = KEEP, *, reason: str | None = None, user_id: str | None = None,
    ) -> Knowledge:
        """Approve and end belief in the fact the candidate replaces, in one transaction."""
        cand = await self.get(candidate_id, user_id)
        if cand.kind not in SUPERSEDING_KINDS or cand.supersedes_id is None:
            raise UserInputError(
                f"candidate {candidate_id} is a {cand.kind!r} candidate with no fact to supersede; approve it instead"
            )
        return await self._accept(cand, reviewer, statement, valid_at, invalid_at, reason, supersede=True)

    async def _accept(
        self, cand: Candidate, reviewer: str, statement: str | None, valid_at: Any, invalid_at: Any,
        reason: str | None, *, supersede: bool, decision: str | None = None,
    ) -> Knowledge:
        text = (statement if statement is not None else cand.statement).strip()
        if not text:
            raise InvalidStatementError("the statement is empty")
        start_dt = cand.valid_at if valid_at is KEEP else valid_at
        end_dt = cand.invalid_at if invalid_at is KEEP else invalid_at
        start, end = check_interval(start_dt, end_dt)
        edited = text != cand.statement or start_dt != cand.valid_at or end_dt != cand.invalid_at
        decision = decision or ("confirm_supersession" if supersede else ("edit_approve" if edited else "approve"))
        [embedding] = await self._m.embedder.embed([text])
        now = self._m.now()
        now_us: int = to_us(now)  # type: ignore[assignment]
        async with self._m.db.transaction() as conn:
            current = await store.get_candidate(conn, cand.id)
            self._check_open(current, reviewer, now)
            old: Knowledge | None = None
            if supersede:
                old = await store.get_knowledge(conn, current.user_id, current.supersedes_id)  # type: ignore[arg-type]
                if old.status != "active":
                    raise StaleSupersessionError(
                        f"fact {old.id} is already {old.status}; approve candidate {cand.id} as a new fact instead"
                    )
            kid = await store.insert_knowledge(
                conn, user_id=current.user_id, statement=text, embedding=embedding, created_at=now_us,
                created_by=reviewer, confidence=current.confidence, valid_at=start, invalid_at=end,
                candidate_id=current.id, episode_id=current.episode_id,
            )
            if not await store.mark_decided(
                conn, current.id, status="approved", decision=decision, decided_by=reviewer, decided_at=now_us,
                reason=reason, knowledge_id=kid, statement=text, valid_at=start, invalid_at=end, edited=edited,
            ):
                raise AlreadyDecidedError(current.id, "decided", None)
            created = await store.get_knowledge(conn, current.user_id, kid)
            await store.audit(
                conn, at=now_us, actor=reviewer, action="create", user_id=current.user_id, entity="knowledge",
                entity_id=kid, after=created, reason=reason,
            )
            if old is not None:
                end_reason = "contradicted" if current.kind == "contradiction" else "superseded"
                await store.end_knowledge(
                    conn, old.id, status="superseded", expired_at=now_us, end_reason=end_reason, superseded_by=kid
                )
                await store.audit(
                    conn, at=now_us, actor=reviewer, action="supersede", user_id=current.user_id,
                    entity="knowledge", entity_id=old.id, before=old,
                    after=await store.get_knowledge(conn, current.user_id, old.id), reason=reason or end_reason,
                )
            await store.audit(
                conn, at=now_us, actor=reviewer, action=decision, user_id=current.user_id, entity="candidate",
                entity_id=current.id, before=current, after=await store.get_candidate(conn, current.id),
                reason=reason,
            )
            return created

    async def _approve_retraction(self, cand: Candidate, reviewer: str, reason: str | None) -> Knowledge:
        now = self._m.now()
        now_us: int = to_us(now)  # type: ignore[assignment]
        async with self._m.db.transaction() as conn:
            current = await store.get_candidate(conn, cand.id)
            self._check_open(current, reviewer, now)
            target = await store.get_knowledge(conn, current.user_id, current.supersedes_id)  # type: ignore[arg-type]
            if target.status != "active":
                raise StaleSupersessionError(f"fact {target.id} is already {target.status}")
            why = reason or current.reason or "retraction requested"
            await self._m._retract_in(conn, target, reviewer, why, True, now_us, candidate_id=current.id)
            await store.mark_decided(
                conn, current.id, status="approved", decision="approve_retraction", decided_by=reviewer,
                decided_at=now_us, reason=why, knowledge_id=target.id,
            )
            await store.audit(
                conn, at=now_us, actor=reviewer, action="approve_retraction", user_id=current.user_id,
                entity="candidate", entity_id=current.id, before=current,
                after=await store.get_candidate(conn, current.id), reason=why,
            )
            return await store.get_knowledge(conn, current.user_id, target.id)

    async def reject(
        self, candidate_id: int, reviewer: str, reason: str, *, tombstone: bool = True, user_id: str | None = None,
    ) -> Tombstone | None:
        """Reject and, by default, tombstone the value for this user so extraction never queues it
        again. A rejected retraction request writes no tombstone: the fact simply stays."""
        if not reason or not reason.strip():
            raise InvalidStatementError("a rejection needs a reason")
        now = self._m.now()
        now_us: int = to_us(now)  # type: ignore[assignment]
        async with self._m.db.transaction() as conn:
            current = await store.get_candidate(conn, candidate_id, user_id)
            self._check_open(current, reviewer, now)
            stone: Tombstone | None = None
            if tombstone and current.kind != "retraction":
                tid = await store.insert_tombstone(
                    conn, user_id=current.user_id, statement=current.statement, reason=reason.strip(),
                    created_by=reviewer, created_at=now_us, candidate_id=current.id,
                )
                stone = await store.get_tombstone(conn, current.user_id, tid)
                await store.audit(
                    conn, at=now_us, actor=reviewer, action="create", user_id=current.user_id,
                    entity="tombstone", entity_id=tid, after=stone, reason=reason.strip(),
                )
            await store.mark_decided(
                conn, current.id, status="rejected", decision="reject", decided_by=reviewer, decided_at=now_us,
                reason=reason.strip(),
            )
            await store.audit(
                conn, at=now_us, actor=reviewer, action="reject", user_id=current.user_id, entity="candidate",
                entity_id=current.id, before=current, after=await store.get_candidate(conn, current.id),
                reason=reason.strip(),
            )
            return stone

    async def bulk_approve(self, candidate_ids: list[int], reviewer: str) -> list[Knowledge]:
        """Approve each id in turn (each its own transaction); ids decided meanwhile are skipped."""
        out: list[Knowledge] = []
        for cid in candidate_ids:
            try:
                out.append(await self.approve(cid, reviewer))
            except (AlreadyDecidedError, ClaimedError, StaleSupersessionError):
                continue
        return out

    # -- undo -------------------------------------------------------------------------------------

    async def undo(self, candidate_id: int, reviewer: str, *, user_id: str | None = None) -> Candidate:
        """The exact inverse of the candidate's decision, itself audited. Refused when anything the
        decision wrote was changed afterwards (a later correction, supersession, lift...)."""
        now_us: int = to_us(self._m.now())  # type: ignore[assignment]
        async with self._m.db.transaction() as conn:
            cand = await store.get_candidate(conn, candidate_id, user_id)
            if cand.status == "pending":
                raise UndoRefusedError(f"candidate {candidate_id} is pending: there is no decision to undo")
            row = await (await conn.execute(
                "SELECT id, before FROM audit_log WHERE entity = 'candidate' AND entity_id = ? AND action = ?"
                " ORDER BY id DESC LIMIT 1",
                (candidate_id, cand.decision),
            )).fetchone()
            if row is None or row[1] is None:
                raise UndoRefusedError(f"no recorded decision for candidate {candidate_id}")
            decision_row = int(row[0])
            before = store.candidate_from_row_json(row[1])

            async def untouched(entity: str, entity_id: int) -> None:
                if await store.later_audit_rows(conn, entity, entity_id, decision_row):
                    raise UndoRefusedError(
                        f"cannot undo the decision on candidate {candidate_id}: {entity} {entity_id} "
                        "was changed after it, and undo never rewrites later history"
                    )

            async def unreferenced(knowledge_id: int) -> None:
                # Deleting the fact would leave another candidate's supersedes_id dangling (and the
                # foreign key would refuse the DELETE with a bare IntegrityError).
                naming = await store.candidates_naming(conn, knowledge_id, excluding=candidate_id)
                if naming:
                    raise UndoRefusedError(
                        f"cannot undo the decision on candidate {candidate_id}: candidate(s)"
                        f" {', '.join(map(str, naming))} refer to fact {knowledge_id}, which it created"
                    )

            uid = cand.user_id
            if cand.decision == "reject":
                stone = await store.tombstone_for(conn, candidate_id=candidate_id)
                if stone is not None:
                    await untouched("tombstone", stone.id)
                    await store.delete_tombstone(conn, stone.id)
                    await store.audit(conn, at=now_us, actor=reviewer, action="undo_create", user_id=uid,
                                      entity="tombstone", entity_id=stone.id, before=stone)
            elif cand.decision == "approve_retraction":
                target = await store.get_knowledge(conn, uid, cand.knowledge_id)  # type: ignore[arg-type]
                await untouched("knowledge", target.id)
                stone = await store.tombstone_for(conn, candidate_id=candidate_id)
                if stone is not None:
                    await untouched("tombstone", stone.id)
                    await store.delete_tombstone(conn, stone.id)
                    await store.audit(conn, at=now_us, actor=reviewer, action="undo_create", user_id=uid,
                                      entity="tombstone", entity_id=stone.id, before=stone)
                await store.reactivate_knowledge(conn, target.id)
                await store.audit(conn, at=now_us, actor=reviewer, action="undo_retract", user_id=uid,
                                  entity="knowledge", entity_id=target.id, before=target,
                                  after=await store.get_knowledge(conn, uid, target.id))
            else:
                created = await store.get_knowledge(conn, uid, cand.knowledge_id)  # type: ignore[arg-type]
                await untouched("knowledge", created.id)
                await unreferenced(created.id)
                if cand.decision == "confirm_supersession" and cand.supersedes_id is not None:
                    old = await store.get_knowledge(conn, uid, cand.supersedes_id)
                    await untouched("knowledge", old.id)
                    await store.reactivate_knowledge(conn, old.id)
                    await store.audit(conn, at=now_us, actor=reviewer, action="undo_supersede", user_id=uid,
                                      entity="knowledge", entity_id=old.id, before=old,
                                      after=await store.get_knowledge(conn, uid, old.id))
                await store.delete_knowledge(conn, created.id)
                await store.audit(conn, at=now_us, actor=reviewer, action="undo_create", user_id=uid,
                                  entity="knowledge", entity_id=created.id, before=created)
            await store.restore_candidate(conn, before)
            restored = await store.get_candidate(conn, candidate_id)
            await store.audit(conn, at=now_us, actor=reviewer, action="undo", user_id=uid, entity="candidate",
                              entity_id=candidate_id, before=cand, after=restored, reason=f"undo {cand.decision}")
            return restored

"""Who may change a fact, and how: the review decisions on the pending queue.

Every decision is one BEGIN IMMEDIATE transaction that re-reads the candidate, refuses it unless it
is still pending (and not leased to another reviewer), applies the change, and writes its audit rows
before COMMIT. The candidate's own audit row is written last, so `undo` can ask "did anything touch
these rows after the decision?" by audit id alone.

The decision rules (the README's "Decision rules" states them for reviewers):
  - A candidate that would replace something (kind update/contradiction, or naming a fact in
    supersedes_id or a pending candidate in supersedes_candidate_id) is never approved plainly:
    `approve` raises DecisionRequiredError. `confirm_supersession` ends the old fact and closes its
    valid time; `keep_both` keeps it active. Both take an edited statement and interval.
  - Chains: approving a candidate re-points the pending candidates that would replace it at the
    new fact; rejecting it makes them `new`. Confirming a candidate whose target is still pending
    is refused (ChainOrderError names the candidate to decide first).
  - `bulk_approve` decides exactly the ids it is given; replacements and retraction requests are
    always skipped, with the reason.
  - Every decision takes an optional note, stored on each audit row it writes.
  - Every approval passes `_accept`, so the two-person rule lives there: a person's approval that
    makes a fact carries its secret second-review draw (an audit row in the same transaction, at
    `second_review_rate`, or always when the candidate is sensitive, engine/sensitive.py, or its
    agent is watched, engine/watch.py); a review policy's approval of such a candidate is refused
    whatever the policy's own verdict said. A rejection of a sensitive proposal, like an overturn
    in engine/team.py, runs the agent watch's test in its transaction.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TypeVar

from .blind import blind_spots
from .context import EngineContext
from .errors import (
    AlreadyDecidedError,
    ChainOrderError,
    ClaimedError,
    DecisionRequiredError,
    DuplicateFactError,
    InvalidStatementError,
    NotFoundError,
    StaleSupersessionError,
    TombstonedError,
    UndoRefusedError,
    UserInputError,
)
from .gate import (
    POLICY_ACTOR_PREFIX,
    SYSTEM_ACTOR,
    EndReason,
    activate,
    refuse_tombstone_over_active,
    requeued,
)
from .knowledge import retract_in, write_tombstone
from .limits import check_reason, check_statement
from .may_decide import check_may_decide
from .models import KEEP, BulkResult, Candidate, CandidateContext, Knowledge, QueueMark, Tombstone, UnsetType
from .queue_filter import ALL_PENDING, QueueFilter
from .sampling import draw_sample
from .sensitive import candidate_sensitive
from .stated import candidate_stated_at
from .storage.rooms import ReviewTx, Rooms
from .storage.sql.policies import SAMPLED, UNSAMPLED
from .storage.sql.records import candidate_from_row_json
from .timeutil import check_interval, to_us
from .undo import Undo, inverse_of
from .watch import agent_of, consider, is_sensitive, watches

SUPERSEDING_KINDS = ("update", "contradiction")
_log = logging.getLogger("memdesk")
_T = TypeVar("_T")
_REPLACING_DECISIONS = ("confirm_supersession", "confirm_correction")
_DRAWN_DECISIONS = ("approve", "edit_approve", "confirm_supersession", "keep_both")
"""The approvals that make a fact a second reviewer can overturn (engine.blind.SAMPLED_DECISIONS)."""


def replaces(cand: Candidate) -> bool:
    """Whether deciding the candidate also decides the fate of something else: a fact it would
    supersede or a pending candidate it would replace. A retraction request is its own kind."""
    return cand.kind != "retraction" and (
        cand.kind in SUPERSEDING_KINDS or cand.supersedes_id is not None or cand.supersedes_candidate_id is not None
    )


def _target_text(cand: Candidate) -> str:
    if cand.supersedes_id is not None:
        return f"fact {cand.supersedes_id}"
    if cand.supersedes_candidate_id is not None:
        return f"candidate {cand.supersedes_candidate_id}"
    return "an earlier value (it is an update)"


@dataclass(frozen=True, slots=True)
class Edit:
    """What a reviewer's decision sets as it accepts a candidate (approve, keep both, confirm a
    supersession or a correction): one value handed from the four public methods, which keep their
    keyword signatures, to the one transaction that decides (`_accept`). `KEEP` keeps the
    candidate's own valid time; None is an open end."""

    statement: str | None = None
    valid_at: datetime | UnsetType | None = KEEP
    invalid_at: datetime | UnsetType | None = KEEP
    reason: str | None = None
    note: str | None = None
    lift_tombstone: bool = False


class ReviewService:
    def __init__(self, ctx: EngineContext) -> None:
        self._ctx = ctx

    @property
    def _store(self) -> Rooms[ReviewTx]:
        """The store, seen through the rooms this service may touch (engine/storage/rooms.py)."""
        return self._ctx.store

    # -- reading the queue ------------------------------------------------------------------------

    async def pending(
        self,
        user_id: str | None = None,
        limit: int = 50,
        offset: int = 0,
        *,
        filter: QueueFilter = ALL_PENDING,
        newest_first: bool = False,
        sort: str = "age",
    ) -> list[Candidate]:
        """One page of the queue under `filter`, oldest first by default. Pages, never the whole
        table. `sort` ("age", "user", "kind", "confidence": highest first) orders by that key, then
        by age. `user_id` is short for `filter=QueueFilter(user_id=...)`."""
        async with self._store.reading() as tx:
            return await tx.pending(
                filter.for_user(user_id), limit=limit, offset=offset, newest_first=newest_first, sort=sort
            )

    async def count(self, user_id: str | None = None, *, filter: QueueFilter = ALL_PENDING) -> int:
        """How many candidates are pending under the filter of `pending`."""
        async with self._store.reading() as tx:
            return await tx.pending_count(filter.for_user(user_id))

    async def mark(self, user_id: str | None = None, *, filter: QueueFilter = ALL_PENDING) -> QueueMark:
        """How many candidates are pending under the filter of `pending`, and the newest id among
        them: what an open queue compares with its last look to find new work (a count alone
        cannot tell "one decided elsewhere and one added" from "nothing happened")."""
        async with self._store.reading() as tx:
            return QueueMark(*await tx.pending_mark(filter.for_user(user_id)))

    async def get(self, candidate_id: int, user_id: str | None = None, *, viewer: str | None = None) -> Candidate:
        """One candidate. `viewer`: the reviewer reading; when its approval waits for their blind
        second review, who decided it, how and why read as hidden (engine/blind.py)."""
        async with self._store.reading() as tx:
            cand = await tx.get_candidate(candidate_id, user_id)
            if viewer is None:
                return cand
            [shown] = (await blind_spots(tx, self._ctx.config, viewer, cand.user_id)).candidates([cand])
            return shown

    async def context(self, candidate_id: int, user_id: str | None = None) -> CandidateContext:
        """The candidate with its prediction, source messages and the fact it would supersede."""
        async with self._store.reading() as tx:
            cand = await tx.get_candidate(candidate_id, user_id)
            return await tx.candidate_context(cand)

    async def chain(self, candidate_id: int) -> list[Candidate]:
        """The pending replacements `candidate_id` belongs to, in order: back along
        `supersedes_candidate_id` to the first (which may name an active fact), then forward through
        the pending candidates that would replace each in turn (the oldest, where several do). One
        candidate alone when it is part of no chain. Read by index, whatever the queue's size."""
        async with self._ctx.store.reading() as tx:
            links = [await tx.get_candidate(candidate_id)]
            seen = {candidate_id}
            while (earlier := links[0].supersedes_candidate_id) is not None and earlier not in seen:
                links.insert(0, await tx.get_candidate(earlier))
                seen.add(earlier)
            while later := [c for c in await tx.chained_to(links[-1].id) if c.id not in seen]:
                links.append(later[0])
                seen.add(later[0].id)
            return links

    # -- leases -----------------------------------------------------------------------------------

    async def claim(self, candidate_id: int, reviewer: str, ttl_seconds: float | None = None) -> Candidate:
        """Lease a candidate to `reviewer` so that a second reviewer is not shown the same item."""
        now = self._ctx.now()
        ttl = self._ctx.config.claim_ttl_seconds if ttl_seconds is None else ttl_seconds
        until = now + timedelta(seconds=ttl)
        async with self._store.transaction() as tx:
            cand = await tx.get_candidate(candidate_id)
            self._check_open(cand, reviewer, now)
            await tx.claim_candidate(candidate_id, reviewer, to_us(now), to_us(until))
            return replace(cand, claimed_by=reviewer, claimed_until=until)

    async def release(self, candidate_id: int, reviewer: str) -> None:
        async with self._store.transaction() as tx:
            await tx.release_candidate(candidate_id, reviewer)

    @staticmethod
    def _check_open(cand: Candidate, reviewer: str, now: datetime) -> None:
        if reviewer.strip().casefold() == SYSTEM_ACTOR:
            # a person under the engine's own name would make their claims and decisions read as the
            # engine's in the audit log (the engine itself only undoes, under it: policies.py)
            raise UserInputError(f"{reviewer!r} is the engine's own name in the audit log; a reviewer needs another")
        if cand.status != "pending":
            raise AlreadyDecidedError(cand.id, cand.status, cand.decided_by)
        if (
            cand.claimed_by is not None
            and cand.claimed_by != reviewer
            and cand.claimed_until is not None
            and cand.claimed_until > now
        ):
            raise ClaimedError(cand.id, cand.claimed_by)
        check_may_decide(cand, reviewer)  # second-opinion flags and assignments (engine/team.py)

    # -- decisions --------------------------------------------------------------------------------

    async def approve(
        self,
        candidate_id: int,
        reviewer: str,
        statement: str | None = None,
        valid_at: datetime | UnsetType | None = KEEP,
        invalid_at: datetime | UnsetType | None = KEEP,
        *,
        reason: str | None = None,
        note: str | None = None,
        user_id: str | None = None,
        lift_tombstone: bool = False,
    ) -> Knowledge:
        """Approve as a new active fact (optionally edited). A candidate that would replace
        something is refused with DecisionRequiredError, before anything changes: the reviewer
        must choose `confirm_supersession` or `keep_both`. A retraction request, approved,
        retracts its target."""
        cand = await self.get(candidate_id, user_id)
        self._check_open(cand, reviewer, self._ctx.now())  # decided or leased first: that is the news
        if cand.kind == "retraction":
            return await self._approve_retraction(cand, reviewer, reason, note)
        if replaces(cand):
            raise DecisionRequiredError(cand.id, _target_text(cand))
        edit = Edit(statement, valid_at, invalid_at, reason, note, lift_tombstone)
        return await self._accept(cand, reviewer, edit, mode="approve")

    async def keep_both(
        self,
        candidate_id: int,
        reviewer: str,
        statement: str | None = None,
        valid_at: datetime | UnsetType | None = KEEP,
        invalid_at: datetime | UnsetType | None = KEEP,
        *,
        reason: str | None = None,
        note: str | None = None,
        user_id: str | None = None,
        lift_tombstone: bool = False,
    ) -> Knowledge:
        """Approve a replacement as a new fact and keep what it would replace (an explicit choice,
        audited as `keep_both`). With no start given, a change starts at the time of the message
        that states it (see `confirm_supersession`)."""
        cand = await self.get(candidate_id, user_id)
        self._check_open(cand, reviewer, self._ctx.now())
        if cand.kind == "retraction":
            raise UserInputError("keep both applies to an update or contradiction, not a retraction request")
        if not replaces(cand):
            raise UserInputError(f"candidate {candidate_id} replaces nothing: approve it instead")
        edit = Edit(statement, valid_at, invalid_at, reason, note, lift_tombstone)
        return await self._accept(cand, reviewer, edit, mode="keep_both")

    async def confirm_supersession(
        self,
        candidate_id: int,
        reviewer: str,
        statement: str | None = None,
        valid_at: datetime | UnsetType | None = KEEP,
        invalid_at: datetime | UnsetType | None = KEEP,
        *,
        reason: str | None = None,
        note: str | None = None,
        user_id: str | None = None,
        lift_tombstone: bool = False,
    ) -> Knowledge:
        """The world changed: approve (optionally edited) and end belief in the fact the candidate
        replaces, in one transaction. The old fact's valid time is closed at the new fact's start
        (old.invalid_at = new.valid_at) when that start is later than the old fact's start and
        earlier than its end; otherwise (no start, or a start at or before the old one's) the old
        interval is left as it was, since closing it there would make it empty or lengthen it.
        With no start given, a change starts when it was stated (engine.stated's rule over the
        candidate's episode; its creation time when it came from no conversation). As-of questions
        about the old fact's period still read it. A candidate chained to a candidate still pending
        is refused (ChainOrderError)."""
        edit = Edit(statement, valid_at, invalid_at, reason, note, lift_tombstone)
        return await self._replace(candidate_id, reviewer, edit, user_id, "confirm")

    async def confirm_correction(
        self,
        candidate_id: int,
        reviewer: str,
        statement: str | None = None,
        valid_at: datetime | UnsetType | None = KEEP,
        invalid_at: datetime | UnsetType | None = KEEP,
        *,
        reason: str | None = None,
        note: str | None = None,
        user_id: str | None = None,
        lift_tombstone: bool = False,
    ) -> Knowledge:
        """It was never true: approve (optionally edited) and end the fact the candidate replaces as
        corrected ("it was a misdiagnosis"). Unlike a supersession the old fact's interval is left
        alone and no as-of question ever reads it again; the new fact keeps the candidate's own
        interval (no stated-at start: a correction says what was always the case)."""
        edit = Edit(statement, valid_at, invalid_at, reason, note, lift_tombstone)
        return await self._replace(candidate_id, reviewer, edit, user_id, "correct")

    async def _replace(self, candidate_id: int, reviewer: str, edit: Edit, user_id: str | None, mode: str) -> Knowledge:
        cand = await self.get(candidate_id, user_id)
        self._check_open(cand, reviewer, self._ctx.now())
        if (
            cand.kind == "retraction"
            or not replaces(cand)
            or (cand.supersedes_id is None and cand.supersedes_candidate_id is None)
        ):
            raise UserInputError(
                f"candidate {candidate_id} is a {cand.kind!r} candidate with no fact to replace; approve it instead"
            )
        made = await self._accept(cand, reviewer, edit, mode=mode)
        return made

    async def _target(self, tx: ReviewTx, cand: Candidate) -> Knowledge:
        """The active fact a confirmed supersession ends: supersedes_id, or the fact a chained
        candidate became (normally re-pointed already; this covers a chain made meanwhile)."""
        kid = cand.supersedes_id
        if kid is None and cand.supersedes_candidate_id is not None:
            earlier = await tx.get_candidate(cand.supersedes_candidate_id, cand.user_id)
            if earlier.status == "pending":
                raise ChainOrderError(cand.id, earlier.id)
            if earlier.status != "approved" or earlier.knowledge_id is None:
                raise StaleSupersessionError(
                    f"candidate {earlier.id}, which candidate {cand.id} would replace, was {earlier.status};"
                    f" approve candidate {cand.id} as a new fact instead"
                )
            kid = earlier.knowledge_id
        old = await tx.get_knowledge(cand.user_id, kid)  # type: ignore[arg-type]
        if old.status != "active":
            raise StaleSupersessionError(
                f"fact {old.id} is already {old.status}; approve candidate {cand.id} as a new fact instead"
            )
        return old

    def _check_note(self, reason: str | None, note: str | None) -> tuple[str | None, str | None]:
        if reason is not None:
            check_reason(reason, self._ctx.config)
        if note is not None:
            check_reason(note, self._ctx.config, "the note")
            note = note.strip() or None
        return reason, note

    async def _accept(self, cand: Candidate, reviewer: str, edit: Edit, *, mode: str) -> Knowledge:
        """approve / keep_both / confirm / correct: one transaction that makes the fact active
        through engine.gate.activate (I1-I5), decides the candidate and re-points its chain."""
        statement, valid_at, invalid_at, lift = edit.statement, edit.valid_at, edit.invalid_at, edit.lift_tombstone
        reason, note = self._check_note(edit.reason, edit.note)
        text = (statement if statement is not None else cand.statement).strip()
        if not text:
            raise InvalidStatementError("the statement is empty")
        if statement is not None:
            check_statement(text, self._ctx.config)
        [embedding] = await self._ctx.embedder.embed([text])
        now = self._ctx.now()
        now_us: int = to_us(now)
        async with self._store.transaction() as tx:
            current = await tx.get_candidate(cand.id)
            self._check_open(current, reviewer, now)
            if mode == "approve" and replaces(current):
                raise DecisionRequiredError(current.id, _target_text(current))  # retargeted meanwhile
            two_person = await self._two_person(tx, current, reviewer, text)
            old = await self._target(tx, current) if mode in ("confirm", "correct") else None
            start_dt = current.valid_at if valid_at is KEEP else valid_at
            end_dt = current.invalid_at if invalid_at is KEEP else invalid_at
            if valid_at is KEEP and start_dt is None and replaces(current) and mode != "correct":
                stated = await candidate_stated_at(tx, current, self._ctx.config.evidence_threshold)
                if end_dt is None or stated < end_dt:
                    start_dt = stated
            start, end = check_interval(start_dt, end_dt)
            edited = (
                text != current.statement
                or (valid_at is not KEEP and valid_at != current.valid_at)
                or (invalid_at is not KEEP and invalid_at != current.invalid_at)
            )
            decision = {
                "confirm": "confirm_supersession",
                "correct": "confirm_correction",
                "keep_both": "keep_both",
            }.get(mode, "edit_approve" if edited else "approve")
            end_reason: EndReason | None = None
            if mode == "correct":
                end_reason = "corrected"
            elif mode == "confirm":
                end_reason = "contradicted" if current.kind == "contradiction" else "superseded"
            created = await activate(
                tx,
                user_id=current.user_id,
                statement=text,
                embedding=embedding,
                actor=reviewer,
                at_us=now_us,
                valid_at=start,
                invalid_at=end,
                confidence=current.confidence,
                candidate_id=current.id,
                episode_id=current.episode_id,
                reason=reason,
                note=note,
                replaces=old,
                end_reason=end_reason,
                lift_tombstone=lift,
            )
            if not await tx.mark_decided(
                current.id,
                status="approved",
                decision=decision,
                decided_by=reviewer,
                decided_at=now_us,
                reason=reason,
                knowledge_id=created.id,
                statement=text,
                valid_at=start,
                invalid_at=end,
                edited=edited or start != to_us(current.valid_at),
            ):
                raise AlreadyDecidedError(current.id, "decided", None)
            await self._cut_chain(tx, current, created.id, reviewer, now_us, note)
            await tx.audit(
                at=now_us,
                actor=reviewer,
                action=decision,
                user_id=current.user_id,
                entity="candidate",
                entity_id=current.id,
                before=current,
                after=await tx.get_candidate(current.id),
                reason=reason,
                note=note,
            )
            if not reviewer.startswith(POLICY_ACTOR_PREFIX) and decision in _DRAWN_DECISIONS:
                # A person's approval: its second-review draw, secret and stored with it (a policy's
                # is drawn by engine/policies.py per scope). Sensitive or from a watched agent: always.
                rate = 1.0 if two_person else self._ctx.config.second_review_rate
                drawn = draw_sample(rate)
                await tx.audit(
                    at=now_us,
                    actor=reviewer,
                    action=SAMPLED if drawn else UNSAMPLED,
                    user_id=current.user_id,
                    entity="candidate",
                    entity_id=current.id,
                    reason=f"two-person rule: {two_person}" if two_person else None,
                )
            return created

    async def _two_person(self, tx: ReviewTx, cand: Candidate, reviewer: str, text: str) -> str | None:
        """Why this approval needs a second person (None when the usual sample will do): a
        sensitive candidate (engine/sensitive.py) or a proposal of an agent under watch
        (engine/watch.py). A review policy may approve neither: refused here, where every approval
        passes, whatever the policy's own verdict said."""
        why = candidate_sensitive(cand, text)
        agent = agent_of(cand)
        if why is None and agent is not None and agent in await watches(tx):
            why = f"agent {agent} is under watch"
        if why is not None and reviewer.startswith(POLICY_ACTOR_PREFIX):
            raise UserInputError(f"candidate {cand.id}: {why}; no review policy approves it, a person decides")
        return why

    async def _cut_chain(
        self,
        tx: ReviewTx,
        decided: Candidate,
        knowledge_id: int | None,
        reviewer: str,
        now_us: int,
        note: str | None,
    ) -> None:
        """The pending candidates that would replace `decided`: approved (knowledge_id given), they
        now replace the fact it became; rejected (None), they become `new`. Audited one by one
        (before this decision's own candidate row, which stays the transaction's last)."""
        for later in await tx.chained_to(decided.id):
            if knowledge_id is not None:
                await tx.set_candidate_target(
                    later.id, kind=later.kind, supersedes_id=knowledge_id, supersedes_candidate_id=None
                )
                action, why = "chain_repoint", f"candidate {decided.id} was approved as fact {knowledge_id}"
            else:
                await tx.set_candidate_target(later.id, kind="new", supersedes_id=None, supersedes_candidate_id=None)
                action, why = "chain_unlink", f"candidate {decided.id} was rejected"
            await tx.audit(
                at=now_us,
                actor=reviewer,
                action=action,
                user_id=later.user_id,
                entity="candidate",
                entity_id=later.id,
                before=later,
                after=await tx.get_candidate(later.id),
                reason=why,
                note=note,
            )

    async def _approve_retraction(
        self, cand: Candidate, reviewer: str, reason: str | None, note: str | None
    ) -> Knowledge:
        reason, note = self._check_note(reason, note)
        now = self._ctx.now()
        now_us: int = to_us(now)
        async with self._store.transaction() as tx:
            current = await tx.get_candidate(cand.id)
            self._check_open(current, reviewer, now)
            target = await tx.get_knowledge(current.user_id, current.supersedes_id)  # type: ignore[arg-type]
            if target.status != "active":
                raise StaleSupersessionError(f"fact {target.id} is already {target.status}")
            why = reason or current.reason or "retraction requested"
            await retract_in(tx, target, reviewer, why, True, now_us, candidate_id=current.id, note=note)
            await tx.mark_decided(
                current.id,
                status="approved",
                decision="approve_retraction",
                decided_by=reviewer,
                decided_at=now_us,
                reason=why,
                knowledge_id=target.id,
            )
            await tx.audit(
                at=now_us,
                actor=reviewer,
                action="approve_retraction",
                user_id=current.user_id,
                entity="candidate",
                entity_id=current.id,
                before=current,
                after=await tx.get_candidate(current.id),
                reason=why,
                note=note,
            )
            return await tx.get_knowledge(current.user_id, target.id)

    async def reject(
        self,
        candidate_id: int,
        reviewer: str,
        reason: str,
        *,
        tombstone: bool = True,
        note: str | None = None,
        user_id: str | None = None,
    ) -> Tombstone | None:
        """Reject and, by default, tombstone the value for this user so extraction never queues it
        again. A rejected retraction request writes no tombstone: the fact simply stays. Pending
        candidates that would have replaced this one become `new` (audited)."""
        if not reason or not reason.strip():
            raise InvalidStatementError("a rejection needs a reason")
        why = reason.strip()
        _, note = self._check_note(why, note)
        now = self._ctx.now()
        now_us: int = to_us(now)
        async with self._store.transaction() as tx:
            current = await tx.get_candidate(candidate_id, user_id)
            self._check_open(current, reviewer, now)
            stone: Tombstone | None = None
            if tombstone and current.kind != "retraction":
                await refuse_tombstone_over_active(tx, current.user_id, current.statement)
                stone = await write_tombstone(
                    tx, current.user_id, current.statement, reviewer, why, now_us, candidate_id=current.id, note=note
                )
            await tx.mark_decided(
                current.id,
                status="rejected",
                decision="reject",
                decided_by=reviewer,
                decided_at=now_us,
                reason=why,
            )
            await self._cut_chain(tx, current, None, reviewer, now_us, note)
            await tx.audit(
                at=now_us,
                actor=reviewer,
                action="reject",
                user_id=current.user_id,
                entity="candidate",
                entity_id=current.id,
                before=current,
                after=await tx.get_candidate(current.id),
                reason=why,
                note=note,
            )
            if agent_of(current) is not None and is_sensitive(current) is not None:
                await consider(tx, current, now_us)  # a sensitive proposal rejected: watch its agent?
        return stone

    async def bulk_approve(self, candidate_ids: list[int], reviewer: str, *, note: str | None = None) -> BulkResult:
        """Approve exactly these ids, in order, each in its own transaction; never a filter
        re-queried, so an item that arrived after the reviewer confirmed is never decided. Always
        skipped, with the reason: a candidate that would replace something (it needs the
        supersede/keep-both choice), a retraction request, an id listed twice, unknown, already
        decided or leased to another reviewer."""
        self._check_note(None, note)
        async with self._ctx.store.events.held():  # the policies look once, after the last item
            return await self._bulk_approve(candidate_ids, reviewer, note)

    async def _bulk_approve(self, candidate_ids: list[int], reviewer: str, note: str | None) -> BulkResult:
        result = BulkResult()
        seen: set[int] = set()
        for cid in candidate_ids:
            if cid in seen:
                result.skipped.append((cid, "listed twice"))
                continue
            seen.add(cid)
            try:
                cand = await self.get(cid)
            except NotFoundError:
                result.skipped.append((cid, "not found"))
                continue
            if cand.kind == "retraction":
                result.skipped.append((cid, f"a request to retract fact {cand.supersedes_id}: decide it on its own"))
                continue
            if replaces(cand):
                result.skipped.append((cid, f"would replace {_target_text(cand)}: supersede or keep both, on its own"))
                continue
            try:
                result.approved.append(await self.approve(cid, reviewer, note=note))
            except (
                AlreadyDecidedError,
                ClaimedError,
                DecisionRequiredError,
                TombstonedError,
                DuplicateFactError,
            ) as exc:
                result.skipped.append((cid, str(exc)))
        return result

    async def retarget(
        self,
        candidate_id: int,
        reviewer: str,
        supersedes_id: int | None,
        *,
        note: str | None = None,
        user_id: str | None = None,
    ) -> Candidate:
        """Make a pending candidate an update of an ACTIVE fact of the same user (supersedes_id), or
        cut its link to a pending candidate (None: it becomes `new`; I5 re-points it if that
        candidate's fact, once approved, is one it replaces). Unlinking an update of an active fact
        is refused (UserInputError): a plain approve would then leave both active with nobody having
        chosen that (I4); `keep_both` is that choice, audited as such. A `new` or `proposed`
        candidate becomes kind `update`; an update or contradiction keeps its kind. Another user's
        fact reads as not found. Audited as `retarget`; the candidate stays pending."""
        _, note = self._check_note(None, note)
        now = self._ctx.now()
        now_us: int = to_us(now)
        async with self._store.transaction() as tx:
            current = await tx.get_candidate(candidate_id, user_id)
            self._check_open(current, reviewer, now)
            if current.kind == "retraction":
                raise UserInputError("a retraction request names the fact it retracts; it cannot be retargeted")
            if supersedes_id is not None:
                target = await tx.get_knowledge(current.user_id, supersedes_id)
                if target.status != "active":
                    raise StaleSupersessionError(
                        f"fact {supersedes_id} is {target.status}; only an active fact can be replaced"
                    )
                kind = current.kind if current.kind in SUPERSEDING_KINDS else "update"
                await tx.set_candidate_target(
                    current.id, kind=kind, supersedes_id=supersedes_id, supersedes_candidate_id=None
                )
                why = f"now replaces fact {supersedes_id}"
            else:
                if not replaces(current):
                    raise UserInputError(f"candidate {candidate_id} replaces nothing: there is no link to remove")
                if current.supersedes_id is not None:
                    # I4: unlinked, a plain approve would make it active beside the fact it replaces
                    raise UserInputError(
                        f"candidate {candidate_id} would replace fact {current.supersedes_id}; removing the link would"
                        " let a plain approve keep both without anyone choosing that. Decide it instead: keep both"
                        " (both stay active, audited as keep-both), confirm the supersession, or reject it"
                    )
                await tx.set_candidate_target(current.id, kind="new", supersedes_id=None, supersedes_candidate_id=None)
                why = "now replaces nothing"
            after = await tx.get_candidate(current.id)
            await tx.audit(
                at=now_us,
                actor=reviewer,
                action="retarget",
                user_id=current.user_id,
                entity="candidate",
                entity_id=current.id,
                before=current,
                after=after,
                reason=why,
                note=note,
            )
            return after

    # -- undo -------------------------------------------------------------------------------------

    async def undo(
        self, candidate_id: int, reviewer: str, *, note: str | None = None, user_id: str | None = None
    ) -> Candidate:
        """The exact inverse of the candidate's decision, itself audited: the fact it created is
        deleted, the fact it superseded comes back (valid time reopened), the chain links it
        re-pointed or cut are restored. Undo follows the rules of deciding: the flagger of a second
        opinion cannot undo another reviewer's decision on the item, and while its user is assigned
        only the assignee may undo (check_may_decide). A fact it brings back passes the gate
        (I1, I2: engine.gate). Refused when anything the decision wrote is not as the decision left
        it (a later correction, supersession, lift, a re-pointed candidate decided...); a later
        change that was itself undone leaves it as it was, so a chain unwinds in reverse order."""
        _, note = self._check_note(None, note)
        now_us: int = to_us(self._ctx.now())
        async with self._store.transaction() as tx:
            cand = await tx.get_candidate(candidate_id, user_id)
            if cand.status == "pending":
                raise UndoRefusedError(f"candidate {candidate_id} is pending: there is no decision to undo")
            check_may_decide(cand, reviewer)
            row = await tx.decision_audit_row(candidate_id, cand.decision or "")
            if row is None or row[1] is None:
                raise UndoRefusedError(f"no recorded decision for candidate {candidate_id}")
            decision_row = row[0]
            before = candidate_from_row_json(row[1])
            inverse = inverse_of(cand)  # one inverse per decision (engine/undo.py)
            undo = Undo(tx, cand, decision_row, reviewer, now_us, note)
            await undo.unchain()
            await inverse(undo)
            uid = cand.user_id
            await tx.restore_candidate(before)
            restored = await tx.get_candidate(candidate_id)
            await tx.audit(
                at=now_us,
                actor=reviewer,
                action="undo",
                user_id=uid,
                entity="candidate",
                entity_id=candidate_id,
                before=cand,
                after=restored,
                reason=f"undo {cand.decision}",
                note=note,
            )
            # back in the queue, it meets the facts active now (I5): one made active since it was
            # decided may be what it would replace
            restored = await requeued(tx, restored, now_us)
        return restored

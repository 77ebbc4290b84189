"""The one gate: the only place a fact becomes active, and the one screen every statement passes on
its way into the pending queue.

Why one place. Each rule used to be checked at some entry points and not at others, so every path
added later (edit-approve, correct, keep both, agents in parallel, undo) reopened a hole. Now:

`activate` is called by every path that makes a fact active, inside the caller's write transaction
and under the user's lock (`SqlTx.lock_user`: SQLite's BEGIN IMMEDIATE, PostgreSQL's per-user
advisory lock), and keeps five invariants:

  I1  no active fact holds the value of a live tombstone of its user: TombstonedError, unless the
      caller asks to lift the tombstone (`lift_tombstone=True`), which is then audited as `lift`;
  I2  no two active facts of a user hold one value (engine.text's rule: case, punctuation,
      confusables, one-edit typos of long words): DuplicateFactError;
  I3  every active fact has its audit row, written here in the same transaction;
  I4  a fact that replaces an active fact is never active beside it, unless the caller chose to
      keep both: the old fact is ended here, in the same transaction;
  I5  a pending candidate never replaces nothing when it would replace an active fact: the queue's
      intake relates each statement to the facts active then, and here every pending `new` or
      `proposed` candidate that replaces nothing is related to the fact just made active; one that
      would replace it becomes its update (or contradiction), audited as `gate_retarget` (undo of
      the decision that made the fact puts it back); a candidate an undo puts back in the queue is
      related to every active fact the same way (`requeued`). Without I5,
      "I live in Lisbon" and "I moved to Porto", queued in one run, both approved plainly (by a
      person, or a policy that approves new facts) left Porto active beside Lisbon.

Its callers: review.approve (plain and edited), keep_both, confirm_supersession,
confirm_correction; Memory.add_knowledge, correct; undo's restoring a fact passes `Admission` (I1,
I2) directly; `add_knowledge_many` checks its batch with one `Admission` (duplicates and tombstoned
values are skipped and reported). A rejection that would tombstone a value an active fact holds is
refused by `refuse_tombstone_over_active` (retract the fact instead), the other side of I1.

`screen` is the queue's intake for one statement written by someone (an agent's proposal, a
curator's candidate, a statement queued anyway): the same tombstone and duplicate gates as
extraction (`gate_verdict`, which the pipeline calls too), then one replacement detection
(`replacement`): the offline extractor's calibration rule against the user's active facts, and a
value that was corrected away becomes a contradiction of the fact that corrected it.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Final, Literal

from .errors import DuplicateFactError, StaleSupersessionError, TombstonedError, UserInputError
from .extraction.offline import relate_statement
from .extraction.offline_rules import parse_statement
from .models import Candidate, GapKind, Knowledge, to_jsonable
from .storage.rooms import GateTx
from .storage.sql.tombstones import GateView, LiveEntry
from .text import ValueIndex, value_key

GATE_RETARGET: Final = "gate_retarget"
"""The audit action of I5's re-pointing (engine.review's undo restores these with the chain's)."""

POLICY_ACTOR_PREFIX: Final = "policy:"
"""A review policy's actor is this and its name (`policy:routine`): on its facts, decisions and
audit rows."""

SYSTEM_ACTOR: Final = "memdesk"
"""The actor of what the engine does by its own rules (a candidate re-pointed by I5, a policy
suspended on its overturns)."""

EndReason = Literal["superseded", "contradicted", "corrected"]
"""How a replaced fact ends: the world changed (superseded, contradicted: as-of still reads it for
its period) or it was never true (corrected: as-of never reads it)."""


class Admission:
    """I1 and I2 for one user inside one write transaction: the user's live tombstones and the
    values of its active facts, read once (after the user's lock), then kept up to date as facts
    are admitted, so a batch checks each fact against the ones before it too."""

    def __init__(self, tx: GateTx, user_id: str, rows: list[tuple[str, int, str, str]]) -> None:
        self._tx = tx
        self.user_id = user_id
        self._stones = ValueIndex((k, (i, t)) for e, i, k, t in rows if e == "tombstone")
        self._values: ValueIndex[tuple[int, str]] = ValueIndex((k, (i, t)) for e, i, k, t in rows if e == "knowledge")
        self._ended: set[int] = set()
        """Facts that stopped being active in this transaction: passed over, not re-indexed."""

    @classmethod
    async def read(cls, tx: GateTx, user_id: str) -> Admission:
        await tx.lock_user(user_id)
        return cls(tx, user_id, await tx.admission_rows(user_id))

    def tombstone(self, statement: str) -> tuple[int, str] | None:
        """(id, statement) of the live tombstone that blocks this value, if any."""
        return self._stones.find(value_key(statement))

    def holder(self, statement: str, excluding: Collection[int] = ()) -> tuple[int, str] | None:
        """(id, statement) of an active fact holding this value, other than those in `excluding`."""
        passed = self._ended.union(excluding)
        return self._values.find(value_key(statement), skip=(lambda fact: fact[0] in passed) if passed else None)

    def refusal(self, statement: str, excluding: Collection[int] = ()) -> UserInputError | None:
        """The error that keeps I1 or I2 for a fact holding `statement` becoming active, or None."""
        stone = self.tombstone(statement)
        if stone is not None:
            return TombstonedError(stone[0], stone[1])
        same = self.holder(statement, excluding)
        if same is not None:
            return DuplicateFactError(same[0], same[1])
        return None

    def check(self, statement: str, excluding: Collection[int] = ()) -> None:
        error = self.refusal(statement, excluding)
        if error is not None:
            raise error

    def admitted(self, fact_id: int, statement: str) -> None:
        """A fact was made active in this transaction: later checks see it."""
        self._values.add(value_key(statement), (fact_id, statement))
        self._ended.discard(fact_id)

    def ended(self, fact_id: int) -> None:
        """A fact stopped being active in this transaction."""
        self._ended.add(fact_id)

    async def lift(self, statement: str, actor: str, at_us: int, reason: str | None, note: str | None) -> None:
        """Lift every live tombstone blocking `statement` (the caller asked to make the value active
        over them), each audited as `lift`."""
        while (stone := self.tombstone(statement)) is not None:
            before = await self._tx.get_tombstone(self.user_id, stone[0])
            why = reason or f"{actor} made the value active again"
            await self._tx.lift_tombstone(stone[0], at=at_us, by=actor, reason=why)
            await self._tx.audit(
                at=at_us,
                actor=actor,
                action="lift",
                user_id=self.user_id,
                entity="tombstone",
                entity_id=stone[0],
                before=before,
                after=await self._tx.get_tombstone(self.user_id, stone[0]),
                reason=why,
                note=note,
            )
            self._stones = ValueIndex((value_key(t), (i, t)) for i, t in self._stones.payloads() if i != stone[0])


async def activate(
    tx: GateTx,
    *,
    user_id: str,
    statement: str,
    embedding: list[float],
    actor: str,
    at_us: int,
    valid_at: int | None,
    invalid_at: int | None,
    confidence: float | None = 1.0,
    candidate_id: int | None = None,
    episode_id: int | None = None,
    action: str = "create",
    reason: str | None = None,
    note: str | None = None,
    replaces: Knowledge | None = None,
    end_reason: EndReason | None = None,
    lift_tombstone: bool = False,
    admission: Admission | None = None,
) -> Knowledge:
    """Make one fact active, keeping I1–I5 (module docstring), and return it.

    `replaces` with an `end_reason` ends that active fact in the same transaction (I4): superseded
    or contradicted close its valid time at the new fact's start (`SqlTx.supersede_fact`), corrected
    leaves it as it was (as-of never reads a corrected fact). `replaces` without an `end_reason` is
    keep-both: the old fact stays active, and the new one may not hold its value (I2).
    `lift_tombstone` lifts the tombstones that block the value instead of refusing (I1), audited."""
    gate = admission or await Admission.read(tx, user_id)
    if replaces is not None and replaces.status != "active":
        raise StaleSupersessionError(f"fact {replaces.id} is already {replaces.status}")
    ending = replaces if end_reason is not None else None
    excluding = {ending.id} if ending is not None else set()
    if lift_tombstone:
        await gate.lift(statement, actor, at_us, reason, note)
    gate.check(statement, excluding)
    kid = await tx.insert_knowledge(
        user_id=user_id,
        statement=statement,
        embedding=embedding,
        created_at=at_us,
        created_by=actor,
        confidence=confidence,
        valid_at=valid_at,
        invalid_at=invalid_at,
        candidate_id=candidate_id,
        episode_id=episode_id,
    )
    created = await tx.get_knowledge(user_id, kid)
    await tx.audit(
        at=at_us,
        actor=actor,
        action=action,
        user_id=user_id,
        entity="knowledge",
        entity_id=kid,
        after=created,
        reason=reason,
        note=note,
    )
    gate.admitted(kid, statement)
    await point_pending_at(tx, created, at_us, deciding=candidate_id)
    if ending is not None and end_reason is not None:
        if end_reason == "corrected":
            await tx.end_knowledge(
                ending.id, status="superseded", expired_at=at_us, end_reason="corrected", superseded_by=kid
            )
        else:
            await tx.supersede_fact(ending, kid, valid_at, expired_at=at_us, end_reason=end_reason)
        await tx.audit(
            at=at_us,
            actor=actor,
            action="correct" if end_reason == "corrected" else "supersede",
            user_id=user_id,
            entity="knowledge",
            entity_id=ending.id,
            before=ending,
            after=await tx.get_knowledge(user_id, ending.id),
            reason=reason or end_reason,
            note=note,
        )
        gate.ended(ending.id)
    return created


async def point_pending_at(tx: GateTx, fact: Knowledge, at_us: int, deciding: int | None) -> None:
    """I5 (module docstring): the user's pending candidates that replace nothing and would replace
    `fact` become its update or contradiction (a person, or a policy naming that kind, decides).
    `deciding`, the candidate this fact comes from, is being decided and is left alone."""
    if parse_statement(fact.statement) is None:
        return  # no slot: nothing can be its update (an equal value is the duplicate gate's)
    for cid, statement in await tx.untargeted_pending(fact.user_id):
        if cid == deciding:
            continue
        kind = _would_replace(statement, fact.id, fact.statement)
        if kind is not None:
            await _retarget(tx, await tx.get_candidate(cid), kind, fact.id, at_us)


async def requeued(tx: GateTx, cand: Candidate, at_us: int) -> Candidate:
    """I5 for a candidate back in the queue (an undone decision): when it replaces nothing and
    would replace one of the user's active facts now, it becomes that fact's update or
    contradiction, audited as `gate_retarget`. Returns the candidate as it is now."""
    if cand.status != "pending" or cand.kind not in ("new", "proposed") or cand.supersedes_id is not None:
        return cand
    if cand.supersedes_candidate_id is not None or parse_statement(cand.statement) is None:
        return cand
    view = await tx.gate_view(cand.user_id, whole=False)
    for fid, statement in view.facts:
        kind = _would_replace(cand.statement, fid, statement)
        if kind is not None:
            await _retarget(tx, cand, kind, fid, at_us)
            return await tx.get_candidate(cand.id)
    return cand


def _would_replace(statement: str, fact_id: int, fact_statement: str) -> str | None:
    """ "update" or "contradiction" when `statement` would replace that one fact (the extractor's
    rule, the same `replacement` applies at intake), else None."""
    kind, target = relate_statement(statement, [(fact_id, fact_statement)])
    return kind if kind in ("update", "contradiction") and target == fact_id else None


async def _retarget(tx: GateTx, before: Candidate, kind: str, fact_id: int, at_us: int) -> None:
    """Point one pending candidate at the active fact it would replace, audited by the engine."""
    new_kind = kind if before.kind == "new" else before.kind  # a proposal keeps its kind
    await tx.set_candidate_target(before.id, kind=new_kind, supersedes_id=fact_id, supersedes_candidate_id=None)
    await tx.audit(
        at=at_us,
        actor=SYSTEM_ACTOR,
        action=GATE_RETARGET,
        user_id=before.user_id,
        entity="candidate",
        entity_id=before.id,
        before=before,
        after=await tx.get_candidate(before.id),
        reason=f"fact {fact_id} is active and this would replace it",
    )


async def refuse_tombstone_over_active(tx: GateTx, user_id: str, statement: str) -> None:
    """The other side of I1: a tombstone may not be written for a value an active fact holds (the
    tombstone would sit live beside it). The caller should retract the fact, which ends it and
    tombstones its value in one step."""
    held = (await Admission.read(tx, user_id)).holder(statement)
    if held is not None:
        raise UserInputError(
            f"fact {held[0]} of this user is active and says {held[1]!r}: a tombstone cannot sit beside it."
            " Reject without a tombstone, or retract that fact (which tombstones its value)"
        )


# -- the queue's intake ---------------------------------------------------------------------------


def gate_verdict(view: GateView, statement: str) -> tuple[Literal["tombstoned", "duplicate"], LiveEntry] | None:
    """The two value gates every way into the queue passes (extraction included): a live tombstone
    of the user blocks the value; an active fact or pending candidate holding it makes it a
    duplicate. None when it passes both."""
    key = value_key(statement)
    stone = view.tombstones.find(key)
    if stone is not None:
        return "tombstoned", stone
    dup = view.live.find(key)
    if dup is not None:
        return "duplicate", dup
    return None


def corrected_target(view: GateView, statement: str) -> int | None:
    """The active fact that corrected this value away, when the value is one a correction ended:
    such a statement is queued as a contradiction of that fact, so approving it asks the question."""
    hit = view.corrected.find(value_key(statement))
    return hit[0] if hit is not None else None


def replacement(view: GateView, statement: str) -> tuple[GapKind | Literal["covered"], int | None]:
    """One replacement detection for a statement someone wrote: the offline extractor's calibration
    rule against the user's active facts (an update or contradiction of the fact about the same
    thing, "covered" when a fact already says it), else a contradiction of the fact that corrected
    the value away, else new."""
    kind, target = relate_statement(statement, view.facts)
    if kind == "new":
        corrected = corrected_target(view, statement)
        if corrected is not None:
            return "contradiction", corrected
    return kind, target


@dataclass(frozen=True, slots=True)
class Screened:
    """What the intake decided for one statement: queue it (kind, supersedes_id), or it duplicates
    something already there (duplicate_of: the same value), or an active fact already says it with
    more detail (covered_by: an agent's proposal stops there; a curator queueing a statement anyway
    overrides the prediction)."""

    kind: str = "new"
    supersedes_id: int | None = None
    duplicate_of: tuple[str, int] | None = None
    covered_by: int | None = None


async def screen(tx: GateTx, user_id: str, statement: str, *, kind: str = "new", detect: bool = True) -> Screened:
    """The intake of one written statement, under the user's lock: TombstonedError for a value a
    tombstone blocks; `duplicate_of` for a value an active fact or a pending candidate already
    holds, or that an active fact already says with more detail; otherwise the kind and target it
    is queued with (with `detect`, the fact it would replace: a `new` statement becomes an update
    or contradiction of it)."""
    await tx.lock_user(user_id)
    view = await tx.gate_view(user_id, whole=False)
    verdict = gate_verdict(view, statement)
    if verdict is not None:
        gate, (entity, ident, text) = verdict
        if gate == "tombstoned":
            raise TombstonedError(ident, text)
        return Screened(duplicate_of=(entity, ident))
    if not detect:
        return Screened(kind=kind)
    found, target = replacement(view, statement)
    if found == "covered":
        return Screened(kind=kind, covered_by=target)
    if found in ("update", "contradiction"):
        # an agent's proposal keeps its kind (what it is counts against the agents' limit) and names
        # the fact it would replace; either way approving it asks supersede, correct or keep both
        return Screened(kind=found if kind == "new" else kind, supersedes_id=target)
    return Screened(kind=kind)


# -- undo: is a row as a decision left it? -----------------------------------------------------------

_STATE_FIELDS: dict[str, tuple[str, ...]] = {
    "candidate": ("status", "kind", "statement", "supersedes_id", "supersedes_candidate_id", "knowledge_id"),
    "knowledge": ("status", "statement", "valid_at", "invalid_at", "expired_at", "end_reason", "superseded_by"),
}


def same_state(entity: str, recorded: dict[str, Any], current: object) -> bool:
    """Whether `current` (a Candidate or Knowledge) is, in what a decision decides, as an audit row
    recorded it: later changes that were undone in reverse order leave it so, and then undoing an
    earlier decision rewrites no later history."""
    fields = _STATE_FIELDS.get(entity)
    if fields is None:
        return False
    now = to_jsonable(current)
    return all(now.get(name) == recorded.get(name) for name in fields)

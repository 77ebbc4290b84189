"""The one gate: the only place a fact becomes active, and the one screen every statement passes on
its way into the pending queue.

Why one place. Each rule used to be checked at some entry points and not at others, so every path
added later (edit-approve, correct, keep both, agents in parallel, undo) reopened a hole. Now:

`activate` is called by every path that makes a fact active, inside the caller's write transaction
and under the user's lock (`SqlTx.lock_user`: SQLite's BEGIN IMMEDIATE, PostgreSQL's per-user
advisory lock), and keeps five invariants:

  I1  no active fact holds the value of a live tombstone of its user: TombstonedError, unless the
      caller asks to lift the tombstone (`lift_tombstone=True`), which is then audited as `lift`;
  I2  no two active facts of a user hold one value: the same canonical text (engine.text: case,
      punctuation, invisible marks, confusables) or the same claim (engine.claims: "resides in
      Lisbon" is "lives in Lisbon"): DuplicateFactError. A look-alike one edit away is another
      value, marked ("looks like #12"), never refused;
  I3  every active fact has its audit row, written here in the same transaction;
  I4  a fact that replaces an active fact is never active beside it, unless the caller chose to
      keep both: the old fact is ended here, in the same transaction;
  I5  a pending candidate never replaces nothing when it would replace an active fact: the queue's
      intake relates each statement to the facts active then, and here every pending `new` or
      `proposed` candidate that replaces nothing is related to the fact just made active; one that
      would replace it (the value model's `replaces`) becomes its update, audited as `gate_retarget` (undo of
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
extraction (`gate_verdict`, which the pipeline calls too), the look-alike marks (`intake_marks`),
then one replacement detection (`replacement`), read through engine.claims and never through an
extractor: the same one-valued slot with another value (or the opposite negation) over an
overlapping valid interval is an update; disjoint intervals are history; a value that was corrected
away becomes a contradiction of the fact that corrected it. A statement the claim model cannot
relate to a fact (either is free text) is compared with the user's active facts by the configured
embedder (`neighbour_marks`): each neighbour above the measured threshold is a "may replace #N"
question for a person, or, with a ValueJudge, linked only on its "replaces".

A supersession whose new fact starts at or before the old fact's own start is refused
(`refuse_earlier_start`): the old interval cannot be closed before it begins, and both facts would
read as true at a later as-of.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final, Generic, Literal, TypeVar

import numpy as np

from .claims import Claim, read_claim, relation
from .claims.judge import Verdict
from .errors import DuplicateFactError, NotFoundError, StaleSupersessionError, TombstonedError, UserInputError
from .models import KEEP, Candidate, GapKind, Knowledge, Mark, UnsetType, to_jsonable
from .storage.rooms import GateTx
from .storage.sql.tombstones import GateView, LiveEntry
from .text import ValueIndex, value_key
from .timeutil import from_us, to_us

P = TypeVar("P")

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


Interval = tuple[int | None, int | None]
"""A valid interval in µs, None for an open end."""

claim_of = read_claim
"""engine.claims.read_claim (cached there): the one reading of a statement every judgement here uses."""


MAY_REPLACE_SIMILARITY: Final[dict[str, float]] = {"hashing": 0.45, "wordllama": 0.4}
"""Per embedder (its recorded name), the cosine similarity at or above which a free-text
statement's neighbour is asked about ("may replace #N"). Chosen on benchmarks/value_identity.py's
main part (benchmarks/README.md, "Same, replaces or both"), when its free-text replacements
(before the lexicons grew) scored 0.14 to 0.81 with WordLlama: 0.40 marks all but the two lowest,
and a distinct pair marked is a question, a replacement missed is two homes active. Re-chosen
after the lexicons grew by "the highest threshold keeping the same main recall", 0.50 would ask
fewer questions (11 of 45 distinct pairs instead of 15) but the held-out part then lost two of 15
replacements, so the fail-closed 0.40 stays (the held-out has informed this one choice; README says
so). An embedder not listed gets `DEFAULT_MAY_REPLACE_SIMILARITY`; MemoryConfig.may_replace_similarity
overrides both."""

DEFAULT_MAY_REPLACE_SIMILARITY: Final = 0.5


def may_replace_similarity(embedder: str, configured: float | None) -> float:
    """The threshold in force: MemoryConfig.may_replace_similarity when set, else the measured one."""
    if configured is not None:
        return configured
    return MAY_REPLACE_SIMILARITY.get(embedder, DEFAULT_MAY_REPLACE_SIMILARITY)


def overlaps(a: Interval, b: Interval) -> bool:
    """Whether two valid intervals share a moment: disjoint ones are history ("lived in Leeds
    2010-2015", then "lives in York from 2015"), not a replacement."""
    (s1, e1), (s2, e2) = a, b
    return (e1 is None or s2 is None or s2 < e1) and (e2 is None or s1 is None or s1 < e2)


ClaimKey = tuple[str, str, str, bool, frozenset[tuple[str | None, str, bool]], str]


def claim_key(claim: Claim) -> ClaimKey | None:
    """What makes two claims the same: subject, slot, value, negation and what each implies
    ("engaged to Priya" and "married to Priya" name one partner but two marital statuses) and its
    detail: "User lives in Porto with his wife" says more than "User lives in Porto", so it is not
    dropped as its duplicate."""
    if claim.slot is None:
        return None
    implied = frozenset((c.slot, c.value, c.negated) for c in claim.implies)
    return (claim.subject, claim.slot, claim.value, claim.negated, implied, claim.detail)


def replaces(old: Claim, new: Claim) -> bool:
    """engine.claims.relation's "replaces", and one more case: the same claim whose implied claims
    replace each other (married to Priya, after engaged to Priya)."""
    found = relation(old, new)
    if found == "same" and claim_key(old) != claim_key(new):
        return any(relation(x, y) == "replaces" for x in old.implies for y in new.implies if x.slot == y.slot)
    return found == "replaces"


class ClaimIndex(Generic[P]):
    """Claims the slot lexicons read, each with a payload: the same claim by a dict; for
    replacements, each claim (and what it implies: "married to Sam" implies married) under its
    slot, value and negation, and under its slot alone when that slot holds one value. A lookup
    reads only the entries that can be replaced (the same value negated, or the one value of a
    one-valued slot), so a user with 20,000 hobbies costs no more than one with five. Free-text claims are not indexed:
    their sameness is the canonical text's (`ValueIndex`) and their neighbours the embedder's."""

    def __init__(self) -> None:
        self._same: dict[ClaimKey, list[P]] = {}
        self._by_value: dict[tuple[str, str, str, bool], list[tuple[int, Claim, P]]] = {}
        self._by_slot: dict[tuple[str, str], list[tuple[int, Claim, P]]] = {}
        self._count = 0

    def add(self, statement: str, payload: P, claim: Claim | None = None) -> None:
        claim = claim or claim_of(statement)
        key = claim_key(claim)
        if key is None:
            return
        self._same.setdefault(key, []).append(payload)
        self._count += 1
        entry = (self._count, claim, payload)
        for part in (claim, *claim.implies):
            if part.slot is None:
                continue
            self._by_value.setdefault((claim.subject, part.slot, part.value, part.negated), []).append(entry)
            if part.cardinality == "one":
                self._by_slot.setdefault((claim.subject, part.slot), []).append(entry)

    def same(self, claim: Claim, skip: Callable[[P], bool] | None = None) -> P | None:
        """The first entry making the identical claim, or None."""
        key = claim_key(claim)
        if key is None:
            return None
        for payload in self._same.get(key, ()):
            if skip is None or not skip(payload):
                return payload
        return None

    def replaced(self, claim: Claim) -> list[P]:
        """The entries this claim would replace (`replaces`), newest first."""
        if claim.slot is None:
            return []
        found: dict[int, tuple[Claim, P]] = {}
        for part in (claim, *claim.implies):
            if part.slot is None:
                continue
            # the same value negated ("not vegan" after "vegan"); the same value with the same
            # negation only where implied claims can differ ("married to" after "engaged to")
            flips = [not part.negated, part.negated] if claim.implies else [not part.negated]
            for negated in flips:
                for seq, old, payload in self._by_value.get((claim.subject, part.slot, part.value, negated), ()):
                    found[seq] = (old, payload)
            for seq, old, payload in self._by_slot.get((claim.subject, part.slot), ()):
                found[seq] = (old, payload)
        return [payload for _, (old, payload) in sorted(found.items(), reverse=True) if replaces(old, claim)]


def marks_note(marks: tuple[Mark, ...]) -> str | None:
    """Marks as one audit note ("looks like fact #12; near a rejected value, tombstone #3"), or None.
    By id, as every audit row names what it touches, not with a copy of the other statement: that
    is one lookup away, and an import of near neighbours wrote more than one copy of another
    statement a fact, each read again by the credential guard (benchmarks/import_scale.py: 182,290
    marks for 120,000 facts). The marks a caller gets back (`AddedFacts.marked`) keep the text."""
    return "; ".join(m.reference for m in marks) or None


def looks_like(entity: str, ident: int, statement: str) -> Mark:
    what = "fact" if entity == "knowledge" else entity
    return Mark("looks_like", ident, f"looks like {what} #{ident}: {statement}")


def near_tombstone(ident: int, statement: str) -> Mark:
    return Mark("near_tombstone", ident, f"near a rejected value, tombstone #{ident}: {statement}")


def may_replace(ident: int, statement: str, why: str = "") -> Mark:
    return Mark("may_replace", ident, f"may replace fact #{ident}: {statement}" + (f" ({why})" if why else ""))


class Admission:
    """I1 and I2 for one user inside one write transaction: the user's live tombstones and the
    values of its active facts, read once (after the user's lock), then kept up to date as facts
    are admitted, so a batch checks each fact against the ones before it too. One value is the
    identical canonical text (engine.text) or the identical claim (engine.claims); a look-alike is
    only a mark (`marks`).

    An import keeps one Admission over all its transactions (`refresh` reads only what others
    wrote since); a fact added here before its id is known is indexed under a placeholder id, which
    `settle_ids` resolves."""

    def __init__(self, tx: GateTx, user_id: str, rows: list[tuple[str, int, str, str]]) -> None:
        self._tx = tx
        self.user_id = user_id
        self._stones: ValueIndex[tuple[int, str]] = ValueIndex()
        self._values: ValueIndex[tuple[int, str]] = ValueIndex()
        self._stone_claims: ClaimIndex[tuple[int, str]] = ClaimIndex()
        self._claims: ClaimIndex[tuple[int, str]] = ClaimIndex()
        self._ended: set[int] = set()
        """Facts that stopped being active in this transaction: passed over, not re-indexed."""
        self._lifted: set[int] = set()
        self._real: dict[int, int] = {}
        self._seen = {"knowledge": 0, "tombstone": 0}
        self._own: set[int] = set()
        self._take(rows)

    def _take(self, rows: list[tuple[str, int, str, str]]) -> None:
        for entity, ident, key, text in rows:
            self._seen[entity] = max(self._seen[entity], ident)
            if entity == "tombstone":
                self._stones.add(key, (ident, text))
                self._stone_claims.add(text, (ident, text))
            elif ident not in self._own:
                self._values.add(key, (ident, text))
                self._claims.add(text, (ident, text))

    @classmethod
    async def read(cls, tx: GateTx, user_id: str) -> Admission:
        await tx.lock_user(user_id)
        return cls(tx, user_id, await tx.admission_rows(user_id))

    async def refresh(self, tx: GateTx) -> None:
        """Take the next transaction of a long import: lock the user again and index what other
        writers added since (facts and tombstones with newer ids); what they ended or lifted is
        verified on a hit (`verified`)."""
        self._tx = tx
        await tx.lock_user(self.user_id)
        self._take(await tx.admission_rows(self.user_id, after=(self._seen["knowledge"], self._seen["tombstone"])))

    def settle_ids(self, placeholders: dict[int, int]) -> None:
        """Facts admitted under placeholder ids were written: their real ids."""
        self._real.update(placeholders)
        self._own.update(placeholders.values())

    def named(self, error: UserInputError) -> UserInputError:
        """`error` naming the fact it duplicates by its real id (a fact admitted earlier in the same
        import was known by a placeholder when the error was made)."""
        if isinstance(error, DuplicateFactError) and error.knowledge_id in self._real:
            return DuplicateFactError(self._real[error.knowledge_id], error.statement)
        return error

    def resolved(self, marks: tuple[Mark, ...]) -> tuple[Mark, ...]:
        """`marks` naming facts of this import by their real ids (see `named`)."""
        out = []
        for mark in marks:
            real = self._real.get(mark.target_id) if mark.kind != "near_tombstone" else None
            if real is not None:
                mark = Mark(mark.kind, real, mark.note.replace(f"#{mark.target_id}", f"#{real}", 1))
            out.append(mark)
        return tuple(out)

    def _id(self, found: tuple[int, str]) -> tuple[int, str]:
        return (self._real.get(found[0], found[0]), found[1])

    def tombstone(self, statement: str) -> tuple[int, str] | None:
        """(id, statement) of the live tombstone that blocks this value (the same text or the
        same claim), if any."""
        skip = (lambda stone: stone[0] in self._lifted) if self._lifted else None
        found = self._stones.find(value_key(statement), skip) or self._stone_claims.same(claim_of(statement), skip)
        return found

    def holder(self, statement: str, excluding: Collection[int] = (), *, claims: bool = True) -> tuple[int, str] | None:
        """(id, statement) of an active fact holding this value (the same text or, with `claims`,
        the same claim), other than those in `excluding`."""
        passed = self._ended.union(excluding)
        skip = (lambda fact: self._real.get(fact[0], fact[0]) in passed) if passed else None
        found = self._values.find(value_key(statement), skip)
        if found is None and claims:
            found = self._claims.same(claim_of(statement), skip)
        return self._id(found) if found is not None else None

    def refusal(self, statement: str, excluding: Collection[int] = (), *, claims: bool = True) -> UserInputError | None:
        """The error that keeps I1 or I2 for a fact holding `statement` becoming active, or None.
        `claims=False` (an import): a fact is a duplicate only by its canonical text; the same
        claim in other words is a mark (`marks`), because the lexicons read "User owns a horse
        since 2003 (note 5)" as the claim of "User owns a horse", and an import must lose nothing.
        A tombstone refuses the same claim either way: a rejected value stays rejected."""
        stone = self.tombstone(statement)
        if stone is not None:
            return TombstonedError(stone[0], stone[1])
        same = self.holder(statement, excluding, claims=claims)
        if same is not None:
            return DuplicateFactError(same[0], same[1])
        return None

    async def verified(self, statement: str) -> UserInputError | None:
        """`refusal` as an import asks it (`claims=False`), each hit checked against the database
        first (an import's later transaction: another writer may have ended the fact or lifted the
        tombstone since it was indexed)."""
        while (error := self.refusal(statement, claims=False)) is not None:
            if isinstance(error, TombstonedError):
                if (await self._tx.get_tombstone(self.user_id, error.tombstone_id)).lifted_at is None:
                    return error
                self._lifted.add(error.tombstone_id)
            else:
                assert isinstance(error, DuplicateFactError)
                try:
                    if (await self._tx.get_knowledge(self.user_id, error.knowledge_id)).status == "active":
                        return error
                except NotFoundError:
                    pass
                self._ended.add(error.knowledge_id)
        return None

    def marks(self, statement: str, excluding: Collection[int] = (), *, claims: bool = True) -> tuple[Mark, ...]:
        """What a person should know about a value that passes I1 and I2: the active fact it looks
        like (one edit apart, engine.text), the live tombstone it is near, the facts its claim may
        replace (an import states what is true, so they are marks, not links; `claims=False` for a
        caller that related the claim itself, valid times included)."""
        key = value_key(statement)
        passed = self._ended.union(excluding)
        skip = (lambda f: self._real.get(f[0], f[0]) in passed) if passed else None
        out: list[Mark] = []
        fact = self._values.near(key, skip)
        if fact is not None:
            out.append(looks_like("knowledge", *self._id(fact)))
        said = self._claims.same(claim_of(statement), skip)
        if said is not None and self._values.find(key, skip) is None:
            ident, text = self._id(said)
            out.append(Mark("looks_like", ident, f"says the same as fact #{ident} (the same claim): {text}"))
        stone = self._stones.near(key, (lambda t: t[0] in self._lifted) if self._lifted else None)
        if stone is not None:
            out.append(near_tombstone(*stone))
        for old in self._claims.replaced(claim_of(statement)) if claims else ():
            ident, text = self._id(old)
            if ident not in passed:
                out.append(may_replace(ident, text, "the same one-valued slot"))
                break
        return tuple(out)

    def check(self, statement: str, excluding: Collection[int] = ()) -> None:
        error = self.refusal(statement, excluding)
        if error is not None:
            raise error

    def admitted(self, fact_id: int, statement: str) -> None:
        """A fact was made active in this transaction: later checks see it."""
        self._values.add(value_key(statement), (fact_id, statement))
        self._claims.add(statement, (fact_id, statement))
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
            self._lifted.add(stone[0])


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
    if ending is not None and end_reason != "corrected":
        refuse_earlier_start(ending, valid_at)
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


def refuse_earlier_start(old: Knowledge, new_start: int | None) -> None:
    """A supersession whose new fact starts at or before the fact it replaces would leave both
    true at a later as-of (the old interval cannot be closed before it begins): refused, with what
    to do instead."""
    old_start = to_us(old.valid_at)
    if new_start is not None and old_start is not None and new_start <= old_start:
        raise UserInputError(
            f"fact {old.id} starts at {from_us(old_start):%Y-%m-%d %H:%M}; a fact that replaces it must start"
            f" after that (this one starts at {from_us(new_start):%Y-%m-%d %H:%M}): give a later start, keep both,"
            " or correct it if it was never true"
        )


async def point_pending_at(tx: GateTx, fact: Knowledge, at_us: int, deciding: int | None) -> None:
    """I5 (module docstring): the user's pending candidates that replace nothing and would replace
    `fact` become its update (a person, or a policy naming that kind, decides). `deciding`, the
    candidate this fact comes from, is being decided and is left alone."""
    if claim_of(fact.statement).slot is None:
        return  # free text: nothing is its update by rule (an equal value is the duplicate gate's)
    for cid, statement in await tx.untargeted_pending(fact.user_id):
        if cid == deciding:
            continue
        kind = _would_replace(statement, fact.statement)
        if kind is not None:
            await _retarget(tx, await tx.get_candidate(cid), kind, fact.id, at_us)


async def requeued(tx: GateTx, cand: Candidate, at_us: int) -> Candidate:
    """I5 for a candidate back in the queue (an undone decision): when it replaces nothing and
    would replace one of the user's active facts now, it becomes that fact's update, audited as
    `gate_retarget`. Returns the candidate as it is now."""
    if cand.status != "pending" or cand.kind not in ("new", "proposed") or cand.supersedes_id is not None:
        return cand
    if cand.supersedes_candidate_id is not None or claim_of(cand.statement).slot is None:
        return cand
    view = await tx.gate_view(cand.user_id, whole=False)
    for fid, statement in reversed(view.facts):
        kind = _would_replace(cand.statement, statement)
        if kind is not None:
            await _retarget(tx, cand, kind, fid, at_us)
            return await tx.get_candidate(cand.id)
    return cand


def _would_replace(statement: str, fact_statement: str) -> str | None:
    """ "update" when `statement` would replace that one fact (the value model's `relation`, the
    same `replacement` applies at intake), else None."""
    return "update" if replaces(claim_of(fact_statement), claim_of(statement)) else None


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


def _live_claims(view: GateView) -> tuple[ClaimIndex[LiveEntry], ClaimIndex[LiveEntry]]:
    """The claims of the view's live entries and of its tombstones, read once per view (kept up to
    date by `joined`)."""
    found = view.derived.get("claims")
    if found is None:
        live: ClaimIndex[LiveEntry] = ClaimIndex()
        for entry in view.live.payloads():
            live.add(entry[2], entry)
        stones: ClaimIndex[LiveEntry] = ClaimIndex()
        for entry in view.tombstones.payloads():
            stones.add(entry[2], entry)
        found = view.derived["claims"] = (live, stones)
    return found


def joined(view: GateView, entity: str, ident: int, statement: str) -> None:
    """A statement joined the queue (or the facts) during this view's pass: later statements of
    the same pass compare against it too."""
    entry: LiveEntry = (entity, ident, statement)
    view.live.add(value_key(statement), entry)
    if "claims" in view.derived:
        _live_claims(view)[0].add(statement, entry)


def gate_verdict(view: GateView, statement: str) -> tuple[Literal["tombstoned", "duplicate"], LiveEntry] | None:
    """The two value gates every way into the queue passes (extraction included): a live tombstone
    of the user blocks the value; an active fact or pending candidate holding it makes it a
    duplicate. One value is the identical canonical text or the identical claim, nothing looser
    (a look-alike is a mark: `intake_marks`). None when it passes both."""
    key = value_key(statement)
    claim = claim_of(statement)
    live, stones = _live_claims(view)
    stone = view.tombstones.find(key) or stones.same(claim)
    if stone is not None:
        return "tombstoned", stone
    dup = view.live.find(key) or live.same(claim)
    if dup is not None:
        return "duplicate", dup
    return None


def intake_marks(view: GateView, statement: str) -> tuple[Mark, ...]:
    """The look-alike marks of a statement that passed `gate_verdict`: the fact or pending
    candidate it looks like (one edit, engine.text), the live tombstone it is near."""
    key = value_key(statement)
    out: list[Mark] = []
    alike = view.live.near(key)
    if alike is not None:
        out.append(looks_like(*alike))
    stone = view.tombstones.near(key)
    if stone is not None:
        out.append(near_tombstone(stone[1], stone[2]))
    return tuple(out)


def corrected_target(view: GateView, statement: str) -> int | None:
    """The active fact that corrected this value away, when the value is one a correction ended:
    such a statement is queued as a contradiction of that fact, so approving it asks the question."""
    hit = view.corrected.find(value_key(statement))
    return hit[0] if hit is not None else None


def replacement(
    view: GateView, statement: str, valid: Interval = (None, None), claim: Claim | None = None
) -> tuple[GapKind, int | None]:
    """One replacement detection for a statement someone wrote: the newest active fact whose claim
    this one replaces (`relation`: the same one-valued slot, another value or the opposite
    negation) over an overlapping valid interval is its update; else a value that was corrected
    away is a contradiction of the fact that corrected it; else new. Free text (no slot) is never
    linked here: `neighbour_marks` asks a person. `claim`: the statement's claim when its source
    named a slot too (engine.claims.claim_for: an LLM extractor's `slot`)."""
    live, _ = _live_claims(view)
    for entity, ident, _text in live.replaced(claim or claim_of(statement)):
        if (
            entity == "knowledge"
            and ident in view.active_ids
            and overlaps(valid, view.intervals.get(ident, (None, None)))
        ):
            return "update", ident
    corrected = corrected_target(view, statement)
    if corrected is not None:
        return "contradiction", corrected
    return "new", None


async def nearest_facts(
    tx: GateTx, user_id: str, statement: str, embedding: list[float] | None, similarity: float, limit: int = 3
) -> list[tuple[int, str]]:
    """(id, statement) of the user's active facts nearest a statement by the configured embedder,
    at or above cosine `similarity`, nearest first, that the claim model cannot relate to it (one
    of the two is free text: `relation` "unknown"); two claims it reads are its to relate."""
    if embedding is None:
        return []
    near = await tx.vector_arm(
        user_id, embedding, limit, at_time=None, known_at=None, include_expired=False, max_distance=1.0 - similarity
    )
    return unrelatable(statement, [(fid, (await tx.get_knowledge(user_id, fid)).statement) for fid in near])


def unrelatable(statement: str, near: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The neighbours whose claims the claim model cannot relate to `statement`'s (`relation`
    "unknown": one of the two is free text): the only ones an embedder's nearness may question."""
    claim = claim_of(statement)
    return [(fid, text) for fid, text in near if relation(claim_of(text), claim) == "unknown"]


Nearest = tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]
"""Each row's nearest columns and their similarities (two arrays of one shape)."""


def nearest_rows(found: Nearest | None, rows: list[int]) -> Nearest | None:
    """`found` for the given rows only (an import's kept statements of a batch), in that order."""
    return None if found is None else (found[0][rows], found[1][rows])


class ImportNeighbours:
    """`nearest_facts` for an import: the user's active facts' vectors read once (`read`), each
    batch compared with them and with the statements of the call before it in one matrix product,
    and then added. A statement's three nearest facts at or above `similarity` that the claim model
    cannot relate to it become "may replace #N" marks, as `neighbour_marks` makes them without a
    judge (an import never links). Facts of this call are named by their placeholder ids until
    `Admission.resolved` names them. What other writers add or end between an import's
    transactions is not seen here (a mark is a question, not a decision).

    Linear in the import for a user of a given size: a batch costs one product with what is
    already indexed (numpy, tens of milliseconds for 1,000 statements against 20,000 facts), where
    one nearest-neighbour query a statement scanned the user's vectors once each."""

    LIMIT: Final = 3

    def __init__(self, similarity: float) -> None:
        self.similarity = similarity
        self._ids: list[int] = []
        self._texts: list[str] = []
        self._matrix: np.ndarray[Any, np.dtype[np.float32]] | None = None
        self._size = 0

    @classmethod
    async def read(cls, tx: GateTx, user_id: str, similarity: float) -> ImportNeighbours:
        out = cls(similarity)
        rows = await tx.active_vectors(user_id)
        if rows:
            widths = {len(raw) for _, _, raw in rows}
            if len(widths) == 1:  # vectors of several widths: a reembed is half done; compare none
                matrix = np.frombuffer(b"".join(raw for _, _, raw in rows), dtype="<f4").reshape(len(rows), -1)
                out._add([ident for ident, _, _ in rows], [text for _, text, _ in rows], matrix)
        return out

    def _add(self, ids: list[int], texts: list[str], rows: np.ndarray[Any, Any]) -> None:
        rows = _unit(rows)
        if self._matrix is None or self._matrix.shape[1] != rows.shape[1]:
            if self._matrix is not None and self._size:
                return  # another width than the indexed vectors: not comparable
            self._matrix = np.empty((max(1024, 2 * len(rows)), rows.shape[1]), dtype=np.float32)
        need = self._size + len(rows)
        if need > len(self._matrix):  # doubling: each vector is copied a bounded number of times
            grown = np.empty((max(need, 2 * len(self._matrix)), self._matrix.shape[1]), dtype=np.float32)
            grown[: self._size] = self._matrix[: self._size]
            self._matrix = grown
        self._matrix[self._size : need] = rows
        self._size = need
        self._ids.extend(ids)
        self._texts.extend(texts)

    def indexed(self, vectors: np.ndarray[Any, Any]) -> Nearest | None:
        """Each of `vectors`' rows' nearest LIMIT indexed facts, or None when none is comparable.
        Numbers only: an import asks it in a worker thread, where numpy's product and argmax passes
        run beside the checks of the same batch, when the product is large (`worth_a_thread`); the
        index does not grow until `marks` is called."""
        size = self._size if self._matrix is not None and self._matrix.shape[1] == vectors.shape[1] else 0
        if not size or self._matrix is None or not len(vectors):
            return None
        return _nearest(_unit(vectors) @ self._matrix[:size].T, self.LIMIT, 0)

    def worth_a_thread(self, rows: int) -> bool:
        """Whether `indexed` for `rows` statements is long enough (a million products or more) to
        pay for a thread's hand-over."""
        return rows * self._size >= 1_000_000

    def marks(
        self,
        rows: list[tuple[int, str]],
        vectors: np.ndarray[Any, Any],
        skip: list[Collection[int]],
        indexed: Nearest | UnsetType | None = KEEP,
    ) -> list[tuple[Mark, ...]]:
        """For each row (id or placeholder, statement) with its vector (`vectors`' row), in order,
        its "may replace" marks against the indexed facts and the rows before it; `skip[i]`: facts
        row i is already marked as looking like; `indexed`: what `indexed(vectors)` answered, when
        the caller asked it ahead (KEEP: asked here). The rows are indexed afterwards."""
        if not rows:
            return []
        batch = _unit(vectors)
        size = self._size if self._matrix is not None and self._matrix.shape[1] == batch.shape[1] else 0
        # each row's nearest among the indexed facts, and among the rows before it (a strictly lower
        # triangle), then the nearest LIMIT of both: all rows at once, no Python loop over pairs
        parts: list[Nearest] = []
        ahead = self.indexed(vectors) if isinstance(indexed, UnsetType) else indexed
        if ahead is not None:
            parts.append(ahead)
        within = batch @ batch.T
        within[np.triu_indices(len(rows))] = -np.inf
        parts.append(_nearest(within, self.LIMIT, size))
        where = np.concatenate([p[0] for p in parts], axis=1)
        sims = np.concatenate([p[1] for p in parts], axis=1)
        order = np.argsort(-sims, axis=1, kind="stable")[:, : self.LIMIT]
        where, sims = np.take_along_axis(where, order, axis=1), np.take_along_axis(sims, order, axis=1)
        out: list[tuple[Mark, ...]] = [()] * len(rows)
        for i in np.nonzero(sims[:, 0] >= self.similarity)[0].tolist():
            near = [
                (self._ids[at], self._texts[at]) if at < size else (rows[at - size][0], rows[at - size][1])
                for at, sim in zip(where[i].tolist(), sims[i].tolist(), strict=True)
                if sim >= self.similarity
            ]
            # the rest is `nearest_facts`' and `judged`'s, as on every other way in (no judge here)
            _, out[i] = judged(unrelatable(rows[i][1], near), skip[i])
        self._add([ident for ident, _ in rows], [text for _, text in rows], batch)
        return out


def _nearest(sims: np.ndarray[Any, Any], k: int, offset: int) -> Nearest:
    """Each row's k highest columns (fewer when there are fewer) as (column + offset, similarity).
    `sims` is used up (its maxima are overwritten): callers pass a product made for the call."""
    if sims.shape[1] <= k:
        cols = np.broadcast_to(np.arange(sims.shape[1]), sims.shape)
        return cols + offset, np.take_along_axis(sims, cols, axis=1)
    # k passes of argmax, each maximum then put out of the way: a vectorised reduction, three
    # times as fast as partitioning every row for a k of 3 (1,000 x 19,000: 13 ms, not 37)
    rows = np.arange(sims.shape[0])
    cols = np.empty((sims.shape[0], k), dtype=np.intp)
    values = np.empty((sims.shape[0], k), dtype=sims.dtype)
    for j in range(k):
        best = np.argmax(sims, axis=1)
        cols[:, j] = best
        values[:, j] = sims[rows, best]
        sims[rows, best] = -np.inf
    return cols + offset, values


def _unit(rows: np.ndarray[Any, Any]) -> np.ndarray[Any, np.dtype[np.float32]]:
    """Rows scaled to length 1 (a zero row stays zero), as float32: dot products are cosines."""
    rows = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    scaled: np.ndarray[Any, np.dtype[np.float32]] = (rows / np.where(norms == 0.0, 1.0, norms)).astype(np.float32)
    return scaled


async def neighbour_marks(
    tx: GateTx,
    user_id: str,
    statement: str,
    embedding: list[float] | None,
    similarity: float,
    *,
    skip: Collection[int] = (),
    verdicts: Mapping[int, Verdict] | None = None,
) -> tuple[int | None, tuple[Mark, ...]]:
    """A free-text statement against its nearest active facts (`nearest_facts`): without a judge
    each neighbour is a "may replace #N" question for a person, never a link. With `verdicts`
    (a ValueJudge's answers, asked before the transaction): "replaces" links (the first such
    neighbour is returned as the target), "same" is a look-alike mark ("the judge reads it as the
    same as #N"), "both" leaves the neighbour alone, "unsure" or no answer stays a "may replace"
    mark. Returns (target or None, marks)."""
    return judged(await nearest_facts(tx, user_id, statement, embedding, similarity), skip, verdicts)


def judged(
    near: list[tuple[int, str]], skip: Collection[int] = (), verdicts: Mapping[int, Verdict] | None = None
) -> tuple[int | None, tuple[Mark, ...]]:
    """`neighbour_marks`' rule over neighbours already found (the pipeline finds an LLM
    extraction's neighbours before its write transaction)."""
    target: int | None = None
    out: list[Mark] = []
    for fid, text in near:
        if fid in skip:
            continue
        verdict = (verdicts or {}).get(fid)
        if verdict is None or verdict.verdict == "unsure":
            why = verdict.note if verdict is not None and verdict.note else "similar wording"
            out.append(may_replace(fid, text, why))
        elif verdict.verdict == "replaces" and target is None:
            target = fid
        elif verdict.verdict == "same":
            out.append(Mark("looks_like", fid, f"the judge reads it as the same as fact #{fid}: {text}"))
    return target, tuple(out)


@dataclass(frozen=True, slots=True)
class Screened:
    """What the intake decided for one statement: queue it (kind, supersedes_id, marks), or it
    duplicates something already there (duplicate_of: the same value)."""

    kind: str = "new"
    supersedes_id: int | None = None
    duplicate_of: tuple[str, int] | None = None
    marks: tuple[Mark, ...] = ()


async def screen(
    tx: GateTx,
    user_id: str,
    statement: str,
    *,
    kind: str = "new",
    detect: bool = True,
    valid: Interval = (None, None),
    embedding: list[float] | None = None,
    similarity: float | None = None,
    verdicts: Mapping[int, Verdict] | None = None,
) -> Screened:
    """The intake of one written statement, under the user's lock: TombstonedError for a value a
    tombstone blocks (the same text or claim); `duplicate_of` for a value an active fact or a
    pending candidate already holds; otherwise the kind and target it is queued with (with
    `detect`, the fact it would replace: a `new` statement becomes an update of it) and its marks
    (look-alikes, and with `embedding` and `similarity` the facts free text may replace; with a
    judge's `verdicts` on those neighbours, its "replaces" links: `neighbour_marks`)."""
    await tx.lock_user(user_id)
    view = await tx.gate_view(user_id, whole=False)
    verdict = gate_verdict(view, statement)
    if verdict is not None:
        gate, (entity, ident, text) = verdict
        if gate == "tombstoned":
            raise TombstonedError(ident, text)
        return Screened(duplicate_of=(entity, ident))
    marks = intake_marks(view, statement)
    if not detect:
        return Screened(kind=kind, marks=marks)
    found, target = replacement(view, statement, valid)
    if found in ("update", "contradiction"):
        # an agent's proposal keeps its kind (what it is counts against the agents' limit) and names
        # the fact it would replace; either way approving it asks supersede, correct or keep both
        return Screened(kind=found if kind == "new" else kind, supersedes_id=target, marks=marks)
    if similarity is not None:
        marked = {m.target_id for m in marks if m.kind == "looks_like"}
        linked, more = await neighbour_marks(
            tx, user_id, statement, embedding, similarity, skip=marked, verdicts=verdicts
        )
        marks += more
        if linked is not None:  # a judge's "replaces": a link, as the claim model's would be
            return Screened(kind="update" if kind == "new" else kind, supersedes_id=linked, marks=marks)
    return Screened(kind=kind, marks=marks)


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

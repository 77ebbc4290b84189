"""The knowledge operations support teams and agents use on facts, outside the review queue:
trusted injection, correction, retraction, supersession, tombstones, agents' proposals and
requests to forget, and the reads of facts and their history (`KnowledgeOps`, mixed into
`Memory`, working only through the engine context).

A retraction is reached three ways (a support person's `retract`, a reviewer approving an agent's
retraction request, a second reviewer overturning an approval); all three write the same rows and
audit rows through `retract_in`, inside the caller's transaction.

Scope: every call that names a fact also names its user; an id that belongs to another user is
reported exactly like an unknown id (NotFoundError), so a caller cannot even learn it exists.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Literal

from .blind import blind_spots
from .claims.judge import Verdict
from .collector import fewer_collections
from .context import EngineContext
from .credentials import refuse_credentials
from .embedders import embed_matrix
from .errors import (
    DuplicateCandidateError,
    InvalidStatementError,
    NotFoundError,
    SettleRequiredError,
    StaleSupersessionError,
    UserInputError,
)
from .gate import (
    Admission,
    EndReason,
    ImportNeighbours,
    activate,
    gate_verdict,
    marks_note,
    may_replace_similarity,
    nearest_facts,
    nearest_rows,
    neighbour_marks,
    refuse_earlier_start,
    replacement,
    screen,
)
from .limits import check_reason, check_statement, check_unicode
from .models import (
    KEEP,
    AddedFact,
    AddedFacts,
    AuditEvent,
    Episode,
    EpisodeYield,
    Knowledge,
    Mark,
    ProposalOutcome,
    Tombstone,
    UnsetType,
)
from .stated import candidate_stated_at
from .storage.rooms import GateTx, KnowledgeTx, Rooms
from .storage.sql.knowledge import Vector
from .storage.sql.policies import SAMPLED, UNSAMPLED
from .storage.sql.queue import QueueOps
from .text import ValueIndex, value_key
from .timeutil import check_interval, from_us, to_us

Settle = Literal["supersede", "correct", "keep_both"]
"""How a fact added directly relates to the active fact it would replace: the world changed
(supersede), the old one was never true (correct), or both hold (keep_both)."""

_DRAWS = (SAMPLED, UNSAMPLED)
"""The audit actions of a second-review draw (engine/storage/sql/policies.py)."""
_KNOWLEDGE_FIELDS = tuple(f.name for f in fields(Knowledge))


async def retract_in(
    tx: GateTx,
    fact: Knowledge,
    actor: str,
    reason: str,
    tombstone: bool,
    now_us: int,
    candidate_id: int | None = None,
    note: str | None = None,
) -> None:
    """End `fact` as retracted (audited), and by default tombstone its value so that extraction
    does not bring it back (audited too)."""
    await tx.end_knowledge(fact.id, status="retracted", expired_at=now_us, end_reason=reason)
    await tx.audit(
        at=now_us,
        actor=actor,
        action="retract",
        user_id=fact.user_id,
        entity="knowledge",
        entity_id=fact.id,
        before=fact,
        after=await tx.get_knowledge(fact.user_id, fact.id),
        reason=reason,
        note=note,
    )
    if tombstone:
        await tombstone_in(tx, fact, actor, reason, now_us, candidate_id=candidate_id, note=note)


async def tombstone_in(
    tx: GateTx,
    fact: Knowledge,
    actor: str,
    reason: str,
    now_us: int,
    candidate_id: int | None = None,
    note: str | None = None,
) -> Tombstone:
    """Tombstone an ended fact's value for its user (audited), so nothing brings it back unasked."""
    return await write_tombstone(
        tx,
        fact.user_id,
        fact.statement,
        actor,
        reason,
        now_us,
        knowledge_id=fact.id,
        candidate_id=candidate_id,
        note=note,
    )


async def write_tombstone(
    tx: GateTx,
    user_id: str,
    statement: str,
    actor: str,
    reason: str,
    now_us: int,
    *,
    knowledge_id: int | None = None,
    candidate_id: int | None = None,
    note: str | None = None,
) -> Tombstone:
    """One tombstone and its audit row: a rejection's, a retraction's, a sure correction's."""
    tid = await tx.insert_tombstone(
        user_id=user_id,
        statement=statement,
        reason=reason,
        created_by=actor,
        created_at=now_us,
        knowledge_id=knowledge_id,
        candidate_id=candidate_id,
    )
    stone = await tx.get_tombstone(user_id, tid)
    await tx.audit(
        at=now_us,
        actor=actor,
        action="create",
        user_id=user_id,
        entity="tombstone",
        entity_id=tid,
        after=stone,
        reason=reason,
        note=note,
    )
    return stone


async def queue_in(tx: QueueOps, **fields: Any) -> int:
    """Insert one pending candidate and its `queue` audit row (by its creator, with its reason), in
    the caller's transaction: the one way a written statement joins the queue after the intake."""
    cid = await tx.insert_candidate(**fields)
    await tx.audit(
        at=fields["created_at"],
        actor=fields["created_by"],
        action="queue",
        user_id=fields["user_id"],
        entity="candidate",
        entity_id=cid,
        after=await tx.get_candidate(cid),
        reason=fields.get("reason"),
    )
    return cid


@dataclass(frozen=True, slots=True)
class NewFact:
    """One fact for `Memory.add_knowledge_many`."""

    statement: str
    valid_at: datetime | None = None
    invalid_at: datetime | None = None
    confidence: float = 1.0


class KnowledgeOps:
    """Operations on facts; the class that mixes this in provides `ctx` (an EngineContext)."""

    @property
    def _store(self) -> Rooms[KnowledgeTx]:
        """The store, seen through the rooms this service may touch (engine/storage/rooms.py)."""
        return self.ctx.store

    ctx: EngineContext

    async def _verdicts(self, user_id: str, statement: str, embedding: list[float]) -> dict[int, Verdict]:
        """With a ValueJudge configured: its answers on a free-text statement's nearest facts,
        asked BEFORE the write transaction (a model call never holds the user's lock); the gate
        reads the neighbours again inside it, and a fact the judge did not see is only marked."""
        judge = self.ctx.judge
        if judge is None:
            return {}
        async with self._store.reading() as tx:
            near = await nearest_facts(tx, user_id, statement, embedding, self._similarity())
        if not near:
            return {}
        return {v.neighbour_id: v for v in await judge.judge(statement, near)}

    def _similarity(self) -> float:
        """The "may replace" threshold in force for this Memory's embedder (engine.gate)."""
        name = str(getattr(self.ctx.embedder, "name", "") or "")
        return may_replace_similarity(name, self.ctx.config.may_replace_similarity)

    async def add_knowledge(
        self,
        user_id: str,
        statement: str,
        actor: str,
        valid_at: datetime | None = None,
        invalid_at: datetime | None = None,
        *,
        confidence: float = 1.0,
        reason: str | None = None,
        settle: Settle | None = None,
        lift_tombstone: bool = False,
    ) -> AddedFact:
        """Trusted injection: straight to an active fact, no queue; audited as `inject`. It passes
        the one gate (engine.gate): a tombstoned value is refused (TombstonedError; or lifted with
        `lift_tombstone=True`), a value an active fact holds (the same text or the same claim) is
        refused (DuplicateFactError), and a statement that replaces an active fact (the value
        model: the same one-valued slot, another value, overlapping valid times) is refused with
        SettleRequiredError until the caller says how it relates: `settle="supersede"` (the world
        changed), `"correct"` (the old fact was never true) or `"keep_both"`.

        A look-alike (one edit from an active fact, or near a tombstone) or a free-text statement
        close to an active fact is added all the same: the caller is trusted and the value differs.
        What the gate noticed comes back as the returned fact's `marks` and is written in the
        `inject` audit row's note, so the caller (and `memdesk add`) can show "looks like #12"."""
        text = check_statement(_statement(statement), self.ctx.config)
        uid = _user(user_id)
        if reason is not None:
            check_reason(reason, self.ctx.config)
        start, end = check_interval(valid_at, invalid_at)
        [embedding] = await self.ctx.embedder.embed([text])
        verdicts = await self._verdicts(uid, text, embedding)
        now_us: int = to_us(self.ctx.now())
        async with self._store.transaction() as tx:
            admission = await Admission.read(tx, uid)
            old: Knowledge | None = None
            end_reason: EndReason | None = None
            view = await tx.gate_view(uid, whole=False)
            # no start of its own: it holds from now, for the overlap test (an ended fact is history)
            kind, target = replacement(view, text, (start if start is not None else now_us, end))
            marks: tuple[Mark, ...] = ()
            if target is None:
                linked, marks = await neighbour_marks(tx, uid, text, embedding, self._similarity(), verdicts=verdicts)
                kind, target = ("update", linked) if linked is not None else (kind, None)
            if kind in ("update", "contradiction") and target is not None:
                if settle is None:
                    fact = await tx.get_knowledge(uid, target)
                    raise SettleRequiredError(fact.id, fact.statement)
                if settle != "keep_both":
                    old = await tx.get_knowledge(uid, target)
                    end_reason = "corrected" if settle == "correct" else "superseded"
            alike = admission.marks(text, {target} if target is not None else (), claims=False)
            looked = {m.target_id for m in alike if m.kind == "looks_like"}
            marks = alike + tuple(m for m in marks if not (m.kind == "may_replace" and m.target_id in looked))
            made = await activate(
                tx,
                user_id=uid,
                statement=text,
                embedding=embedding,
                actor=actor,
                at_us=now_us,
                valid_at=start,
                invalid_at=end,
                confidence=confidence,
                action="inject",
                reason=reason,
                replaces=old,
                end_reason=end_reason,
                lift_tombstone=lift_tombstone,
                admission=admission,
                note=marks_note(marks),
            )
            return AddedFact.of(made, marks)

    async def add_knowledge_many(
        self,
        user_id: str,
        facts: Sequence[str | NewFact],
        actor: str,
        *,
        reason: str | None = None,
        batch_size: int = 1000,
    ) -> AddedFacts:
        """Trusted injection of many facts of one user (imports, benchmarks): each fact passes the
        same statement and interval checks as `add_knowledge` and gets its own `inject` audit row,
        but each batch of `batch_size` is embedded in one call and written in one transaction (about
        ten times the rate of one `add_knowledge` per fact). Every fact is checked before anything is
        written, so one bad statement or interval leaves nothing behind. The gate's I1 and I2 hold
        for the batch as a whole: a statement whose value a live tombstone blocks, or that an active
        fact (one added earlier in this call included) already holds (the identical canonical text
        or claim), is skipped and reported in `skipped`, naming that fact or tombstone; the rest are
        added, and what the gate noticed about them (a look-alike, a value near a tombstone, a fact
        of the same one-valued slot) is reported in `marked` and in the audit row's note. No
        replacement is linked: an import states what is true.

        Linear: the user's index (engine.gate.Admission) is read once per call and kept up to date
        as facts are added; each later transaction reads only what other writers added since. The
        garbage collector runs less often meanwhile (engine.collector)."""
        with fewer_collections():
            return await self._add_many(user_id, facts, actor, reason, batch_size)

    async def _add_many(
        self, user_id: str, facts: Sequence[str | NewFact], actor: str, reason: str | None, batch_size: int
    ) -> AddedFacts:
        uid = _user(user_id)
        items = [NewFact(f) if isinstance(f, str) else f for f in facts]
        checked = [
            (
                check_statement(_statement(f.statement), self.ctx.config, f"statement {n} of the import"),
                *check_interval(f.valid_at, f.invalid_at),
                f.confidence,
            )
            for n, f in enumerate(items, 1)
        ]
        out = AddedFacts()
        admission: Admission | None = None
        neighbours: ImportNeighbours | None = None
        refusals: list[tuple[int, UserInputError]] = []
        for start in range(0, len(checked), batch_size):
            batch = checked[start : start + batch_size]
            embeddings = await embed_matrix(self.ctx.embedder, [text for text, _, _, _ in batch])
            now_us: int = to_us(self.ctx.now())
            created: datetime = from_us(now_us)
            async with self._store.transaction() as tx:
                if admission is None:
                    admission = await Admission.read(tx, uid)
                    neighbours = await ImportNeighbours.read(tx, uid, self._similarity())
                else:
                    await admission.refresh(tx)
                assert neighbours is not None
                # the batch's nearest indexed facts, in a worker thread while the checks below run
                # (numpy lets go of the interpreter for the product and the argmax passes)
                ahead = (
                    asyncio.get_running_loop().run_in_executor(None, neighbours.indexed, embeddings)
                    if neighbours.worth_a_thread(len(batch))
                    else None
                )
                rows: list[tuple[str, str, Vector, int | None, int | None, float]] = []
                kept: list[tuple[str, int | None, int | None, float, tuple[Mark, ...]]] = []
                placeholders: list[int] = []
                kept_at: list[int] = []
                for index, ((text, s, e, c), emb) in enumerate(zip(batch, embeddings, strict=True), start):
                    refused = await admission.verified(text) if start else admission.refusal(text, claims=False)
                    if refused is not None:
                        refusals.append((index, refused))
                        continue
                    marks = admission.marks(text)
                    placeholder = -index - 1
                    admission.admitted(placeholder, text)  # later statements of the batch see it
                    placeholders.append(placeholder)
                    kept_at.append(index)
                    rows.append((uid, text, emb, s, e, c))
                    kept.append((text, s, e, c, marks))
                # free text against the facts before it, this call's included: "may replace" marks
                chosen = [index - start for index in kept_at]
                found = await ahead if ahead is not None else KEEP
                near = neighbours.marks(
                    [(p, row[1]) for p, row in zip(placeholders, rows, strict=True)],
                    embeddings[chosen],
                    [{m.target_id for m in k[4] if m.kind == "looks_like"} for k in kept],
                    found if isinstance(found, UnsetType) else nearest_rows(found, chosen),
                )
                kept = [(text, s, e, c, marks + more) for (text, s, e, c, marks), more in zip(kept, near, strict=True)]
                ids = await tx.insert_knowledge_many(rows, created_at=now_us, created_by=actor) if rows else []
                admission.settle_ids(dict(zip(placeholders, ids, strict=True)))
                kept = [(text, s, e, c, admission.resolved(marks)) for text, s, e, c, marks in kept]
                out.marked.extend(
                    (-placeholder - 1, m) for placeholder, k in zip(placeholders, kept, strict=True) for m in k[4]
                )
                facts_out = [
                    Knowledge(
                        id=kid,
                        user_id=uid,
                        statement=text,
                        status="active",
                        created_at=created,
                        created_by=actor,
                        confidence=c,
                        valid_at=from_us(s),
                        invalid_at=from_us(e),
                    )
                    for kid, (text, s, e, c, _) in zip(ids, kept, strict=True)
                ]
                # `after` as a flat dict: the same JSON as the dataclass, without asdict's deep copy
                await tx.audit_many(
                    [
                        {
                            "at": now_us,
                            "actor": actor,
                            "action": "inject",
                            "user_id": uid,
                            "entity": "knowledge",
                            "entity_id": k.id,
                            "after": {name: getattr(k, name) for name in _KNOWLEDGE_FIELDS},
                            "reason": reason,
                            "note": marks_note(marks),
                        }
                        for k, (_, _, _, _, marks) in zip(facts_out, kept, strict=True)
                    ]
                )
            out.extend(facts_out)
        # a skip names the fact it duplicates by its id, known now for a fact of this very call
        out.skipped = [(index, str(admission.named(error) if admission else error)) for index, error in refusals]
        return out

    async def correct(
        self,
        user_id: str,
        knowledge_id: int,
        statement: str,
        actor: str,
        reason: str,
        valid_at: datetime | UnsetType | None = KEEP,
        invalid_at: datetime | UnsetType | None = KEEP,
        *,
        tombstone: bool = False,
        lift_tombstone: bool = False,
        never_true: bool = True,
    ) -> Knowledge:
        """A new version that replaces the old one as a correction (the old one was never true:
        end_reason `corrected`, and no as-of question reads it); the old row stays, as history.
        `never_true=False` is the support desk's other case, the world changed: the old version
        ends `superseded`, its valid time closed where the new one starts (`valid_at`, else now),
        so as-of questions before then still read it. It
        passes the one gate (engine.gate): DuplicateFactError when another active fact of the user
        already holds the new value, TombstonedError when a live tombstone blocks it (or lift it with
        `lift_tombstone=True`). `tombstone=True` also tombstones the old value, for a support agent
        who is sure it must not come back; refused when the new value is that same value."""
        text = check_statement(_statement(statement), self.ctx.config)
        why = check_reason(_reason(reason, "a correction"), self.ctx.config)
        [embedding] = await self.ctx.embedder.embed([text])
        now_us: int = to_us(self.ctx.now())
        async with self._store.transaction() as tx:
            old = await tx.get_knowledge(user_id, knowledge_id)
            if old.status != "active":
                raise StaleSupersessionError(
                    f"fact {knowledge_id} is {old.status}; only an active fact can be corrected"
                )
            if tombstone and ValueIndex([(value_key(old.statement), 0)]).find(value_key(text)) is not None:
                raise UserInputError(
                    "the corrected statement holds the same value as the old one: tombstoning the old value would"
                    " block the correction itself"
                )
            kept_start = old.valid_at if never_true else from_us(now_us)
            start, end = check_interval(
                kept_start if valid_at is KEEP else valid_at, old.invalid_at if invalid_at is KEEP else invalid_at
            )
            new = await activate(
                tx,
                user_id=user_id,
                statement=text,
                embedding=embedding,
                actor=actor,
                at_us=now_us,
                valid_at=start,
                invalid_at=end,
                episode_id=old.episode_id,
                reason=why,
                replaces=old,
                end_reason="corrected" if never_true else "superseded",
                lift_tombstone=lift_tombstone,
            )
            if tombstone:
                await tombstone_in(tx, await tx.get_knowledge(user_id, old.id), actor, why, now_us)
            return new

    async def retract(
        self, user_id: str, knowledge_id: int, actor: str, reason: str, tombstone: bool = True
    ) -> Knowledge:
        """End belief in a fact because it was wrong or must go; tombstone its value by default so
        extraction does not bring it back."""
        why = check_reason(_reason(reason, "a retraction"), self.ctx.config)
        now_us: int = to_us(self.ctx.now())
        async with self._store.transaction() as tx:
            fact = await tx.get_knowledge(user_id, knowledge_id)
            if fact.status != "active":
                raise StaleSupersessionError(f"fact {knowledge_id} is already {fact.status}")
            await retract_in(tx, fact, actor, why, tombstone, now_us)
            return await tx.get_knowledge(user_id, knowledge_id)

    async def knowledge(
        self,
        user_id: str,
        include_expired: bool = False,
        *,
        at_time: datetime | None = None,
        search: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        viewer: str | None = None,
    ) -> list[Knowledge]:
        """`viewer`: the reviewer reading, whose pending blind second reviews stay blind (engine/blind.py)."""
        async with self._store.reading() as tx:
            facts = await tx.list_knowledge(
                user_id,
                include_expired=include_expired,
                at_time=to_us(at_time, "at_time"),
                search=search,
                limit=limit,
                offset=offset,
            )
            return (await blind_spots(tx, self.ctx.config, viewer, user_id)).facts(facts)

    async def episode(self, user_id: str, episode_id: int) -> Episode:
        """One episode of the user with its messages in order (the source of a candidate or of a
        dropped statement); NotFoundError when the user has no such episode."""
        uid = _user(user_id)
        async with self._store.reading() as tx:
            found = await tx.episode_with_messages(episode_id)
        if found is None or found.user_id != uid:
            raise NotFoundError(f"user {uid} has no episode {episode_id}")
        return found

    async def conversations(self, user_id: str, limit: int = 200, *, viewer: str | None = None) -> list[EpisodeYield]:
        """The user's newest `limit` episodes, oldest first, each with its messages, the candidates
        extracted from it and the statements its gates dropped: what a curator reads to find a fact
        the extractor missed (and then adds with `add_knowledge`). `viewer`: the reviewer reading;
        who decided a candidate waiting for their blind second review, and how, is redacted."""
        uid = _user(user_id)
        async with self._store.reading() as tx:
            ids = await tx.user_episode_ids(uid, limit)
            episodes = await tx.episodes_with_messages(ids)
            wanted = set(ids)
            spots = await blind_spots(tx, self.ctx.config, viewer, uid)
            candidates = spots.candidates(c for c in await tx.user_candidates(uid) if c.episode_id in wanted)
            dropped = [d for d in await tx.list_discarded(uid, limit=1_000_000) if d.episode_id in wanted]
            made = {c.knowledge_id for c in candidates if c.knowledge_id is not None}
            labels = {k.id: k.label for k in await tx.list_knowledge(uid, include_expired=True) if k.id in made}
        out: list[EpisodeYield] = []
        for eid in ids:
            episode = episodes.get(eid)
            if episode is not None:
                out.append(
                    EpisodeYield(
                        episode,
                        [c for c in candidates if c.episode_id == eid],
                        sorted((d for d in dropped if d.episode_id == eid), key=lambda d: d.id),
                        {
                            c.id: labels[c.knowledge_id]
                            for c in candidates
                            if c.episode_id == eid and c.knowledge_id in labels
                        },
                    )
                )
        return out

    async def get_knowledge(self, user_id: str, knowledge_id: int) -> Knowledge:
        async with self._store.reading() as tx:
            return await tx.get_knowledge(user_id, knowledge_id)

    async def versions(self, user_id: str, knowledge_id: int, *, viewer: str | None = None) -> list[Knowledge]:
        """The fact's chain of versions, oldest first (`viewer`: as in `knowledge`)."""
        async with self._store.reading() as tx:
            chain = await tx.version_chain(user_id, knowledge_id)
            return (await blind_spots(tx, self.ctx.config, viewer, user_id)).facts(chain)

    async def history(
        self, user_id: str, knowledge_id: int | None = None, *, viewer: str | None = None
    ) -> list[AuditEvent]:
        """Audit events of one user, or of one fact and every version in its chain. `viewer`: the
        reviewer reading; who decided what they must still second-review, and why, is redacted.
        An approval's second-review draw (`policy_sampled` / `policy_unsampled`) is not shown: it
        says nothing about the user's facts, and a reviewer who could see which approvals are
        checked would know which are not (the rows stay in the audit log)."""
        async with self._store.reading() as tx:
            if knowledge_id is None:
                events = await tx.audit_events(user_id)
            else:
                chain = await tx.version_chain(user_id, knowledge_id)
                events = await tx.audit_events(user_id, "knowledge", [k.id for k in chain])
            events = [e for e in events if e.action not in _DRAWS]
            return (await blind_spots(tx, self.ctx.config, viewer, user_id)).events(events)

    async def tombstones(self, user_id: str | None, include_lifted: bool = False) -> list[Tombstone]:
        """One user's tombstones, or every user's with user_id=None (the curator's view)."""
        async with self._store.reading() as tx:
            return await tx.list_tombstones(user_id, include_lifted)

    async def lift_tombstone(self, user_id: str, tombstone_id: int, actor: str, reason: str) -> Tombstone:
        why = check_reason(_reason(reason, "lifting a tombstone"), self.ctx.config)
        now_us: int = to_us(self.ctx.now())
        async with self._store.transaction() as tx:
            stone = await tx.get_tombstone(user_id, tombstone_id)
            if stone.lifted_at is not None:
                raise StaleSupersessionError(f"tombstone {tombstone_id} was already lifted by {stone.lifted_by}")
            await tx.lift_tombstone(tombstone_id, at=now_us, by=actor, reason=why)
            lifted = await tx.get_tombstone(user_id, tombstone_id)
            await tx.audit(
                at=now_us,
                actor=actor,
                action="lift",
                user_id=user_id,
                entity="tombstone",
                entity_id=tombstone_id,
                before=stone,
                after=lifted,
                reason=why,
            )
            return lifted

    async def is_tombstoned(self, user_id: str, statement: str) -> Tombstone | None:
        """The live tombstone of this user matching the statement's value (the same canonical text or
        claim: the intake's gate_verdict; a look-alike is not a match)."""
        async with self._store.reading() as tx:
            verdict = gate_verdict(await tx.gate_view(user_id, whole=False), statement)
            if verdict is None or verdict[0] != "tombstoned":
                return None
            return await tx.get_tombstone(user_id, verdict[1][1])

    async def is_duplicate(self, user_id: str, statement: str) -> tuple[str, int] | None:
        """('knowledge' | 'candidate', id) of an ACTIVE fact or PENDING candidate of this user with
        the same value (the same canonical text or claim: the intake's gate_verdict), or None."""
        async with self._store.reading() as tx:
            verdict = gate_verdict(await tx.gate_view(user_id, whole=False), statement)
            if verdict is None or verdict[0] != "duplicate":
                return None
            return verdict[1][0], verdict[1][1]

    async def users(self) -> list[str]:
        async with self._store.reading() as tx:
            return await tx.users()

    async def queue_candidate(
        self,
        user_id: str,
        statement: str,
        *,
        kind: str = "new",
        confidence: float | None = 1.0,
        evidence: str = "",
        supersedes_id: int | None = None,
        valid_at: datetime | None = None,
        invalid_at: datetime | None = None,
        actor: str = "system",
        reason: str | None = None,
        created_at: datetime | None = None,
        supersedes_candidate_id: int | None = None,
    ) -> int:
        """Put a candidate in the pending queue directly (a curator's candidate, imports, tests).
        It passes the queue's one intake (engine.gate.screen): a tombstoned value is refused
        (TombstonedError), the same value as an active fact or a pending candidate is refused
        (DuplicateCandidateError names it), and a `new` statement naming no target of its own is
        queued as an update or contradiction of the active fact it would replace (the extractor's
        rule), or of the fact that corrected its value away. Agents use `propose`."""
        text = check_statement(_statement(statement), self.ctx.config)
        if reason is not None:
            check_reason(reason, self.ctx.config)
        start, end = check_interval(valid_at, invalid_at)
        now_us: int = to_us(created_at or self.ctx.now())
        named = supersedes_id is not None or supersedes_candidate_id is not None
        embedding = None if named or kind == "retraction" else (await self.ctx.embedder.embed([text]))[0]
        verdicts = await self._verdicts(_user(user_id), text, embedding) if embedding is not None else {}
        marks: tuple[Mark, ...] = ()
        async with self._store.transaction() as tx:
            if kind != "retraction":
                screened = await screen(
                    tx,
                    _user(user_id),
                    text,
                    kind=kind,
                    detect=not named,
                    valid=(start if start is not None else now_us, end),
                    embedding=embedding,
                    similarity=self._similarity(),
                    verdicts=verdicts,
                )
                if screened.duplicate_of is not None:
                    raise DuplicateCandidateError(*screened.duplicate_of)
                kind, supersedes_id = screened.kind, supersedes_id if named else screened.supersedes_id
                marks = screened.marks
            if supersedes_id is not None:
                await tx.get_knowledge(user_id, supersedes_id)  # refuses another user's id
            if supersedes_candidate_id is not None:
                await tx.get_candidate(supersedes_candidate_id, user_id)  # same rule for a chain
            cid = await queue_in(
                tx,
                user_id=_user(user_id),
                statement=text,
                kind=kind,
                confidence=confidence,
                created_at=now_us,
                evidence=evidence,
                supersedes_id=supersedes_id,
                valid_at=start,
                invalid_at=end,
                created_by=actor,
                reason=reason,
                supersedes_candidate_id=supersedes_candidate_id,
                marks=marks,
            )
            return cid

    # -- requests from agents (the MCP server's two writes) ---------------------------------------

    async def _agent_room(self, tx: KnowledgeTx, user_id: str) -> None:
        waiting = await tx.pending_agent_requests(user_id)
        if waiting >= self.ctx.config.max_pending_proposals_per_user:
            raise UserInputError(
                f"refused: {waiting} requests of this user already await review, the limit is"
                f" {self.ctx.config.max_pending_proposals_per_user} (MemoryConfig.max_pending_proposals_per_user);"
                " try again once reviewers have decided some"
            )

    async def propose(self, user_id: str, statement: str, actor: str) -> ProposalOutcome:
        """An agent's proposal, queued as kind `proposed` with `created_by=actor` and no confidence
        (nobody measured one), in ONE transaction with the pipeline's own gates: a live tombstone
        of this user refuses it (TombstonedError); the same value as an active fact or a pending
        candidate of this user queues nothing and says which (duplicate_of). Refused over the
        statement size limit or past `max_pending_proposals_per_user` pending agent requests."""
        text = check_statement(_statement(statement), self.ctx.config, credentials=False)
        uid = _user(user_id)
        now_us: int = to_us(self.ctx.now())
        if (refused := await refuse_credentials(self.ctx.store, uid, text, now_us, actor)) is not None:
            return refused
        [embedding] = await self.ctx.embedder.embed([text])
        verdicts = await self._verdicts(uid, text, embedding)
        async with self._store.transaction() as tx:
            screened = await screen(
                tx,
                uid,
                text,
                kind="proposed",
                valid=(now_us, None),  # an agent's statement holds from when it was said
                embedding=embedding,
                similarity=self._similarity(),
                verdicts=verdicts,
            )
            if screened.duplicate_of is not None:
                return ProposalOutcome(duplicate_of=screened.duplicate_of)
            await self._agent_room(tx, uid)
            cid = await queue_in(
                tx,
                user_id=uid,
                statement=text,
                kind=screened.kind,
                confidence=None,
                created_at=now_us,
                created_by=actor,
                supersedes_id=screened.supersedes_id,
                marks=screened.marks,
            )
            return ProposalOutcome(candidate_id=cid)

    async def request_forget(self, user_id: str, knowledge_id: int, actor: str, reason: str) -> ProposalOutcome:
        """An agent's request to retract an ACTIVE fact of this user, queued as kind `retraction`
        (a reviewer decides), in ONE transaction. A pending request for the same fact is found by
        one indexed query and reported (duplicate_of=('candidate', id)) instead of queued twice.
        Another user's id reads as not found; an ended fact is a StaleSupersessionError."""
        why = check_reason(_reason(reason, "a request to forget"), self.ctx.config)
        uid = _user(user_id)
        now_us: int = to_us(self.ctx.now())
        async with self._store.transaction() as tx:
            fact = await tx.get_knowledge(uid, knowledge_id)
            if fact.status != "active":
                raise StaleSupersessionError(f"memory {knowledge_id} is already {fact.status}")
            waiting = await tx.pending_retraction(uid, knowledge_id)
            if waiting is not None:
                return ProposalOutcome(duplicate_of=("candidate", waiting))
            await self._agent_room(tx, uid)
            cid = await queue_in(
                tx,
                user_id=uid,
                statement=fact.statement,
                kind="retraction",
                confidence=None,
                created_at=now_us,
                supersedes_id=fact.id,
                created_by=actor,
                reason=why,
            )
            return ProposalOutcome(candidate_id=cid)

    async def supersede(
        self,
        user_id: str,
        old_id: int,
        new_id: int,
        actor: str,
        reason: str,
        *,
        note: str | None = None,
        start: datetime | None = None,
    ) -> Knowledge:
        """Mark active fact `old_id` superseded by active fact `new_id` of the same user (the
        Knowledge screen's "superseded by another"): belief in the old one ends (end_reason
        `superseded`, superseded_by) and its valid time is closed where the new one starts, by the
        same rule as a confirmed supersession: `start` when given, else the new fact's own start,
        else when the new fact was stated (engine.stated: the message its candidate came from, or
        when it was added). Refused (UserInputError) when that start is at or before the old fact's
        own start: the old interval could not be closed, and both would read as true at a later
        as-of (engine.gate.refuse_earlier_start). Audited as `supersede`; returns the old fact."""
        why = check_reason(_reason(reason, "a supersession"), self.ctx.config)
        if note is not None:
            check_reason(note, self.ctx.config, "the note")
        if old_id == new_id:
            raise UserInputError("a fact cannot supersede itself")
        now_us: int = to_us(self.ctx.now())
        async with self._store.transaction() as tx:
            old = await tx.get_knowledge(user_id, old_id)
            new = await tx.get_knowledge(user_id, new_id)
            for fact in (old, new):
                if fact.status != "active":
                    raise StaleSupersessionError(f"fact {fact.id} is {fact.status}; both facts must be active")
            begins = start or new.valid_at
            if begins is None:
                begins = new.created_at
                if new.candidate_id is not None:
                    cand = await tx.get_candidate(new.candidate_id, user_id)
                    begins = await candidate_stated_at(tx, cand, self.ctx.config.evidence_threshold)
            refuse_earlier_start(old, to_us(begins, "start"))
            await tx.supersede_fact(old, new.id, to_us(begins, "start"), expired_at=now_us, end_reason="superseded")
            ended = await tx.get_knowledge(user_id, old.id)
            await tx.audit(
                at=now_us,
                actor=actor,
                action="supersede",
                user_id=user_id,
                entity="knowledge",
                entity_id=old.id,
                before=old,
                after=ended,
                reason=why,
                note=note,
            )
            return ended


def _statement(text: str) -> str:
    """A non-empty statement of valid Unicode (its size is checked by the caller, against config)."""
    cleaned = (text or "").strip() if isinstance(text, str) or text is None else None
    if not cleaned:
        raise InvalidStatementError("the statement is empty" if cleaned is not None else "the statement is not text")
    return check_unicode(cleaned, "the statement")


def _reason(text: str, what: str) -> str:
    cleaned = (text or "").strip() if isinstance(text, str) or text is None else None
    if not cleaned:
        raise InvalidStatementError(f"{what} needs a reason")
    return check_unicode(cleaned, "the reason")


def _user(user_id: str) -> str:
    if not user_id or not str(user_id).strip():
        raise InvalidStatementError("a user_id is required")
    return user_id

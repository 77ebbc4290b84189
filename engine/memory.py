"""`Memory`, the engine's public entry point: opening the store, the knowledge operations support
teams use, retrieval, and (through `engine.extraction`) capture and processing.

Scope: every call that names a fact also names its user; an id that belongs to another user is
reported exactly like an unknown id (NotFoundError), so a caller cannot even learn it exists.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from types import TracebackType
from typing import Any

from .config import MemoryConfig
from .context import EngineContext
from .embedders import EMBEDDERS, Embedder, default_embedder, embedder_name
from .errors import (
    DuplicateFactError,
    EmbedderMismatchError,
    EmbeddingDimensionError,
    InvalidStatementError,
    StaleSupersessionError,
    TombstonedError,
    UserInputError,
)
from .knowledge import retract_in
from .limits import check_exchange, check_query, check_reason, check_statement, check_unicode
from .models import (
    AuditEvent,
    Candidate,
    Discarded,
    Knowledge,
    ProcessReport,
    ProposalOutcome,
    RetrievalResult,
    Tombstone,
)
from .retrieval import retrieve as _retrieve
from .review import KEEP, ReviewService
from .storage import NEW_CANDIDATES, SqlTx, Store, masked, open_store
from .storage.sql.tx import recorded_embedder
from .team import TeamService
from .timeutil import Clock, check_interval, from_us, system_clock, to_us

_KNOWLEDGE_FIELDS = tuple(f.name for f in fields(Knowledge))


@dataclass(frozen=True, slots=True)
class NewFact:
    """One fact for `Memory.add_knowledge_many`."""

    statement: str
    valid_at: datetime | None = None
    invalid_at: datetime | None = None
    confidence: float = 1.0


class Memory:
    def __init__(
        self,
        path: str | os.PathLike[str] = "memdesk.db",
        embedder: Embedder | None = None,
        extractor: Any = None,
        *,
        config: MemoryConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.path = str(path)
        embedder = embedder if embedder is not None else default_embedder()
        self.ctx = EngineContext(embedder=embedder, config=config or MemoryConfig(), clock=clock or system_clock,
                                 target=masked(str(path)))
        self._extractor = extractor
        self.review = ReviewService(self.ctx)
        self.team = TeamService(self.ctx)
        self._pipeline: Any = None

    @property
    def embedder(self) -> Embedder:
        return self.ctx.embedder

    @property
    def config(self) -> MemoryConfig:
        return self.ctx.config

    @property
    def target(self) -> str:
        """Where the store is, for messages (a URL's password masked)."""
        return self.ctx.target

    # -- lifecycle --------------------------------------------------------------------------------

    async def open(self, *, check_embedder: bool = True) -> Memory:
        """Open (creating and migrating as needed). `check_embedder=False` is for `engine.reembed`
        alone, which opens a store in order to move it to `self.embedder`."""
        if self.ctx._store is not None:
            return self
        self.ctx._store = await open_store(
            self.path, dimensions=self.embedder.dimensions, embedder=embedder_name(self.embedder),
            verify=self._check_embedder if check_embedder else None,
        )
        if check_embedder:
            try:
                async with self.store.reading() as tx:
                    await self._check_embedder(tx)
            except BaseException:
                await self.close()
                raise
        return self

    async def close(self, wait: bool = True) -> None:
        """Close the store; by default wait for background processing still in flight."""
        if self._pipeline is not None:
            await self._pipeline.shutdown(wait=wait)
            self._pipeline = None
        if self.ctx._store is not None:
            await self.ctx._store.close()
            self.ctx._store = None

    async def __aenter__(self) -> Memory:
        return await self.open()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    @property
    def store(self) -> Store:
        return self.ctx.store

    def now(self) -> datetime:
        return self.ctx.now()

    async def _check_embedder(self, tx: SqlTx) -> None:
        """Refuse an embedder other than the one that built the vectors: a query vector from another
        model (or of another width) would rank facts by noise, or fail inside the KNN query.

        The name is recorded at creation (meta `embedder`). A database made before names were
        recorded (schema v4 and earlier) has only `embedding_dimensions`: it was built by the
        offline default of that time, `HashingEmbedder`, and is treated as `hashing`. A database
        someone built with another embedder before that (OpenAIEmbedder, say) is therefore refused
        until `memdesk reembed DB` moves it, which re-embeds from the stored statements."""
        name, stored = await recorded_embedder(tx)
        given, width = embedder_name(self.embedder), self.embedder.dimensions
        if name == given and stored == width:
            return
        if given in EMBEDDERS:
            move = f"Run `memdesk reembed {self.target} --embedder {given}` to re-embed every fact with {given}"
        else:  # an embedder the command line cannot build: the library call takes any
            move = (f"Run `memdesk reembed {self.target}` to move it to an offline embedder, or "
                    f"engine.reembed.reembed({self.target!r}, embedder) to this one")
        reopen = f"set MEMDESK_EMBEDDER={name}" if name in EMBEDDERS else "pass that embedder to Memory"
        fix = f"{move}; or open it with the embedder it was built with ({reopen})."
        pending = await tx.meta_value("reembed_target")
        if pending is not None:
            fix += f" A reembed to {pending} was interrupted: `memdesk reembed {self.target}` resumes it."
        if name == given:
            raise EmbeddingDimensionError(
                f"{self.target} was built with {stored}-dimensional embeddings ({name}); the embedder given has "
                f"{width}. {fix}"
            )
        raise EmbedderMismatchError(
            f"{self.target} was built with the {name} embedder ({stored} dimensions); the embedder given is "
            f"{given} ({width} dimensions). {fix}"
        )

    # -- capture and processing (engine.extraction) -----------------------------------------------

    @property
    def pipeline(self) -> Any:
        if self._pipeline is None:
            from .extraction.pipeline import Pipeline  # late: extraction builds on the engine core

            self._pipeline = Pipeline(self.ctx, self._extractor)
        return self._pipeline

    async def add_exchange(
        self, user_id: str, user_msg: str, assistant_msg: str | None, at: datetime | None = None
    ) -> list[int]:
        return (await self.add_exchanges([(user_id, user_msg, assistant_msg, at)]))[0]

    async def add_exchanges(
        self, exchanges: list[tuple[str, str, str | None, datetime | None]]
    ) -> list[list[int]]:
        """(user_id, user_msg, assistant_msg, at) tuples in ONE transaction: all stored or none.

        Every exchange is checked first (`limits.check_exchange`: sizes, Unicode, the date range),
        so one bad exchange refuses the batch before anything is written."""
        checked = [(u, m, a, check_exchange(u, m, a, at, self.config)) for u, m, a, at in exchanges]
        return await self.pipeline.add_exchanges(checked)

    async def process(
        self, user_id: str | None = None, *, concurrency: int = 1, progress: Callable[[int, int], None] | None = None,
    ) -> ProcessReport:
        """Extract candidates from unprocessed messages (one user, or all with work), up to
        `concurrency` users at once; `progress(done, total)` as each user finishes."""
        return await self.pipeline.process(user_id, concurrency=concurrency, progress=progress)

    async def discarded(self, user_id: str | None = None, limit: int = 50, offset: int = 0) -> list[Discarded]:
        """What the gates dropped (newest first), with the gate and what it matched: for curators."""
        return await self.pipeline.discarded(user_id, limit, offset)

    async def queue_discarded(self, discarded_id: int, actor: str, reason: str) -> Candidate:
        """Queue a dropped statement anyway (a pending `new` candidate; audited; refused twice)."""
        return await self.pipeline.queue_discarded(discarded_id, actor, reason)

    async def stats(self, user_id: str | None = None, discarded_limit: int = 20) -> dict[str, Any]:
        from .stats import stats

        return await stats(self.ctx, user_id, discarded_limit)

    # -- retrieval --------------------------------------------------------------------------------

    async def retrieve(
        self, query: str, user_id: str, top_k: int = 10, at_time: datetime | None = None,
        known_at: datetime | None = None, include_expired: bool = False,
    ) -> RetrievalResult:
        check_query(query if isinstance(query, str) else "", self.config)
        return await _retrieve(
            self.store, self.embedder, query, user_id=user_id, top_k=top_k, at_time=at_time, known_at=known_at,
            include_expired=include_expired, vector_weight=self.config.vector_weight,
            text_weight=self.config.text_weight,
        )

    # -- knowledge operations ---------------------------------------------------------------------

    async def add_knowledge(
        self, user_id: str, statement: str, actor: str, valid_at: datetime | None = None,
        invalid_at: datetime | None = None, *, confidence: float = 1.0, reason: str | None = None,
    ) -> Knowledge:
        """Trusted injection: straight to an active fact, no queue; audited as `inject`."""
        text = check_statement(_statement(statement), self.config)
        if reason is not None:
            check_reason(reason, self.config)
        start, end = check_interval(valid_at, invalid_at)
        [embedding] = await self.embedder.embed([text])
        now_us: int = to_us(self.now())  # type: ignore[assignment]
        async with self.store.transaction() as tx:
            kid = await tx.insert_knowledge(user_id=_user(user_id), statement=text, embedding=embedding,
                created_at=now_us,
                created_by=actor, confidence=confidence, valid_at=start, invalid_at=end,
            )
            fact = await tx.get_knowledge(user_id, kid)
            await tx.audit(at=now_us, actor=actor, action="inject", user_id=user_id, entity="knowledge",
                              entity_id=kid, after=fact, reason=reason)
            return fact

    async def add_knowledge_many(
        self, user_id: str, facts: Sequence[str | NewFact], actor: str, *, reason: str | None = None,
        batch_size: int = 1000,
    ) -> list[Knowledge]:
        """Trusted injection of many facts of one user (imports, benchmarks): each fact passes the
        same statement and interval checks as `add_knowledge` and gets its own `inject` audit row,
        but each batch of `batch_size` is embedded in one call and written in one transaction (about
        ten times the rate of one `add_knowledge` per fact). Every fact is checked before anything is
        written, so one bad statement or interval leaves nothing behind."""
        uid = _user(user_id)
        items = [NewFact(f) if isinstance(f, str) else f for f in facts]
        checked = [
            (check_statement(_statement(f.statement), self.config), *check_interval(f.valid_at, f.invalid_at),
             f.confidence)
            for f in items
        ]
        out: list[Knowledge] = []
        for start in range(0, len(checked), batch_size):
            batch = checked[start : start + batch_size]
            embeddings = await self.embedder.embed([text for text, _, _, _ in batch])
            now_us: int = to_us(self.now())  # type: ignore[assignment]
            created: datetime = from_us(now_us)  # type: ignore[assignment]
            async with self.store.transaction() as tx:
                ids = await tx.insert_knowledge_many(
                    [(uid, text, emb, s, e, c) for (text, s, e, c), emb in zip(batch, embeddings, strict=True)],
                    created_at=now_us, created_by=actor,
                )
                facts_out = [
                    Knowledge(id=kid, user_id=uid, statement=text, status="active", created_at=created,
                              created_by=actor, confidence=c, valid_at=from_us(s), invalid_at=from_us(e))
                    for kid, (text, s, e, c) in zip(ids, batch, strict=True)
                ]
                # `after` as a flat dict: the same JSON as the dataclass, without asdict's deep copy
                await tx.audit_many([
                    {"at": now_us, "actor": actor, "action": "inject", "user_id": uid, "entity": "knowledge",
                     "entity_id": k.id, "after": {name: getattr(k, name) for name in _KNOWLEDGE_FIELDS},
                     "reason": reason}
                    for k in facts_out
                ])
            out.extend(facts_out)
        return out

    async def correct(
        self, user_id: str, knowledge_id: int, statement: str, actor: str, reason: str,
        valid_at: Any = KEEP, invalid_at: Any = KEEP,
    ) -> Knowledge:
        """A new version that supersedes the old one (end_reason `corrected`); the old row stays.
        Refused with DuplicateFactError when another ACTIVE fact of the user already holds the new
        statement's value (same value key): the correction would leave two identical facts."""
        text = check_statement(_statement(statement), self.config)
        why = check_reason(_reason(reason, "a correction"), self.config)
        [embedding] = await self.embedder.embed([text])
        now_us: int = to_us(self.now())  # type: ignore[assignment]
        async with self.store.transaction() as tx:
            old = await tx.get_knowledge(user_id, knowledge_id)
            if old.status != "active":
                raise StaleSupersessionError(
                    f"fact {knowledge_id} is {old.status}; only an active fact can be corrected"
                )
            same = await tx.active_with_key(user_id, text, excluding=old.id)
            if same is not None:
                raise DuplicateFactError(same.id, same.statement)
            start, end = check_interval(
                old.valid_at if valid_at is KEEP else valid_at, old.invalid_at if invalid_at is KEEP else invalid_at
            )
            kid = await tx.insert_knowledge(user_id=user_id, statement=text, embedding=embedding,
                created_at=now_us, created_by=actor,
                confidence=1.0, valid_at=start, invalid_at=end, episode_id=old.episode_id,
            )
            await tx.end_knowledge(old.id, status="superseded", expired_at=now_us, end_reason="corrected",
                                      superseded_by=kid)
            new = await tx.get_knowledge(user_id, kid)
            await tx.audit(at=now_us, actor=actor, action="create", user_id=user_id, entity="knowledge",
                              entity_id=kid, after=new, reason=why)
            await tx.audit(at=now_us, actor=actor, action="correct", user_id=user_id, entity="knowledge",
                              entity_id=old.id, before=old, after=await tx.get_knowledge(user_id, old.id),
                              reason=why)
            return new

    async def retract(
        self, user_id: str, knowledge_id: int, actor: str, reason: str, tombstone: bool = True
    ) -> Knowledge:
        """End belief in a fact because it was wrong or must go; tombstone its value by default so
        extraction does not bring it back."""
        why = check_reason(_reason(reason, "a retraction"), self.config)
        now_us: int = to_us(self.now())  # type: ignore[assignment]
        async with self.store.transaction() as tx:
            fact = await tx.get_knowledge(user_id, knowledge_id)
            if fact.status != "active":
                raise StaleSupersessionError(f"fact {knowledge_id} is already {fact.status}")
            await retract_in(tx, fact, actor, why, tombstone, now_us)
            return await tx.get_knowledge(user_id, knowledge_id)

    async def knowledge(
        self, user_id: str, include_expired: bool = False, *, at_time: datetime | None = None,
        search: str | None = None, limit: int | None = None, offset: int = 0,
    ) -> list[Knowledge]:
        async with self.store.reading() as tx:
            return await tx.list_knowledge(user_id, include_expired=include_expired,
                at_time=to_us(at_time, "at_time"), search=search,
                limit=limit, offset=offset,
            )

    async def get_knowledge(self, user_id: str, knowledge_id: int) -> Knowledge:
        async with self.store.reading() as tx:
            return await tx.get_knowledge(user_id, knowledge_id)

    async def versions(self, user_id: str, knowledge_id: int) -> list[Knowledge]:
        """The fact's chain of versions, oldest first."""
        async with self.store.reading() as tx:
            return await tx.version_chain(user_id, knowledge_id)

    async def history(self, user_id: str, knowledge_id: int | None = None) -> list[AuditEvent]:
        """Audit events of one user, or of one fact and every version in its chain."""
        async with self.store.reading() as tx:
            if knowledge_id is None:
                return await tx.audit_events(user_id)
            chain = await tx.version_chain(user_id, knowledge_id)
            return await tx.audit_events(user_id, "knowledge", [k.id for k in chain])

    async def tombstones(self, user_id: str | None, include_lifted: bool = False) -> list[Tombstone]:
        """One user's tombstones, or every user's with user_id=None (the curator's view)."""
        async with self.store.reading() as tx:
            return await tx.list_tombstones(user_id, include_lifted)

    async def lift_tombstone(self, user_id: str, tombstone_id: int, actor: str, reason: str) -> Tombstone:
        why = check_reason(_reason(reason, "lifting a tombstone"), self.config)
        now_us: int = to_us(self.now())  # type: ignore[assignment]
        async with self.store.transaction() as tx:
            stone = await tx.get_tombstone(user_id, tombstone_id)
            if stone.lifted_at is not None:
                raise StaleSupersessionError(f"tombstone {tombstone_id} was already lifted by {stone.lifted_by}")
            await tx.lift_tombstone(tombstone_id, at=now_us, by=actor, reason=why)
            lifted = await tx.get_tombstone(user_id, tombstone_id)
            await tx.audit(at=now_us, actor=actor, action="lift", user_id=user_id, entity="tombstone",
                              entity_id=tombstone_id, before=stone, after=lifted, reason=why)
            return lifted

    async def is_tombstoned(self, user_id: str, statement: str) -> Tombstone | None:
        """The live tombstone of this user matching the statement's value (exact key or near match)."""
        async with self.store.reading() as tx:
            return await tx.matching_tombstone(user_id, statement)

    async def is_duplicate(self, user_id: str, statement: str) -> tuple[str, int] | None:
        """('knowledge' | 'candidate', id) of an ACTIVE fact or PENDING candidate of this user with
        the same value (engine.text's rule), or None."""
        async with self.store.reading() as tx:
            return await tx.duplicate_of(user_id, statement)

    async def users(self) -> list[str]:
        async with self.store.reading() as tx:
            return await tx.users()

    async def subscribe_new_candidates(self, callback: Callable[[], None]) -> Callable[[], Awaitable[None]]:
        """Call `callback()` on this event loop when candidates may have reached the queue from
        any process, so an open workstation shows new work without polling the tables; returns the
        coroutine function that stops it. PostgreSQL announces each commit that queued candidates
        (LISTEN/NOTIFY); SQLite has no server, so its store reports every commit to the file (a
        cheap PRAGMA data_version watcher): a call means "look again", not "something is new"."""
        return await self.store.subscribe(NEW_CANDIDATES, lambda _payload: callback())

    async def queue_candidate(
        self, user_id: str, statement: str, *, kind: str = "new", confidence: float | None = 1.0, evidence: str = "",
        supersedes_id: int | None = None, valid_at: datetime | None = None, invalid_at: datetime | None = None,
        actor: str = "system", reason: str | None = None, created_at: datetime | None = None,
        supersedes_candidate_id: int | None = None,
    ) -> int:
        """Put a candidate in the pending queue directly (tests, agent proposals, retraction
        requests). Extraction uses the pipeline, which adds the gates; agents use `propose`."""
        text = check_statement(_statement(statement), self.config)
        if reason is not None:
            check_reason(reason, self.config)
        start, end = check_interval(valid_at, invalid_at)
        now_us: int = to_us(created_at or self.now())  # type: ignore[assignment]
        async with self.store.transaction() as tx:
            if supersedes_id is not None:
                await tx.get_knowledge(user_id, supersedes_id)  # refuses another user's id
            if supersedes_candidate_id is not None:
                await tx.get_candidate(supersedes_candidate_id, user_id)  # same rule for a chain
            cid = await tx.insert_candidate(user_id=_user(user_id), statement=text, kind=kind,
                confidence=confidence, created_at=now_us,
                evidence=evidence, supersedes_id=supersedes_id, valid_at=start, invalid_at=end, created_by=actor,
                reason=reason, supersedes_candidate_id=supersedes_candidate_id,
            )
            await tx.audit(at=now_us, actor=actor, action="queue", user_id=user_id, entity="candidate",
                              entity_id=cid, after=await tx.get_candidate(cid), reason=reason)
            return cid

    # -- requests from agents (the MCP server's two writes) ---------------------------------------

    async def _agent_room(self, tx: SqlTx, user_id: str) -> None:
        waiting = await tx.pending_agent_requests(user_id)
        if waiting >= self.config.max_pending_proposals_per_user:
            raise UserInputError(
                f"refused: {waiting} requests of this user already await review, the limit is"
                f" {self.config.max_pending_proposals_per_user} (MemoryConfig.max_pending_proposals_per_user);"
                " try again once reviewers have decided some"
            )

    async def propose(self, user_id: str, statement: str, actor: str) -> ProposalOutcome:
        """An agent's proposal, queued as kind `proposed` with `created_by=actor` and no confidence
        (nobody measured one), in ONE transaction with the pipeline's own gates: a live tombstone
        of this user refuses it (TombstonedError); the same value as an active fact or a pending
        candidate of this user queues nothing and says which (duplicate_of). Refused over the
        statement size limit or past `max_pending_proposals_per_user` pending agent requests."""
        text = check_statement(_statement(statement), self.config)
        uid = _user(user_id)
        now_us: int = to_us(self.now())  # type: ignore[assignment]
        async with self.store.transaction() as tx:
            stone = await tx.matching_tombstone(uid, text)
            if stone is not None:
                raise TombstonedError(stone.id)
            duplicate = await tx.duplicate_of(uid, text)
            if duplicate is not None:
                return ProposalOutcome(duplicate_of=duplicate)
            await self._agent_room(tx, uid)
            cid = await tx.insert_candidate(user_id=uid, statement=text, kind="proposed", confidence=None,
                created_at=now_us,
                created_by=actor,
            )
            await tx.audit(at=now_us, actor=actor, action="queue", user_id=uid, entity="candidate",
                              entity_id=cid, after=await tx.get_candidate(cid))
            return ProposalOutcome(candidate_id=cid)

    async def request_forget(self, user_id: str, knowledge_id: int, actor: str, reason: str) -> ProposalOutcome:
        """An agent's request to retract an ACTIVE fact of this user, queued as kind `retraction`
        (a reviewer decides), in ONE transaction. A pending request for the same fact is found by
        one indexed query and reported (duplicate_of=('candidate', id)) instead of queued twice.
        Another user's id reads as not found; an ended fact is a StaleSupersessionError."""
        why = check_reason(_reason(reason, "a request to forget"), self.config)
        uid = _user(user_id)
        now_us: int = to_us(self.now())  # type: ignore[assignment]
        async with self.store.transaction() as tx:
            fact = await tx.get_knowledge(uid, knowledge_id)
            if fact.status != "active":
                raise StaleSupersessionError(f"memory {knowledge_id} is already {fact.status}")
            waiting = await tx.pending_retraction(uid, knowledge_id)
            if waiting is not None:
                return ProposalOutcome(duplicate_of=("candidate", waiting))
            await self._agent_room(tx, uid)
            cid = await tx.insert_candidate(user_id=uid, statement=fact.statement, kind="retraction",
                confidence=None, created_at=now_us,
                supersedes_id=fact.id, created_by=actor, reason=why,
            )
            await tx.audit(at=now_us, actor=actor, action="queue", user_id=uid, entity="candidate",
                              entity_id=cid, after=await tx.get_candidate(cid), reason=why)
            return ProposalOutcome(candidate_id=cid)

    async def supersede(
        self, user_id: str, old_id: int, new_id: int, actor: str, reason: str, *, note: str | None = None
    ) -> Knowledge:
        """Mark active fact `old_id` superseded by active fact `new_id` of the same user (the
        Knowledge screen's "superseded by another"): belief in the old one ends (end_reason
        `superseded`, superseded_by) and its valid time is closed at the new fact's start by the
        same rule as a confirmed supersession. Audited as `supersede`; returns the old fact."""
        why = check_reason(_reason(reason, "a supersession"), self.config)
        if note is not None:
            check_reason(note, self.config, "the note")
        if old_id == new_id:
            raise UserInputError("a fact cannot supersede itself")
        now_us: int = to_us(self.now())  # type: ignore[assignment]
        async with self.store.transaction() as tx:
            old = await tx.get_knowledge(user_id, old_id)
            new = await tx.get_knowledge(user_id, new_id)
            for fact in (old, new):
                if fact.status != "active":
                    raise StaleSupersessionError(f"fact {fact.id} is {fact.status}; both facts must be active")
            await tx.supersede_fact(old, new.id, to_us(new.valid_at), expired_at=now_us,
                                       end_reason="superseded")
            ended = await tx.get_knowledge(user_id, old.id)
            await tx.audit(at=now_us, actor=actor, action="supersede", user_id=user_id, entity="knowledge",
                              entity_id=old.id, before=old, after=ended, reason=why, note=note)
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

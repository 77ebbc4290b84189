"""`Memory`, the engine's public entry point: a façade that opens the store (`engine.storage`, a
SQLite file or a PostgreSQL URL) and hands each call to the service that owns it: the knowledge
operations (`engine.knowledge.KnowledgeOps`, mixed in), decisions (`review`), team work (`team`),
capture and processing (`engine.extraction`), retrieval and stats. It holds no SQL and no rule of
its own beyond the embedder check at open.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING

from .agents import AgentLoginService
from .config import MemoryConfig
from .context import EngineContext
from .embedders import EMBEDDERS, Embedder, default_embedder, embedder_name
from .errors import (
    EmbedderMismatchError,
    EmbeddingDimensionError,
)
from .gate import POLICY_ACTOR_PREFIX
from .knowledge import KnowledgeOps
from .limits import check_exchange, check_query
from .models import (
    Candidate,
    Discarded,
    ProcessReport,
    ProposalOutcome,
    RetrievalResult,
)
from .policies import PolicyService
from .retrieval import retrieve as _retrieve
from .review import ReviewService
from .storage import NEW_CANDIDATES, SqlTx, Store, database_errors, is_permission_error, masked, open_store
from .storage.sql.core import recorded_embedder
from .team import TeamService
from .timeutil import Clock, system_clock
from .watch import WatchService

if TYPE_CHECKING:  # late at run time: extraction builds on the engine core
    from .claims.judge import ValueJudge
    from .extraction.base import Extractor
    from .extraction.pipeline import Pipeline
    from .stats import Stats

_log = logging.getLogger("memdesk")


class Memory(KnowledgeOps):
    def __init__(
        self,
        path: str | os.PathLike[str] = "memdesk.db",
        embedder: Embedder | None = None,
        extractor: Extractor | None = None,
        *,
        config: MemoryConfig | None = None,
        clock: Clock | None = None,
        store: Store | None = None,
        judge: ValueJudge | None = None,
    ) -> None:
        """`store`: an already opened `Store` to use instead of opening `path` (like httpx's
        `transport=`): tests and embedders of memdesk inject one this way. The embedder check
        still runs on it at `open()`, and `close()` closes it: the Memory owns it from then on.
        `judge`: an engine.claims.judge.ValueJudge (OpenAIValueJudge with an LLM configured) that
        answers same / replaces / both for a free-text statement's nearest facts; without one,
        those neighbours are "may replace" marks for a person (engine.gate)."""
        self.path = str(path)
        self._given_store = store
        embedder = embedder if embedder is not None else default_embedder()
        self.ctx = EngineContext(
            embedder=embedder,
            config=config or MemoryConfig(),
            clock=clock or system_clock,
            target=masked(str(path)),
            judge=judge,
        )
        self._extractor = extractor
        self.review = ReviewService(self.ctx)
        self.team = TeamService(self.ctx)
        self.policies = PolicyService(self.ctx, self.review)
        self.watch = WatchService(self.ctx)
        """The agents under watch (engine/watch.py) and an owner's lift."""
        self.agents = AgentLoginService(self.ctx)
        self._disconnect: Callable[[], None] | None = None
        self._pipeline: Pipeline | None = None

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
        if self._given_store is not None:
            self.ctx._store, self._given_store = self._given_store, None
        else:
            self.ctx._store = await open_store(
                self.path,
                dimensions=self.embedder.dimensions,
                embedder=embedder_name(self.embedder),
                verify=self._check_embedder if check_embedder else None,
            )
        # the policies' look after a person's decision, once it has committed (engine/second_look.py)
        self._disconnect = self.store.events.connect(self.policies.second_look.on_commit)
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
        if wait:
            await self.policies.settled()
        else:
            await self.policies.second_look.cancel()
        if self._disconnect is not None:
            self._disconnect()
            self._disconnect = None
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
            move = (
                f"Run `memdesk reembed {self.target}` to move it to an offline embedder, or "
                f"engine.reembed.reembed({self.target!r}, embedder) to this one"
            )
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
    def pipeline(self) -> Pipeline:
        if self._pipeline is None:
            from .extraction.pipeline import Pipeline  # late: extraction builds on the engine core

            self._pipeline = Pipeline(self.ctx, self._extractor)
        return self._pipeline

    async def add_exchange(
        self, user_id: str, user_msg: str, assistant_msg: str | None, at: datetime | None = None
    ) -> list[int]:
        return (await self.add_exchanges([(user_id, user_msg, assistant_msg, at)]))[0]

    async def add_exchanges(self, exchanges: Sequence[tuple[str, str, str | None, datetime | None]]) -> list[list[int]]:
        """(user_id, user_msg, assistant_msg, at) tuples in ONE transaction: all stored or none.

        Every exchange is checked first (`limits.check_exchange`: sizes, Unicode, the date range),
        so one bad exchange refuses the batch before anything is written."""
        checked = [(u, m, a, check_exchange(u, m, a, at, self.config)) for u, m, a, at in exchanges]
        return await self.pipeline.add_exchanges(checked)

    async def process(
        self,
        user_id: str | None = None,
        *,
        concurrency: int = 1,
        progress: Callable[[int, int], None] | None = None,
    ) -> ProcessReport:
        """Extract candidates from unprocessed messages (one user, or all with work), up to
        `concurrency` users at once; `progress(done, total)` as each user finishes. Review policies
        then judge what was queued (engine/policies.py: shadow ones record, enabled ones decide)."""
        mark = await self._newest_candidate()
        report = await self.pipeline.process(user_id, concurrency=concurrency, progress=progress)
        if report.queued:
            await self.policies.after_queue(mark)
        return report

    async def propose(self, user_id: str, statement: str, actor: str) -> ProposalOutcome:
        """An agent's proposal (KnowledgeOps.propose), then the review policies' judgement of it.
        On PostgreSQL a name this login may not propose as is refused first (AgentIdentityError,
        nothing changed: engine/agents.py)."""
        await self.agents.check(actor)
        mark = await self._newest_candidate()
        outcome = await super().propose(user_id, statement, actor)
        if outcome.candidate_id is not None:
            try:
                await self.policies.after_queue(mark)
            except database_errors() as exc:
                # An agent's PostgreSQL login may queue but not judge (README, "Roles"): the
                # proposal stands, and `memdesk policy run` judges it from a reviewer's login.
                if not is_permission_error(exc):
                    raise
                _log.info("review policies skipped for candidate %s: %s", outcome.candidate_id, exc)
            else:
                cand = await self.review.get(outcome.candidate_id)
                if cand.status == "approved" and (cand.decided_by or "").startswith(POLICY_ACTOR_PREFIX):
                    outcome.accepted_by, outcome.knowledge_id = cand.decided_by, cand.knowledge_id
        return outcome

    async def request_forget(self, user_id: str, knowledge_id: int, actor: str, reason: str) -> ProposalOutcome:
        """An agent's request to retract a fact (KnowledgeOps.request_forget), under a name this
        login may propose as (engine/agents.py), like `propose`."""
        await self.agents.check(actor)
        return await super().request_forget(user_id, knowledge_id, actor, reason)

    async def _newest_candidate(self) -> int:
        async with self.ctx.store.reading() as tx:
            return await tx.newest_candidate_id()

    async def discarded(self, user_id: str | None = None, limit: int = 50, offset: int = 0) -> list[Discarded]:
        """What the gates dropped (newest first), with the gate and what it matched: for curators."""
        return await self.pipeline.discarded(user_id, limit, offset)

    async def queue_discarded(self, discarded_id: int, actor: str, reason: str) -> Candidate:
        """Queue a dropped statement anyway (a pending `new` candidate; audited; refused twice)."""
        return await self.pipeline.queue_discarded(discarded_id, actor, reason)

    async def stats(self, user_id: str | None = None, discarded_limit: int = 20) -> Stats:
        from .stats import stats

        return await stats(self.ctx, user_id, discarded_limit)

    # -- retrieval --------------------------------------------------------------------------------

    async def retrieve(
        self,
        query: str,
        user_id: str,
        top_k: int = 10,
        at_time: datetime | None = None,
        known_at: datetime | None = None,
        include_expired: bool = False,
    ) -> RetrievalResult:
        """The user's facts most relevant to `query` (engine.retrieval.retrieve), under
        `MemoryConfig.relevance_floor`: an empty result means nothing of the user is relevant to
        the question (`MemoryConfig(relevance_floor=None)`: always the nearest facts)."""
        check_query(query if isinstance(query, str) else "", self.config)
        return await _retrieve(
            self.store,
            self.embedder,
            query,
            user_id=user_id,
            top_k=top_k,
            at_time=at_time,
            known_at=known_at,
            include_expired=include_expired,
            vector_weight=self.config.vector_weight,
            text_weight=self.config.text_weight,
            relevance_floor=self.config.relevance_floor,
        )

    # -- knowledge operations ---------------------------------------------------------------------

    async def subscribe_new_candidates(self, callback: Callable[[], object]) -> Callable[[], Awaitable[None]]:
        """Call `callback()` on this event loop when candidates may have reached the queue from
        any process, so an open workstation shows new work without polling the tables; returns the
        coroutine function that stops it. PostgreSQL announces each commit that queued candidates
        (LISTEN/NOTIFY); SQLite has no server, so its store reports every commit to the file (a
        cheap PRAGMA data_version watcher): a call means "look again", not "something is new".
        Whatever `callback` returns is ignored."""

        def announce(_payload: str) -> None:
            callback()

        return await self.store.subscribe(NEW_CANDIDATES, announce)

"""The write path: capture exchanges, then turn unprocessed messages into episodes, extraction runs
and pending candidates, with every gate counted on the run and every dropped statement kept.

What an extractor is shown (`existing`): the user's active facts most related to the episode AND
their pending candidates (see `engine.extraction.base`), so a batch of weeks processed at once still
predicts from, and proposes updates of, what earlier episodes queued.

Order of the gates (each item stops at the first it fails; that gate's counter goes up and the
statement is stored in `discarded` with the gate and what it matched):
  predicted (the prediction already held the claim: the extractor reports it in `covered`)
  -> confidence below the threshold -> invalid (empty, over the statement limit, inverted interval)
  -> tombstoned for this user -> duplicate of an ACTIVE fact or PENDING candidate of this user (or of
     an item queued earlier in the same run). Matching is engine.text's exact rule.
Dates outside timeutil's EARLIEST..LATEST are dropped from their item first (`dates_dropped`).

A `supersedes` handle must name an active fact or a pending candidate of this user that was shown
to the extractor; anything else is dropped from the item (which stays, as `new`) and counted. A
change to a value that a pending candidate already changes is chained to the LATEST such candidate
(`supersedes_candidate_id`), whatever the extractor named, so a chain never forks. A change with
no start of its own starts at the time of the message that states it.

Concurrency: an asyncio lock per user inside one process; users in parallel up to `concurrency`;
and in the database an episode lease (claimed_by / claimed_until, `episode_lease_seconds`), renewed
by a background task while this worker is alive, so two `process` calls never extract the same
messages twice and a killed worker's episodes come back within one lease. A run is stored only if
this worker still holds the episode's lease when it writes.

Batching: one read before extraction and one write transaction after it per episode; the run, its
candidates, their audit rows and the discarded statements are each one executemany.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rapidfuzz import fuzz

from ..categories import category_of
from ..claims import claim_for
from ..claims.judge import Verdict
from ..credentials import audit_credentials, has_marker, redact
from ..errors import (
    ConflictError,
    DuplicateCandidateError,
    InvalidIntervalError,
    InvalidStatementError,
    MemdeskError,
    UserInputError,
)
from ..gate import (
    gate_verdict,
    intake_marks,
    joined,
    judged,
    may_replace_similarity,
    nearest_facts,
    replacement,
    screen,
)
from ..models import Candidate, Discarded, Episode, Extraction, GapItem, Knowledge, Mark, ProcessReport
from ..retrieval import retrieve
from ..stated import stated_at
from ..storage import GateView
from ..storage.rooms import PipelineTx, Rooms
from ..storage.sql.core import IdSource
from ..text import has_visible_text
from ..timeutil import EARLIEST, LATEST, check_interval, ensure_utc, from_us, to_us
from .base import Calibrating, Extractor, is_pending, parse_handle, pending_record
from .episodes import RawMessage, segment, title_and_narrative

if TYPE_CHECKING:
    from ..context import EngineContext

Progress = Callable[[int, int], None]
_CHANGE_KINDS = ("update", "contradiction")
# Batching (see Pipeline._batch): a batchable extractor runs inside a write transaction that spans
# several episodes, for at most BATCH_HOLD_S and BATCH_EPISODES episodes; one extraction slower
# than FAST_EXTRACTION_S ends the batch.
FAST_EXTRACTION_S = 0.05
BATCH_HOLD_S = 0.2
BATCH_EPISODES = 100


class _LeaseLost(Exception):
    """Another worker took the episode after this worker's lease ran out: store nothing."""


@dataclass(slots=True)
class _Survivor:
    item: GapItem
    start: int | None
    end: int | None
    unsupported: bool
    supersedes_id: int | None = None
    supersedes_candidate_id: int | None = None
    candidate_id: int = 0  # handed out by the gates, under the write lock
    marks: tuple[Mark, ...] = ()  # what the gates noticed (engine.gate.intake_marks)


@dataclass(slots=True)
class _Gated:
    """The outcome of the gates for one extraction: what to queue and what to keep as discarded."""

    survivors: list[_Survivor] = field(default_factory=list)
    discards: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class _Outcome:
    """One extraction call: the run row so far, the extraction (None when the call raised: the
    error is in run["error"]) and how long the call took."""

    run: dict[str, Any]
    extraction: Extraction | None
    seconds: float
    # per statement: its nearest active facts the claim model cannot relate it to, and a judge's
    # verdicts on them (engine.gate.judged), found before the write transaction
    near: dict[str, tuple[list[tuple[int, str]], dict[int, Verdict]]] = field(default_factory=dict)


@dataclass(slots=True)
class _Writes:
    """What one write transaction stores, collected episode by episode and flushed with one
    executemany per table (the ids come from the transaction's `id_source`s)."""

    candidate_ids: IdSource
    run_ids: IdSource
    finished: list[tuple[str, str | None, int]] = field(default_factory=list)
    runs: list[dict[str, Any]] = field(default_factory=list)
    candidates: list[dict[str, Any]] = field(default_factory=list)
    audits: list[dict[str, Any]] = field(default_factory=list)
    discards: list[dict[str, Any]] = field(default_factory=list)

    async def reserve(self, outcome: _Outcome) -> None:
        """Ids enough for one episode's outcome (its run, and every item surviving the gates),
        taken before the gates run without awaiting."""
        await self.run_ids.reserve(1)
        await self.candidate_ids.reserve(len(outcome.extraction.items) if outcome.extraction else 0)

    async def flush(self, tx: PipelineTx) -> None:
        await tx.finish_episodes_many(self.finished)
        await tx.insert_runs_many(self.runs)
        await tx.insert_candidates_many(self.candidates)
        await tx.audit_many(self.audits)
        await tx.insert_discarded_many(self.discards)


def _adopt(view: GateView, fresh: GateView) -> None:
    """Carry what a write transaction read and queued to the next episode's extraction."""
    view.tombstones, view.live, view.pending, view.active_ids = (
        fresh.tombstones,
        fresh.live,
        fresh.pending,
        (fresh.active_ids),
    )
    view.facts, view.corrected = fresh.facts, fresh.corrected


class Pipeline:
    def __init__(self, ctx: EngineContext, extractor: Extractor | None = None) -> None:
        self._ctx = ctx
        from .offline import OfflineExtractor  # late: the offline rules build on the pipeline's records

        self.extractor: Extractor = OfflineExtractor() if extractor is None else extractor
        self._locks: dict[str, asyncio.Lock] = {}
        self._background: set[asyncio.Task[ProcessReport]] = set()
        self._token = f"proc-{uuid.uuid4().hex[:12]}"
        self._lease_holders = 0
        self._renewer: asyncio.Task[None] | None = None
        self._calibrated = False

    @property
    def _store(self) -> Rooms[PipelineTx]:
        """The store, seen through the rooms this service may touch (engine/storage/rooms.py)."""
        return self._ctx.store

    # -- capture ----------------------------------------------------------------------------------

    async def add_exchange(
        self, user_id: str, user_msg: str, assistant_msg: str | None, at: datetime | None = None
    ) -> list[int]:
        """Store the two messages and return; no model call (extraction is `process`)."""
        return (await self.add_exchanges([(user_id, user_msg, assistant_msg, at)]))[0]

    async def add_exchanges(self, exchanges: Sequence[tuple[str, str, str | None, datetime | None]]) -> list[list[int]]:
        """Many exchanges in ONE transaction: all stored or none (ingest relies on this)."""
        now = self._ctx.now()
        rows: list[tuple[str, str, str, int]] = []
        spans: list[int] = []
        removed: list[dict[str, int]] = []
        for user_id, user_msg, assistant_msg, at in exchanges:
            if not user_id or not str(user_id).strip():
                raise InvalidStatementError("an exchange needs a user_id")
            if not isinstance(user_msg, str) or not user_msg.strip():
                raise InvalidStatementError(f"the user message of {user_id!r} is empty")
            when: int = to_us(ensure_utc(at, "at") if at is not None else now)
            # Credentials never reach the store: each is replaced by a marker before the INSERT.
            user_red = redact(user_msg)
            kinds = user_red.kinds.copy()
            rows.append((user_id, "user", user_red.text, when))
            count = 1
            if assistant_msg is not None and assistant_msg.strip():
                assistant_red = redact(assistant_msg)
                kinds.update(assistant_red.kinds)
                rows.append((user_id, "assistant", assistant_red.text, when))
                count = 2
            spans.append(count)
            removed.append(dict(kinds))
        async with self._store.transaction() as tx:
            ids = await tx.insert_messages(rows)
            out, pos = [], 0
            for (user_id, *_), count in zip(exchanges, spans, strict=True):
                batch = ids[pos : pos + count]
                pos += count
                out.append(batch)
                await tx.audit(
                    at=to_us(now),
                    actor="capture",
                    action="capture",
                    user_id=user_id,
                    entity="message",
                    entity_id=batch[0],
                    after={"message_ids": batch},
                )
                if removed[len(out) - 1]:
                    await audit_credentials(
                        tx,
                        now_us=to_us(now),
                        user_id=user_id,
                        entity="message",
                        entity_id=batch[0],
                        kinds=removed[len(out) - 1],
                    )
        if self._ctx.config.batch_threshold:
            for user_id in dict.fromkeys(e[0] for e in exchanges):
                await self._maybe_background(user_id)
        return out

    async def _maybe_background(self, user_id: str) -> None:
        async with self._store.reading() as tx:
            waiting = await tx.unprocessed_count(user_id)
        if waiting >= (self._ctx.config.batch_threshold or 0) and not self._locked(user_id):
            task = asyncio.create_task(self.process(user_id))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    def _locked(self, user_id: str) -> bool:
        lock = self._locks.get(user_id)
        return lock is not None and lock.locked()

    async def shutdown(self, wait: bool = True) -> None:
        tasks = list(self._background)
        if not tasks:
            return
        if not wait:
            for task in tasks:
                task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # -- leases -----------------------------------------------------------------------------------

    def _lease_us(self) -> int:
        return int(self._ctx.config.episode_lease_seconds * 1_000_000)

    @contextlib.asynccontextmanager
    async def _leases_renewed(self) -> AsyncIterator[None]:
        """While any `process` of this worker runs, a background task extends every lease it holds
        every third of a lease, so a slow model never loses its episodes to another worker, while a
        killed worker's leases simply run out."""
        self._lease_holders += 1
        if self._renewer is None:
            self._renewer = asyncio.create_task(self._renew_forever())
        try:
            yield
        finally:
            self._lease_holders -= 1
            if self._lease_holders == 0 and self._renewer is not None:
                renewer, self._renewer = self._renewer, None
                renewer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await renewer

    async def _renew_forever(self) -> None:
        period = max(self._ctx.config.episode_lease_seconds / 3, 0.01)
        while True:
            await asyncio.sleep(period)
            with contextlib.suppress(MemdeskError, OSError, RuntimeError):
                # A failed renewal is survivable: the write of a run checks the lease it holds.
                async with self._store.transaction() as tx:
                    await tx.renew_leases(self._token, to_us(self._ctx.now()) + self._lease_us())

    # -- processing -------------------------------------------------------------------------------

    async def process(
        self, user_id: str | None = None, *, concurrency: int = 1, progress: Progress | None = None
    ) -> ProcessReport:
        """Turn every unprocessed message (of one user, or of all) into episodes and candidates;
        failed episodes are retried. Up to `concurrency` users are processed at once (their model
        calls overlap; one user's episodes stay in order, since each predicts from the last).
        `progress(done, total)` is called as each user finishes."""
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise UserInputError(f"concurrency must be a whole number of at least 1, not {concurrency!r}")
        if user_id is None:
            async with self._store.reading() as tx:
                user_ids = await tx.users_with_work()
        else:
            user_ids = [user_id]
        gate = asyncio.Semaphore(concurrency)
        done = 0
        self._calibrated = False  # re-read the reviewers' decisions once per call (_calibrate)

        async def one(uid: str) -> ProcessReport:
            nonlocal done
            async with gate:
                lock = self._locks.setdefault(uid, asyncio.Lock())
                async with lock:
                    result = await self._process_user(uid)
            done += 1
            if progress is not None:
                progress(done, len(user_ids))
            return result

        async with self._leases_renewed():
            tasks = [asyncio.create_task(one(uid)) for uid in user_ids]
            try:
                results = await asyncio.gather(*tasks)
            except BaseException:  # the first error is the caller's; the other users stop
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise
        report = ProcessReport()
        for result in results:
            report.add(result)
        return report

    async def _process_user(self, user_id: str) -> ProcessReport:
        report = ProcessReport()
        cfg = self._ctx.config
        now_us: int = to_us(self._ctx.now())
        async with self._store.transaction() as tx:
            raw = [RawMessage(*r) for r in await tx.unprocessed_messages(user_id)]
            chunks = segment(raw, cfg.episode_gap, cfg.episode_max_messages)
            new = [(*title_and_narrative(c), [m.id for m in c], c[0].at, c[-1].at) for c in chunks]
            created = await tx.create_episodes(user_id, new, now_us)
            if created is None:  # cannot happen under BEGIN IMMEDIATE; refuse rather than double-process
                raise MemdeskError("messages were claimed by another process; retry")
            await tx.audit_many(
                [  # the assignment of messages to an episode is audited
                    {
                        "at": now_us,
                        "actor": "process",
                        "action": "create",
                        "user_id": user_id,
                        "entity": "episode",
                        "entity_id": eid,
                        "after": {
                            "message_ids": ids,
                            "start_at": from_us(start),
                            "end_at": from_us(end),
                            "title": title,
                        },
                    }
                    for eid, (title, _, ids, start, end) in zip(created, new, strict=True)
                ]
            )
            report.messages += sum(len(c) for c in chunks)
            claimed = await tx.claim_episodes(user_id, self._token, now_us, now_us + self._lease_us())
            report.leased_elsewhere, until = await tx.leases_elsewhere(user_id, self._token, now_us)
            report.leased_until = from_us(until)
            episodes = await tx.episodes_with_messages(claimed)
            view = await tx.gate_view(user_id)
        todo = [episodes[eid] for eid in claimed]
        batchable = bool(getattr(self.extractor, "batchable", False))
        while todo:
            if batchable and await self._batch(todo, view, report):
                continue
            if todo:  # after a slow extraction ended a batch, the next episode goes alone
                await self._alone(todo.pop(0), view, report)
        return report

    async def _alone(self, episode: Episode, view: GateView, report: ProcessReport) -> None:
        """One episode: extract with no lock held (a model call may take seconds), then one write
        transaction that re-reads the gates."""
        existing = await self._existing(episode, view)
        outcome = await self._extract(episode, existing)
        outcome.near = await self._neighbours(episode.user_id, outcome.extraction)
        try:
            async with self._store.transaction() as tx:
                if not await tx.held_episodes([episode.id], self._token):
                    raise _LeaseLost
                fresh = await tx.gate_view(episode.user_id, view.pending)
                writes = await self._writes(tx)
                await writes.reserve(outcome)
                self._record(episode, existing, outcome, fresh, report, writes)
                await writes.flush(tx)
        except _LeaseLost:
            report.add(self._lost(episode.id))
            return
        _adopt(view, fresh)

    async def _batch(self, todo: list[Episode], view: GateView, report: ProcessReport) -> bool:
        """Several episodes of one user in ONE write transaction, extracting inside it: only for an
        extractor that declares itself `batchable` (it computes in-process and never waits, like the
        offline one), for at most BATCH_HOLD_S, so a reviewer waits a fraction of a second at worst.
        While the write lock is held nobody else can change the user's queue, so the gate view read
        at the start stays exact from episode to episode, and the statements and the commit are
        shared. Returns False after an extraction slower than FAST_EXTRACTION_S (a huge message):
        the next episode then goes alone."""
        chunk = todo[:BATCH_EPISODES]
        facts = {e.id: await self._facts(e, view) for e in chunk} if view.active_ids else {}
        go_on = True
        async with self._store.transaction() as tx:
            held = await tx.held_episodes([e.id for e in chunk], self._token)
            fresh = await tx.gate_view(chunk[0].user_id, view.pending)
            writes = await self._writes(tx)
            since = time.perf_counter()
            for episode in chunk:
                todo.remove(episode)
                if episode.id not in held:
                    report.add(self._lost(episode.id))
                    continue
                existing = facts.get(episode.id, []) + self._pending_shown(episode, fresh)
                outcome = await self._extract(episode, existing)
                await writes.reserve(outcome)
                self._record(episode, existing, outcome, fresh, report, writes)
                if outcome.seconds >= FAST_EXTRACTION_S:
                    go_on = False
                    break
                if time.perf_counter() - since > BATCH_HOLD_S:
                    break
            await writes.flush(tx)
        _adopt(view, fresh)
        return go_on

    async def _writes(self, tx: PipelineTx) -> _Writes:
        return _Writes(tx.id_source("candidates"), tx.id_source("extraction_runs"))

    async def _facts(self, episode: Episode, view: GateView) -> list[Knowledge]:
        """The user's active facts most related to the episode (retrieval takes the read lock, so
        this runs outside any write transaction)."""
        if not self._ctx.config.predict or not view.active_ids:
            return []
        query = f"{episode.title}\n{episode.narrative}"
        result = await retrieve(
            self._ctx.store,
            self._ctx.embedder,
            query,
            user_id=episode.user_id,
            top_k=self._ctx.config.existing_k,
            vector_weight=self._ctx.config.vector_weight,
            text_weight=self._ctx.config.text_weight,
        )
        return [item.knowledge for item in result.items]

    def _pending_shown(self, episode: Episode, view: GateView) -> list[Knowledge]:
        cfg = self._ctx.config
        if not cfg.predict:
            return []
        return [pending_record(c) for c in _related(view.pending, episode, cfg.existing_pending_k)]

    async def _existing(self, episode: Episode, view: GateView) -> list[Knowledge]:
        return await self._facts(episode, view) + self._pending_shown(episode, view)

    async def _extract(self, episode: Episode, existing: list[Knowledge]) -> _Outcome:
        cfg = self._ctx.config
        mode = "extract_all" if not cfg.predict else ("predict" if existing else "cold_start")
        started = time.perf_counter()
        run: dict[str, Any] = {
            "episode_id": episode.id,
            "user_id": episode.user_id,
            "extractor": getattr(self.extractor, "name", type(self.extractor).__name__),
            "prompt_version": getattr(self.extractor, "prompt_version", None),
            "mode": mode,
            "existing_ids": json.dumps([k.id for k in existing]),
            "started_at": to_us(self._ctx.now()),
        }
        extraction: Extraction | None = None
        table = await self._calibrate()
        try:
            extraction = await self.extractor.extract(episode, existing)
            used = sorted({i.rule for i in extraction.items if i.rule is not None})
            if table is not None:  # the calibration this run used, per rule: [approved, rejected]
                run["calibration"] = json.dumps({r: list(table.get(r, (0, 0))) for r in used})
        except Exception as exc:
            run.update(error=f"{type(exc).__name__}: {exc}", finished_at=to_us(self._ctx.now()))
        seconds = time.perf_counter() - started
        # read after the call: an OpenAI extractor configured by URL alone learns its model then
        run.update(duration_ms=seconds * 1000, model=getattr(self.extractor, "model", None))
        return _Outcome(run, extraction, seconds)

    async def _neighbours(
        self, user_id: str, extraction: Extraction | None
    ) -> dict[str, tuple[list[tuple[int, str]], dict[int, Verdict]]]:
        """An extraction's statements (from an extractor that runs outside the write transaction:
        a model) against the user's active facts by the embedder, and by the judge when one is
        configured: what `_gate` turns into "may replace" marks or a judge's link. A batchable
        extractor (the offline one) relates its own statements by the claim model's templates."""
        if extraction is None:
            return {}
        texts = sorted({(i.statement or "").strip() for i in extraction.items} - {""})
        texts = [t for t in texts if has_visible_text(t) and len(t) <= self._ctx.config.max_statement_chars]
        if not texts:
            return {}
        vectors = await self._ctx.embedder.embed(texts)
        name = str(getattr(self._ctx.embedder, "name", "") or "")
        similarity = may_replace_similarity(name, self._ctx.config.may_replace_similarity)
        out: dict[str, tuple[list[tuple[int, str]], dict[int, Verdict]]] = {}
        async with self._store.reading() as tx:
            for text, vector in zip(texts, vectors, strict=True):
                near = await nearest_facts(tx, user_id, text, vector, similarity)
                if near:
                    out[text] = (near, {})
        judge = self._ctx.judge
        if judge is not None:
            for text, (near, verdicts) in out.items():
                verdicts.update((v.neighbour_id, v) for v in await judge.judge(text, near))
        return out

    async def _calibrate(self) -> dict[str, tuple[int, int]] | None:
        """Give an extractor that calibrates (it has a `calibration` table: the offline one) the
        reviewers' decisions per rule of its past candidates, read once per `process` call;
        None for an extractor that reports its own confidence (a model's is taken as given)."""
        extractor = self.extractor
        if not isinstance(extractor, Calibrating) or not isinstance(extractor.calibration, dict):
            return None
        if not self._calibrated:
            async with self._store.reading() as tx:
                extractor.calibration = await tx.rule_decisions(extractor.name)
            self._calibrated = True
        return extractor.calibration

    def _lost(self, episode_id: int) -> ProcessReport:
        lost = ProcessReport(leased_elsewhere=1)
        lost.errors.append(f"episode {episode_id}: its lease ran out and another worker took it; nothing stored")
        return lost

    def _add_run(self, writes: _Writes, run: dict[str, Any]) -> int:
        """The run row (a run is written once, finished) and its one audit row."""
        run["id"] = run_id = writes.run_ids.take()
        writes.runs.append(run)
        counts = {k: v for k, v in run.items() if k not in ("prediction", "covered", "existing_ids", "user_id", "id")}
        writes.audits.append(
            {
                "at": run.get("finished_at") or run["started_at"],
                "actor": f"extractor:{run['extractor']}",
                "action": "create",
                "user_id": run["user_id"],
                "entity": "extraction_run",
                "entity_id": run_id,
                "after": {**counts, "episode_status": "failed" if run.get("error") else "processed"},
            }
        )
        return run_id

    def _record(
        self,
        episode: Episode,
        existing: list[Knowledge],
        outcome: _Outcome,
        view: GateView,
        report: ProcessReport,
        writes: _Writes,
    ) -> None:
        """One episode's outcome, gated against `view`, into `writes` (flushed by the caller inside
        the write transaction that holds the episode's lease): its status, the run and its audit
        row, and for a successful extraction the candidates (with their audit rows) and the
        discarded statements. `view` gains what was queued, for the next episode."""
        run = outcome.run
        if outcome.extraction is None:
            writes.finished.append(("failed", run["error"], episode.id))
            self._add_run(writes, run)
            report.add(ProcessReport(episodes=1, failed=1, errors=[f"episode {episode.id}: {run['error']}"]))
            return
        writes.finished.append(("processed", None, episode.id))
        extraction = outcome.extraction
        user_id = episode.user_id
        now_us: int = to_us(self._ctx.now())
        actor = f"extractor:{run['extractor']}"
        counts = ProcessReport(episodes=1)
        gated = self._gate(episode, existing, extraction, view, counts, writes.candidate_ids, outcome.near)
        counts.claims = len(extraction.items) + len(extraction.covered)
        counts.queued = len(gated.survivors)
        run.update(
            prediction=extraction.prediction or "",
            covered=json.dumps(
                [{"statement": c.statement, "predicted_by": c.predicted_by} for c in extraction.covered]
            ),
            claims=counts.claims,
            predicted=counts.predicted,
            below_confidence=counts.below_confidence,
            invalid=counts.invalid,
            tombstoned=counts.tombstoned,
            duplicates=counts.duplicates,
            supersedes_dropped=counts.supersedes_dropped,
            unsupported=counts.unsupported,
            queued=counts.queued,
            dates_dropped=counts.dates_dropped,
            finished_at=now_us,
        )
        run_id = self._add_run(writes, run)
        cfg = self._ctx.config
        created = from_us(now_us)
        for s in gated.survivors:
            confidence = s.item.confidence
            if s.unsupported:
                confidence = max(0.0, confidence - cfg.unsupported_penalty)
            cand = Candidate(
                id=s.candidate_id,
                user_id=user_id,
                statement=s.item.statement,
                kind=s.item.kind,
                status="pending",
                confidence=round(confidence, 4),
                created_at=created,
                evidence=s.item.evidence or "",
                supersedes_id=s.supersedes_id,
                valid_at=from_us(s.start),
                invalid_at=from_us(s.end),
                episode_id=episode.id,
                run_id=run_id,
                unsupported=s.unsupported,
                extractor=run["extractor"],
                created_by=actor,
                supersedes_candidate_id=s.supersedes_candidate_id,
                category=category_of(s.item.statement, s.item.category),
                marks=s.marks,
            )
            view.pending.append(cand)
            writes.candidates.append(
                {
                    "id": cand.id,
                    "user_id": user_id,
                    "statement": cand.statement,
                    "kind": cand.kind,
                    "confidence": cand.confidence,
                    "created_at": now_us,
                    "evidence": cand.evidence,
                    "supersedes_id": cand.supersedes_id,
                    "supersedes_candidate_id": cand.supersedes_candidate_id,
                    "valid_at": s.start,
                    "invalid_at": s.end,
                    "episode_id": episode.id,
                    "run_id": run_id,
                    "unsupported": cand.unsupported,
                    "created_by": actor,
                    "category": cand.category,
                    "rule": s.item.rule,
                    "marks": s.marks,
                }
            )
            writes.audits.append(
                {
                    "at": now_us,
                    "actor": actor,
                    "action": "queue",
                    "user_id": user_id,
                    "entity": "candidate",
                    "entity_id": cand.id,
                    "after": {
                        "statement": cand.statement,
                        "kind": cand.kind,
                        "run_id": run_id,
                        "supersedes_id": cand.supersedes_id,
                        "supersedes_candidate_id": cand.supersedes_candidate_id,
                    },
                }
            )
        for d in gated.discards:
            d.update(user_id=user_id, episode_id=episode.id, run_id=run_id, created_at=now_us)
        writes.discards.extend(gated.discards)
        report.add(counts)

    def _gate(
        self,
        episode: Episode,
        existing: list[Knowledge],
        extraction: Extraction,
        view: GateView,
        report: ProcessReport,
        ids: IdSource,
        outcome_near: dict[str, tuple[list[tuple[int, str]], dict[int, Verdict]]] | None = None,
    ) -> _Gated:
        """Every gate, in order, for one extraction, against `view` (read in the write transaction);
        each survivor gets its candidate id from `ids` and joins `view.live` at once, so a repeat
        later in the same run is a duplicate of it. `outcome_near`: each statement's neighbours
        found before the transaction (`_neighbours`), still active ones become marks or a judge's
        link."""
        cfg = self._ctx.config
        outcome_near = outcome_near or {}
        out = _Gated()
        shown = {_entity_of(k): k for k in existing}
        pending = {c.id: c for c in view.pending}
        successors = _successors(view.pending)

        def matched(entity: tuple[str, int] | None) -> dict[str, Any]:
            if entity is None or entity not in shown:
                return {}
            return {"matched_entity": entity[0], "matched_id": entity[1], "matched_statement": shown[entity].statement}

        for claim in extraction.covered:
            report.predicted += 1
            out.discards.append(
                {
                    "gate": "predicted",
                    "statement": _clip(claim.statement, cfg.max_statement_chars),
                    "kind": "new",
                    **matched(parse_handle(claim.predicted_by)),
                }
            )
        for raw in extraction.items:
            item, dropped = _drop_unrepresentable_dates(raw)
            report.dates_dropped += dropped
            statement = (item.statement or "").strip()
            item = replace(item, statement=statement)
            base = {
                "statement": _clip(statement, cfg.max_statement_chars),
                "evidence": _clip(item.evidence or "", cfg.max_message_chars),
                "kind": item.kind,
                "confidence": item.confidence,
                "valid_at": _us_or_none(item.valid_at),
                "invalid_at": _us_or_none(item.invalid_at),
            }
            # A statement holding a credential marker is never queued (the value is gone, but a
            # fact about it would be noise at best): dropped as invalid, the marker shows why.
            if not has_visible_text(statement) or len(statement) > cfg.max_statement_chars or has_marker(statement):
                report.invalid += 1
                out.discards.append({**base, "gate": "invalid"})
                continue
            if item.confidence < cfg.confidence_threshold:
                report.below_confidence += 1
                out.discards.append({**base, "gate": "below_confidence"})
                continue
            try:
                start, end = check_interval(item.valid_at, item.invalid_at)
            except InvalidIntervalError:
                report.invalid += 1
                out.discards.append({**base, "gate": "invalid"})
                continue
            verdict = gate_verdict(view, statement)
            if verdict is not None:
                gate, (entity, ident, text) = verdict
                if gate == "tombstoned":
                    report.tombstoned += 1
                else:
                    report.duplicates += 1
                out.discards.append(
                    {**base, "gate": gate, "matched_entity": entity, "matched_id": ident, "matched_statement": text}
                )
                continue
            kind = item.kind
            sup_k: int | None = None
            sup_c: int | None = None
            if item.supersedes is not None or kind in _CHANGE_KINDS:
                target = parse_handle(item.supersedes)
                if target not in shown or not (
                    (target[0] == "knowledge" and target[1] in view.active_ids)
                    or (target[0] == "candidate" and target[1] in pending)
                ):
                    report.supersedes_dropped += 1
                    kind = "new"
                else:
                    entity, ident = _chain_head(target, successors)
                    sup_k, sup_c = (ident, None) if entity == "knowledge" else (None, ident)
                    if kind not in _CHANGE_KINDS:
                        kind = "update"
            said, supported = stated_at(item.evidence, episode.messages, cfg.evidence_threshold)
            stated_us: int = to_us(said or self._ctx.now())
            if sup_k is None and sup_c is None:
                # the value model's replacement (a statement with no handle, from any extractor), or
                # a value corrected away: approving it must ask the question. A statement with no
                # start of its own holds from when it was said, for the overlap test.
                valid = (start if start is not None else stated_us, end)
                found, target_id = replacement(view, statement, valid, claim_for(statement, item.slot))
                if target_id is not None:
                    kind, sup_k = found, target_id
            if kind in _CHANGE_KINDS and start is None and (end is None or end > stated_us):
                start = stated_us  # a change with no start of its own starts when it is stated
            marks = intake_marks(view, statement)
            if sup_k is None and sup_c is None and statement in outcome_near:
                near, verdicts = outcome_near[statement]
                alike = {m.target_id for m in marks if m.kind == "looks_like"}
                live = [(fid, text) for fid, text in near if fid in view.active_ids]
                linked, more = judged(live, alike, verdicts)
                marks += more
                if linked is not None:  # a judge's "replaces": a link, as the claim model's would be
                    kind, sup_k = ("update" if kind == "new" else kind), linked
            cid = ids.take()
            out.survivors.append(
                _Survivor(replace(item, kind=kind), start, end, not supported, sup_k, sup_c, cid, marks)
            )
            joined(view, "candidate", cid, statement)
        report.unsupported += sum(1 for s in out.survivors if s.unsupported)
        return out

    # -- curators: what the gates dropped ---------------------------------------------------------

    async def queue_discarded(self, discarded_id: int, actor: str, reason: str) -> Candidate:
        """Queue a dropped statement anyway, as a candidate of its user (a reviewer still decides):
        it passes the queue's one intake (engine.gate.screen), so a live tombstone still refuses it
        (TombstonedError), a value an active fact or pending candidate now holds refuses it
        (DuplicateCandidateError), and a statement about something the user has a fact for is
        queued as its update (else `new`; a target can be set with `review.retarget`). One transaction with its two
        audit rows; refused (ConflictError) when it was queued already, and (UserInputError) when
        it cannot be a candidate at all (empty, or an inverted interval)."""
        from ..limits import check_reason

        why = check_reason((reason or "").strip(), self._ctx.config)
        if not why:
            raise InvalidStatementError("queueing a discarded statement needs a reason")
        if not actor or not actor.strip():
            raise InvalidStatementError("queueing a discarded statement needs an actor")
        now_us: int = to_us(self._ctx.now())
        async with self._store.transaction() as tx:
            found = await tx.get_discarded(discarded_id)
            if found.queued_candidate_id is not None:
                raise ConflictError(
                    f"discarded statement {discarded_id} was already queued as candidate"
                    f" {found.queued_candidate_id} by {found.queued_by}"
                )
            statement = found.statement.strip()
            if not statement:
                raise InvalidStatementError(f"discarded statement {discarded_id} is empty; it cannot be queued")
            from ..limits import check_statement

            check_statement(statement, self._ctx.config)
            start, end = check_interval(found.valid_at, found.invalid_at)
            # the queue's one intake: a tombstone still refuses, a value now held refuses, and a
            # statement about something the user has a fact for is queued as its update
            screened = await screen(tx, found.user_id, statement, valid=(start if start is not None else now_us, end))
            if screened.duplicate_of is not None:
                raise DuplicateCandidateError(*screened.duplicate_of)
            cid = await tx.insert_candidate(
                user_id=found.user_id,
                statement=statement,
                kind=screened.kind,
                supersedes_id=screened.supersedes_id,
                confidence=found.confidence if found.confidence is not None else 1.0,
                created_at=now_us,
                evidence=found.evidence,
                valid_at=start,
                invalid_at=end,
                episode_id=found.episode_id,
                run_id=found.run_id,
                created_by=actor,
                reason=why,
                marks=screened.marks,
            )
            if not await tx.mark_discarded_queued(discarded_id, cid, actor, now_us):
                raise ConflictError(f"discarded statement {discarded_id} was queued by someone else just now")
            candidate = await tx.get_candidate(cid)
            await tx.audit(
                at=now_us,
                actor=actor,
                action="queue",
                user_id=found.user_id,
                entity="candidate",
                entity_id=cid,
                after=candidate,
                reason=why,
            )
            await tx.audit(
                at=now_us,
                actor=actor,
                action="queue_anyway",
                user_id=found.user_id,
                entity="discarded",
                entity_id=discarded_id,
                before=found,
                after=await tx.get_discarded(discarded_id),
                reason=why,
            )
            return candidate

    async def discarded(self, user_id: str | None = None, limit: int = 50, offset: int = 0) -> list[Discarded]:
        if limit < 0 or offset < 0:
            raise UserInputError("limit and offset must be 0 or more")
        async with self._store.reading() as tx:
            return await tx.list_discarded(user_id, limit=limit, offset=offset)


def _clip(text: str, limit: int) -> str:
    """A model's text kept for curators, at most `limit` characters: an oversized statement is
    dropped as invalid, and storing it whole would undo the limit."""
    return text if len(text) <= limit else f"{text[:limit]} …[{len(text):,} characters, cut]"


def _entity_of(record: Knowledge) -> tuple[str, int]:
    return ("candidate", record.candidate_id) if is_pending(record) else ("knowledge", record.id)  # type: ignore[return-value]


def _successors(pending: list[Candidate]) -> dict[tuple[str, int], list[int]]:
    """What each fact or candidate is already being replaced by: pending candidate ids."""
    out: dict[tuple[str, int], list[int]] = {}
    for c in pending:
        if c.supersedes_candidate_id is not None:
            out.setdefault(("candidate", c.supersedes_candidate_id), []).append(c.id)
        elif c.supersedes_id is not None:
            out.setdefault(("knowledge", c.supersedes_id), []).append(c.id)
    return out


def _chain_head(target: tuple[str, int], successors: dict[tuple[str, int], list[int]]) -> tuple[str, int]:
    """Follow pending replacements from `target` to the latest one: "Porto" after a pending
    "Lisbon" that replaces the fact "Berlin" replaces the Lisbon candidate, even when the
    extractor named Berlin, so approving both can never leave two homes active."""
    seen = {target}
    while target in successors:
        nxt = ("candidate", max(successors[target]))
        if nxt in seen:
            break
        seen.add(nxt)
        target = nxt
    return target


def _related(pending: list[Candidate], episode: Episode, k: int) -> list[Candidate]:
    """All pending candidates up to `k`; beyond that the `k` whose statements share most with the
    episode's narrative (kept in queue order)."""
    if len(pending) <= k:
        return pending
    scored = sorted(pending, key=lambda c: fuzz.token_set_ratio(c.statement, episode.narrative), reverse=True)[:k]
    keep = {c.id for c in scored}
    return [c for c in pending if c.id in keep]


def _representable(value: datetime | None) -> bool:
    """Naive datetimes pass here: the interval check refuses them (counted invalid)."""
    if value is None or value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        return True
    try:
        return EARLIEST <= value.astimezone(EARLIEST.tzinfo) <= LATEST
    except (OverflowError, ValueError):
        return False


def _drop_unrepresentable_dates(item: GapItem) -> tuple[GapItem, int]:
    """An extractor's date outside EARLIEST..LATEST is removed from its item (the item stays)."""
    drop = {name: None for name in ("valid_at", "invalid_at") if not _representable(getattr(item, name))}
    return (replace(item, **drop), len(drop)) if drop else (item, 0)  # type: ignore[arg-type]


def _us_or_none(value: datetime | None) -> int | None:
    try:
        return to_us(value)
    except (MemdeskError, OverflowError):
        return None

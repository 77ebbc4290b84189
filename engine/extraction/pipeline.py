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

from .. import store
from ..errors import (
    ConflictError,
    InvalidIntervalError,
    InvalidStatementError,
    MemdeskError,
    UserInputError,
)
from ..models import Candidate, Discarded, Episode, Extraction, GapItem, Knowledge, Message, ProcessReport
from ..text import value_key
from ..timeutil import EARLIEST, LATEST, check_interval, ensure_utc, from_us, to_us
from .base import is_pending, parse_handle, pending_record
from .episodes import RawMessage, segment, title_and_narrative

if TYPE_CHECKING:
    from ..memory import Memory

Progress = Callable[[int, int], None]
_CHANGE_KINDS = ("update", "contradiction")


class _LeaseLost(Exception):
    """Another worker took the episode after this worker's lease ran out: store nothing."""


@dataclass(slots=True)
class _Survivor:
    item: GapItem
    key: str
    start: int | None
    end: int | None
    unsupported: bool
    supersedes_id: int | None = None
    supersedes_candidate_id: int | None = None
    candidate_id: int | None = None  # once inserted


@dataclass(slots=True)
class _Gated:
    """The outcome of the gates for one extraction: what to queue and what to keep as discarded."""

    survivors: list[_Survivor] = field(default_factory=list)
    discards: list[dict[str, Any]] = field(default_factory=list)
    # discards that duplicate an item queued earlier in the same run: (discard index, survivor index)
    same_run: list[tuple[int, int]] = field(default_factory=list)


class Pipeline:
    def __init__(self, memory: Memory, extractor: Any = None) -> None:
        self._m = memory
        if extractor is None:
            from .offline import OfflineExtractor

            extractor = OfflineExtractor()
        self.extractor = extractor
        self._locks: dict[str, asyncio.Lock] = {}
        self._background: set[asyncio.Task[ProcessReport]] = set()
        self._token = f"proc-{uuid.uuid4().hex[:12]}"
        self._lease_holders = 0
        self._renewer: asyncio.Task[None] | None = None

    # -- capture ----------------------------------------------------------------------------------

    async def add_exchange(
        self, user_id: str, user_msg: str, assistant_msg: str | None, at: datetime | None = None
    ) -> list[int]:
        """Store the two messages and return; no model call (extraction is `process`)."""
        return (await self.add_exchanges([(user_id, user_msg, assistant_msg, at)]))[0]

    async def add_exchanges(
        self, exchanges: Sequence[tuple[str, str, str | None, datetime | None]]
    ) -> list[list[int]]:
        """Many exchanges in ONE transaction: all stored or none (ingest relies on this)."""
        now = self._m.now()
        rows: list[tuple[str, str, str, int]] = []
        spans: list[int] = []
        for user_id, user_msg, assistant_msg, at in exchanges:
            if not user_id or not str(user_id).strip():
                raise InvalidStatementError("an exchange needs a user_id")
            if not isinstance(user_msg, str) or not user_msg.strip():
                raise InvalidStatementError(f"the user message of {user_id!r} is empty")
            when: int = to_us(ensure_utc(at, "at") if at is not None else now)  # type: ignore[assignment]
            rows.append((user_id, "user", user_msg, when))
            count = 1
            if assistant_msg is not None and assistant_msg.strip():
                rows.append((user_id, "assistant", assistant_msg, when))
                count = 2
            spans.append(count)
        async with self._m.db.transaction() as conn:
            ids = await store.insert_messages(conn, rows)
            out, pos = [], 0
            for (user_id, *_), count in zip(exchanges, spans, strict=True):
                batch = ids[pos : pos + count]
                pos += count
                out.append(batch)
                await store.audit(conn, at=to_us(now), actor="capture", action="capture", user_id=user_id,  # type: ignore[arg-type]
                                  entity="message", entity_id=batch[0], after={"message_ids": batch})
        if self._m.config.batch_threshold:
            for user_id in dict.fromkeys(e[0] for e in exchanges):
                await self._maybe_background(user_id)
        return out

    async def _maybe_background(self, user_id: str) -> None:
        async with self._m.db.reading() as conn:
            waiting = await store.unprocessed_count(conn, user_id)
        if waiting >= (self._m.config.batch_threshold or 0) and not self._locked(user_id):
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
        return int(self._m.config.episode_lease_seconds * 1_000_000)

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
        period = max(self._m.config.episode_lease_seconds / 3, 0.01)
        while True:
            await asyncio.sleep(period)
            with contextlib.suppress(MemdeskError, OSError, RuntimeError):
                # A failed renewal is survivable: the write of a run checks the lease it holds.
                async with self._m.db.transaction() as conn:
                    await store.renew_leases(conn, self._token, to_us(self._m.now()) + self._lease_us())  # type: ignore[operator]

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
            async with self._m.db.reading() as conn:
                user_ids = await store.users_with_work(conn)
        else:
            user_ids = [user_id]
        gate = asyncio.Semaphore(concurrency)
        done = 0

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
        cfg = self._m.config
        now_us: int = to_us(self._m.now())  # type: ignore[assignment]
        async with self._m.db.transaction() as conn:
            raw = [RawMessage(*r) for r in await store.unprocessed_messages(conn, user_id)]
            audits: list[dict[str, Any]] = []
            for chunk in segment(raw, cfg.episode_gap, cfg.episode_max_messages):
                title, narrative = title_and_narrative(chunk)
                message_ids = [m.id for m in chunk]
                eid = await store.create_episode(
                    conn, user_id=user_id, title=title, narrative=narrative, message_ids=message_ids,
                    start_at=chunk[0].at, end_at=chunk[-1].at, created_at=now_us,
                )
                if eid is None:  # cannot happen under BEGIN IMMEDIATE; refuse rather than double-process
                    raise MemdeskError("messages were claimed by another process; retry")
                audits.append({
                    "at": now_us, "actor": "process", "action": "create", "user_id": user_id, "entity": "episode",
                    "entity_id": eid, "after": {"message_ids": message_ids, "start_at": from_us(chunk[0].at),
                                                "end_at": from_us(chunk[-1].at), "title": title},
                })
                report.messages += len(chunk)
            await store.audit_many(conn, audits)
            claimed = await store.claim_episodes(conn, user_id, self._token, now_us, now_us + self._lease_us())
            report.leased_elsewhere, until = await store.leases_elsewhere(conn, user_id, self._token, now_us)
            report.leased_until = from_us(until)
            # Read once per user; after that each episode's write transaction hands the next one
            # what it read and queued (the gates themselves always re-read inside their write).
            episodes = await store.episodes_with_messages(conn, claimed)
            known = await store.gate_view(conn, user_id) if claimed else None
        for episode_id in claimed:
            assert known is not None
            done, known = await self._process_episode(episodes[episode_id], known)
            report.add(done)
        return report

    async def _process_episode(
        self, episode: Episode, known: store.GateView
    ) -> tuple[ProcessReport, store.GateView]:
        """Extract one episode and store the outcome; returns the report and what the user's
        queue looks like afterwards (for the next episode's `existing`)."""
        report = ProcessReport(episodes=1)
        cfg = self._m.config
        episode_id = episode.id
        pending = known.pending if cfg.predict else []
        facts = len(known.active_ids) if cfg.predict else 0
        existing: list[Knowledge] = []
        if facts:
            query = f"{episode.title}\n{episode.narrative}"
            result = await self._m.retrieve(query, user_id=episode.user_id, top_k=cfg.existing_k)
            existing = [item.knowledge for item in result.items]
        existing += [pending_record(c) for c in _related(pending, episode, cfg.existing_pending_k)]
        mode = "extract_all" if not cfg.predict else ("predict" if existing else "cold_start")
        started = time.perf_counter()
        started_us: int = to_us(self._m.now())  # type: ignore[assignment]
        run = {
            "episode_id": episode_id, "user_id": episode.user_id,
            "extractor": getattr(self.extractor, "name", type(self.extractor).__name__),
            "prompt_version": getattr(self.extractor, "prompt_version", None),
            "mode": mode, "existing_ids": json.dumps([k.id for k in existing]), "started_at": started_us,
        }
        try:
            extraction: Extraction = await self.extractor.extract(episode, existing)
        except Exception as exc:
            run["model"] = getattr(self.extractor, "model", None)
            error = f"{type(exc).__name__}: {exc}"
            run.update(finished_at=to_us(self._m.now()), duration_ms=(time.perf_counter() - started) * 1000,
                       error=error)
            try:
                async with self._m.db.transaction() as conn:
                    await self._finish(conn, episode, "failed", error)
                    await store.audit_many(conn, [(await self._insert_run(conn, run))[1]])
            except _LeaseLost:
                return self._lost(episode_id), known
            report.failed += 1
            report.errors.append(f"episode {episode_id}: {error}")
            return report, known
        # read after the call: an OpenAI extractor configured by URL alone learns its model then
        run.update(duration_ms=(time.perf_counter() - started) * 1000, model=getattr(self.extractor, "model", None))
        try:
            after = await self._store_extraction(episode, existing, extraction, run, report, known)
        except _LeaseLost:
            return self._lost(episode_id), known
        return report, after

    def _lost(self, episode_id: int) -> ProcessReport:
        lost = ProcessReport(leased_elsewhere=1)
        lost.errors.append(f"episode {episode_id}: its lease ran out and another worker took it; nothing stored")
        return lost

    async def _finish(self, conn: Any, episode: Episode, status: str, error: str | None) -> None:
        if not await store.finish_episode(conn, episode.id, status=status, error=error, token=self._token):
            raise _LeaseLost

    async def _insert_run(self, conn: Any, run: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The run row (a run is written once, finished) and its one audit row, for the caller to
        write with the others of the transaction in one executemany."""
        run_id = await store.insert_run(conn, **run)
        counts = {k: v for k, v in run.items() if k not in ("prediction", "covered", "existing_ids", "user_id")}
        return run_id, {
            "at": run.get("finished_at") or run["started_at"], "actor": f"extractor:{run['extractor']}",
            "action": "create", "user_id": run["user_id"], "entity": "extraction_run", "entity_id": run_id,
            "after": {**counts, "episode_status": "failed" if run.get("error") else "processed"},
        }

    async def _store_extraction(
        self, episode: Episode, existing: list[Knowledge], extraction: Extraction, run: dict[str, Any],
        report: ProcessReport, known: store.GateView,
    ) -> store.GateView:
        user_id = episode.user_id
        now_us: int = to_us(self._m.now())  # type: ignore[assignment]
        actor = f"extractor:{run['extractor']}"
        async with self._m.db.transaction() as conn:
            await self._finish(conn, episode, "processed", None)
            view = await store.gate_view(conn, user_id, known.pending)
            gated = self._gate(episode, existing, extraction, view, report)
            report.claims += len(extraction.items) + len(extraction.covered)
            report.queued += len(gated.survivors)
            run.update(
                prediction=extraction.prediction or "",
                covered=json.dumps([{"statement": c.statement, "predicted_by": c.predicted_by}
                                    for c in extraction.covered]),
                claims=report.claims, predicted=report.predicted, below_confidence=report.below_confidence,
                invalid=report.invalid, tombstoned=report.tombstoned, duplicates=report.duplicates,
                supersedes_dropped=report.supersedes_dropped, unsupported=report.unsupported, queued=report.queued,
                dates_dropped=report.dates_dropped, finished_at=now_us,
            )
            run_id, run_audit = await self._insert_run(conn, run)
            cfg = self._m.config
            rows = []
            for s in gated.survivors:
                confidence = s.item.confidence
                if s.unsupported:
                    confidence = max(0.0, confidence - cfg.unsupported_penalty)
                rows.append({
                    "user_id": user_id, "statement": s.item.statement, "kind": s.item.kind,
                    "confidence": round(confidence, 4), "created_at": now_us, "evidence": s.item.evidence or "",
                    "supersedes_id": s.supersedes_id, "supersedes_candidate_id": s.supersedes_candidate_id,
                    "valid_at": s.start, "invalid_at": s.end, "episode_id": episode.id, "run_id": run_id,
                    "unsupported": s.unsupported, "created_by": actor,
                })
            ids = await store.insert_candidates_many(conn, rows)
            for s, cid in zip(gated.survivors, ids, strict=True):
                s.candidate_id = cid
            await store.audit_many(conn, [run_audit, *(
                {"at": now_us, "actor": actor, "action": "queue", "user_id": user_id, "entity": "candidate",
                 "entity_id": cid, "after": {"statement": s.item.statement, "kind": s.item.kind, "run_id": run_id,
                                             "supersedes_id": s.supersedes_id,
                                             "supersedes_candidate_id": s.supersedes_candidate_id}}
                for s, cid in zip(gated.survivors, ids, strict=True)
            )])
            for d_index, s_index in gated.same_run:
                gated.discards[d_index]["matched_id"] = gated.survivors[s_index].candidate_id
            for d in gated.discards:
                d.update(user_id=user_id, episode_id=episode.id, run_id=run_id, created_at=now_us)
            await store.insert_discarded_many(conn, gated.discards)
        created = from_us(now_us)
        view.pending.extend(
            Candidate(id=cid, user_id=user_id, statement=row["statement"], kind=row["kind"], status="pending",
                      confidence=row["confidence"], created_at=created, evidence=row["evidence"],  # type: ignore[arg-type]
                      supersedes_id=row["supersedes_id"], valid_at=from_us(row["valid_at"]),
                      invalid_at=from_us(row["invalid_at"]), episode_id=episode.id, run_id=run_id,
                      unsupported=row["unsupported"], extractor=run["extractor"], created_by=actor,
                      supersedes_candidate_id=row["supersedes_candidate_id"])
            for cid, row in zip(ids, rows, strict=True)
        )
        return view

    def _gate(
        self, episode: Episode, existing: list[Knowledge], extraction: Extraction, view: store.GateView,
        report: ProcessReport,
    ) -> _Gated:
        """Every gate, in order, for one extraction, against `view` (read in the write transaction)."""
        cfg = self._m.config
        out = _Gated()
        shown = {_entity_of(k): k for k in existing}
        pending = {c.id: c for c in view.pending}
        successors = _successors(view.pending)
        user_msgs = [m for m in episode.messages if m.role == "user"]

        def matched(entity: tuple[str, int] | None) -> dict[str, Any]:
            if entity is None or entity not in shown:
                return {}
            return {"matched_entity": entity[0], "matched_id": entity[1], "matched_statement": shown[entity].statement}

        for claim in extraction.covered:
            report.predicted += 1
            out.discards.append({"gate": "predicted", "statement": _clip(claim.statement, cfg.max_statement_chars),
                                 "kind": "new",
                                 **matched(parse_handle(claim.predicted_by))})
        for raw in extraction.items:
            item, dropped = _drop_unrepresentable_dates(raw)
            report.dates_dropped += dropped
            statement = (item.statement or "").strip()
            item = replace(item, statement=statement)
            base = {"statement": _clip(statement, cfg.max_statement_chars),
                    "evidence": _clip(item.evidence or "", cfg.max_message_chars), "kind": item.kind,
                    "confidence": item.confidence, "valid_at": _us_or_none(item.valid_at),
                    "invalid_at": _us_or_none(item.invalid_at)}
            if not statement or len(statement) > cfg.max_statement_chars:
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
            key = value_key(statement)
            stone = view.tombstones.find(key)
            if stone is not None:
                report.tombstoned += 1
                out.discards.append({**base, "gate": "tombstoned", "matched_entity": "tombstone",
                                     "matched_id": stone[1], "matched_statement": stone[2]})
                continue
            dup = view.live.find(key)
            if dup is not None:
                report.duplicates += 1
                entity, ident, text = dup
                if entity == "survivor":
                    out.same_run.append((len(out.discards), ident))
                    entity = "candidate"
                out.discards.append({**base, "gate": "duplicate", "matched_entity": entity, "matched_id": ident,
                                     "matched_statement": text})
                continue
            kind = item.kind
            sup_k: int | None = None
            sup_c: int | None = None
            if item.supersedes is not None or kind in _CHANGE_KINDS:
                target = parse_handle(item.supersedes)
                if target not in shown or not (
                    (target[0] == "knowledge" and target[1] in view.active_ids)  # type: ignore[index]
                    or (target[0] == "candidate" and target[1] in pending)  # type: ignore[index]
                ):
                    report.supersedes_dropped += 1
                    kind = "new"
                else:
                    entity, ident = _chain_head(target, successors)  # type: ignore[arg-type]
                    sup_k, sup_c = (ident, None) if entity == "knowledge" else (None, ident)
                    if kind not in _CHANGE_KINDS:
                        kind = "update"
            stated_at, supported = _stated_at(item.evidence, user_msgs, episode.messages, cfg.evidence_threshold)
            stated_us: int = to_us(stated_at)  # type: ignore[assignment]
            if kind in _CHANGE_KINDS and start is None and (end is None or end > stated_us):
                start = stated_us  # a change with no start of its own starts when it is stated
            out.survivors.append(_Survivor(replace(item, kind=kind), key, start, end, not supported, sup_k, sup_c))
            view.live.add(key, ("survivor", len(out.survivors) - 1, statement))
        report.unsupported += sum(1 for s in out.survivors if s.unsupported)
        return out

    # -- curators: what the gates dropped ---------------------------------------------------------

    async def queue_discarded(self, discarded_id: int, actor: str, reason: str) -> Candidate:
        """Queue a dropped statement anyway, as a `new` candidate of its user (a reviewer still
        decides; an update target can be set with `review.retarget`). One transaction with its two
        audit rows; refused (ConflictError) when it was queued already, and (UserInputError) when
        it cannot be a candidate at all (empty, or an inverted interval)."""
        from ..limits import check_reason

        why = check_reason((reason or "").strip(), self._m.config)
        if not why:
            raise InvalidStatementError("queueing a discarded statement needs a reason")
        if not actor or not actor.strip():
            raise InvalidStatementError("queueing a discarded statement needs an actor")
        now_us: int = to_us(self._m.now())  # type: ignore[assignment]
        async with self._m.db.transaction() as conn:
            found = await store.get_discarded(conn, discarded_id)
            if found.queued_candidate_id is not None:
                raise ConflictError(
                    f"discarded statement {discarded_id} was already queued as candidate"
                    f" {found.queued_candidate_id} by {found.queued_by}"
                )
            statement = found.statement.strip()
            if not statement:
                raise InvalidStatementError(f"discarded statement {discarded_id} is empty; it cannot be queued")
            from ..limits import check_statement

            check_statement(statement, self._m.config)
            start, end = check_interval(found.valid_at, found.invalid_at)
            cid = await store.insert_candidate(
                conn, user_id=found.user_id, statement=statement, kind="new",
                confidence=found.confidence if found.confidence is not None else 1.0, created_at=now_us,
                evidence=found.evidence, valid_at=start, invalid_at=end, episode_id=found.episode_id,
                run_id=found.run_id, created_by=actor, reason=why,
            )
            if not await store.mark_discarded_queued(conn, discarded_id, cid, actor, now_us):
                raise ConflictError(f"discarded statement {discarded_id} was queued by someone else just now")
            candidate = await store.get_candidate(conn, cid)
            await store.audit(conn, at=now_us, actor=actor, action="queue", user_id=found.user_id, entity="candidate",
                              entity_id=cid, after=candidate, reason=why)
            await store.audit(conn, at=now_us, actor=actor, action="queue_anyway", user_id=found.user_id,
                              entity="discarded", entity_id=discarded_id, before=found,
                              after=await store.get_discarded(conn, discarded_id), reason=why)
            return candidate

    async def discarded(self, user_id: str | None = None, limit: int = 50, offset: int = 0) -> list[Discarded]:
        if limit < 0 or offset < 0:
            raise UserInputError("limit and offset must be 0 or more")
        async with self._m.db.reading() as conn:
            return await store.list_discarded(conn, user_id, limit=limit, offset=offset)


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


def _stated_at(
    evidence: str, user_msgs: list[Message], messages: list[Message], threshold: float
) -> tuple[datetime, bool]:
    """(when the statement was made, whether the evidence quote is in the user's messages): the
    message holding the quote (exactly, else the closest above `threshold`), else the episode's last
    user message."""
    quote = (evidence or "").strip().casefold()
    fallback = (user_msgs or messages)[-1].at
    if not quote:
        return fallback, False
    best: tuple[float, Message] | None = None
    for m in user_msgs:
        text = m.content.casefold()
        if quote in text:
            return m.at, True
        score = fuzz.partial_ratio(quote, text)
        if score >= threshold and (best is None or score > best[0]):
            best = (score, m)
    return (best[1].at, True) if best is not None else (fallback, False)

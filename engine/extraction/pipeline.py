"""The write path: capture exchanges, then turn unprocessed messages into episodes, extraction runs
and pending candidates, with every gate counted on the run.

Order of the gates (each item stops at the first it fails, and that gate's counter goes up):
  predicted (the prediction already held the claim: the extractor reports it in `covered`)
  -> confidence below the threshold -> invalid interval -> tombstoned for this user
  -> duplicate of an ACTIVE fact or PENDING candidate of this user (or of an item queued earlier
     in the same run).
A `supersedes` handle must name an active fact of this user that was shown to the extractor;
anything else is dropped from the item (which stays, as `new`) and counted.

Concurrency: an asyncio lock per user inside one process, and in the database an episode lease
(claimed_by / claimed_until), so two `process` calls never extract the same messages twice.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from rapidfuzz import fuzz

from .. import store
from ..errors import InvalidIntervalError, InvalidStatementError, MemdeskError
from ..models import Episode, Extraction, GapItem, Knowledge, ProcessReport
from ..text import best_match, value_key
from ..timeutil import check_interval, ensure_utc, to_us
from .episodes import RawMessage, segment, title_and_narrative

if TYPE_CHECKING:
    from ..memory import Memory

EPISODE_LEASE = timedelta(minutes=10)


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

    # -- processing -------------------------------------------------------------------------------

    async def process(self, user_id: str | None = None) -> ProcessReport:
        """Turn every unprocessed message (of one user, or of all) into episodes and candidates;
        failed episodes are retried."""
        report = ProcessReport()
        if user_id is None:
            async with self._m.db.reading() as conn:
                user_ids = await store.users_with_work(conn)
        else:
            user_ids = [user_id]
        for uid in user_ids:
            lock = self._locks.setdefault(uid, asyncio.Lock())
            async with lock:
                report.add(await self._process_user(uid))
        return report

    async def _process_user(self, user_id: str) -> ProcessReport:
        report = ProcessReport()
        cfg = self._m.config
        now_us: int = to_us(self._m.now())  # type: ignore[assignment]
        async with self._m.db.transaction() as conn:
            raw = [RawMessage(*r) for r in await store.unprocessed_messages(conn, user_id)]
            for chunk in segment(raw, cfg.episode_gap, cfg.episode_max_messages):
                title, narrative = title_and_narrative(chunk)
                eid = await store.create_episode(
                    conn, user_id=user_id, title=title, narrative=narrative, message_ids=[m.id for m in chunk],
                    start_at=chunk[0].at, end_at=chunk[-1].at, created_at=now_us,
                )
                if eid is None:  # cannot happen under BEGIN IMMEDIATE; refuse rather than double-process
                    raise MemdeskError("messages were claimed by another process; retry")
                report.messages += len(chunk)
            claimed = await store.claim_episodes(
                conn, user_id, self._token, now_us, now_us + int(EPISODE_LEASE.total_seconds() * 1e6)
            )
        for episode_id in claimed:
            report.add(await self._process_episode(episode_id))
        return report

    async def _process_episode(self, episode_id: int) -> ProcessReport:
        report = ProcessReport(episodes=1)
        cfg = self._m.config
        async with self._m.db.reading() as conn:
            episode = await store.episode_with_messages(conn, episode_id)
        assert episode is not None
        existing: list[Knowledge] = []
        if cfg.predict:
            query = f"{episode.title}\n{episode.narrative}"
            result = await self._m.retrieve(query, user_id=episode.user_id, top_k=cfg.existing_k)
            existing = [item.knowledge for item in result.items]
        mode = "extract_all" if not cfg.predict else ("predict" if existing else "cold_start")
        started = time.perf_counter()
        started_us: int = to_us(self._m.now())  # type: ignore[assignment]
        extractor_name = getattr(self.extractor, "name", type(self.extractor).__name__)
        model = getattr(self.extractor, "model", None)
        try:
            extraction: Extraction = await self.extractor.extract(episode, existing)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            async with self._m.db.transaction() as conn:
                await store.insert_run(
                    conn, episode_id=episode_id, user_id=episode.user_id, extractor=extractor_name, model=model,
                    mode=mode, existing_ids=json.dumps([k.id for k in existing]), started_at=started_us,
                    finished_at=to_us(self._m.now()), duration_ms=(time.perf_counter() - started) * 1000,
                    error=error,
                )
                await store.finish_episode(conn, episode_id, status="failed", error=error)
            report.failed += 1
            report.errors.append(f"episode {episode_id}: {error}")
            return report
        duration_ms = (time.perf_counter() - started) * 1000
        await self._store_extraction(episode, existing, extraction, mode, extractor_name, model, started_us,
                                     duration_ms, report)
        return report

    async def _store_extraction(
        self, episode: Episode, existing: list[Knowledge], extraction: Extraction, mode: str,
        extractor_name: str, model: str | None, started_us: int, duration_ms: float, report: ProcessReport,
    ) -> None:
        cfg = self._m.config
        user_id = episode.user_id
        shown = {str(k.id): k for k in existing}
        user_texts = [m.content.casefold() for m in episode.messages if m.role == "user"]
        report.claims += len(extraction.items) + len(extraction.covered)
        report.predicted += len(extraction.covered)
        now_us: int = to_us(self._m.now())  # type: ignore[assignment]
        async with self._m.db.transaction() as conn:
            live = [k for k, _, _ in await store.live_keys(conn, user_id)]
            active_ids = {
                k.id for k in (await store.knowledge_by_ids(conn, [k.id for k in existing])).values()
                if k.status == "active" and k.user_id == user_id
            }
            survivors: list[tuple[GapItem, int | None, int | None, int | None, bool]] = []
            for item in extraction.items:
                statement = (item.statement or "").strip()
                if not statement:
                    report.invalid += 1
                    continue
                if item.confidence < cfg.confidence_threshold:
                    report.below_confidence += 1
                    continue
                try:
                    start, end = check_interval(item.valid_at, item.invalid_at)
                except InvalidIntervalError:
                    report.invalid += 1
                    continue
                if await store.matching_tombstone(conn, user_id, statement, cfg.tombstone_threshold):
                    report.tombstoned += 1
                    continue
                key = value_key(statement)
                if best_match(key, live, cfg.duplicate_threshold) is not None:
                    report.duplicates += 1
                    continue
                live.append(key)
                supersedes: int | None = None
                kind = item.kind
                if item.supersedes is not None or kind in ("update", "contradiction"):
                    target = shown.get(str(item.supersedes)) if item.supersedes is not None else None
                    if target is not None and target.id in active_ids:
                        supersedes = target.id
                    else:
                        report.supersedes_dropped += 1
                        kind = "new"
                unsupported = not _evidence_found(item.evidence, user_texts, cfg.evidence_threshold)
                survivors.append((replace(item, statement=statement, kind=kind), supersedes, start, end, unsupported))
            report.unsupported += sum(1 for s in survivors if s[4])
            report.queued += len(survivors)
            run_id = await store.insert_run(
                conn, episode_id=episode.id, user_id=user_id, extractor=extractor_name, model=model, mode=mode,
                prediction=extraction.prediction or "", existing_ids=json.dumps([k.id for k in existing]),
                covered=json.dumps([{"statement": c.statement, "predicted_by": c.predicted_by}
                                    for c in extraction.covered]),
                claims=len(extraction.items) + len(extraction.covered), predicted=len(extraction.covered),
                below_confidence=report.below_confidence, invalid=report.invalid, tombstoned=report.tombstoned,
                duplicates=report.duplicates, supersedes_dropped=report.supersedes_dropped,
                unsupported=report.unsupported, queued=report.queued, started_at=started_us, finished_at=now_us,
                duration_ms=duration_ms,
            )
            actor = f"extractor:{extractor_name}"
            for item, supersedes, start, end, unsupported in survivors:
                confidence = max(0.0, item.confidence - cfg.unsupported_penalty) if unsupported else item.confidence
                cid = await store.insert_candidate(
                    conn, user_id=user_id, statement=item.statement, kind=item.kind, confidence=round(confidence, 4),
                    created_at=now_us, evidence=item.evidence or "", supersedes_id=supersedes, valid_at=start,
                    invalid_at=end, episode_id=episode.id, run_id=run_id, unsupported=unsupported, created_by=actor,
                )
                await store.audit(conn, at=now_us, actor=actor, action="queue", user_id=user_id, entity="candidate",
                                  entity_id=cid, after={"statement": item.statement, "kind": item.kind,
                                                        "run_id": run_id, "supersedes_id": supersedes})
            await store.finish_episode(conn, episode.id, status="processed")


def _evidence_found(evidence: str, user_texts: list[str], threshold: float) -> bool:
    quote = (evidence or "").strip().casefold()
    if not quote:
        return False
    return any(quote in text or fuzz.partial_ratio(quote, text) >= threshold for text in user_texts)


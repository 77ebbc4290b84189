"""What the criterion does, measured: extraction rate, discards by gate, and review outcomes.

The extraction rate is queued / claims: of everything the extractor found in the messages, how
much reached a human. The discards say where the rest went (the `predicted` count is the
predict–calibrate criterion at work). Review outcomes by kind and by extractor say whether what
reached the human was worth their time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from .models import to_jsonable
from .storage.sql.stats import CONFIDENCE_BUCKETS, RUN_GATES
from .timeutil import from_us, to_us

if TYPE_CHECKING:
    from .context import EngineContext

DISCARD_GATES = ("predicted", "below_confidence", "invalid", "tombstoned", "duplicate")


@dataclass(slots=True)
class Outcome:
    """Decisions on some candidates: approved, rejected, and approved / decided (None: none decided)."""

    approved: int = 0
    rejected: int = 0
    approval_rate: float | None = None

    def settle(self) -> None:
        self.approval_rate = _rate(self.approved, self.approved + self.rejected)


@dataclass(slots=True)
class VersionOutcome(Outcome):
    """Decisions on the candidates of one extractor, model and prompt version."""

    extractor: str = ""
    model: str | None = None
    prompt_version: str | None = None


@dataclass(frozen=True, slots=True)
class QueueAge:
    """The oldest pending candidate against the review SLA."""

    sla_hours: float
    oldest_pending_at: datetime | None
    oldest_pending_hours: float | None
    past_sla: int


@dataclass(frozen=True, slots=True)
class QueueStats:
    pending: int
    approved: int
    rejected: int
    pending_by_kind: dict[str, int]
    age: QueueAge


@dataclass(frozen=True, slots=True)
class KnowledgeStats:
    """Facts by status."""

    active: int
    superseded: int
    retracted: int


@dataclass(frozen=True, slots=True)
class EpisodeStats:
    """Episodes by status."""

    open: int
    processed: int
    failed: int


@dataclass(frozen=True, slots=True)
class ExtractorRuns:
    """The runs of one extractor and what they found and queued."""

    runs: int
    claims: int
    queued: int
    predicted: int
    dates_dropped: int


@dataclass(frozen=True, slots=True)
class ExtractionStats:
    runs: int
    failed_runs: int
    episodes: EpisodeStats
    claims: int
    queued: int
    extraction_rate: float | None
    """queued / claims: of everything the extractor found, how much reached a human."""
    discards: dict[str, int]
    """What each gate of the runs dropped (RUN_GATES)."""
    supersedes_dropped: int
    unsupported: int
    by_extractor: dict[str, ExtractorRuns]


@dataclass(frozen=True, slots=True)
class ReviewStats:
    decided: int
    approved: int
    rejected: int
    approval_rate: float | None
    by_kind: dict[str, Outcome]
    by_extractor: dict[str, Outcome]
    by_extractor_version: list[VersionOutcome]
    rejection_reasons: dict[str, dict[str, int]]
    """kind -> reason ("" when none was given) -> count."""
    calibration: dict[str, dict[str, Outcome]]
    """extractor -> confidence bucket (CONFIDENCE_BUCKETS) -> outcome."""


@dataclass(frozen=True, slots=True)
class DiscardedEntry:
    """One statement a gate dropped, as the figures list it."""

    id: int
    user_id: str
    gate: str
    statement: str
    matched: str | None
    """What it matched ("knowledge 12: User lives in Leeds"), if anything."""
    queued_candidate_id: int | None
    at: datetime


@dataclass(frozen=True, slots=True)
class DiscardedStats:
    total: int
    by_gate: dict[str, int]
    queued_anyway: int
    latest: list[DiscardedEntry]


@dataclass(frozen=True, slots=True)
class DayFigures:
    """One UTC day: candidates queued and decided that day."""

    day: date
    queued: int
    decided: int


@dataclass(frozen=True, slots=True)
class Stats:
    """`Memory.stats()`: what the criterion does, measured (see the module's docstring)."""

    queue: QueueStats
    credentials_removed: int
    knowledge: KnowledgeStats
    tombstones: int
    extraction: ExtractionStats
    review: ReviewStats
    discarded: DiscardedStats
    daily: list[DayFigures]

    def to_dict(self) -> dict[str, Any]:
        """The figures as plain JSON types (times and days as ISO strings): `memdesk stats --json`."""
        data: dict[str, Any] = to_jsonable(self)
        for day in data["daily"]:
            day["day"] = str(day["day"].isoformat())
        return data


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


async def stats(mem: EngineContext, user_id: str | None = None, discarded_limit: int = 20) -> Stats:
    """The figures, plus the `discarded_limit` statements the gates dropped most recently (all of
    them through `Memory.discarded`)."""
    now_us = to_us(mem.now())
    sla_us = int(mem.config.review_sla_hours * 3_600_000_000)
    async with mem.store.reading() as tx:
        got = await tx.stats_figures(user_id, sla_cutoff_us=now_us - sla_us)
        latest = await tx.list_discarded(user_id, limit=discarded_limit)
    queue = _by_status(got.queue_by_status, "pending", "approved", "rejected")
    knowledge = _by_status(got.knowledge_by_status, "active", "superseded", "retracted")
    episodes = _by_status(got.episodes_by_status, "open", "processed", "failed")

    total = got.run_totals
    claims, queued, dropped, unsupported = total[6:10]

    by_kind: dict[str, Outcome] = {}
    by_extractor: dict[str, Outcome] = {}
    for kind, extractor, status, n in got.decided_by_kind_extractor:
        for table, name in ((by_kind, kind), (by_extractor, extractor)):
            _count(table.setdefault(name, Outcome()), status, n)
    reasons: dict[str, dict[str, int]] = {}
    for kind, reason, n in got.rejection_reasons:
        reasons.setdefault(kind, {})[reason] = n

    by_version: dict[tuple[str, str | None, str | None], VersionOutcome] = {}
    for extractor, model, version, status, n in got.decided_by_version:
        key = (extractor, model, version)
        _count(
            by_version.setdefault(key, VersionOutcome(extractor=extractor, model=model, prompt_version=version)),
            status,
            n,
        )

    discarded_by_gate = _by_status(got.discarded_by_gate, *DISCARD_GATES)
    approved, rejected = queue["approved"], queue["rejected"]
    calibration: dict[str, dict[str, Outcome]] = {}
    for extractor, bucket, status, n in got.calibration:
        _count(calibration.setdefault(extractor, {}).setdefault(CONFIDENCE_BUCKETS[int(bucket)], Outcome()), status, n)
    for outcome in (*by_kind.values(), *by_extractor.values(), *by_version.values()):
        outcome.settle()
    for buckets in calibration.values():
        for outcome in buckets.values():
            outcome.settle()
    oldest = got.oldest_pending
    age = QueueAge(
        sla_hours=mem.config.review_sla_hours,
        oldest_pending_at=None if oldest is None else from_us(int(oldest)),
        oldest_pending_hours=None if oldest is None else round((now_us - int(oldest)) / 3_600_000_000, 1),
        past_sla=got.past_sla,
    )
    return Stats(
        queue=QueueStats(
            pending=queue["pending"],
            approved=approved,
            rejected=rejected,
            pending_by_kind=_by_status(got.pending_by_kind),
            age=age,
        ),
        credentials_removed=got.credentials_removed,
        knowledge=KnowledgeStats(knowledge["active"], knowledge["superseded"], knowledge["retracted"]),
        tombstones=got.live_tombstones,
        extraction=ExtractionStats(
            runs=total[0],
            failed_runs=got.failed_runs,
            episodes=EpisodeStats(episodes["open"], episodes["processed"], episodes["failed"]),
            claims=claims,
            queued=queued,
            extraction_rate=_rate(queued, claims),
            discards=dict(zip(RUN_GATES, total[1:6], strict=True)),
            supersedes_dropped=dropped,
            unsupported=unsupported,
            by_extractor={name: ExtractorRuns(*figures) for name, *figures in got.runs_by_extractor},
        ),
        review=ReviewStats(
            decided=approved + rejected,
            approved=approved,
            rejected=rejected,
            approval_rate=_rate(approved, approved + rejected),
            by_kind=by_kind,
            by_extractor=by_extractor,
            by_extractor_version=list(by_version.values()),
            rejection_reasons=reasons,
            calibration={name: {k: b[k] for k in CONFIDENCE_BUCKETS if k in b} for name, b in calibration.items()},
        ),
        discarded=DiscardedStats(
            total=sum(discarded_by_gate.values()),
            by_gate=discarded_by_gate,
            queued_anyway=got.queued_anyway,
            latest=[
                DiscardedEntry(
                    id=d.id,
                    user_id=d.user_id,
                    gate=d.gate,
                    statement=d.statement,
                    matched=None
                    if d.matched_entity is None
                    else f"{d.matched_entity} {d.matched_id}: {d.matched_statement}",
                    queued_candidate_id=d.queued_candidate_id,
                    at=d.created_at,
                )
                for d in latest
            ],
        ),
        daily=[
            DayFigures(day=from_us(int(day) * 86_400_000_000).date(), queued=q, decided=d) for day, q, d in got.daily
        ],
    )


def _count(outcome: Outcome, status: str, n: int) -> None:
    """Add `n` decisions of `status` ("approved" or "rejected") to the outcome."""
    if status == "approved":
        outcome.approved += n
    else:
        outcome.rejected += n


def _by_status(rows: list[Any], *keys: str) -> dict[str, int]:
    """(key, count) rows as a mapping, with 0 for each of `keys` no row named."""
    return dict.fromkeys(keys, 0) | {str(key): int(n) for key, n in rows}

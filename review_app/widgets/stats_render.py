"""Turning `Memory.stats()` into what the Stats screen draws.

Pure functions (an `engine.Stats` in, Rich renderables or numbers out) so the arithmetic behind the
charts is tested without a terminal. `daily_series` fills the days without activity: a sparkline
over only the active days would squeeze a quiet month into nothing and make the queue look stable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta

from rich import box
from rich.table import Table
from rich.text import Text

from engine.stats import DayFigures, Outcome, Stats

from .literal import literal

GATE_LABELS = {
    "predicted": "already predicted (criterion)",
    "below_confidence": "below confidence",
    "duplicates": "duplicate of a fact / candidate",
    "tombstoned": "matches a tombstone",
    "invalid": "invalid interval",
}


@dataclass(frozen=True, slots=True)
class DayPoint:
    """One calendar day (UTC): candidates queued and decided that day, and the queue size at its end."""

    day: date
    queued: int
    decided: int
    queue_size: int


def daily_series(daily: Sequence[DayFigures], until: date | None = None, max_days: int = 90) -> list[DayPoint]:
    """Every day from the first active day to `until` (default: the last active day), gaps as
    zeros, with the running queue size; only the last `max_days` days are returned (the running
    size still counts everything before them)."""
    if not daily:
        return []
    counts = {row.day: (row.queued, row.decided) for row in daily}
    first = min(counts)
    last = max(max(counts), until) if until is not None else max(counts)
    points: list[DayPoint] = []
    size = 0
    day = first
    while day <= last:
        queued, decided = counts.get(day, (0, 0))
        size += queued - decided
        points.append(DayPoint(day, queued, decided, size))
        day += timedelta(days=1)
    return points[-max_days:]


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.0f}%"


def _table(*columns: str) -> Table:
    table = Table(box=box.SIMPLE_HEAD, expand=True, pad_edge=False, show_edge=False)
    for i, name in enumerate(columns):
        # Figures and their headers are never cut ("appr…"): they keep their width and the label
        # column wraps instead.
        table.add_column(
            name,
            justify="left" if i == 0 else "right",
            ratio=1 if i == 0 else None,
            no_wrap=i > 0,
            min_width=len(name) if i > 0 else None,
        )
    return table


def queue_table(stats: Stats) -> Table:
    queue, knowledge = stats.queue, stats.knowledge
    table = _table("Queue and store", "count")
    table.add_row(Text("pending candidates", style="bold"), Text(str(queue.pending), style="bold"))
    for kind, n in sorted(queue.pending_by_kind.items()):
        table.add_row(Text.assemble("  of kind ", literal(kind)), str(n))
    table.add_row("approved", str(queue.approved))
    table.add_row("rejected", str(queue.rejected))
    table.add_row("active facts", str(knowledge.active))
    table.add_row("superseded facts", str(knowledge.superseded))
    table.add_row("retracted facts", str(knowledge.retracted))
    table.add_row("live tombstones", str(stats.tombstones))
    return table


def extraction_table(stats: Stats) -> Table:
    ex = stats.extraction
    table = _table("Extraction", "value")
    table.add_row(
        Text("extraction rate (queued / claims)", style="bold"), Text(_rate(ex.extraction_rate), style="bold")
    )
    table.add_row("claims found", str(ex.claims))
    table.add_row("queued for review", str(ex.queued))
    table.add_row("runs (failed)", f"{ex.runs} ({ex.failed_runs})")
    episodes = ex.episodes
    table.add_row("episodes open / processed / failed", f"{episodes.open} / {episodes.processed} / {episodes.failed}")
    table.add_row("unsupported evidence (flagged)", str(ex.unsupported))
    table.add_row("supersedes dropped", str(ex.supersedes_dropped))
    for name, row in sorted(ex.by_extractor.items()):
        table.add_row(Text.assemble("  extractor ", literal(name)), f"{row.queued}/{row.claims} queued")
    return table


def discards_table(stats: Stats) -> Table:
    discards = stats.extraction.discards
    claims = stats.extraction.claims
    table = _table("Discarded by gate", "count", "of claims")
    for gate, label in GATE_LABELS.items():
        n = int(discards.get(gate, 0))
        table.add_row(label, str(n), _rate(n / claims) if claims else "—")
    return table


def outcomes_table(title: str, outcomes: Mapping[str, Outcome]) -> Table:
    table = _table(title, "approved", "rejected", "rate")
    for name, row in sorted(outcomes.items()):
        table.add_row(literal(name), str(row.approved), str(row.rejected), _rate(row.approval_rate))
    if not outcomes:
        table.add_row(Text("no decisions yet", style="dim"), "", "", "")
    return table


def reasons_table(stats: Stats) -> Table:
    reasons = stats.review.rejection_reasons
    table = _table("Rejection reasons", "kind", "count")
    rows = [(reason, kind, n) for kind, by_reason in reasons.items() for reason, n in by_reason.items()]
    for reason, kind, n in sorted(rows, key=lambda r: (-r[2], r[0], r[1])):
        table.add_row(literal(reason or "(none given)"), literal(kind), str(n))
    if not rows:
        table.add_row(Text("no rejections yet", style="dim"), "", "")
    return table

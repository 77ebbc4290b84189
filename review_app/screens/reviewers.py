"""The Reviewers view (from Stats, key `w`): who decided how much, how fast, and how often two
reviewers agreed on the same item.

Figures are `Memory.team.figures` (definitions in engine/team.py): decisions and approval rate from
the audit log, time per decision as the median gap between one reviewer's consecutive decisions
(breaks and bulk gaps left out), agreement over second reviews and decided second-opinion flags.
`p` switches the period (all time, the last 7 days, today; UTC days by the app's clock).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Footer, Static

from engine.team import TeamFigures

from ..widgets.literal import literal, tell
from ..widgets.progress import duration_text
from .base import WorkstationScreen

PERIODS: tuple[str, ...] = ("all time", "last 7 days", "today")
REVIEWER_COLUMNS: tuple[tuple[str, str, int], ...] = (
    # what a lead reads first comes first: at 80 columns the last ones scroll
    ("reviewer", "reviewer", 12),
    ("decisions", "decisions", 9),
    ("approval", "approval", 8),
    ("per item", "time", 8),
    ("agreement", "agreement", 12),
    ("approved", "approved", 8),
    ("rejected", "rejected", 8),
    ("undone", "undone", 6),
    ("flags", "flags", 5),
    ("2nd reviews", "second", 11),
)
DAY_COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("day (UTC)", "day", 10),
    ("reviewer", "reviewer", 12),
    ("decisions", "decisions", 9),
    ("approved", "approved", 8),
    ("rejected", "rejected", 8),
)


def percent(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.0f}%"


def reviewer_rows(figures: TeamFigures) -> list[list[Text]]:
    rows = []
    for f in figures.reviewers:
        agreement = "—" if not f.compared else f"{percent(f.agreement)} of {f.compared}"
        rows.append(
            [
                literal(f.reviewer),
                Text(str(f.decisions), justify="right"),
                Text(percent(f.approval_rate), justify="right"),
                Text("—" if f.seconds_per_decision is None else duration_text(f.seconds_per_decision), justify="right"),
                Text(agreement, justify="right"),
                Text(str(f.approved), justify="right"),
                Text(str(f.rejected), justify="right"),
                Text(str(f.undone), justify="right"),
                Text(str(f.flags_raised), justify="right"),
                Text(str(f.second_reviews_done), justify="right"),
            ]
        )
    return rows


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def headline(figures: TeamFigures, period: str) -> Text:
    n = len(figures.comparisons)
    reviews = sum(c.source == "second_review" for c in figures.comparisons)
    out = Text.assemble((" Reviewers ", "bold reverse"), ("  ", ""), (period, "bold"))
    decisions = sum(f.decisions for f in figures.reviewers)
    out.append(f"  ·  {_count(decisions, 'decision')} by {_count(len(figures.reviewers), 'reviewer')}")
    if n:
        out.append(
            f"  ·  agreement {percent(figures.agreement)} over {_count(n, 'item')} seen twice "
            f"({_count(reviews, 'second review')}, {_count(n - reviews, 'second opinion')})"
        )
    else:
        out.append("  ·  agreement: no item seen by two reviewers yet", style="dim")
    return out


class ReviewersScreen(WorkstationScreen):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("p", "period", "Period", id="reviewers.period"),
        Binding("r", "refresh", "Refresh", id="reviewers.refresh"),
        Binding("escape", "back", "Back", id="reviewers.back"),
    ]
    DEFAULT_CSS = """
    ReviewersScreen #rv-headline { height: auto; max-height: 2; background: $panel; padding: 0 1; }
    ReviewersScreen DataTable { height: 1fr; border: round $primary; }
    ReviewersScreen #rv-daily { border: round $accent; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.period = 0

    def compose(self) -> ComposeResult:
        yield Static("", id="rv-headline")
        by_reviewer: DataTable[Text] = DataTable(id="rv-reviewers", cursor_type="row", zebra_stripes=True)
        by_reviewer.border_title = "By reviewer"
        yield by_reviewer
        by_day: DataTable[Text] = DataTable(id="rv-daily", cursor_type="row", zebra_stripes=True)
        by_day.border_title = "Decisions per reviewer per day"
        yield by_day
        yield Footer()

    def on_mount(self) -> None:
        for table_id, columns in (("#rv-reviewers", REVIEWER_COLUMNS), ("#rv-daily", DAY_COLUMNS)):
            table = self.query_one(table_id, DataTable)
            for label, key, width in columns:
                table.add_column(label, key=key, width=max(width, len(label)))
        self.query_one("#rv-reviewers", DataTable).focus()
        self.action_refresh()

    def _since(self) -> datetime | None:
        now = self.review_app.now()
        today = datetime(now.year, now.month, now.day, tzinfo=UTC)
        return (None, today - timedelta(days=6), today)[self.period]

    def action_period(self) -> None:
        self.period = (self.period + 1) % len(PERIODS)
        self.action_refresh()

    def action_refresh(self) -> None:
        self._load(self.period, self.reads.ask("reviewers"))

    @work(exit_on_error=False, group="reviewers-load", name="Reading the reviewers' figures")
    async def _load(self, period: int, fresh: Callable[[], bool]) -> None:
        figures = await self.memory.team.figures(since=self._since())
        if period != self.period or not fresh():  # a newer read was asked for (review_app/workers.py)
            return
        self.query_one("#rv-headline", Static).update(headline(figures, PERIODS[period]))
        table = self.query_one("#rv-reviewers", DataTable)
        table.clear()
        for i, row in enumerate(reviewer_rows(figures)):
            table.add_row(*row, key=str(i))
        daily = self.query_one("#rv-daily", DataTable)
        daily.clear()
        for i, d in enumerate(figures.daily):
            daily.add_row(
                Text(d.day.isoformat()),
                literal(d.reviewer),
                Text(str(d.decisions), justify="right"),
                Text(str(d.approved), justify="right"),
                Text(str(d.rejected), justify="right"),
                key=str(i),
            )
        if not figures.reviewers:
            tell(self, f"No decisions {PERIODS[period] if period else 'yet'}.")

    def action_back(self) -> None:
        self.dismiss(None)

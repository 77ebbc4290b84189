"""The Stats screen: is the extraction criterion doing its job, and is the queue under control?

It shows `Memory.stats()` (extraction rate, discards by gate, outcomes by kind and by extractor,
rejection reasons, queue and store counts) and two sparklines over calendar days: the queue size at
the end of each day and the decisions made each day. Day boundaries are UTC, like every time the
engine stores; the last day is the app's clock (`app.now()`), so a fixed clock draws the same
chart on every run.
"""

from __future__ import annotations

from typing import Any, ClassVar, cast

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.widgets import Select, Sparkline, Static

from ..widgets.keybar import APP_KEYS, KeyBar
from ..widgets.literal import literal
from ..widgets.stats_render import (
    daily_series,
    discards_table,
    extraction_table,
    outcomes_table,
    queue_table,
    reasons_table,
)
from .base import WorkstationScreen
from .reviewers import ReviewersScreen

ALL_USERS = ""
"""The Select value for "every user" (the engine refuses an empty user id, so it cannot clash)."""

CHART_DAYS = 60


FOOTER_KEYS: tuple[str, ...] = (
    "stats.refresh",
    "stats.user",
    *APP_KEYS,
)
"""What the footer shows, most important first, as far as the width allows; `?` lists the rest."""


class StatsScreen(WorkstationScreen):
    """Numbers and charts for the whole database or one user; `r` re-reads them."""

    CSS_PATH = "stats.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "refresh", "Refresh", id="stats.refresh"),
        Binding("u", "pick_user", "User", id="stats.user"),
        Binding("w", "reviewers", "Reviewers", id="stats.reviewers"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.user_id: str | None = None
        self._gen = 0

    def compose(self) -> ComposeResult:
        with Horizontal(id="stats-bar"):
            yield Select[str]([(Text("All users"), ALL_USERS)], value=ALL_USERS, allow_blank=False, id="stats-user")
            yield Static("", id="stats-headline")
        with VerticalScroll(id="stats-body"), Grid(id="stats-grid"):
            yield Static("", id="stats-queue", classes="stats-panel")
            yield Static("", id="stats-extraction", classes="stats-panel")
            yield Static("", id="stats-discards", classes="stats-panel")
            yield Static("", id="stats-by-kind", classes="stats-panel")
            yield Static("", id="stats-by-extractor", classes="stats-panel")
            yield Static("", id="stats-reasons", classes="stats-panel")
        with Horizontal(id="stats-charts"):
            with Vertical(classes="stats-chart"):
                yield Static("", id="stats-queue-label", classes="stats-chart-label")
                yield Sparkline([], id="stats-queue-spark")
                yield Static("", id="stats-queue-axis", classes="stats-axis")
            with Vertical(classes="stats-chart"):
                yield Static("", id="stats-decided-label", classes="stats-chart-label")
                yield Sparkline([], id="stats-decided-spark")
                yield Static("", id="stats-decided-axis", classes="stats-axis")
        yield KeyBar(FOOTER_KEYS)

    def on_screen_resume(self) -> None:
        """Shown (first time or back from another mode): decisions taken on the queue screen
        change every number here."""
        self._gen += 1
        self.run_worker(
            self._load_users_and_stats(self._gen),
            name="Reading the statistics",
            group="stats-load",
            exit_on_error=False,
        )

    async def _load_users_and_stats(self, gen: int) -> None:
        users = await self.memory.users()
        if gen != self._gen:
            return
        if self.user_id not in users:
            self.user_id = None
        select = self.query_one("#stats-user", Select)
        select.set_options([(Text("All users"), ALL_USERS), *[(literal(u), u) for u in users]])
        select.value = self.user_id if self.user_id is not None else ALL_USERS
        await self._load(gen)

    def action_refresh(self) -> None:
        """Re-read in a worker; like the other screens, a newer read makes an older one drop its
        result rather than cancelling it (see KnowledgeScreen._work)."""
        scope = "all users" if self.user_id is None else f"user {self.user_id}"
        self._gen += 1
        self.run_worker(
            self._load(self._gen),
            name=f"Reading the statistics of {scope}",
            group="stats-load",
            exit_on_error=False,
        )

    def action_reviewers(self) -> None:
        self.app.push_screen(ReviewersScreen())

    def action_pick_user(self) -> None:
        self.query_one("#stats-user", Select).focus()

    @on(Select.Changed, "#stats-user")
    def _user_changed(self, event: Select.Changed) -> None:
        value = event.value if isinstance(event.value, str) and event.value != ALL_USERS else None
        if value != self.user_id:
            self.user_id = value
            self.action_refresh()

    async def _load(self, gen: int) -> None:
        stats = await self.memory.stats(self.user_id)
        if gen != self._gen:
            return
        now = cast(Any, self.app).now()
        review = stats.review
        scope = "all users" if self.user_id is None else f"user {self.user_id}"
        headline = Text.assemble(
            ("Scope: ", "dim"),
            literal(scope),
            ("   pending ", "dim"),
            (str(stats.queue.pending), "bold"),
            ("   decided ", "dim"),
            (str(review.decided), "bold"),
            ("   approval rate ", "dim"),
            ("—" if review.approval_rate is None else f"{review.approval_rate * 100:.0f}%", "bold"),
            ("   as of ", "dim"),
            now.strftime("%Y-%m-%d %H:%M UTC"),
        )
        self.query_one("#stats-headline", Static).update(headline)
        self.query_one("#stats-queue", Static).update(queue_table(stats))
        self.query_one("#stats-extraction", Static).update(extraction_table(stats))
        self.query_one("#stats-discards", Static).update(discards_table(stats))
        self.query_one("#stats-by-kind", Static).update(outcomes_table("Review by kind", review.by_kind))
        self.query_one("#stats-by-extractor", Static).update(outcomes_table("Review by extractor", review.by_extractor))
        self.query_one("#stats-reasons", Static).update(reasons_table(stats))

        points = daily_series(stats.daily, until=now.date(), max_days=CHART_DAYS)
        sizes = [float(p.queue_size) for p in points]
        decided = [float(p.decided) for p in points]
        # A sparkline scales from its smallest value to its largest, so an all-zero series (an empty
        # queue, no decisions) would be drawn as full bars: give it no data, drawn as a flat baseline.
        self.query_one("#stats-queue-spark", Sparkline).data = sizes if any(sizes) else []
        self.query_one("#stats-decided-spark", Sparkline).data = decided if any(decided) else []
        if points:
            days = f"{len(points)} day{'s' if len(points) != 1 else ''}"
            span = f"{points[0].day:%d %b} … {points[-1].day:%d %b %Y} ({days}, UTC)"
            self.query_one("#stats-queue-label", Static).update(
                Text.assemble(
                    ("Queue size at the end of each day", "bold"),
                    f"   now {points[-1].queue_size} · max {max(p.queue_size for p in points)}",
                )
            )
            self.query_one("#stats-decided-label", Static).update(
                Text.assemble(
                    ("Decisions per day", "bold"),
                    f"   total {sum(p.decided for p in points)} · max {max(p.decided for p in points)}/day",
                )
            )
            self.query_one("#stats-queue-axis", Static).update(span)
            self.query_one("#stats-decided-axis", Static).update(span)
        else:
            for name in ("queue", "decided"):
                self.query_one(f"#stats-{name}-label", Static).update(Text("No candidates yet.", style="dim"))
                self.query_one(f"#stats-{name}-axis", Static).update("")

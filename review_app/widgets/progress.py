"""The queue's progress line: how far the team is through the current filter, and at what pace.

One line, most important first, cut at the terminal's width (at 80 columns the done/left counts
and the estimate survive; the second-opinion counts follow when there is room). The numbers are
`Memory.team.progress` (see engine/team.py for what "done" and "time per decision" mean): they
come from the database, so they survive a restart and include the other reviewers' work.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from rich.text import Text
from textual.widget import Widget

if TYPE_CHECKING:
    from engine.team import Progress

    from ..app import ReviewApp

BAR_WIDTH = 10


def duration_text(seconds: float) -> str:
    """A duration as a reviewer reads it: 45s, 21m, 3h05."""
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    hours, rest = divmod(int(seconds), 3600)
    return f"{hours}h{rest // 60:02d}"


def progress_text(p: Progress) -> Text:
    """The line for one Progress (pure: the snapshot and unit tests call it directly)."""
    out = Text()
    out.append(" Progress ", style="bold reverse")
    out.append(" today ", style="dim")
    if p.total == 0:
        out.append("nothing in this filter today", style="dim")
    else:
        filled = round(BAR_WIDTH * p.done / p.total)
        out.append("█" * filled, style="green")
        out.append("░" * (BAR_WIDTH - filled), style="dim")
        out.append(f" {p.done}/{p.total} done", style="bold")
        out.append(f" · {p.remaining} left")
    if p.seconds_per_decision is not None:
        eta = p.eta_seconds or 0.0
        if p.remaining:
            out.append(f" · ≈{duration_text(eta)} to go", style="bold")
        out.append(f" at your {p.per_hour:.0f}/h ({duration_text(p.seconds_per_decision)} each)")
    else:
        out.append(" · your pace: not measured yet", style="dim")
    if p.second_opinions:
        out.append(f" · ⚑ {p.second_opinions} second opinion{'s' if p.second_opinions != 1 else ''} to give",
                   style="yellow")
    if p.flagged_by_me:
        out.append(f" · ⚑ {p.flagged_by_me} of yours with others", style="dim")
    if p.second_reviews:
        out.append(f" · ◎ {p.second_reviews} to second-review (v)", style="cyan")
    return out


class ProgressHeader(Widget):
    """Shows the progress of the filter it was last given; `refresh_for` re-reads it."""

    DEFAULT_CSS = """
    ProgressHeader {
        height: 1;
        background: $panel;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.progress: Progress | None = None

    def refresh_for(self, filters: dict[str, Any]) -> None:
        """Re-read the progress of `filters` (the queue's ReviewService.count keyword arguments)."""
        self.run_worker(self._load(dict(filters)), exclusive=True, group="progress", name="Reading the progress")

    async def _load(self, filters: dict[str, Any]) -> None:
        app = cast("ReviewApp", self.app)
        self.progress = await app.memory.team.progress(app.reviewer, **filters)  # since the start of today, UTC
        self.refresh()

    def render(self) -> Text:
        if self.progress is None:
            return Text(" Progress …", style="dim")
        line = progress_text(self.progress)
        line.truncate(max(1, self.size.width), overflow="ellipsis")
        return line


"""The queue's progress line: how far the team is through the current filter, and at what pace.

One line, most important first; at 80 columns a compact form of the same figures, and when even
that does not fit, a second line (never a figure cut to "…"). The numbers are
`Memory.team.progress` (see engine/team.py for what "done" and "time per decision" mean): they
come from the database, so they survive a restart and include the other reviewers' work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from rich.text import Text
from textual.timer import Timer
from textual.widget import Widget
from textual.worker import Worker

from engine import QueueFilter

from ..workers import Reads

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


def progress_text(p: Progress, compact: bool = False) -> Text:
    """The line for one Progress (pure: the snapshot and unit tests call it directly). `compact`
    is the 80-column form: the same figures, fewer words."""
    out = Text()
    out.append(" Progress ", style="bold reverse")
    out.append(" " if compact else " today ", style="dim")
    if p.total == 0:
        out.append("nothing in this filter today", style="dim")
    else:
        width = BAR_WIDTH // 2 if compact else BAR_WIDTH
        filled = round(width * p.done / p.total)
        out.append("█" * filled, style="green")
        out.append("░" * (width - filled), style="dim")
        out.append(f" {p.done}/{p.total}" + ("" if compact else " done"), style="bold")
        out.append(f" · {p.remaining} left")
    if p.seconds_per_decision is not None:
        eta = duration_text(p.eta_seconds or 0.0)
        if compact:
            out.append(f" · ≈{eta} ({p.per_hour:.0f}/h)" if p.remaining else f" · {p.per_hour:.0f}/h", style="bold")
        else:
            if p.remaining:
                out.append(f" · ≈{eta} to go", style="bold")
            out.append(f" at your {p.per_hour:.0f}/h ({duration_text(p.seconds_per_decision)} each)")
    else:
        out.append(" · pace: —" if compact else " · your pace: not measured yet", style="dim")
    plural = "s" if p.second_opinions != 1 else ""
    if p.second_opinions:
        out.append(
            f" · ⚑{p.second_opinions} to give"
            if compact
            else f" · ⚑ {p.second_opinions} second opinion{plural} to give",
            style="yellow",
        )
    if p.second_reviews:
        out.append(
            f" · ◎{p.second_reviews} 2nd review (v)" if compact else f" · ◎ {p.second_reviews} to second-review (v)",
            style="cyan",
        )
    if p.past_sla:  # only when the queue rots: a fresh queue keeps the line as it was
        oldest = duration_text(p.oldest_pending_seconds or 0.0)
        out.append(
            f" · ⏰{p.past_sla} late, oldest {oldest}" if compact else f" · ⏰ {p.past_sla} past SLA, oldest {oldest}",
            style="bold red",
        )
    if p.flagged_by_me:
        out.append(
            f" · ⚑{p.flagged_by_me} yours out" if compact else f" · ⚑ {p.flagged_by_me} of yours with others",
            style="dim",
        )
    return out


def fitted_lines(p: Progress, width: int) -> list[Text]:
    """The progress at `width` columns, never cut: the full line if it fits, else the compact one,
    else the compact one broken between its " · " parts over as many lines as it needs (a figure
    cut to "…" at 80 columns was a figure the reviewer could not read)."""
    full = progress_text(p)
    if full.cell_len <= width:
        return [full]
    line = progress_text(p, compact=True)
    if line.cell_len <= width:
        return [line]
    plain = line.plain
    breaks = [i for i in range(len(plain)) if plain.startswith(" · ", i)]
    lines: list[Text] = []
    start = 0
    while True:
        room = width - (2 if lines else 0)  # continuation lines are indented by two
        if line[start:].cell_len <= room:
            break
        fitting = [b for b in breaks if start < b and line[start:b].cell_len <= room]
        end = fitting[-1] if fitting else next((b for b in breaks if b > start), len(plain))
        part = line[start:end]
        part.truncate(room, overflow="ellipsis")  # one part wider than the screen: nothing else fits it
        lines.append(Text("  ") + part if lines else part)
        start = end + len(" · ")
        if start >= len(plain):
            return lines
    lines.append(Text("  ") + line[start:] if lines else line[start:])
    return lines


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
        self.alarms = ""  # the policies' safety loop (engine.policies.PolicyAlarms.header), if anything
        self._queue = QueueFilter()
        self._later: Timer | None = None
        self._reads = Reads()

    def refresh_for(self, queue: QueueFilter, *, settle: float = 0.0) -> None:
        """Re-read the progress of the queue's filter: now, or `settle` seconds after the last call
        (after a decision: a reviewer deciding ten items a second causes one read, not ten, each of
        which counts the whole queue)."""
        self._queue = queue
        if self._later is not None:
            self._later.stop()
            self._later = None
        if settle > 0:
            self._later = self.set_timer(settle, self._read)
        else:
            self._read()

    def _read(self) -> None:
        self._later = None
        self.run_worker(
            self._load(self._queue, self._reads.ask("progress")),
            group="progress",
            name="Reading the progress",
            exit_on_error=False,
        )

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A failed read opens the app's error dialog (the worker does not exit the app)."""
        cast("ReviewApp", self.app).report_worker_failure(event.worker)

    async def _load(self, queue: QueueFilter, fresh: Callable[[], bool]) -> None:
        app = cast("ReviewApp", self.app)
        progress = await app.memory.team.progress(app.reviewer, filter=queue)  # since the start of today, UTC
        alarms = (await app.memory.policies.alarms()).header()  # second-review backlog, suspended scopes
        if fresh():  # not overtaken by a newer read (review_app/workers.py)
            self.progress, self.alarms = progress, alarms
            self._fit()

    def _lines(self) -> list[Text]:
        assert self.progress is not None
        width = max(1, self.size.width)
        line = f"⚠ {self.alarms}"
        # never cut: one line if it fits, else one line per part
        parts = [line] if len(line) <= width or " · " not in line else ["⚠ " + p for p in self.alarms.split(" · ")]
        alarm = [Text(p, style="bold") for p in parts] if self.alarms else []
        return fitted_lines(self.progress, width) + alarm

    def _fit(self) -> None:
        """As many rows as the progress needs at this width (one, unless the screen is narrow)."""
        rows = 1 if self.progress is None else len(self._lines())
        if self.styles.height is None or self.styles.height.value != rows:
            self.styles.height = rows
        self.refresh()

    def on_resize(self) -> None:
        self._fit()

    def render(self) -> Text:
        if self.progress is None:
            return Text(" Progress …", style="dim")
        return Text("\n").join(self._lines())

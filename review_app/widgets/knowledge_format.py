"""Small display helpers shared by the Knowledge and Tombstones screens.

Times are shown in UTC at minute precision: the engine stores UTC and a support agent comparing a
fact's history with the audit log must see the same clock everywhere. Nothing here reads the
system clock, so snapshots stay identical between runs.
"""

from __future__ import annotations

from datetime import datetime

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from engine.models import AuditEvent, Knowledge

from .literal import literal


def fmt_time(value: datetime | None, empty: str = "") -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value is not None else empty


def status_text(status: str) -> Text:
    """A status or a label (`Knowledge.label`: corrected, retracted, superseded, ...), coloured."""
    style = {
        "active": "green",
        "superseded": "yellow",
        "contradicted": "yellow",
        "corrected": "magenta",
        "retracted": "red",
    }.get(status, "")
    return Text(status, style=style)


COMPACT_BELOW = 130
"""Screen widths below which the history panes (each half the screen) list their rows as lines:
a five-column table in 38 columns cut the statement to nothing and the audit action to "c…"."""


_END_WORDS = frozenset({"superseded", "corrected", "contradicted", "retracted"})


def _status_with_reason(version: Knowledge) -> Text:
    """The label with its successor ("corrected by #15"): short, so it fits a no-wrap column."""
    status = status_text(version.label)
    if version.superseded_by is not None and version.label != "active":
        status.append(f" by #{version.superseded_by}", style="dim")
    return status


def _why(version: Knowledge) -> str | None:
    """A retraction's reason (free text a person wrote), shown under the statement where it may
    wrap: in the no-wrap status column a long reason took the whole width, and the # and
    Statement columns of the Versions pane shrank to nothing."""
    reason = version.end_reason
    return reason if reason and reason not in _END_WORDS else None


def _statement_cell(version: Knowledge, style: str = "") -> Text:
    cell = literal(version.statement, style)
    why = _why(version)
    if why is not None:
        cell.append("\nwhy: ", style="dim")
        cell.append_text(literal(why, "dim"))
    return cell


def versions_renderable(selected: Knowledge, chain: list[Knowledge], compact: bool = False) -> RenderableType:
    """The chain of versions, oldest first, the selected one marked, each with why it ended.
    `compact`: two lines a version (what it said; its number, status and interval)."""
    if compact:
        out = Text()
        for i, version in enumerate(chain):
            if i:
                out.append("\n")
            out.append("▶ " if version.id == selected.id else "  ", style="bold")
            out.append_text(_statement_cell(version, "bold" if version.id == selected.id else ""))
            out.append(f"\n  #{version.id} ", style="dim")
            out.append_text(_status_with_reason(version))
            out.append(f" · {version.interval_text()}", style="dim")
        return out
    versions = Table(expand=True, box=box.SIMPLE_HEAD, pad_edge=False)
    versions.add_column("", width=1, no_wrap=True)
    versions.add_column("#", no_wrap=True)
    versions.add_column("Statement", ratio=1)
    versions.add_column("Status", no_wrap=True)
    versions.add_column("Valid", no_wrap=True)
    for version in chain:
        marker = Text("▶", style="bold") if version.id == selected.id else Text("")
        versions.add_row(
            marker, str(version.id), _statement_cell(version), _status_with_reason(version), version.interval_text()
        )
    return versions


def _event_why(event: AuditEvent) -> Text:
    """The reason, and under it what the engine noted (an import's marks: "may replace fact #1"),
    literally."""
    out = literal(event.reason or "")
    if event.note:
        if event.reason:
            out.append("\n")
        out.append_text(literal(f"≈ {event.note}", "yellow"))
    return out


def audit_renderable(events: list[AuditEvent], compact: bool = False) -> RenderableType:
    """The audit events of every version of a fact, oldest first: who did what, when and why, and
    what the engine noted about it (the marks an import put on it).
    `compact`: one line of when, action and fact, then who and why, so the action is never cut."""
    if compact:
        out = Text()
        for i, event in enumerate(events):
            if i:
                out.append("\n")
            out.append(f"{fmt_time(event.at)} ", style="dim")
            out.append_text(literal(event.action, "bold"))
            out.append(f" #{event.entity_id}" if event.entity_id else "", style="dim")
            out.append("\n  by ", style="dim")
            out.append_text(literal(event.actor))
            if event.reason:
                out.append(": ", style="dim")
                out.append_text(literal(event.reason))
            if event.note:
                out.append("\n  ")
                out.append_text(literal(f"≈ {event.note}", "yellow"))
        return out if events else Text("no audit events", style="dim")
    audit = Table(expand=True, box=box.SIMPLE_HEAD, pad_edge=False)
    audit.add_column("When (UTC)", no_wrap=True)
    audit.add_column("Actor", no_wrap=True)
    audit.add_column("Action", no_wrap=True)
    audit.add_column("#", no_wrap=True)
    audit.add_column("Reason", ratio=1)
    for event in events:
        audit.add_row(
            fmt_time(event.at),
            literal(event.actor),
            literal(event.action),
            str(event.entity_id or ""),
            _event_why(event),
        )
    if not events:
        audit.add_row("", "", Text("no audit events", style="dim"), "", "")
    return audit

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
    style = {"active": "green", "superseded": "yellow", "retracted": "red"}.get(status, "")
    return Text(status, style=style)


def versions_renderable(selected: Knowledge, chain: list[Knowledge]) -> RenderableType:
    """The chain of versions, oldest first, the selected one marked, each with why it ended."""
    versions = Table(expand=True, box=box.SIMPLE_HEAD, pad_edge=False)
    versions.add_column("", width=1, no_wrap=True)
    versions.add_column("#", no_wrap=True)
    versions.add_column("Statement", ratio=1)
    versions.add_column("Status", no_wrap=True)
    versions.add_column("Valid", no_wrap=True)
    for version in chain:
        marker = Text("▶", style="bold") if version.id == selected.id else Text("")
        status = status_text(version.status)
        if version.end_reason and version.end_reason != version.status:
            status.append(" · ")
            status.append_text(literal(version.end_reason))
        versions.add_row(marker, str(version.id), literal(version.statement), status, version.interval_text())
    return versions


def audit_renderable(events: list[AuditEvent]) -> RenderableType:
    """The audit events of every version of a fact, oldest first: who did what, when and why."""
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
            literal(event.reason or ""),
        )
    if not events:
        audit.add_row("", "", Text("no audit events", style="dim"), "", "")
    return audit

"""The Discarded screen: every statement a gate of the write path dropped, and "queue anyway".

Predict–calibrate and the gates decide what a human never sees. A curator who saw only a count per
gate could not tell a real move dropped as "tombstoned" (or "predicted") from noise, nor bring it
back. Here each dropped statement is listed with its gate and what it matched (the fact, pending
candidate or tombstone), newest first, and `a` queues it anyway as a pending candidate through
`Memory.queue_discarded` (a reason is required; the engine audits it and refuses a second time).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import DataTable, Static

from engine.models import Discarded, Message

from ..modals import ReasonModal, ReasonResult
from ..widgets.keybar import APP_KEYS, KeyBar
from ..widgets.knowledge_format import fmt_time
from ..widgets.literal import literal, tell
from .user_list import UserListScreen

MAX_ROWS = 500
"""The newest dropped statements shown at once (a user filter narrows them)."""

GATES = {
    "predicted": "predicted",
    "below_confidence": "low confidence",
    "invalid": "invalid interval",
    "tombstoned": "tombstoned",
    "duplicate": "duplicate",
}
QUEUE_PRESETS = (
    "A real change, not the rejected value",
    "The prediction was wrong",
    "Worth a reviewer's look",
)
FOOTER_KEYS: tuple[str, ...] = ("discarded.queue", "discarded.user", *APP_KEYS)
"""What the footer shows, most important first, as far as the width allows; `?` lists the rest."""


def matched_text(item: Discarded) -> Text:
    """What the gate matched: "tombstone #4: User lives in hope", or nothing for the gates that
    compare with nothing (confidence, interval)."""
    if item.matched_entity is None:
        return Text("—", style="dim")
    out = Text(f"{item.matched_entity} #{item.matched_id}", style="dim")
    if item.matched_statement:
        out.append(": ")
        out.append_text(literal(item.matched_statement))
    return out


def source_text(messages: list[Message], evidence: str) -> Text:
    """The user's messages of an episode, newest last; the one quoting `evidence` marked ▶ (or every
    one shown plainly when none quotes it: the model paraphrased)."""
    quote = evidence.strip().casefold()
    said = [m for m in messages if m.role == "user"]
    quoting = [m for m in said if quote and quote in m.content.casefold()]
    label = ":" if quoting or not quote else " (none quotes the evidence):"
    out = Text(f"\nsource messages{label}", style="dim")
    for m in quoting or said:
        out.append("\n▶ " if quoting else "\n  ", style="bold")
        out.append(f"{fmt_time(m.at)}  ", style="dim")
        out.append_text(literal(m.content))
    return out


class DiscardedScreen(UserListScreen):
    """What the gates dropped, one user or all; queue one anyway with a reason."""

    NAME = "discarded"

    CSS_PATH = "discarded.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "queue_anyway", "Queue anyway", id="discarded.queue"),
        Binding("u", "pick_user", "User", id="discarded.user"),
        Binding("escape", "focus_table", "Back to the table", show=False, id="discarded.table"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[int, Discarded] = {}
        self._select_after_load: int | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(id="discarded-bar"):
            yield self.user_select()
            yield Static("", id="discarded-mode")
        yield DataTable(id="discarded-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="discarded-detail")
        yield Static("", id="discarded-status")
        yield KeyBar(FOOTER_KEYS)

    def on_mount(self) -> None:
        table = self.table
        table.add_column("#", key="id")
        table.add_column("User", key="user")
        table.add_column("Gate", key="gate")
        table.add_column("Statement", key="statement", width=40)
        table.add_column("Matched", key="matched", width=40)
        table.add_column("When (UTC)", key="when")
        table.add_column("Queued", key="queued")
        table.focus()

    def on_screen_resume(self) -> None:
        self._work(
            partial(self._load_users_and_items, self.reads.ask("load")), "Loading the discarded statements", "load"
        )

    async def _load_users_and_items(self, fresh: Callable[[], bool]) -> None:
        users = await self.memory.users()
        if not fresh():
            return
        self._set_users(users)
        await self._load(fresh)

    def reload(self) -> None:
        self._work(partial(self._load, self.reads.ask("load")), "Loading the discarded statements", "load")

    async def _load(self, fresh: Callable[[], bool]) -> None:
        items = await self.memory.discarded(self.user_id, limit=MAX_ROWS)
        if not fresh():
            return
        self.items = {d.id: d for d in items}
        table = self.table
        previous = self._current_id()
        table.clear()
        for d in items:
            queued = (
                Text(f"as #{d.queued_candidate_id} by ", style="green").append_text(literal(d.queued_by or "?"))
                if d.queued_candidate_id is not None
                else Text("no", style="dim")
            )
            table.add_row(
                str(d.id),
                literal(d.user_id),
                Text(GATES.get(d.gate, d.gate)),
                literal(d.statement),
                matched_text(d),
                fmt_time(d.created_at),
                queued,
                key=str(d.id),
            )
        target = self._select_after_load if self._select_after_load in self.items else previous
        self._select_after_load = None
        if target in self.items:
            table.move_cursor(row=table.get_row_index(str(target)))
        scope = "all users" if self.user_id is None else f"user {self.user_id}"
        count = f"{len(items)} dropped statement{'s' if len(items) != 1 else ''}"
        more = f" (the newest {MAX_ROWS})" if len(items) == MAX_ROWS else ""
        self.query_one("#discarded-mode", Static).update(literal(f"{scope} · {count}{more}, newest first"))
        self._show_detail()

    @on(DataTable.RowHighlighted, "#discarded-table")
    def _show_detail(self) -> None:
        """The selected statement in full, with its gate and match (cells are cut to their width)."""
        did = self._current_id()
        item = self.items.get(did) if did is not None else None
        detail = self.query_one("#discarded-detail", Static)
        if item is None:
            detail.update(Text("Nothing was dropped." if not self.items else "", style="dim"))
            return
        text = Text.assemble(
            (f"#{item.id} ", "bold"),
            literal(item.statement, "bold"),
            ("\ngate: ", "dim"),
            GATES.get(item.gate, item.gate),
            ("  ·  user ", "dim"),
            literal(item.user_id),
            ("\nmatched: ", "dim"),
            matched_text(item),
        )
        if item.evidence:
            text.append("\nevidence: ", style="dim")
            text.append_text(literal(item.evidence, "italic"))
        detail.update(text)
        if item.episode_id is not None:
            self._work(partial(self._load_source, item, text), f"Reading the source of #{item.id}", "source")

    async def _load_source(self, item: Discarded, shown: Text) -> None:
        """Add the user's messages of the episode the statement came from, the one its evidence
        quotes marked (the reviewer judges a dropped statement by what the user actually said)."""
        assert item.episode_id is not None
        episode = await self.memory.episode(item.user_id, item.episode_id)
        if self._current_id() != item.id:
            return  # the cursor moved on meanwhile
        self.query_one("#discarded-detail", Static).update(shown + source_text(episode.messages, item.evidence))

    def action_queue_anyway(self) -> None:
        did = self._current_id()
        item = self.items.get(did) if did is not None else None
        if item is None:
            tell(self, "No dropped statement selected.", severity="warning")
            return
        if item.queued_candidate_id is not None:
            tell(
                self,
                f"#{item.id} was already queued as candidate {item.queued_candidate_id} by {item.queued_by}.",
                severity="warning",
            )
            return
        modal = ReasonModal(
            f"Queue anyway: {item.statement}",
            presets=QUEUE_PRESETS,
            note=f"It becomes a pending candidate of user {item.user_id}; a reviewer still decides. Audited.",
        )
        self.app.push_screen(modal, callback=partial(self._queued, item))

    def _queued(self, item: Discarded, result: ReasonResult | None) -> None:
        if result is None:
            return
        self._work(partial(self._do_queue, item, result), f"Queueing discarded statement {item.id}", "action")

    async def _do_queue(self, item: Discarded, result: ReasonResult) -> None:
        cand = await self.memory.queue_discarded(item.id, actor=self.reviewer, reason=result.reason)
        self._status(f"#{item.id} queued as candidate {cand.id} ({result.reason}).")
        self._select_after_load = item.id
        await self._load(self.reads.ask("load"))

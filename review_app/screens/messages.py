"""The Messages view of one user: every message, what extraction made of it, and `n` to add a fact.

A fact the extractor missed is found by reading the conversation, not the queue: the queue shows
only what was extracted. Here each message of the user's newest episodes (`Memory.conversations`)
is listed with the candidates that quote it (their status: pending, approved, rejected; an approval
whose fact has since ended says how: "approved → corrected", "→ retracted", "→ superseded") and the
statements a gate dropped from it; a user message that yielded nothing is marked `∅`, so a curator
scanning for "I moved to Glasgow" sees at once that nothing came of it, and `n` adds the fact
through the engine's one way in (`add_knowledge`, audited under the reviewer).

An item is put beside the message its evidence quotes (case-insensitive); one whose quote is in no
message (a model paraphrase) is listed with the episode, and that episode's messages are then not
marked `∅` (something came of them, the view cannot say which).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Static

from engine.errors import SettleRequiredError
from engine.knowledge import Settle
from engine.models import Candidate, Discarded, EpisodeYield, Message

from ..modals import EditModal, EditResult
from ..widgets.keybar import KeyBar
from ..widgets.knowledge_format import fmt_time
from ..widgets.literal import literal, tell
from .base import WorkstationScreen
from .knowledge import add_fact, ask_settle

EPISODES = 200
"""The newest episodes read at once (about a few thousand messages)."""

NOTHING = "∅ nothing extracted"

Item = Candidate | Discarded


@dataclass(slots=True)
class MessageRow:
    """One message with what extraction made of it."""

    message: Message
    episode_id: int
    items: list[Item] = field(default_factory=list)
    episode_unplaced: int = 0
    """Items of this message's episode that quote no message."""
    fact_labels: dict[int, str] = field(default_factory=dict)
    """Candidate id -> what its fact is now (EpisodeYield.fact_labels)."""

    @property
    def yielded_nothing(self) -> bool:
        return self.message.role == "user" and not self.items and not self.episode_unplaced


def message_rows(episodes: list[EpisodeYield]) -> list[MessageRow]:
    """Every message of `episodes` in order, each item beside the user message its evidence quotes."""
    out: list[MessageRow] = []
    for ep in episodes:
        rows = [MessageRow(m, ep.episode.id, fact_labels=ep.fact_labels) for m in ep.episode.messages]
        unplaced = 0
        items: list[Item] = [*ep.candidates, *ep.discarded]
        for item in items:
            quote = (item.evidence or "").strip().casefold()
            home = next(
                (r for r in rows if quote and r.message.role == "user" and quote in r.message.content.casefold()),
                None,
            )
            if home is None:
                unplaced += 1
            else:
                home.items.append(item)
        for r in rows:
            r.episode_unplaced = unplaced
        out += rows
    return out


def item_text(item: Item, fact_label: str | None = None) -> Text:
    """ "#12 pending: User lives in Porto" for a candidate; "#12 approved → corrected: …" when the
    fact its approval made has ended since (`fact_label`); "dropped (predicted): …" for a discard."""
    if isinstance(item, Candidate):
        style = {"pending": "yellow", "approved": "green", "rejected": "red"}.get(item.status, "")
        out = Text(f"#{item.id} ", style="dim")
        out.append(item.status, style=style)
        if item.status == "approved" and fact_label not in (None, "active"):
            out.append(f" → {fact_label}", style="magenta")
        out.append(": ")
    else:
        out = Text(f"dropped ({item.gate}): ", style="dim")
    out.append_text(literal(item.statement))
    return out


def _label(row: MessageRow, item: Item) -> str | None:
    return row.fact_labels.get(item.id) if isinstance(item, Candidate) else None


def extracted_cell(row: MessageRow) -> Text:
    if row.message.role != "user":
        return Text("")
    if row.items:
        out = item_text(row.items[0], _label(row, row.items[0]))
        if len(row.items) > 1:
            out.append(f"  +{len(row.items) - 1}", style="bold")
        return out
    if row.episode_unplaced:
        return Text(f"— episode yielded {row.episode_unplaced}; none quotes this", style="dim")
    return Text(NOTHING, style="bold yellow")


def _when(value: datetime | None) -> str:
    return fmt_time(value, "—")


class MessagesScreen(WorkstationScreen):
    """One user's messages and what extraction made of each; `n` adds a missed fact."""

    DEFAULT_CSS: ClassVar[str] = """
    MessagesScreen #messages-title { height: 1; padding: 0 1; }
    MessagesScreen #messages-table { height: 1fr; }
    MessagesScreen #messages-detail { height: auto; max-height: 40%; padding: 0 1; border-top: solid $primary; }
    MessagesScreen #messages-status { height: 1; padding: 0 1; color: $success; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "add", "Add a fact", id="messages.add"),
        Binding("right_square_bracket", "next_empty", "Next ∅", id="messages.next_empty"),
        Binding("escape", "close", "Back", id="messages.close"),
    ]

    def __init__(self, user_id: str) -> None:
        super().__init__()
        self.user_id = user_id
        self.rows: list[MessageRow] = []

    def compose(self) -> ComposeResult:
        yield Static("", id="messages-title")
        yield DataTable(id="messages-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="messages-detail")
        yield Static("", id="messages-status")
        yield KeyBar(("messages.add", "messages.next_empty", "messages.close"))

    @property
    def table(self) -> DataTable[Any]:
        return self.query_one("#messages-table", DataTable)

    def on_mount(self) -> None:
        table = self.table
        width = self.size.width
        table.add_column("When (UTC)", key="when", width=16)
        table.add_column("Who", key="who", width=4)
        rest = max(40, width - 16 - 4 - 2 * 4 - 3)
        table.add_column("Message", key="message", width=rest // 2)
        table.add_column("Extracted", key="extracted", width=rest - rest // 2)
        table.focus()
        self.reload()

    def reload(self, select: int | None = None) -> None:
        self.run_worker(
            self._load(select, self.reads.ask("messages")),
            name=f"Reading the messages of {self.user_id}",
            group="messages-load",
            exit_on_error=False,
        )

    async def _load(self, select: int | None, fresh: Callable[[], bool]) -> None:
        episodes = await self.memory.conversations(self.user_id, limit=EPISODES, viewer=self.reviewer)
        if not fresh():  # a newer read was asked for (review_app/workers.py)
            return
        self.rows = message_rows(episodes)
        table = self.table
        previous = table.cursor_row
        table.clear()
        for i, row in enumerate(self.rows):
            who = Text("user", style="bold cyan") if row.message.role == "user" else Text("asst", style="dim")
            table.add_row(
                _when(row.message.at),
                who,
                literal(row.message.content, "" if row.message.role == "user" else "dim"),
                extracted_cell(row),
                key=str(i),
            )
        if self.rows:
            table.move_cursor(row=min(select if select is not None else previous, len(self.rows) - 1))
        empty = sum(1 for r in self.rows if r.yielded_nothing)
        users = sum(1 for r in self.rows if r.message.role == "user")
        title = Text.assemble(
            ("Messages of ", "bold"),
            literal(self.user_id, "bold"),
            f" · {len(episodes)} episodes · {users} user messages, ",
            (f"{empty} yielded nothing (∅)", "yellow" if empty else ""),
        )
        self.query_one("#messages-title", Static).update(title)
        self._show_detail()

    def _current(self) -> MessageRow | None:
        row = self.table.cursor_row
        return self.rows[row] if 0 <= row < len(self.rows) else None

    @on(DataTable.RowHighlighted, "#messages-table")
    def _show_detail(self) -> None:
        row = self._current()
        detail = self.query_one("#messages-detail", Static)
        if row is None:
            detail.update(Text("No messages of this user have been processed yet.", style="dim"))
            return
        out = Text(f"{row.message.role} · {_when(row.message.at)} · episode {row.episode_id}\n", style="dim")
        out.append_text(literal(row.message.content))
        for item in row.items:
            out.append("\n→ ")
            out.append_text(item_text(item, _label(row, item)))
        if row.yielded_nothing:
            out.append(f"\n{NOTHING} from this message: n adds a fact for {self.user_id}", style="yellow")
        elif row.message.role == "user" and not row.items:
            out.append(f"\nThe episode yielded {row.episode_unplaced} item(s) quoting no message.", style="dim")
        detail.update(out)

    def action_next_empty(self) -> None:
        """Move to the next user message that yielded nothing (wrapping)."""
        start = self.table.cursor_row
        n = len(self.rows)
        for step in range(1, n + 1):
            i = (start + step) % n
            if self.rows[i].yielded_nothing:
                self.table.move_cursor(row=i)
                return
        tell(self, "Every user message here yielded something.")

    def action_close(self) -> None:
        self.dismiss()

    def action_add(self) -> None:
        row = self._current()
        said = f" (from: {row.message.content[:60]})" if row is not None and row.message.role == "user" else ""
        modal = EditModal("", title=f"Add a fact for user {self.user_id}{said}", save_label="Add the fact")
        self.app.push_screen(modal, callback=self._added)

    def _added(self, result: EditResult | None, settle: Settle | None = None) -> None:
        if result is None:
            return
        self.run_worker(
            self._do_add(result, settle),
            name=f"Adding a fact for {self.user_id}",
            group="messages-add",
            exit_on_error=False,
        )

    async def _do_add(self, result: EditResult, settle: Settle | None = None) -> None:
        added = await add_fact(self.memory, self.user_id, result, self.reviewer, settle)
        if isinstance(added, SettleRequiredError):
            ask_settle(self, added, result.statement, lambda how: self._added(result, how))
            return
        status = self.query_one("#messages-status", Static)
        if isinstance(added, str):
            status.update(literal(added))
            tell(self, added, severity="error", title="Nothing was added")
            return
        status.update(literal(f"Fact #{added.id} added for {self.user_id} by {self.reviewer}: {added.statement}"))

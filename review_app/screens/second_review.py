"""Second review: sampled approvals, checked blind by a reviewer who did not make them.

The list and the detail come from `Memory.team.second_review_queue` / `blind_review`, which carry
nothing of the first decision (who, how, why). `a` keeps the fact (agreement); `r` overturns it
with a reason (the engine retracts and tombstones it). Only after the verdict does the screen say
who approved it and how. Pushed from the queue with `v`; Escape goes back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Footer, Static

from engine.errors import AlreadyDecidedError
from engine.team import BlindReview, SecondReview

from ..modals import ReasonModal, ReasonResult
from ..widgets.literal import literal, tell
from .base import WorkstationScreen

OVERTURN_REASONS: tuple[str, ...] = (
    "Not true",
    "Not about this user",
    "Not what the user said",
    "Sensitive: must not be stored",
)


def blind_text(item: BlindReview) -> Text:
    """The fact and where it came from; nothing about the first decision."""
    out = Text()
    out.append("User ", style="dim")
    out.append_text(literal(item.user_id, "bold"))
    # an approved agent proposal has no confidence: nobody measured one
    confidence = "—" if item.confidence is None else f"{item.confidence:.2f}"
    out.append(f"   kind {item.kind}   confidence {confidence}\n\n", style="dim")
    out.append(f"Fact #{item.knowledge_id}\n", style="bold")
    out.append_text(literal(item.statement))
    start = item.valid_at.date().isoformat() if item.valid_at else "always"
    end = item.invalid_at.date().isoformat() if item.invalid_at else "until further notice"
    out.append(f"\nvalid {start} → {end}\n\n", style="dim")
    if item.evidence:
        out.append("Evidence quoted by the extractor\n", style="bold")
        out.append_text(literal(item.evidence, "italic"))
        out.append("\n\n")
    out.append("Original messages\n", style="bold")
    if not item.messages:
        out.append("none: this fact did not come from a conversation\n", style="italic")
    for message in item.messages:
        style = "bold cyan" if message.role == "user" else "magenta"
        out.append(f"▌ {message.role}  {message.at.strftime('%Y-%m-%d %H:%M')}\n", style=style)
        out.append_text(literal(message.content, "" if message.role == "user" else "dim"))
        out.append("\n")
    out.append("\nBlind: who approved it, how and why is shown after your verdict.", style="dim italic")
    return out


def reveal_text(record: SecondReview) -> str:
    said = {
        "agree": "You agreed",
        "overturn": "You overturned it: the fact is retracted",
        "disagree": "You disagreed; the fact had already ended, so nothing else changed",
    }[record.verdict]
    return f"{said}. It was approved by {record.first_reviewer} ({record.first_decision.replace('_', ' ')})."


class SecondReviewScreen(WorkstationScreen):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "agree", "Agree (keep)", id="second_review.agree"),
        Binding("r", "overturn", "Overturn", id="second_review.overturn"),
        Binding("escape", "back", "Back", id="second_review.back"),
    ]
    DEFAULT_CSS = """
    SecondReviewScreen #sr-header { height: 1; background: $panel; padding: 0 1; }
    SecondReviewScreen #sr-list { width: 50; height: 1fr; border: round $primary; }
    SecondReviewScreen.narrow #sr-list { width: 30; }
    SecondReviewScreen #sr-detail-box { width: 1fr; height: 1fr; border: round $secondary; padding: 0 1; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[int, BlindReview] = {}
        self.current: BlindReview | None = None
        self._busy = False

    def compose(self) -> ComposeResult:
        yield Static("", id="sr-header")
        with Horizontal():
            table: DataTable[Text] = DataTable(id="sr-list", cursor_type="row", zebra_stripes=True)
            table.border_title = "Sampled approvals"
            yield table
            with VerticalScroll(id="sr-detail-box") as box:
                box.border_title = "The fact, blind"
                yield Static("", id="sr-detail")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#sr-list", DataTable)
        table.add_column("user", key="user", width=8)
        table.add_column("fact", key="fact")
        self.set_class(self.app.size.width < 120, "narrow")
        table.focus()
        self.reload()

    def reload(self) -> None:
        self._reload(self.reads.ask("list"))

    @work(exit_on_error=False, group="second-review-list", name="Reading the second-review queue")
    async def _reload(self, fresh: Callable[[], bool]) -> None:
        page = await self.memory.team.second_review_queue(self.reviewer, limit=200)
        total = await self.memory.team.second_review_count(self.reviewer)
        if not fresh():  # a newer read was asked for (review_app/workers.py)
            return
        self.items = {b.candidate_id: b for b in page}
        table = self.query_one("#sr-list", DataTable)
        table.clear()
        for item in page:
            table.add_row(literal(item.user_id), literal(item.statement.replace("\n", " ")), key=str(item.candidate_id))
        rate = self.memory.config.second_review_rate
        self.query_one("#sr-header", Static).update(
            Text.assemble(
                (" Second review ", "bold reverse"),
                f"  {total} approval{'s' if total != 1 else ''} to check  ·  blind: a keeps, r overturns  ·  drawn:"
                f" {rate:.0%} of approvals, every sensitive one, every one of a watched agent's",
            )
        )
        if not page:
            self.current = None
            self.query_one("#sr-detail", Static).update(
                Text("Nothing to second-review: every sampled approval by others has been checked.", style="italic")
            )
            return
        table.move_cursor(row=0, animate=False)
        self._open(page[0].candidate_id)

    @on(DataTable.RowHighlighted, "#sr-list")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            self._open(int(event.row_key.value))

    def _open(self, candidate_id: int) -> None:
        self._read_item(candidate_id, self.reads.ask("item"))

    @work(exit_on_error=False, group="second-review-open", name="Opening a sampled approval")
    async def _read_item(self, candidate_id: int, fresh: Callable[[], bool]) -> None:
        item = await self.memory.team.blind_review(candidate_id, self.reviewer)
        if not fresh():
            return
        self.current = item
        self.query_one("#sr-detail", Static).update(blind_text(item))

    def _target(self) -> BlindReview | None:
        if self._busy:
            self.app.bell()
            return None
        if self.current is None:
            tell(self, "Nothing is selected.", severity="warning")
        return self.current

    def action_agree(self) -> None:
        item = self._target()
        if item is not None:
            self._busy = True
            self._verdict(item.candidate_id, True, None)

    def action_overturn(self) -> None:
        item = self._target()
        if item is None:
            return

        def given(result: ReasonResult | None) -> None:
            if result is not None:
                self._busy = True
                self._verdict(item.candidate_id, False, result.reason)

        self.app.push_screen(
            ReasonModal(
                f"Overturn: retract fact #{item.knowledge_id} of user {item.user_id}",
                presets=OVERTURN_REASONS,
                note="The fact is retracted and its value tombstoned, as a rejection would.",
            ),
            given,
        )

    @work(exit_on_error=False, group="second-review-decide", name="Recording a second review")
    async def _verdict(self, candidate_id: int, approve: bool, reason: str | None) -> None:
        try:
            record = await self.memory.team.second_review(candidate_id, self.reviewer, approve=approve, reason=reason)
        except AlreadyDecidedError as exc:  # second reviews are not leased: another reviewer was first
            tell(self, f"{exc}; nothing was changed.", severity="warning")
            self.reload()
            return
        finally:
            self._busy = False
        tell(self, reveal_text(record), title=f"Second review of candidate {candidate_id}")
        self.reload()

    def action_back(self) -> None:
        self.dismiss(None)

"""The Tombstones screen: the values extraction must never queue again, per user or for everyone.

A tombstone is written by a rejection or a retraction; lifting one is the only way to let that
value back into the queue, so it needs a reason and is audited by the engine
(`Memory.lift_tombstone`). Lifted tombstones stay in the table (hidden by default, `x` shows
them) so a curator can see who lifted what and why.
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

from engine.models import Tombstone

from ..modals import ReasonModal, ReasonResult
from ..widgets.keybar import APP_KEYS, KeyBar
from ..widgets.knowledge_format import fmt_time
from ..widgets.literal import clipped, literal, tell
from .user_list import UserListScreen

LIFT_PRESETS = (
    "Rejected by mistake",
    "The user confirmed it is true",
    "The value changed meaning",
)


STATEMENT_WIDTH = 36
REASON_WIDTH = 28
"""The table's cut (cells end in "…" when cut); the row's detail below shows them in full."""

FOOTER_KEYS: tuple[str, ...] = (
    "tombstones.lift",
    "tombstones.toggle_lifted",
    "tombstones.user",
    *APP_KEYS,
)
"""What the footer shows, most important first, as far as the width allows; `?` lists the rest."""


class TombstonesScreen(UserListScreen):
    """List tombstones (one user or all), show or hide lifted ones, lift one with a reason."""

    NAME = "tombstones"

    CSS_PATH = "tombstones.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("l", "lift", "Lift", id="tombstones.lift"),
        Binding("x", "toggle_lifted", "Show lifted", id="tombstones.toggle_lifted"),
        Binding("u", "pick_user", "User", id="tombstones.user"),
        Binding("escape", "focus_table", "Back to the table", show=False, id="tombstones.table"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.include_lifted = False
        self.stones: dict[int, Tombstone] = {}
        self._select_after_load: int | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(id="tombstones-bar"):
            yield self.user_select()
            yield Static("", id="tombstones-mode")
        yield DataTable(id="tombstones-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="tombstones-detail")
        yield Static("", id="tombstones-status")
        yield KeyBar(FOOTER_KEYS)

    def on_mount(self) -> None:
        table = self.table
        table.add_column("#", key="id")
        table.add_column("User", key="user")
        table.add_column("Statement", key="statement", width=STATEMENT_WIDTH)
        table.add_column("Reason", key="reason", width=REASON_WIDTH)
        table.add_column("By", key="by")
        table.add_column("When (UTC)", key="when")
        table.add_column("Lifted", key="lifted", width=39)
        table.focus()

    def on_screen_resume(self) -> None:
        """Shown (first time or back from another mode): other screens may have written or lifted
        tombstones meanwhile."""
        self._work(partial(self._load_users_and_stones, self.reads.ask("load")), "Loading tombstones", "load")

    async def _load_users_and_stones(self, fresh: Callable[[], bool]) -> None:
        users = await self.memory.users()
        if not fresh():
            return
        self._set_users(users)
        await self._load(fresh)

    def reload(self, select_id: int | None = None) -> None:
        self._select_after_load = select_id
        self._work(partial(self._load, self.reads.ask("load")), "Loading tombstones", "load")

    async def _load(self, fresh: Callable[[], bool]) -> None:
        stones = await self.memory.tombstones(self.user_id, include_lifted=self.include_lifted)
        if not fresh():
            return
        self.stones = {t.id: t for t in stones}
        table = self.table
        previous = self._current_id()
        table.clear()
        for t in stones:
            table.add_row(
                str(t.id),
                literal(t.user_id),
                clipped(t.statement, STATEMENT_WIDTH),
                clipped(t.reason, REASON_WIDTH),
                literal(t.created_by),
                fmt_time(t.created_at),
                self._lifted_cell(t),
                key=str(t.id),
            )
        target = self._select_after_load if self._select_after_load in self.stones else previous
        self._select_after_load = None
        if target in self.stones:
            table.move_cursor(row=table.get_row_index(str(target)))
        self._show_detail()
        scope = "all users" if self.user_id is None else f"user {self.user_id}"
        shown = "live and lifted" if self.include_lifted else "live only"
        count = f"{len(stones)} tombstone{'s' if len(stones) != 1 else ''}"
        self.query_one("#tombstones-mode", Static).update(literal(f"{scope} · {shown} · {count}"))

    @staticmethod
    def _lifted_cell(stone: Tombstone) -> Text:
        if stone.lifted_at is None:
            return Text("no", style="red")
        cell = Text(f"{fmt_time(stone.lifted_at)} by ", style="green")
        cell.append_text(literal(stone.lifted_by or "?"))
        if stone.lift_reason:
            cell.append(": ")
            cell.append_text(literal(stone.lift_reason))
        return cell

    @on(DataTable.RowHighlighted, "#tombstones-table")
    def _show_detail(self) -> None:
        """The selected tombstone in full: table cells are cut to their column width."""
        tid = self._current_id()
        stone = self.stones.get(tid) if tid is not None else None
        detail = self.query_one("#tombstones-detail", Static)
        if stone is None:
            detail.update("")
            return
        text = Text.assemble(
            (f"#{stone.id} ", "bold"),
            literal(stone.statement),
            ("\nreason: ", "dim"),
            literal(stone.reason),
            ("\nby ", "dim"),
            literal(stone.created_by),
            (f" on {fmt_time(stone.created_at)} UTC, user ", "dim"),
            literal(stone.user_id),
        )
        if stone.lifted_at is not None:
            text.append("\nlifted: ", style="dim")
            text.append_text(self._lifted_cell(stone))
        detail.update(text)

    def action_toggle_lifted(self) -> None:
        self.include_lifted = not self.include_lifted
        self.reload()

    def action_lift(self) -> None:
        tid = self._current_id()
        stone = self.stones.get(tid) if tid is not None else None
        if stone is None:
            tell(self, "No tombstone selected.", severity="warning")
            return
        if stone.lifted_at is not None:
            tell(self, f"Tombstone #{stone.id} was already lifted by {stone.lifted_by}.", severity="warning")
            return
        modal = ReasonModal(
            f"Lift tombstone #{stone.id} of {stone.user_id}: {stone.statement}",
            presets=LIFT_PRESETS,
            note=f"Extraction may queue this value again for user {stone.user_id}. The lift is audited.",
        )
        self.app.push_screen(modal, callback=partial(self._lifted, stone))

    def _lifted(self, stone: Tombstone, result: ReasonResult | None) -> None:
        if result is None:
            return
        self._work(partial(self._do_lift, stone, result), f"Lifting tombstone {stone.id}", "action")

    async def _do_lift(self, stone: Tombstone, result: ReasonResult) -> None:
        await self.memory.lift_tombstone(stone.user_id, stone.id, actor=self.reviewer, reason=result.reason)
        self._status(f"Tombstone #{stone.id} lifted ({result.reason}); this value may be queued again.")
        self._select_after_load = stone.id
        await self._load(self.reads.ask("load"))

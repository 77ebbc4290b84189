"""The Knowledge screen: one user's facts, for support teams correcting them while the user waits.

Everything the agent sees comes from the engine's public `Memory` calls (`knowledge`, `versions`,
`history`, `correct`, `retract`), run in workers so the event loop (which aiosqlite shares) never
blocks. An action re-reads the table afterwards and puts its outcome in the status line, so the
agent sees the new version (or the fact leaving the active view) without guessing.

The as-of field asks VALID time (what was true in the world then); `x` adds expired versions
(superseded or retracted), which is how an old version valid at that date becomes visible.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from functools import partial
from typing import Any, ClassVar, cast

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Input, Static

from engine import Memory
from engine.blind import HIDDEN
from engine.errors import DuplicateFactError, SettleRequiredError, TombstonedError, UserInputError
from engine.knowledge import Settle
from engine.models import Knowledge
from engine.timeutil import parse_datetime

from ..modals import EditModal, EditResult, PickFactModal, PickResult, ReasonModal, ReasonResult, ReplaceChoiceModal
from ..widgets.in_order_input import InOrderInput
from ..widgets.keybar import APP_KEYS, KeyBar
from ..widgets.knowledge_correct import CorrectModal, CorrectResult
from ..widgets.knowledge_format import (
    COMPACT_BELOW,
    audit_renderable,
    fmt_time,
    status_text,
    versions_renderable,
)
from ..widgets.literal import literal, tell
from .user_list import UserListScreen

RETRACT_PRESETS = (
    "The user says this is wrong",
    "Not about this user",
    "The user asked us to forget it",
    "Sensitive: must not be stored",
)


MAX_ROWS = 1000
"""Facts shown at once: a user with 20,000 facts must not turn into a 20,000-row table (search or an
as-of date narrows the list)."""


FOOTER_KEYS: tuple[str, ...] = (
    "knowledge.add",
    "knowledge.messages",
    "knowledge.correct",
    "knowledge.retract",
    "knowledge.supersede",
    "knowledge.toggle_expired",
    "knowledge.search",
    "knowledge.as_of",
    "knowledge.user",
    *APP_KEYS,
)
"""What the footer shows, most important first, as far as the width allows; `?` lists the rest."""


_COLUMNS: tuple[tuple[str, str, int, int], ...] = (
    # key, label, width, the narrowest screen that shows it
    ("id", "#", 4, 0),
    ("statement", "Statement", 0, 0),
    ("status", "Status", 10, 0),
    ("end_reason", "End reason", 12, 130),
    ("valid", "Valid (from → until)", 23, 0),
    ("created", "Created (UTC)", 16, 130),
    ("by", "By", 12, 100),
)
MIN_STATEMENT = 24


def table_layout(width: int) -> list[tuple[str, str, int]]:
    """The Knowledge table's columns at a screen `width`: (key, label, width). Below 130 columns the
    end reason and creation time go (the history panes show both), below 100 the author too, so that
    at 80x24 a fact's statement, status and valid time stay readable side by side."""
    shown = [(key, label, w) for key, label, w, floor in _COLUMNS if width >= floor]
    others = sum(w for key, _, w in shown if key != "statement")
    statement = max(MIN_STATEMENT, width - others - 2 * len(shown) - 3)  # cell padding, scrollbar
    return [(key, label, statement if key == "statement" else w) for key, label, w in shown]


def row_cells(k: Knowledge) -> dict[str, Text | str]:
    """Every cell a fact may show, by column key."""
    return {
        "id": str(k.id),
        "statement": literal(k.statement),
        "status": status_text(k.status),
        "end_reason": literal(k.end_reason or ""),
        "valid": k.interval_text(),
        "created": fmt_time(k.created_at),
        # an approval waiting for this reviewer's blind second review: the engine hid its author
        # (engine/blind.py); the 12-column cell says so in a word, the audit pane in full
        "by": Text("(hidden)", style="dim italic") if k.created_by == HIDDEN else literal(k.created_by),
    }


async def add_fact(
    memory: Memory, user: str, result: EditResult, actor: str, settle: Settle | None = None
) -> Knowledge | str | SettleRequiredError:
    """`add_knowledge` for a reviewer: the new fact, or why nothing was added, in words, or the
    question to ask first (the statement would replace an active fact: `ask_settle`).

    Shared by every place a reviewer adds a fact (the Knowledge screen, the Messages view)."""
    try:
        return await memory.add_knowledge(
            user, result.statement, actor=actor, valid_at=result.valid_at, invalid_at=result.invalid_at, settle=settle
        )
    except SettleRequiredError as exc:
        return exc
    except TombstonedError as exc:
        return f"Not added: {exc}. Lift the tombstone (Tombstones screen, 3) first if the value is true now."
    except DuplicateFactError as exc:
        return f"Not added: {exc}; nothing to add."
    except UserInputError as exc:
        return f"Not added: {exc}."


def ask_settle(
    screen: Screen[Any], question: SettleRequiredError, statement: str, retry: Callable[[Settle], None]
) -> None:
    """A fact added by hand that would replace an active one asks what the queue asks of a
    replacement (supersede, correct or keep both), then adds it that way; Escape adds nothing."""

    def chosen(choice: str | None) -> None:
        if choice in ("supersede", "correct", "keep_both"):
            retry(cast("Settle", choice))

    title = f"The new fact would replace fact #{question.knowledge_id}"
    screen.app.push_screen(ReplaceChoiceModal(title, question.statement, statement), chosen)


class KnowledgeScreen(UserListScreen):
    """Pick a user; list, search, date and fix their facts; read a fact's history."""

    NAME = "knowledge"
    ALLOW_ALL = False

    CSS_PATH = "knowledge.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "add", "Add a fact", id="knowledge.add"),
        Binding("m", "messages", "Messages", id="knowledge.messages"),
        Binding("c", "correct", "Correct", id="knowledge.correct"),
        Binding("t", "retract", "Retract", id="knowledge.retract"),
        Binding("s", "supersede", "Superseded by…", id="knowledge.supersede"),
        Binding("x", "toggle_expired", "Show expired", id="knowledge.toggle_expired"),
        Binding("slash", "search", "Search", id="knowledge.search"),
        Binding("d", "as_of", "As-of date", id="knowledge.as_of"),
        Binding("u", "pick_user", "User", id="knowledge.user"),
        Binding("escape", "focus_table", "Back to the table", show=False, id="knowledge.table"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.include_expired = False
        self.as_of: datetime | None = None
        self.search_text = ""
        self.facts: dict[int, Knowledge] = {}
        self._select_after_load: int | None = None
        self._layout: list[tuple[str, str, int]] = []

    # -- layout -------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Horizontal(id="knowledge-bar"):
            yield self.user_select()
            yield InOrderInput(placeholder="search statements  (/)", id="knowledge-search")
            yield InOrderInput(placeholder="as of, e.g. 2024-05-01 (d)", id="knowledge-asof")
        yield Static("", id="knowledge-mode")
        yield Static("", id="knowledge-asof-error", classes="inline-error")
        with Vertical(id="knowledge-body"):
            yield DataTable(id="knowledge-table", cursor_type="row", zebra_stripes=True)
            with Horizontal(id="knowledge-history"):
                with VerticalScroll(id="knowledge-versions-box"):
                    yield Static("Select a fact to see its versions.", id="knowledge-versions")
                with VerticalScroll(id="knowledge-audit-box"):
                    yield Static("", id="knowledge-audit")
        yield Static("", id="knowledge-status")
        yield KeyBar(FOOTER_KEYS)

    def on_mount(self) -> None:
        self._set_columns(self.size.width)
        self.query_one("#knowledge-versions-box").border_title = "Versions"
        self.query_one("#knowledge-audit-box").border_title = "Audit events"
        self._show_mode()
        self.table.focus()

    def _set_columns(self, width: int) -> bool:
        """Lay the table out for `width` columns (True when that changed it): fixed widths (an auto
        width depends on which rows a column has seen, so two loads racing drew the same rows with
        different widths), the statement taking what the others leave."""
        layout = table_layout(width)
        if layout == self._layout:
            return False
        self._layout = layout
        table = self.table
        table.clear(columns=True)
        for key, label, col_width in layout:
            table.add_column(label, key=key, width=col_width)
        return True

    def on_resize(self) -> None:
        if self._set_columns(self.size.width):
            self._fill_table(list(self.facts.values()), self._current_id())
            kid = self._current_id()
            if kid is not None and self.user_id is not None:
                self._show_history()

    def on_screen_resume(self) -> None:
        """Shown (first time or back from another mode): other screens may have changed the users
        and facts meanwhile, so re-read both."""
        self._work(
            partial(self._load_users_and_facts, self.reads.ask("load")), "Loading the user list and facts", "load"
        )

    # -- workers ------------------------------------------------------------------------------------

    async def _load_users_and_facts(self, fresh: Callable[[], bool]) -> None:
        users = await self.memory.users()
        if not fresh():
            return
        self._set_users(users)
        if not users:
            self._status("No users in this database yet.")
            return
        await self._load_facts(fresh)

    def reload(self, select_id: int | None = None) -> None:
        """Re-read the table for the current user, filters and as-of date."""
        self._select_after_load = select_id
        self._work(partial(self._load_facts, self.reads.ask("load")), f"Loading the facts of {self.user_id}", "load")

    async def _load_facts(self, fresh: Callable[[], bool]) -> None:
        if self.user_id is None:
            return
        facts = await self.memory.knowledge(
            self.user_id,
            include_expired=self.include_expired,
            at_time=self.as_of,
            search=self.search_text or None,
            limit=MAX_ROWS + 1,
            viewer=self.reviewer,
        )
        if not fresh():
            return
        more = len(facts) > MAX_ROWS
        facts = facts[:MAX_ROWS]
        self.facts = {k.id: k for k in facts}
        previous = self._current_id()
        target = self._select_after_load if self._select_after_load in self.facts else previous
        self._select_after_load = None
        self._fill_table(facts, target)
        self._show_mode(len(facts), more)
        if not facts:
            self.reads.ask("history")
            self.query_one("#knowledge-versions", Static).update(Text("No facts match.", style="dim"))
            self.query_one("#knowledge-audit", Static).update("")
        else:
            await self._load_history(self.user_id, self._current_id())

    def _fill_table(self, facts: list[Knowledge], target: int | None) -> None:
        """The rows of `facts` in the current column layout, the cursor on `target` when shown."""
        table = self.table
        table.clear()
        keys = [key for key, _, _ in self._layout]
        for k in facts:
            cells = row_cells(k)
            table.add_row(*(cells[key] for key in keys), key=str(k.id))
        if target in self.facts:
            table.move_cursor(row=table.get_row_index(str(target)))

    def _show_history(self) -> None:
        kid = self._current_id()
        if kid is None or self.user_id is None:
            return
        self._work(partial(self._load_history, self.user_id, kid), f"Loading the history of fact {kid}", "history")

    async def _load_history(self, user_id: str, kid: int | None) -> None:
        fresh = self.reads.ask("history")
        if kid is None:
            return
        # viewer: what this reviewer must still second-review blind reads "hidden" (engine/blind.py)
        chain = await self.memory.versions(user_id, kid, viewer=self.reviewer)
        events = await self.memory.history(user_id, kid, viewer=self.reviewer)
        fact = next((k for k in chain if k.id == kid), None)
        if fact is None or not fresh():
            return
        compact = self.size.width < COMPACT_BELOW
        self.query_one("#knowledge-versions", Static).update(versions_renderable(fact, chain, compact))
        self.query_one("#knowledge-audit", Static).update(audit_renderable(events, compact))
        self.query_one("#knowledge-versions-box").border_title = f"Versions of fact #{kid}"
        self.query_one("#knowledge-audit-box").border_title = f"Audit events of fact #{kid} and its versions"

    # -- helpers ------------------------------------------------------------------------------------

    def _current_fact(self) -> Knowledge | None:
        kid = self._current_id()
        return self.facts.get(kid) if kid is not None else None

    def _show_mode(self, count: int | None = None, more: bool = False) -> None:
        parts = ["all versions" if self.include_expired else "active only"]
        if self.as_of is not None:
            parts.append(f"valid on {fmt_time(self.as_of)}")
        if more:
            parts.append(f"the oldest {count} facts: search to narrow")
        elif count is not None:
            parts.append(f"{count} fact{'s' if count != 1 else ''}")
        self.query_one("#knowledge-mode", Static).update(Text(" · ".join(parts)))

    # -- events -------------------------------------------------------------------------------------

    @on(Input.Changed, "#knowledge-search")
    def _search_changed(self, event: Input.Changed) -> None:
        self.search_text = event.value.strip()
        self.reload()

    @on(Input.Submitted, "#knowledge-search")
    def _search_done(self) -> None:
        self.table.focus()

    @on(Input.Submitted, "#knowledge-asof")
    def _as_of_submitted(self, event: Input.Submitted) -> None:
        error = self.query_one("#knowledge-asof-error", Static)
        raw = event.value.strip()
        if not raw:
            self.as_of = None
        else:
            try:
                self.as_of = parse_datetime(raw, "as-of date")
            except UserInputError as exc:
                error.update(literal(str(exc)))
                return
        error.update("")
        self.reload()
        self.table.focus()

    @on(DataTable.RowHighlighted, "#knowledge-table")
    def _row_highlighted(self) -> None:
        self._show_history()

    # -- actions ------------------------------------------------------------------------------------

    def action_search(self) -> None:
        self.query_one("#knowledge-search", Input).focus()

    def action_as_of(self) -> None:
        self.query_one("#knowledge-asof", Input).focus()

    def action_toggle_expired(self) -> None:
        self.include_expired = not self.include_expired
        self._show_mode()
        self.reload()

    def action_add(self) -> None:
        """Add a fact the extractor missed for the shown user (`n`): the engine's `add_knowledge`,
        audited under this reviewer. A refusal (tombstoned value, duplicate, bad statement) is shown
        and changes nothing."""
        if self.user_id is None:
            tell(self, "Pick a user first (u).", severity="warning")
            return
        user = self.user_id
        modal = EditModal("", title=f"Add a fact for user {user}", save_label="Add the fact")
        self.app.push_screen(modal, callback=lambda result: self._added(user, result))

    def action_messages(self) -> None:
        """The shown user's messages and what extraction made of each (`m`): where a missed fact is
        found, and added with `n` there."""
        if self.user_id is None:
            tell(self, "Pick a user first (u).", severity="warning")
            return
        from .messages import MessagesScreen  # messages imports add_fact from here

        self.app.push_screen(MessagesScreen(self.user_id), callback=lambda _: self.reload())

    def _added(self, user: str, result: EditResult | None, settle: Settle | None = None) -> None:
        if result is None:
            return
        self._work(partial(self._do_add, user, result, settle), f"Adding a fact for {user}", "action")

    async def _do_add(self, user: str, result: EditResult, settle: Settle | None = None) -> None:
        message = await add_fact(self.memory, user, result, self.reviewer, settle)
        if isinstance(message, SettleRequiredError):
            ask_settle(self, message, result.statement, lambda how: self._added(user, result, how))
            return
        if isinstance(message, str):
            self._status(message)
            tell(self, message, severity="error", title="Nothing was added")
            return
        self._status(f"Fact #{message.id} added for {user} by {self.reviewer}.")
        self._select_after_load = message.id
        await self._load_facts(self.reads.ask("load"))

    def action_correct(self) -> None:
        fact = self._current_fact()
        if fact is None:
            tell(self, "No fact selected.", severity="warning")
            return
        if fact.status != "active":
            tell(self, f"Fact #{fact.id} is {fact.status}: only an active fact can be corrected.", severity="warning")
            return
        self.app.push_screen(CorrectModal(fact), callback=lambda result: self._corrected(fact, result))

    def _corrected(self, fact: Knowledge, result: CorrectResult | None) -> None:
        if result is None:
            return
        change = partial(self._apply, partial(self._do_correct, fact, result))
        self._work(change, f"Correcting fact {fact.id}", "action")

    async def _do_correct(self, fact: Knowledge, result: CorrectResult) -> int:
        new = await self.memory.correct(
            fact.user_id,
            fact.id,
            result.statement,
            actor=self.reviewer,
            reason=result.reason,
            valid_at=result.valid_at,
            invalid_at=result.invalid_at,
        )
        self._status(f"Fact #{fact.id} corrected: new version #{new.id} supersedes it ({result.reason}).")
        return new.id

    def action_retract(self) -> None:
        fact = self._current_fact()
        if fact is None:
            tell(self, "No fact selected.", severity="warning")
            return
        if fact.status != "active":
            tell(self, f"Fact #{fact.id} is already {fact.status}.", severity="warning")
            return
        modal = ReasonModal(
            f"Retract fact #{fact.id}: {fact.statement}",
            presets=RETRACT_PRESETS,
            tombstone=True,
            note=f"With a tombstone, extraction will not queue this value again for user {fact.user_id}.",
        )
        self.app.push_screen(modal, callback=lambda result: self._retracted(fact, result))

    def _retracted(self, fact: Knowledge, result: ReasonResult | None) -> None:
        if result is None:
            return
        change = partial(self._apply, partial(self._do_retract, fact, result))
        self._work(change, f"Retracting fact {fact.id}", "action")

    async def _do_retract(self, fact: Knowledge, result: ReasonResult) -> int:
        await self.memory.retract(
            fact.user_id, fact.id, actor=self.reviewer, reason=result.reason, tombstone=result.tombstone
        )
        stone = "; tombstone written" if result.tombstone else "; no tombstone"
        self._status(f"Fact #{fact.id} retracted ({result.reason}){stone}.")
        return fact.id

    def action_supersede(self) -> None:
        """Mark the selected fact superseded by another active fact of the same user (the world
        changed and the new fact was added separately): `Memory.supersede`, audited, reason required."""
        fact = self._current_fact()
        if fact is None:
            tell(self, "No fact selected.", severity="warning")
            return
        if fact.status != "active":
            tell(self, f"Fact #{fact.id} is already {fact.status}.", severity="warning")
            return
        self._work(partial(self._ask_supersede, fact), f"Reading the facts of {fact.user_id}", "action")

    async def _ask_supersede(self, fact: Knowledge) -> None:
        others = [k for k in await self.memory.knowledge(fact.user_id) if k.id != fact.id]
        if not others:
            tell(
                self, f"User {fact.user_id} has no other active fact to supersede #{fact.id} with.", severity="warning"
            )
            return
        modal = PickFactModal(
            f"Fact #{fact.id} ({fact.statement}) is superseded by which fact?",
            [(k.id, k.statement) for k in others],
            ask_reason=True,
            note="The old fact stops being believed (end reason: superseded) and its valid time closes where "
            "the new fact starts: the date given, else the new fact's own start, else when it was stated.",
            ask_start="starts on (YYYY-MM-DD; empty: the new fact's start, or when it was stated)",
        )
        self.app.push_screen(modal, callback=lambda result: self._superseded(fact, result))

    def _superseded(self, fact: Knowledge, result: PickResult | None) -> None:
        if result is None:
            return
        change = partial(self._apply, partial(self._do_supersede, fact, result))
        self._work(change, f"Superseding fact {fact.id}", "action")

    async def _do_supersede(self, fact: Knowledge, result: PickResult) -> int:
        await self.memory.supersede(
            fact.user_id, fact.id, result.fact_id, actor=self.reviewer, reason=result.reason, start=result.start
        )
        self._status(f"Fact #{fact.id} superseded by #{result.fact_id} ({result.reason}).")
        return result.fact_id

    async def _apply(self, change: Callable[[], Awaitable[int]]) -> None:
        """Run one engine change, then re-read the table selecting the row it produced."""
        selected = await change()
        self._select_after_load = selected
        await self._load_facts(self.reads.ask("load"))

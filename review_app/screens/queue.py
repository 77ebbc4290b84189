"""The Queue screen: work through pending candidates, one decision per key.

Left, the pending list (oldest first, or sorted and grouped by user, kind or confidence with `o`;
loaded a page at a time: a 50,000-row queue opens as fast as a 50-row one) with the selected
statement in full below it; right, the selected candidate's prediction, source messages and
surprise gap.

Several candidates can be marked (space) and rejected with one reason (`r`) or approved (`b`): each
is still its own engine decision (one transaction, one audit row), and the whole group is undone by
one `u`.

Leases: a candidate is claimed (ReviewService.claim) before its detail is shown and released when
the cursor leaves it, so two reviewers on one database are never shown the same item. A decision
captures the candidate id at the key press and runs in a worker; while one is in flight further
decision keys are refused with a bell, so a decision can neither be applied twice nor be applied
to a candidate the reviewer has not seen. The engine's own `status = 'pending'` guard is the
final word: a candidate decided elsewhere raises AlreadyDecidedError, shown as "already decided
by X", and the list is refreshed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, ClassVar, cast

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.coordinate import Coordinate
from textual.events import Resize
from textual.widgets import DataTable, Input, Static

from engine import QueueFilter
from engine.errors import (
    AlreadyDecidedError,
    ChainOrderError,
    ClaimedError,
    DecisionRequiredError,
    NotFoundError,
    SecondOpinionError,
    StaleSupersessionError,
    UndoRefusedError,
)
from engine.models import Candidate, CandidateContext, QueueMark
from engine.review import replaces

from ..messages import CandidateSelected, MoreRowsWanted
from ..modals import (
    ConfirmModal,
    EditModal,
    EditResult,
    PickFactModal,
    PickResult,
    ReasonModal,
    ReasonResult,
    ReplaceChoiceModal,
)
from ..widgets.candidate_detail import CandidateDetail, ChainLink
from ..widgets.keybar import APP_KEYS, KeyBar
from ..widgets.literal import literal, tell
from ..widgets.progress import ProgressHeader
from ..widgets.queue_filter import FilterModal
from .base import WorkstationScreen
from .queue_team import TEAM_BINDINGS, QueueTeamActions

POLL_SECONDS = 2.0
"""How often a store that cannot announce new candidates is asked for them."""

PAGE_SIZE = 200
"""Rows fetched per page; the next page loads when the cursor comes within PREFETCH of the end."""
PREFETCH = 20
NARROW_WIDTH = 130
"""Below this terminal width the three detail panes become tabs."""

REJECT_REASONS: tuple[str, ...] = (
    "Not true",
    "Not about this user",
    "Too vague to be useful",
    "Sensitive: must not be stored",
    "Temporary, not worth remembering",
)


SORTS: tuple[str, ...] = ("age", "user", "kind", "confidence")
"""The orders `o` cycles through (ReviewService.pending's `sort`); each groups by its key."""

KIND_LABELS = {"contradiction": "contra", "retraction": "retract", "proposed": "proposed"}
"""Short kind names for the list (the gap pane spells them out), so the statement keeps its room."""

FOOTER_KEYS: tuple[str, ...] = (
    "queue.leave_search",
    "queue.approve",
    "queue.reject",
    "queue.edit",
    "queue.undo",
    "queue.supersede",
    "queue.keep_both",
    *APP_KEYS,
    "queue.mark",
    "queue.defer",
    "queue.search",
    "queue.filters",
    "queue.sort",
    "queue.bulk",
    "queue.chain",
    "queue.retarget",
    "queue.next",
    "queue.previous",
)
"""What the footer shows, most important first, as far as the width allows; `?` lists the rest."""


def age_text(created_at: datetime, now: datetime) -> str:
    seconds = max(0, int((now - created_at).total_seconds()))
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86_400:
        return f"{seconds // 3600}h"
    return f"{seconds // 86_400}d"


BULK_SHOWN = 5
"""Candidates a bulk-approve question lists by statement (the rest by id), so it fits 80x24."""


def one_by_one_reason(cand: Candidate) -> str:
    """Why bulk approve leaves a candidate for its own decision."""
    if cand.kind == "retraction":
        return f"asks to retract fact #{cand.supersedes_id}"
    if cand.supersedes_id is not None:
        return f"would replace fact #{cand.supersedes_id}"
    if cand.supersedes_candidate_id is not None:
        return f"would replace candidate #{cand.supersedes_candidate_id}"
    return f"is an {cand.kind}: supersede or keep both"


def confidence_text(cand: Candidate) -> str:
    """An agent's proposal carries no confidence (None): shown as a dash, never as a made-up 1.00."""
    return "—" if cand.confidence is None else f"{cand.confidence:.2f}"


def group_key(cand: Candidate, sort: str, now: datetime) -> str:
    """The value the list is grouped by under `sort`: shown on a group's first row only."""
    if sort == "user":
        return cand.user_id
    if sort == "kind":
        return cand.kind
    if sort == "confidence":
        return confidence_text(cand)
    return age_text(cand.created_at, now)


def gone_text(cand: Candidate | None, cid: int) -> str:
    """What happened to a candidate decided elsewhere while the reviewer was looking at it."""
    if cand is None:
        return f"Candidate {cid} was removed elsewhere."
    how = {"approve": "approved", "reject": "rejected"}.get(cand.decision or "", cand.status)
    return f"Candidate {cid} was {how} by {cand.decided_by or 'someone else'} meanwhile."


def lease_holder(cand: Candidate, reviewer: str, now: datetime) -> str | None:
    """Who else holds a live lease on `cand` (None: nobody, or this reviewer)."""
    if cand.claimed_by and cand.claimed_by != reviewer and cand.claimed_until is not None and cand.claimed_until > now:
        return cand.claimed_by
    return None


class PendingTable(DataTable[Text]):
    """The pending list; posts CandidateSelected and MoreRowsWanted, never touches the database."""

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        key = event.row_key.value
        self.post_message(CandidateSelected(int(key) if key is not None else None))
        if event.cursor_row >= self.row_count - PREFETCH:
            self.post_message(MoreRowsWanted(self.row_count))


COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("mark", "", 1),
    ("user", "user", 8),
    ("kind", "kind", 8),
    ("conf", "conf", 4),
    ("age", "age", 4),
    ("statement", "statement", 60),
)
NARROW_COLUMNS = ("mark", "user", "kind", "statement")
"""Under NARROW_WIDTH the list keeps what tells rows apart: a short kind (so an update never looks
like a new fact) with its ⚠/⚑ markers; confidence and age are in the line below it and the gap tab."""
NARROW_KIND = {"new": "new", "update": "upd", "contradiction": "con", "retraction": "ret", "proposed": "prp"}
NARROW_KIND_WIDTH = 5
GROUP_COLUMN = {"age": "age", "user": "user", "kind": "kind", "confidence": "conf"}


class QueueScreen(QueueTeamActions, WorkstationScreen):
    CSS_PATH = "queue.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "approve", "Approve", id="queue.approve"),
        Binding("e", "edit", "Edit+approve", id="queue.edit"),
        Binding("r", "reject", "Reject", id="queue.reject"),
        Binding("s", "supersede", "Supersede", id="queue.supersede"),
        Binding("k", "keep_both", "Keep both", id="queue.keep_both"),
        Binding("n", "move(1)", "Next", id="queue.next"),
        Binding("p", "move(-1)", "Previous", id="queue.previous"),
        Binding("space", "mark", "Mark", id="queue.mark"),
        Binding("d", "defer", "Defer", id="queue.defer"),
        Binding("u", "undo", "Undo", id="queue.undo"),
        Binding("slash", "search", "Search", id="queue.search"),
        Binding("f", "filters", "Filters", id="queue.filters"),
        Binding("o", "sort", "Order", id="queue.sort"),
        Binding("b", "bulk", "Bulk approve", id="queue.bulk"),
        Binding("l", "chain", "Next in chain", id="queue.chain"),
        Binding("t", "retarget", "Retarget", id="queue.retarget"),
        Binding("escape", "leave_search", "Clear the search", show=False, id="queue.leave_search"),
        *TEAM_BINDINGS,
    ]

    def __init__(self) -> None:
        super().__init__()
        self.filter = QueueFilter()
        self.sort = "age"
        self.total = 0
        self.decided = 0
        self.undo_stack: list[list[int]] = []
        """One entry per decision as the reviewer made it: a bulk decision is one entry, undone by one `u`."""
        self.marked: set[int] = set()
        self.current_id: int | None = None
        self.current: CandidateContext | None = None
        self.chain: list[ChainLink] = []
        """The chain of replacements the shown candidate belongs to (the fact it starts from, then the
        pending candidates in order); one link when it replaces nothing."""
        self.candidates: dict[int, Candidate] = {}
        self.holders: dict[int, str] = {}
        """Candidates in the list leased by another reviewer, and who holds them."""
        self._all_loaded = False
        self._loading_more = False
        self._deciding = False
        self._select_lock = asyncio.Lock()
        self._wanted: int | None = None
        self.flag_notes: dict[int, str] = {}
        """Who asked for a second opinion on a flagged candidate, and their note: shown under the list
        beside the item while it is on screen."""
        self.deferred: list[int] = []
        """Candidates skipped with `d` in this session, in the order they were: kept at the end of
        the list (of each loaded page) until decided."""
        self.gone: dict[int, str] = {}
        """Rows left in place for candidates decided elsewhere while the reviewer's cursor was on
        them, and what happened to each: the cursor stays, the row says so, keys act on nothing."""
        self.columns: tuple[str, ...] = ()
        self._unsubscribe: Callable[[], Awaitable[None]] | None = None
        self._seen: QueueMark | None = None  # the pending count and newest id at the last look
        """Pending candidates (under the filter) at the last look for new ones."""

    # -- layout ------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static("", id="queue-header")
        yield ProgressHeader(id="queue-progress")
        with Horizontal(id="queue-body"):
            with Vertical(id="queue-left"):
                yield Input(placeholder="search statements and users (Esc clears)", id="queue-search")
                table = PendingTable(id="pending", cursor_type="row", zebra_stripes=True)
                table.border_title = "Pending"
                yield table
                yield Static("", id="queue-line")
            yield CandidateDetail(id="detail")
        yield KeyBar(FOOTER_KEYS)

    def on_mount(self) -> None:
        self.query_one("#queue-search", Input).display = False
        self.query_one(PendingTable).focus()
        self._apply_width(self.app.size.width)
        self.reload()
        self._subscribe()

    # -- new work from elsewhere -------------------------------------------------------------------

    @work(group="queue-subscribe", name="Listening for new candidates", exit_on_error=False)
    async def _subscribe(self) -> None:
        """Candidates queued by another process (extraction, an agent, another workstation) appear
        without a key press: the store announces them (PostgreSQL NOTIFY; SQLite's commit watcher).
        A store that cannot announce is polled instead."""
        try:
            self._unsubscribe = await self.review_app.memory.subscribe_new_candidates(self._announced)
        except NotImplementedError:
            self.set_interval(POLL_SECONDS, self._check_new)

    async def on_unmount(self) -> None:
        stop, self._unsubscribe = self._unsubscribe, None
        if stop is not None:
            await stop()

    def _announced(self) -> None:
        """The store says candidates may have arrived (from its listener): look on this screen's
        own time, not inside the listener's callback."""
        self.call_later(self._check_new)

    def _check_new(self) -> None:
        if self.is_mounted:
            self._recount()

    @work(exclusive=True, group="queue-recount", name="Looking for new candidates", exit_on_error=False)
    async def _recount(self) -> None:
        """Reload when the pending count or the newest pending id changed since the last look (a
        candidate queued, or decided on another workstation: PostgreSQL NOTIFYs both, SQLite's
        watcher reports every commit). An announcement may be spurious (this screen's own leases
        commit too, and a reload at every lease would re-claim and so announce again), hence the
        comparison; this screen's own decisions update the last look as they remove their row.
        A candidate decided elsewhere under the reviewer's cursor stays in place, marked (see
        `reload`), so no key lands on another candidate. While a decision is being saved the list
        is about to change: look again a little later."""
        if self._deciding:
            self.set_timer(POLL_SECONDS / 4, self._check_new)
            return
        mark = await self.review_app.memory.review.mark(filter=self.filter)
        seen, self._seen = self._seen, mark
        if seen is not None and mark != seen and not self._deciding:
            self.reload()

    def on_resize(self, event: Resize) -> None:
        self._apply_width(event.size.width)

    def _apply_width(self, width: int) -> None:
        narrow = width < NARROW_WIDTH
        self.set_class(narrow, "narrow")
        detail = self.query_one(CandidateDetail)
        if detail.narrow != narrow:
            detail.narrow = narrow
        columns = tuple(key for key, _, _ in COLUMNS if not narrow or key in NARROW_COLUMNS)
        if columns != self.columns:
            self.columns = columns
            table = self.query_one(PendingTable)
            table.clear(columns=True)
            for key, label, size in COLUMNS:
                if key in columns:
                    width = {"user": 6, "kind": NARROW_KIND_WIDTH}.get(key, size) if narrow else size
                    table.add_column(label, key=key, width=width)
            if self.candidates:
                self.reload()

    def _update_header(self) -> None:
        app = self.review_app
        head = Text()
        head.append(" Queue ", style="bold reverse")
        head.append(f"  {self.total} pending", style="bold")
        if self.filter.active:
            head.append(" (")
            head.append_text(literal(self.filter.describe()))
            head.append(")")
        head.append(f"  ·  decided this session: {self.decided}  ·  reviewer: ")
        head.append_text(literal(app.reviewer, "bold"))
        self.query_one("#queue-header", Static).update(head)
        self.query_one(ProgressHeader).refresh_for(self.filter)

    def _update_title(self) -> None:
        table = self.query_one(PendingTable)
        title = "Pending" if self.sort == "age" else f"Pending · by {self.sort}"
        if self.marked:
            title += f" · {len(self.marked)} marked"
        table.border_title = title

    def _row(self, cand: Candidate, now: datetime, previous: Candidate | None) -> list[Text]:
        labels = NARROW_KIND if "conf" not in self.columns else KIND_LABELS
        kind = labels.get(cand.kind, cand.kind) + ("⚠" if cand.unsupported else "") + ("⚑" if cand.flagged_by else "")
        cells = {
            "mark": Text("●" if cand.id in self.marked else "", style="bold"),
            "user": literal(cand.user_id),
            "kind": Text(kind),
            "conf": Text(confidence_text(cand)),
            "age": Text(age_text(cand.created_at, now)),
            "statement": self._statement_cell(cand),
        }
        column = GROUP_COLUMN[self.sort]
        if self.sort != "age" and column in self.columns:
            if previous is not None and group_key(previous, self.sort, now) == group_key(cand, self.sort, now):
                cells[column] = Text("")
            else:
                cells[column].stylize("bold")
        return [cells[key] for key in self.columns]

    def _statement_cell(self, cand: Candidate) -> Text:
        cell = Text()
        if cand.id in self.gone:
            cell.append_text(literal(f"✓ {cand.decided_by or 'decided'}: ", "bold green"))
            cell.append_text(literal(cand.statement.replace("\n", " "), "dim strike"))
            return cell
        holder = self.holders.get(cand.id)
        if holder is not None:
            cell.append_text(literal(f"⊘ {holder}: ", "bold yellow"))
        cell.append_text(literal(cand.statement.replace("\n", " ")))
        return cell

    def _show_line(self) -> None:
        """The full statement of the row under the cursor (the column cuts it), who else holds it,
        and what is marked."""
        line = Text()
        table = self.query_one(PendingTable)
        cid = self._cursor_id()
        cand = self.candidates.get(cid) if cid is not None else None
        if cid is not None and cid in self.gone:
            line.append_text(literal(self.gone[cid], "bold green"))
            line.append(" Nothing here to decide: n or p moves on.", style="dim")
        if cand is not None:
            line.append(f"#{cand.id} ", style="bold")
            line.append_text(literal(cand.user_id))
            line.append(
                f" · {cand.kind} · {confidence_text(cand)} · {age_text(cand.created_at, self.review_app.now())} old\n",
                style="dim",
            )
            line.append_text(literal(cand.statement, "bold"))
            flag_note = self.flag_notes.get(cand.id)
            if flag_note is not None:
                line.append("\n")
                line.append_text(literal(flag_note, "bold magenta"))
            holder = self.holders.get(cand.id)
            if holder is not None:
                line.append("\n⊘ being reviewed by ", style="yellow")
                line.append_text(literal(holder, "bold yellow"))
        if self.marked:
            line.append(
                f"\n{len(self.marked)} marked: r rejects them all with one reason, b approves them, space unmarks",
                style="dim",
            )
        elif table.row_count == 0:
            line = Text("")
        self.query_one("#queue-line", Static).update(line)

    def _cursor_id(self) -> int | None:
        table = self.query_one(PendingTable)
        if table.row_count == 0:
            return None
        try:
            key = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value
        except Exception:  # the cursor is outside the rows while the table is rebuilt
            return None
        return int(key) if key is not None else None

    def _previous_of(self, index: int) -> Candidate | None:
        if index <= 0:
            return None
        key = self.query_one(PendingTable).coordinate_to_cell_key(Coordinate(index - 1, 0)).row_key.value
        return self.candidates.get(int(key)) if key is not None else None

    def _redraw_row(self, index: int) -> None:
        """Redraw one row in place (a mark, a lease, or the group cell after a row above it left)."""
        table = self.query_one(PendingTable)
        if not 0 <= index < table.row_count:
            return
        key = table.coordinate_to_cell_key(Coordinate(index, 0)).row_key
        cand = self.candidates.get(int(key.value)) if key.value is not None else None
        if cand is None:
            return
        for column, cell in zip(
            self.columns, self._row(cand, self.review_app.now(), self._previous_of(index)), strict=True
        ):
            table.update_cell(key, column, cell)

    # -- loading the list --------------------------------------------------------------------------

    def _note_holders(self, page: list[Candidate], now: datetime) -> None:
        for cand in page:
            holder = lease_holder(cand, self.review_app.reviewer, now)
            if holder is None:
                self.holders.pop(cand.id, None)
            else:
                self.holders[cand.id] = holder

    @work(exclusive=True, group="queue-list", name="Loading the queue", exit_on_error=False)
    async def reload(self, select_id: int | None = None, *, first: bool = False) -> None:
        """Reload the first page with the current filter and order, keeping the cursor where it was
        (`first`: on the first row, as after a new search).

        The candidate under the cursor may have been decided elsewhere: its row stays at the
        cursor, marked with what happened (`gone`), and nothing is shown to decide until the
        reviewer moves: the next key then lands on nothing rather than on the row that moved up."""
        memory = self.review_app.memory
        table = self.query_one(PendingTable)
        previous_row = 0 if first else table.cursor_row
        keep = None if first else select_id if select_id is not None else self.current_id
        self._seen = await memory.review.mark(filter=self.filter)
        self.total = self._seen.count
        page = await memory.review.pending(limit=PAGE_SIZE, sort=self.sort, filter=self.filter)
        now = self.review_app.now()
        self.candidates = {c.id: c for c in page}
        self.marked &= set(self.candidates)
        self._note_holders(page, now)
        self._all_loaded = len(page) < PAGE_SIZE
        gone = await self._gone_under_cursor(select_id, first)
        later = {cid: n for n, cid in enumerate(self.deferred)}
        rows: list[Candidate] = [c for c in page if c.id not in later]
        rows += sorted((c for c in page if c.id in later), key=lambda c: later[c.id])
        if gone is not None:
            rows.insert(min(previous_row, len(rows)), gone)
            keep = gone.id
        with self.app.batch_update():
            table.clear()
            previous: Candidate | None = None
            for cand in rows:
                table.add_row(*self._row(cand, now, previous), key=str(cand.id))
                previous = cand
        self._update_header()
        self._update_title()
        if not rows:
            await self._drop_current()
            self.query_one(CandidateDetail).show(None, await self._empty_text())
            self._show_line()
            return
        index = 0
        if keep is not None and (keep in self.candidates or keep in self.gone):
            index = table.get_row_index(str(keep))
        elif previous_row > 0:
            index = min(previous_row, table.row_count - 1)
        table.move_cursor(row=index, animate=False)
        self._show_line()
        self._request(int(cast("str", table.coordinate_to_cell_key(Coordinate(index, 0)).row_key.value)))

    async def _gone_under_cursor(self, select_id: int | None, first: bool) -> Candidate | None:
        """The candidate the reviewer is looking at, when a reload finds it no longer pending
        (decided elsewhere), to be kept in place; None otherwise. Rows kept earlier are dropped
        once the cursor has left them."""
        cid = self._cursor_id()
        kept = cid if cid is not None and cid in self.gone else self.current_id
        if first or select_id is not None or kept is None or kept in self.candidates:
            self.gone.clear()
            return None
        try:
            cand = await self.review_app.memory.review.get(kept)
        except NotFoundError:  # erased meanwhile
            cand = None
        if cand is not None and cand.status == "pending":  # merely outside the new filter
            self.gone.clear()
            return None
        what = self.gone.get(kept) or gone_text(cand, kept)
        self.gone = {kept: what}
        if self.current_id == kept:
            self.review_app.claimed.discard(kept)
            self.current_id, self.current = None, None
            self.query_one(CandidateDetail).show(None, what + " Nothing here to decide: n or p moves on.")
        if cand is None:  # no row to keep: the list closes up, and the message says why
            self.gone.clear()
        return cand

    async def _empty_text(self) -> str:
        """What an empty list means: a finished queue, or a search or filter that matches nothing
        while other candidates wait."""
        if not self.filter.active:
            return "The queue is empty. Well done."
        everything = await self.review_app.memory.review.count()
        what = (
            "the search"
            if self.filter == QueueFilter(search=self.filter.search)
            else f"the filter ({self.filter.describe()})"
        )
        how = "Esc clears the search" if self.filter.search else "f changes the filter"
        return f"No candidate matches {what}; {everything} pending in all. {how}."

    @on(MoreRowsWanted)
    def _more(self, event: MoreRowsWanted) -> None:
        if not self._all_loaded and not self._loading_more:
            self._loading_more = True
            self._load_more(event.loaded)

    @work(group="queue-page", name="Loading more of the queue", exit_on_error=False)
    async def _load_more(self, loaded: int) -> None:
        try:
            page = await self.review_app.memory.review.pending(
                limit=PAGE_SIZE, offset=loaded, sort=self.sort, filter=self.filter
            )
            now = self.review_app.now()
            table = self.query_one(PendingTable)
            self._all_loaded = len(page) < PAGE_SIZE
            self._note_holders(page, now)
            previous = self._previous_of(table.row_count)
            for cand in page:
                if cand.id not in self.candidates:
                    self.candidates[cand.id] = cand
                    table.add_row(*self._row(cand, now, previous), key=str(cand.id))
                    previous = cand
        finally:
            self._loading_more = False

    # -- selection and leases ----------------------------------------------------------------------

    @on(CandidateSelected)
    def _selected(self, event: CandidateSelected) -> None:
        self._show_line()
        if event.candidate_id is not None:
            self._request(event.candidate_id)

    def _request(self, candidate_id: int) -> None:
        self._wanted = candidate_id
        self.run_worker(
            self._show(candidate_id),
            group="queue-select",
            name=f"Opening candidate {candidate_id}",
            exit_on_error=False,
        )

    async def _show(self, candidate_id: int) -> None:
        """Release the previous lease, claim this candidate, then show it. Serialised by a lock so
        leases are taken and released in the order the cursor moved; a request overtaken by a newer
        one does nothing."""
        async with self._select_lock:
            if self._wanted != candidate_id or candidate_id == self.current_id:
                return
            app = self.review_app
            await self._drop_current()
            detail = self.query_one(CandidateDetail)
            if candidate_id in self.gone:
                detail.show(None, self.gone[candidate_id] + " Nothing here to decide: n or p moves on.")
                self._show_line()
                return
            try:
                await app.claim(candidate_id)
            except ClaimedError as exc:
                # The cursor stays on the row (it moving on by itself made the next `a` open the
                # decision for an item nobody had looked at); keys act on nothing until it moves.
                if isinstance(exc, SecondOpinionError):
                    why = f"You asked for a second opinion on candidate {candidate_id}: another reviewer decides it."
                else:
                    why = f"Candidate {candidate_id} is being reviewed by {exc.claimed_by}."
                    self._mark_held(candidate_id, exc.claimed_by)
                tell(self, why, severity="warning")
                detail.show(None, why + " Nothing here to decide: n or p moves on.")
                return
            except AlreadyDecidedError as exc:
                tell(
                    self,
                    f"Candidate {candidate_id} was already decided by {exc.decided_by or 'someone else'}.",
                    severity="warning",
                )
                self._remove_row(candidate_id)
                return
            if self.holders.pop(candidate_id, None) is not None:
                self._redraw_id(candidate_id)
            ctx = await app.memory.review.context(candidate_id)
            # Decidable as soon as it is shown; the chain (more reads) is drawn in a moment after.
            self.current_id, self.current, self.chain = candidate_id, ctx, []
            detail.show(ctx)
            self.show_flag(ctx.candidate)
            self._show_line()
            chain = await self._chain(ctx)
            if self.current_id == candidate_id:
                self.chain = chain
                if sum(1 for link in chain if link.candidate_id is not None) > 1:
                    detail.show(ctx, chain=chain)

    async def _chain(self, ctx: CandidateContext) -> list[ChainLink]:
        """The candidate's chain through public reads: back along supersedes_candidate_id to the
        active fact it starts from, forward through the user's pending candidates chained to it."""
        review, cand = self.review_app.memory.review, ctx.candidate
        links = [cand]
        seen = {cand.id}
        while links[0].supersedes_candidate_id is not None and links[0].supersedes_candidate_id not in seen:
            earlier = await review.get(links[0].supersedes_candidate_id)
            seen.add(earlier.id)
            links.insert(0, earlier)
        later: dict[int, Candidate] = {}
        offset = 0
        while True:
            page = await review.pending(user_id=cand.user_id, limit=1000, offset=offset)
            later.update((c.supersedes_candidate_id, c) for c in page if c.supersedes_candidate_id is not None)
            if len(page) < 1000:
                break
            offset += len(page)
        while links[-1].id in later and later[links[-1].id].id not in seen:
            links.append(later[links[-1].id])
            seen.add(links[-1].id)
        chain = [ChainLink(c.statement, "pending", c.valid_at, candidate_id=c.id) for c in links]
        head = links[0].supersedes_id
        if head is not None and links[0].kind != "retraction":
            fact = (
                ctx.superseded
                if ctx.superseded is not None and ctx.superseded.id == head
                else await self.review_app.memory.get_knowledge(cand.user_id, head)
            )
            chain.insert(0, ChainLink(fact.statement, fact.status, fact.valid_at, fact_id=fact.id))
        return chain

    def _redraw_id(self, candidate_id: int) -> None:
        try:
            self._redraw_row(self.query_one(PendingTable).get_row_index(str(candidate_id)))
        except Exception:  # the row left the list meanwhile
            return

    def _mark_held(self, candidate_id: int, holder: str) -> None:
        self.holders[candidate_id] = holder
        self._redraw_id(candidate_id)
        self._show_line()

    async def _drop_current(self) -> None:
        if self.current_id is not None:
            cid, self.current_id, self.current = self.current_id, None, None
            await self.review_app.release(cid)

    def _remove_row(self, candidate_id: int) -> None:
        """Drop a decided candidate from the list and put the cursor on the one that followed it."""
        table = self.query_one(PendingTable)
        self.candidates.pop(candidate_id, None)
        self.marked.discard(candidate_id)
        self.holders.pop(candidate_id, None)
        try:
            index = table.get_row_index(str(candidate_id))
        except Exception:
            return
        table.remove_row(str(candidate_id))
        self.total = max(0, self.total - 1)
        if self._seen is not None:  # this screen's own decision is not "fewer from elsewhere"
            self._seen = QueueMark(max(0, self._seen.count - 1), self._seen.newest_id)
        self._update_header()
        self._update_title()
        if table.row_count == 0:
            self.reload()  # says why the list is empty, or loads the next page
            return
        index = min(index, table.row_count - 1)
        self._redraw_row(index)  # it may now be the first of its group
        table.move_cursor(row=index, animate=False)
        self._show_line()
        key = table.coordinate_to_cell_key(Coordinate(index, 0)).row_key.value
        if key is not None:
            self._request(int(key))
        if index >= table.row_count - PREFETCH:
            self.post_message(MoreRowsWanted(table.row_count))

    # -- decisions ---------------------------------------------------------------------------------

    def _target(self) -> CandidateContext | None:
        """The candidate a decision key applies to: the one shown under the cursor, or None (with a
        bell) while the shown one and the cursor disagree, i.e. while the cursor is moving to
        another item (a decision saved, a reload, a lease refused) and that item is not yet shown:
        a key typed ahead is never applied to an item the reviewer has not seen."""
        if self._deciding:
            self.app.bell()
            return None
        cid = self._cursor_id()
        if cid is not None and cid in self.gone:
            self.app.bell()
            tell(self, self.gone[cid] + " Nothing here to decide: n or p moves on.", severity="warning")
            return None
        if cid is not None and cid in self.holders:
            self.app.bell()
            tell(self, f"Candidate {cid} is being reviewed by {self.holders[cid]}.", severity="warning")
            return None
        if self.current is None or self.current.candidate.id != cid:
            self.app.bell()
            if cid is None:
                tell(self, "No candidate is selected.", severity="warning")
            return None
        return self.current

    def _decide(self, label: str, cid: int, op: Callable[[], Awaitable[Any]], decision: str) -> None:
        self._deciding = True
        self.run_worker(
            self._run_decision(cid, op, decision),
            group="queue-decide",
            name=f"{label} candidate {cid}",
            exit_on_error=False,
        )

    async def _run_decision(self, cid: int, op: Callable[[], Awaitable[Any]], decision: str) -> None:
        try:
            try:
                await op()
            except AlreadyDecidedError as exc:
                tell(
                    self,
                    f"Candidate {cid} was already decided by {exc.decided_by or 'someone else'}.",
                    severity="warning",
                )
                self.review_app.claimed.discard(cid)
                self.reload()  # its row stays under the cursor, marked (reload's `gone`)
                return
            except ClaimedError as exc:
                tell(self, f"Candidate {cid} is being reviewed by {exc.claimed_by}.", severity="warning")
                return
            except (StaleSupersessionError, DecisionRequiredError, ChainOrderError) as exc:
                tell(self, f"{str(exc).rstrip('.')}. Nothing was changed.", severity="warning")
                return
            self.review_app.claimed.discard(cid)  # a decision clears the lease
            if self.current_id == cid:
                self.current_id, self.current = None, None
            self.undo_stack.append([cid])
            self.decided += 1
            self._remove_row(cid)
        finally:
            self._deciding = False

    def _ask_replace(self, ctx: CandidateContext, statement: str, decide: Callable[[str], None]) -> None:
        """The supersede-or-keep-both question (a candidate that would replace something cannot be
        plainly approved: the engine refuses it with DecisionRequiredError)."""
        cand = ctx.candidate
        if ctx.superseded is not None:
            target, old = f"fact #{ctx.superseded.id}", ctx.superseded.statement
        else:
            earlier = next(
                (
                    link
                    for link in reversed(self.chain)
                    if link.candidate_id is not None and link.candidate_id != cand.id
                ),
                None,
            )
            target = f"candidate #{cand.supersedes_candidate_id}"
            old = earlier.statement if earlier is not None else "(an earlier value)"

        def chosen(choice: str | None) -> None:
            if choice is not None:
                decide(choice)

        self.app.push_screen(ReplaceChoiceModal(f"Candidate {cand.id} would replace {target}", old, statement), chosen)

    def action_approve(self) -> None:
        ctx = self._target()
        if ctx is None:
            return
        cand = ctx.candidate
        cid, review, who = cand.id, self.review_app.memory.review, self.review_app.reviewer
        if replaces(cand):
            # A plain approve would leave the old fact active beside its replacement ("User lives in
            # Lisbon" and "User lives in Porto"): the reviewer says which of the two they mean.
            self._ask_replace(ctx, cand.statement, lambda choice: self._replace(cid, choice))
            return
        label = "Retracting the fact of" if cand.kind == "retraction" else "Approving"
        self._decide(label, cid, lambda: review.approve(cid, who), "approve")

    def _replace(self, cid: int, choice: str, edit: EditResult | None = None) -> None:
        """Confirm the supersession or the correction, or keep both, with the edited statement and
        interval if any."""
        review, who = self.review_app.memory.review, self.review_app.reviewer
        changes: dict[str, Any] = {}
        if edit is not None:
            changes = {"statement": edit.statement, "valid_at": edit.valid_at, "invalid_at": edit.invalid_at}
        if choice == "supersede":
            self._decide(
                "Confirming the supersession of",
                cid,
                lambda: review.confirm_supersession(cid, who, **changes),
                "confirm_supersession",
            )
        elif choice == "correct":
            self._decide(
                "Confirming the correction of",
                cid,
                lambda: review.confirm_correction(cid, who, **changes),
                "confirm_correction",
            )
        else:
            self._decide("Keeping both for", cid, lambda: review.keep_both(cid, who, **changes), "keep_both")

    def action_keep_both(self) -> None:
        ctx = self._target()
        if ctx is None:
            return
        if not replaces(ctx.candidate):
            tell(
                self,
                "Keep both applies to a candidate that would replace something; press a to approve.",
                severity="warning",
            )
            return
        self._replace(ctx.candidate.id, "keep_both")

    def action_supersede(self) -> None:
        ctx = self._target()
        if ctx is None:
            return
        if not replaces(ctx.candidate):
            tell(
                self,
                f"Candidate {ctx.candidate.id} is a {ctx.candidate.kind} candidate: there is no fact to "
                "supersede. Press a to approve it.",
                severity="warning",
            )
            return
        self._replace(ctx.candidate.id, "supersede")

    def action_edit(self) -> None:
        ctx = self._target()
        if ctx is None:
            return
        cand = ctx.candidate
        if cand.kind == "retraction":
            tell(self, "A retraction request has nothing to edit: a to retract, r to reject.", severity="warning")
            return

        def edited(result: EditResult | None) -> None:
            if result is None:
                return
            if replaces(cand):  # the same question as `a`, now about the edited value
                self._ask_replace(ctx, result.statement, lambda choice: self._replace(cand.id, choice, result))
                return
            review, who = self.review_app.memory.review, self.review_app.reviewer
            self._decide(
                "Editing and approving",
                cand.id,
                lambda: review.approve(
                    cand.id,
                    who,
                    statement=result.statement,
                    valid_at=result.valid_at,
                    invalid_at=result.invalid_at,
                ),
                "edit_approve",
            )

        self.app.push_screen(EditModal(cand.statement, cand.valid_at, cand.invalid_at), edited)

    # -- chains and retargeting --------------------------------------------------------------------

    def action_chain(self) -> None:
        """Jump to the next candidate of the shown candidate's chain (after the last, the first)."""
        links = [link.candidate_id for link in self.chain if link.candidate_id is not None]
        if self.current_id is None or len(links) < 2:
            tell(self, "This candidate is not part of a chain of pending replacements.")
            return
        target = links[(links.index(self.current_id) + 1) % len(links)] if self.current_id in links else links[0]
        table = self.query_one(PendingTable)
        try:
            index = table.get_row_index(str(target))
        except Exception:
            tell(
                self,
                f"Candidate {target} of this chain is not in the list (filter or search); clear them to reach it.",
                severity="warning",
            )
            return
        table.move_cursor(row=index, animate=False)
        table.focus()

    def action_retarget(self) -> None:
        ctx = self._target()
        if ctx is None:
            return
        self._retarget_ask(ctx)

    @work(group="queue-retarget", name="Reading the facts to retarget at", exit_on_error=False)
    async def _retarget_ask(self, ctx: CandidateContext) -> None:
        """A candidate that replaces nothing is made an update of one active fact of its user; one
        that replaces something is made `new` (the link removed). The candidate stays pending."""
        cand = ctx.candidate
        review, who = self.review_app.memory.review, self.review_app.reviewer
        if cand.kind == "retraction":
            tell(self, "A retraction request names the fact it retracts; it cannot be retargeted.", severity="warning")
            return
        if replaces(cand):
            target = (
                f"fact #{cand.supersedes_id}"
                if cand.supersedes_id is not None
                else f"candidate #{cand.supersedes_candidate_id}"
            )

            def unlink(yes: bool | None) -> None:
                if yes:
                    self._run_retarget(cand.id, lambda: review.retarget(cand.id, who, None), "replaces nothing now")

            self.app.push_screen(
                ConfirmModal(
                    f"Make candidate {cand.id} replace nothing? It stops being an "
                    f"update of {target} and becomes a new candidate."
                ),
                unlink,
            )
            return
        facts = await self.review_app.memory.knowledge(cand.user_id)
        if not facts:
            tell(self, f"User {cand.user_id} has no active fact to replace.", severity="warning")
            return

        def picked(result: PickResult | None) -> None:
            if result is not None:
                self._run_retarget(
                    cand.id,
                    lambda: review.retarget(cand.id, who, result.fact_id),
                    f"now an update of fact #{result.fact_id}",
                )

        self.app.push_screen(
            PickFactModal(
                f"Make candidate {cand.id} ({cand.statement}) an update of which fact of {cand.user_id}?",
                [(k.id, k.statement) for k in facts],
                note="The candidate stays pending; approving it will then ask: supersede or keep both.",
            ),
            picked,
        )

    def _run_retarget(self, cid: int, op: Callable[[], Awaitable[Any]], what: str) -> None:
        async def run() -> None:
            await op()
            tell(self, f"Candidate {cid} {what}.")
            self.current_id = None  # shown again, re-read (the lease is still ours)
            self.reload(select_id=cid)

        self.run_worker(run(), group="queue-decide", name=f"Retargeting candidate {cid}", exit_on_error=False)

    def action_reject(self) -> None:
        if self.marked:
            self._bulk_reject()
            return
        ctx = self._target()
        if ctx is None:
            return
        cand = ctx.candidate
        if cand.kind == "retraction":
            modal = ReasonModal(
                f"Reject the request to retract fact #{cand.supersedes_id}",
                presets=("The fact is still true", "Not the user's request"),
                note="The fact stays active; no tombstone is written.",
            )
        else:
            modal = ReasonModal(
                f"Reject candidate {cand.id}: {cand.statement}",
                presets=REJECT_REASONS,
                tombstone=True,
                note=f"A tombstone will be written: this value will not be queued again for user {cand.user_id}.",
            )

        def rejected(result: ReasonResult | None) -> None:
            if result is None:
                return
            review, who = self.review_app.memory.review, self.review_app.reviewer
            tomb = result.tombstone if cand.kind != "retraction" else False
            self._decide(
                "Rejecting", cand.id, lambda: review.reject(cand.id, who, result.reason, tombstone=tomb), "reject"
            )

        self.app.push_screen(modal, rejected)

    # -- marks and bulk decisions ------------------------------------------------------------------

    def action_mark(self) -> None:
        """Mark or unmark the row under the cursor, then move down (space, like a file manager)."""
        cid = self._cursor_id()
        if cid is None:
            return
        if cid in self.marked:
            self.marked.discard(cid)
        else:
            self.marked.add(cid)
        self._redraw_id(cid)
        self._update_title()
        self._show_line()
        self.action_move(1)

    def action_defer(self) -> None:
        """Skip the item under the cursor for now: it goes to the end of the list (for this session)
        and its lease is released; the cursor stays at its place, now on the item that followed,
        which is claimed and shown before a decision key acts on it (`_target`)."""
        cid = self._cursor_id()
        table = self.query_one(PendingTable)
        if self._deciding or cid is None or cid not in self.candidates:
            self.app.bell()
            return
        if table.row_count < 2:
            tell(self, "Nothing else is in the list to review first.", severity="warning")
            return
        if cid in self.deferred:
            self.deferred.remove(cid)
        self.deferred.append(cid)
        index = table.get_row_index(str(cid))
        table.remove_row(str(cid))
        table.add_row(
            *self._row(self.candidates[cid], self.review_app.now(), self._previous_of(table.row_count)), key=str(cid)
        )
        self._redraw_row(index)  # it may now be the first of its group
        table.move_cursor(row=index, animate=False)
        self._show_line()
        tell(self, f"Candidate {cid} deferred to the end of the list.")
        following = self._cursor_id()
        if following is not None:
            self._request(following)

    def _marked_in_order(self) -> list[int]:
        """The marked ids in list order: the order the reviewer saw them in."""
        table = self.query_one(PendingTable)
        order = {str(key.value): i for i, key in enumerate(table.rows)}
        return sorted(self.marked, key=lambda cid: order.get(str(cid), len(order)))

    def _bulk_reject(self) -> None:
        if self._deciding:
            self.app.bell()
            return
        ids = self._marked_in_order()
        users = sorted({self.candidates[c].user_id for c in ids if c in self.candidates})
        modal = ReasonModal(
            f"Reject the {len(ids)} marked candidates",
            presets=REJECT_REASONS,
            tombstone=True,
            note=f"Each is rejected on its own (one decision and one audit row each), with this reason; with a "
            f"tombstone, none of these values is queued again for its user ({', '.join(users)}). "
            "One u undoes them all.",
        )

        def rejected(result: ReasonResult | None) -> None:
            if result is None or self._deciding:
                return
            self._deciding = True
            self.run_worker(
                self._run_bulk_reject(ids, result),
                group="queue-decide",
                name=f"Rejecting {len(ids)} marked candidates",
                exit_on_error=False,
            )

        self.app.push_screen(modal, rejected)

    async def _run_bulk_reject(self, ids: list[int], result: ReasonResult) -> None:
        review, who = self.review_app.memory.review, self.review_app.reviewer
        done: list[int] = []
        skipped: list[str] = []
        try:
            for cid in ids:
                try:
                    await review.reject(cid, who, result.reason, tombstone=result.tombstone)
                except AlreadyDecidedError as exc:
                    skipped.append(f"#{cid} already decided by {exc.decided_by or 'someone else'}")
                    continue
                except ClaimedError as exc:
                    skipped.append(f"#{cid} being reviewed by {exc.claimed_by}")
                    continue
                done.append(cid)
                self.review_app.claimed.discard(cid)
        finally:
            self._finish_bulk(done, "Rejected", skipped)

    def _finish_bulk(self, done: list[int], verb: str, skipped: list[str]) -> None:
        if done:
            self.undo_stack.append(done)
            self.decided += len(done)
        if self.current_id in done:
            self.current_id, self.current = None, None
        self.marked.clear()
        extra = f"; skipped {len(skipped)}: {'; '.join(skipped)}" if skipped else ""
        tell(
            self,
            f"{verb} {len(done)} candidate{'s' if len(done) != 1 else ''}{extra}.",
            severity="warning" if skipped else "information",
        )
        self._deciding = False
        self.reload()

    def action_undo(self) -> None:
        if self._deciding:
            self.app.bell()
            return
        if not self.undo_stack:
            tell(self, "Nothing to undo in this session.")
            return
        group = self.undo_stack.pop()
        self._deciding = True
        what = f"candidate {group[0]}" if len(group) == 1 else f"{len(group)} candidates"
        self.run_worker(
            self._run_undo(group), group="queue-decide", name=f"Undoing the decision on {what}", exit_on_error=False
        )

    async def _run_undo(self, group: list[int]) -> None:
        """Undo one step: a single decision, or every decision of one bulk action (latest first)."""
        undone: list[int] = []
        try:
            try:
                for cid in reversed(group):
                    await self.review_app.memory.review.undo(cid, self.review_app.reviewer)
                    undone.append(cid)
            except UndoRefusedError as exc:
                left = [c for c in group if c not in undone]
                self.undo_stack.append(left)
                tell(
                    self,
                    str(exc) + (f" ({len(undone)} of the group were undone)" if undone else ""),
                    title="Undo refused",
                    severity="error",
                )
                return
            except BaseException:
                left = [c for c in group if c not in undone]
                if left:
                    self.undo_stack.append(left)
                raise
            finally:
                self.decided = max(0, self.decided - len(undone))
            if len(group) == 1:
                tell(self, f"Undid the decision on candidate {group[0]}.")
            else:
                tell(self, f"Undid the {len(group)} decisions of one bulk action.")
            await self._drop_current()
            self.reload(select_id=group[0])
        finally:
            self._deciding = False

    # -- navigation, search, filters, order, bulk approve ------------------------------------------

    def action_move(self, step: int) -> None:
        table = self.query_one(PendingTable)
        if table.row_count:
            table.move_cursor(row=max(0, min(table.row_count - 1, table.cursor_row + step)), animate=False)
            table.focus()

    def action_search(self) -> None:
        box = self.query_one("#queue-search", Input)
        box.display = True
        box.focus()

    def action_leave_search(self) -> None:
        """Esc: leave the search box AND clear the search (Enter keeps it)."""
        box = self.query_one("#queue-search", Input)
        if box.value:
            box.value = ""  # Input.Changed then reloads the unfiltered list
        box.display = False
        self.query_one(PendingTable).focus()

    @on(Input.Changed, "#queue-search")
    def _search_changed(self, event: Input.Changed) -> None:
        search = event.value.strip()
        if search != self.filter.search:
            self.filter = self.filter.with_search(search)
            self.reload(first=True)

    @on(Input.Submitted, "#queue-search")
    def _search_done(self, event: Input.Submitted) -> None:
        box = self.query_one("#queue-search", Input)
        box.display = bool(box.value)
        self.query_one(PendingTable).focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # While the search box has focus, letters are typed into it, not decisions. Esc clears a
        # search from the list too.
        search = self.query_one("#queue-search", Input)
        if action == "leave_search":
            return search.has_focus or bool(self.filter.search)
        return not search.has_focus

    def action_filters(self) -> None:
        self._open_filters()

    @work(group="queue-filters", name="Opening the filters", exit_on_error=False)
    async def _open_filters(self) -> None:
        # The modal is pushed with a callback, not awaited: a worker never waits on the reviewer.
        users = await self.review_app.memory.users()

        def chosen(result: QueueFilter | None) -> None:
            if result is not None and result != self.filter:
                self.filter = result
                self.reload()

        self.app.push_screen(FilterModal(self.filter, users), chosen)

    def action_sort(self) -> None:
        """Cycle the order (and grouping) of the list: age, user, kind, confidence."""
        self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]
        tell(self, f"Ordered by {self.sort}" + ("" if self.sort == "age" else ", grouped") + ".")
        self.reload()

    def action_bulk(self) -> None:
        if self._deciding:
            self.app.bell()
            return
        self._bulk()

    @work(group="queue-bulk", name="Collecting the candidates to approve", exit_on_error=False)
    async def _bulk(self) -> None:
        """Ask about a fixed list of ids (the marked rows, or everything the filter matches now);
        a yes approves exactly those, however the queue changed while the question was open."""
        review = self.review_app.memory.review
        if self.marked:
            chosen = [self.candidates[c] for c in self._marked_in_order() if c in self.candidates]
            scope = f"the {len(chosen)} marked candidates"
        else:
            chosen = []
            offset = 0
            while True:
                page = await review.pending(limit=1000, offset=offset, sort=self.sort, filter=self.filter)
                chosen += page
                if len(page) < 1000:
                    break
                offset += len(page)
            scope = f"the candidates matching the current filter ({self.filter.describe()})"
        approve = [c for c in chosen if c.kind != "retraction" and not replaces(c)]
        ids = [c.id for c in approve]
        left_out = [c for c in chosen if c.id not in set(ids)]
        if not ids:
            tell(
                self,
                "Nothing to bulk approve: updates, contradictions and retraction requests need one-by-one review.",
                severity="warning",
            )
            return
        question = f"Approve {len(ids)} of {scope} as new facts? Exactly these, whatever arrives meanwhile:\n"
        question += "\n".join(f"  #{c.id} {c.user_id}: {c.statement}" for c in approve[:BULK_SHOWN])
        if len(approve) > BULK_SHOWN:
            question += f"\n  … and {len(approve) - BULK_SHOWN} more"
        if left_out:
            question += (
                f"\nLeft for one-by-one review ({len(left_out)}): "
                + "; ".join(f"#{c.id} {one_by_one_reason(c)}" for c in left_out[:BULK_SHOWN])
                + ("; …" if len(left_out) > BULK_SHOWN else "")
            )

        def answered(yes: bool | None) -> None:
            if yes and not self._deciding:
                self._deciding = True
                self.run_worker(
                    self._run_bulk(ids),
                    group="queue-decide",
                    name=f"Bulk approving {len(ids)} candidates",
                    exit_on_error=False,
                )

        self.app.push_screen(ConfirmModal(question), answered)

    async def _run_bulk(self, ids: list[int]) -> None:
        """Approve exactly `ids` (each its own transaction); ids decided or claimed elsewhere
        meanwhile are skipped and said so."""
        review = self.review_app.memory.review
        done: list[int] = []
        skipped: list[str] = []
        try:
            await self._drop_current()
            result = await review.bulk_approve(ids, self.review_app.reviewer)
            done = [f.candidate_id for f in result.approved if f.candidate_id is not None]
            skipped = [f"#{cid} {why}" for cid, why in result.skipped]
        finally:
            self._finish_bulk(done, "Approved", skipped)

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
captures the candidate id at the key press and runs in a worker; the in-flight slot, the undo stack
and the engine's refusals are the `DecisionSession`'s (review_app/decision_session.py): while one
change is in flight further decision keys are refused with a bell, so a decision can neither be
applied twice nor be applied to a candidate the reviewer has not seen. The engine's own
`status = 'pending'` guard is the final word: a candidate decided elsewhere raises
AlreadyDecidedError, shown as "already decided by X", and the list is refreshed.

The parts: this screen keeps composition, bindings and actions and applies what its Textual-free
controllers decide: where the cursor goes (`QueueCursor`, review_app/queue_cursor.py: it never moves
by itself), which leases are held (`Leases`, review_app/leases.py, the app's one owner of them),
when the list is read again (`QueueWatcher`, review_app/queue_watch.py) and the decisions in flight
(`DecisionSession`). The list and how it looks is the `PendingList` widget
(review_app/widgets/pending_list.py), the candidate's panes `CandidateDetail`.

Workers follow the workstation's one policy (review_app/workers.py): reads are never cancelled;
a read that a newer one supersedes drops its result (its `Reads` ticket), and changes go through
the session one at a time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.events import Resize
from textual.timer import Timer
from textual.widgets import Input, Static

from engine import QueueFilter
from engine.errors import AlreadyDecidedError, ClaimedError, NotFoundError, SecondOpinionError
from engine.models import Candidate, CandidateContext
from engine.review import replaces

from ..decision_session import DecisionSession, Outcome
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
from ..queue_cursor import (
    NOTHING_HERE,
    Gone,
    Placement,
    QueueCursor,
    Refusal,
    after_bulk,
    bulk_plan,
    decided_text,
    gone_text,
    holders,
    lease_holder,
    one_by_one_reason,
)
from ..queue_watch import QueueWatcher
from ..widgets.candidate_detail import CandidateDetail, ChainLink
from ..widgets.in_order_input import InOrderInput
from ..widgets.keybar import APP_KEYS, KeyBar
from ..widgets.literal import literal, tell
from ..widgets.pending_list import PREFETCH, PendingList, age_text, confidence_text
from ..widgets.progress import ProgressHeader
from ..widgets.queue_filter import FilterModal
from .base import WorkstationScreen
from .queue_team import TEAM_BINDINGS, QueueTeamActions

PROGRESS_SETTLE = 1.0
"""After a decision the progress line is re-read once the reviewer pauses this long; the header's
count is kept exact meanwhile from the screen's own decisions."""

PAGE_SIZE = 200
"""Rows fetched per page; the next page loads when the cursor comes within PREFETCH of the end."""
NARROW_WIDTH = 130
"""Below this terminal width the three detail panes become tabs and the list keeps fewer columns."""

REJECT_REASONS: tuple[str, ...] = (
    "Not true",
    "Not about this user",
    "Too vague to be useful",
    "Sensitive: must not be stored",
    "Temporary, not worth remembering",
    "Already known: a duplicate",
    "A hypothetical, a joke or a question",
    "Wrong date or time",
    "Misread: the user did not say this",
)
"""The reject dialog's numbered reasons, `1`-`9` as the README's key table says."""


SORTS: tuple[str, ...] = ("age", "user", "kind", "confidence")
"""The orders `o` cycles through (ReviewService.pending's `sort`); each groups by its key."""

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


__all__ = ["NOTHING_HERE", "Gone", "QueueScreen", "Refusal", "gone_text", "lease_holder", "one_by_one_reason"]


class QueueScreen(QueueTeamActions, WorkstationScreen):
    CSS_PATH = "queue.tcss"
    # Priority bindings: Textual runs these as each key arrives, in order. A non-priority binding
    # runs only after its key has bubbled up from the focused list, by when keys typed with it have
    # already gone to the list: `e` End X in one burst lost the End X. `check_action` keeps them
    # off while the search box has focus, so letters are typed there.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "approve", "Approve", id="queue.approve", priority=True),
        Binding("e", "edit", "Edit+approve", id="queue.edit", priority=True),
        Binding("r", "reject", "Reject", id="queue.reject", priority=True),
        Binding("s", "supersede", "Supersede", id="queue.supersede", priority=True),
        Binding("k", "keep_both", "Keep both", id="queue.keep_both", priority=True),
        Binding("n", "move(1)", "Next", id="queue.next", priority=True),
        Binding("p", "move(-1)", "Previous", id="queue.previous", priority=True),
        Binding("space", "mark", "Mark", id="queue.mark", priority=True),
        Binding("d", "defer", "Defer", id="queue.defer", priority=True),
        Binding("u", "undo", "Undo", id="queue.undo", priority=True),
        Binding("slash", "search", "Search", id="queue.search", priority=True),
        Binding("f", "filters", "Filters", id="queue.filters", priority=True),
        Binding("o", "sort", "Order", id="queue.sort", priority=True),
        Binding("b", "bulk", "Bulk approve", id="queue.bulk", priority=True),
        Binding("l", "chain", "Next in chain", id="queue.chain", priority=True),
        Binding("t", "retarget", "Retarget", id="queue.retarget", priority=True),
        Binding("escape", "leave_search", "Clear the search", show=False, id="queue.leave_search", priority=True),
        *TEAM_BINDINGS,
    ]

    def __init__(self) -> None:
        super().__init__()
        self.filter = QueueFilter()
        self.sort = "age"
        self.total = 0
        self.session: DecisionSession | None = None
        self.current_id: int | None = None
        self.current: CandidateContext | None = None
        self.chain: list[ChainLink] = []
        """The chain of replacements the shown candidate belongs to (the fact it starts from, then the
        pending candidates in order); one link when it replaces nothing."""
        self._loading_more = False
        self._select_lock = asyncio.Lock()
        self._wanted: int | None = None
        self.flag_notes: dict[int, str] = {}
        """Who asked for a second opinion on a flagged candidate, and their note: shown under the list
        beside the item while it is on screen."""
        self.cursor = QueueCursor()
        self.watcher = QueueWatcher(
            read_mark=lambda: self.review_app.memory.review.mark(filter=self.filter),
            reload=self.reload,
            busy=lambda: self.decisions.busy,
            fresh=lambda: self.reads.since("list"),
            spawn=self._spawn_look,
            later=self._later,
        )

    @property
    def deferred(self) -> list[int]:
        """Candidates skipped with `d` in this session (`QueueCursor.deferred`)."""
        return self.cursor.deferred

    @property
    def pending_list(self) -> PendingList:
        return self.query_one(PendingList)

    @property
    def decisions(self) -> DecisionSession:
        """The session's decisions (made at mount: it needs the app's open store)."""
        if self.session is None:
            app = self.review_app
            self.session = DecisionSession(app.memory.review, app.reviewer, app.leases)
        return self.session

    # -- layout ------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static("", id="queue-header")
        yield ProgressHeader(id="queue-progress")
        with Horizontal(id="queue-body"):
            with Vertical(id="queue-left"):
                yield InOrderInput(placeholder="search statements and users (Esc clears)", id="queue-search")
                rows = PendingList(id="pending")
                rows.border_title = "Pending"
                yield rows
                yield Static("", id="queue-line")
            yield CandidateDetail(id="detail")
        yield KeyBar(FOOTER_KEYS)

    def on_mount(self) -> None:
        self.query_one("#queue-search", Input).display = False
        self.pending_list.focus()
        self._apply_width(self.app.size.width)
        self.reload()
        self._subscribe()

    # -- new work from elsewhere -------------------------------------------------------------------

    @work(group="queue-subscribe", name="Listening for new candidates", exit_on_error=False)
    async def _subscribe(self) -> None:
        """Candidates queued or decided by another process appear without a key press (the
        watcher, review_app/queue_watch.py)."""
        await self.watcher.start(self.review_app.memory.subscribe_new_candidates)

    async def on_unmount(self) -> None:
        await self.watcher.stop()

    def _spawn_look(self, look: Coroutine[Any, Any, None]) -> None:
        if not self.is_mounted:
            look.close()
            return
        self.run_worker(look, group="queue-recount", name="Looking for new candidates", exit_on_error=False)

    def _later(self, delay: float, callback: Callable[[], None]) -> Timer | None:
        return self.set_timer(delay, callback) if self.is_mounted else None

    def on_resize(self, event: Resize) -> None:
        self._apply_width(event.size.width)

    def _apply_width(self, width: int) -> None:
        narrow = width < NARROW_WIDTH
        self.set_class(narrow, "narrow")
        detail = self.query_one(CandidateDetail)
        if detail.narrow != narrow:
            detail.narrow = narrow
        self.pending_list.set_narrow(narrow)

    def _update_header(self, *, settle: float = 0.0) -> None:
        app = self.review_app
        head = Text()
        head.append(" Queue ", style="bold reverse")
        head.append(f"  {self.total} pending", style="bold")
        if self.filter.active:
            head.append(" (")
            head.append_text(literal(self.filter.describe()))
            head.append(")")
        head.append(f"  ·  decided this session: {self.decisions.decided}  ·  reviewer: ")
        head.append_text(literal(app.reviewer, "bold"))
        self.query_one("#queue-header", Static).update(head, layout=False)
        self.query_one(ProgressHeader).refresh_for(self.filter, settle=settle)

    def _update_title(self) -> None:
        rows = self.pending_list
        title = "Pending" if self.sort == "age" else f"Pending · by {self.sort}"
        if rows.marked:
            title += f" · {len(rows.marked)} marked"
        rows.border_title = title

    def _show_line(self) -> None:
        """The full statement of the row under the cursor (the column cuts it), who else holds it,
        and what is marked."""
        line = Text()
        rows = self.pending_list
        cid = rows.cursor_id
        cand = rows.candidates.get(cid) if cid is not None else None
        if cid is not None and cid in rows.gone:
            line.append_text(literal(rows.gone[cid], "bold green"))
            line.append(NOTHING_HERE, style="dim")
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
            holder = rows.holders.get(cand.id)
            if holder is not None:
                line.append("\n⊘ being reviewed by ", style="yellow")
                line.append_text(literal(holder, "bold yellow"))
        if rows.marked:
            line.append(
                f"\n{len(rows.marked)} marked: r rejects them all with one reason, b approves them, space unmarks",
                style="dim",
            )
        elif rows.row_count == 0:
            line = Text("")
        self.query_one("#queue-line", Static).update(line)

    # -- loading the list --------------------------------------------------------------------------

    def reload(self, select_id: int | None = None, *, first: bool = False) -> None:
        """Reload the list with the current filter and order, the cursor on the candidate it is on
        (`first`: on the first row, as after a new search; `select_id`: on that candidate).

        The candidate under the cursor may have been decided elsewhere: its row stays at the
        cursor, marked with what happened (`gone`), and nothing is shown to decide until the
        reviewer moves: the next key then lands on nothing rather than on the row that moved up
        (`QueueCursor.place`)."""
        self.run_worker(
            self._reload(self.reads.ask("list"), select_id, first),
            group="queue-list",
            name="Loading the queue",
            exit_on_error=False,
        )

    async def _reload(self, fresh: Callable[[], bool], select_id: int | None, first: bool) -> None:
        memory = self.review_app.memory
        rows = self.pending_list
        under = None if first else rows.cursor_id
        previous_row = 0 if first else rows.cursor_row
        keep = select_id if select_id is not None else under
        # As many rows as are loaded: a cursor on row 350 is still on its candidate after a reload.
        limit = max(PAGE_SIZE, -(-rows.row_count // PAGE_SIZE) * PAGE_SIZE) if not first else PAGE_SIZE
        mark = await memory.review.mark(filter=self.filter)
        page = await memory.review.pending(limit=limit, sort=self.sort, filter=self.filter)
        gone = await self._decided_under_cursor(first or select_id is not None, under, {c.id for c in page})
        empty = await self._empty_text() if not page and gone is None else ""
        if not fresh():  # a newer read was asked for: its result counts
            return
        if not first and select_id is None and rows.cursor_id != under:
            self.reload()  # the reviewer moved while this read: read again for where they are now
            return
        now = self.review_app.now()
        self.watcher.saw(mark)
        self.total = mark.count
        above = rows.row_ids[: rows.cursor_row]
        placed: Placement = self.cursor.place(page, keep=keep, previous_row=previous_row, gone=gone, above=above)
        if gone is not None:
            self.review_app.leases.ended(gone.candidate_id)  # the decision elsewhere ended any lease
            if self.current_id == gone.candidate_id:
                self.current_id, self.current = None, None
            if rows.cursor_id == gone.candidate_id:
                self.query_one(CandidateDetail).show(None, gone.what + NOTHING_HERE)
        rows.show(
            placed.rows,
            sort=self.sort,
            now=now,
            cursor=placed.index,
            holders=holders(page, self.review_app.reviewer, now),
            gone=placed.gone,
            all_loaded=len(page) < limit,
        )
        self._update_header()
        self._update_title()
        self._show_line()
        if not placed.rows:
            await self._drop_current()
            self.query_one(CandidateDetail).show(None, empty)
            return
        if rows.cursor_id is not None:
            if rows.cursor_id == self.current_id and self._shown_is_stale(page):
                self.run_worker(
                    self._redraw(rows.cursor_id), group="queue-select", name="Redrawing", exit_on_error=False
                )
            self._request(rows.cursor_id)

    def _shown_is_stale(self, page: list[Candidate]) -> bool:
        """Whether the candidate shown (and leased) reads differently in `page`: a decision made
        meanwhile may have re-pointed it (an approval makes a chained update the update of the new
        fact), marked it or changed its kind, and the panes must not keep showing the old link."""
        ctx = self.current
        fresh = next((c for c in page if ctx is not None and c.id == ctx.candidate.id), None)
        if ctx is None or fresh is None:
            return False
        old = ctx.candidate
        return _shown_fields(fresh) != _shown_fields(old)

    async def _redraw(self, candidate_id: int) -> None:
        """Read the shown candidate's panes again, keeping its lease (no release and claim)."""
        async with self._select_lock:
            if self.current_id != candidate_id:
                return
            ctx = await self.review_app.memory.review.context(candidate_id)
            if self.current_id != candidate_id:
                return
            self._present(candidate_id, ctx)
        await self._draw_chain(candidate_id)

    async def _decided_under_cursor(self, skip: bool, under: int | None, listed: set[int]) -> Gone | None:
        """The candidate under the reviewer's cursor, when a reload finds it no longer pending
        (decided elsewhere, or erased), and what happened to it; None otherwise (`skip`: the
        reload moves the cursor anyway). A row kept earlier is dropped once the cursor has left it."""
        rows = self.pending_list
        if skip or under is None or under in listed:
            return None
        try:
            cand: Candidate | None = await self.review_app.memory.review.get(under)
        except NotFoundError:  # erased meanwhile: no row to keep, the message says why
            cand = None
        if cand is not None and cand.status == "pending":  # merely outside the new filter
            return None
        return Gone(under, rows.gone.get(under) or gone_text(cand, under), cand)

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

    @on(PendingList.NearEnd)
    def _more(self, event: PendingList.NearEnd) -> None:
        event.stop()
        self._want_more(event.loaded)

    def _want_more(self, loaded: int) -> None:
        if not self.pending_list.all_loaded and not self._loading_more:
            self._loading_more = True
            self.run_worker(
                self._load_more(loaded, self.reads.since("list")),
                group="queue-page",
                name="Loading more of the queue",
                exit_on_error=False,
            )

    async def _load_more(self, loaded: int, fresh: Callable[[], bool]) -> None:
        try:
            page = await self.review_app.memory.review.pending(
                limit=PAGE_SIZE, offset=loaded, sort=self.sort, filter=self.filter
            )
            if not fresh():  # the list was read again meanwhile
                return
            rows = self.pending_list
            rows.extend(
                page,
                holders=holders(page, self.review_app.reviewer, self.review_app.now()),
                all_loaded=len(page) < PAGE_SIZE,
            )
            for cid in self.cursor.deferred:  # deferred rows stay after everything not deferred
                if cid != rows.cursor_id:
                    rows.to_end(cid)
        finally:
            self._loading_more = False

    # -- selection and leases ----------------------------------------------------------------------

    @on(PendingList.Highlighted)
    def _selected(self, event: PendingList.Highlighted) -> None:
        event.stop()
        self._show_line()
        if event.candidate_id is not None:
            self._request(event.candidate_id)

    def _go_to(self, index: int) -> None:
        """Move the cursor as the reviewer asked (n, p, l): the row is claimed and shown (through
        `PendingList.Highlighted`) before a decision key acts on it."""
        rows = self.pending_list
        rows.move_cursor(index)
        rows.focus()

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
            await self._drop_current()
            self._present(candidate_id, await self._open(candidate_id))
        await self._draw_chain(candidate_id)

    async def _open(self, candidate_id: int) -> CandidateContext | Refusal:
        """Claim a candidate and read what its panes show, touching nothing on screen (so that the
        caller can change the screen in one go: one frame)."""
        rows = self.pending_list
        if candidate_id in rows.gone:
            return Refusal(rows.gone[candidate_id])
        try:
            await self.review_app.claim(candidate_id)
        except ClaimedError as exc:
            # The cursor stays on the row (it moving on by itself made the next `a` open the
            # decision for an item nobody had looked at); keys act on nothing until it moves.
            if isinstance(exc, SecondOpinionError):
                why = f"You asked for a second opinion on candidate {candidate_id}: another reviewer decides it."
                return Refusal(why, toast=True)
            return Refusal(f"Candidate {candidate_id} is being reviewed by {exc.claimed_by}.", exc.claimed_by, True)
        except AlreadyDecidedError as exc:
            why = decided_text(candidate_id, exc.status, exc.decided_by)
            return Refusal(why, toast=True, decided=True, by=exc.decided_by)
        return await self.review_app.memory.review.context(candidate_id)

    def _present(self, candidate_id: int, opened: CandidateContext | Refusal) -> None:
        """Show what `_open` found: the candidate, decidable from now on; or why there is nothing
        here to decide."""
        rows = self.pending_list
        detail = self.query_one(CandidateDetail)
        if isinstance(opened, Refusal):
            if opened.toast:
                tell(self, opened.why, severity="warning")
            if opened.decided:  # the row stays where the reviewer put the cursor, marked
                self.review_app.leases.ended(candidate_id)
                rows.mark_gone(candidate_id, opened.why, opened.by)
            if opened.holder is not None:
                rows.set_holder(candidate_id, opened.holder)
            detail.show(None, opened.why + NOTHING_HERE)
            self._show_line()
            return
        rows.set_holder(candidate_id, None)
        rows.update_row(opened.candidate)  # as read now: the row may show a kind since changed
        # Decidable as soon as it is shown; the chain (more reads) is drawn in a moment after.
        self.current_id, self.current, self.chain = candidate_id, opened, []
        detail.show(opened)
        self.show_flag(opened.candidate)
        self._show_line()

    async def _draw_chain(self, candidate_id: int) -> None:
        ctx = self.current
        if ctx is None or self.current_id != candidate_id:
            return
        chain = await self._chain(ctx)
        if self.current_id == candidate_id:
            self.chain = chain
            if sum(1 for link in chain if link.candidate_id is not None) > 1:
                self.query_one(CandidateDetail).show(ctx, chain=chain)

    async def _chain(self, ctx: CandidateContext) -> list[ChainLink]:
        """The candidate's chain (engine's `review.chain`), headed by the active fact it starts from."""
        cand = ctx.candidate
        links = await self.review_app.memory.review.chain(cand.id)
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

    async def _drop_current(self) -> None:
        if self.current_id is not None:
            cid, self.current_id, self.current = self.current_id, None, None
            await self.review_app.release(cid)

    def _remove_row(self, candidate_id: int, *, show_next: bool = True) -> None:
        """Drop a decided candidate from the list; the cursor stays at its place, now on the one
        that followed it, which is claimed and shown (`show_next`) before a key acts on it."""
        rows = self.pending_list
        if rows.remove_row(candidate_id) is None:
            return
        self.total = max(0, self.total - 1)
        self.watcher.own_decision()  # not "fewer from elsewhere": no reload for it
        self._update_header(settle=PROGRESS_SETTLE)
        self._update_title()
        if rows.row_count == 0:
            self.reload()  # says why the list is empty, or loads the next page
            return
        if show_next:  # otherwise the caller shows the next row, line included, in the same step
            self._show_line()
            if rows.cursor_id is not None:
                self._request(rows.cursor_id)
        if rows.cursor_row >= rows.row_count - PREFETCH:
            self._want_more(rows.row_count)

    async def _advance_past(self, candidate_id: int) -> None:
        """After a decision: claim and read the row that follows first, then take the decided row
        out and show the next one in one go, so a decision costs one frame, not three (list, then
        panes, then the line)."""
        rows = self.pending_list
        index = rows.index_of(candidate_id)
        if index is None:
            return
        following = rows.id_at(index + 1) if index + 1 < rows.row_count else rows.id_at(index - 1)
        if following is None or following in rows.gone or following in rows.holders:
            self._remove_row(candidate_id)
            return
        self._wanted = following
        async with self._select_lock:
            if self._wanted != following:  # the reviewer moved meanwhile: follow them instead
                self._remove_row(candidate_id)
                return
            opened = await self._open(following)
            with self.app.batch_update():
                self._remove_row(candidate_id, show_next=False)
                shown = rows.cursor_id == following and self._wanted == following
                if shown:
                    self._present(following, opened)
            if not shown:
                self._show_line()
                if not isinstance(opened, Refusal):
                    await self.review_app.release(following)
                if rows.cursor_id is not None:
                    self._request(rows.cursor_id)
                return
        await self._draw_chain(following)

    # -- changes: one at a time, through the session ---------------------------------------------

    def _in_flight(
        self, work: Awaitable[Outcome] | None, name: str, after: Callable[[Outcome], Awaitable[None]]
    ) -> None:
        """Run a change the session accepted (None: one is in flight, the key is refused with a
        bell), then `after` with what it did, in a worker whose failure reaches the error dialog."""
        if work is None:
            self.app.bell()
            return
        accepted = work

        async def run() -> None:
            await after(await accepted)

        self.run_worker(run(), group="queue-decide", name=name, exit_on_error=False)

    def _say(self, outcome: Outcome) -> None:
        if outcome.message:
            tell(self, outcome.message, title=outcome.title or "", severity=outcome.severity)

    # -- decisions ---------------------------------------------------------------------------------

    def _target(self) -> CandidateContext | None:
        """The candidate a decision key applies to: the one shown under the cursor, or None (with a
        bell) while the shown one and the cursor disagree, i.e. while the cursor is moving to
        another item (a decision saved, a reload, a lease refused) and that item is not yet shown:
        a key typed ahead is never applied to an item the reviewer has not seen."""
        if self.decisions.busy:
            self.app.bell()
            return None
        rows = self.pending_list
        cid = rows.cursor_id
        if cid is not None and cid in rows.gone:
            self.app.bell()
            tell(self, rows.gone[cid] + NOTHING_HERE, severity="warning")
            return None
        holder = rows.holder(cid) if cid is not None else None
        if cid is not None and holder is not None:
            self.app.bell()
            tell(self, f"Candidate {cid} is being reviewed by {holder}.{NOTHING_HERE}", severity="warning")
            self._request(cid)  # try the lease again: if it was given back, the row opens now
            return None
        if self.current is None or self.current.candidate.id != cid:
            self.app.bell()
            if cid is None:
                tell(self, "No candidate is selected.", severity="warning")
            return None
        return self.current

    def _decide(self, label: str, cid: int, op: Callable[[], Awaitable[Any]]) -> None:
        self._in_flight(self.decisions.decide(cid, op), f"{label} candidate {cid}", self._decided)

    async def _decided(self, outcome: Outcome) -> None:
        self._say(outcome)
        if outcome.decided_elsewhere:
            self.reload()  # its row stays under the cursor, marked (reload's `gone`)
            return
        for cid in outcome.done:
            if self.current_id == cid:
                self.current_id, self.current = None, None
            await self._advance_past(cid)

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
        self._decide(label, cid, lambda: review.approve(cid, who))

    def _replace(self, cid: int, choice: str, edit: EditResult | None = None) -> None:
        """Confirm the supersession or the correction, or keep both, with the edited statement and
        interval if any."""
        review, who = self.review_app.memory.review, self.review_app.reviewer
        changes: dict[str, Any] = {}
        if edit is not None:
            changes = {"statement": edit.statement, "valid_at": edit.valid_at, "invalid_at": edit.invalid_at}
        if choice == "supersede":
            self._decide(
                "Confirming the supersession of", cid, lambda: review.confirm_supersession(cid, who, **changes)
            )
        elif choice == "correct":
            self._decide("Confirming the correction of", cid, lambda: review.confirm_correction(cid, who, **changes))
        else:
            self._decide("Keeping both for", cid, lambda: review.keep_both(cid, who, **changes))

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
        index = self.pending_list.index_of(target)
        if index is None:
            tell(
                self,
                f"Candidate {target} of this chain is not in the list (filter or search); clear them to reach it.",
                severity="warning",
            )
            return
        self._go_to(index)

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
        if cand.supersedes_id is not None and cand.kind != "retraction":
            tell(
                self, f"Candidate {cand.id} would replace fact #{cand.supersedes_id}: keep both, confirm or reject it."
            )
            return
        if replaces(cand):
            target = (
                f"fact #{cand.supersedes_id}"
                if cand.supersedes_id is not None
                else f"candidate #{cand.supersedes_candidate_id}"
            )

            def unlink(yes: bool | None) -> None:
                if yes:
                    self._retarget(cand.id, lambda: review.retarget(cand.id, who, None), "replaces nothing now")

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
                self._retarget(
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

    def _retarget(self, cid: int, op: Callable[[], Awaitable[Any]], what: str) -> None:
        async def after(outcome: Outcome) -> None:
            self._say(outcome)
            if outcome.decided_elsewhere:
                self.reload()
            elif outcome.ok:
                self.current_id = None  # shown again, re-read (the lease is still ours)
                self.reload(select_id=cid)

        self._in_flight(
            self.decisions.change(cid, op, f"Candidate {cid} {what}."), f"Retargeting candidate {cid}", after
        )

    def action_reject(self) -> None:
        if self.pending_list.marked:
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
            self._decide("Rejecting", cand.id, lambda: review.reject(cand.id, who, result.reason, tombstone=tomb))

        self.app.push_screen(modal, rejected)

    # -- marks and bulk decisions ------------------------------------------------------------------

    def action_mark(self) -> None:
        """Mark or unmark the row under the cursor, then move down (space, like a file manager)."""
        rows = self.pending_list
        cid = rows.cursor_id
        if cid is None or cid in rows.gone:
            return
        rows.toggle_mark(cid)
        self._update_title()
        self._show_line()
        self.action_move(1)

    def action_defer(self) -> None:
        """Skip the item under the cursor for now: it goes to the end of the list (for this session)
        and its lease is released; the cursor stays at its place, now on the item that followed,
        which is claimed and shown before a decision key acts on it (`_target`)."""
        rows = self.pending_list
        cid = rows.cursor_id
        if self.decisions.busy or cid is None or cid not in rows.candidates or cid in rows.gone:
            self.app.bell()
            return
        if rows.row_count < 2:
            tell(self, "Nothing else is in the list to review first.", severity="warning")
            return
        self.cursor.defer(cid)
        rows.to_end(cid)
        self._show_line()
        tell(self, f"Candidate {cid} deferred to the end of the list.")
        following = rows.cursor_id
        if following is not None:
            self._request(following)

    def _bulk_reject(self) -> None:
        if self.decisions.busy:
            self.app.bell()
            return
        rows = self.pending_list
        ids = rows.marked_in_order()
        users = sorted({rows.candidates[c].user_id for c in ids if c in rows.candidates})
        modal = ReasonModal(
            f"Reject the {len(ids)} marked candidates",
            presets=REJECT_REASONS,
            tombstone=True,
            note=f"Each is rejected on its own (one decision and one audit row each), with this reason; with a "
            f"tombstone, none of these values is queued again for its user ({', '.join(users)}). "
            "One u undoes them all.",
        )

        def rejected(result: ReasonResult | None) -> None:
            if result is None:
                return
            review, who = self.review_app.memory.review, self.review_app.reviewer

            async def each(chosen: Sequence[int]) -> tuple[list[int], list[str]]:
                done: list[int] = []
                skipped: list[str] = []
                for cid in chosen:
                    try:
                        await review.reject(cid, who, result.reason, tombstone=result.tombstone)
                    except AlreadyDecidedError as exc:
                        skipped.append(f"#{cid} already decided by {exc.decided_by or 'someone else'}")
                        continue
                    except ClaimedError as exc:
                        skipped.append(f"#{cid} being reviewed by {exc.claimed_by}")
                        continue
                    done.append(cid)
                return done, skipped

            self._in_flight(
                self.decisions.decide_many(ids, each, "Rejected"),
                f"Rejecting {len(ids)} marked candidates",
                self._finish_bulk(),
            )

        self.app.push_screen(modal, rejected)

    def _finish_bulk(self) -> Callable[[Outcome], Awaitable[None]]:
        """What follows a bulk decision, bulk reject and bulk approve alike: the cursor stays on its
        candidate, or, when that one was decided, on the first row after it left pending
        (`after_bulk`): no row left pending is skipped. The list order is taken at the key press,
        before any row leaves it."""
        rows = self.pending_list
        order = rows.row_ids

        async def finish(outcome: Outcome) -> None:
            done = set(outcome.done)
            if self.current_id in done:
                self.current_id, self.current = None, None
            self.pending_list.clear_marks()
            self._say(outcome)
            keep = after_bulk(order, self.pending_list.cursor_id, done)
            self.reload(select_id=keep)

        return finish

    def action_undo(self) -> None:
        async def after(outcome: Outcome) -> None:
            self._say(outcome)
            if outcome.done:
                await self._drop_current()
                self.reload(select_id=outcome.done[0])

        self._in_flight(self.decisions.undo(), "Undoing a decision", after)

    # -- navigation, search, filters, order, bulk approve ------------------------------------------

    def action_move(self, step: int) -> None:
        rows = self.pending_list
        if rows.row_count:
            self._go_to(rows.cursor_row + step)

    def action_search(self) -> None:
        box = self.query_one("#queue-search", Input)
        if not self.filter.search:  # where Esc returns: the row the reviewer was on before searching
            self.cursor.before_search = self.pending_list.cursor_id
        box.display = True
        box.focus()

    def action_leave_search(self) -> None:
        """Esc: leave the search box AND clear the search (Enter keeps it); the cursor goes back to
        the candidate it was on before the search."""
        box = self.query_one("#queue-search", Input)
        if box.value:
            box.value = ""  # Input.Changed then reloads the unfiltered list, back where it was
        elif self.filter.search:  # emptied by hand meanwhile: nothing is left to change
            self._search_changed(Input.Changed(box, ""))
        box.display = False
        self.pending_list.focus()

    @on(Input.Changed, "#queue-search")
    def _search_changed(self, event: Input.Changed) -> None:
        search = event.value.strip()
        if search != self.filter.search:
            self.filter = self.filter.with_search(search)
            if search:
                self.reload(first=True)
            else:  # the search cleared: back on the candidate the cursor was on before it
                back, self.cursor.before_search = self.cursor.before_search, None
                self.reload(select_id=back, first=back is None)

    @on(Input.Submitted, "#queue-search")
    def _search_done(self, event: Input.Submitted) -> None:
        box = self.query_one("#queue-search", Input)
        box.display = bool(box.value)
        self.pending_list.focus()

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
        if self.decisions.busy:
            self.app.bell()
            return
        self._bulk()

    @work(group="queue-bulk", name="Collecting the candidates to approve", exit_on_error=False)
    async def _bulk(self) -> None:
        """Ask about a fixed list of ids (the marked rows, or everything the filter matches now);
        a yes approves exactly those, however the queue changed while the question was open. The
        question lists every one of them (the dialog scrolls): a reviewer says yes only to what
        they could read."""
        review = self.review_app.memory.review
        rows = self.pending_list
        if rows.marked_count:
            chosen = [rows.candidates[c] for c in rows.marked_in_order() if c in rows.candidates]
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
        plan = bulk_plan(chosen)
        ids = plan.ids
        if not ids:
            tell(
                self,
                "Nothing to bulk approve: updates, contradictions and retraction requests need one-by-one review.",
                severity="warning",
            )
            return
        question = plan.question(scope)

        def answered(yes: bool | None) -> None:
            if not yes:
                return

            async def each(chosen: Sequence[int]) -> tuple[list[int], list[str]]:
                # The row under the cursor keeps its lease (the engine lets its holder decide it):
                # the cursor stays there unless it was among those approved (`_finish_bulk`).
                result = await review.bulk_approve(list(chosen), self.review_app.reviewer)
                done = [f.candidate_id for f in result.approved if f.candidate_id is not None]
                return done, [f"#{cid} {why}" for cid, why in result.skipped]

            self._in_flight(
                self.decisions.decide_many(ids, each, "Approved"),
                f"Bulk approving {len(ids)} candidates",
                self._finish_bulk(),
            )

        self.app.push_screen(ConfirmModal(question), answered)


def _shown_fields(cand: Candidate) -> tuple[object, ...]:
    """What the panes show of a candidate that a decision elsewhere may change."""
    return (
        cand.kind,
        cand.statement,
        cand.supersedes_id,
        cand.supersedes_candidate_id,
        cand.marks,
        cand.category,
    )

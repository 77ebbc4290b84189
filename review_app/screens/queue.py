"""The Queue screen: work through pending candidates, one decision per key.

Left, the pending list (oldest first, loaded a page at a time: a 50,000-row queue opens as fast as
a 50-row one); right, the selected candidate's prediction, source messages and surprise gap.

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
from typing import TYPE_CHECKING, Any, ClassVar, cast

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.events import Resize
from textual.widgets import DataTable, Footer, Input, Static

from engine.errors import (
    AlreadyDecidedError,
    ChainOrderError,
    ClaimedError,
    DecisionRequiredError,
    StaleSupersessionError,
    UndoRefusedError,
)
from engine.models import Candidate, CandidateContext

from ..messages import CandidateSelected, DecisionApplied, MoreRowsWanted
from ..modals import ConfirmModal, EditModal, EditResult, ReasonModal, ReasonResult
from ..widgets.candidate_detail import CandidateDetail
from ..widgets.literal import literal
from ..widgets.progress import ProgressHeader
from ..widgets.queue_filter import FilterModal, QueueFilter
from .base import WorkstationScreen
from .queue_team import TEAM_BINDINGS, QueueTeamActions

if TYPE_CHECKING:
    pass

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
SUPERSEDING = ("update", "contradiction")
ONE_BY_ONE = ("retraction", *SUPERSEDING)
"""Kinds a bulk approve leaves out: each needs its own decision (retract? supersede or keep both?)."""


def age_text(created_at: datetime, now: datetime) -> str:
    seconds = max(0, int((now - created_at).total_seconds()))
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86_400:
        return f"{seconds // 3600}h"
    return f"{seconds // 86_400}d"


class PendingTable(DataTable[Text]):
    """The pending list; posts CandidateSelected and MoreRowsWanted, never touches the database."""

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        key = event.row_key.value
        self.post_message(CandidateSelected(int(key) if key is not None else None))
        if event.cursor_row >= self.row_count - PREFETCH:
            self.post_message(MoreRowsWanted(self.row_count))


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
        Binding("space", "move(1)", "Skip", show=False, id="queue.skip"),
        Binding("u", "undo", "Undo", id="queue.undo"),
        Binding("slash", "search", "Search", id="queue.search"),
        Binding("f", "filters", "Filters", id="queue.filters"),
        Binding("b", "bulk", "Bulk approve", id="queue.bulk"),
        Binding("escape", "leave_search", "Back to the list", show=False, id="queue.leave_search"),
        *TEAM_BINDINGS,
    ]

    def __init__(self) -> None:
        super().__init__()
        self.filter = QueueFilter()
        self.total = 0
        self.decided = 0
        self.undo_stack: list[int] = []
        self.current_id: int | None = None
        self.current: CandidateContext | None = None
        self.candidates: dict[int, Candidate] = {}
        self._all_loaded = False
        self._loading_more = False
        self._deciding = False
        self._select_lock = asyncio.Lock()
        self._wanted: int | None = None

    # -- layout ------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static("", id="queue-header")
        yield ProgressHeader(id="queue-progress")
        with Horizontal(id="queue-body"):
            with Vertical(id="queue-left"):
                yield Input(placeholder="search statements and users", id="queue-search")
                table = PendingTable(id="pending", cursor_type="row", zebra_stripes=True)
                table.border_title = "Pending"
                yield table
            yield CandidateDetail(id="detail")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(PendingTable)
        table.add_column("user", key="user", width=8)
        table.add_column("kind", key="kind", width=13)
        table.add_column("conf", key="conf", width=4)
        table.add_column("age", key="age", width=4)
        table.add_column("statement", key="statement", width=26)
        self.query_one("#queue-search", Input).display = False
        table.focus()
        self._apply_width(self.app.size.width)
        self.reload()

    def on_resize(self, event: Resize) -> None:
        self._apply_width(event.size.width)

    def _apply_width(self, width: int) -> None:
        narrow = width < NARROW_WIDTH
        self.set_class(narrow, "narrow")
        detail = self.query_one(CandidateDetail)
        if detail.narrow != narrow:
            detail.narrow = narrow

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
        self.query_one(ProgressHeader).refresh_for(self.filter.kwargs())

    def _row(self, cand: Candidate, now: datetime) -> list[Text]:
        kind = cand.kind + (" ⚠" if cand.unsupported else "") + (" ⚑" if cand.flagged_by else "")
        return [
            literal(cand.user_id), Text(kind),
            Text("—" if cand.confidence is None else f"{cand.confidence:.2f}"), Text(age_text(cand.created_at, now)),
            literal(cand.statement.replace("\n", " ")),
        ]

    # -- loading the list --------------------------------------------------------------------------

    @work(exclusive=True, group="queue-list", name="Loading the queue")
    async def reload(self, select_id: int | None = None) -> None:
        """Reload the first page with the current filter and keep the cursor where it was."""
        memory = self.review_app.memory
        table = self.query_one(PendingTable)
        previous_row = table.cursor_row
        keep = select_id if select_id is not None else self.current_id
        kwargs = self.filter.kwargs()
        self.total = await memory.review.count(**kwargs)
        page = await memory.review.pending(limit=PAGE_SIZE, **kwargs)
        now = self.review_app.now()
        self.candidates = {c.id: c for c in page}
        self._all_loaded = len(page) < PAGE_SIZE
        with self.app.batch_update():
            table.clear()
            for cand in page:
                table.add_row(*self._row(cand, now), key=str(cand.id))
        self._update_header()
        if not page:
            await self._drop_current()
            self.query_one(CandidateDetail).show(
                None, "No candidate matches the filter." if self.filter.active else "The queue is empty. Well done."
            )
            return
        index = 0
        if keep is not None and keep in self.candidates:
            index = table.get_row_index(str(keep))
        elif previous_row > 0:
            index = min(previous_row, table.row_count - 1)
        table.move_cursor(row=index, animate=False)
        self._request(int(cast("str", table.coordinate_to_cell_key((index, 0)).row_key.value)))

    @on(MoreRowsWanted)
    def _more(self, event: MoreRowsWanted) -> None:
        if not self._all_loaded and not self._loading_more:
            self._loading_more = True
            self._load_more(event.loaded)

    @work(group="queue-page", name="Loading more of the queue")
    async def _load_more(self, loaded: int) -> None:
        try:
            page = await self.review_app.memory.review.pending(limit=PAGE_SIZE, offset=loaded, **self.filter.kwargs())
            now = self.review_app.now()
            table = self.query_one(PendingTable)
            self._all_loaded = len(page) < PAGE_SIZE
            for cand in page:
                if cand.id not in self.candidates:
                    self.candidates[cand.id] = cand
                    table.add_row(*self._row(cand, now), key=str(cand.id))
        finally:
            self._loading_more = False

    # -- selection and leases ----------------------------------------------------------------------

    @on(CandidateSelected)
    def _selected(self, event: CandidateSelected) -> None:
        if event.candidate_id is not None:
            self._request(event.candidate_id)

    def _request(self, candidate_id: int) -> None:
        self._wanted = candidate_id
        self.run_worker(self._show(candidate_id), group="queue-select", name=f"Opening candidate {candidate_id}")

    async def _show(self, candidate_id: int) -> None:
        """Release the previous lease, claim this candidate, then show it. Serialised by a lock so
        leases are taken and released in the order the cursor moved; a request overtaken by a newer
        one does nothing."""
        async with self._select_lock:
            if self._wanted != candidate_id or candidate_id == self.current_id:
                return
            app = self.review_app
            await self._drop_current()
            try:
                await app.claim(candidate_id)
            except ClaimedError as exc:
                self.notify(f"Candidate {candidate_id} is being reviewed by {exc.claimed_by}; moving on.",
                            severity="warning")
                self._skip_row(candidate_id)
                return
            except AlreadyDecidedError as exc:
                self.notify(f"Candidate {candidate_id} was already decided by {exc.decided_by or 'someone else'}.",
                            severity="warning")
                self._remove_row(candidate_id)
                return
            ctx = await app.memory.review.context(candidate_id)
            self.current_id, self.current = candidate_id, ctx
            self.query_one(CandidateDetail).show(ctx)
            self.show_flag(ctx.candidate)

    async def _drop_current(self) -> None:
        if self.current_id is not None:
            cid, self.current_id, self.current = self.current_id, None, None
            await self.review_app.release(cid)

    def _skip_row(self, candidate_id: int) -> None:
        table = self.query_one(PendingTable)
        try:
            index = table.get_row_index(str(candidate_id))
        except Exception:
            return
        if index + 1 < table.row_count:
            table.move_cursor(row=index + 1, animate=False)

    def _remove_row(self, candidate_id: int) -> None:
        """Drop a decided candidate from the list and put the cursor on the one that followed it."""
        table = self.query_one(PendingTable)
        self.candidates.pop(candidate_id, None)
        try:
            index = table.get_row_index(str(candidate_id))
        except Exception:
            return
        table.remove_row(str(candidate_id))
        self.total = max(0, self.total - 1)
        self._update_header()
        if table.row_count == 0:
            if self._all_loaded:
                self.query_one(CandidateDetail).show(None, "The queue is empty. Well done.")
            else:
                self.reload()
            return
        index = min(index, table.row_count - 1)
        table.move_cursor(row=index, animate=False)
        key = table.coordinate_to_cell_key((index, 0)).row_key.value
        if key is not None:
            self._request(int(key))
        if index >= table.row_count - PREFETCH:
            self.post_message(MoreRowsWanted(table.row_count))

    # -- decisions ---------------------------------------------------------------------------------

    def _target(self) -> CandidateContext | None:
        if self._deciding:
            self.app.bell()
            return None
        if self.current is None:
            self.notify("No candidate is selected.", severity="warning")
            return None
        return self.current

    def _decide(self, label: str, cid: int, op: Callable[[], Awaitable[Any]], decision: str) -> None:
        self._deciding = True
        self.run_worker(self._run_decision(cid, op, decision), group="queue-decide",
                        name=f"{label} candidate {cid}")

    async def _run_decision(self, cid: int, op: Callable[[], Awaitable[Any]], decision: str) -> None:
        try:
            try:
                await op()
            except AlreadyDecidedError as exc:
                self.notify(f"Candidate {cid} was already decided by {exc.decided_by or 'someone else'}.",
                            severity="warning")
                self.review_app.claimed.discard(cid)
                if self.current_id == cid:
                    self.current_id, self.current = None, None
                self.reload()
                return
            except ClaimedError as exc:
                self.notify(f"Candidate {cid} is being reviewed by {exc.claimed_by}.", severity="warning")
                return
            except (StaleSupersessionError, DecisionRequiredError, ChainOrderError) as exc:
                self.notify(f"{exc} Nothing was changed.", severity="warning")
                return
            self.review_app.claimed.discard(cid)  # a decision clears the lease
            if self.current_id == cid:
                self.current_id, self.current = None, None
            self.undo_stack.append(cid)
            self.decided += 1
            self.post_message(DecisionApplied(cid, decision))
            self._remove_row(cid)
        finally:
            self._deciding = False

    def action_approve(self) -> None:
        ctx = self._target()
        if ctx is None:
            return
        cand = ctx.candidate
        if cand.kind in SUPERSEDING and cand.supersedes_id is not None:
            # A plain approve would leave the old fact active beside its replacement ("User lives in
            # Lisbon" and "User lives in Porto"): the reviewer must say which of the two they mean.
            self.notify(f"Candidate {cand.id} would replace fact #{cand.supersedes_id}: press s to supersede it, "
                        "or k to keep both.", severity="warning")
            return
        cid, review, who = cand.id, self.review_app.memory.review, self.review_app.reviewer
        label = "Retracting the fact of" if cand.kind == "retraction" else "Approving"
        self._decide(label, cid, lambda: review.approve(cid, who), "approve")

    def action_keep_both(self) -> None:
        ctx = self._target()
        if ctx is None:
            return
        if ctx.candidate.kind not in SUPERSEDING or ctx.superseded is None:
            self.notify("Keep both applies to an update or a contradiction; press a to approve.",
                        severity="warning")
            return
        cid, review, who = ctx.candidate.id, self.review_app.memory.review, self.review_app.reviewer
        self._decide("Keeping both for", cid, lambda: review.keep_both(cid, who), "keep_both")

    def action_supersede(self) -> None:
        ctx = self._target()
        if ctx is None:
            return
        if ctx.candidate.kind not in SUPERSEDING or ctx.candidate.supersedes_id is None:
            self.notify(f"Candidate {ctx.candidate.id} is a {ctx.candidate.kind} candidate: there is no fact to "
                        "supersede. Press a to approve it.", severity="warning")
            return
        cid, review, who = ctx.candidate.id, self.review_app.memory.review, self.review_app.reviewer
        self._decide("Confirming the supersession of", cid, lambda: review.confirm_supersession(cid, who),
                     "confirm_supersession")

    def action_edit(self) -> None:
        ctx = self._target()
        if ctx is None:
            return
        cand = ctx.candidate
        if cand.kind == "retraction":
            self.notify("A retraction request has nothing to edit: a to retract, r to reject.", severity="warning")
            return

        def edited(result: EditResult | None) -> None:
            if result is None:
                return
            review, who = self.review_app.memory.review, self.review_app.reviewer
            self._decide("Editing and approving", cand.id, lambda: review.approve(
                cand.id, who, statement=result.statement, valid_at=result.valid_at, invalid_at=result.invalid_at,
            ), "edit_approve")

        self.app.push_screen(EditModal(cand.statement, cand.valid_at, cand.invalid_at), edited)

    def action_reject(self) -> None:
        ctx = self._target()
        if ctx is None:
            return
        cand = ctx.candidate
        if cand.kind == "retraction":
            modal = ReasonModal(f"Reject the request to retract fact #{cand.supersedes_id}",
                                presets=("The fact is still true", "Not the user's request"),
                                note="The fact stays active; no tombstone is written.")
        else:
            modal = ReasonModal(
                f"Reject candidate {cand.id}", presets=REJECT_REASONS, tombstone=True,
                note=f"A tombstone will be written: this value will not be queued again for user {cand.user_id}.",
            )

        def rejected(result: ReasonResult | None) -> None:
            if result is None:
                return
            review, who = self.review_app.memory.review, self.review_app.reviewer
            tomb = result.tombstone if cand.kind != "retraction" else False
            self._decide("Rejecting", cand.id,
                         lambda: review.reject(cand.id, who, result.reason, tombstone=tomb), "reject")

        self.app.push_screen(modal, rejected)

    def action_undo(self) -> None:
        if self._deciding:
            self.app.bell()
            return
        if not self.undo_stack:
            self.notify("Nothing to undo in this session.")
            return
        cid = self.undo_stack.pop()
        self._deciding = True
        self.run_worker(self._run_undo(cid), group="queue-decide", name=f"Undoing the decision on candidate {cid}")

    async def _run_undo(self, cid: int) -> None:
        try:
            try:
                await self.review_app.memory.review.undo(cid, self.review_app.reviewer)
            except UndoRefusedError as exc:
                self.undo_stack.append(cid)
                self.notify(str(exc), title="Undo refused", severity="error")
                return
            except BaseException:
                self.undo_stack.append(cid)
                raise
            self.decided = max(0, self.decided - 1)
            self.notify(f"Undid the decision on candidate {cid}.")
            await self._drop_current()
            self.reload(select_id=cid)
        finally:
            self._deciding = False

    # -- navigation, search, filters, bulk ---------------------------------------------------------

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
        box = self.query_one("#queue-search", Input)
        if not box.value:
            box.display = False
        self.query_one(PendingTable).focus()

    @on(Input.Changed, "#queue-search")
    def _search_changed(self, event: Input.Changed) -> None:
        self.filter = self.filter.with_search(event.value.strip())
        self.reload()

    @on(Input.Submitted, "#queue-search")
    def _search_done(self, event: Input.Submitted) -> None:
        self.action_leave_search()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # While the search box has focus, letters are typed into it, not decisions.
        return action == "leave_search" or not self.query_one("#queue-search", Input).has_focus

    def action_filters(self) -> None:
        self._open_filters()

    @work(group="queue-filters", name="Opening the filters")
    async def _open_filters(self) -> None:
        # The modal is pushed with a callback, not awaited: a worker never waits on the reviewer.
        users = await self.review_app.memory.users()

        def chosen(result: QueueFilter | None) -> None:
            if result is not None and result != self.filter:
                self.filter = result
                self.reload()

        self.app.push_screen(FilterModal(self.filter, users), chosen)

    def action_bulk(self) -> None:
        if self._deciding:
            self.app.bell()
            return
        self._bulk()

    @work(group="queue-bulk", name="Counting the filtered selection")
    async def _bulk(self) -> None:
        review = self.review_app.memory.review
        kwargs = self.filter.kwargs()
        count = await review.count(**kwargs)
        left_out = 0
        for kind in ONE_BY_ONE:
            if self.filter.kind in (None, kind):
                left_out += await review.count(**{**kwargs, "kind": kind})
        count -= left_out
        if count == 0:
            self.notify("Nothing to bulk approve with the current filter.", severity="warning")
            return
        skipped = (f" ({left_out} retraction requests and proposed supersessions are left for one-by-one review)"
                   if left_out else "")
        question = (f"Approve all {count} candidates matching the current filter ({self.filter.describe()}) "
                    f"as new facts?{skipped}")
        chosen = self.filter

        def answered(yes: bool | None) -> None:
            if yes and not self._deciding:
                self._deciding = True
                self.run_worker(self._run_bulk(chosen), group="queue-decide",
                                name=f"Bulk approving {count} candidates")

        self.app.push_screen(ConfirmModal(question), answered)

    async def _run_bulk(self, chosen: QueueFilter) -> None:
        """Approve what matches `chosen` NOW (ids re-read, ONE_BY_ONE kinds left out); each
        approval is its own transaction, and ids decided elsewhere meanwhile are skipped."""
        review = self.review_app.memory.review
        kwargs = chosen.kwargs()
        try:
            await self._drop_current()
            ids: list[int] = []
            offset = 0
            while True:
                page = await review.pending(limit=1000, offset=offset, **kwargs)
                ids += [c.id for c in page if c.kind not in ONE_BY_ONE]
                if len(page) < 1000:
                    break
                offset += len(page)
            result = await review.bulk_approve(ids, self.review_app.reviewer)
            for fact in result.approved:
                if fact.candidate_id is not None:
                    self.undo_stack.append(fact.candidate_id)
            self.decided += len(result.approved)
            missed = len(result.skipped)
            extra = f"; {missed} were skipped (decided, claimed or changed meanwhile)" if missed else ""
            self.notify(f"Approved {len(result.approved)} candidates{extra}.")
        finally:
            self._deciding = False
        self.reload()

"""The queue's team keys: ask for a second opinion, "my queue", and the blind second reviews.

A mixin of QueueScreen, kept apart so the queue module stays about deciding one candidate. The
engine decides who may do what (engine/team.py): a flagger is refused their own flagged item, a
user taken by someone else is refused to everyone else. The screen only asks and shows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static

from ..decision_session import Outcome
from ..modals import ConfirmModal
from ..widgets.in_order_input import FIELDS_IN_ORDER, InOrderInput, KeepsTypedAhead
from ..widgets.literal import literal, tell
from ..widgets.progress import ProgressHeader
from .second_review import SecondReviewScreen

if TYPE_CHECKING:
    from engine.models import Candidate

    from .queue import QueueScreen

TEAM_BINDINGS: list[BindingType] = [
    Binding("exclamation_mark", "flag", "2nd opinion", id="queue.flag", priority=True),
    Binding("m", "my_queue", "My queue", id="queue.mine", priority=True),
    Binding("M", "give_back", "Give back user", show=False, id="queue.give_back", priority=True),
    Binding(
        "v", "second_reviews", "2nd review", show=False, id="queue.second_reviews", priority=True
    ),  # the progress line says v
]

LEANS: tuple[tuple[str, str], ...] = (("no lean", ""), ("leaning approve", "approve"), ("leaning reject", "reject"))


@dataclass(frozen=True, slots=True)
class FlagResult:
    note: str
    lean: str | None


class FlagModal(KeepsTypedAhead, ModalScreen["FlagResult | None"]):
    """The note (optional) and the way the flagger leans (optional: it feeds agreement)."""

    CSS_PATH = "../modals.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="flag.cancel"),
        Binding("ctrl+s", "submit", "Flag", id="flag.submit"),
        *FIELDS_IN_ORDER,
    ]

    def __init__(self, cand: Candidate) -> None:
        super().__init__()
        self.cand = cand

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box", id="flag-box"):
            yield Static(literal(f"Ask for a second opinion on candidate {self.cand.id}"), classes="modal-title")
            yield Static(literal(self.cand.statement), id="flag-statement")
            yield Label("Note for the next reviewer (optional)")
            yield InOrderInput(placeholder="what made you unsure", id="flag-note")
            yield Select([(label, value) for label, value in LEANS], value="", allow_blank=False, id="flag-lean")
            yield Static("Another reviewer must decide it; you will not be able to.", classes="modal-note")
            with Horizontal(classes="modal-buttons"):
                yield Button("Flag", id="ok", variant="primary")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#flag-note", Input).focus()

    def action_submit(self) -> None:
        lean = self.query_one("#flag-lean", Select).value
        self.dismiss(
            FlagResult(
                self.query_one("#flag-note", Input).value.strip(), lean if isinstance(lean, str) and lean else None
            )
        )

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Input.Submitted, "#flag-note")
    def _enter(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_submit()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "ok":
            self.action_submit()
        else:
            self.action_cancel()


class QueueTeamActions:
    """Actions of QueueScreen (uses its `current`, `filter`, `reload` and `_target`)."""

    def _team_screen(self) -> QueueScreen:
        return self  # type: ignore[return-value]

    def action_flag(self) -> None:
        screen = self._team_screen()
        ctx = screen._target()
        if ctx is None:
            return
        cand = ctx.candidate

        def flagged(result: FlagResult | None) -> None:
            if result is not None:
                self._flag(cand.id, result)

        screen.app.push_screen(FlagModal(cand), flagged)

    def _flag(self, candidate_id: int, result: FlagResult) -> None:
        """Ask for a second opinion: a change in flight like a decision (the session's one slot),
        after which the flagger moves on to the next row; the flagged row stays, marked ⚑."""
        screen = self._team_screen()
        app = screen.review_app
        following = self._next_row_id(candidate_id)

        async def after(outcome: Outcome) -> None:
            screen._say(outcome)
            if outcome.decided_elsewhere:
                screen.reload()
            elif outcome.ok:
                app.leases.ended(candidate_id)  # the engine released the lease with the flag
                if screen.current_id == candidate_id:
                    screen.current_id, screen.current = None, None
                screen.reload(select_id=following)

        screen._in_flight(
            screen.decisions.change(
                candidate_id,
                lambda: app.memory.team.flag(candidate_id, app.reviewer, result.note or None, lean=result.lean),
                f"Candidate {candidate_id} is flagged: another reviewer will decide it.",
            ),
            "Asking for a second opinion",
            after,
        )

    def _next_row_id(self, candidate_id: int) -> int | None:
        """The id of the row after `candidate_id` (the flagger moves on; the row stays, marked ⚑)."""
        rows = self._team_screen().pending_list
        index = rows.index_of(candidate_id)
        return None if index is None else rows.id_at(index + 1)

    def action_my_queue(self) -> None:
        self._my_queue()

    @work(exit_on_error=False, group="queue-team", name="Opening my queue")
    async def _my_queue(self) -> None:
        screen = self._team_screen()
        app = screen.review_app
        if screen.filter.assigned_to is not None:
            self._set_mine(None)
            return
        mine = {a.user_id for a in await app.memory.team.assignments(app.reviewer)}
        cand = screen.current.candidate if screen.current is not None else None
        if cand is None or cand.user_id in mine:
            if mine:
                self._set_mine(app.reviewer)
            else:
                tell(screen, "Select a candidate of the user you want to take, then press m.", severity="warning")
            return
        if cand.assigned_to is not None and cand.assigned_to != app.reviewer:
            tell(screen, f"User {cand.user_id} is taken by {cand.assigned_to}.", severity="warning")
            return
        count = await app.memory.review.count(user_id=cand.user_id)
        user = cand.user_id

        def answered(yes: bool | None) -> None:
            if yes:
                self._take(user)

        screen.app.push_screen(
            ConfirmModal(
                f"Take all {count} pending items of user {user}, and those that arrive later? Other reviewers will "
                "be refused them until you give them back (M)."
            ),
            answered,
        )

    @work(exit_on_error=False, group="queue-team", name="Taking a user's items")
    async def _take(self, user_id: str) -> None:
        app = self._team_screen().review_app
        await app.memory.team.take_user(user_id, app.reviewer)
        self._set_mine(app.reviewer)

    def _set_mine(self, reviewer: str | None) -> None:
        screen = self._team_screen()
        screen.filter = replace(screen.filter, assigned_to=reviewer)
        tell(screen, "My queue: only the users you took (m: everyone's)." if reviewer else "Everyone's queue.")
        screen.reload()

    def action_give_back(self) -> None:
        screen = self._team_screen()
        if screen.current is None:
            tell(screen, "Select a candidate of the user to give back.", severity="warning")
            return
        self._give_back(screen.current.candidate.user_id)

    @work(exit_on_error=False, group="queue-team", name="Giving a user's items back")
    async def _give_back(self, user_id: str) -> None:
        screen = self._team_screen()
        app = screen.review_app
        await app.memory.team.release_user(user_id, app.reviewer)
        tell(screen, f"User {user_id}'s items are back in everyone's queue.")
        screen.reload()

    def action_second_reviews(self) -> None:
        screen = self._team_screen()

        def back(_: Any) -> None:
            screen.query_one(ProgressHeader).refresh_for(screen.filter)

        screen.app.push_screen(SecondReviewScreen(), back)

    def show_flag(self, cand: Candidate) -> None:
        """When a flagged candidate is shown, say who asked and why (the note is in the flag)."""
        if cand.flagged_by is not None:
            self._announce_flag(cand.id)

    @work(exit_on_error=False, group="queue-flag-note", name="Reading the second-opinion note")
    async def _announce_flag(self, candidate_id: int) -> None:
        screen = self._team_screen()
        flag = await screen.review_app.memory.team.flag_of(candidate_id)
        if flag is None or screen.current_id != candidate_id:
            return
        lean = f", leaning {flag.lean}" if flag.lean else ""
        note = f": “{flag.note}”" if flag.note else ""
        # Beside the item, for as long as it is shown (a toast was gone before the reviewer had
        # read the candidate the note is about).
        screen.flag_notes[candidate_id] = f"⚑ {flag.flagged_by} asked for a second opinion{lean}{note}"
        screen._show_line()

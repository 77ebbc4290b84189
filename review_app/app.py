"""The review workstation: a Textual app over one memdesk database.

The app owns what every screen shares: the open `Memory`, the reviewer's name, the clock, the
lease bookkeeping and the one place where a failed worker becomes an error dialog. Screens are
Textual modes so each keeps its state (cursor, filters) while another is shown.

The database is opened in a worker while a plain "opening" screen is shown, and the first mode is
entered only once it is open: every screen may therefore rely on `app.memory` being open.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from functools import partial
from typing import Any, ClassVar

from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.events import DescendantFocus
from textual.screen import Screen
from textual.widgets import Input, Static, TextArea
from textual.worker import Worker, WorkerState

from engine import Memory, MemoryConfig
from engine.errors import ConflictError, MemdeskError, UserInputError

from .leases import Leases
from .modals import ErrorModal
from .screens.discarded import DiscardedScreen
from .screens.help import HelpScreen
from .screens.knowledge import KnowledgeScreen
from .screens.queue import QueueScreen
from .screens.stats import StatsScreen
from .screens.tombstones import TombstonesScreen
from .widgets.literal import literal

BLINK_ENV = "MEMDESK_CURSOR_BLINK"


class OpeningScreen(Screen[None]):
    """Shown while the database opens (and if it cannot be opened, under the error dialog)."""

    def __init__(self, target: str) -> None:
        super().__init__()
        self.target = target
        """The store as messages name it (a URL's password masked)."""

    def compose(self) -> ComposeResult:
        yield Static(literal(f"Opening {self.target} …"), id="opening")


def what_was_kept(error: BaseException) -> str:
    """The sentence an error dialog ends with: what the failure did NOT change."""
    if isinstance(error, UserInputError | ConflictError):
        return "Nothing was changed: the engine rolled the transaction back."
    if isinstance(error, MemdeskError):
        return "Nothing was changed by this step (each change is one transaction); earlier decisions are saved."
    return "Decisions confirmed before this step are saved; this step may not have completed."


class ReviewApp(App[None]):
    """memdesk review workstation."""

    TITLE = "memdesk review"
    CSS_PATH = "app.tcss"
    MODES: ClassVar[dict[str, str | Callable[[], Screen[Any]]]] = {
        "queue": QueueScreen,
        "knowledge": KnowledgeScreen,
        "tombstones": TombstonesScreen,
        "stats": StatsScreen,
        "discarded": DiscardedScreen,
    }
    # Typed as Textual's App declares them (an instance attribute to mypy), hence no ClassVar here.
    HORIZONTAL_BREAKPOINTS: list[tuple[int, str]] | None = [(0, "-narrow"), (100, "-medium"), (130, "-wide")]  # noqa: RUF012
    VERTICAL_BREAKPOINTS: list[tuple[int, str]] | None = [(0, "-short"), (36, "-tall")]  # noqa: RUF012
    """Screen classes by terminal size (public Textual breakpoints): 80x24 is the smallest terminal
    the workstation serves fully, so dialogs and tables compact themselves below 36 rows."""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1", "mode('queue')", "Queue", id="app.mode.queue"),
        Binding("2", "mode('knowledge')", "Knowledge", id="app.mode.knowledge"),
        Binding("3", "mode('tombstones')", "Tombstones", id="app.mode.tombstones"),
        Binding("4", "mode('stats')", "Stats", id="app.mode.stats"),
        Binding("5", "mode('discarded')", "Discarded", id="app.mode.discarded"),
        Binding("question_mark", "help", "Help", id="app.help"),
        Binding("q", "quit", "Quit", id="app.quit"),
    ]

    def __init__(
        self,
        db_path: str,
        reviewer: str,
        *,
        clock: Callable[[], datetime] | None = None,
        keymap: Mapping[str, str] | None = None,
        config: MemoryConfig | None = None,
        cursor_blink: bool | None = None,
    ) -> None:
        super().__init__()
        self.db_path = str(db_path)
        self.reviewer = reviewer
        self.clock = clock
        self.config = config
        self.memory: Memory = Memory(self.db_path, clock=clock, config=config)
        self.sub_title = self.memory.target  # a file path, or a PostgreSQL URL with its password masked
        self.memory_ready = False
        self.blink_cursor = cursor_blink if cursor_blink is not None else os.environ.get(BLINK_ENV, "1") != "0"
        """Off in tests and screenshots (`MEMDESK_CURSOR_BLINK=0`, set by the test suite), so every
        frame of a snapshot is the same."""
        self.key_overrides: dict[str, str] = dict(keymap or {})
        """binding id -> keys, as given: the help screen applies it to every screen's bindings."""
        self.leases = Leases(lambda: self.memory.review, reviewer, lambda: self.memory_ready)
        """Candidates this app holds a lease on (their one owner); released on quit so nobody waits
        for the expiry."""
        if keymap:
            from .keymap import check_keymap

            check_keymap(keymap)  # an unknown id is an error at start, not a key silently not remapped
            self.set_keymap(dict(keymap))

    # -- shared services ---------------------------------------------------------------------------

    def now(self) -> datetime:
        return self.clock() if self.clock is not None else datetime.now(UTC)

    async def claim(self, candidate_id: int) -> None:
        """Lease a candidate to this reviewer (raises ClaimedError / AlreadyDecidedError)."""
        await self.leases.claim(candidate_id)

    async def release(self, candidate_id: int) -> None:
        await self.leases.release(candidate_id)

    async def release_all(self) -> None:
        await self.leases.release_all()

    # -- lifecycle ---------------------------------------------------------------------------------

    def get_default_screen(self) -> Screen[Any]:
        return OpeningScreen(self.memory.target)

    def on_mount(self) -> None:
        self._open_memory()

    @work(group="open", name="Opening the database", exit_on_error=False)
    async def _open_memory(self) -> None:
        await self.memory.open()
        self.memory_ready = True
        await self.switch_mode("queue")

    async def on_unmount(self) -> None:
        if self.memory_ready:
            try:
                await self.release_all()
            finally:
                self.memory_ready = False
                await self.memory.close()

    async def action_quit(self) -> None:
        if self.memory_ready:
            await self.release_all()
        self.exit()

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        # With cursor_blink off (tests, screenshots) no cursor blinks: a blink timer would make
        # snapshots differ run to run. A cursor only blinks while focused, so turning it off when
        # the widget gains focus (a public, bubbling event) covers every Input and TextArea.
        if not self.blink_cursor and isinstance(event.widget, Input | TextArea):
            event.widget.cursor_blink = False

    # -- actions -----------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Before the database is open no screen can show anything: keep the mode keys inert.
        return self.memory_ready or action not in ("mode", "help")

    async def action_mode(self, mode: str) -> None:
        if self.current_mode != mode:
            await self.switch_mode(mode)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    # -- command palette ---------------------------------------------------------------------------

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Every described binding of the app and of the active screen is also a palette entry."""
        yield from super().get_system_commands(screen)
        seen: set[str] = set()
        for key, active in screen.active_bindings.items():
            binding, node = active.binding, active.node
            if node is not self and node is not screen:
                continue
            if not binding.description or not active.enabled:
                continue
            ident = binding.id or binding.action
            if ident in seen:
                continue
            seen.add(ident)
            yield SystemCommand(
                binding.description,
                f"key {self.get_key_display(binding) or key}" + (f" · {binding.id}" if binding.id else ""),
                partial(self.run_action, binding.action, node),
            )

    # -- the central error handler -----------------------------------------------------------------

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The app's own workers (opening the database) report failures like the screens' do."""
        self.report_worker_failure(event.worker)

    def report_worker_failure(self, worker: Worker[Any]) -> None:
        """A failed worker opens an ErrorModal instead of closing the app.

        Every worker of the workstation runs with `exit_on_error=False`, and its screen forwards
        its `Worker.StateChanged` here (see WorkstationScreen); the worker's name says what was
        being done ("Approving candidate 12"). A worker that did not fail is left alone.
        """
        if worker.state != WorkerState.ERROR or worker.error is None:
            return
        cause = worker.error
        what = worker.name or worker.description or "A background task"
        detail = f"{type(cause).__name__}: {cause}\n\n{what_was_kept(cause)}"
        self.report_error(f"{what} failed", detail)

    def report_error(self, title: str, detail: str) -> None:
        self.push_screen(ErrorModal(title, detail))


def run_review(db_path: str, reviewer: str, keymap_path: str | None, config: MemoryConfig | None = None) -> None:
    """Entry point of `memdesk review`: load the keymap (errors before the screen switches), run.
    `config`: the deployment's settings (the SLA the header counts against)."""
    from .keymap import load_keymap

    keymap = load_keymap(keymap_path) if keymap_path else None
    ReviewApp(db_path, reviewer, keymap=keymap, config=config).run()

"""The Queue screen (being built: this first version shows the real queue size only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual import work
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer, Static

from ..widgets.literal import literal

if TYPE_CHECKING:
    from ..app import ReviewApp


class QueueScreen(Screen[None]):
    @property
    def review_app(self) -> ReviewApp:
        return cast("ReviewApp", self.app)

    def compose(self) -> ComposeResult:
        yield Static("", id="queue-header")
        yield Footer()

    def on_mount(self) -> None:
        self._load()

    @work(exclusive=True, name="Loading the queue")
    async def _load(self) -> None:
        app = self.review_app
        total = await app.memory.review.count()
        self.query_one("#queue-header", Static).update(literal(f"{total} pending · reviewer {app.reviewer}"))

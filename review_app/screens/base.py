"""The one thing every workstation screen shares: typed access to the app's open store and to the
reviewer's name, which the app owns (it opens the store once and closes it on exit), the route
by which a failed worker becomes an error dialog, and the tickets that drop stale reads: the worker
policy is review_app/workers.py."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual.screen import Screen
from textual.worker import Worker

from ..workers import Reads

if TYPE_CHECKING:
    from engine import Memory

    from ..app import ReviewApp


class WorkstationScreen(Screen[None]):
    _reads: Reads | None = None

    @property
    def reads(self) -> Reads:
        """This screen's read tickets (review_app/workers.py)."""
        if self._reads is None:
            self._reads = Reads()
        return self._reads

    @property
    def review_app(self) -> ReviewApp:
        return cast("ReviewApp", self.app)

    @property
    def memory(self) -> Memory:
        return self.review_app.memory

    @property
    def reviewer(self) -> str:
        return self.review_app.reviewer

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Workers run with `exit_on_error=False`; Textual tells the node that started one when it
        changes state (the message does not bubble), so each screen hands failures to the app."""
        self.review_app.report_worker_failure(event.worker)

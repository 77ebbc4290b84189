"""The one thing every workstation screen shares: typed access to the app's open store and to the
reviewer's name, which the app owns (it opens the store once and closes it on exit)."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual.screen import Screen

if TYPE_CHECKING:
    from engine import Memory

    from ..app import ReviewApp


class WorkstationScreen(Screen[None]):
    @property
    def review_app(self) -> ReviewApp:
        return cast("ReviewApp", self.app)

    @property
    def memory(self) -> Memory:
        return self.review_app.memory

    @property
    def reviewer(self) -> str:
        return self.review_app.reviewer

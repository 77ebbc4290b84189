"""The per-user list screen that Knowledge, Tombstones and Discarded share.

Each of the three had its own copy of the same parts: a user Select above a DataTable, DB work in
workers whose stale results are dropped (review_app/workers.py), the row id under the cursor, a status line,
`u` for the user and Escape back to the table. They live here once; each screen keeps what is its
own (its columns, its read, its actions). The ids follow the screen's NAME: `#{NAME}-user`,
`#{NAME}-table`, `#{NAME}-status`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual.widgets import DataTable, Select, Static

from ..widgets.literal import literal
from ..widgets.user_picker import ALL_USERS, UserPickerModal
from .base import WorkstationScreen


class UserListScreen(WorkstationScreen):
    """A list of one user's rows (or every user's, when ALLOW_ALL) with a type-to-search user picker."""

    NAME: ClassVar[str] = ""
    ALLOW_ALL: ClassVar[bool] = True
    """Whether "All users" is a choice (Tombstones, Discarded) or a user must be picked (Knowledge)."""

    def __init__(self) -> None:
        super().__init__()
        self.user_id: str | None = None
        self.users: list[str] = []

    def user_select(self) -> Select[str]:
        """The Select a subclass composes (with id `{NAME}-user`)."""
        options: list[tuple[Text, str]] = [(Text("All users"), ALL_USERS)] if self.ALLOW_ALL else []
        if self.ALLOW_ALL:
            return Select[str](options, value=ALL_USERS, allow_blank=False, id=f"{self.NAME}-user")
        return Select[str](options, prompt="User", allow_blank=True, id=f"{self.NAME}-user")

    @property
    def table(self) -> DataTable[Any]:
        return self.query_one(f"#{self.NAME}-table", DataTable)

    def reload(self) -> None:
        """Re-read the rows for the current user (each screen its own read)."""
        raise NotImplementedError

    def _work(self, work: Callable[[], Awaitable[None]], description: str, group: str) -> None:
        """Run DB work in a worker, under the workstation's worker policy (review_app/workers.py):
        a failure reaches the app's error dialog through the worker's `StateChanged` message, which
        names `description`; a read drops its result when its `self.reads` ticket went stale."""
        self.run_worker(
            work, name=description, description=description, group=f"{self.NAME}-{group}", exit_on_error=False
        )

    def _set_users(self, users: Sequence[str]) -> None:
        """Offer `users` in the Select, keeping the current one when it still exists."""
        self.users = list(users)
        select = self.query_one(f"#{self.NAME}-user", Select)
        all_option: list[tuple[Text, str]] = [(Text("All users"), ALL_USERS)] if self.ALLOW_ALL else []
        select.set_options([*all_option, *[(literal(u), u) for u in users]])
        if self.user_id not in users:
            self.user_id = None if self.ALLOW_ALL or not users else users[0]
        if self.user_id is not None:
            select.value = self.user_id  # Select.Changed then sees no change: no second read
        elif self.ALLOW_ALL:
            select.value = ALL_USERS

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id != f"{self.NAME}-user":
            return
        value = event.value if isinstance(event.value, str) and event.value != ALL_USERS else None
        if value is None and not self.ALLOW_ALL:
            return
        if value != self.user_id:
            self.user_id = value
            self.reload()

    def _current_id(self) -> int | None:
        """The id (row key) of the row under the cursor, None when there is none."""
        table = self.table
        if table.row_count == 0:
            return None
        try:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        except Exception:  # cursor outside the rows while the table is being rebuilt
            return None
        return int(key.value) if key.value is not None else None

    def _status(self, message: str) -> None:
        self.query_one(f"#{self.NAME}-status", Static).update(literal(message))

    def action_focus_table(self) -> None:
        self.table.focus()

    def action_pick_user(self) -> None:
        """`u`: a picker you type into (part of the id narrows the list)."""

        def picked(user: str | None) -> None:
            if user is not None:
                self.query_one(f"#{self.NAME}-user", Select).value = user  # Select.Changed reloads
            self.table.focus()

        self.app.push_screen(UserPickerModal(self.users, allow_all=self.ALLOW_ALL), picked)

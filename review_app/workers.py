"""The workstation's one worker policy, stated here once.

1. Every database call of a screen or widget runs in a worker started with `exit_on_error=False`;
   a failure reaches the app's error dialog through `Worker.StateChanged` (WorkstationScreen and
   ProgressHeader forward it to `ReviewApp.report_worker_failure`), never by exiting the app.
2. Reads are never cancelled, `exclusive=True` included: cancelling a coroutine inside a driver
   call is fragile (aiosqlite's thread, asyncpg's protocol), and a cancelled worker makes
   `workers.wait_for_complete()` raise. Instead each read takes a ticket from `Reads` when it is
   asked for and, after its last await and before it touches the screen, drops its result if a
   newer read of the same group was asked for meanwhile.
3. Changes are never cancelled either (that would roll them back) and run one at a time: the queue's
   `DecisionSession` holds the in-flight slot; the other screens start one change per key.
"""

from __future__ import annotations

from collections.abc import Callable


class Reads:
    """Tickets for reads, by group: `ask(group)` when a read is asked for; the ticket says whether
    that read is still the newest of its group."""

    def __init__(self) -> None:
        self._latest: dict[str, int] = {}

    def ask(self, group: str) -> Callable[[], bool]:
        """A new read of `group`: every earlier ticket of the group goes stale."""
        n = self._latest.get(group, 0) + 1
        self._latest[group] = n
        return lambda: self._latest[group] == n

    def since(self, group: str) -> Callable[[], bool]:
        """A ticket that goes stale when the next read of `group` is asked for (for work that is not
        itself that read but whose result that read would make moot)."""
        n = self._latest.get(group, 0)
        return lambda: self._latest.get(group, 0) == n

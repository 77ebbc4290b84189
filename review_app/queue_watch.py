"""When the open queue is read again: the store's announcements, settled and compared.

Candidates queued or decided by another process (extraction, an agent, another workstation) reach
an open list without a key press: the store announces them (PostgreSQL NOTIFY; SQLite's commit
watcher). An announcement may be spurious (SQLite reports every commit, this workstation's own
leases included, and a reload at every lease would re-claim and so announce again), so the watcher
looks at the queue's mark (pending count and newest id under the filter) once per LOOK_SETTLE
seconds of announcements and asks for a reload only when the mark changed. The screen's own
decisions update the mark as they remove their row (`own_decision`), so they cause no reload.

Textual-free: the screen hands it how to read the mark, how to run a look (a worker) and how to
wait (a timer), and it is tested with plain callables (tests/test_queue_controllers.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol

from engine.models import QueueMark

LOOK_SETTLE = 0.25
"""Announcements within this many seconds are looked into once (decisions elsewhere still leave the
list well within the second issue 19 asks)."""
BUSY_RETRY = 0.5
"""While one of the screen's own decisions is being saved the list is about to change: look again
this much later."""


class Scheduler(Protocol):
    def __call__(self, delay: float, callback: Callable[[], None]) -> object: ...


class QueueWatcher:
    """Turns the store's announcements into reloads of the open list, only when the queue changed."""

    def __init__(
        self,
        *,
        read_mark: Callable[[], Awaitable[QueueMark]],
        reload: Callable[[], None],
        busy: Callable[[], bool],
        fresh: Callable[[], Callable[[], bool]],
        spawn: Callable[[Coroutine[Any, Any, None]], object],
        later: Scheduler,
    ) -> None:
        self._read_mark = read_mark
        self._reload = reload
        self._busy = busy
        self._fresh = fresh
        """A ticket that turns False once the list is read again (a reload takes its own look)."""
        self._spawn = spawn
        self._later = later
        self.seen: QueueMark | None = None
        """The pending count and newest pending id (under the filter) at the last look."""
        self._pending_look = False
        self._unsubscribe: Callable[[], Awaitable[None]] | None = None

    async def start(self, subscribe: Callable[[Callable[[], None]], Awaitable[Callable[[], Awaitable[None]]]]) -> None:
        """Listen to the store. Every backend announces (`Store.subscribe` is abstract), so there is
        no polling fallback to fall back to."""
        self._unsubscribe = await subscribe(self.announced)

    async def stop(self) -> None:
        stop, self._unsubscribe = self._unsubscribe, None
        if stop is not None:
            await stop()

    def saw(self, mark: QueueMark) -> None:
        """A reload read the list at this mark."""
        self.seen = mark

    def own_decision(self) -> None:
        """One of the screen's own decisions removed a row: not "fewer from elsewhere"."""
        if self.seen is not None:
            self.seen = QueueMark(max(0, self.seen.count - 1), self.seen.newest_id)

    def announced(self) -> None:
        """The store says the queue may have changed: look once the announcements settle."""
        if not self._pending_look:
            self._pending_look = True
            self._later(LOOK_SETTLE, self._due)

    def _due(self) -> None:
        self._pending_look = False
        self._spawn(self.look())

    async def look(self) -> None:
        """Reload when the mark changed since the last look."""
        if self._busy():
            self._later(BUSY_RETRY, self.announced)
            return
        fresh = self._fresh()
        mark = await self._read_mark()
        if not fresh():  # a reload since has taken its own look
            return
        seen, self.seen = self.seen, mark
        if seen is not None and mark != seen and not self._busy():
            self._reload()

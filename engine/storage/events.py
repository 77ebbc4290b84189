"""Audit as typed events, dispatched after commit (as Datasette collects its events during a write
and dispatches them once it is done).

Every audit row a write transaction appends (`TxCore.audit`, `audit_many`) is also kept on the
transaction as an `Audited` event. `Store.transaction()` (engine/storage/base.py) hands them on in
ONE place, after the transaction has committed, and never for one that rolled back:

1. to the backend's `announce`: PostgreSQL NOTIFYs the candidates channel with each user whose
   candidates changed (open workstations on any host drop or show rows); SQLite calls this
   process's subscribers at once (another process's still learn of it from PRAGMA data_version);
2. to the handlers connected to `Store.events` (`CommitEvents`): `Memory` connects the review
   policies' second look after a person's decision (`PolicyService.look_after`), which runs in
   the background, off the reviewer's key press and outside the decision's transaction.

Before this, NOTIFY was sent from inside `PostgresTx.audit`, SQLite had nothing in-process, and
the policies' look was awaited inside each decision call (once per item of a bulk approval).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Audited:
    """One audit row a transaction wrote: who did what to which entity of which user."""

    action: str
    actor: str
    user_id: str
    entity: str
    entity_id: int | None


Handler = Callable[[Sequence[Audited]], Awaitable[None]]


class CommitEvents:
    """The handlers a store calls with the events of each committed write transaction.

    `held()` gathers the events of several transactions and hands them on once, when the outermost
    hold ends: a bulk approval is one transaction per item, and one policy pass after all of them
    does what one after each would (the backend's `announce` is not held: lists still update per
    item). A failing handler is logged and the others still run: the transaction has committed,
    and what a handler does after it never undoes it."""

    def __init__(self) -> None:
        self._handlers: list[Handler] = []
        self._holds = 0
        self._waiting: list[Audited] = []

    def connect(self, handler: Handler) -> Callable[[], None]:
        """Call `handler(events)` after each commit that wrote any; returns the disconnect."""
        self._handlers.append(handler)

        def disconnect() -> None:
            if handler in self._handlers:
                self._handlers.remove(handler)

        return disconnect

    @asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        self._holds += 1
        try:
            yield
        finally:
            self._holds -= 1
            if not self._holds and self._waiting:
                events, self._waiting = self._waiting, []
                await self._call(events)

    async def dispatch(self, events: Sequence[Audited]) -> None:
        if not events:
            return
        if self._holds:
            self._waiting.extend(events)
            return
        await self._call(events)

    async def _call(self, events: Sequence[Audited]) -> None:
        for handler in list(self._handlers):
            try:
                await handler(events)
            except Exception:
                log.exception("a handler of committed audit events failed")


def candidate_users(events: Sequence[Audited]) -> list[str]:
    """The users whose candidates the events changed, once each (what the channel announces)."""
    return sorted({e.user_id for e in events if e.entity == "candidate"})

"""`Store`: what the engine needs of a database, whichever it is.

A store hands out transactions (`SqlTx`, the engine's operations) and consistent reads; it also
copies itself out and in (`memdesk migrate`), compacts after an erasure, and tells open
workstations about new candidates. `engine/storage/sqlite` and `engine/storage/postgres`
implement it; nothing outside `engine/storage` imports a database driver.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from ..errors import UserInputError
from ..models import AgentLogin
from .events import CommitEvents, candidate_users
from .sql.tx import SqlTx
from .sql.vector_swap import VectorSwap

# Every logical table, parents before children (the order `memdesk migrate` copies them in).
TABLES: tuple[str, ...] = (
    "meta",
    "messages",
    "episodes",
    "extraction_runs",
    "candidates",
    "knowledge",
    "tombstones",
    "audit_log",
    "discarded",
    "flags",
    "second_reviews",
    "assignments",
)

Verify = Callable[[SqlTx], Awaitable[None]]
"""A check `open_store` runs on an existing store before migrating it (the embedder check)."""

# The audit log's entity names and the tables whose ids they are. A store that loads rows with
# their ids (`memdesk migrate`) moves each table's id counter past every id its audit rows name as
# well as past its rows: an erased or undone row's id still has an audit history, and ids are
# never reused.
AUDITED_TABLES: dict[str, str] = {
    "message": "messages",
    "episode": "episodes",
    "extraction_run": "extraction_runs",
    "candidate": "candidates",
    "knowledge": "knowledge",
    "tombstone": "tombstones",
    "discarded": "discarded",
    "assignment": "assignments",
}

log = logging.getLogger(__name__)

NEW_CANDIDATES = "memdesk_candidates"
"""The channel a store announces new pending candidates on (the payload is the user id)."""


class Store(ABC):
    backend: str
    """"sqlite" or "postgres"."""
    target: str
    """Where the store is, for messages: a path, or a URL with its password masked."""

    _events: CommitEvents | None = None

    @property
    def events(self) -> CommitEvents:
        """The handlers called with the audit events of each committed write transaction."""
        if self._events is None:
            self._events = CommitEvents()
        return self._events

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[SqlTx]:
        """One write transaction: committed when the block ends, rolled back on any exception.
        The one place both backends hand on the audit events it wrote (engine/storage/events.py):
        as its last statements, `tx.announce` (PostgreSQL queues a NOTIFY per user whose
        candidates changed, which the server delivers at COMMIT and never for a rollback); once
        it has committed, and only then, this store's `announce_here` (SQLite tells this
        process's subscribers) and `events`' handlers."""
        async with self._write() as tx:
            yield tx
            users = candidate_users(tx.events)
            if users:
                await tx.announce(users)
        events, tx.events = tx.events, []
        if events:
            if users:
                try:
                    self.announce_here(users)
                except Exception:  # committed: a subscriber's failure changes nothing stored
                    log.exception("a subscriber to the candidates of %s failed", ", ".join(users))
            await self.events.dispatch(events)

    @abstractmethod
    def _write(self) -> AbstractAsyncContextManager[SqlTx]:
        """The backend's write transaction: committed when the block ends, rolled back on any
        exception (`transaction` wraps it)."""

    @abstractmethod
    def announce_here(self, user_ids: Sequence[str]) -> None:
        """After a commit that changed these users' candidates: tell this process's subscribers,
        where the backend's own announcement does not reach them (SQLite; PostgreSQL's NOTIFY
        reaches every listener, this process's included)."""

    @abstractmethod
    def reading(self) -> AbstractAsyncContextManager[SqlTx]:
        """A consistent read-only snapshot that never waits for a writer."""

    @abstractmethod
    async def close(self) -> None: ...

    @abstractmethod
    async def schema_version(self) -> int: ...

    # -- moving a whole store (`memdesk migrate`) ----------------------------------------------------

    @abstractmethod
    def dump(self, table: str, *, batch: int = 1000) -> AsyncIterator[list[dict[str, Any]]]:
        """The table's rows in id order, as column -> value dicts (times in microseconds);
        knowledge rows carry "embedding" (list[float])."""

    @abstractmethod
    async def load(self, table: str, rows: list[dict[str, Any]]) -> None:
        """Insert rows exactly as dumped (ids kept); the store's id counters move past them."""

    @abstractmethod
    async def counts(self) -> dict[str, int]:
        """Rows per logical table."""

    async def is_empty(self) -> bool:
        """No row in any logical table but `meta` (which every opened store holds)."""
        return not any(n for table, n in (await self.counts()).items() if table != "meta")

    # -- after a bulk load ---------------------------------------------------------------------------

    async def settle(self) -> bool:
        """After a bulk load (`memdesk migrate`, a scripted import): bring what the database keeps
        about its rows up to date before they are read, as PostgreSQL's own documentation asks after
        populating a database. False when part of it could not be done (which the caller may
        report; nothing is wrong with the data). SQLite needs nothing: its plans here do not rest
        on statistics, and a reader sees committed pages as they are."""
        return True

    # -- moving to another embedder ------------------------------------------------------------------

    @abstractmethod
    def vector_swap(self) -> VectorSwap:
        """This backend's part of `memdesk reembed` (engine/storage/sql/reembed.py runs the rest)."""

    # -- after an erasure ---------------------------------------------------------------------------

    @abstractmethod
    async def compact(self) -> bool:
        """Rewrite what an erasure freed so no deleted text lingers in the files; False when it
        could not (another connection in the way), which the caller reports."""

    # -- new work for open workstations ---------------------------------------------------------------

    # -- who an agent's login may propose as (engine/agents.py) -----------------------------------------

    NO_LOGINS = (
        "a SQLite store has no database logins: whoever opens the file is its owner, so there is no"
        " map of logins to agents to keep (use PostgreSQL's roles to hold agents to their names)"
    )

    async def agent_refusal(self, agent: str) -> str | None:
        """Why this store's connection may not queue a proposal under `agent` (None: it may).
        SQLite: None, always. Whoever can open the file can write any row of it, so a check here
        would only pretend; PostgreSQL answers from the login (`PostgresStore`)."""
        del agent
        return None

    async def agent_logins(self) -> list[AgentLogin]:
        """The owner's map of logins to the agent names each may propose under (PostgreSQL)."""
        raise UserInputError(self.NO_LOGINS)

    async def set_agent_login(self, login: str, agent: str, *, allow: bool, actor: str, at: int) -> bool:
        """Allow (or revoke) `login` proposing as `agent`, audited; False when it already was so."""
        del login, agent, allow, actor, at
        raise UserInputError(self.NO_LOGINS)

    @abstractmethod
    async def subscribe(self, channel: str, callback: Callable[[str], None]) -> Callable[[], Awaitable[None]]:
        """Call `callback(payload)` when something is announced on `channel`; returns the
        coroutine function that stops listening."""

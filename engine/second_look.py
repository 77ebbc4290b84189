"""The review policies' second look after a person's decision, in the background.

A person's decision may make more of a user's candidates a policy's to decide (an update whose
target they approved, a chain a rejection cut back to `new`: `PolicyService.after_decision`). The
look used to be awaited inside each decision call: the reviewer's key press waited for it, the
workstation's busy slot was held meanwhile, and a bulk approval ran it once per item. Now the
decision's transaction records its audit rows as events (engine/storage/events.py); once it has
committed, `on_commit` notes the users a person decided for and one background task looks at each,
one after the other. A bulk approval holds the events (`CommitEvents.held`), so its look runs once.
A failing look is logged and changes nothing of the decision: the candidates stay for people."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence

from .actions import DECISIONS, AuditAction
from .gate import POLICY_ACTOR_PREFIX
from .storage.events import Audited

log = logging.getLogger(__name__)

PERSON_DECISIONS: frozenset[str] = frozenset(DECISIONS | {AuditAction.UNDO})
"""The audit actions of a decision (or its undo) on a candidate after which the policies look
again; a policy's own decisions (actor `policy:NAME`) are not among them: its pass looks again
itself."""


def decided_by_a_person(events: Sequence[Audited]) -> list[str]:
    """The users, in order, for whom a person decided (or undid) a candidate in these events."""
    users: dict[str, None] = {}
    for e in events:
        if e.entity == "candidate" and e.action in PERSON_DECISIONS and not e.actor.startswith(POLICY_ACTOR_PREFIX):
            users[e.user_id] = None
    return list(users)


class SecondLook:
    """Runs `look(user_id)` in the background for each user a committed decision names; a user
    already waiting is not added twice."""

    def __init__(self, look: Callable[[str], Awaitable[object]]) -> None:
        self._look = look
        self._waiting: list[str] = []
        self._task: asyncio.Task[None] | None = None

    async def on_commit(self, events: Sequence[Audited]) -> None:
        """A `CommitEvents` handler: note the users and start the task when none runs. Returns at
        once: the look itself never runs inside the caller's decision."""
        for user in decided_by_a_person(events):
            if user not in self._waiting:
                self._waiting.append(user)
        if self._waiting and (self._task is None or self._task.done()):
            self._task = asyncio.get_running_loop().create_task(self._run(), name="memdesk policies' second look")

    async def _run(self) -> None:
        while self._waiting:
            user = self._waiting.pop(0)
            try:
                await self._look(user)
            except Exception:
                log.exception("the review policies' look at %r after a decision failed", user)

    async def settled(self) -> None:
        """Wait until every look asked for so far has run (its decisions committed)."""
        while self._task is not None and not self._task.done():
            await asyncio.wait([self._task])

    async def cancel(self) -> None:
        """Stop without looking at the users still waiting (`Memory.close(wait=False)`)."""
        self._waiting.clear()
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

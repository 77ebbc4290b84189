"""The policies' look after a reviewer's decision, off the key press.

When review policies are enabled, the engine hands each decision of a person to them once it has
committed (`ReviewService.after_decision` -> `PolicyService.after_decision`): an update whose target
the reviewer just approved may now be a policy's to decide. The engine awaits that look inside the
decision call, so in the workstation the key press waited for a whole policy pass (all of the user's
pending candidates judged) while holding the session's one in-flight slot, and bulk approve ran the
pass once per item.

The workstation instead takes the look off the key press: it replaces the review service's hook
with `LaterLooks`, which notes the user and returns at once; the decision's call ends when the
decision has committed, the slot is free for the next key, and the looks run one after another in
the background, once per user however many decisions for that user arrived meanwhile (a bulk
approve of 300 rows of one user is one look). What the policies decide then reaches the open list
as any decision made elsewhere does (the store's announcements). A look that fails is logged and
reported; the candidates stay for people, as the engine's own hook does.

Textual-free; tested in tests/test_queue_controllers.py and through the app in
tests/test_team_floor.py.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

_log = logging.getLogger("memdesk.workstation")

Look = Callable[[str], Awaitable[object]]


class LaterLooks:
    """A stand-in for `ReviewService.after_decision` that defers the look (see the module doc)."""

    def __init__(
        self,
        look: Look,
        spawn: Callable[[Coroutine[Any, Any, None]], object],
        failed: Callable[[str, BaseException], None] | None = None,
    ) -> None:
        self._look = look
        self._spawn = spawn
        self._failed = failed
        self._waiting: dict[str, None] = {}
        """Users whose look is due, in the order their first decision came (a dict keeps order)."""
        self._running = False
        self.looked: list[str] = []
        """Users looked at so far, in order (what the tests read)."""

    @property
    def idle(self) -> bool:
        return not self._running and not self._waiting

    def __call__(self, user_id: str) -> Awaitable[None]:
        """Note the user; the returned awaitable is already done, so the decision returns now."""
        self._waiting[user_id] = None
        if not self._running:
            self._running = True
            self._spawn(self._drain())
        return _done()

    async def _drain(self) -> None:
        try:
            while self._waiting:
                user_id = next(iter(self._waiting))
                del self._waiting[user_id]
                try:
                    await self._look(user_id)
                except Exception as exc:  # the decision stands; the candidates stay for people
                    _log.exception("the review policies' look at %r after a decision failed", user_id)
                    if self._failed is not None:
                        self._failed(user_id, exc)
                self.looked.append(user_id)
        finally:
            self._running = False


async def _done() -> None:
    return None


def defer_policy_looks(
    review: object,
    spawn: Callable[[Coroutine[Any, Any, None]], object],
    failed: Callable[[str, BaseException], None] | None = None,
) -> LaterLooks | None:
    """Replace `review.after_decision` with a LaterLooks around it; None when there is no hook
    (the engine then runs no look after a person's decision, and there is nothing to defer)."""
    look = getattr(review, "after_decision", None)
    if look is None or isinstance(look, LaterLooks):
        return look
    later = LaterLooks(look, spawn, failed)
    review.after_decision = later  # type: ignore[attr-defined]
    return later

"""The leases one workstation holds: the one owner of "which candidates have I claimed".

Before, the set of claimed rows had three owners: the app added and released, the decision session
discarded after a decision, the team keys discarded after a flag, each by writing `app.claimed`
directly. Here the set is kept once, with no Textual import, and every change to it is a named
method: a lease is taken (`claim`), given back (`release`), or ended by the engine itself
(`ended`: a decision, a flag, a candidate found decided elsewhere end the lease in the same
transaction, so nothing is sent back). At exit `release_all` gives back what is left, so another
reviewer does not wait for the expiry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol


class Claimer(Protocol):
    """The two engine calls a lease needs (`engine.review.ReviewService`)."""

    async def claim(self, candidate_id: int, reviewer: str, ttl_seconds: float | None = None) -> object: ...

    async def release(self, candidate_id: int, reviewer: str) -> None: ...


class Leases:
    """The candidates this workstation holds a lease on."""

    def __init__(self, review: Callable[[], Claimer], reviewer: str, ready: Callable[[], bool]) -> None:
        self._review = review
        """The engine's review service, read at each call (the store opens after the app starts)."""
        self._reviewer = reviewer
        self._ready = ready
        """Whether the store is open: a release after it closed has nothing to write to."""
        self._held: set[int] = set()

    def __contains__(self, candidate_id: object) -> bool:
        return candidate_id in self._held

    def __iter__(self) -> Iterator[int]:
        return iter(sorted(self._held))

    def __len__(self) -> int:
        return len(self._held)

    async def claim(self, candidate_id: int) -> None:
        """Lease a candidate to this reviewer (the engine raises ClaimedError / AlreadyDecidedError,
        and then nothing is held)."""
        await self._review().claim(candidate_id, self._reviewer)
        self._held.add(candidate_id)

    async def release(self, candidate_id: int) -> None:
        self._held.discard(candidate_id)
        if self._ready():
            await self._review().release(candidate_id, self._reviewer)

    def ended(self, candidate_id: int) -> None:
        """The engine ended this lease itself (a decision, a flag, a decision elsewhere)."""
        self._held.discard(candidate_id)

    discard = ended
    """The name `DecisionSession` calls (it accepts any set-like book of leases)."""

    async def release_all(self) -> None:
        for cid in sorted(self._held):
            await self.release(cid)

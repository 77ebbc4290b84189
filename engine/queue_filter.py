"""`QueueFilter`: which pending candidates a reviewer is looking at, the one spelling of it.

The workstation builds one (its filter dialog, its search box, "my queue"), and passes it as it is
to `ReviewService.pending` / `count` / `mark` and `TeamService.progress`, which hand it to one SQL
where-builder (`engine.storage.sql.queue.queue_where`). So the list, the header count, the
progress line and bulk approval always agree on what "the filtered selection" is: there is no
second translation of it to drift.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final, get_args

from .categories import ANY_SPECIAL, CATEGORIES
from .errors import UserInputError
from .models import CandidateKind

CANDIDATE_KINDS: Final[tuple[CandidateKind, ...]] = get_args(CandidateKind)
"""Every kind a candidate may have, in the order the filter dialog offers them."""


@dataclass(frozen=True, slots=True)
class QueueFilter:
    """A filter on the pending queue; every field left at its default matches everything.

    `unsupported`: True for candidates whose evidence does not support them, False for those
    whose evidence does. `search`: a substring of the statement or the user id ("" for none).
    `assigned_to`: "my queue", the users this reviewer took (engine/team.py). `category`: one
    special category, or "any" (ANY_SPECIAL) for every candidate that has one."""

    user_id: str | None = None
    kind: CandidateKind | None = None
    min_confidence: float | None = None
    max_confidence: float | None = None
    unsupported: bool | None = None
    search: str = ""
    assigned_to: str | None = None
    category: str | None = None

    def __post_init__(self) -> None:
        """A filter that could only ever match nothing because of a typo is refused, not run."""
        if self.kind is not None and self.kind not in CANDIDATE_KINDS:
            raise UserInputError(f"unknown kind {self.kind!r}: use one of {', '.join(CANDIDATE_KINDS)}")
        if self.category is not None and self.category not in (ANY_SPECIAL, *CATEGORIES):
            raise UserInputError(f"unknown category {self.category!r}: use {ANY_SPECIAL!r} or one of the categories")
        for bound in (self.min_confidence, self.max_confidence):
            if bound is not None and not 0.0 <= bound <= 1.0:
                raise UserInputError("a confidence bound must be between 0 and 1")
        if (
            self.min_confidence is not None
            and self.max_confidence is not None
            and self.min_confidence > self.max_confidence
        ):
            raise UserInputError("the lowest confidence must not be above the highest")

    @property
    def active(self) -> bool:
        """Whether anything is filtered out."""
        return self != QueueFilter()

    def describe(self) -> str:
        """The filter in words, for the queue's header ("user ana, kind update")."""
        parts = []
        if self.assigned_to:
            parts.append("my queue")
        if self.user_id:
            parts.append(f"user {self.user_id}")
        if self.kind:
            parts.append(f"kind {self.kind}")
        if self.min_confidence is not None or self.max_confidence is not None:
            low = f"{self.min_confidence:.2f}" if self.min_confidence is not None else "0"
            high = f"{self.max_confidence:.2f}" if self.max_confidence is not None else "1"
            parts.append(f"confidence {low}–{high}")
        if self.unsupported is not None:
            parts.append("unsupported only" if self.unsupported else "supported only")
        if self.category:
            parts.append("any special category" if self.category == ANY_SPECIAL else f"category {self.category}")
        if self.search:
            parts.append(f"search “{self.search}”")
        return ", ".join(parts) if parts else "no filter"

    def with_search(self, text: str) -> QueueFilter:
        return replace(self, search=text)

    def for_user(self, user_id: str | None) -> QueueFilter:
        """This filter narrowed to one user (the `user_id` shorthand of `ReviewService.pending`);
        a filter already on another user would then match nothing, so that is refused."""
        if user_id is None or user_id == self.user_id:
            return self
        if self.user_id is not None:
            raise UserInputError(f"the filter is on user {self.user_id!r}, not {user_id!r}")
        return replace(self, user_id=user_id)


ALL_PENDING: Final = QueueFilter()
"""The filter that matches every pending candidate (the default of the queue's reads)."""

__all__ = ["ALL_PENDING", "CANDIDATE_KINDS", "QueueFilter"]

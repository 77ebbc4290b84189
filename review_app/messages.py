"""Messages the queue widgets post to their screen.

Widgets never touch the database: they say what the reviewer asked for, and the screen (which owns
the workers and the lease) decides what to do. Dataclass messages keep the payload typed.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message


@dataclass
class CandidateSelected(Message):
    """The cursor in the pending list rests on a candidate (None: the list is empty)."""

    candidate_id: int | None


@dataclass
class MoreRowsWanted(Message):
    """The cursor reached the end of the loaded rows: load the next page."""

    loaded: int

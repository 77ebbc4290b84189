"""When a statement was made: the one rule, used by extraction (a change with no start of its own
starts when it is stated) and by review (a confirmed supersession with no start closes the old fact
there), and by `Memory.supersede` for a fact that came from a conversation.

The rule: the user message holding the evidence quote exactly; else the user message the quote
matches best (rapidfuzz partial ratio) at or above the threshold; else the episode's last user
message. Best-scoring rather than first-over-threshold: when a user repeats a claim in other words,
the first message that merely resembles the quote is not where it was said.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from rapidfuzz import fuzz

from .models import Candidate, Message
from .storage.sql.capture import CaptureOps


def stated_at(evidence: str, messages: Sequence[Message], threshold: float) -> tuple[datetime | None, bool]:
    """(when the statement was made, whether the evidence quote is in the user's messages); None
    when there are no messages at all."""
    user_msgs = [m for m in messages if m.role == "user"]
    fallback = (user_msgs or list(messages))[-1].at if (user_msgs or messages) else None
    quote = (evidence or "").strip().casefold()
    if not quote:
        return fallback, False
    best: tuple[float, Message] | None = None
    for m in user_msgs:
        text = m.content.casefold()
        if quote in text:
            return m.at, True
        score = fuzz.partial_ratio(quote, text)
        if score >= threshold and (best is None or score > best[0]):
            best = (score, m)
    return (best[1].at, True) if best is not None else (fallback, False)


async def candidate_stated_at(tx: CaptureOps, cand: Candidate, threshold: float) -> datetime:
    """`stated_at` for a candidate: over its episode's messages, else when it was queued (an
    agent's proposal or a curator's candidate came from no conversation)."""
    if cand.episode_id is not None:
        episode = await tx.episode_with_messages(cand.episode_id)
        if episode is not None:
            said, _ = stated_at(cand.evidence, episode.messages, threshold)
            if said is not None:
                return said
    return cand.created_at

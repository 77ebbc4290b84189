"""Segmenting a user's unprocessed messages into episodes.

An episode ends at a time gap (default 30 minutes) or at a maximum size. Its title and narrative
are built deterministically from the messages and serve ONLY as the query that retrieves the
user's existing knowledge; no extractor reads them as a source (a summarisation slip can then cost
recall, never become a stored fact).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta

_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(slots=True)
class RawMessage:
    id: int
    role: str
    content: str
    at: int  # microseconds


def segment(messages: list[RawMessage], gap: timedelta, max_messages: int) -> list[list[RawMessage]]:
    """Split time-ordered messages at gaps longer than `gap` and at `max_messages`, never between
    a user message and the assistant reply that follows it."""
    gap_us = int(gap.total_seconds() * 1_000_000)
    chunks: list[list[RawMessage]] = []
    current: list[RawMessage] = []
    for msg in messages:
        if current:
            too_far = msg.at - current[-1].at > gap_us
            too_big = len(current) >= max_messages and msg.role == "user"
            if too_far or too_big:
                chunks.append(current)
                current = []
        current.append(msg)
    if current:
        chunks.append(current)
    return chunks


def title_and_narrative(chunk: list[RawMessage]) -> tuple[str, str]:
    user_text = [m.content.strip() for m in chunk if m.role == "user" and m.content.strip()]
    first = user_text[0] if user_text else (chunk[0].content.strip() if chunk else "")
    words = _WORD.findall(first)
    title = " ".join(words[:10]) or "(empty conversation)"
    narrative = " ".join(user_text)
    if len(narrative) > 1000:
        narrative = narrative[:1000]
    return title, narrative

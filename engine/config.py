"""Tunable settings of one Memory, with the defaults the design argues for."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from .text import DEFAULT_DUPLICATE_THRESHOLD, DEFAULT_TOMBSTONE_THRESHOLD


@dataclass(slots=True)
class MemoryConfig:
    # Extraction
    predict: bool = True  # False: every episode takes the cold-start path (the extract-everything arm)
    existing_k: int = 10  # active facts retrieved with the episode text as "what we already know"
    confidence_threshold: float = 0.7
    episode_gap: timedelta = timedelta(minutes=30)
    episode_max_messages: int = 40
    batch_threshold: int | None = None  # background processing once a user has this many unprocessed messages
    # Matching (rapidfuzz ratio 0-100 on value keys)
    tombstone_threshold: float = DEFAULT_TOMBSTONE_THRESHOLD
    duplicate_threshold: float = DEFAULT_DUPLICATE_THRESHOLD
    evidence_threshold: float = 80.0  # partial_ratio of an evidence quote against the user's messages
    unsupported_penalty: float = 0.25  # subtracted from the confidence of an item with unsupported evidence
    # Review
    claim_ttl_seconds: float = 300.0

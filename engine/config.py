"""Tunable settings of one Memory, with the defaults the design argues for."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta


@dataclass(slots=True)
class MemoryConfig:
    # Extraction
    predict: bool = True  # False: every episode takes the cold-start path (the extract-everything arm)
    existing_k: int = 10  # active facts retrieved with the episode text as "what we already know"
    existing_pending_k: int = 50  # pending candidates shown beside them (the most related, when more)
    confidence_threshold: float = 0.7
    episode_gap: timedelta = timedelta(minutes=30)
    episode_max_messages: int = 40
    batch_threshold: int | None = None  # background processing once a user has this many unprocessed messages
    # Tombstones and dedup follow one exact rule, engine.text (no threshold to tune).
    evidence_threshold: float = 80.0  # partial_ratio of an evidence quote against the user's messages
    unsupported_penalty: float = 0.25  # subtracted from the confidence of an item with unsupported evidence
    # Retrieval: the weight of each arm in the reciprocal rank fusion (score = weight / (60 + rank),
    # summed over the arms). Tuned with benchmarks/paraphrase.py (benchmarks/README.md): with
    # WordLlama, 0.75 for the vector arm keeps every paraphrase hit of equal weights and finds more
    # facts by a number or name ("note 17": 67 -> 72 % first), which the BM25 arm matches exactly.
    vector_weight: float = 0.75
    text_weight: float = 1.0
    # The relevance floor (cosine similarity of a fact to the question): a fact the vector arm finds
    # less similar than this is no answer, and a fact the BM25 arm finds only through terms in half
    # or more of the user's facts neither, so a question about nothing stored returns nothing. 0.08
    # is the highest floor that keeps every paraphrase hit of benchmarks/paraphrase.py with WordLlama
    # (the least similar fact still found in the top five: 0.085), but with WordLlama it leaves 12
    # of 14 unrelated questions answered (their best fact scores 0.07-0.46), so it is not on by
    # default yet: None, no floor (always min(top_k, matching facts)). Issue 19.9 is open on this.
    relevance_floor: float | None = None
    # Same / replaces (engine.gate): a free-text statement's nearest active facts at or above this
    # cosine similarity become "may replace #N" marks for a person (never links). None: the figure
    # measured for the embedder in use (engine.gate.MAY_REPLACE_SIMILARITY, benchmarks/value_identity.py).
    may_replace_similarity: float | None = None
    # Review
    claim_ttl_seconds: float = 300.0
    # Team (engine/team.py): the share of approvals re-queued blind to a second reviewer (a pure
    # function of the candidate id, so the same approvals are sampled on every run and machine),
    # and the gap between two decisions of one reviewer beyond which they count as a break.
    second_review_rate: float = 0.1
    # Queue age: a pending item older than this is "past the SLA" (header, stats, `memdesk digest`).
    review_sla_hours: float = 48.0
    decision_break_seconds: float = 600.0
    # Review policies (engine/policies.py): how many human decisions on what a policy would approve
    # its precision bound must rest on before it may be enabled.
    policy_min_decisions: int = 30
    # Limits on hostile or accidental input, checked at every door (library, ingest, MCP, TUI edit).
    # A text over its limit is refused with a UserInputError naming the limit; nothing is changed.
    max_statement_chars: int = 1_000  # a fact, an edit, a correction, an agent proposal
    max_message_chars: int = 20_000  # one conversation message (add_exchange, ingest)
    max_query_chars: int = 2_000  # a retrieval query (search, MCP search_memory)
    max_reason_chars: int = 1_000  # a rejection, retraction or lift reason; a decision note
    max_pending_proposals_per_user: int = 100  # pending agent proposals (MCP) per user before refusing
    # Episodes leased by a `process` worker; renewed while the worker is alive, so a killed worker's
    # episodes come back within this many seconds.
    episode_lease_seconds: float = 60.0

"""Scoped hybrid retrieval: a vector arm and a BM25 arm, fused by weighted reciprocal rank
(`MemoryConfig.vector_weight` / `text_weight`, k = 60; the weights were tuned with
benchmarks/paraphrase.py, whose README section says what each setting trades).

Both arms receive the user and the time predicates and apply them inside their own query, before
their LIMIT (memv filtered after fusion, so an as-of query over a long history came back short).
The belief rule for at_time and known_at is written out once, on `SqlTx.text_arm`. Each arm asks
for more than top_k so that fusion has something to reorder; the vector arm alone already yields
min(top_k, matching facts), so the fused list is never short.
"""

from __future__ import annotations

import asyncio
import re
from datetime import datetime

from .embedders import Embedder
from .errors import UserInputError
from .limits import check_unicode
from .models import Knowledge, RetrievalResult, RetrievedItem
from .storage.rooms import RetrievalTx, Rooms
from .timeutil import check_representable, to_us

RRF_K = 60
TEXT_EVIDENCE = 1e-3
"""Under a relevance floor, the least BM25 score a text-arm row must reach: above what terms at the
floor IDF (1e-6 each, terms in half or more of the user's facts) can add up to."""
MAX_TOP_K = 1000
_TERM = re.compile(r"\w+", re.UNICODE)
# The words of a QUESTION the text arm does not look for. Not the embedder's list
# (engine/embedders.py `_STOP`), on purpose: that one is part of the hashing embedder's vector
# function, so every stored vector was made with it and it cannot change without `memdesk
# reembed`; this one only shapes a query, and differs where questions differ from statements: it
# drops question words ("what", "who", "does", "do"), which no stated fact holds, and keeps
# "this", "that", "its", "been", "am", whose rarity among a user's facts BM25 weighs for itself.
_STOP = frozenset(
    (
        "a",
        "an",
        "the",
        "is",
        "are",
        "was",
        "were",
        "be",
        "of",
        "to",
        "in",
        "on",
        "at",
        "for",
        "and",
        "or",
        "with",
        "by",
        "as",
        "it",
        "what",
        "who",
        "does",
        "do",
    )
)


def query_terms(text: str) -> list[str]:
    """The distinct content words of a question, casefolded, in order."""
    terms = [t.casefold() for t in _TERM.findall(text)]
    content = [t for t in terms if t not in _STOP] or terms
    return list(dict.fromkeys(content))


def rrf(rankings: list[list[int]], k: int = RRF_K, weights: list[float] | None = None) -> list[tuple[int, float]]:
    """Weighted reciprocal rank fusion: sum over arms of weight / (k + rank)."""
    scores: dict[int, float] = {}
    for ranking, weight in zip(rankings, weights or [1.0] * len(rankings), strict=True):
        for rank, kid in enumerate(ranking, start=1):
            scores[kid] = scores.get(kid, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


async def retrieve(
    store: Rooms[RetrievalTx],
    embedder: Embedder,
    query: str,
    *,
    user_id: str,
    top_k: int = 10,
    at_time: datetime | None = None,
    known_at: datetime | None = None,
    include_expired: bool = False,
    vector_weight: float = 1.0,
    text_weight: float = 1.0,
    relevance_floor: float | None = None,
) -> RetrievalResult:
    """The user's `top_k` facts most relevant to `query`, best first, under the belief rule for
    `at_time` / `known_at` / `include_expired` (see `_belief_filter`), fused from both arms.

    `relevance_floor` (cosine similarity): facts less similar than that are not taken from the
    vector arm, and the text arm keeps only rows with a term that is not in half or more of the
    user's facts; when nothing passes, the result is empty: "nothing of this user is relevant".
    None: no floor, and the list holds min(top_k, matching facts).

    Work per call, ordered to cut database round trips (each aiosqlite call is a hop to its
    thread): two read transactions at once, one per arm, each reading the rows of the facts it
    ranked (before: a third read transaction for the fused rows, and the text arm's statistics
    looked up twice). A small user's query on SQLite: BEGIN, the KNN, its rows, COMMIT on one
    connection; BEGIN, data_version, the term counts, the matching rows, their fact rows, COMMIT on
    the other (the user's fact count too when something was committed since)."""
    if not isinstance(user_id, str) or not user_id:
        raise UserInputError("retrieve needs a user_id")
    if not isinstance(query, str):
        raise UserInputError("the query must be text")
    check_unicode(user_id, "user_id")
    check_unicode(query, "the query")
    if not 1 <= top_k <= MAX_TOP_K:
        raise UserInputError(f"top_k must be between 1 and {MAX_TOP_K}")
    at_us = None if at_time is None else to_us(check_representable(at_time, "at_time"))
    known_us = None if known_at is None else to_us(check_representable(known_at, "known_at"))
    [embedding] = await embedder.embed([query])
    pool = max(top_k * 2, 20)
    terms = query_terms(query)
    fetch = min(pool, 4096)

    max_distance = None if relevance_floor is None else 1.0 - relevance_floor
    min_score = 0.0 if relevance_floor is None else TEXT_EVIDENCE

    async def vector() -> tuple[list[int], dict[int, Knowledge]]:
        async with store.reading() as tx:
            ids = await tx.vector_arm(
                user_id,
                embedding,
                fetch,
                at_time=at_us,
                known_at=known_us,
                include_expired=include_expired,
                max_distance=max_distance,
            )
            return ids, await tx.knowledge_by_ids(ids)

    async def text() -> tuple[list[int], dict[int, Knowledge]]:
        async with store.reading() as tx:
            ids = await tx.text_arm(
                user_id,
                terms,
                pool,
                at_time=at_us,
                known_at=known_us,
                include_expired=include_expired,
                informative=True,
                min_score=min_score,
            )
            return ids, await tx.knowledge_by_ids(ids)

    # The two arms on two read connections at once (each waits on its own database work), each
    # reading the rows of the facts it ranked: every fused fact is in one of the two lists, so no
    # third read transaction is needed.
    (vec_ids, vec_facts), (text_ids, facts) = await asyncio.gather(vector(), text())
    facts.update(vec_facts)
    fused = rrf([vec_ids, text_ids], weights=[vector_weight, text_weight])[:top_k]
    # each arm read its rows in the snapshot it ranked in, so every fused id has its row; kept as a guard
    fused = [(kid, score) for kid, score in fused if kid in facts]
    vec_rank = {kid: i for i, kid in enumerate(vec_ids, start=1)}
    text_rank = {kid: i for i, kid in enumerate(text_ids, start=1)}
    # known_at: each fact as the store held it then (its status and interval as of known_at, not today's)
    items = [
        RetrievedItem(
            knowledge=facts[kid] if known_at is None else facts[kid].as_known_at(known_at),
            score=score,
            vector_rank=vec_rank.get(kid),
            text_rank=text_rank.get(kid),
        )
        for kid, score in fused
    ]
    return RetrievalResult(
        query=query,
        user_id=user_id,
        items=items,
        at_time=at_time,
        known_at=known_at,
        include_expired=include_expired,
    )

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
from .models import RetrievalResult, RetrievedItem
from .storage import Store
from .timeutil import check_representable, to_us

RRF_K = 60
MAX_TOP_K = 1000
_TERM = re.compile(r"\w+", re.UNICODE)
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
    store: Store,
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
) -> RetrievalResult:
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

    async def vector() -> list[int]:
        async with store.reading() as tx:
            return await tx.vector_arm(
                user_id, embedding, fetch, at_time=at_us, known_at=known_us, include_expired=include_expired
            )

    async def text() -> list[int]:
        async with store.reading() as tx:
            return await tx.text_arm(
                user_id,
                await tx.informative_terms(user_id, terms),
                pool,
                at_time=at_us,
                known_at=known_us,
                include_expired=include_expired,
            )

    # The two arms on two read connections at once (each waits on its own database work).
    vec_ids, text_ids = await asyncio.gather(vector(), text())
    fused = rrf([vec_ids, text_ids], weights=[vector_weight, text_weight])[:top_k]
    async with store.reading() as tx:
        facts = await tx.knowledge_by_ids([kid for kid, _ in fused])
    # a fact erased between the arms and this read is left out, not reported as a KeyError
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

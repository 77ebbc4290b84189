"""The text arm's per-user BM25 for a large user reads only the rows that can reach its list
(MaxScore: the rarest term's rows first, then only the terms whose bound can still beat the list's
last score), and its ranking is exactly the one of scoring every matching row. The reference here
scores every fact of the user in plain Python, independently of the engine's SQL."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import pytest

from engine import HashingEmbedder, Memory, NewFact
from engine.storage.sql.text_arm import BM25_B, BM25_K1, COMMON_TERM_MIN_FACTS, fts_tokens
from engine.storage.sql.tx import SqlTx
from engine.timeutil import to_us
from tests.engine_helpers import Clock

COMMON = ["likes", "plays", "owns"]
RARE = ["jazz", "chess", "kayak", "violin", "sourdough", "tango"]
AT = datetime(2020, 6, 1, tzinfo=UTC)


def statements(rng: random.Random, n: int) -> list[NewFact]:
    """Facts whose words have very different frequencies, some repeated (term frequency 2) and
    some long (length normalisation), some valid only before or after AT."""
    out = []
    for i in range(n):
        words = [rng.choice(COMMON)]
        if rng.random() < 0.3:
            words.append(rng.choice(RARE))
            if rng.random() < 0.2:
                words.append(words[-1])
        if rng.random() < 0.2:
            words += ["and", "also", "much", "more", "besides"][: rng.randrange(1, 6)]
        words.append(f"n{i}")
        when = rng.random()
        span = (
            (None, None)
            if when < 0.6
            else (
                (datetime(2019, 1, 1, tzinfo=UTC), datetime(2020, 1, 1, tzinfo=UTC))
                if when < 0.8
                else (datetime(2020, 1, 1, tzinfo=UTC), None)
            )
        )
        out.append(NewFact("User " + " ".join(words), valid_at=span[0], invalid_at=span[1]))
    return out


def reference(facts: list[Any], query: list[str], limit: int, *, at_time: datetime | None) -> list[int]:
    """Per-user BM25 over every fact of the user (statistics over all of them, scores over those
    that pass the belief rule), best first, ties by id."""
    tokens = {k.id: fts_tokens(k.statement) for k in facts}
    n = len(facts)
    avgdl = max(sum(len(k.statement.strip().split(" ")) for k in facts) / n, 1.0)
    df = {t: sum(1 for k in facts if t in tokens[k.id]) for t in query}
    idf = {t: max(math.log((n - df[t] + 0.5) / (df[t] + 0.5)), 1e-6) for t in query if df[t]}
    scored = []
    for k in facts:
        if k.status != "active" or (
            at_time is not None
            and not ((k.valid_at is None or k.valid_at <= at_time) and (k.invalid_at is None or k.invalid_at > at_time))
        ):
            continue
        tf = Counter(t for t in tokens[k.id] if t in idf)
        if not tf:
            continue
        norm = BM25_K1 * (1 - BM25_B + BM25_B * len(k.statement.strip().split(" ")) / avgdl)
        score = sum(idf[t] * f * (BM25_K1 + 1) / (f + norm) for t, f in tf.items())
        scored.append((-score, k.id))
    return [kid for _, kid in sorted(scored)[:limit]]


@contextmanager
def rows_read(monkeypatch: pytest.MonkeyPatch, tx: SqlTx) -> Iterator[list[int]]:
    """How many rows each `text_rows` call of this transaction returned."""
    counts: list[int] = []
    original = type(tx).text_rows

    async def counting(self: SqlTx, *args: Any, **kwargs: Any) -> list[tuple[int, str, int]]:
        out = await original(self, *args, **kwargs)
        counts.append(len(out))
        return out

    monkeypatch.setattr(type(tx), "text_rows", counting)
    yield counts
    monkeypatch.setattr(type(tx), "text_rows", original)


async def test_a_large_users_text_arm_reads_fewer_rows_and_ranks_exactly_as_scoring_all(
    store_target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with Memory(store_target, clock=Clock(), embedder=HashingEmbedder()) as mem:
        rng = random.Random(11)
        await mem.add_knowledge_many("big", statements(rng, COMMON_TERM_MIN_FACTS + 300), actor="seed")
        facts = await mem.knowledge("big", include_expired=True)
        for old in facts[:40]:  # corrected facts: counted in the statistics, never listed
            await mem.correct("big", old.id, old.statement + " corrected", actor="seed", reason="test")
        facts = await mem.knowledge("big", include_expired=True)
        matching = {t: sum(1 for k in facts if k.status == "active" and t in fts_tokens(k.statement)) for t in COMMON}
        checked = pruned = 0
        for query in (
            ["likes", "jazz"],
            ["plays", "kayak", "tango"],
            ["owns", "likes", "sourdough"],
            ["jazz", "chess"],
            ["likes"],
            ["violin", "violin"],
            ["nothing", "jazz"],
        ):
            for limit in (5, 20, 400):
                for at_time in (None, AT):
                    async with mem.store.reading() as tx:
                        with rows_read(monkeypatch, tx) as counts:
                            got = await tx.text_arm(
                                "big", query, limit, at_time=to_us(at_time), known_at=None, include_expired=False
                            )
                    assert got == reference(facts, query, limit, at_time=at_time), (query, limit, at_time)
                    checked += 1
                    common = [t for t in query if t in COMMON]
                    if common and at_time is None and sum(counts) < sum(matching[t] for t in common):
                        pruned += 1
        assert checked == 42
        # "likes jazz" with a short list: the jazz rows settle it, the ~500 "likes" rows are not read
        assert pruned >= 4


async def test_a_small_user_is_read_in_one_query(store_target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Control: below COMMON_TERM_MIN_FACTS facts the rows are read at once (no second round
    trip for a user whose rows are few), and the ranking is the same reference ranking."""
    async with Memory(store_target, clock=Clock(), embedder=HashingEmbedder()) as mem:
        await mem.add_knowledge_many("small", statements(random.Random(3), 200), actor="seed")
        facts = await mem.knowledge("small", include_expired=True)
        async with mem.store.reading() as tx:
            with rows_read(monkeypatch, tx) as counts:
                got = await tx.text_arm(
                    "small", ["likes", "jazz"], 5, at_time=None, known_at=None, include_expired=False
                )
        assert got == reference(facts, ["likes", "jazz"], 5, at_time=None)
        assert len(counts) == 1 and counts[0] == sum(
            1 for k in facts if {"likes", "jazz"} & set(fts_tokens(k.statement))
        )

"""Scoped hybrid retrieval: user scope and time predicates inside each arm (before its LIMIT), so
that results are never another user's and never short: exactly min(top_k, matching facts)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from engine import Memory
from engine.retrieval import RRF_K, query_terms, rrf
from tests.engine_helpers import Clock


def ids(result) -> list[int]:  # type: ignore[no-untyped-def]
    return [i.knowledge.id for i in result.items]


# -- scope ----------------------------------------------------------------------------------------


async def test_another_users_fact_is_never_returned_even_for_its_exact_text(mem: Memory, clock: Clock) -> None:
    # a private fact of ana's (not a credential: a door code would be refused at the door, issue 27)
    secret = "Ana's locker at the Riverside gym is number 4471"
    fact = await mem.add_knowledge("ana", secret, actor="support")
    own = await mem.add_knowledge("bea", "Bea cycles to work", actor="support")

    assert ids(await mem.retrieve(secret, user_id="ana", top_k=5)) == [fact.id]  # positive control
    for kwargs in ({}, {"include_expired": True}, {"known_at": clock.now}, {"at_time": clock.now}):
        result = await mem.retrieve(secret, user_id="bea", top_k=5, **kwargs)  # type: ignore[arg-type]
        assert ids(result) == [own.id], kwargs
    assert ids(await mem.retrieve(secret, user_id="carl", top_k=5)) == []


async def test_a_small_user_gets_all_their_facts_beside_a_user_with_20000(mem: Memory, clock: Clock) -> None:
    """The memv failure: scope applied after a global candidate cut starves small users."""
    texts = [f"Ana fact {i} topic {i % 97}" for i in range(20_000)]
    embeddings = await mem.embedder.embed(texts)
    async with mem.store.transaction() as tx:
        await tx.insert_knowledge_many(
            [("ana", t, e, None, None, 1.0) for t, e in zip(texts, embeddings, strict=True)],
            created_at=1,
            created_by="bulk",
        )
    small = [
        await mem.add_knowledge("bea", s, actor="support")
        for s in ("Bea fact 1 topic 1", "Bea keeps bees", "Bea lives in Ghent")
    ]

    for query in ("Ana fact 17 topic 17", "Bea fact 1 topic 1", "bees"):
        result = await mem.retrieve(query, user_id="bea", top_k=10)
        assert sorted(ids(result)) == sorted(k.id for k in small), query
    # Positive control: the large user's own query fills top_k, led by the exact fact.
    big = await mem.retrieve("Ana fact 17 topic 17", user_id="ana", top_k=10)
    assert len(big.items) == 10 and big.items[0].knowledge.statement == "Ana fact 17 topic 17"


# -- time -----------------------------------------------------------------------------------------

YEAR0 = datetime(2000, 1, 1, tzinfo=UTC)


def year(i: int) -> datetime:
    return YEAR0.replace(year=2000 + i)


async def build_versions(mem: Memory, clock: Clock, n: int = 51) -> list[int]:
    """One fact corrected n-1 times: version i is valid [2000+i, 2001+i) (the last open-ended) and
    was believed from its correction until the next one."""
    first = await mem.add_knowledge("ana", "Ana works at company 0", actor="hr", valid_at=year(0), invalid_at=year(1))
    chain = [first.id]
    for i in range(1, n):
        clock.advance(days=1)
        end = year(i + 1) if i < n - 1 else None
        new = await mem.correct(
            "ana",
            chain[-1],
            f"Ana works at company {i}",
            actor="hr",
            reason="moved on",
            valid_at=year(i),
            invalid_at=end,
        )
        chain.append(new.id)
    return chain


async def test_as_of_query_over_50_superseded_versions(mem: Memory, clock: Clock) -> None:
    chain = await build_versions(mem, clock)
    assert len(chain) == 51
    version_ids = set(chain)
    at = year(17) + timedelta(days=100)

    only = await mem.retrieve("Ana works at company", user_id="ana", top_k=10, at_time=at, include_expired=True)
    assert ids(only) == [chain[17]]  # exactly the one valid then, although 51 versions match the words

    # Enough other facts valid at that time: a full top_k, still holding the right version only.
    for j in range(30):
        await mem.add_knowledge("ana", f"Ana works with colleague number {j}", actor="hr")
    full = await mem.retrieve("Ana works at company", user_id="ana", top_k=10, at_time=at, include_expired=True)
    assert len(full.items) == 10
    assert chain[17] in ids(full) and (set(ids(full)) & version_ids) == {chain[17]}
    assert all(k.valid_at is None or k.valid_at <= at for k in (i.knowledge for i in full.items))

    # Current belief holds only the last version, which was not valid then.
    current = await mem.retrieve("Ana works at company", user_id="ana", top_k=60, at_time=at)
    assert set(ids(current)) & version_ids == set()
    now = await mem.retrieve("Ana works at company", user_id="ana", top_k=60)
    assert set(ids(now)) & version_ids == {chain[-1]}


async def test_known_at_reads_what_was_believed_then(mem: Memory, clock: Clock) -> None:
    chain = await build_versions(mem, clock, n=5)
    versions = [await mem.get_knowledge("ana", kid) for kid in chain]
    for i, version in enumerate(versions):
        believed = version.created_at + timedelta(hours=1)
        result = await mem.retrieve("Ana works at company", user_id="ana", top_k=10, known_at=believed)
        assert ids(result) == [version.id], i


async def test_known_at_between_approval_and_supersession(mem: Memory, clock: Clock) -> None:
    c1 = await mem.queue_candidate("ana", "Ana lives in Lisbon")
    approved_at = clock.advance(hours=1)
    old = await mem.review.approve(c1, reviewer="rev")
    c2 = await mem.queue_candidate("ana", "Ana lives in Porto", kind="update", supersedes_id=old.id)
    superseded_at = clock.advance(days=10)
    new = await mem.review.confirm_supersession(c2, reviewer="rev")

    async def known(at: datetime) -> list[int]:
        return ids(await mem.retrieve("Where does Ana live", user_id="ana", top_k=10, known_at=at))

    assert await known(approved_at - timedelta(microseconds=1)) == []  # a pending candidate was not belief
    assert await known(approved_at) == [old.id]
    assert await known(superseded_at - timedelta(microseconds=1)) == [old.id]
    assert await known(superseded_at) == [new.id]
    assert await known(superseded_at + timedelta(days=400)) == [new.id]
    # The knowledge list agrees with the default read.
    assert [k.id for k in await mem.knowledge("ana")] == [new.id]


async def test_at_time_is_valid_time_and_open_ends_are_open(mem: Memory) -> None:
    past = await mem.add_knowledge("ana", "Ana lived in Rome", actor="s", valid_at=year(10), invalid_at=year(12))
    since = await mem.add_knowledge("ana", "Ana lives in Oslo", actor="s", valid_at=year(12))
    always = await mem.add_knowledge("ana", "Ana was born in Rome", actor="s")

    async def at(t: datetime | None) -> set[int]:
        return set(ids(await mem.retrieve("Ana Rome Oslo", user_id="ana", top_k=10, at_time=t)))

    assert await at(year(11)) == {past.id, always.id}
    assert await at(year(12)) == {since.id, always.id}  # invalid_at is exclusive, valid_at inclusive
    assert await at(year(5)) == {always.id}
    assert await at(None) == {past.id, since.id, always.id}  # no at_time: no valid-time filter


# -- count, fusion, prompt ------------------------------------------------------------------------


async def test_exactly_min_top_k_and_matching(mem: Memory) -> None:
    for n in (0, 1, 5, 10, 25):
        for i in range(n):
            valid_at, invalid_at = (year(1), year(2)) if i % 2 else (None, None)
            await mem.add_knowledge(
                f"user{n}", f"Note {i} of user {n}", actor="s", valid_at=valid_at, invalid_at=invalid_at
            )
    for n in (0, 1, 5, 10, 25):
        for top_k in (1, 3, 5, 10, 20):
            result = await mem.retrieve("note about something else entirely", user_id=f"user{n}", top_k=top_k)
            assert len(result.items) == min(top_k, n), (n, top_k)
            assert len({i.knowledge.id for i in result.items}) == len(result.items)
            as_of = await mem.retrieve("note", user_id=f"user{n}", top_k=top_k, at_time=year(30))
            assert len(as_of.items) == min(top_k, (n + 1) // 2), (n, top_k)


async def test_fts_arm_is_an_or_of_terms(mem: Memory) -> None:
    target = await mem.add_knowledge("ana", "Ana collects Zanzibar stamps", actor="s")
    for i in range(40):
        await mem.add_knowledge("ana", f"Ana has meeting {i} on Tuesday", actor="s")
    question = "which island inspired Zanzibar hobby"  # one word of five in the fact
    assert query_terms(question) == ["which", "island", "inspired", "zanzibar", "hobby"]
    result = await mem.retrieve(question, user_id="ana", top_k=3)
    hit = next(i for i in result.items if i.knowledge.id == target.id)
    assert hit.text_rank == 1
    assert query_terms("the? !!") == ["the"] and query_terms("") == [] and query_terms("?!") == []
    # Quotes and FTS syntax in a question are terms, not operators.
    quoted = await mem.retrieve('Zanzibar" OR NEAR(x', user_id="ana", top_k=3)
    assert target.id in ids(quoted)


async def test_rrf_uses_k_60(mem: Memory) -> None:
    assert RRF_K == 60
    fused = dict(rrf([[1, 2, 3], [3, 1]]))
    assert fused == pytest.approx({1: 1 / 61 + 1 / 62, 2: 1 / 62, 3: 1 / 63 + 1 / 61})
    assert [kid for kid, _ in rrf([[1, 2, 3], [3, 1]])] == [1, 3, 2]
    for i in range(8):
        await mem.add_knowledge("ana", f"Ana visited city {i} in spring", actor="s")
    result = await mem.retrieve("Ana visited city 3", user_id="ana", top_k=8)
    weights = (mem.config.vector_weight, mem.config.text_weight)
    for item in result.items:
        ranks = (item.vector_rank, item.text_rank)
        expected = sum(w / (RRF_K + r) for w, r in zip(weights, ranks, strict=True) if r is not None)
        assert item.score == pytest.approx(expected)
    assert [i.score for i in result.items] == sorted((i.score for i in result.items), reverse=True)


async def test_the_fusion_weights_each_arm(mem: Memory) -> None:
    """Weighted RRF: an arm's weight multiplies its 1/(60 + rank); the configured weights reach it."""
    assert dict(rrf([[1, 2], [2]], weights=[0.5, 1.0])) == pytest.approx({1: 0.5 / 61, 2: 0.5 / 62 + 1 / 61})
    assert [kid for kid, _ in rrf([[1, 2], [2, 1]], weights=[1.0, 0.25])] == [1, 2]  # the vector arm decides
    assert [kid for kid, _ in rrf([[1, 2], [2, 1]], weights=[0.25, 1.0])] == [2, 1]  # the text arm decides
    await mem.add_knowledge("ana", "Ana keeps a parrot", actor="s")
    only = await mem.retrieve("parrot", user_id="ana", top_k=1)
    item = only.items[0]
    assert (item.vector_rank, item.text_rank) == (1, 1)
    assert item.score == pytest.approx((mem.config.vector_weight + mem.config.text_weight) / 61)


async def test_to_prompt_carries_validity_dates_and_status(mem: Memory, clock: Clock) -> None:
    rome = await mem.add_knowledge(
        "ana", "Ana lived in Rome [bold]", actor="s", valid_at=year(10), invalid_at=datetime(2012, 6, 30, tzinfo=UTC)
    )
    await mem.add_knowledge("ana", "Ana speaks Italian", actor="s")
    clock.advance(days=1)
    await mem.correct("ana", rome.id, "Ana lived in Rome and Milan", actor="s", reason="more precise")

    text = (await mem.retrieve("Ana Rome", user_id="ana", top_k=10, include_expired=True)).to_prompt()
    assert "- Ana lived in Rome [bold] (2010-01-01 → 2012-06-30) [corrected]" in text  # a correction says so (issue 29)
    assert "- Ana lived in Rome and Milan (2010-01-01 → 2012-06-30)\n" in text + "\n"
    assert "- Ana speaks Italian (always → now)" in text
    as_of = (await mem.retrieve("Ana Rome", user_id="ana", top_k=10, at_time=year(11))).to_prompt()
    assert "as of 2011-01-01" in as_of
    assert (await mem.retrieve("Rome", user_id="nobody")).to_prompt() == "No stored facts about this user match."


async def test_bad_arguments_are_refused(mem: Memory) -> None:
    from engine import UserInputError

    for kwargs in ({"user_id": ""}, {"user_id": "ana", "top_k": 0}, {"user_id": "ana", "top_k": 100_000}):
        with pytest.raises(UserInputError):
            await mem.retrieve("x", **kwargs)  # type: ignore[arg-type]

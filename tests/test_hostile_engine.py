"""Hostile input at the library's doors (issue 10): per-user ranking, size limits, the date range,
valid Unicode, the bounded embedding cost and the guarded rollback. Each must-not is paired with
its positive control."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone

import pytest

from engine import HashingEmbedder, Memory, MemoryConfig, UserInputError
from engine.storage.sqlite.connection import Database
from tests.engine_helpers import Clock, open_memory, snapshot, sql, sqlite_only

# -- per-user ranking -------------------------------------------------------------------------------


def ranking(result) -> list[tuple[int, float, int | None, int | None]]:  # type: ignore[no-untyped-def]
    return [(i.knowledge.id, round(i.score, 12), i.text_rank, i.vector_rank) for i in result.items]


async def seed_alice(mem: Memory) -> tuple[int, int]:
    await mem.add_knowledge_many("alice", [f"Alice wrote note {i} about the weather" for i in range(20)], actor="s")
    hiv = await mem.add_knowledge("alice", "Alice takes hivmeds with breakfast", actor="s")
    vit = await mem.add_knowledge("alice", "Alice takes vitamins with breakfast", actor="s")
    return hiv.id, vit.id


async def test_another_users_facts_do_not_change_this_users_ranking(new_target: Callable[[str], str]) -> None:
    """300 facts of carol holding "hivmeds" used to lower that word's IDF for everyone (FTS5 counts
    over the whole table), reordering alice's results and telling her agent what carol's facts say."""
    async with open_memory(new_target("rank"), Clock()) as mem:
        hiv, vit = await seed_alice(mem)
        query = "does alice take hivmeds or vitamins"
        before = await mem.retrieve(query, user_id="alice", top_k=10)
        assert sorted((i.text_rank, i.knowledge.id) for i in before.items if i.text_rank)[:2] == [(1, hiv), (2, vit)]

        await mem.add_knowledge_many("carol", [f"Carol takes hivmeds dose {i}" for i in range(300)], actor="s")
        after = await mem.retrieve(query, user_id="alice", top_k=10)
        assert ranking(after) == ranking(before)
        assert after.to_prompt() == before.to_prompt()

        # Positive control: alice's OWN facts holding "hivmeds" do change her statistics.
        await mem.add_knowledge_many("alice", [f"Alice ordered hivmeds refill {i}" for i in range(300)], actor="s")
        own = await mem.retrieve(query, user_id="alice", top_k=400)
        ranks = {i.knowledge.id: i.text_rank for i in own.items}
        assert ranks[vit] is not None and ranks[hiv] is not None and ranks[vit] < ranks[hiv]


async def test_the_common_term_filter_counts_this_users_facts_only(new_target: Callable[[str], str]) -> None:
    """A term in half of a LARGE store used to be dropped for every user: 2,100 of carol's facts
    holding "hivmeds" took the word out of alice's text query."""
    async with open_memory(new_target("common"), Clock()) as mem:
        hiv, _ = await seed_alice(mem)
        await mem.add_knowledge_many("carol", [f"Carol takes hivmeds dose {i}" for i in range(2100)], actor="s")
        res = await mem.retrieve("hivmeds", user_id="alice", top_k=5)
        assert (res.items[0].knowledge.id, res.items[0].text_rank) == (hiv, 1)
        # Positive control: in carol's own (large) store the word is common, so it ranks nothing there.
        carol = await mem.retrieve("hivmeds", user_id="carol", top_k=5)
        assert [i.text_rank for i in carol.items] == [None] * 5


async def test_bm25_prefers_the_rarer_term_and_the_shorter_statement(new_target: Callable[[str], str]) -> None:
    """The per-user scores keep BM25's behaviour: a rare term outranks a common one, and at equal
    terms the shorter statement comes first."""
    async with open_memory(new_target("bm25"), Clock()) as mem:
        await mem.add_knowledge_many("ana", [f"Ana likes tea number {i}" for i in range(30)], actor="s")
        rare = await mem.add_knowledge("ana", "Ana owns a kayak", actor="s")
        long = await mem.add_knowledge("ana", "Ana owns a very old and rather heavy kayak from Oslo", actor="s")
        res = await mem.retrieve("tea kayak", user_id="ana", top_k=40)
        text = sorted((i.text_rank, i.knowledge.id) for i in res.items if i.text_rank is not None)
        assert [kid for _, kid in text[:2]] == [rare.id, long.id]
        assert len(text) == 32


# -- limits, dates and Unicode at the library's doors -------------------------------------------------


async def messages(mem: Memory) -> int:
    async with sql(mem) as conn:
        return int((await (await conn.execute("SELECT count(*) FROM messages")).fetchone())[0])  # type: ignore[index]


async def test_add_exchange_refuses_oversized_messages_and_changes_nothing(new_target: Callable[[str], str]) -> None:
    config = MemoryConfig(max_message_chars=50)
    async with open_memory(new_target("lim"), Clock(), config=config) as mem:
        before = await snapshot(mem)
        for user_msg, assistant in (("x" * 51, None), ("hi", "y" * 51)):
            with pytest.raises(UserInputError, match="max_message_chars"):
                await mem.add_exchange("ana", user_msg, assistant)
        with pytest.raises(UserInputError, match="max_message_chars"):  # one bad exchange refuses the batch
            await mem.add_exchanges([("ana", "fine", None, None), ("ana", "z" * 51, None, None)])
        assert await snapshot(mem) == before and await messages(mem) == 0
        assert len(await mem.add_exchange("ana", "x" * 50, "y" * 50)) == 2  # control: at the limit


@pytest.mark.parametrize(
    "at",
    [
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 0, tzinfo=timezone(timedelta(hours=-5))),
        datetime(1899, 12, 31, tzinfo=UTC),
    ],
)
async def test_add_exchange_refuses_dates_outside_the_range(new_target: Callable[[str], str], at: datetime) -> None:
    async with open_memory(new_target("dates"), Clock()) as mem:
        with pytest.raises(UserInputError, match="outside the supported range"):
            await mem.add_exchange("ana", "I moved to Porto last year", None, at)
        assert await mem.users() == []
        await mem.add_exchange("ana", "I moved to Porto last year", None, datetime(1900, 1, 1, tzinfo=UTC))
        assert await mem.users() == ["ana"]


async def test_lone_surrogates_are_refused_at_every_library_door(new_target: Callable[[str], str]) -> None:
    async with open_memory(new_target("sur"), Clock()) as mem:
        before = await snapshot(mem)
        with pytest.raises(UserInputError, match="surrogate"):
            await mem.add_exchange("\ud800", "hello", None)
        with pytest.raises(UserInputError, match="surrogate"):
            await mem.add_exchange("ana", "hello \udfff", None)
        with pytest.raises(UserInputError, match="surrogate"):
            await mem.add_knowledge("ana", "Ana likes \ud83d tea", actor="s")
        with pytest.raises(UserInputError, match="surrogate"):
            await mem.retrieve("tea \ud800", user_id="ana")
        assert await snapshot(mem) == before and await messages(mem) == 0
        await mem.add_knowledge("ana", "Ana likes 🍵 tea", actor="s")  # control: a real astral character
        assert len((await mem.retrieve("tea 🍵", user_id="ana")).items) == 1


async def test_a_nul_character_is_refused_at_every_library_door(new_target: Callable[[str], str]) -> None:
    """PostgreSQL's text cannot hold U+0000, so neither backend takes it: the same text is accepted
    by both, and a store can always move to the other."""
    async with open_memory(new_target("nul"), Clock()) as mem:
        before = await snapshot(mem)
        with pytest.raises(UserInputError, match="NUL"):
            await mem.add_exchange("ana", "hello\x00there", None)
        with pytest.raises(UserInputError, match="NUL"):
            await mem.add_knowledge("ana", "Ana likes\x00 tea", actor="s")
        with pytest.raises(UserInputError, match="NUL"):
            await mem.propose("ana", "Ana likes\x00 tea", actor="agent")
        with pytest.raises(UserInputError, match="NUL"):
            await mem.retrieve("tea\x00", user_id="ana")
        assert await snapshot(mem) == before and await messages(mem) == 0
        await mem.add_knowledge("ana", "Ana likes \x01 tea", actor="s")  # control: another control character
        assert len((await mem.retrieve("tea", user_id="ana")).items) == 1


async def test_statement_query_and_reason_limits(new_target: Callable[[str], str]) -> None:
    config = MemoryConfig(max_statement_chars=40, max_query_chars=30, max_reason_chars=20)
    async with open_memory(new_target("lim2"), Clock(), config=config) as mem:
        with pytest.raises(UserInputError, match="max_statement_chars"):
            await mem.add_knowledge("ana", "A" * 41, actor="s")
        fact = await mem.add_knowledge("ana", "A" * 40, actor="s")
        with pytest.raises(UserInputError, match="max_reason_chars"):
            await mem.retract("ana", fact.id, actor="s", reason="r" * 21)
        with pytest.raises(UserInputError, match="max_query_chars"):
            await mem.retrieve("q" * 31, user_id="ana")
        assert len((await mem.retrieve("A" * 30, user_id="ana")).items) == 1
        await mem.retract("ana", fact.id, actor="s", reason="r" * 20)


async def test_retrieve_refuses_an_out_of_range_as_of_without_overflowing(new_target: Callable[[str], str]) -> None:
    async with open_memory(new_target("asof"), Clock()) as mem:
        await mem.add_knowledge("ana", "Ana lives in Porto", actor="s")
        plus_one = timezone(timedelta(hours=1))
        for kwargs in ({"at_time": datetime(1, 1, 1, tzinfo=plus_one)}, {"known_at": datetime(9999, 1, 1, tzinfo=UTC)}):
            with pytest.raises(UserInputError, match="outside the supported range"):
                await mem.retrieve("Porto", user_id="ana", **kwargs)  # type: ignore[arg-type]
        assert len((await mem.retrieve("Porto", user_id="ana", at_time=datetime(2200, 1, 1, tzinfo=UTC))).items) == 1


async def test_valid_time_outside_the_range_is_refused(new_target: Callable[[str], str]) -> None:
    async with open_memory(new_target("vt"), Clock()) as mem:
        with pytest.raises(UserInputError, match="outside the supported range"):
            await mem.add_knowledge("ana", "Ana was born", actor="s", valid_at=datetime(1, 1, 2, tzinfo=UTC))
        await mem.add_knowledge("ana", "Ana was born", actor="s", valid_at=datetime(1990, 1, 2, tzinfo=UTC))


# -- bounded embedding cost ---------------------------------------------------------------------------


def test_hashing_embedder_featurises_only_the_first_max_chars() -> None:
    """A 10 MB message used to build one feature per character trigram (30 s, 1.7 GB); only the
    first `max_chars` characters count now (measured figures in the report, not asserted here)."""
    emb = HashingEmbedder(max_chars=1000)
    head = " ".join(f"word{i}" for i in range(200))[:1000]
    assert emb.embed_one(head + " tail words here") == emb.embed_one(head)
    big = head + " zebra" * 2_000_000  # 12 MB
    assert emb.embed_one(big) == emb.embed_one(head)
    # Positive control: inside the bound, every word counts.
    assert emb.embed_one(head[:500] + " zebra") != emb.embed_one(head[:500])
    assert HashingEmbedder().max_chars == HashingEmbedder.MAX_CHARS >= MemoryConfig().max_message_chars


# -- guarded rollback -------------------------------------------------------------------------------


@sqlite_only("provokes SQLite's own automatic rollback")
async def test_a_transaction_sqlite_already_rolled_back_keeps_the_original_error(
    new_target: Callable[[str], str],
) -> None:
    """SQLite rolls a transaction back by itself on "database or disk is full"; a second ROLLBACK
    then failed with "cannot rollback - no transaction is active" and hid what happened."""
    db = await Database.open(str(new_target("tx")))
    try:
        await db.conn.execute("CREATE TABLE t(x)")
        with pytest.raises(sqlite3.OperationalError, match="database or disk is full"):
            async with db.transaction() as conn:
                await conn.execute("INSERT INTO t VALUES (1)")
                await conn.execute("ROLLBACK")  # what SQLite does itself on SQLITE_FULL
                raise sqlite3.OperationalError("database or disk is full")
        # Control: an ordinary failure is still rolled back, and the connection is usable afterwards.
        with pytest.raises(RuntimeError, match="boom"):
            async with db.transaction() as conn:
                await conn.execute("INSERT INTO t VALUES (2)")
                raise RuntimeError("boom")
        async with db.transaction() as conn:
            await conn.execute("INSERT INTO t VALUES (3)")
        rows = await (await db.conn.execute("SELECT x FROM t")).fetchall()
        assert [r[0] for r in rows] == [3]
    finally:
        await db.close()


class _DatedExtractor:
    """Proposes two facts from any episode: one dated inside the range, one in year 2300 (what a
    model resolving "in three hundred years" against a real message date could produce)."""

    name = "dated"

    async def extract(self, episode, existing):  # type: ignore[no-untyped-def]
        from engine.models import Extraction, GapItem

        return Extraction(
            prediction="",
            items=[
                GapItem("Ana will live in Rome", valid_at=datetime(2300, 1, 1, tzinfo=UTC), evidence="Rome"),
                GapItem("Ana lives in Porto", valid_at=datetime(2024, 1, 1, tzinfo=UTC), evidence="Porto"),
            ],
        )


async def test_an_extracted_date_outside_the_range_is_dropped_and_counted(new_target: Callable[[str], str]) -> None:
    async with Memory(new_target("x"), extractor=_DatedExtractor(), clock=Clock()) as mem:
        await mem.add_exchange("ana", "I live in Porto and one day Rome", None, datetime(2024, 1, 1, tzinfo=UTC))
        report = await mem.process("ana")
        # The out-of-range date is dropped from its item and counted; the run never fails on it.
        assert (report.dates_dropped, report.queued, report.failed) == (1, 2, 0)
        pending = {c.statement: c.valid_at for c in await mem.review.pending("ana")}
        assert pending["Ana will live in Rome"] is None
        assert pending["Ana lives in Porto"] == datetime(2024, 1, 1, tzinfo=UTC)  # the in-range date is kept

"""Ids are never reused, in any table (migration 5 rebuilt them with AUTOINCREMENT), and the two
writes an agent may make (`Memory.propose`, `Memory.request_forget`) run as one transaction each
through the pipeline's own gates, with no made-up confidence. The MCP server's side of the same
rules is in test_mcp.py."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
import sqlite_vec

from engine import (
    HashingEmbedder,
    Memory,
    MemoryConfig,
    NotFoundError,
    QueueFilter,
    StaleSupersessionError,
    TombstonedError,
    UserInputError,
)
from engine.erase import erase_user
from engine.storage.sqlite.connection import Database
from engine.storage.sqlite.schema import MIGRATIONS, SCHEMA_VERSION
from engine.timeutil import FOREVER
from tests.engine_helpers import Clock, open_memory, snapshot, sql, sqlite_only
from tests.tui_seed import ScriptedExtractor

AGENT = "mcp-agent"


async def max_ids(mem: Memory) -> dict[str, int]:
    out = {}
    async with sql(mem) as conn:
        for table in ("messages", "episodes", "extraction_runs", "candidates", "knowledge", "tombstones"):
            row = await (await conn.execute(f"SELECT coalesce(max(id), 0) FROM {table}")).fetchone()
            out[table] = int(row[0])
    return out


async def audit_of(mem: Memory, entity: str, entity_id: int) -> list[tuple[str, str]]:
    async with sql(mem) as conn:
        rows = await (
            await conn.execute(
                "SELECT action, user_id FROM audit_log WHERE entity = ? AND entity_id = ? ORDER BY id",
                (entity, entity_id),
            )
        ).fetchall()
    return [(r[0], r[1]) for r in rows]


async def test_erase_then_write_reuses_no_id_in_any_table(new_target: Callable[[str], str], clock: Clock) -> None:
    """Issue 9: the next message written after an erasure took an erased message's id and showed up
    under that id's old `capture` audit row."""
    async with Memory(new_target("erase"), extractor=ScriptedExtractor(), clock=clock) as mem:
        await mem.add_exchange("gone", "FACT: Gone keeps owls", "Nice.", at=clock.now)
        await mem.add_exchange("gone", "FACT: Gone plays oboe", "Nice.", at=clock.now)
        clock.advance(hours=1)
        await mem.process("gone")
        first, second = await mem.review.pending("gone")
        await mem.review.approve(first.id, reviewer="rev")
        await mem.review.reject(second.id, reviewer="rev", reason="no")
        erased = await max_ids(mem)
        assert all(erased.values())  # every table held a row of the erased user
        await erase_user(mem, "gone", actor="dpo", compact=True)

        clock.advance(hours=1)
        await mem.add_exchange("kept", "FACT: Kept keeps bees", "Nice.", at=clock.now)
        await mem.add_exchange("kept", "FACT: Kept plays harp", "Nice.", at=clock.now)
        clock.advance(hours=1)
        await mem.process("kept")
        first, second = await mem.review.pending("kept")
        fact = await mem.review.approve(first.id, reviewer="rev")
        await mem.review.reject(second.id, reviewer="rev", reason="no")
        now = await max_ids(mem)
        async with sql(mem) as conn:
            low = {t: int((await (await conn.execute(f"SELECT min(id) FROM {t}")).fetchone())[0]) for t in now}
        for table, top in erased.items():
            assert low[table] > top, f"{table} reused an erased id"
        # no stale audit row: each new row's audit history is its own user's only
        assert {u for _, u in await audit_of(mem, "knowledge", fact.id)} == {"kept"}
        assert {u for _, u in await audit_of(mem, "candidate", first.id)} == {"kept"}
        async with sql(mem) as conn:
            msg_ids = [r[0] for r in await (await conn.execute("SELECT id FROM messages")).fetchall()]
        for mid in msg_ids:
            assert {u for _, u in await audit_of(mem, "message", mid)} <= {"kept"}


async def test_undo_then_write_reuses_no_knowledge_id(mem: Memory) -> None:
    cid = await mem.queue_candidate("ana", "Ana likes jazz")
    undone = await mem.review.approve(cid, reviewer="rev")
    await mem.review.undo(cid, reviewer="rev")
    fresh = await mem.add_knowledge("ana", "Ana likes opera", actor="support")
    assert fresh.id > undone.id
    assert [a for a, _ in await audit_of(mem, "knowledge", fresh.id)] == ["inject"]


@sqlite_only("builds a SQLite v4 file and runs SQLite migration 5")
async def test_migration_5_keeps_the_rows_and_never_hands_out_an_id_the_audit_log_named(
    new_target: Callable[[str], str],
) -> None:
    path = str(new_target("v4"))
    embedder = HashingEmbedder()
    [vector] = await embedder.embed(["Ana lives in Lisbon"])
    db = await Database.open(path)
    async with db.transaction() as conn:
        for version in range(1, 5):
            for statement in MIGRATIONS[version](embedder.dimensions):
                await conn.execute(statement)
        await conn.execute("PRAGMA user_version = 4")
        await conn.execute(
            "INSERT INTO knowledge(id, user_id, statement, key, confidence, created_at, status, created_by)"
            " VALUES (1, 'ana', 'Ana lives in Lisbon', 'ana lives in lisbon', 1.0, 10, 'active', 'seed')"
        )
        await conn.execute(
            "INSERT INTO knowledge_fts(rowid, statement, scope) VALUES (1, 'Ana lives in Lisbon', ?)",
            ("u" + b"ana".hex(),),
        )
        await conn.execute(
            "INSERT INTO knowledge_vec(knowledge_id, user_id, embedding, status, valid_from, valid_to, created,"
            " expired) VALUES (1, 'ana', ?, 'active', ?, ?, 10, ?)",
            (sqlite_vec.serialize_float32(vector), -FOREVER, FOREVER, FOREVER),
        )
        await conn.execute(
            "INSERT INTO candidates(id, user_id, statement, key, kind, confidence, status, created_at)"
            " VALUES (3, 'ana', 'Ana likes jazz', 'ana likes jazz', 'new', 0.9, 'pending', 10)"
        )
        for entity, eid, action in (
            ("knowledge", 1, "inject"),
            ("knowledge", 7, "create"),
            ("knowledge", 7, "undo_create"),
            ("candidate", 3, "queue"),
            ("tombstone", 5, "create"),
        ):
            await conn.execute(
                "INSERT INTO audit_log(at, actor, action, user_id, entity, entity_id)"
                " VALUES (10, 'seed', ?, 'ana', ?, ?)",
                (action, entity, eid),
            )
    await db.close()

    async with Memory(path, embedder=embedder) as mem:
        async with sql(mem) as conn:
            assert (await (await conn.execute("PRAGMA user_version")).fetchone())[0] == SCHEMA_VERSION
            assert (await (await conn.execute("PRAGMA foreign_key_check")).fetchall()) == []
        found = await mem.retrieve("Lisbon", user_id="ana", top_k=5)
        assert [i.knowledge.id for i in found.items] == [1]  # vector and text rows carried over
        assert (await mem.review.get(3)).confidence == 0.9
        fact = await mem.add_knowledge("ana", "Ana likes opera", actor="support")
        cid = await mem.queue_candidate("ana", "Ana likes fado")
        stone = await mem.review.reject(cid, reviewer="rev", reason="no")
        assert (fact.id, cid, stone.id if stone else None) == (8, 4, 6)  # past every id the audit log named
        async with sql(mem) as conn:
            with pytest.raises(Exception, match="append-only"):
                await conn.execute("UPDATE audit_log SET note = 'x' WHERE id = 1")


# -- agents: propose ------------------------------------------------------------------------------------


async def test_a_proposal_carries_its_source_and_no_confidence(mem: Memory) -> None:
    """Issue 9: agent proposals got confidence 1.00, so a confidence filter picked them first."""
    outcome = await mem.propose("ana", "Ana plays the bassoon", AGENT)
    assert outcome.duplicate_of is None and outcome.candidate_id is not None
    cand = await mem.review.get(outcome.candidate_id)
    assert (cand.kind, cand.created_by, cand.confidence) == ("proposed", AGENT, None)
    extracted = await mem.queue_candidate("ana", "Ana plays the oboe", confidence=0.9)
    assert [c.id for c in await mem.review.pending("ana", filter=QueueFilter(min_confidence=0.8))] == [
        extracted
    ]  # control: 0.9 is in
    fact = await mem.review.approve(cand.id, reviewer="rev")
    assert fact.confidence is None  # a reviewer's approval does not invent one either


async def test_a_proposal_goes_through_the_pipelines_gates(mem: Memory) -> None:
    active = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")
    waiting = await mem.queue_candidate("ana", "Ana likes jazz")
    rejected = await mem.queue_candidate("ana", "Ana is allergic to peanuts")
    stone = await mem.review.reject(rejected, reviewer="rev", reason="her brother is")
    assert stone is not None
    before = await snapshot(mem)
    with pytest.raises(TombstonedError) as err:
        await mem.propose("ana", "ana is allergic to peanuts!", AGENT)
    assert err.value.tombstone_id == stone.id
    assert (await mem.propose("ana", "Ana lives in Lisbon.", AGENT)).duplicate_of == ("knowledge", active.id)
    assert (await mem.propose("ana", "ANA LIKES JAZZ", AGENT)).duplicate_of == ("candidate", waiting)
    assert await snapshot(mem) == before
    # controls: another value, and the same value for another user, are queued
    assert (await mem.propose("ana", "Ana is allergic to walnuts", AGENT)).candidate_id is not None
    assert (await mem.propose("bob", "Bob is allergic to peanuts", AGENT)).candidate_id is not None


async def test_proposals_are_refused_past_the_limits(new_target: Callable[[str], str]) -> None:
    config = MemoryConfig(max_pending_proposals_per_user=2, max_statement_chars=30, max_reason_chars=12)
    async with open_memory(new_target("limits"), Clock(), config=config) as mem:
        fact = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")
        await mem.propose("ana", "Ana plays chess", AGENT)
        before = await snapshot(mem)
        with pytest.raises(UserInputError, match="max_statement_chars"):
            await mem.propose("ana", "Ana " + "x" * 40, AGENT)
        with pytest.raises(UserInputError, match="max_reason_chars"):
            await mem.request_forget("ana", fact.id, AGENT, "r" * 13)
        assert await snapshot(mem) == before
        await mem.request_forget("ana", fact.id, AGENT, "moved")  # the second request: at the limit now
        before = await snapshot(mem)
        with pytest.raises(UserInputError, match="max_pending_proposals_per_user"):
            await mem.propose("ana", "Ana plays go", AGENT)
        assert await snapshot(mem) == before
        assert (await mem.propose("bob", "Bob plays go", AGENT)).candidate_id is not None  # per user


# -- agents: forget --------------------------------------------------------------------------------------


@sqlite_only("traces SQLite's statements and reads EXPLAIN QUERY PLAN")
async def test_a_forget_request_is_found_by_one_indexed_query(mem: Memory) -> None:
    """Issue 9: the MCP server fetched 1,000 pending rows and filtered them in Python."""
    fact = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")
    for n in range(30):
        await mem.queue_candidate("ana", f"Ana likes composer {n}")
    first = await mem.request_forget("ana", fact.id, AGENT, "moved")
    statements: list[str] = []
    await mem.store._writer.conn.set_trace_callback(statements.append)
    try:
        again = await mem.request_forget("ana", fact.id, AGENT, "moved")
    finally:
        await mem.store._writer.conn.set_trace_callback(None)
    assert again.duplicate_of == ("candidate", first.candidate_id) and again.candidate_id is None
    lookups = [s for s in statements if "kind = 'retraction'" in s]
    assert len(lookups) == 1 and "LIMIT 1000" not in " ".join(statements)
    async with sql(mem) as conn:
        plan = await (await conn.execute("EXPLAIN QUERY PLAN " + lookups[0])).fetchall()
    assert "candidates_supersedes" in json.dumps([list(r) for r in plan])


async def test_forget_refuses_unknown_foreign_huge_and_ended_ids(mem: Memory) -> None:
    mine = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")
    theirs = await mem.add_knowledge("bob", "Bob lives in Porto", actor="support")
    ended = await mem.add_knowledge("ana", "Ana lives in Braga", actor="support")
    await mem.retract("ana", ended.id, actor="support", reason="wrong", tombstone=False)
    before = await snapshot(mem)
    for kid in (theirs.id, 999_999, 2**70, -1, 0):
        with pytest.raises(NotFoundError):
            await mem.request_forget("ana", kid, AGENT, "please")
    with pytest.raises(StaleSupersessionError, match="retracted"):
        await mem.request_forget("ana", ended.id, AGENT, "please")
    with pytest.raises(NotFoundError):
        await mem.review.get(2**70)
    assert await snapshot(mem) == before
    queued = await mem.request_forget("ana", mine.id, AGENT, "please")
    cand = await mem.review.get(queued.candidate_id)  # type: ignore[arg-type]
    assert (cand.kind, cand.supersedes_id, cand.reason, cand.confidence, cand.created_by) == (
        "retraction",
        mine.id,
        "please",
        None,
        AGENT,
    )

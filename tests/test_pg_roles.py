"""The README's roles for a team deployment, run as written against the test server, one
capability each (issue 17, item 8): the agent proposes and reads facts and cannot make anything
active; the worker ingests and processes and cannot decide; the reviewer decides and cannot
rewrite the audit log or the schema; the erasure role erases (and only the owner compacts).
Every audit row names the database role that wrote it, whatever the client sent.

Each must-not is tried with raw SQL as that role (asyncpg) and through the engine where the engine
has the call, and is paired with the same role doing its own work (the positive control). The
GRANT block is read from README.md itself, so the README cannot drift from what is tested.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from engine import HashingEmbedder, Memory, MemoryConfig
from engine.erase import erase_user

README = Path(__file__).resolve().parent.parent / "README.md"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
ROLES = ("memdesk_base", "memdesk_agent", "memdesk_worker", "memdesk_reviewer", "memdesk_erase")
AGENT_NAMES = ("agent", "agent:mcp", "mcp-agent")  # `memdesk agents allow` (schema migration 10)
_suffix = itertools.count(1)
Urls = dict[str, str]


def readme_grants() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Running memdesk for a team") :]
    found = re.search(r"```sql\n(.*?)```", section, re.S)
    assert found, "the team section of README.md has no ```sql block"
    return found.group(1)


def as_role(url: str, role: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, f"{role}@{host}", parts.path, parts.query, parts.fragment))


def _open(url: str) -> Memory:
    return Memory(url, embedder=HashingEmbedder(), clock=lambda: T0)


@pytest.fixture
async def roles(pg_url: str) -> AsyncIterator[Urls]:
    """URLs by capability ("owner", "agent", "worker", "reviewer", "erase") on a fresh database
    whose schema the owner made, with the README's block applied (role names made unique: roles
    belong to the whole server) and the agent's login allowed AGENT_NAMES; "<capability>_role"
    keys give each role's name."""
    n = f"{os.getpid()}_{next(_suffix)}"  # the process too: pytest-xdist workers share the server
    names = {role: f"{role}_{n}" for role in ROLES}
    database = urlsplit(pg_url).path.lstrip("/")
    script = readme_grants().replace("DATABASE memdesk ", f'DATABASE "{database}" ')
    script = re.sub(r"\b(memdesk_(?:base|agent|worker|reviewer|erase))\b", lambda m: names[m.group(1)], script)
    async with _open(pg_url):
        pass  # the owner (the test server's superuser) creates the schema
    conn = await asyncpg.connect(pg_url)
    try:
        await conn.execute(script)
        async with _open(pg_url) as mem:  # the owner lets the agent's login use the names these tests give
            for agent in AGENT_NAMES:
                await mem.agents.allow(names["memdesk_agent"], agent, "owner")
        urls = {role.removeprefix("memdesk_"): as_role(pg_url, name) for role, name in names.items()}
        yield {"owner": pg_url, **urls, **{f"{k.removeprefix('memdesk_')}_role": v for k, v in names.items()}}
    finally:
        quoted = ", ".join(f'"{name}"' for name in names.values())
        await conn.execute(f"REASSIGN OWNED BY {quoted} TO CURRENT_USER")
        await conn.execute(f"DROP OWNED BY {quoted}")
        for name in reversed(names.values()):
            await conn.execute(f'DROP ROLE IF EXISTS "{name}"')
        await conn.close()


async def fetch(url: str, query: str, *args: object) -> list[tuple[object, ...]]:
    conn = await asyncpg.connect(url)
    try:
        return [tuple(r) for r in await conn.fetch(query, *args)]
    finally:
        await conn.close()


async def refused(url: str, *statements: str) -> None:
    """Each statement, run as the URL's role, is refused by the server for want of privilege."""
    conn = await asyncpg.connect(url)
    try:
        for statement in statements:
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await conn.execute(statement)
    finally:
        await conn.close()


async def seeded(owner_url: str) -> tuple[int, int]:
    """As the owner: an active fact of ana and a pending candidate of hers. (fact id, candidate id)"""
    async with _open(owner_url) as mem:
        fact = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")
        cid = await mem.queue_candidate("ana", "Ana keeps bees", actor="agent")
    return fact.id, cid


async def test_an_agent_proposes_and_reads_facts_and_cannot_make_anything_active(roles: Urls) -> None:
    fact_id, cid = await seeded(roles["owner"])
    before = await fetch(roles["owner"], "SELECT id, status, statement FROM knowledge ORDER BY id")
    async with _open(roles["agent"]) as mem:
        # positive control: the agent's daily work
        outcome = await mem.propose("ana", "Ana plays the cello", actor="agent:mcp")
        assert outcome.candidate_id is not None
        forget = await mem.request_forget("ana", fact_id, "agent:mcp", "she moved")
        assert forget.candidate_id is not None
        found = await mem.retrieve("Lisbon", user_id="ana", top_k=3)
        assert [i.knowledge.statement for i in found.items] == ["Ana lives in Lisbon"]
        # an agent's credentials cannot approve: the engine's own call is refused, nothing changes
        for call in (
            lambda: mem.review.approve(cid, "agent:mcp"),
            lambda: mem.review.approve(outcome.candidate_id or 0, "agent:mcp"),
            lambda: mem.add_knowledge("ana", "Ana owns a boat", actor="agent:mcp"),
            lambda: mem.retract("ana", fact_id, actor="agent:mcp", reason="gone"),
        ):
            with pytest.raises(asyncpg.InsufficientPrivilegeError, match="permission denied"):
                await call()
    assert await fetch(roles["owner"], "SELECT id, status, statement FROM knowledge ORDER BY id") == before
    statuses = await fetch(roles["owner"], "SELECT status, created_by FROM candidates ORDER BY id")
    assert statuses == [("pending", "agent"), ("pending", "agent:mcp"), ("pending", "agent:mcp")]

    # raw SQL with the agent's credentials: no decision, no fact, no audit row but a proposal's
    await refused(
        roles["agent"],
        f"UPDATE candidates SET status = 'approved', decided_by = 'ben' WHERE id = {cid}",
        "INSERT INTO knowledge(user_id, statement, key, status, created_at, created_by)"
        " VALUES ('ana', 'Ana is a pilot', 'ana is a pilot', 'active', 0, 'ben')",
        f"UPDATE knowledge SET status = 'retracted' WHERE id = {fact_id}",
        f"DELETE FROM knowledge WHERE id = {fact_id}",
        # the one column of each it may UPDATE, to lock a row: no new row version passes
        f"UPDATE candidates SET claimed_until = 0 WHERE id = {cid}",
        f"UPDATE knowledge SET expired_at = 0 WHERE id = {fact_id}",
        "INSERT INTO candidates(user_id, statement, key, kind, status, created_at, created_by, decided_by)"
        " VALUES ('ana', 'Ana is a pilot', 'ana is a pilot', 'new', 'approved', 0, 'agent', 'ben')",
        "INSERT INTO audit_log(at, actor, action, user_id, entity, entity_id)"
        f" VALUES (0, 'ben', 'approve', 'ana', 'candidate', {cid})",
        "INSERT INTO audit_log(at, actor, action, user_id, entity, entity_id)"
        f" VALUES (0, 'ben', 'create', 'ana', 'knowledge', {fact_id})",
        "SELECT reason FROM audit_log",
        "SELECT content FROM messages",
    )
    assert await fetch(roles["owner"], "SELECT id, status, statement FROM knowledge ORDER BY id") == before


async def test_every_audit_row_names_the_role_that_wrote_it_whatever_the_client_sent(roles: Urls) -> None:
    _, cid = await seeded(roles["owner"])
    async with _open(roles["agent"]) as mem:
        proposed = await mem.propose("ana", "Ana plays the cello", actor="agent:mcp")
    async with _open(roles["reviewer"]) as mem:
        await mem.review.approve(cid, "ana-reviewer")
    rows = await fetch(roles["owner"], "SELECT actor, action, entity_id, db_role FROM audit_log ORDER BY id")
    assert ("agent:mcp", "queue", proposed.candidate_id, roles["agent_role"]) in rows  # the login, server-set
    assert ("ana-reviewer", "approve", cid, roles["reviewer_role"]) in rows
    owner = await fetch(roles["owner"], "SELECT current_user")
    assert {r[3] for r in rows if r[0] == "support"} == {owner[0][0]}  # the seed, written by the owner

    # a forged db_role is overwritten by the server: by the agent's only row kind, and by a reviewer
    forged = (
        "INSERT INTO audit_log(at, actor, action, user_id, entity, entity_id, db_role)"
        " VALUES (0, 'ben', 'queue', 'ana', 'candidate', $1, $2) RETURNING id"
    )
    for who in ("agent", "reviewer"):
        conn = await asyncpg.connect(roles[who])
        try:
            row_id = await conn.fetchval(forged, cid, roles["reviewer_role"] if who == "agent" else "memdesk_owner")
        finally:
            await conn.close()
        assert await fetch(roles["owner"], "SELECT actor, db_role FROM audit_log WHERE id = $1", row_id) == [
            ("ben", roles[f"{who}_role"])
        ]
    # and nobody, the owner included, changes it afterwards (the append-only trigger)
    conn = await asyncpg.connect(roles["owner"])
    try:
        with pytest.raises(asyncpg.IntegrityConstraintViolationError, match="append-only"):
            await conn.execute("UPDATE audit_log SET db_role = 'someone' WHERE action = 'queue'")
    finally:
        await conn.close()


async def test_a_worker_ingests_and_processes_and_cannot_decide(roles: Urls) -> None:
    fact_id, cid = await seeded(roles["owner"])
    async with _open(roles["worker"]) as mem:
        await mem.add_exchange("bob", "I moved to Porto last week.", "Noted.", at=T0)
        await mem.process()
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await mem.review.approve(cid, "worker")
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await mem.add_knowledge("ana", "Ana owns a boat", actor="worker")
    runs = await fetch(roles["owner"], "SELECT status FROM episodes")
    assert runs and all(r[0] != "pending" for r in runs), runs  # the episode was processed
    assert await fetch(roles["owner"], "SELECT status FROM candidates WHERE id = $1", cid) == [("pending",)]
    await refused(
        roles["worker"],
        f"UPDATE candidates SET status = 'approved' WHERE id = {cid}",
        f"UPDATE knowledge SET status = 'retracted' WHERE id = {fact_id}",
        "UPDATE audit_log SET reason = 'rewritten'",
        "DELETE FROM candidates",
    )


async def test_a_reviewer_decides_and_cannot_rewrite_the_audit_log_or_the_schema(roles: Urls) -> None:
    fact_id, cid = await seeded(roles["owner"])
    # every approval drawn for second review when it is made (the draw is stored with it)
    drawn = MemoryConfig(second_review_rate=1.0)
    async with Memory(roles["reviewer"], embedder=HashingEmbedder(), clock=lambda: T0, config=drawn) as mem:
        approved = await mem.review.approve(cid, "rev")
        await mem.review.undo(cid, "rev")  # undo deletes the fact it created: DELETE is granted
        await mem.review.approve(cid, "rev")
        other = await mem.queue_candidate("ana", "Ana is a pilot", actor="rev")
        await mem.review.reject(other, "rev", "not her", tombstone=True)
        corrected = await mem.correct("ana", fact_id, "Ana lives in Porto", actor="support", reason="typo")
        await mem.retract("ana", corrected.id, actor="support", reason="wrong person")
        [stone] = [t for t in await mem.tombstones("ana") if t.statement == "Ana is a pilot"]
        await mem.lift_tombstone("ana", stone.id, actor="support", reason="it was true after all")
        flagged, bulk = (
            await mem.queue_candidate("ana", "Ana owns a kayak"),
            await mem.queue_candidate("ana", "Ana sails"),
        )
        await mem.team.flag(flagged, "rev", "is this her?")
        await mem.review.approve(flagged, "rev2")
        await mem.review.bulk_approve([bulk], "rev")
        await mem.policies.add("boats", "lead", slots=("hobbies",), agents=("rev",))  # policies live in meta
        await mem.policies.run("boats")
        await mem.team.take_user("ana", "rev")
        found = await mem.retrieve("bees", user_id="ana", top_k=3)
        assert found.items[0].knowledge.statement == "Ana keeps bees"
        assert approved.statement == "Ana keeps bees"
        assert await mem.history("ana")  # the audit log is readable
    async with Memory(
        roles["reviewer"], embedder=HashingEmbedder(), config=MemoryConfig(second_review_rate=1.0)
    ) as mem:
        await mem.team.second_review(flagged, "rev3", approve=False, reason="not her kayak")
    states = await fetch(roles["owner"], "SELECT statement, status FROM knowledge WHERE user_id = 'ana' ORDER BY id")
    assert ("Ana keeps bees", "active") in states and ("Ana sails", "active") in states
    assert ("Ana owns a kayak", "retracted") in states  # overturned on second review
    await refused(
        roles["reviewer"],
        "UPDATE audit_log SET reason = 'rewritten'",
        "DELETE FROM audit_log",
        "TRUNCATE audit_log",
        "DROP TRIGGER audit_log_no_update ON audit_log",
        "DROP TRIGGER audit_log_db_role ON audit_log",
        "ALTER TABLE audit_log DISABLE ROW LEVEL SECURITY",
        "CREATE TABLE sneaky (id int)",
        "DELETE FROM messages",
    )


async def test_the_erasure_role_erases_and_only_the_owner_compacts(roles: Urls) -> None:
    async with _open(roles["reviewer"]) as mem:
        for user in ("ana", "bob"):
            await mem.add_knowledge(user, f"{user} lives in Lisbon", actor="support")
        with pytest.raises(asyncpg.InsufficientPrivilegeError):  # a reviewer cannot redact
            await erase_user(mem, "ana", actor="dpo")
    async with _open(roles["worker"]) as mem:
        await mem.add_exchange("ana", "I keep bees.", "Noted.", at=T0)
    async with _open(roles["erase"]) as mem:
        report = await erase_user(mem, "ana", actor="dpo")
        assert report.knowledge == 1
        assert not report.wal_truncated  # VACUUM FULL needs the tables' owner: reported, not hidden
        assert await mem.knowledge("ana", include_expired=True) == []
    assert await fetch(roles["owner"], "SELECT count(*) FROM messages WHERE user_id = 'ana'") == [(0,)]
    redacted = await fetch(
        roles["owner"],
        "SELECT DISTINCT db_role, redacted_at IS NOT NULL FROM audit_log WHERE actor = 'support' AND user_id = 'ana'",
    )
    assert redacted == [(roles["reviewer_role"], True)]  # the redaction kept who wrote the row
    async with _open(roles["owner"]) as mem:
        report = await erase_user(mem, "bob", actor="dpo")
        assert report.wal_truncated  # the owner's erasure compacts the tables


async def test_settle_vacuums_as_the_owner_and_reports_what_another_role_cannot(roles: Urls) -> None:
    """`Store.settle()` (after `memdesk migrate` or a bulk import) runs VACUUM ANALYZE on memdesk's
    tables; the other roles own none of them, so they get False and a warning, not an error."""
    vacuumed = "SELECT count(*) FROM pg_stat_user_tables WHERE relname = 'knowledge' AND last_vacuum IS NOT NULL"
    async with _open(roles["reviewer"]) as mem:
        await mem.add_knowledge_many("ana", ["Ana lives in Lisbon", "Ana keeps bees"], actor="import")
        assert await mem.store.settle() is False
    assert await fetch(roles["owner"], vacuumed) == [(0,)]
    async with _open(roles["owner"]) as mem:
        assert await mem.store.settle() is True
        assert len((await mem.retrieve("bees", user_id="ana", top_k=5)).items) == 2
    for _ in range(50):  # the statistics collector reports asynchronously
        if await fetch(roles["owner"], vacuumed) == [(1,)]:
            break
        await asyncio.sleep(0.1)
    assert await fetch(roles["owner"], vacuumed) == [(1,)]


async def test_an_agents_proposal_stands_while_policies_run_and_a_reviewer_judges_it(roles: Urls) -> None:
    """Policies need the reviewer's rights: under an agent's login the pass that follows a proposal
    is skipped (the proposal stands, nothing half-written); a reviewer's `policy run` judges it."""
    async with _open(roles["owner"]) as mem:
        await mem.policies.add("routine", "lead", slots=("hobbies",), agents=("agent",))
    async with _open(roles["agent"]) as mem:
        outcome = await mem.propose("ana", "Ana plays the cello", actor="agent:mcp")
        assert outcome.candidate_id is not None
    verdicts = "SELECT count(*) FROM audit_log WHERE action = 'policy_verdict'"
    assert await fetch(roles["owner"], verdicts) == [(0,)]
    async with _open(roles["reviewer"]) as mem:
        assert (await mem.policies.run("routine")).judged == 1
        assert (await mem.review.get(outcome.candidate_id)).status == "pending"  # shadow: decides nothing
    assert await fetch(roles["owner"], verdicts) == [(1,)]


async def test_an_agents_proposal_holding_a_credential_is_refused_with_its_reason(roles: Urls, tmp_path: Path) -> None:
    """Issue 27: under the README's roles, a proposal holding a credential answers why it was not
    taken (the audit row naming the kinds is one the agent role may write), through the engine and
    through MCP, as on SQLite; the agent still cannot write any other audit row of that action."""
    import os

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from tests.test_mcp import MEMDESK, call

    async with _open(roles["agent"]) as mem:
        outcome = await mem.propose("ana", "password: hunter2", actor="agent:mcp")
    assert outcome.candidate_id is None and outcome.credentials_removed == {"password": 1}
    params = StdioServerParameters(
        command=str(MEMDESK),
        args=["mcp", roles["agent"], "--user", "ana"],
        env={**os.environ, "MEMDESK_EMBEDDER": "hashing"},  # the embedder the owner built the store with
    )
    with (tmp_path / "server.err").open("w+") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            text, is_error = await call(
                client, "propose_memory", statement="User's stripe key is sk_live_4eC39HqLyjWDarjtT1zdp7dc"
            )
            plain, plain_error = await call(client, "propose_memory", statement="Ana keeps bees")
    assert not is_error and "credential" in text and "Stripe secret key" in text, text
    assert not plain_error and "Proposed" in plain  # positive control: an ordinary proposal is queued
    rows = await fetch(
        roles["owner"], "SELECT entity_id, after::text FROM audit_log WHERE action = 'credential_removed' ORDER BY id"
    )
    assert [r[0] for r in rows] == [None, None] and all("hunter2" not in r[1] and "sk_live" not in r[1] for r in rows)
    # the policy admits that one row shape only: not a removal "about" a candidate, not another action
    await refused(
        roles["agent"],
        "INSERT INTO audit_log(at, actor, action, user_id, entity, entity_id)"
        " VALUES (0, 'agent', 'credential_removed', 'ana', 'candidate', 1)",
        "INSERT INTO audit_log(at, actor, action, user_id, entity, entity_id)"
        " VALUES (0, 'agent', 'credential_removed', 'ana', 'knowledge', NULL)",
    )


async def test_an_agent_inserts_only_a_bare_proposal(roles: Urls) -> None:
    """Issue 28: with the README's block, the agent's login inserts a pending `proposed` (or
    `retraction`) row with no confidence, no run and no rule; nothing dressed up. (A category is
    admitted: the engine derives it for a special-category proposal, and it only ever sends the
    candidate to a person; issue 27, test below.)"""
    await seeded(roles["owner"])
    columns = "user_id, statement, key, kind, status, created_at, created_by"
    await refused(
        roles["agent"],
        f"INSERT INTO candidates({columns}, confidence) VALUES ('ana', 'Ana is a pilot', 'x', 'new', 'pending', 0,"
        " 'agent', 0.99)",
        f"INSERT INTO candidates({columns}) VALUES ('ana', 'Ana is a pilot', 'x', 'new', 'pending', 0, 'agent')",
        f"INSERT INTO candidates({columns}, confidence) VALUES ('ana', 'Ana is a pilot', 'x', 'proposed', 'pending',"
        " 0, 'agent', 0.99)",
        f"INSERT INTO candidates({columns}, rule) VALUES ('ana', 'Ana is a pilot', 'x', 'proposed', 'pending',"
        " 0, 'agent', 'home.live')",
    )
    # positive control: the bare proposal, by raw SQL and through the engine
    conn = await asyncpg.connect(roles["agent"])
    try:
        await conn.execute(
            f"INSERT INTO candidates({columns}) VALUES ('ana', 'Ana is a pilot', 'x', 'proposed', 'pending', 0,"
            " 'agent')"
        )
    finally:
        await conn.close()
    async with _open(roles["agent"]) as mem:
        assert (await mem.propose("ana", "Ana plays the cello", actor="agent:mcp")).candidate_id is not None
    kinds = await fetch(roles["owner"], "SELECT kind, confidence, category FROM candidates WHERE created_by != 'agent'")
    assert kinds == [("proposed", None, None)]


async def test_no_role_but_the_owner_makes_a_fact_active_without_an_audit_row(roles: Urls) -> None:
    """Issue 28: a reviewer's login may write facts (its grants must allow the engine's work), but
    a fact made active with no audit row of its user in the same transaction is refused at commit."""
    fact_id, _ = await seeded(roles["owner"])
    insert = (
        "INSERT INTO knowledge(user_id, statement, key, status, created_at, created_by)"
        " VALUES ('ana', $1, $1, 'active', 0, 'ben') RETURNING id"
    )
    audit = (
        "INSERT INTO audit_log(at, actor, action, user_id, entity, entity_id)"
        " VALUES (0, 'ben', 'create', 'ana', 'knowledge', $1)"
    )
    conn = await asyncpg.connect(roles["reviewer"])
    try:
        with pytest.raises(asyncpg.IntegrityConstraintViolationError, match="without an audit row"):
            async with conn.transaction():
                await conn.fetchval(insert, "Ana is a pilot")
        # an audit row of another user does not count
        with pytest.raises(asyncpg.IntegrityConstraintViolationError, match="without an audit row"):
            async with conn.transaction():
                kid = await conn.fetchval(insert, "Ana is a diver")
                await conn.execute(audit.replace("'ana'", "'bob'"), kid)
        # reopening a retracted fact is making it active too
        owner = await asyncpg.connect(roles["owner"])
        try:
            await owner.execute("UPDATE knowledge SET status = 'retracted', expired_at = 1 WHERE id = $1", fact_id)
        finally:
            await owner.close()
        with pytest.raises(asyncpg.IntegrityConstraintViolationError, match="without an audit row"):
            await conn.execute("UPDATE knowledge SET status = 'active', expired_at = NULL WHERE id = $1", fact_id)
        # positive control: the same write with its audit row in the same transaction (audit row second:
        # the check runs at commit)
        async with conn.transaction():
            kid = await conn.fetchval(insert, "Ana is a sailor")
            await conn.execute(audit, kid)
    finally:
        await conn.close()
    facts = await fetch(roles["owner"], "SELECT statement, status FROM knowledge ORDER BY id")
    assert facts == [("Ana lives in Lisbon", "retracted"), ("Ana is a sailor", "active")]
    # the owner (migrations, copies) is exempt
    owner = await asyncpg.connect(roles["owner"])
    try:
        await owner.fetchval(insert, "Ana is a pilot")
    finally:
        await owner.close()
    # and the engine's own work as a reviewer passes: an approval writes its audit row
    async with _open(roles["reviewer"]) as mem:
        cid = await mem.queue_candidate("ana", "Ana keeps goats", actor="agent")
        await mem.review.approve(cid, "ana-reviewer")
    assert ("Ana keeps goats", "active") in await fetch(roles["owner"], "SELECT statement, status FROM knowledge")


async def test_an_agents_special_category_proposal_is_queued(roles: Urls) -> None:
    """An agent's proposal about a special category is queued under the agent's login (the engine
    writes the category it derives; a person must see it) and stays special for every policy."""
    async with _open(roles["agent"]) as mem:
        outcome = await mem.propose("ana", "Ana takes sertraline", actor="agent:mcp")
    assert outcome.candidate_id is not None
    rows = await fetch(roles["owner"], "SELECT category FROM candidates WHERE id = $1", outcome.candidate_id)
    assert rows == [("health",)]

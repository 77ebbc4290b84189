"""The database holds an agent to its name (issue 28, item 5; schema migration 10 on PostgreSQL).

Review policies trust agents by name (`--agents bot-a`, read from a proposal's `created_by`). With
the README's GRANT block applied as written (the `roles` fixture of tests/test_pg_roles.py), the
agent's login may insert candidates; these tests show it cannot insert one under another, trusted
agent's name (raw SQL or the engine), so no policy approves a forged proposal, while the same
login under its own name, or a name the owner allowed it, proposes and is approved as usual (the
positive controls). Only the owner keeps the map of logins to names (`memdesk agents`).
"""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from click.testing import CliRunner

from engine import HashingEmbedder, Memory, MemoryConfig
from engine.errors import AgentIdentityError, UserInputError
from engine.text import value_key
from review_app.cli import main
from tests.test_pg_roles import T0, Urls, fetch, roles  # noqa: F401  (roles: the fixture)

CONFIG = MemoryConfig(policy_min_decisions=10, second_review_rate=0.0)
COLUMNS = "user_id, statement, key, kind, status, created_at, created_by"


def _open(url: str) -> Memory:
    return Memory(url, embedder=HashingEmbedder(), clock=lambda: T0, config=CONFIG)


async def raw_proposal(url: str, user: str, statement: str, created_by: str) -> int:
    """A bare `proposed` row, as the README's row policy admits it for the agent, by plain SQL."""
    conn = await asyncpg.connect(url)
    try:
        cid: int = await conn.fetchval(
            f"INSERT INTO candidates({COLUMNS}) VALUES ($1, $2, $3, 'proposed', 'pending', 0, $4) RETURNING id",
            user,
            statement,
            value_key(statement),
            created_by,
        )
        return cid
    finally:
        await conn.close()


async def trusted_policy(urls: Urls, agents: tuple[str, ...]) -> None:
    """Policy `homes` (slot home) trusting `agents`, enabled on its record: people approved ten
    proposals of each agent (proposed by the owner, who may name anyone)."""
    async with _open(urls["owner"]) as mem:
        await mem.policies.add("homes", "lead", slots=("home",), agents=agents, target=0.7)
        ids = [
            (await mem.propose(f"earn-{agent}-{i}", f"User lives in Town{i}", actor=agent)).candidate_id
            for agent in agents
            for i in range(10)
        ]
    async with _open(urls["reviewer"]) as mem:
        for cid in ids:
            assert cid is not None
            await mem.review.approve(cid, "ana")
        await mem.policies.enable("homes", "lead")


async def counts(urls: Urls) -> list[tuple[object, ...]]:
    return await fetch(urls["owner"], "SELECT (SELECT count(*) FROM candidates), (SELECT count(*) FROM audit_log)")


async def test_an_agent_login_cannot_forge_a_trusted_agents_proposal(roles: Urls) -> None:  # noqa: F811
    login = roles["agent_role"]
    await trusted_policy(roles, ("bot-a", login))
    before = await counts(roles)
    # raw SQL under the trusted agent's name: refused by the database, nothing queued
    with pytest.raises(asyncpg.PostgresError, match=f'login "{login}" may not propose as agent "bot-a"') as caught:
        await raw_proposal(roles["agent"], "ana", "User lives in Leeds", "bot-a")
    assert caught.value.sqlstate == "MDA01"
    assert await counts(roles) == before
    async with _open(roles["reviewer"]) as mem:
        assert (await mem.policies.run("homes")).approved == []
    assert await fetch(roles["owner"], "SELECT count(*) FROM knowledge WHERE statement = 'User lives in Leeds'") == [
        (0,)
    ]
    # positive control: the same login under its own name, and the policy trusting that name approves
    cid = await raw_proposal(roles["agent"], "ana", "User lives in York", login)
    async with _open(roles["reviewer"]) as mem:
        assert (await mem.policies.run("homes")).approved == [cid]
        assert (await mem.review.get(cid)).status == "approved"


async def test_a_worker_login_cannot_forge_an_agents_proposal_either(roles: Urls) -> None:  # noqa: F811
    with pytest.raises(asyncpg.PostgresError, match="may not propose as agent") as caught:
        await raw_proposal(roles["worker"], "ana", "User lives in Leeds", "bot-a")
    assert caught.value.sqlstate == "MDA01"
    # positive control: its own name passes the trigger (and an extraction's rows, with a run, are the
    # worker's daily work: tests/test_pg_roles.py)
    assert await raw_proposal(roles["worker"], "ana", "User lives in York", roles["worker_role"]) > 0
    assert await fetch(roles["owner"], "SELECT created_by FROM candidates") == [(roles["worker_role"],)]


async def test_propose_names_only_an_agent_the_login_may_be(roles: Urls) -> None:  # noqa: F811
    login = roles["agent_role"]
    async with _open(roles["owner"]) as mem:
        fact = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")
    before = await counts(roles)
    async with _open(roles["agent"]) as mem:
        for call in (
            lambda: mem.propose("ana", "Ana enjoys hiking", actor="bot-a"),
            lambda: mem.propose("ana", "Ana's password is hunter2", actor="bot-a"),  # before the credential's row
            lambda: mem.request_forget("ana", fact.id, "bot-a", "she moved"),
        ):
            with pytest.raises(AgentIdentityError, match=f"memdesk agents allow DB {login} bot-a"):
                await call()
        # an engine call with no check of its own meets the database's: the same error, rolled back
        with pytest.raises(AgentIdentityError, match=f'login "{login}" may not propose as agent "bot-a"'):
            await mem.queue_candidate("ana", "Ana enjoys hiking", kind="proposed", confidence=None, actor="bot-a")
    assert await counts(roles) == before  # nothing changed, not even an audit row
    # positive controls: its own name without any set-up; bot-a once the owner allows it
    async with _open(roles["agent"]) as mem:
        assert (await mem.propose("ana", "Ana enjoys hiking", actor=login)).candidate_id is not None
    async with _open(roles["owner"]) as mem:
        assert await mem.agents.allow(login, "bot-a", "dba") is True
        assert await mem.agents.allow(login, "bot-a", "dba") is False  # already: nothing written
    async with _open(roles["agent"]) as mem:
        assert (await mem.propose("ana", "Ana plays chess", actor="bot-a")).candidate_id is not None
        assert (await mem.request_forget("ana", fact.id, "bot-a", "she moved")).candidate_id is not None
    rows = await fetch(roles["owner"], "SELECT created_by FROM candidates ORDER BY id DESC LIMIT 3")
    assert rows == [("bot-a",), ("bot-a",), (login,)]
    # revoked: refused again, by the engine and by the database
    async with _open(roles["owner"]) as mem:
        assert await mem.agents.revoke(login, "bot-a", "dba") is True
    async with _open(roles["agent"]) as mem:
        with pytest.raises(AgentIdentityError):
            await mem.propose("ana", "Ana enjoys sailing", actor="bot-a")
    with pytest.raises(asyncpg.PostgresError, match="may not propose as agent"):
        await raw_proposal(roles["agent"], "ana", "Ana enjoys sailing", "bot-a")
    audit = await fetch(
        roles["owner"],
        "SELECT action, actor, db_role FROM audit_log WHERE entity = 'agent_login' AND actor = 'dba' ORDER BY id",
    )
    owner = (await fetch(roles["owner"], "SELECT session_user::text"))[0][0]
    assert audit == [("agent_allow", "dba", owner), ("agent_revoke", "dba", owner)]


async def test_only_the_owner_keeps_the_map(roles: Urls) -> None:  # noqa: F811
    login = roles["agent_role"]
    for who in ("reviewer", "agent", "worker", "erase"):
        async with _open(roles[who]) as mem:
            with pytest.raises(UserInputError, match="only the database's owner"):
                await mem.agents.allow(login, "bot-a", who)
            with pytest.raises(UserInputError, match="only the database's owner"):
                await mem.agents.list()
    # nor by raw SQL, nor can a non-owner rename a proposal's author after the fact
    for who in ("reviewer", "agent", "worker"):
        conn = await asyncpg.connect(roles[who])
        try:
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await conn.execute(
                    "INSERT INTO agent_logins(login, agent, granted_by, granted_at) VALUES ($1, 'bot-a', 'x', 0)", login
                )
        finally:
            await conn.close()
    assert await fetch(roles["owner"], "SELECT count(*) FROM agent_logins WHERE agent = 'bot-a'") == [(0,)]
    # positive control: the owner allows, lists and revokes; a typo's login is refused
    async with _open(roles["owner"]) as mem:
        assert await mem.agents.allow(login, "bot-a", "dba")
        assert (login, "bot-a", "dba") in [(a.login, a.agent, a.granted_by) for a in await mem.agents.list()]
        with pytest.raises(UserInputError, match="there is no role"):
            await mem.agents.allow(login + "_typo", "bot-a", "dba")
        with pytest.raises(UserInputError, match="cannot log in"):
            await mem.agents.allow(roles["base_role"], "bot-a", "dba")
        with pytest.raises(UserInputError, match="review policy"):
            await mem.agents.allow(login, "policy:homes", "dba")


async def test_a_reviewer_is_not_bound_it_decides_anyway(roles: Urls) -> None:  # noqa: F811
    """A login that may write facts may name anyone (it could approve the candidate itself), and no
    login but such a one or the owner renames a candidate's author afterwards."""
    cid = await raw_proposal(roles["reviewer"], "ana", "User lives in Leeds", "bot-a")
    conn = await asyncpg.connect(roles["worker"])
    try:  # the worker has no UPDATE on candidates at all: the grant refuses first
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.execute("UPDATE candidates SET created_by = 'bot-b' WHERE id = $1", cid)
    finally:
        await conn.close()
    # granted one anyway (not the README's block), the trigger still refuses renaming the author or
    # the run, and lets any other column change
    owner = await asyncpg.connect(roles["owner"])
    try:
        await owner.execute(f'GRANT UPDATE ON candidates TO "{roles["worker_role"]}"')
    finally:
        await owner.close()
    conn = await asyncpg.connect(roles["worker"])
    try:
        for change in ("created_by = 'bot-b'", "run_id = NULL, created_by = 'bot-b'"):
            with pytest.raises(asyncpg.PostgresError, match="may not change who proposed") as caught:
                await conn.execute(f"UPDATE candidates SET {change} WHERE id = $1", cid)
            assert caught.value.sqlstate == "MDA01"
        await conn.execute("UPDATE candidates SET reason = 'noted' WHERE id = $1", cid)
    finally:
        await conn.close()
    conn = await asyncpg.connect(roles["reviewer"])
    try:
        await conn.execute("UPDATE candidates SET created_by = 'bot-b' WHERE id = $1", cid)
    finally:
        await conn.close()
    assert await fetch(roles["owner"], "SELECT created_by FROM candidates WHERE id = $1", cid) == [("bot-b",)]


def test_the_agents_commands(roles: Urls, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    monkeypatch.setenv("MEMDESK_EMBEDDER", "hashing")
    login = roles["agent_role"]
    runner = CliRunner()
    owner = roles["owner"]
    result = runner.invoke(main, ["agents", "allow", roles["reviewer"], login, "bot-a", "--actor", "rev"])
    assert result.exit_code == 2 and "only the database's owner" in result.output, result.output
    result = runner.invoke(main, ["agents", "list", owner])
    assert result.exit_code == 0 and f"{login} -> agent:mcp  (allowed by owner" in result.output, result.output
    assert "bot-a" not in result.output
    result = runner.invoke(main, ["agents", "allow", owner, login, "bot-a", "--actor", "dba"])
    assert result.exit_code == 0 and f"Login {login} may now propose as agent bot-a" in result.output, result.output
    result = runner.invoke(main, ["agents", "list", owner, "--json"])
    assert result.exit_code == 0 and '"agent": "bot-a"' in result.output and '"granted_by": "dba"' in result.output
    result = runner.invoke(main, ["agents", "revoke", owner, login, "bot-a", "--actor", "dba"])
    assert result.exit_code == 0 and "may no longer propose" in result.output
    result = runner.invoke(main, ["agents", "revoke", owner, login, "bot-a", "--actor", "dba"])
    assert result.exit_code == 2 and "was not allowed" in result.output
    # an MCP server for an agent its login may not be is refused at start (its positive control, a
    # server for a name the login may use, is tests/test_pg_roles.py's credential test)
    result = runner.invoke(main, ["mcp", roles["agent"], "--user", "ana", "--agent", "bot-a"])
    assert result.exit_code == 2 and f"memdesk agents allow DB {login} bot-a" in result.output, result.output


def test_sqlite_has_no_logins_and_says_so(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whoever opens a SQLite file is its owner: no map to keep, and no pretend check on names."""
    monkeypatch.setenv("MEMDESK_EMBEDDER", "hashing")
    db = str(tmp_path_factory.mktemp("agents") / "m.db")

    async def propose() -> int | None:
        async with Memory(db, embedder=HashingEmbedder(), clock=lambda: T0) as mem:
            return (await mem.propose("ana", "Ana enjoys hiking", actor="bot-a")).candidate_id

    assert asyncio.run(propose()) is not None  # any name: the file's opener could write it anyway
    result = CliRunner().invoke(main, ["agents", "allow", db, "bot", "bot-a", "--actor", "dba"])
    assert result.exit_code == 2 and "whoever opens the file is its owner" in result.output, result.output

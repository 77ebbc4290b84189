"""`memdesk mcp` driven by the real MCP client over stdio, as an agent host would drive it.

What must hold: the user is the server's (bound by --user at start) and no tool takes one; reads see
only that user's APPROVED facts; the agent's writes are requests that a person decides in the queue.
Every must-not (another user's fact absent, a proposal not searchable, a forget request not yet
effective, another user's id not found) sits beside the positive control that makes it able to fail.
The test approves through `engine.Memory(...).review`, on the same store, while the server runs.
Every test runs on both backends (`memdesk mcp` is given the path or the postgresql:// URL).
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from engine import Memory

MEMDESK = Path(sys.executable).parent / "memdesk"
TOOLS = {"search_memory", "list_memories", "propose_memory", "forget_memory"}


@pytest.fixture
async def db(store_target: str) -> str:
    """A database holding the same fact for u1 and u2, and one fact that only u2 has."""
    path = store_target
    async with Memory(path) as mem:
        await mem.add_knowledge("u1", "Lives in Porto near the river", actor="seed")
        await mem.add_knowledge("u2", "Lives in Porto near the river", actor="seed")
        await mem.add_knowledge("u2", "Keeps three quokkas in Tarnwick", actor="seed")
    return path


@asynccontextmanager
async def session(db: Path | str, user: str, errlog: Any) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=str(MEMDESK), args=["mcp", str(db), "--user", user])
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        yield client


@pytest.fixture
def errlog(tmp_path: Path) -> Any:
    """The server's stderr, in a real file (the subprocess needs a file descriptor, and a failure
    can then show what the server said)."""
    with (tmp_path / "server.err").open("w+") as fh:
        yield fh


async def call(client: ClientSession, tool: str, **arguments: Any) -> tuple[str, bool]:
    result = await client.call_tool(tool, arguments)
    text = "\n".join(getattr(block, "text", "") for block in result.content)
    return text, bool(result.is_error)


def _keys(schema: Any) -> set[str]:
    """Every property name anywhere in a JSON schema (nested objects and $defs included)."""
    found: set[str] = set()
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                found |= set(value)
            found |= _keys(value)
    elif isinstance(schema, list):
        for value in schema:
            found |= _keys(value)
    return found


async def fact_ids(db: str, user: str) -> dict[str, int]:
    async with Memory(db) as mem:
        return {k.statement: k.id for k in await mem.knowledge(user, include_expired=True)}


async def test_no_tool_takes_a_user(db: str, errlog: Any) -> None:
    async with session(db, "u1", errlog) as client:
        tools = (await client.list_tools()).tools
    assert {t.name for t in tools} == TOOLS
    params = {t.name: _keys(t.input_schema) for t in tools}
    # positive control: the schemas are read (each tool's real parameters are there)
    assert params == {
        "search_memory": {"query", "top_k"},
        "list_memories": {"include_expired"},
        "propose_memory": {"statement"},
        "forget_memory": {"knowledge_id", "reason"},
    }
    assert not [name for keys in params.values() for name in keys if "user" in name.lower()]


async def test_reads_see_only_the_bound_users_approved_facts(db: str, errlog: Any) -> None:
    ids_u1, ids_u2 = await fact_ids(db, "u1"), await fact_ids(db, "u2")
    shared = "Lives in Porto near the river"
    async with session(db, "u1", errlog) as client:
        porto, err = await call(client, "search_memory", query="Porto river", top_k=10)
        assert not err
        quokkas, _ = await call(client, "search_memory", query="quokkas Tarnwick", top_k=10)
        listed, _ = await call(client, "list_memories", include_expired=True)
    # u1's fact found, exactly once: u2's identical statement is not returned beside it
    assert porto.count(shared) == 1 and porto.startswith("Facts about the user")
    # u2's own fact is invisible to u1's server (the vector arm still ranks u1's only fact)...
    assert "quokka" not in quokkas.lower() and "Tarnwick" not in quokkas
    # ...and the listing names u1's id, not u2's id for the same statement
    assert f"[{ids_u1[shared]}] {shared}" in listed
    assert f"[{ids_u2[shared]}]" not in listed and "quokka" not in listed.lower()
    # control: u2's server does see u2's fact
    async with session(db, "u2", errlog) as client:
        theirs, _ = await call(client, "search_memory", query="quokkas Tarnwick", top_k=10)
    assert "Keeps three quokkas in Tarnwick" in theirs


async def test_a_proposed_memory_is_searchable_only_after_approval(db: str, errlog: Any) -> None:
    statement = "Plays the bassoon in an amateur orchestra"
    async with session(db, "u1", errlog) as client:
        answer, err = await call(client, "propose_memory", statement=statement)
        assert not err and "reviewer" in answer
        before, _ = await call(client, "search_memory", query="bassoon orchestra", top_k=5)
        assert statement not in before
        async with Memory(db) as mem:
            pending = await mem.review.pending("u1")
            assert [(c.statement, c.kind) for c in pending] == [(statement, "proposed")]
            assert await mem.review.pending("u2") == []
            assert statement not in {k.statement for k in await mem.knowledge("u1")}  # no direct write
            await mem.review.approve(pending[0].id, reviewer="ana")
        after, _ = await call(client, "search_memory", query="bassoon orchestra", top_k=5)
        assert statement in after
        again, err = await call(client, "propose_memory", statement=statement)
    assert not err and "already" in again  # a duplicate proposal is not queued twice


async def test_a_forget_request_retracts_only_after_approval(db: str, errlog: Any) -> None:
    shared = "Lives in Porto near the river"
    fact_id = (await fact_ids(db, "u1"))[shared]
    async with session(db, "u1", errlog) as client:
        answer, err = await call(client, "forget_memory", knowledge_id=fact_id, reason="moved away")
        assert not err and "reviewer" in answer
        still, _ = await call(client, "search_memory", query="Porto river", top_k=5)
        assert shared in still  # a request is not a deletion
        async with Memory(db) as mem:
            [request] = await mem.review.pending("u1")
            assert (request.kind, request.supersedes_id, request.reason) == ("retraction", fact_id, "moved away")
            await mem.review.approve(request.id, reviewer="ana")
        gone, _ = await call(client, "search_memory", query="Porto river", top_k=5)
        listed, _ = await call(client, "list_memories", include_expired=True)
    assert shared not in gone
    assert f"[{fact_id}] {shared}" in listed and "[retracted]" in listed
    # the other user's identical fact is untouched
    async with Memory(db) as mem:
        assert [k.status for k in await mem.knowledge("u2", include_expired=True)] == ["active", "active"]


async def test_another_users_id_reads_as_not_found_and_changes_nothing(db: str, errlog: Any) -> None:
    theirs = (await fact_ids(db, "u2"))["Keeps three quokkas in Tarnwick"]
    async with session(db, "u1", errlog) as client:
        answer, err = await call(client, "forget_memory", knowledge_id=theirs, reason="not mine")
        missing, missing_err = await call(client, "forget_memory", knowledge_id=999_999, reason="nothing")
        # control: the same call on the bound user's own fact is accepted
        own = (await fact_ids(db, "u1"))["Lives in Porto near the river"]
        ok, ok_err = await call(client, "forget_memory", knowledge_id=own, reason="moved")
    assert err and "not found" in answer
    # another user's id answers exactly like an id that does not exist
    assert answer.replace(str(theirs), "ID") == missing.replace("999999", "ID") and missing_err
    assert not ok_err and "Requested" in ok
    async with Memory(db) as mem:
        assert await mem.review.pending("u2") == []
        assert [k.status for k in await mem.knowledge("u2", include_expired=True)] == ["active", "active"]
        assert [c.supersedes_id for c in await mem.review.pending("u1")] == [own]


async def test_the_server_refuses_a_missing_database(tmp_path: Path) -> None:
    import subprocess

    missing = tmp_path / "absent.db"
    done = subprocess.run(
        [str(MEMDESK), "mcp", str(missing), "--user", "u1"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert done.returncode == 2 and "no such database" in done.stderr
    assert not missing.exists()


async def test_the_database_may_come_from_the_environment(db: str, errlog: Any) -> None:
    """$MEMDESK_DB instead of argv (a URL's password stays out of `ps`); without either, one line
    and exit 2."""
    import subprocess

    params = StdioServerParameters(
        command=str(MEMDESK), args=["mcp", "--user", "u2"], env={**os.environ, "MEMDESK_DB": str(db)}
    )
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        text, is_error = await call(client, "search_memory", query="quokkas", top_k=3)
    assert not is_error and "Keeps three quokkas in Tarnwick" in text
    env = {k: v for k, v in os.environ.items() if k != "MEMDESK_DB"}
    done = subprocess.run(
        [str(MEMDESK), "mcp", "--user", "u2"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env={**env, "NO_COLOR": "1"},
    )
    assert done.returncode == 2 and "set $MEMDESK_DB" in done.stderr


async def test_agent_writes_follow_the_librarys_rules(db: str, errlog: Any) -> None:
    """Issue 9: the server repeated the gates in its own code (three transactions) and gave
    proposals confidence 1.00. Now each tool is one engine call: the same gates, limits and
    sources as `Memory.propose` / `Memory.request_forget`."""
    async with Memory(db) as mem:
        rejected = await mem.queue_candidate("u1", "Is allergic to peanuts")
        await mem.review.reject(rejected, reviewer="ana", reason="her brother is")
    own = (await fact_ids(db, "u1"))["Lives in Porto near the river"]
    async with session(db, "u1", errlog) as client:
        tomb, tomb_err = await call(client, "propose_memory", statement="is allergic to PEANUTS")
        ok, ok_err = await call(client, "propose_memory", statement="Is allergic to walnuts")  # control
        dup, dup_err = await call(client, "propose_memory", statement="lives in porto, near the river")
        huge, huge_err = await call(client, "propose_memory", statement="x" * 1001)
        first, _ = await call(client, "forget_memory", knowledge_id=own, reason="moved")
        again, again_err = await call(client, "forget_memory", knowledge_id=own, reason="moved")
    assert tomb_err and "already rejected" in tomb
    assert not ok_err and "Proposed" in ok
    assert not dup_err and f"an approved memory [{own}]" in dup
    assert huge_err and "max_statement_chars" in huge
    assert "Requested" in first and not again_err and "already awaiting review" in again
    async with Memory(db) as mem:
        pending = await mem.review.pending("u1")
    assert [(c.statement, c.kind, c.confidence, c.created_by) for c in pending] == [
        ("Is allergic to walnuts", "proposed", None, "mcp-agent"),
        ("Lives in Porto near the river", "retraction", None, "mcp-agent"),
    ]


async def test_a_huge_id_is_a_clean_tool_error(db: str, errlog: Any) -> None:
    """forget_memory(2**70) used to raise OverflowError inside the driver and log a traceback."""
    async with session(db, "u1", errlog) as client:
        answer, err = await call(client, "forget_memory", knowledge_id=2**70, reason="gone")
        alive, _ = await call(client, "list_memories")
    assert err and answer.endswith(f"not found: there is no memory {2**70}")
    assert "Lives in Porto" in alive  # the server is still serving
    errlog.seek(0)
    assert "Traceback" not in errlog.read()


async def test_an_over_long_query_is_refused_naming_the_limit(db: str, errlog: Any) -> None:
    """An 8 MB search_memory query is refused (bounded cost), and the agent is told why: the engine's
    UserInputError used to escape the tool, so the client saw only "Error executing tool
    search_memory", with no word of the limit it hit."""
    from engine import MemoryConfig

    limit = MemoryConfig().max_query_chars
    async with session(db, "u1", errlog) as client:
        at_limit, at_err = await call(client, "search_memory", query="Porto river " + "x" * (limit - 12))  # control
        over, over_err = await call(client, "search_memory", query="Porto river " + "x" * (limit - 11))
    assert not at_err and "Lives in Porto" in at_limit
    assert over_err and "max_query_chars" in over and f"{limit:,}" in over


async def test_the_pending_proposal_limit_is_refused_clearly(db: str, errlog: Any) -> None:
    from engine import MemoryConfig

    limit = MemoryConfig().max_pending_proposals_per_user
    async with Memory(db) as mem:
        for n in range(limit):
            await mem.propose("u1", f"Collects stamp series {n}", "mcp-agent")
    async with session(db, "u1", errlog) as client:
        refused, refused_err = await call(client, "propose_memory", statement="Plays the harp")
    async with session(db, "u2", errlog) as client:
        other, other_err = await call(client, "propose_memory", statement="Plays the harp")  # per user
    assert refused_err and "max_pending_proposals_per_user" in refused
    assert not other_err and "Proposed" in other

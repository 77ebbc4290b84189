"""`memdesk mcp --agent NAME` and the server's version (issue 18, failure 9), over real stdio.

Before: every proposal was recorded as "mcp-agent", and `initialize` reported an empty version."""

from __future__ import annotations

import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from mcp import ClientSession, StdioServerParameters, stdio_client

from engine import Memory
from review_app.cli import main

MEMDESK = Path(sys.executable).parent / "memdesk"


async def propose_as(db: str, agent: list[str], tmp_path: Path, statement: str) -> Any:
    params = StdioServerParameters(command=str(MEMDESK), args=["mcp", db, "--user", "u1", *agent])
    with (tmp_path / "server.err").open("w+") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as client:
            hello = await client.initialize()
            result = await client.call_tool("propose_memory", {"statement": statement})
            assert not result.is_error, result.content
    return hello


async def test_the_agent_named_at_start_is_the_proposer_and_the_version_is_reported(
    store_target: str, tmp_path: Path
) -> None:
    async with Memory(store_target) as mem:
        await mem.add_knowledge("u1", "Lives in Porto", actor="seed")
    hello = await propose_as(store_target, ["--agent", "claude-desktop"], tmp_path, "Is allergic to walnuts")
    await propose_as(store_target, [], tmp_path, "Keeps bees on the roof")  # control: the default name
    assert hello.server_info.name == "memdesk"
    assert hello.server_info.version == version("memdesk") != ""
    async with Memory(store_target) as mem:
        pending = {c.statement: c.created_by for c in await mem.review.pending("u1")}
    assert pending == {"Is allergic to walnuts": "claude-desktop", "Keeps bees on the roof": "mcp-agent"}


def test_an_agent_name_that_would_be_unsafe_in_the_audit_log_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    db.touch()
    result = CliRunner().invoke(main, ["mcp", str(db), "--user", "u1", "--agent", "a b\x1b[31m"])
    assert result.exit_code == 2 and "not allowed" in result.output and "Traceback" not in result.output

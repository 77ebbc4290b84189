"""MCP says truthfully what became of a proposal (issue 28): "accepted" when a review policy
approved it as it was queued, "queued" when it waits for a person; and nothing it returns tells the
agent whether a person will second-review it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine import Memory
from review_app.mcp_server import AGENT_ACTOR
from tests.test_mcp import call, errlog, session

__all__ = ["errlog"]  # the fixture, used by name


async def test_propose_memory_says_accepted_or_queued(tmp_path: Path, errlog: Any) -> None:
    db = tmp_path / "m.db"
    async with Memory(db) as mem:  # the product's 30 decisions per scope, as the MCP server reads them
        await mem.policies.add("homes", "lead", slots=("home",), agents=(AGENT_ACTOR,), target=0.7)
        for i in range(30):
            outcome = await mem.propose(f"earn{i}", f"User lives in Earned{i}", actor=AGENT_ACTOR)
            await mem.review.approve(outcome.candidate_id or 0, "ana")
        await mem.policies.enable("homes", "lead")
    async with session(db, "u1", errlog) as client:
        accepted, err = await call(client, "propose_memory", statement="User lives in Porto")
        assert not err and accepted.startswith("Proposed and accepted") and "policy:homes" in accepted
        queued, err = await call(client, "propose_memory", statement="User plays the cello")
        assert not err and "queued: a reviewer must approve it" in queued
    for text in (accepted, queued):
        assert "sampl" not in text.lower() and "second review" not in text.lower()
    async with Memory(db) as mem:
        assert [k.statement for k in await mem.knowledge("u1")] == ["User lives in Porto"]
        assert [c.statement for c in await mem.review.pending(user_id="u1")] == ["User plays the cello"]

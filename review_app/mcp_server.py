"""`memdesk mcp DB --user U`: an MCP server (stdio) that gives an agent one user's memory.

The scope key belongs to the server, not to the model: the user is fixed when the process starts
and NO tool takes a user_id, so an agent cannot read or change another user's memory by naming
them (memv's server let the model fill the user_id argument, so isolation held only against a
model that did not try). An id of another user's fact reads exactly like an id that does not exist.

The agent cannot write either: `propose_memory` and `forget_memory` only put a candidate in the
pending queue (kinds `proposed` and `retraction`), and a person decides in the review workstation.
Both are one engine call each (`Memory.propose`, `Memory.request_forget`), one transaction with the
pipeline's own gates: this module holds no rule of its own, only the wording of the answers.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Annotated

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from engine import Memory
from engine.errors import MemdeskError, NotFoundError, TombstonedError, UserInputError

AGENT_ACTOR = "mcp-agent"
"""The proposer recorded when `memdesk mcp` is not given --agent NAME."""


def package_version() -> str:
    """memdesk's own version, which the server reports to its client in `initialize`."""
    try:
        return version("memdesk")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


INSTRUCTIONS = (
    "Long-term memory about the user you are talking to. search_memory and list_memories read facts a "
    "human reviewer approved. propose_memory and forget_memory only file requests: a reviewer decides, so "
    "a proposed memory is not searchable until it is approved, and a forgotten one stays until then."
)


def build_server(mem: Memory, user_id: str, agent: str = AGENT_ACTOR) -> MCPServer:
    """An MCPServer whose four tools all act on `user_id` and only on it; proposals and forget
    requests are recorded as `agent`'s (set by whoever starts the server, never by the model)."""
    if not user_id or not user_id.strip():
        raise UserInputError("the MCP server needs a user (--user)")
    server: MCPServer = MCPServer("memdesk", instructions=INSTRUCTIONS, log_level="WARNING", version=package_version())

    @server.tool(structured_output=False)
    async def search_memory(
        query: Annotated[str, Field(description="What to look for, in plain words.")],
        top_k: Annotated[int, Field(ge=1, le=100, description="Most facts to return.")] = 10,
    ) -> str:
        """Search the user's approved memories; returns a block ready for a system prompt, each fact
        with the dates it is valid for."""
        if not query.strip():
            raise ToolError("the query is empty")
        try:
            result = await mem.retrieve(query, user_id=user_id, top_k=top_k)
        except MemdeskError as exc:  # an over-long query: the agent must learn which limit it hit
            raise ToolError(str(exc)) from None
        return result.to_prompt()

    @server.tool(structured_output=False)
    async def list_memories(
        include_expired: Annotated[
            bool, Field(description="Also list facts that were superseded or retracted.")
        ] = False,
    ) -> str:
        """List the user's approved memories with their ids (an id is what forget_memory takes)."""
        facts = await mem.knowledge(user_id, include_expired=include_expired)
        if not facts:
            return "No memories are stored for this user."
        lines = []
        for k in facts:
            status = "" if k.status == "active" else f" [{k.label}]"  # corrected, retracted or superseded
            lines.append(f"[{k.id}] {k.statement} ({k.interval_text()}){status}")
        return "\n".join(lines)

    @server.tool(structured_output=False)
    async def propose_memory(
        statement: Annotated[str, Field(description="One fact about the user, in the third person.")],
    ) -> str:
        """Propose a new memory about the user. It goes to a human reviewer's queue and becomes
        searchable only once approved."""
        try:
            outcome = await mem.propose(user_id, statement, agent)
        except TombstonedError:
            raise ToolError("refused: a reviewer already rejected this memory for this user") from None
        except MemdeskError as exc:
            raise ToolError(str(exc)) from None
        if outcome.credentials_removed:
            kinds = ", ".join(sorted(outcome.credentials_removed))
            return f"Not proposed: it holds a credential ({kinds}); credentials are never stored."
        if outcome.duplicate_of is not None:
            entity, eid = outcome.duplicate_of
            where = f"an approved memory [{eid}]" if entity == "knowledge" else "a proposal awaiting review"
            return f"Not proposed: this is already {where}."
        if outcome.accepted_by is not None:
            return (
                f"Proposed and accepted (request {outcome.candidate_id}): approved by review"
                f" {outcome.accepted_by}; it is remembered as [{outcome.knowledge_id}] (people may still check it)."
            )
        return f"Proposed (request {outcome.candidate_id}); queued: a reviewer must approve it before it is remembered."

    @server.tool(structured_output=False)
    async def forget_memory(
        knowledge_id: Annotated[int, Field(description="The id of the memory, as list_memories shows it.")],
        reason: Annotated[str, Field(description="Why it should be forgotten.")],
    ) -> str:
        """Ask for a memory to be forgotten. A human reviewer decides; the memory stays until they
        approve the request."""
        try:
            outcome = await mem.request_forget(user_id, knowledge_id, agent, reason)
        except NotFoundError:
            raise ToolError(f"not found: there is no memory {knowledge_id}") from None
        except MemdeskError as exc:
            raise ToolError(str(exc)) from None
        if outcome.duplicate_of is not None:
            return f"A request to forget memory {knowledge_id} is already awaiting review."
        return (
            f"Requested (request {outcome.candidate_id}); memory {knowledge_id} is forgotten once a reviewer approves."
        )

    return server


async def serve(db_path: str, user_id: str, agent: str = AGENT_ACTOR) -> None:
    """Open the store, then speak MCP on stdin/stdout until the client closes the pipe. On
    PostgreSQL a login that may not propose as `agent` is refused here, before serving
    (AgentIdentityError: the operator sees it at start, not the agent at every proposal)."""
    async with Memory(db_path) as mem:
        await mem.agents.check(agent)
        await build_server(mem, user_id, agent).run_stdio_async()


def run(db_path: str, user_id: str, agent: str = AGENT_ACTOR) -> None:
    anyio.run(serve, db_path, user_id, agent)

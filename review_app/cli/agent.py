"""`memdesk mcp`: one user's memory served to an agent over MCP (stdio)."""

from __future__ import annotations

import click

from engine.errors import MemdeskError, UserInputError

from .common import BadInput, Failure, db_argument, env_db, existing_db, user_option


@click.command()
@db_argument(existing=False, required=False)
@user_option("The one user this server serves; no tool can name another.")
@click.option(
    "--agent",
    default="mcp-agent",
    show_default=True,
    help="The name the audit log records as the proposer of this agent's proposals and forget requests.",
)
def mcp(db: str | None, user: str, agent: str) -> None:
    """Serve USER's memory to an agent over MCP (stdio), from DB or $MEMDESK_DB.

    \b
    Tools: search_memory(query, top_k), list_memories(include_expired),
           propose_memory(statement), forget_memory(knowledge_id, reason).
    Proposals and forget requests wait in the review queue; none is a direct write.
    A server runs as long as its agent does: give a PostgreSQL URL holding a password in
    $MEMDESK_DB (the agent's MCP config has an env section), where `ps` does not show it.
    """
    import os

    db = db or os.environ.get("MEMDESK_DB")
    if not db:
        raise BadInput("give the database: memdesk mcp DB --user NAME, or set $MEMDESK_DB")
    from review_app.auth import check_name
    from review_app.mcp_server import run

    try:
        check_name(agent)  # the same rule as reviewer names: safe in the audit log and on screen
    except UserInputError as exc:
        raise BadInput(f"--agent: {exc}") from None
    existing_db(env_db(db))
    try:
        run(db, user, agent)
    except KeyboardInterrupt:
        pass
    except UserInputError as exc:
        raise BadInput(str(exc)) from None
    except MemdeskError as exc:
        raise Failure(str(exc)) from None

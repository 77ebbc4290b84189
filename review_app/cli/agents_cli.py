"""`memdesk agents ...`: which database logins may propose under which agent names (PostgreSQL;
engine/agents.py says why the database holds an agent to its name). Owner only: run it with the
owner role's URL. Exit 2 with one line, nothing changed, for any other login, an unknown login, or a
SQLite store (no logins: whoever opens the file is the owner)."""

from __future__ import annotations

import dataclasses

import click

from engine import Memory
from engine.models import AgentLogin

from .common import BadInput, actor_option, echo, existing_db, json_text, run_engine


@click.group()
def agents() -> None:
    """Which database logins may propose as which agents (PostgreSQL, owner only).

    Review policies trust agents by name (`memdesk policy add ... --agents bot-a`). On PostgreSQL a
    login may propose under its own name and under the names allowed here; any other name is
    refused by the database, whatever the agent writes."""


def _login_agent(db: str, login: str, agent: str, *, allow: bool, actor: str) -> bool:
    existing_db(db)

    async def go() -> bool:
        async with Memory(db) as mem:
            if allow:
                return await mem.agents.allow(login, agent, actor)
            return await mem.agents.revoke(login, agent, actor)

    return run_engine(go())


@agents.command("allow")
@click.argument("db")
@click.argument("login")
@click.argument("agent")
@actor_option()
def agents_allow(db: str, login: str, agent: str, actor: str) -> None:
    """Let database login LOGIN propose as AGENT (audited). A login may always use its own name."""
    if _login_agent(db, login, agent, allow=True, actor=actor):
        echo(f"Login {login} may now propose as agent {agent}.")
    else:
        echo(f"Login {login} could already propose as agent {agent}: nothing changed.")


@agents.command("revoke")
@click.argument("db")
@click.argument("login")
@click.argument("agent")
@actor_option()
def agents_revoke(db: str, login: str, agent: str, actor: str) -> None:
    """Stop LOGIN proposing as AGENT (audited). Its pending proposals stay queued for people."""
    if not _login_agent(db, login, agent, allow=False, actor=actor):
        raise BadInput(f"login {login} was not allowed to propose as agent {agent}: nothing changed")
    echo(f"Login {login} may no longer propose as agent {agent}.")


@agents.command("list")
@click.argument("db")
@click.option("--json", "as_json", is_flag=True, help="Print the map as JSON.")
def agents_list(db: str, as_json: bool) -> None:
    """Every (login, agent) pair the owner allowed, with who allowed it and when."""
    existing_db(db)

    async def go() -> list[AgentLogin]:
        async with Memory(db) as mem:
            return await mem.agents.list()

    found = run_engine(go())
    if as_json:
        echo(json_text([{**dataclasses.asdict(a), "granted_at": a.granted_at.isoformat()} for a in found]))
        return
    if not found:
        echo("No login is allowed another name: each login may propose only under its own name.")
    for a in found:
        echo(f"{a.login} -> {a.agent}  (allowed by {a.granted_by}, {a.granted_at:%Y-%m-%d %H:%M} UTC)")

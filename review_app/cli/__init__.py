"""The `memdesk` command line: a package with one module per command group (ARCHITECTURE.md).

Exit codes: 0 ok, 1 failure (the work could not be done: a model endpoint failed, episodes failed,
the WAL could not be emptied after an erasure), 2 bad input (a missing database or file, a
malformed line, a bad date, an unknown user for export/erase). Progress bars go to stderr, so
stdout carries only results (JSON with --json) and `memdesk mcp` keeps stdout for the protocol.

Wherever a database path is accepted, so is a PostgreSQL URL (`postgresql://user:pass@host/db`);
every message shows it with the password masked. Every command but `ingest` and `demo` refuses a
database that does not exist or holds no memdesk store: opening it on a typo would otherwise create
an empty store and answer "no facts", which looks like success. A server that cannot be reached,
refuses the login or has no such database is exit 2, in one line.

Commands are loaded when named (`COMMANDS`): `memdesk search` imports the reading module and the
engine, never the workstation (Textual), which only `demo`, `review` and `serve` draw.

- `common`: printing, exit codes, the engine runner, the shared option decorators;
- `workstation`: demo, review, serve, reviewer (the commands that show an interface);
- `pipeline`: ingest, process, reembed, migrate (what moves data in or between stores);
- `reading`: search, stats, digest;
- `desk`: add, correct, retract, history (the support desk);
- `rights`: export, erase (a user's data rights);
- `agent`: mcp;
- `policy_cli`: the `policy` group (review policies);
- `agents_cli`: the `agents` group (which logins may propose as which agents, PostgreSQL).
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from .common import visible

COMMANDS: dict[str, str] = {
    "demo": "workstation",
    "review": "workstation",
    "serve": "workstation",
    "reviewer": "workstation",
    "ingest": "pipeline",
    "process": "pipeline",
    "reembed": "pipeline",
    "migrate": "pipeline",
    "search": "reading",
    "stats": "reading",
    "digest": "reading",
    "add": "desk",
    "correct": "desk",
    "retract": "desk",
    "history": "desk",
    "export": "rights",
    "erase": "rights",
    "mcp": "agent",
    "policy": "policy_cli",
    "agents": "agents_cli",
}
"""Command name -> the module of this package that defines it (as a function of that name)."""


class _LazyEscapingGroup(click.Group):
    """The root group. Commands are imported when named, so a command pays only for its own
    imports. Click's own errors quote what was typed ("Invalid value for '--top-k': ..."); their
    text is made visible before click prints it, like every other output of this command line."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS:
            module = importlib.import_module(f"{__name__}.{COMMANDS[cmd_name]}")
            found = getattr(module, cmd_name)
            return found if isinstance(found, click.Command) else None
        return super().get_command(ctx, cmd_name)

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        return _escaping(lambda: super(_LazyEscapingGroup, self).make_context(*args, **kwargs))

    def invoke(self, ctx: click.Context) -> Any:
        return _escaping(lambda: super(_LazyEscapingGroup, self).invoke(ctx))


def _escaping(call: Any) -> Any:
    try:
        return call()
    except click.ClickException as exc:
        # click types `message` Final, yet its own show() prints it: this is the one place where
        # the text click built from what was typed is made visible before it is printed.
        exc.message = visible(exc.message)  # type: ignore[misc]
        raise


@click.group(cls=_LazyEscapingGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="memdesk", prog_name="memdesk")
def main() -> None:
    """memdesk: a memory engine for AI agents whose writes pass through a human.

    Conversations are ingested, extraction turns them into PENDING candidates, a person approves or
    rejects them in the review workstation, and only approved facts are ever retrieved.

    Start with `memdesk demo`.
    """


__all__ = ["COMMANDS", "main"]

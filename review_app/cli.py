"""The `memdesk` command line.

Exit codes: 0 ok, 1 failure (the work could not be done: a model endpoint failed, episodes failed,
the WAL could not be emptied after an erasure), 2 bad input (a missing database or file, a
malformed line, a bad date, an unknown user for export/erase). Progress bars go to stderr, so
stdout carries only results (JSON with --json) and `memdesk mcp` keeps stdout for the protocol.

Wherever a database path is accepted, so is a PostgreSQL URL (`postgresql://user:pass@host/db`);
every message shows it with the password masked. Every command but `ingest` and `demo` refuses a
database that does not exist or holds no memdesk store: opening it on a typo would otherwise create
an empty store and answer "no facts", which looks like success. A server that cannot be reached,
refuses the login or has no such database is exit 2, in one line.
"""

from __future__ import annotations

import asyncio
import getpass
import importlib
import json
import os
import sys
from collections.abc import Coroutine
from dataclasses import asdict
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import click

from engine.errors import (
    ConfigurationError,
    ConflictError,
    MemdeskError,
    ModelError,
    SettleRequiredError,
    UserInputError,
)
from engine.storage import database_errors, inspect, is_postgres_url, masked, refuse_foreign_url, server_went_away
from engine.text import reveal
from review_app.widgets.literal import visible

T = TypeVar("T")

DEFAULT_DB = "memdesk.db"
DEFAULT_DEMO_DB = "memdesk-demo.db"


def echo(text: str = "", err: bool = False) -> None:
    """The one way this command line prints: every text goes through `visible` (the workstation's
    own convention, ESC shown as ␛), because facts, reasons, user ids and file names are written by
    users and models, and a raw `\\x1b]2;...\\x07` would retitle the terminal or clear the screen."""
    click.echo(visible(text), err=err)


class BadInput(click.ClickException):
    """Exit 2: what the caller gave is wrong, and nothing was changed."""

    exit_code = 2

    def format_message(self) -> str:
        return visible(self.message)


class Failure(click.ClickException):
    """Exit 1: the input was fine but the work could not be done."""

    exit_code = 1

    def format_message(self) -> str:
        return visible(self.message)


# Command groups in modules of their own, which use this module's helpers: loaded when named
# (click's lazy subcommands), so neither module imports the other while it is being defined.
_LAZY_GROUPS = {"policy": "review_app.policy_cli"}


class _EscapingGroup(click.Group):
    """Click's own errors quote what was typed ("Invalid value for '--top-k': ..."); their text is
    made visible before click prints it, like every other output of this command line."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_LAZY_GROUPS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in _LAZY_GROUPS:
            found = getattr(importlib.import_module(_LAZY_GROUPS[cmd_name]), cmd_name)
            return found if isinstance(found, click.Command) else None
        return super().get_command(ctx, cmd_name)

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        return _escaping(lambda: super(_EscapingGroup, self).make_context(*args, **kwargs))

    def invoke(self, ctx: click.Context) -> Any:
        return _escaping(lambda: super(_EscapingGroup, self).invoke(ctx))


def _escaping(call: Any) -> Any:
    try:
        return call()
    except click.ClickException as exc:
        # click types `message` Final, yet its own show() prints it: this is the one place where
        # the text click built from what was typed is made visible before it is printed.
        exc.message = visible(exc.message)  # type: ignore[misc]
        raise


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run one engine coroutine, turning the engine's typed errors into exit codes."""
    try:
        return asyncio.run(coro)
    except UserInputError as exc:
        raise BadInput(str(exc)) from None
    except (ConflictError, ConfigurationError, ModelError) as exc:
        raise Failure(str(exc)) from None
    except MemdeskError as exc:
        raise Failure(str(exc)) from None
    except database_errors() as exc:
        if server_went_away(exc):
            raise _went_away(exc) from None
        raise Failure(f"database error: {exc}") from None
    except ConnectionError as exc:  # the socket under a PostgreSQL connection closed
        if server_went_away(exc):
            raise _went_away(exc) from None
        raise


def _went_away(exc: BaseException) -> Failure:
    return Failure(
        f"the PostgreSQL server went away during the command ({exc}). Kept: everything committed "
        "before it went (each decision, episode and batch is its own transaction); the transaction "
        "in progress was rolled back by the server. Run the command again once the server is back."
    )


def _os_user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name (some containers): make the reviewer say who they are
        return ""


def _memdesk_version(db: str) -> int:
    """The schema version of the store at `db` (0: not a memdesk store; a missing file is 0 too),
    opening nothing for writing; an unreachable server, a refused login, a file that is not SQLite
    are exit 2 with one line (engine.storage.inspect)."""
    return _run(inspect(db))[1]


def _refuse_foreign_url(db: str) -> None:
    """Exit 2 for a mysql:// (or any non-PostgreSQL) URL, before it is taken for a file name."""
    try:
        refuse_foreign_url(db)
    except UserInputError as exc:
        raise BadInput(str(exc)) from None


def existing_db(db: str) -> str:
    """An existing memdesk store (a path or a URL), or exit 2 with a message that says what to do."""
    _refuse_foreign_url(db)
    if not is_postgres_url(db) and not Path(db).exists():
        raise BadInput(f"{db}: no such database (a database is created by `memdesk ingest DB FILE` or `memdesk demo`)")
    if _memdesk_version(db) == 0:
        if is_postgres_url(db):
            raise BadInput(
                f"{masked(db)} holds no memdesk store (one is created by `memdesk ingest URL FILE` "
                "or `memdesk demo --db URL`)"
            )
        raise BadInput(f"{masked(db)} is not a memdesk database")
    return db


def _no_user(user: str, db: str) -> Exception:
    from engine.errors import NotFoundError

    shown = masked(db)
    return NotFoundError(f"no data for user {user!r} in {shown} (`memdesk stats {shown}` counts what it holds)")


class Progress:
    """A click progress bar on stderr fed by (done, total) callbacks; created on the first call,
    because the total is known only then."""

    def __init__(self, label: str) -> None:
        self.label = visible(label)  # it names the input file, which a user named
        self._bar: Any = None
        self._done = 0

    def __call__(self, done: int, total: int) -> None:
        if self._bar is None:
            self._bar = click.progressbar(length=max(total, 1), label=self.label, file=sys.stderr)
            self._bar.__enter__()
        self._bar.update(max(0, done - self._done))
        self._done = done

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._bar is not None:
            self._bar.__exit__(exc_type, exc, tb)
            self._bar = None


_C1 = {code: f"\\u{code:04x}" for code in (0x7F, *range(0x80, 0xA0))}


def _json(data: Any) -> str:
    """JSON with non-ASCII kept readable. json.dumps escapes C0 controls but not DEL and the C1
    range (0x9b is CSI on some terminals), so those are written as \\u escapes too: the same
    JSON value, nothing a terminal acts on."""
    return json.dumps(data, indent=2, ensure_ascii=False, default=str).translate(_C1)


def _parse_date(value: str | None, what: str) -> Any:
    if value is None:
        return None
    from engine.timeutil import parse_datetime

    try:
        return parse_datetime(value, what)
    except UserInputError as exc:
        raise BadInput(str(exc)) from None


def _print_mapping(data: dict[str, Any], indent: int = 0) -> None:
    """Nested dicts as an indented outline; lists of scalars on one line."""
    pad = "  " * indent
    width = max((len(str(k)) for k in data), default=0)
    for key, value in data.items():
        if isinstance(value, dict):
            echo(f"{pad}{key}:")
            if value:
                _print_mapping(value, indent + 1)
            else:
                echo(f"{pad}  (none)")
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            echo(f"{pad}{key}:")
            for item in value:
                echo(f"{pad}  -")
                _print_mapping(item, indent + 2)
        else:
            if isinstance(value, list):
                shown = ", ".join(map(str, value)) if value else "(none)"
            else:
                shown = "-" if value is None else value
            echo(f"{pad}{str(key).ljust(width)}  {shown}")


# -- the command group -----------------------------------------------------------------------------


@click.group(cls=_EscapingGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="memdesk", prog_name="memdesk")
def main() -> None:
    """memdesk: a memory engine for AI agents whose writes pass through a human.

    Conversations are ingested, extraction turns them into PENDING candidates, a person approves or
    rejects them in the review workstation, and only approved facts are ever retrieved.

    Start with `memdesk demo`.
    """


# -- demo / review ---------------------------------------------------------------------------------


def _open_workstation(db: str, reviewer: str, keymap: str | None) -> None:
    if not reviewer.strip():
        raise BadInput("who is reviewing? pass --reviewer NAME or set MEMDESK_REVIEWER")
    from review_app.app import run_review  # late: Textual loads only for the commands that draw

    _run(_can_open(db))  # a refused store (another embedder, a newer schema) is a message, not a traceback
    try:
        run_review(db, reviewer, keymap)
    except UserInputError as exc:  # a bad keymap file, reported before the screen switches
        raise BadInput(str(exc)) from None


async def _can_open(db: str) -> None:
    """Open and close the store once, so that what would refuse it fails before a screen is drawn
    (the same process then reuses the loaded embedder)."""
    from engine import Memory

    async with Memory(db):
        pass


def _remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        part = Path(f"{path}{suffix}")
        if part.exists():
            part.unlink()


@main.command()
@click.option(
    "--db",
    "db",
    default=DEFAULT_DEMO_DB,
    show_default=True,
    type=click.Path(dir_okay=False),
    help="Where the demo database lives.",
)
@click.option("--fresh", is_flag=True, help="Delete the demo database and build it again.")
@click.option("--no-open", is_flag=True, help="Only build the database; do not open the workstation.")
@click.option(
    "--reviewer",
    envvar="MEMDESK_REVIEWER",
    default=_os_user,
    show_default="$MEMDESK_REVIEWER or OS user",
    help="Your name in the audit log.",
)
@click.option("--keymap", type=click.Path(exists=True, dir_okay=False), help="A keymap file for the workstation.")
def demo(db: str, fresh: bool, no_open: bool, reviewer: str, keymap: str | None) -> None:
    """Build a demo database from the bundled conversations and open the workstation on it.

    The bundled conversations go through the offline extractor (no network, no API key), so the
    queue opens with real pending candidates: new facts, updates that would supersede an approved
    fact, and low-evidence items. An existing demo database is reused unless --fresh.
    """
    from review_app.demo import build_demo

    _refuse_foreign_url(db)
    if is_postgres_url(db):
        _demo_in_postgres(db, fresh)
        if not no_open:
            _open_workstation(db, reviewer, keymap)
        return
    path = Path(db)
    if path.exists():
        if path.is_dir():
            raise BadInput(f"{db} is a directory")
        if fresh:
            if path.stat().st_size and _memdesk_version(db) == 0:
                raise BadInput(f"{db} exists and is not a memdesk database; not deleting it")
            _remove_db(path)
        else:
            existing_db(db)
            echo(f"Using the existing demo database {db} (--fresh rebuilds it).", err=True)
    if not path.exists():
        # Built under a temporary name and renamed when complete: an interrupted build must not
        # leave a half-built database that the next `memdesk demo` would silently reuse.
        partial = path.with_name(f".{path.name}.building")
        _remove_db(partial)
        try:
            with Progress("Building the demo") as bar:
                summary = _run(build_demo(str(partial), progress=bar))
            # The store is closed: a log SQLite left behind moves with the file; the shared-memory
            # index is rebuilt at the next open.
            if Path(f"{partial}-wal").exists():
                Path(f"{partial}-wal").replace(f"{path}-wal")
            Path(f"{partial}-shm").unlink(missing_ok=True)
            partial.replace(path)
        finally:
            _remove_db(partial)
        _built(db, summary)
    if not no_open:
        _open_workstation(db, reviewer, keymap)


def _demo_in_postgres(url: str, fresh: bool) -> None:
    """The demo in a PostgreSQL database: built in place when it holds no memdesk store yet (there
    is no file to build aside and rename), reused when it does. --fresh would mean dropping a
    database's tables, which this command does not do to a server."""
    from review_app.demo import build_demo

    if _memdesk_version(url):
        if fresh:
            raise BadInput(
                f"{masked(url)} already holds a memdesk store; --fresh deletes files only: drop and "
                "create the database (dropdb/createdb), then run demo again"
            )
        echo(f"Using the existing demo store in {masked(url)}.", err=True)
        return
    with Progress("Building the demo") as bar:
        _built(url, _run(build_demo(url, progress=bar)))


def _built(db: str, summary: dict[str, int]) -> None:
    echo(
        f"Built {masked(db)}: {summary['users']} users, {summary['exchanges']} exchanges; "
        f"{summary['approved']} candidates approved by the seeded demo-curator, "
        f"{summary['pending']} candidates waiting for review "
        f"({summary['pending_updates']} would supersede a fact).",
        err=True,
    )


@main.command()
@click.argument("db", required=False, type=click.Path(dir_okay=False))
@click.option(
    "--reviewer",
    envvar="MEMDESK_REVIEWER",
    default=_os_user,
    show_default="$MEMDESK_REVIEWER or OS user",
    help="Your name in the audit log.",
)
@click.option("--keymap", type=click.Path(exists=True, dir_okay=False), help="A keymap file (binding id -> key).")
def review(db: str | None, reviewer: str, keymap: str | None) -> None:
    """Open the review workstation on DB ($MEMDESK_DB, else ./memdesk.db)."""
    chosen = db or os.environ.get("MEMDESK_DB") or DEFAULT_DB
    _open_workstation(existing_db(chosen), reviewer, keymap)


# -- the browser: serve / reviewer -----------------------------------------------------------------

DEFAULT_CREDENTIALS = "memdesk-reviewers.toml"


def _credentials_option(command: Any) -> Any:
    return click.option(
        "--config",
        "config",
        envvar="MEMDESK_REVIEWERS",
        default=DEFAULT_CREDENTIALS,
        show_default=True,
        type=click.Path(dir_okay=False),
        help="The reviewer credentials file ($MEMDESK_REVIEWERS).",
    )(command)


@main.command()
@click.argument("db", type=click.Path(dir_okay=False))
@_credentials_option
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on. Anything but loopback belongs behind a TLS reverse proxy.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8000,
    show_default=True,
    help="Port to listen on (0: any free port; the URL printed says which).",
)
@click.option("--keymap", type=click.Path(exists=True, dir_okay=False), help="A keymap file for every workstation.")
@click.option(
    "--session-hours",
    type=click.FloatRange(min=0.01, max=24 * 30),
    default=12.0,
    show_default=True,
    help="How long a login lasts.",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="A Host name browsers use to reach this server (repeatable); the bound address, localhost "
    "and 127.0.0.1 are always allowed. Behind a proxy: the public name.",
)
@click.option(
    "--trusted-proxy",
    "trusted_proxies",
    multiple=True,
    metavar="ADDRESS",
    help="The address of a reverse proxy (repeatable): only from it are X-Forwarded-For (the client, "
    "for login throttling) and X-Forwarded-Proto (TLS: Secure __Host- cookie) believed.",
)
def serve(
    db: str,
    config: str,
    host: str,
    port: int,
    keymap: str | None,
    session_hours: float,
    allow_hosts: tuple[str, ...],
    trusted_proxies: tuple[str, ...],
) -> None:
    """Serve the review workstation on DB to browsers, one login per reviewer.

    Reviewers log in with the name and password kept (hashed) in the credentials file; the name
    they log in with is the name every decision is recorded under. Each browser tab runs its own
    workstation. Plain HTTP: for anything but this machine, put a TLS reverse proxy in front
    (README, "memdesk serve"). Add reviewers with `memdesk reviewer add NAME`.
    """
    import logging

    from review_app.auth import CredentialFile, CredentialsError
    from review_app.serve import WorkstationServer

    existing_db(db)
    _run(_can_open(db))  # refused here (another embedder...), not in every browser tab
    try:
        credentials = CredentialFile(config)
    except CredentialsError as exc:
        raise BadInput(str(exc)) from None
    if not credentials.current():
        raise BadInput(f"{config} names no reviewer: add one with `memdesk reviewer add NAME --config {config}`")
    if keymap:
        from review_app.keymap import load_keymap

        try:
            load_keymap(keymap)  # a bad keymap is reported here, not by every workstation that opens
        except UserInputError as exc:
            raise BadInput(str(exc)) from None
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    if host not in ("127.0.0.1", "localhost", "::1"):
        echo(f"warning: listening on {host}: plain HTTP; reach it only through a TLS reverse proxy.", err=True)
    server = WorkstationServer(
        db,
        credentials,
        keymap=keymap,
        session_seconds=session_hours * 3600,
        allowed_hosts=allow_hosts,
        trusted_proxies=trusted_proxies,
    )

    def ready(url: str) -> None:
        echo(f"memdesk serves {masked(db)} on {url} (reviewers from {config}; Ctrl+C stops)")
        sys.stdout.flush()

    try:
        asyncio.run(server.serve(host, port, ready))
    except OSError as exc:
        raise Failure(str(exc.strerror or exc)) from None


@main.group()
def reviewer() -> None:
    """Manage the reviewer logins of `memdesk serve` (a credentials file of salted scrypt hashes)."""


def _load_credentials_or_empty(config: str) -> dict[str, str]:
    from review_app.auth import CredentialsError, load_credentials

    if not Path(config).exists():
        return {}
    try:
        return load_credentials(config)
    except CredentialsError as exc:
        raise BadInput(str(exc)) from None


@reviewer.command("add")
@click.argument("name")
@_credentials_option
@click.option("--password-stdin", is_flag=True, help="Read the password from the first line of stdin (scripts).")
@click.option("--replace", is_flag=True, help="Change the password of an existing reviewer (ends their sessions).")
def reviewer_add(name: str, config: str, password_stdin: bool, replace: bool) -> None:
    """Add reviewer NAME to the credentials file (created with mode 0600 when missing).

    The password is asked twice without echo, or read from stdin with --password-stdin; it is
    never a command-line argument (argv is visible to every user of the machine).
    """
    from review_app.auth import check_name, check_password, hash_password, write_credentials

    try:
        check_name(name)
    except UserInputError as exc:
        raise BadInput(str(exc)) from None
    entries = _load_credentials_or_empty(config)
    existed = name in entries
    if existed and not replace:
        raise BadInput(f"reviewer {name!r} already exists in {config}; --replace changes the password")
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt(f"Password for {name}", hide_input=True, confirmation_prompt=True, err=True)
    try:
        check_password(password)
    except UserInputError as exc:
        raise BadInput(str(exc)) from None
    entries[name] = hash_password(password)
    write_credentials(config, entries)
    echo(f"{'Changed the password of' if existed else 'Added'} reviewer {name} in {config}.")


@reviewer.command("remove")
@click.argument("name")
@_credentials_option
def reviewer_remove(name: str, config: str) -> None:
    """Remove reviewer NAME; a running `memdesk serve` ends their sessions within seconds."""
    from review_app.auth import write_credentials

    entries = _load_credentials_or_empty(config)
    if name not in entries:
        raise BadInput(f"no reviewer {name!r} in {config}")
    del entries[name]
    write_credentials(config, entries)
    echo(f"Removed reviewer {name} from {config}.")


@reviewer.command("list")
@_credentials_option
def reviewer_list(config: str) -> None:
    """The reviewer names in the credentials file (never the hashes)."""
    for name in sorted(_load_credentials_or_empty(config)):
        echo(name)


# -- ingest / process ------------------------------------------------------------------------------


@main.command()
@click.argument("db", type=click.Path(dir_okay=False))
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["auto", "jsonl", "longmemeval"]),
    default="auto",
    show_default=True,
    help="Input format; auto looks at the extension and the first character.",
)
@click.option("--user", help="Put every exchange under this user (LongMemEval: instead of one user per question).")
@click.option("--skip-bad", is_flag=True, help="Ingest the valid lines and list the bad ones, instead of stopping.")
def ingest(db: str, file: str, fmt: str, user: str | None, skip_bad: bool) -> None:
    """Add the conversations in FILE to DB (created if missing), in one transaction.

    \b
    JSON Lines, one exchange a line:
      {"user_id": "ana", "user": "...", "assistant": "...", "at": "2024-05-01T10:00:00Z"}
    LongMemEval: the JSON list of questions (haystack_sessions + haystack_dates).

    A malformed line, a missing field or a bad date stops with FILE:LINE: reason and ingests
    nothing, unless --skip-bad. Run `memdesk process DB` afterwards to extract candidates.
    """
    from engine.ingest import ingest as write
    from engine.ingest import parse_file

    _refuse_foreign_url(db)
    path = None if is_postgres_url(db) else Path(db)
    if path is None:
        _memdesk_version(db)  # an unreachable server or a refused login, before the file is read
    elif path.is_dir():
        raise BadInput(f"{db} is a directory, not a database file")
    elif path.exists() and path.stat().st_size and _memdesk_version(db) == 0:
        raise BadInput(f"{db} exists and is not a memdesk database")
    try:
        with Progress(f"Reading {file}") as bar:
            plan = parse_file(file, fmt, user=user, skip_bad=skip_bad, progress=bar)  # type: ignore[arg-type]
    except UserInputError as exc:
        raise BadInput(str(exc)) from None
    for line in plan.skipped:
        echo(f"skipped {line}", err=True)
    for line in plan.notes:
        echo(f"note: {line}", err=True)
    if not plan.exchanges:
        why = f"all {len(plan.skipped)} bad lines were skipped" if plan.skipped else "the file holds no exchanges"
        raise BadInput(f"{file}: nothing to ingest ({why})")

    async def go() -> int:
        from engine import Memory

        async with Memory(db) as mem:
            return await write(mem, plan)

    created = path is not None and not path.exists()
    try:
        count = _run(go())
    except click.ClickException:
        if created and path is not None:  # the write failed: leave no empty file for the next command to trust
            _remove_db(path)
        raise
    users = plan.users
    echo(
        f"Ingested {count} exchanges for {len(users)} user{'s' if len(users) != 1 else ''} into {masked(db)} "
        f"({plan.format}{f', {len(plan.skipped)} skipped' if plan.skipped else ''})."
    )


def _extractor(name: str, model: str | None, base_url: str | None) -> Any:
    if name == "offline":
        if model or base_url:
            raise BadInput("--model and --base-url apply to --extractor openai")
        return None  # the engine's default: the offline extractor
    from engine.extraction import OpenAIExtractor

    try:
        return OpenAIExtractor(base_url=base_url, model=model, api_key=None)  # type: ignore[operator]
    except (UserInputError, ConfigurationError) as exc:  # no model, no endpoint, no key: the caller's to fix
        raise BadInput(str(exc)) from None
    except MemdeskError as exc:
        raise Failure(str(exc)) from None


def _judge(model: str | None, base_url: str | None) -> Any:
    """engine.claims.judge.OpenAIValueJudge on the extractor's endpoint and model."""
    from engine.claims.judge import OpenAIValueJudge

    try:
        return OpenAIValueJudge(base_url=base_url, model=model)
    except (UserInputError, ConfigurationError) as exc:
        raise BadInput(str(exc)) from None


REPORT_FIELDS = (
    ("messages", "messages grouped into episodes"),
    ("episodes", "episodes extracted"),
    ("claims", "claims found by the extractor"),
    ("predicted", "discarded: the prediction already held it"),
    ("below_confidence", "discarded: confidence below threshold"),
    ("invalid", "discarded: invalid interval or empty"),
    ("tombstoned", "discarded: matches a tombstone"),
    ("duplicates", "discarded: duplicate of a fact or pending candidate"),
    ("supersedes_dropped", "supersession pointer dropped (kept as new)"),
    ("unsupported", "queued with unsupported evidence"),
    ("queued", "queued for review"),
    ("dates_dropped", "extractor dates out of range (dropped from their item)"),
    ("failed", "episodes failed (retried on the next run)"),
    ("leased_elsewhere", "episodes leased by another worker (not processed now)"),
)


@main.command()
@click.argument("db", type=click.Path(dir_okay=False))
@click.option("--user", help="Only this user's unprocessed messages.")
@click.option(
    "--extractor",
    "extractor_name",
    type=click.Choice(["offline", "openai"]),
    default="offline",
    show_default=True,
    help="offline: deterministic, no network. openai: any OpenAI-compatible endpoint.",
)
@click.option("--model", help="Model name for --extractor openai (else $MEMDESK_MODEL).")
@click.option("--base-url", help="Endpoint for --extractor openai (else $MEMDESK_BASE_URL; default OpenAI).")
@click.option(
    "--concurrency",
    type=click.IntRange(1, 256),
    default=1,
    show_default=True,
    help="Users processed at once, so a model's latency overlaps (one user's episodes stay in order).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def process(
    db: str,
    user: str | None,
    extractor_name: str,
    model: str | None,
    base_url: str | None,
    concurrency: int,
    as_json: bool,
) -> None:
    """Extract pending candidates from unprocessed messages and print the per-gate counts.

    The API key of --extractor openai comes from $OPENAI_API_KEY (never argv); a local
    OpenAI-compatible server given by --base-url needs none.
    """
    existing_db(db)
    extractor = _extractor(extractor_name, model, base_url)
    # with an LLM configured, it also judges same / replaces / both for free-text neighbours
    judge = _judge(model, base_url) if extractor is not None else None

    async def go() -> Any:
        from engine import Memory

        async with Memory(db, extractor=extractor, judge=judge) as mem:
            with Progress("Processing users") as bar:
                return await mem.process(user, concurrency=concurrency, progress=bar)

    report = _run(go())
    from engine.models import to_jsonable

    data = to_jsonable(asdict(report))
    if as_json:
        echo(_json(data))
    else:
        width = max(len(label) for _, label in REPORT_FIELDS)
        for name, label in REPORT_FIELDS:
            echo(f"{label.ljust(width)}  {data.get(name, 0)}")
    if report.leased_elsewhere and report.leased_until is not None:
        echo(
            f"{report.leased_elsewhere} episode(s) are leased by another worker until "
            f"{report.leased_until.isoformat(timespec='seconds')}; if that worker is gone, run process again after "
            "that time",
            err=True,
        )
    for error in report.errors:
        echo(f"error: {error}", err=True)
    if report.failed:
        raise Failure(f"{report.failed} episode(s) failed; they stay retryable (run process again)")


@main.command()
@click.argument("db", type=click.Path(dir_okay=False))
@click.option(
    "--embedder",
    "embedder_name",
    type=click.Choice(["wordllama", "hashing"]),
    default=None,
    show_default="$MEMDESK_EMBEDDER or wordllama",
    help="The embedder to move the store to.",
)
@click.option(
    "--batch-size",
    type=click.IntRange(1, 100_000),
    default=256,
    show_default=True,
    help="Facts embedded and written per transaction (each one a resume point).",
)
@click.option(
    "--actor",
    envvar="MEMDESK_REVIEWER",
    default=_os_user,
    show_default="$MEMDESK_REVIEWER or OS user",
    help="Who runs the move (recorded in the audit log).",
)
def reembed(db: str, embedder_name: str | None, batch_size: int, actor: str) -> None:
    """Re-embed every fact of DB (all statuses) with another embedder, so DB opens with it.

    Needed when DB was built with another embedder than the one memdesk opens it with (the default
    is WordLlama; databases from before it were built with the hashing embedder). Interrupt it at
    any time (Ctrl-C, kill): the store keeps working with its old embedder, and running the same
    command again resumes where it stopped. Run it while nothing else writes to DB. The move is
    audited as one `reembed` row.
    """
    existing_db(db)
    if not actor.strip():
        raise BadInput("who runs this? pass --actor NAME or set MEMDESK_REVIEWER")
    from engine.embedders import default_embedder, make_embedder
    from engine.reembed import reembed as move

    try:
        target = make_embedder(embedder_name) if embedder_name else default_embedder()
    except ConfigurationError as exc:  # a bad MEMDESK_EMBEDDER
        raise BadInput(str(exc)) from None
    try:
        with Progress("Re-embedding facts") as bar:
            report = _run(move(db, target, actor=actor.strip(), batch_size=batch_size, progress=bar))
    except KeyboardInterrupt:
        raise Failure(
            f"interrupted; {masked(db)} still works with its old embedder; run the same command to resume"
        ) from None
    if report.audit_id is None:
        echo(f"{masked(db)} already uses {report.target} ({report.dimensions} dimensions); nothing to do.")
        return
    resumed = f", resumed after {report.resumed_at}" if report.resumed_at else ""
    echo(
        f"Re-embedded {report.facts} facts of {masked(db)}: {report.source} ({report.source_dimensions} dimensions) -> "
        f"{report.target} ({report.dimensions} dimensions){resumed}; audit row {report.audit_id}."
    )


@main.command()
@click.argument("db", type=click.Path(dir_okay=False))
@click.argument("statement")
@click.option("--user", required=True, help="Whose fact it is.")
@click.option("--valid-from", help="When it became true (ISO 8601; no zone = UTC); default: always.")
@click.option(
    "--settle",
    type=click.Choice(["supersede", "correct", "keep-both"]),
    help="When the fact would replace an active one: the world changed (supersede), the old one was never"
    " true (correct), or both hold (keep-both).",
)
@click.option(
    "--actor",
    envvar="MEMDESK_REVIEWER",
    default=_os_user,
    show_default="$MEMDESK_REVIEWER or OS user",
    help="Who adds the fact (recorded in the audit log).",
)
def add(db: str, statement: str, user: str, valid_from: str | None, settle: str | None, actor: str) -> None:
    """Add STATEMENT as an approved fact of USER: a fact the extractor missed (a support agent heard
    it on the phone, a curator read it in a message).

    It goes through the engine's one way in (`add_knowledge`): a tombstoned value, a duplicate of an
    active fact or an invalid statement is refused with a message (exit 2) and nothing is written.
    A fact about something USER already has a fact for ("lives in Porto" while "lives in Lisbon" is
    active) is refused until --settle says how it relates. The fact is audited under --actor.
    """
    existing_db(db)
    if not actor.strip():
        raise BadInput("who adds this fact? pass --actor NAME or set MEMDESK_REVIEWER")
    valid_at = _parse_date(valid_from, "--valid-from")

    async def go() -> Any:
        from engine import Memory

        async with Memory(db) as mem:
            how: Any = settle.replace("-", "_") if settle else None
            try:
                return await mem.add_knowledge(user, statement, actor=actor.strip(), valid_at=valid_at, settle=how)
            except SettleRequiredError as exc:
                raise BadInput(f"{exc}; pass --settle supersede, correct or keep-both") from None

    fact = _run(go())
    echo(
        f"Added fact #{fact.id} for {fact.user_id}: {reveal(fact.statement)} "
        f"(valid {fact.interval_text()}; by {actor.strip()})."
    )
    for mark in fact.marks:  # what the gate noticed and let through (engine.gate): for a person to check
        echo(f"  note: {reveal(mark.note)}")


@main.command()
@click.argument("src")
@click.argument("dst")
@click.option(
    "--batch-size",
    type=click.IntRange(1, 100_000),
    default=1000,
    show_default=True,
    help="Rows read and written per batch.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the per-table counts as JSON.")
def migrate(src: str, dst: str, batch_size: int, as_json: bool) -> None:
    """Copy the whole store SRC into the empty store DST (each a file path or a postgresql:// URL).

    Everything moves, ids included: messages, episodes, extraction runs, candidates, every version
    of every fact with its intervals and vector, tombstones, what the gates discarded, the team's
    flags, second reviews and assignments, and the audit log. DST must be empty (a new file, or a
    database with no memdesk rows); the copy is then counted and compared row for row on both
    sides. Stop everything that writes to SRC first.
    """
    from engine.transfer import copy_store

    existing_db(src)
    _refuse_foreign_url(dst)
    created = _new_file(dst)
    try:
        with Progress("Copying rows") as bar:
            report = _run(copy_store(src, dst, batch=batch_size, progress=bar))
    except BaseException as exc:
        if created is not None and created.exists():
            _remove_db(created)
            echo(f"{dst} was removed: it held a partial copy.", err=True)
        if isinstance(exc, KeyboardInterrupt):
            partial = "" if created is not None else f"; {dst} may hold a partial copy: empty it before migrating again"
            raise Failure(f"interrupted{partial}") from None
        raise
    if as_json:
        echo(
            _json(
                {
                    "source": report.source,
                    "destination": report.destination,
                    "seconds": report.seconds,
                    "settled": report.settled,
                    "tables": [asdict(t) for t in report.tables],
                }
            )
        )
        return
    echo(f"Copied {report.source} -> {report.destination} in {report.seconds} s:")
    echo(f"  {'table':<16}{'source':>10}{'copied':>10}{'destination':>13}")
    for t in report.tables:
        echo(f"  {t.table:<16}{t.source_rows:>10}{t.copied:>10}{t.destination_rows:>13}")
    echo(f"Verified: {report.rows} rows; counts, ids and every row's contents match on both sides.")
    if not report.settled:
        echo(
            f"Not analysed: this role does not own {report.destination}'s tables; run VACUUM ANALYZE as"
            " the owner (or let autovacuum do it) before timing queries on the copy."
        )


def _new_file(target: str) -> Path | None:
    """The database file `migrate` is about to create (removed again if the copy fails, so a
    rerun does not find a half-filled destination and refuse it), or None for an existing file
    or a URL (checked reachable first: an unreachable server is one line and exit 2, as for SRC)."""
    if is_postgres_url(target):
        _memdesk_version(target)
        return None
    path = Path(target)
    if path.is_dir():
        raise BadInput(f"{target} is a directory, not a database file")
    if path.exists():
        if path.stat().st_size and _memdesk_version(target) == 0:
            raise BadInput(f"{target} exists and is not a memdesk database")
        return None
    if not path.parent.is_dir():
        raise BadInput(f"directory {path.parent} does not exist")
    return path


# -- reading ---------------------------------------------------------------------------------------


@main.command()
@click.argument("db", type=click.Path(dir_okay=False))
@click.argument("query", nargs=-1, required=True)
@click.option("--user", required=True, help="Whose facts (search never crosses users).")
@click.option("--top-k", type=click.IntRange(1, 1000), default=10, show_default=True)
@click.option("--as-of", help="Only facts valid at this date (ISO 8601; no zone = UTC).")
@click.option("--known-at", help="What the store believed at this date (ISO 8601).")
@click.option("--include-expired", is_flag=True, help="Also superseded and retracted facts.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
def search(
    db: str,
    query: tuple[str, ...],
    user: str,
    top_k: int,
    as_of: str | None,
    known_at: str | None,
    include_expired: bool,
    as_json: bool,
) -> None:
    """Retrieve USER's approved facts for QUERY, as the prompt block an agent would get.

    A user the store knows but who has no matching approved fact gets the empty answer (exit 0).
    A user the store holds nothing of is exit 2: at the command line that is almost always a typo,
    and whoever can run this command can read the whole file anyway. (Agents never get that
    distinction: the MCP server is bound to one user.)
    """
    existing_db(db)
    at_time = _parse_date(as_of, "--as-of")
    known = _parse_date(known_at, "--known-at")
    text = " ".join(query)

    async def go() -> Any:
        from engine import Memory

        async with Memory(db) as mem:
            if user not in await mem.users():
                raise _no_user(user, db)
            return await mem.retrieve(
                text, user_id=user, top_k=top_k, at_time=at_time, known_at=known, include_expired=include_expired
            )

    result = _run(go())
    if not as_json:
        echo(result.to_prompt())
        return
    from engine.models import to_jsonable

    echo(
        _json(
            {
                "query": result.query,
                "user_id": result.user_id,
                "at_time": to_jsonable(result.at_time),
                "known_at": to_jsonable(result.known_at),
                "include_expired": result.include_expired,
                "items": [
                    {
                        **to_jsonable(i.knowledge),
                        "score": i.score,
                        "vector_rank": i.vector_rank,
                        "text_rank": i.text_rank,
                    }
                    for i in result.items
                ],
            }
        )
    )


@main.command()
@click.argument("db", type=click.Path(dir_okay=False))
@click.option("--user", help="Only this user's figures.")
@click.option(
    "--discarded",
    "discarded_limit",
    type=click.IntRange(0, 100_000),
    default=20,
    show_default=True,
    help="List this many of the statements the gates dropped most recently.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def stats(db: str, user: str | None, discarded_limit: int, as_json: bool) -> None:
    """Extraction rate, discards by gate (and the dropped statements), review outcomes and queue size.

    With --user, a user the store holds nothing of is exit 2, as for `search` and `export`."""
    if user is not None and not user.strip():
        raise BadInput("--user is empty; leave it out for the figures of every user")
    existing_db(db)

    async def go() -> dict[str, Any]:
        from engine import Memory

        async with Memory(db) as mem:
            if user is not None and user not in await mem.users():
                raise _no_user(user, db)
            return (await mem.stats(user, discarded_limit)).to_dict()

    data = _run(go())
    if as_json:
        echo(_json(data))
    else:
        _print_mapping(data)


@main.command()
@click.argument("db", type=click.Path(dir_okay=False))
@click.option(
    "--sla-hours",
    type=click.FloatRange(0, min_open=True),
    default=None,
    help="Hours a pending item may wait (default: the config's review_sla_hours, 48).",
)
@click.option(
    "--limit", type=click.IntRange(0, 10_000), default=20, show_default=True, help="List this many oldest items."
)
@click.option("--json", "as_json", is_flag=True, help="Print the digest as JSON.")
def digest(db: str, sla_hours: float | None, limit: int, as_json: bool) -> None:
    """What waits in the review queue and for how long: the pending count by kind, the oldest item,
    how many are past the SLA, and the oldest items. Exit 1 when anything is past the SLA (so cron
    or CI can alert on it), 0 otherwise, 2 on bad input."""
    existing_db(db)

    async def go() -> dict[str, Any]:
        from engine import Memory, MemoryConfig
        from engine.models import to_jsonable

        config = MemoryConfig() if sla_hours is None else MemoryConfig(review_sla_hours=sla_hours)
        async with Memory(db, config=config) as mem:
            figures = await mem.stats(None, 0)
            now = mem.now()
            oldest = await mem.review.pending(limit=limit) if limit else []
            alarms = await mem.policies.alarms(config.review_sla_hours)
        queue = figures.queue
        return {
            "policies": to_jsonable(alarms)
            | {
                "alarm": alarms.alarm,
                "second_review_past_sla": alarms.second_review_past_sla,
                "header": alarms.header(),
            },
            "pending": queue.pending,
            "pending_by_kind": queue.pending_by_kind,
            **to_jsonable(queue.age),
            "oldest": [
                {
                    "id": c.id,
                    "user_id": c.user_id,
                    "kind": c.kind,
                    "waiting_hours": round((now - c.created_at).total_seconds() / 3600, 1),
                    "statement": c.statement,
                    "marks": [m.note for m in c.marks],
                }
                for c in oldest
            ],
        }

    data = _run(go())
    if as_json:
        echo(_json(data))
    else:
        echo(
            f"{data['pending']} pending; {data['past_sla']} past the SLA of {data['sla_hours']:g} h; "
            + (
                "nothing waits."
                if data["oldest_pending_hours"] is None
                else f"the oldest has waited {data['oldest_pending_hours']:g} h (since {data['oldest_pending_at']})."
            )
        )
        for item in data["oldest"]:
            echo(
                f"  {item['waiting_hours']:>8g} h  #{item['id']} {item['user_id']} [{item['kind']}]"
                f" {reveal(item['statement'])}" + "".join(f"  [{reveal(note)}]" for note in item["marks"])
            )
    policies = data["policies"]
    if not as_json:
        from review_app.policy_cli import alarm_lines

        for line in alarm_lines(policies):
            echo(line)
    if data["past_sla"] or policies["alarm"]:
        raise SystemExit(1)


@main.command()
@click.argument("db", type=click.Path(dir_okay=False))
@click.option("--user", required=True, help="Whose data.")
@click.option("--messages", "include_messages", is_flag=True, help="Include the raw conversation messages.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True), help="Write to a file, not stdout.")
def export(db: str, user: str, include_messages: bool, output: str | None) -> None:
    """USER's facts (every version, with intervals and statuses), candidates, tombstones and audit
    history, as JSON. Exit 2 when the store holds nothing of USER."""
    existing_db(db)

    async def go() -> dict[str, Any]:
        from engine import Memory
        from engine.export import export_user

        async with Memory(db) as mem:
            return await export_user(mem.ctx, user, include_messages=include_messages)

    text = _json(_run(go()))
    if output:
        Path(output).write_text(text + "\n", encoding="utf-8")
        echo(f"Wrote {output}.", err=True)
    else:
        echo(text)


@main.command()
@click.argument("db", type=click.Path(dir_okay=False))
@click.option("--user", required=True, help="Whose data to erase.")
@click.option("--actor", required=True, help="Who carries out the erasure (recorded in the audit log).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def erase(db: str, user: str, actor: str, yes: bool) -> None:
    """Right to erasure: remove every message, episode, candidate, fact, index row and tombstone
    of USER, redact the text of their audit rows, and compact the file so no text remains in it.

    The audit log keeps what happened and when (with the text removed) and records the erasure.
    """
    existing_db(db)
    if not yes:
        click.confirm(
            f"Erase every trace of user {user!r} from {masked(db)}? This cannot be undone.", abort=True, err=True
        )

    async def go() -> Any:
        from engine import Memory
        from engine.erase import erase_user

        async with Memory(db) as mem:
            return await erase_user(mem.ctx, user, actor)

    report = _run(go())
    echo(
        f"Erased user {user!r}: {report.messages} messages, {report.episodes} episodes, "
        f"{report.extraction_runs} extraction runs, {report.candidates} candidates, {report.knowledge} facts, "
        f"{report.tombstones} tombstones; {report.audit_redacted} audit rows redacted (audit row {report.audit_id})."
    )
    if not report.wal_truncated:
        raise Failure(
            "the rows are gone, but another process has the database open, so the write-ahead log still holds "
            "old pages; close the other process (SQLite empties the log when the last connection closes)"
        )


@main.command()
@click.argument("db", required=False, type=click.Path(dir_okay=False))
@click.option("--user", required=True, help="The one user this server serves; no tool can name another.")
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
    db = db or os.environ.get("MEMDESK_DB")
    if not db:
        raise BadInput("give the database: memdesk mcp DB --user NAME, or set $MEMDESK_DB")
    from review_app.auth import check_name
    from review_app.mcp_server import run

    try:
        check_name(agent)  # the same rule as reviewer names: safe in the audit log and on screen
    except UserInputError as exc:
        raise BadInput(f"--agent: {exc}") from None
    existing_db(db)
    if not user.strip():
        raise BadInput("--user is empty")
    try:
        run(db, user, agent)
    except KeyboardInterrupt:
        pass
    except UserInputError as exc:
        raise BadInput(str(exc)) from None
    except MemdeskError as exc:
        raise Failure(str(exc)) from None


if __name__ == "__main__":
    main()

"""The commands that show an interface: `demo`, `review`, `serve` and the `reviewer` logins of
`serve`. Textual is imported inside them, when a screen is about to be drawn, never at import."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import click

from engine.errors import UserInputError
from engine.storage import is_postgres_url, masked

from .common import (
    DEFAULT_DEMO_DB,
    BadInput,
    Failure,
    FiniteHours,
    Progress,
    credentials_option,
    db_argument,
    echo,
    env_db,
    existing_db,
    keymap_option,
    memdesk_version,
    no_foreign_url,
    remove_db,
    reviewer_option,
    run_engine,
    sla_option,
)


def _open_workstation(db: str, reviewer: str, keymap: str | None, sla_hours: float | None = None) -> None:
    if not reviewer.strip():
        raise BadInput("who is reviewing? pass --reviewer NAME or set MEMDESK_REVIEWER")
    from review_app.auth import check_not_reserved

    try:
        check_not_reserved(reviewer.strip())
    except UserInputError as exc:
        raise BadInput(str(exc)) from None
    from engine.config import MemoryConfig
    from review_app.app import run_review  # late: Textual loads only for the commands that draw

    run_engine(can_open(db))  # a refused store (another embedder, a newer schema) is a message, not a traceback
    config = MemoryConfig() if sla_hours is None else MemoryConfig(review_sla_hours=sla_hours)
    try:
        run_review(db, reviewer, keymap, config=config)
    except UserInputError as exc:  # a bad keymap file, reported before the screen switches
        raise BadInput(str(exc)) from None


async def can_open(db: str) -> None:
    """Open and close the store once, so that what would refuse it fails before a screen is drawn
    (the same process then reuses the loaded embedder)."""
    from engine import Memory

    async with Memory(db):
        pass


@click.command()
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
@reviewer_option()
@keymap_option()
def demo(db: str, fresh: bool, no_open: bool, reviewer: str, keymap: str | None) -> None:
    """Build a demo database from the bundled conversations and open the workstation on it.

    The bundled conversations go through the offline extractor (no network, no API key), so the
    queue opens with real pending candidates: new facts, updates that would supersede an approved
    fact, and low-evidence items. An existing demo database is reused unless --fresh.
    """
    from review_app.demo import build_demo

    no_foreign_url(db)
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
            if path.stat().st_size and memdesk_version(db) == 0:
                raise BadInput(f"{db} exists and is not a memdesk database; not deleting it")
            remove_db(path)
        else:
            existing_db(db)
            echo(f"Using the existing demo database {db} (--fresh rebuilds it).", err=True)
    if not path.exists():
        # Built under a temporary name and renamed when complete: an interrupted build must not
        # leave a half-built database that the next `memdesk demo` would silently reuse.
        partial = path.with_name(f".{path.name}.building")
        remove_db(partial)
        try:
            with Progress("Building the demo") as bar:
                summary = run_engine(build_demo(str(partial), progress=bar))
            # The store is closed: a log SQLite left behind moves with the file; the shared-memory
            # index is rebuilt at the next open.
            if Path(f"{partial}-wal").exists():
                Path(f"{partial}-wal").replace(f"{path}-wal")
            Path(f"{partial}-shm").unlink(missing_ok=True)
            partial.replace(path)
        finally:
            remove_db(partial)
        _built(db, summary)
    if not no_open:
        _open_workstation(db, reviewer, keymap)


def _demo_in_postgres(url: str, fresh: bool) -> None:
    """The demo in a PostgreSQL database: built in place when it holds no memdesk store yet (there
    is no file to build aside and rename), reused when it does. --fresh would mean dropping a
    database's tables, which this command does not do to a server."""
    from review_app.demo import build_demo

    if memdesk_version(url):
        if fresh:
            raise BadInput(
                f"{masked(url)} already holds a memdesk store; --fresh deletes files only: drop and "
                "create the database (dropdb/createdb), then run demo again"
            )
        echo(f"Using the existing demo store in {masked(url)}.", err=True)
        return
    with Progress("Building the demo") as bar:
        _built(url, run_engine(build_demo(url, progress=bar)))


def _built(db: str, summary: dict[str, int]) -> None:
    echo(
        f"Built {masked(db)}: {summary['users']} users, {summary['exchanges']} exchanges; "
        f"{summary['approved']} candidates approved by the seeded demo-curator, "
        f"{summary['pending']} candidates waiting for review "
        f"({summary['pending_updates']} would supersede a fact).",
        err=True,
    )


@click.command()
@db_argument(existing=False, required=False)
@reviewer_option()
@keymap_option("A keymap file (binding id -> key).")
@sla_option()
def review(db: str | None, reviewer: str, keymap: str | None, sla_hours: float) -> None:
    """Open the review workstation on DB ($MEMDESK_DB, else ./memdesk.db)."""
    _open_workstation(existing_db(env_db(db)), reviewer, keymap, sla_hours)


@click.command()
@db_argument()
@credentials_option()
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
@keymap_option("A keymap file for every workstation.")
@sla_option()
@click.option(
    "--session-hours",
    type=FiniteHours(0, 24 * 30),
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
    sla_hours: float,
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

    run_engine(can_open(db))  # refused here (another embedder...), not in every browser tab
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
    # Every workstation this server starts is a `memdesk review` process with this environment:
    # the SLA travels in it, so the browser's header counts against the same hours as this one.
    os.environ["MEMDESK_SLA_HOURS"] = repr(sla_hours)
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


@click.group()
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
@credentials_option()
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
@credentials_option()
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
@credentials_option()
def reviewer_list(config: str) -> None:
    """The reviewer names in the credentials file (never the hashes)."""
    for name in sorted(_load_credentials_or_empty(config)):
        echo(name)

"""What every command of the `memdesk` command line shares: the one way it prints, its exit
codes, the engine runner that turns typed errors into them, and the option decorators.

Exit codes: 0 ok, 1 failure (the work could not be done), 2 bad input (nothing was changed).

Nothing here imports Textual, and nothing of the engine beyond its errors and the storage entry
points is imported before a command runs: `memdesk search` must not pay for a workstation it never
draws (tests/test_cli_package.py checks which modules a search loads).
"""

from __future__ import annotations

import asyncio
import getpass
import json
import math
import os
import sys
from collections.abc import Callable, Coroutine
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import click

from engine.errors import (
    ConfigurationError,
    ConflictError,
    MemdeskError,
    ModelError,
    UserInputError,
)
from engine.storage import database_errors, inspect, is_postgres_url, masked, refuse_foreign_url, server_went_away
from review_app.widgets.literal import visible

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_DB = "memdesk.db"
DEFAULT_DEMO_DB = "memdesk-demo.db"
DEFAULT_CREDENTIALS = "memdesk-reviewers.toml"
DEFAULT_SLA_HOURS = 48.0
"""MemoryConfig.review_sla_hours' default, written here so the option's help needs no engine import
(tests/test_cli_deployment.py checks the two agree)."""
MAX_SLA_HOURS = 10_000_000
"""Finite, and small enough for the microsecond arithmetic of the queue's age (about 1,100 years)."""


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


def run_engine(coro: Coroutine[Any, Any, T]) -> T:
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


def os_user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name (some containers): make the reviewer say who they are
        return ""


def memdesk_version(db: str) -> int:
    """The schema version of the store at `db` (0: not a memdesk store; a missing file is 0 too),
    opening nothing for writing; an unreachable server, a refused login, a file that is not SQLite
    are exit 2 with one line (engine.storage.inspect)."""
    return run_engine(inspect(db))[1]


def no_foreign_url(db: str) -> None:
    """Exit 2 for a mysql:// (or any non-PostgreSQL) URL, before it is taken for a file name."""
    try:
        refuse_foreign_url(db)
    except UserInputError as exc:
        raise BadInput(str(exc)) from None


def existing_db(db: str) -> str:
    """An existing memdesk store (a path or a URL), or exit 2 with a message that says what to do."""
    no_foreign_url(db)
    if not is_postgres_url(db) and not Path(db).exists():
        raise BadInput(f"{db}: no such database (a database is created by `memdesk ingest DB FILE` or `memdesk demo`)")
    if memdesk_version(db) == 0:
        if is_postgres_url(db):
            raise BadInput(
                f"{masked(db)} holds no memdesk store (one is created by `memdesk ingest URL FILE` "
                "or `memdesk demo --db URL`)"
            )
        raise BadInput(f"{masked(db)} is not a memdesk database")
    return db


def no_user(user: str, db: str) -> Exception:
    from engine.errors import NotFoundError

    shown = masked(db)
    return NotFoundError(f"no data for user {user!r} in {shown} (`memdesk stats {shown}` counts what it holds)")


def remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        part = Path(f"{path}{suffix}")
        if part.exists():
            part.unlink()


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


def when(at: datetime | str | None) -> str:
    """A time as the text output prints it: ISO 8601 to the second ("2026-12-05T07:15:41+00:00"),
    from a datetime or from the ISO text a JSON-shaped result holds; "-" for none. The JSON output
    keeps the full time."""
    if at is None:
        return "-"
    moment = datetime.fromisoformat(at) if isinstance(at, str) else at
    return moment.isoformat(timespec="seconds")


def json_text(data: Any) -> str:
    """JSON with non-ASCII kept readable. json.dumps escapes C0 controls but not DEL and the C1
    range (0x9b is CSI on some terminals), so those are written as \\u escapes too: the same
    JSON value, nothing a terminal acts on."""
    return json.dumps(data, indent=2, ensure_ascii=False, default=str).translate(_C1)


def parse_date(value: str | None, what: str) -> Any:
    if value is None:
        return None
    from engine.timeutil import parse_datetime

    try:
        return parse_datetime(value, what)
    except UserInputError as exc:
        raise BadInput(str(exc)) from None


def print_mapping(data: dict[str, Any], indent: int = 0) -> None:
    """Nested dicts as an indented outline; lists of scalars on one line."""
    pad = "  " * indent
    width = max((len(str(k)) for k in data), default=0)
    for key, value in data.items():
        if isinstance(value, dict):
            echo(f"{pad}{key}:")
            if value:
                print_mapping(value, indent + 1)
            else:
                echo(f"{pad}  (none)")
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            echo(f"{pad}{key}:")
            for item in value:
                echo(f"{pad}  -")
                print_mapping(item, indent + 2)
        else:
            if isinstance(value, list):
                shown = ", ".join(map(str, value)) if value else "(none)"
            else:
                shown = "-" if value is None else value
            echo(f"{pad}{str(key).ljust(width)}  {shown}")


# -- shared options and arguments ------------------------------------------------------------------


class _Store(click.ParamType):
    """A database argument that must already hold a memdesk store (`existing_db`): checked while
    the command line is parsed, so no command body can forget it."""

    name = "DB"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        return existing_db(str(value))


STORE = _Store()


def db_argument(*, existing: bool = True, required: bool = True) -> Callable[[F], F]:
    """DB, a file path or a postgresql:// URL. `existing` (the default): it must hold a memdesk
    store, or exit 2 with what to do; `ingest`, `demo` and `migrate`'s destination create one."""
    kind: click.ParamType = STORE if existing else click.Path(dir_okay=False)
    return click.argument("db", type=kind, required=required, metavar="DB")


def user_option(help: str = "Whose data.", *, required: bool = True) -> Callable[[F], F]:
    """--user: the user whose data a command reads or changes. An empty name is exit 2 (it would
    otherwise read as "no such user", or, without --user, as every user)."""

    def check(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        if value is not None and not value.strip():
            extra = "" if required else "; leave it out for every user"
            raise BadInput(f"--user is empty{extra}")
        return value

    return click.option("--user", required=required, help=help, callback=check)


def json_option(what: str = "the result") -> Callable[[F], F]:
    """--json: the result as JSON on stdout (messages stay on stderr)."""
    return click.option("--json", "as_json", is_flag=True, help=f"Print {what} as JSON.")


def _named(flag: str, what: str) -> Callable[[click.Context, click.Parameter, str], str]:
    def check(ctx: click.Context, param: click.Parameter, value: str) -> str:
        if not (value or "").strip():
            raise BadInput(f"{what} pass {flag} NAME or set MEMDESK_REVIEWER")
        from review_app.auth import check_not_reserved

        try:
            return check_not_reserved(value.strip())
        except UserInputError as exc:
            raise BadInput(f"{flag}: {exc}") from None

    return check


def actor_option(
    what: str = "who makes this change?", help: str = "Who makes the change (recorded in the audit log)."
) -> Callable[[F], F]:
    """--actor: who the audit log records ($MEMDESK_REVIEWER, else the OS user); never empty, and
    never the engine's own name (review_app.auth.check_not_reserved)."""
    return click.option(
        "--actor",
        envvar="MEMDESK_REVIEWER",
        default=os_user,
        show_default="$MEMDESK_REVIEWER or OS user",
        help=help,
        callback=_named("--actor", what),
    )


def reviewer_option() -> Callable[[F], F]:
    """--reviewer: the name the workstation records decisions under. Its emptiness is checked where
    the workstation opens (a `demo --no-open` needs no reviewer)."""
    return click.option(
        "--reviewer",
        envvar="MEMDESK_REVIEWER",
        default=os_user,
        show_default="$MEMDESK_REVIEWER or OS user",
        help="Your name in the audit log.",
    )


def keymap_option(help: str = "A keymap file for the workstation.") -> Callable[[F], F]:
    return click.option("--keymap", type=click.Path(exists=True, dir_okay=False), help=help)


def credentials_option() -> Callable[[F], F]:
    return click.option(
        "--config",
        "config",
        envvar="MEMDESK_REVIEWERS",
        default=DEFAULT_CREDENTIALS,
        show_default=True,
        type=click.Path(dir_okay=False),
        help="The reviewer credentials file ($MEMDESK_REVIEWERS).",
    )


class FiniteHours(click.ParamType):
    """A number of hours in (low, high]: finite, so `nan` and `inf` are exit 2 with one line
    (click's FloatRange lets nan through every bound, and `inf` passes an open upper end)."""

    name = "HOURS"

    def __init__(self, low: float, high: float) -> None:
        self.low = low
        self.high = high

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            hours = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of hours", param, ctx)
        if not math.isfinite(hours) or not self.low < hours <= self.high:
            self.fail(f"{value!r} is not a number of hours in ({self.low:g}, {self.high:g}]", param, ctx)
        return hours


class _FactId(click.ParamType):
    """A fact's number as the workstation and `history` show it (#12 or 12): a positive integer."""

    name = "FACT_ID"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        text = str(value).strip().removeprefix("#")
        if not text.isascii() or not text.isdigit() or int(text) < 1:
            self.fail(f"{value!r} is not a fact id (a number such as 12, as `memdesk history` shows it)", param, ctx)
        return int(text)


FACT_ID = _FactId()


def fact_id_argument(*, required: bool = True) -> Callable[[F], F]:
    return click.argument("fact_id", type=FACT_ID, required=required)


def sla_option() -> Callable[[F], F]:
    """--sla-hours: how long a pending item may wait before it counts as late; a setting of the
    deployment ($MEMDESK_SLA_HOURS), the same for the workstation, the browser and the digest."""
    return click.option(
        "--sla-hours",
        envvar="MEMDESK_SLA_HOURS",
        type=FiniteHours(0, MAX_SLA_HOURS),
        default=DEFAULT_SLA_HOURS,
        show_default="$MEMDESK_SLA_HOURS or 48",
        help="Hours a pending item may wait before it counts as past the SLA.",
    )


def deployment_sla_hours() -> float:
    """$MEMDESK_SLA_HOURS as `--sla-hours` reads it (a finite number of hours), else 48: for the
    workstations `memdesk serve` starts ahead of a session (review_app/warm.py), which are not
    started through the `review` command and its option."""
    raw = os.environ.get("MEMDESK_SLA_HOURS")
    if raw is None or not raw.strip():
        return DEFAULT_SLA_HOURS
    try:
        return float(FiniteHours(0, MAX_SLA_HOURS).convert(raw, None, None))
    except click.BadParameter as exc:
        raise BadInput(f"$MEMDESK_SLA_HOURS: {exc.message}") from None


def env_db(db: str | None) -> str:
    """DB, else $MEMDESK_DB, else ./memdesk.db (the commands a reviewer or an agent runs often)."""
    return db or os.environ.get("MEMDESK_DB") or DEFAULT_DB

"""A user's data rights: `export` (everything the store holds of them) and `erase`."""

from __future__ import annotations

import os
from typing import Any

import click

from engine.storage import is_postgres_url, masked

from .common import BadInput, Failure, db_argument, echo, json_text, run_engine, user_option


def write_private(path: str, text: str) -> None:
    """Write `text` to `path` readable by its owner only (0600), whatever the umask and whether
    the file existed: an export is one person's whole record, and 0644 would let every user of
    the machine read it. The mode is set on the open descriptor before a byte is written."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # an existing file keeps its mode through O_CREAT: narrow it too
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            fd = -1
            out.write(text)
    finally:
        if fd >= 0:
            os.close(fd)


@click.command()
@db_argument()
@user_option("Whose data.")
@click.option("--messages", "include_messages", is_flag=True, help="Include the raw conversation messages.")
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, writable=True),
    help="Write to a file (mode 0600), not stdout.",
)
def export(db: str, user: str, include_messages: bool, output: str | None) -> None:
    """USER's facts (every version, with intervals and statuses), candidates, tombstones and audit
    history, as JSON. Exit 2 when the store holds nothing of USER. A file written with -o is
    readable by its owner only."""

    async def go() -> dict[str, Any]:
        from engine import Memory
        from engine.export import export_user

        async with Memory(db) as mem:
            return await export_user(mem.ctx, user, include_messages=include_messages)

    text = json_text(run_engine(go()))
    if output:
        try:
            write_private(output, text + "\n")
        except OSError as exc:
            raise Failure(f"{output}: {exc.strerror or exc}") from None
        echo(f"Wrote {output} (mode 0600).", err=True)
    else:
        echo(text)


def _actor(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """Named on purpose (no default from the environment): an erasure is one person's act."""
    if not value.strip():
        raise BadInput("--actor is empty: name who carries out the erasure")
    from engine.errors import UserInputError
    from review_app.auth import check_not_reserved

    try:
        return check_not_reserved(value.strip())
    except UserInputError as exc:
        raise BadInput(f"--actor: {exc}") from None


@click.command()
@db_argument()
@user_option("Whose data to erase.")
@click.option(
    "--actor", required=True, callback=_actor, help="Who carries out the erasure (recorded in the audit log)."
)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def erase(db: str, user: str, actor: str, yes: bool) -> None:
    """Right to erasure: remove every message, episode, candidate, fact, index row and tombstone
    of USER, redact the text of their audit rows, and compact the store so no text remains in it.

    The audit log keeps what happened and when (with the text removed) and records the erasure.
    On PostgreSQL the compaction (VACUUM FULL) needs the tables' owner: as the README's erasure
    role the rows are gone and redacted (exit 0), and the owner compacts afterwards.
    """
    if not yes:
        click.confirm(
            f"Erase every trace of user {user!r} from {masked(db)}? This cannot be undone.", abort=True, err=True
        )

    async def go() -> Any:
        from engine import Memory
        from engine.erase import erase_user

        async with Memory(db) as mem:
            return await erase_user(mem.ctx, user, actor)

    report = run_engine(go())
    echo(
        f"Erased user {user!r}: {report.messages} messages, {report.episodes} episodes, "
        f"{report.extraction_runs} extraction runs, {report.candidates} candidates, {report.knowledge} facts, "
        f"{report.tombstones} tombstones; {report.audit_redacted} audit rows redacted (audit row {report.audit_id})."
    )
    if report.wal_truncated:
        return
    if is_postgres_url(db):
        # The erasure role's expected case (README, "Erasure on a server"): the erasure is done;
        # rewriting the tables' files is the owner's, so it is said, not failed.
        echo(
            "Not compacted: this role does not own memdesk's tables, so the deleted rows' old versions stay in "
            "the tables' files until they are rewritten; as the owner role, run `VACUUM FULL` on memdesk's tables "
            '(README, "Erasure on a server"), or let routine vacuuming reuse the space.',
            err=True,
        )
        return
    raise Failure(
        "the rows are gone, but another process has the database open, so the write-ahead log still holds "
        "old pages; close the other process (SQLite empties the log when the last connection closes)"
    )

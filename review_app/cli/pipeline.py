"""What moves data into a store or between stores: `ingest`, `process` (extraction), `reembed`
and `migrate`."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from engine.errors import ConfigurationError, MemdeskError, UserInputError
from engine.storage import is_postgres_url, masked

from .common import (
    STORE,
    BadInput,
    Failure,
    Progress,
    actor_option,
    db_argument,
    echo,
    json_option,
    json_text,
    memdesk_version,
    no_foreign_url,
    remove_db,
    run_engine,
    user_option,
)


@click.command()
@db_argument(existing=False)
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

    no_foreign_url(db)
    path = None if is_postgres_url(db) else Path(db)
    if path is None:
        memdesk_version(db)  # an unreachable server or a refused login, before the file is read
    elif path.is_dir():
        raise BadInput(f"{db} is a directory, not a database file")
    elif path.exists() and path.stat().st_size and memdesk_version(db) == 0:
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
        count = run_engine(go())
    except click.ClickException:
        if created and path is not None:  # the write failed: leave no empty file for the next command to trust
            remove_db(path)
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


@click.command()
@db_argument()
@user_option("Only this user's unprocessed messages.", required=False)
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
@json_option("the report")
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
    extractor = _extractor(extractor_name, model, base_url)
    # with an LLM configured, it also judges same / replaces / both for free-text neighbours
    judge = _judge(model, base_url) if extractor is not None else None

    async def go() -> Any:
        from engine import Memory

        async with Memory(db, extractor=extractor, judge=judge) as mem:
            with Progress("Processing users") as bar:
                return await mem.process(user, concurrency=concurrency, progress=bar)

    report = run_engine(go())
    from engine.models import to_jsonable

    data = to_jsonable(asdict(report))
    if as_json:
        echo(json_text(data))
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


@click.command()
@db_argument()
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
@actor_option("who runs this?", "Who runs the move (recorded in the audit log).")
def reembed(db: str, embedder_name: str | None, batch_size: int, actor: str) -> None:
    """Re-embed every fact of DB (all statuses) with another embedder, so DB opens with it.

    Needed when DB was built with another embedder than the one memdesk opens it with (the default
    is WordLlama; databases from before it were built with the hashing embedder). Interrupt it at
    any time (Ctrl-C, kill): the store keeps working with its old embedder, and running the same
    command again resumes where it stopped. Run it while nothing else writes to DB. The move is
    audited as one `reembed` row.
    """
    from engine.embedders import default_embedder, make_embedder
    from engine.reembed import reembed as move

    try:
        target = make_embedder(embedder_name) if embedder_name else default_embedder()
    except ConfigurationError as exc:  # a bad MEMDESK_EMBEDDER
        raise BadInput(str(exc)) from None
    try:
        with Progress("Re-embedding facts") as bar:
            report = run_engine(move(db, target, actor=actor, batch_size=batch_size, progress=bar))
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


@click.command()
@click.argument("src", type=STORE)
@click.argument("dst")
@click.option(
    "--batch-size",
    type=click.IntRange(1, 100_000),
    default=1000,
    show_default=True,
    help="Rows read and written per batch.",
)
@json_option("the per-table counts")
def migrate(src: str, dst: str, batch_size: int, as_json: bool) -> None:
    """Copy the whole store SRC into the empty store DST (each a file path or a postgresql:// URL).

    Everything moves, ids included: messages, episodes, extraction runs, candidates, every version
    of every fact with its intervals and vector, tombstones, what the gates discarded, the team's
    flags, second reviews and assignments, and the audit log. DST must be empty (a new file, or a
    database with no memdesk rows); the copy is then counted and compared row for row on both
    sides. Stop everything that writes to SRC first.
    """
    from engine.transfer import copy_store

    no_foreign_url(dst)
    created = _new_file(dst)
    try:
        with Progress("Copying rows") as bar:
            report = run_engine(copy_store(src, dst, batch=batch_size, progress=bar))
    except BaseException as exc:
        if created is not None and created.exists():
            remove_db(created)
            echo(f"{dst} was removed: it held a partial copy.", err=True)
        if isinstance(exc, KeyboardInterrupt):
            partial = "" if created is not None else f"; {dst} may hold a partial copy: empty it before migrating again"
            raise Failure(f"interrupted{partial}") from None
        raise
    data_tables = [t for t in report.tables if t.table != "meta"]
    # _verify raises on any difference; this re-states what it checked, so the line below can
    # never claim more than the figures printed above it show.
    verified = all(t.source_rows == t.copied == t.destination_rows for t in data_tables)
    settings = next((t for t in report.tables if t.table == "meta"), None)
    if as_json:
        echo(
            json_text(
                {
                    "source": report.source,
                    "destination": report.destination,
                    "seconds": report.seconds,
                    "settled": report.settled,
                    "verified": verified,
                    "tables": [asdict(t) for t in report.tables],
                }
            )
        )
        if not verified:
            raise Failure("the copied counts do not match on both sides")
        return
    echo(f"Copied {report.source} -> {report.destination} in {report.seconds} s:")
    echo(f"  {'table':<16}{'source':>10}{'copied':>10}{'destination':>13}")
    for t in data_tables:
        echo(f"  {t.table:<16}{t.source_rows:>10}{t.copied:>10}{t.destination_rows:>13}")
    if settings is not None:
        # meta holds settings, some of them each store's own (its schema level, its backend's
        # keys): the source's settings are compared by key, and the destination may hold more.
        own = settings.destination_rows - settings.copied
        extra = f"; the destination keeps {own} setting(s) of its own" if own > 0 else ""
        echo(f"  settings (meta): the source's {settings.copied} are in the destination{extra}")
    if not verified:
        raise Failure("the copied counts do not match on both sides; do not use the copy")
    echo(
        f"Verified: {sum(t.copied for t in data_tables)} rows in {len(data_tables)} tables; counts, ids and every"
        " row's contents match on both sides."
    )
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
        memdesk_version(target)
        return None
    path = Path(target)
    if path.is_dir():
        raise BadInput(f"{target} is a directory, not a database file")
    if path.exists():
        if path.stat().st_size and memdesk_version(target) == 0:
            raise BadInput(f"{target} exists and is not a memdesk database")
        return None
    if not path.parent.is_dir():
        raise BadInput(f"directory {path.parent} does not exist")
    return path

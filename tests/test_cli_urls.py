"""A PostgreSQL URL is accepted wherever a database path is (issue 11): every command, the
workstation, `memdesk serve`. What needs no server is checked first (an unreachable server is one
clear line and exit 2, the password never printed; the masking itself; where serve puts the URL);
then, against the test server, `memdesk demo --db URL` and `memdesk stats URL`, and a workstation
that shows a candidate queued by another process without a key press.
"""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from engine import HashingEmbedder, Memory
from engine.errors import UserInputError
from engine.storage import database_errors, inspect, masked
from review_app.app import ReviewApp
from review_app.auth import CredentialFile, hash_password, write_credentials
from review_app.serve import WorkstationServer
from tests.test_cli import jsonl, memdesk
from tests.test_tui_queue import SIZE, queue, settle_until
from tests.tui_seed import SeededDb, fixed_clock


def _closed_port() -> int:
    """A port nothing listens on: bound, never listened on, closed again."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


SECRET = "s3cr3t-pw"


def _empty_store(path: Path) -> Path:
    """A memdesk store with no rows (`migrate`'s source must exist)."""

    async def create() -> None:
        async with Memory(path, embedder=HashingEmbedder()):
            pass

    asyncio.run(create())
    return path


def _command_lines(url: str, tmp: Path) -> dict[str, list[str | Path]]:
    conversations = jsonl(tmp / "c.jsonl", [{"user_id": "ana", "user": "I keep bees.", "assistant": "Nice."}])
    credentials = tmp / "reviewers.toml"
    write_credentials(str(credentials), {"ana": hash_password("a-long-enough-password")})
    return {
        "stats": ["stats", url],
        "search": ["search", url, "bees", "--user", "ana"],
        "export": ["export", url, "--user", "ana"],
        "erase": ["erase", url, "--user", "ana", "--actor", "t", "--yes"],
        "process": ["process", url],
        "reembed": ["reembed", url, "--embedder", "hashing", "--actor", "t"],
        "ingest": ["ingest", url, conversations],
        "review": ["review", url, "--reviewer", "t"],
        "demo": ["demo", "--db", url, "--no-open", "--reviewer", "t"],
        "mcp": ["mcp", url, "--user", "ana"],
        "serve": ["serve", url, "--config", credentials, "--port", "0"],
        "migrate": ["migrate", url, tmp / "copy.db"],
        "migrate-to": ["migrate", _empty_store(tmp / "src.db"), url],
    }


@pytest.mark.parametrize(
    "command",
    [
        "stats",
        "search",
        "export",
        "erase",
        "process",
        "reembed",
        "ingest",
        "review",
        "demo",
        "mcp",
        "serve",
        "migrate",
        "migrate-to",
    ],
)
def test_an_unreachable_server_is_one_line_and_exit_2_without_the_password(command: str, tmp_path: Path) -> None:
    url = f"postgresql://memdesk:{SECRET}@127.0.0.1:{_closed_port()}/memdesk"
    done = memdesk(*_command_lines(url, tmp_path)[command], cwd=tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert SECRET not in done.stdout + done.stderr
    message = done.stderr.strip()
    assert message.count("\n") == 0, message  # one line, no traceback
    assert "cannot reach the PostgreSQL server" in message
    assert "postgresql://memdesk:***@127.0.0.1:" in message


def test_the_same_command_on_a_path_is_still_exit_2_for_a_missing_file(tmp_path: Path) -> None:
    """Positive control of the URL branch: a path is still a path (a typo is not a URL)."""
    done = memdesk("stats", tmp_path / "typo.db")
    assert done.returncode == 2
    assert "no such database" in done.stderr
    assert not (tmp_path / "typo.db").exists()


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:secret@h:5432/db", "postgresql://u:***@h:5432/db"),
        ("postgres://u:p@ss/w@rd@h/db", "postgres://u:***@h/db"),  # a password with unescaped @ and /
        ("postgresql://u@h/db?password=secret&sslmode=require", "postgresql://u@h/db?password=***&sslmode=require"),
        ("postgresql://h/db", "postgresql://h/db"),
        ("/tmp/a:b@c.db", "/tmp/a:b@c.db"),  # a path is never rewritten
    ],
)
def test_masked_hides_every_password_the_driver_would_read(url: str, shown: str) -> None:
    assert masked(url) == shown


def test_database_errors_cover_both_drivers() -> None:
    import sqlite3

    import asyncpg

    errors = database_errors()
    assert issubclass(sqlite3.OperationalError, errors)
    assert issubclass(asyncpg.InvalidPasswordError, errors)
    assert not issubclass(ValueError, errors)


async def test_inspect_reads_a_version_without_creating_anything(tmp_path: Path, tui_db: SeededDb) -> None:
    path, _ = tui_db
    assert await inspect(tmp_path / "missing.db") == (False, 0)
    assert not (tmp_path / "missing.db").exists()
    exists, version = await inspect(path)
    assert exists and version > 0
    (tmp_path / "text.db").write_text("not sqlite at all, just some text " * 50)
    with pytest.raises(UserInputError, match="not a SQLite database"):
        await inspect(tmp_path / "text.db")


def test_review_app_shows_the_url_masked() -> None:
    app = ReviewApp(f"postgresql://u:{SECRET}@127.0.0.1:1/x", "ana")
    assert app.sub_title == "postgresql://u:***@127.0.0.1:1/x"
    assert app.get_default_screen().target == "postgresql://u:***@127.0.0.1:1/x"  # type: ignore[attr-defined]


def test_serve_keeps_the_url_out_of_argv_and_the_page(tmp_path: Path) -> None:
    write_credentials(str(tmp_path / "r.toml"), {"ana": hash_password("a-long-enough-password")})
    url = f"postgresql://u:{SECRET}@db.example:5432/memdesk"
    server = WorkstationServer(url, CredentialFile(str(tmp_path / "r.toml")))
    assert not any(SECRET in part for part in server.app_command("ana"))
    assert server.app_env() == {"MEMDESK_DB": url}  # the workstation process still gets the URL
    assert server.shown_db == "postgresql://u:***@db.example:5432/memdesk"
    on_disk = WorkstationServer(str(tmp_path / "x.db"), CredentialFile(str(tmp_path / "r.toml")))
    assert on_disk.app_env() == {"MEMDESK_DB": str((tmp_path / "x.db").resolve())}
    assert on_disk.shown_db == "x.db"


# -- new candidates reach an open workstation ------------------------------------------------------


async def test_a_candidate_queued_elsewhere_appears_without_a_key_press(tui_db: SeededDb) -> None:
    path, _ = tui_db
    app = ReviewApp(path, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle_until(pilot, lambda: queue(app).current_id is not None, "the queue loading")
        before = queue(app).total
        async with Memory(path, clock=fixed_clock) as other:  # another process: its own connections
            cid = await other.queue_candidate("u-ana", "Ana learned to sail", actor="elsewhere")
        await settle_until(pilot, lambda: cid in queue(app).pending_list.candidates, "the new candidate appearing")
        assert queue(app).total == before + 1
        assert queue(app).pending_list.index_of(cid) is not None


async def test_a_candidate_queued_elsewhere_after_a_decision_here_appears_too(store_target: str) -> None:
    """The screen's own decision lowers the count it compares announcements with: otherwise the
    first candidate queued elsewhere after a decision here (same count as at the last look) was
    never shown on PostgreSQL, which announces new candidates only (SQLite's watcher also reports
    the decision's own commit)."""
    async with Memory(store_target, clock=fixed_clock) as mem:
        first = await mem.queue_candidate("u-ana", "Ana keeps bees", actor="seed")
        await mem.queue_candidate("u-ana", "Ana plays the cello", actor="seed")
    app = ReviewApp(store_target, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle_until(pilot, lambda: queue(app).current_id == first, "the queue loading")
        await pilot.press("a")
        await settle_until(pilot, lambda: queue(app).total == 1 and not queue(app).decisions.busy, "the approval")
        async with Memory(store_target, clock=fixed_clock) as other:
            cid = await other.queue_candidate("u-ana", "Ana learned to sail", actor="elsewhere")
        await settle_until(pilot, lambda: cid in queue(app).pending_list.candidates, "the new candidate appearing")
        assert queue(app).total == 2


async def test_a_candidate_queued_elsewhere_while_another_is_decided_elsewhere_appears(store_target: str) -> None:
    """One candidate decided on another workstation and one queued by an agent between two looks
    leave the count as it was: the screen compared counts and never showed the new one (on
    PostgreSQL a decision announces nothing, so the two always met in one look). It compares ids."""
    async with Memory(store_target, clock=fixed_clock) as mem:
        first = await mem.queue_candidate("u-ana", "Ana keeps bees", actor="seed")
        second = await mem.queue_candidate("u-ana", "Ana plays the cello", actor="seed")
    app = ReviewApp(store_target, "ana", clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle_until(pilot, lambda: queue(app).current_id == first, "the queue loading")
        async with Memory(store_target, clock=fixed_clock) as other:
            await other.review.approve(second, "bo")
            cid = await other.queue_candidate("u-ana", "Ana learned to sail", actor="elsewhere")
        await settle_until(pilot, lambda: cid in queue(app).pending_list.candidates, "the new candidate appearing")
        assert set(queue(app).pending_list.candidates) == {
            first,
            cid,
        }  # the reload also drops the one decided elsewhere
        # control: what this screen decides itself is not news
        await pilot.press("a")
        await settle_until(
            pilot,
            lambda: first not in queue(app).pending_list.candidates and not queue(app).decisions.busy,
            "the approval",
        )
        assert set(queue(app).pending_list.candidates) == {cid}


async def test_memory_subscribe_new_candidates_calls_back_and_stops(tui_db: SeededDb) -> None:
    path, _ = tui_db
    calls: list[int] = []
    async with Memory(path, clock=fixed_clock) as mem, Memory(path, clock=fixed_clock) as other:
        stop = await mem.subscribe_new_candidates(lambda: calls.append(1))
        await other.queue_candidate("u-ana", "Ana learned to sail", actor="elsewhere")
        for _ in range(60):
            if calls:
                break
            await asyncio.sleep(0.05)
        assert calls, "no announcement within 3 s"
        await stop()
        seen = len(calls)
        await other.queue_candidate("u-ana", "Ana learned to knit", actor="elsewhere")
        await asyncio.sleep(1.2)  # longer than two watcher periods: a live watcher would have called
        assert len(calls) == seen


# -- against the test server -----------------------------------------------------------------------


def test_demo_and_stats_on_postgresql(pg_url: str, tmp_path: Path) -> None:
    done = memdesk("demo", "--db", pg_url, "--no-open", "--reviewer", "tester", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Built postgresql://" in done.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written beside: the store is the server
    stats = memdesk("stats", pg_url, "--json")
    assert stats.returncode == 0, stats.stderr
    data: dict[str, Any] = json.loads(stats.stdout)
    assert data, "stats printed nothing"
    again = memdesk("demo", "--db", pg_url, "--no-open", "--reviewer", "tester")
    assert again.returncode == 0 and "Using the existing demo store" in again.stderr
    fresh = memdesk("demo", "--db", pg_url, "--no-open", "--fresh", "--reviewer", "tester")
    assert fresh.returncode == 2 and "dropdb" in fresh.stderr


def test_a_database_without_a_memdesk_store_is_refused(pg_url: str) -> None:
    done = memdesk("stats", pg_url)
    assert done.returncode == 2
    assert "holds no memdesk store" in done.stderr


BAD_URLS = {
    # issue 18, failure 8: an impossible port was an OverflowError traceback, exit 1
    "impossible port": (f"postgresql://memdesk:{SECRET}@127.0.0.1:99999/memdesk", "port must be 0-65535"),
    "unknown host": (f"postgresql://memdesk:{SECRET}@no-such-host.invalid/memdesk", "cannot reach"),
    "bad scheme": (f"mysql://memdesk:{SECRET}@127.0.0.1/memdesk", "cannot open a mysql:// URL"),
}


@pytest.mark.parametrize("kind", sorted(BAD_URLS))
def test_every_bad_url_is_one_line_and_exit_2_in_every_command(kind: str, tmp_path: Path) -> None:
    url, says = BAD_URLS[kind]
    for command, argv in _command_lines(url, tmp_path).items():
        done = memdesk(*argv, cwd=tmp_path)
        message = done.stderr.strip()
        assert done.returncode == 2, (command, done.stdout, done.stderr)
        assert message.count("\n") == 0 and says in message, (command, message)
        assert SECRET not in done.stdout + done.stderr, command


def test_a_server_that_goes_away_mid_command_is_named_with_what_was_kept(pg_url: str) -> None:
    """Issue 18, failure 8: `process` while PostgreSQL restarted said only "cannot call
    Transaction.__aexit__(): the underlying connection is closed". The connection here is ended by
    the server (pg_terminate_backend, what a restart does to every session) inside a transaction."""
    import asyncpg
    import click

    from review_app.cli.common import run_engine as _run

    async def interrupted() -> None:
        conn = await asyncpg.connect(pg_url)
        admin = await asyncpg.connect(pg_url)
        try:
            async with conn.transaction():
                await conn.execute("SELECT 1")
                await admin.execute("SELECT pg_terminate_backend($1)", conn.get_server_pid())
                await asyncio.sleep(0.2)
                await conn.execute("SELECT 1")
        finally:
            await admin.close()
            await conn.close()

    with pytest.raises(click.ClickException) as failed:
        _run(interrupted())
    message = failed.value.message
    assert failed.value.exit_code == 1 and message.count("\n") == 0
    assert "server went away" in message and "Kept: everything committed before" in message

    async def wrong_sql() -> None:  # positive control: a database error that is not a lost server
        conn = await asyncpg.connect(pg_url)
        try:
            await conn.execute("SELECT no_such_column FROM pg_class")
        finally:
            await conn.close()

    with pytest.raises(click.ClickException) as other:
        _run(wrong_sql())
    assert other.value.message.startswith("database error:")

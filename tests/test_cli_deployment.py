"""What a team hits next (issue 29, item 6), each with the test that failed before its fix and its
positive control: erasure on PostgreSQL as the README's erasure role, the mode of an export file,
hours that are not numbers, the engine's own name as a reviewer, the SLA as a deployment setting
(`--sla-hours` / $MEMDESK_SLA_HOURS on review, serve and digest), and digest's counts by kind."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from engine import HashingEmbedder, Memory, MemoryConfig, UserInputError
from review_app.cli.common import DEFAULT_SLA_HOURS
from tests.test_cli import memdesk
from tests.test_pg_roles import Urls, fetch, roles  # noqa: F401  (roles: the README's roles, a fixture)

NOW = datetime.now(UTC)


def _seed(db: Path | str, *, ages_hours: tuple[float, ...] = (), embedder: Any = None) -> None:
    async def go() -> None:
        async with Memory(db, embedder=embedder) as mem:
            await mem.add_knowledge("ana", "Ana keeps bees", actor="seed")
            for i, hours in enumerate(ages_hours):
                await mem.queue_candidate("ana", f"Ana keeps {i + 2} goats", created_at=NOW - timedelta(hours=hours))

    asyncio.run(go())


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "m.db"
    _seed(path, ages_hours=(1, 5))
    return path


# -- erase on PostgreSQL ---------------------------------------------------------------------------


def test_erase_as_the_erasure_role_succeeds_and_says_what_the_owner_does(roles: Urls) -> None:  # noqa: F811
    """Before: the rows were erased, then SQLite's advice ("another process has the database open")
    and exit 1. The erasure role does not own the tables, so compaction is the owner's: exit 0."""
    hashing = {"MEMDESK_EMBEDDER": "hashing"}
    _seed(roles["owner"], embedder=HashingEmbedder())
    done = memdesk("erase", roles["erase"], "--user", "ana", "--actor", "dpo", "--yes", env=hashing)
    assert done.returncode == 0, done.stderr
    assert "Erased user 'ana'" in done.stdout and "1 facts" in done.stdout
    assert "Not compacted" in done.stderr and "VACUUM FULL" in done.stderr
    assert "another process" not in done.stderr and "SQLite" not in done.stderr
    assert asyncio.run(fetch(roles["owner"], "SELECT count(*) FROM knowledge WHERE user_id = 'ana'")) == [(0,)]
    # control: as the owner the erasure compacts, and says nothing about it
    _seed(roles["owner"], embedder=HashingEmbedder())
    owner = memdesk("erase", roles["owner"], "--user", "ana", "--actor", "dpo", "--yes", env=hashing)
    assert owner.returncode == 0, owner.stderr
    assert "Not compacted" not in owner.stderr


def test_erase_on_sqlite_compacts_and_says_nothing_of_owners(db: Path) -> None:
    """The other backend of the same command: the file is compacted, exit 0, no PostgreSQL note."""
    done = memdesk("erase", db, "--user", "ana", "--actor", "dpo", "--yes")
    assert done.returncode == 0, done.stderr
    assert "Erased user 'ana'" in done.stdout and "Not compacted" not in done.stderr


# -- export --------------------------------------------------------------------------------------------


def test_export_to_a_file_is_readable_by_its_owner_only(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "ana.json"
    old = os.umask(0o022)  # the usual umask, under which a plain write made 0644
    try:
        done = memdesk("export", db, "--user", "ana", "-o", out)
        assert done.returncode == 0, done.stderr
        assert stat.S_IMODE(out.stat().st_mode) == 0o600
        assert "Ana keeps bees" in out.read_text(encoding="utf-8")
        existing = tmp_path / "old.json"
        existing.write_text("stale")
        existing.chmod(0o644)
        assert memdesk("export", db, "--user", "ana", "-o", existing).returncode == 0
        assert stat.S_IMODE(existing.stat().st_mode) == 0o600 and "stale" not in existing.read_text()
    finally:
        os.umask(old)
    # control: to stdout, the same data (but the export's own timestamp)
    shown = memdesk("export", db, "--user", "ana")
    strip = json.loads
    written, printed = strip(out.read_text(encoding="utf-8")), strip(shown.stdout)
    assert shown.returncode == 0 and {k: v for k, v in written.items() if k != "exported_at"} == {
        k: v for k, v in printed.items() if k != "exported_at"
    }


# -- hours that are not numbers --------------------------------------------------------------------


@pytest.mark.parametrize("hours", ["nan", "inf", "-inf", "NaN", "1e400", "0", "-1", "soon"])
def test_digest_sla_hours_that_are_not_a_number_of_hours_are_exit_2(db: Path, hours: str) -> None:
    done = memdesk("digest", db, "--sla-hours", hours)
    assert done.returncode == 2, (hours, done.stdout, done.stderr)
    assert "not a number of hours" in done.stderr and "Traceback" not in done.stderr
    env = memdesk("digest", db, env={"MEMDESK_SLA_HOURS": hours})
    assert env.returncode == 2 and "Traceback" not in env.stderr


def test_digest_takes_a_finite_sla_from_the_flag_or_the_deployment(db: Path) -> None:
    assert memdesk("digest", db).returncode == 0  # both wait less than 48 h
    assert memdesk("digest", db, "--sla-hours", "0.5").returncode == 1
    late = memdesk("digest", db, env={"MEMDESK_SLA_HOURS": "2"})
    assert late.returncode == 1 and "1 past the SLA of 2 h" in late.stdout
    assert memdesk("digest", db, "--sla-hours", "24", env={"MEMDESK_SLA_HOURS": "2"}).returncode == 0


def test_serve_refuses_session_hours_that_are_not_a_number_at_start(db: Path, tmp_path: Path) -> None:
    """Before: `--session-hours nan` started, and every login then answered 500."""
    creds = tmp_path / "r.toml"
    for hours in ("nan", "inf", "0"):
        done = memdesk("serve", db, "--config", creds, "--session-hours", hours, "--port", "0")
        assert done.returncode == 2 and "--session-hours" in done.stderr, (hours, done.stderr)
    # control: a number passes the option and reaches the next check (no reviewer in the file)
    done = memdesk("serve", db, "--config", creds, "--session-hours", "12", "--port", "0")
    assert done.returncode == 2 and "no credentials file" in done.stderr


# -- the engine's own name -------------------------------------------------------------------------


def test_no_reviewer_may_be_named_as_the_engine(db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    creds = tmp_path / "r.toml"
    for name in ("memdesk", "MEMDESK"):
        done = memdesk("reviewer", "add", name, "--config", creds, "--password-stdin", stdin="a long passphrase\n")
        assert done.returncode == 2 and "engine's own" in done.stderr
    assert not creds.exists()
    ok = memdesk("reviewer", "add", "memdesk-ops", "--config", creds, "--password-stdin", stdin="a long passphrase\n")
    assert ok.returncode == 0, ok.stderr

    erased = memdesk("erase", db, "--user", "ana", "--actor", "memdesk", "--yes")
    assert erased.returncode == 2 and "engine's own" in erased.stderr

    opened: list[str] = []
    monkeypatch.setattr("review_app.app.run_review", lambda db, reviewer, keymap, config=None: opened.append(reviewer))
    refused = memdesk("review", db, "--reviewer", "memdesk")
    assert refused.returncode == 2 and "engine's own" in refused.stderr and opened == []
    assert memdesk("review", db, "--reviewer", "ana").returncode == 0 and opened == ["ana"]


async def test_the_engine_refuses_decisions_under_its_own_name(store_target: str) -> None:
    async with Memory(store_target) as mem:
        cid = await mem.queue_candidate("ana", "Ana keeps goats", actor="agent")
        for call in (mem.review.claim(cid, "memdesk"), mem.review.approve(cid, "memdesk")):
            with pytest.raises(UserInputError, match="engine's own"):
                await call
        assert (await mem.review.get(cid)).status == "pending"
        fact = await mem.review.approve(cid, "ana")  # control
        assert fact.created_by == "ana"


# -- the SLA as a deployment setting ---------------------------------------------------------------


def test_the_default_sla_is_the_engines() -> None:
    assert MemoryConfig().review_sla_hours == DEFAULT_SLA_HOURS


def test_review_opens_the_workstation_with_the_deployments_sla(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[float] = []

    def fake(db: str, reviewer: str, keymap: str | None, config: MemoryConfig | None = None) -> None:
        assert config is not None
        seen.append(config.review_sla_hours)

    monkeypatch.setattr("review_app.app.run_review", fake)
    assert memdesk("review", db, "--reviewer", "ana").returncode == 0
    assert memdesk("review", db, "--reviewer", "ana", "--sla-hours", "6").returncode == 0
    assert memdesk("review", db, "--reviewer", "ana", env={"MEMDESK_SLA_HOURS": "12.5"}).returncode == 0
    assert seen == [48.0, 6.0, 12.5]
    assert memdesk("review", db, "--reviewer", "ana", "--sla-hours", "nan").returncode == 2
    assert seen == [48.0, 6.0, 12.5]


def test_serve_hands_its_sla_to_every_workstation_it_starts(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`serve` starts each browser session's workstation as `memdesk review` in its environment:
    the SLA travels there, so the browser's header counts against the same hours."""
    from review_app.serve import WorkstationServer

    creds = tmp_path / "r.toml"
    memdesk("reviewer", "add", "ana", "--config", creds, "--password-stdin", stdin="a long passphrase\n")
    started: list[str | None] = []

    async def fake_serve(self: WorkstationServer, host: str, port: int, ready: Any) -> None:
        started.append(os.environ.get("MEMDESK_SLA_HOURS"))

    monkeypatch.setattr(WorkstationServer, "serve", fake_serve)
    monkeypatch.setenv("MEMDESK_SLA_HOURS", "48")  # restored after the test: serve sets it for its children
    assert memdesk("serve", db, "--config", creds, "--sla-hours", "6").returncode == 0
    assert started == ["6.0"]


def test_a_workstation_started_ahead_reads_the_deployments_sla(monkeypatch: pytest.MonkeyPatch) -> None:
    """`serve`'s spare workstations (review_app/warm.py) are not started through `review`: they read
    the SLA serve put in their environment the same way, bad values refused alike."""
    from review_app.cli.common import BadInput, deployment_sla_hours

    monkeypatch.delenv("MEMDESK_SLA_HOURS", raising=False)
    assert deployment_sla_hours() == DEFAULT_SLA_HOURS
    monkeypatch.setenv("MEMDESK_SLA_HOURS", "6.0")
    assert deployment_sla_hours() == 6.0
    for bad in ("nan", "inf", "0", "soon"):
        monkeypatch.setenv("MEMDESK_SLA_HOURS", bad)
        with pytest.raises(BadInput, match="MEMDESK_SLA_HOURS"):
            deployment_sla_hours()


async def test_the_header_counts_past_the_configured_sla(tmp_path: Path) -> None:
    """The workstation's header, with the SLA a deployment gives it: an item 5 h old is late under
    a 2 h SLA and not under the default (the control)."""
    from review_app.app import ReviewApp
    from review_app.widgets.progress import ProgressHeader
    from tests.pilot_helpers import queue
    from tests.test_tui_queue import settle_until

    db = tmp_path / "h.db"
    await asyncio.to_thread(_seed, db, ages_hours=(5,))
    for hours, late in ((2.0, True), (48.0, False)):
        app = ReviewApp(str(db), "rev", config=MemoryConfig(review_sla_hours=hours), cursor_blink=False)
        async with app.run_test(size=(160, 40)) as pilot:

            def line(app: ReviewApp = app) -> str:
                return queue(app).query_one(ProgressHeader).render().plain

            await settle_until(pilot, lambda: "1 left" in line(), "the progress line")
            shown = line()
        assert ("1 past SLA" in shown) is late, shown


# -- digest's counts by kind -----------------------------------------------------------------------


def test_digest_text_gives_the_counts_by_kind(db: Path) -> None:
    async def more() -> None:
        async with Memory(db) as mem:
            fact = (await mem.knowledge("ana"))[0]
            await mem.request_forget("ana", fact.id, actor="agent", reason="asked")

    asyncio.run(more())
    done = memdesk("digest", db)
    assert done.returncode == 0, done.stderr
    assert "3 pending" in done.stdout
    by_kind = next(line for line in done.stdout.splitlines() if line.startswith("By kind:"))
    assert "new 2" in by_kind and "retraction 1" in by_kind

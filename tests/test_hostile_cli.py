"""The `memdesk` command line under hostile input and faults (issue 10), each case a real subprocess:
escaped output, exit 2 with `FILE:LINE: reason` for every bad input and nothing created, a disk
that fills up, a read-only file system and a database of a newer schema.

Must-nots come with their positive controls: the escaped text is still shown, a good line beside
the bad ones is still ingested, the same command on a good database succeeds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_cli import memdesk

from engine import Memory
from engine.storage.sqlite.schema import SCHEMA_VERSION
from tests.pilot_helpers import sqlite3  # the engine's own SQLite library (see there)

HOSTILE = "\x1b]2;PWNED\x07\x1b[2J"
SHOWN = "␛]2;PWNED␇␛[2J"  # the workstation's convention (review_app/widgets/literal.visible)
GOOD_LINE = {"user_id": "ok", "user": "I live in Oslo", "at": "2024-01-01T10:00:00Z"}


def assert_no_terminal_controls(*texts: str) -> None:
    for text in texts:
        bad = sorted({f"U+{ord(c):04X}" for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0})
        assert not bad, f"raw control characters reached the terminal: {bad}"


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fact, a user id and a rejection reason holding a title-setting and screen-clearing escape."""
    db = tmp_path_factory.mktemp("hostile") / "hostile.db"

    async def build() -> None:
        async with Memory(db) as mem:
            await mem.add_knowledge("ana", f"Ana's note {HOSTILE} about Lisbon", actor="seed")
            await mem.add_knowledge("ana", "Ana likes \x9bcsi Lisbon trams", actor="seed")
            await mem.add_knowledge(f"eve{HOSTILE}", "Eve lives in Lisbon", actor="seed")
            cid = await mem.queue_candidate("ana", "Ana owns a boat", actor="seed")
            await mem.review.reject(cid, reviewer="rita", reason=f"made up {HOSTILE}")

    asyncio.run(build())
    return db


# -- escaped output ----------------------------------------------------------------------------------


def test_search_shows_control_characters_escaped(hostile_db: Path) -> None:
    done = memdesk("search", hostile_db, "--user", "ana", "Lisbon")
    assert done.returncode == 0, done.stderr
    assert_no_terminal_controls(done.stdout, done.stderr)
    assert f"Ana's note {SHOWN} about Lisbon" in done.stdout  # control: the text is shown, escaped
    assert "Ana likes �csi Lisbon trams" in done.stdout


def test_search_json_keeps_the_exact_value_and_no_raw_controls(hostile_db: Path) -> None:
    done = memdesk("search", hostile_db, "--user", "ana", "Lisbon", "--json")
    assert done.returncode == 0, done.stderr
    assert_no_terminal_controls(done.stdout)
    statements = {i["statement"] for i in json.loads(done.stdout)["items"]}
    assert f"Ana's note {HOSTILE} about Lisbon" in statements and "Ana likes \x9bcsi Lisbon trams" in statements


def test_stats_text_mode_shows_rejection_reasons_escaped(hostile_db: Path) -> None:
    done = memdesk("stats", hostile_db)
    assert done.returncode == 0, done.stderr
    assert_no_terminal_controls(done.stdout, done.stderr)
    assert f"made up {SHOWN}" in done.stdout
    as_json = memdesk("stats", hostile_db, "--json")
    assert_no_terminal_controls(as_json.stdout)
    assert json.loads(as_json.stdout)["review"]["rejection_reasons"]["new"] == {f"made up {HOSTILE}": 1}


def test_a_hostile_user_id_is_escaped_in_output_and_errors(hostile_db: Path, tmp_path: Path) -> None:
    found = memdesk("search", hostile_db, "--user", f"eve{HOSTILE}", "Lisbon")
    assert found.returncode == 0 and "Eve lives in Lisbon" in found.stdout
    exported = memdesk("export", hostile_db, "--user", f"eve{HOSTILE}")
    assert exported.returncode == 0
    missing = memdesk("ingest", tmp_path / "x.db", tmp_path / f"in{HOSTILE}.jsonl")
    assert missing.returncode == 2
    assert f"in{SHOWN}.jsonl" in missing.stderr
    bad_flag = memdesk("search", hostile_db, "--user", "ana", "--top-k", HOSTILE, "x")
    assert bad_flag.returncode == 2
    named = tmp_path / f"good{HOSTILE}.jsonl"  # its name is in the progress label and the summary
    named.write_text(json.dumps(GOOD_LINE) + "\n", encoding="utf-8")
    ingested = memdesk("ingest", tmp_path / f"db{HOSTILE}.db", named)
    assert ingested.returncode == 0 and f"db{SHOWN}.db" in ingested.stdout, ingested.stderr
    for done in (found, exported, missing, bad_flag, ingested):
        assert_no_terminal_controls(done.stdout, done.stderr)


# -- exit 2 with FILE:LINE, nothing created ---------------------------------------------------------

BAD_LINES = {
    "year 1 with 'last year'": (
        '{"user_id":"a","user":"I moved to Porto last year","at":"0001-01-01"}',
        "outside the supported range",
    ),
    "year 9999 with 'next year'": (
        '{"user_id":"a","user":"I move to Rome next year","at":"9999-12-31T23:59:59Z"}',
        "outside the supported range",
    ),
    "year 10000 in UTC": ('{"user_id":"a","user":"hi","at":"9999-12-31T23:00-05:00"}', "outside the supported range"),
    "deep nesting": (
        '{"user_id":"a","user":"hi","at":"2024-01-01","x":' + "[" * 100_000 + "]" * 100_000 + "}",
        "nested too deeply",
    ),
    "100,000 digits": ('{"user_id":"a","user":"hi","at":"2024-01-01","x":' + "7" * 100_000 + "}", "digits"),
    "lone surrogate": ('{"user_id":"\\ud800","user":"hi","at":"2024-01-01"}', "surrogate"),
    "trailing junk": ('{"user_id":"a","user":"hi","at":"2024-01-01"} {"x":1}', "extra data"),
    "oversized message": ('{"user_id":"a","user":"' + "w" * 20_001 + '","at":"2024-01-01"}', "max_message_chars"),
}


@pytest.mark.parametrize("case", list(BAD_LINES))
def test_a_bad_line_is_exit_2_with_file_line_and_creates_nothing(tmp_path: Path, case: str) -> None:
    line, reason = BAD_LINES[case]
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(GOOD_LINE) + "\n" + line + "\n", encoding="utf-8")
    db = tmp_path / "new.db"
    done = memdesk("ingest", db, src)
    assert done.returncode == 2, done.stderr
    assert f"{src}:2: " in done.stderr and reason in done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]
    # --skip-bad: the bad line is listed and skipped, the good one goes in
    skipped = memdesk("ingest", db, src, "--skip-bad")
    assert skipped.returncode == 0, skipped.stderr
    assert f"skipped {src}:2: " in skipped.stderr and "1 skipped" in skipped.stdout
    assert "Traceback" not in skipped.stderr


def test_longmemeval_with_trailing_junk_or_a_bad_date_is_exit_2(tmp_path: Path) -> None:
    question = {
        "question_id": "q1",
        "haystack_sessions": [[{"role": "user", "content": "I live in Oslo"}]],
        "haystack_dates": ["2023/05/20 (Sat) 02:21"],
    }
    cases = {
        "junk.json": (json.dumps([question]) + "\n]garbage", "extra data after the list"),
        "old.json": (json.dumps([{**question, "haystack_dates": ["0001/01/01 (Mon) 00:00"]}]), "outside the supported"),
    }
    for name, (text, reason) in cases.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        done = memdesk("ingest", tmp_path / "lme.db", tmp_path / name)
        assert done.returncode == 2 and reason in done.stderr, done.stderr
        assert not (tmp_path / "lme.db").exists()
    (tmp_path / "ok.json").write_text(json.dumps([question]), encoding="utf-8")  # control
    assert memdesk("ingest", tmp_path / "lme.db", tmp_path / "ok.json").returncode == 0


@pytest.mark.parametrize("flag", ["--as-of", "--known-at"])
@pytest.mark.parametrize("value", ["0001-01-01T00:00+01:00", "9999-12-31T23:00-05:00", "1899-12-31"])
def test_search_dates_outside_the_range_are_exit_2(hostile_db: Path, flag: str, value: str) -> None:
    done = memdesk("search", hostile_db, "--user", "ana", "Lisbon", flag, value)
    assert done.returncode == 2, done.stderr
    assert "outside the supported range 1900-2200" in done.stderr and "Traceback" not in done.stderr


def test_search_in_range_and_an_oversized_query(hostile_db: Path) -> None:
    assert memdesk("search", hostile_db, "--user", "ana", "Lisbon", "--as-of", "2200-12-31").returncode == 0
    done = memdesk("search", hostile_db, "--user", "ana", "q" * 2_001)
    assert done.returncode == 2 and "max_query_chars" in done.stderr


def test_stats_for_an_empty_or_unknown_user_is_exit_2(hostile_db: Path) -> None:
    empty = memdesk("stats", hostile_db, "--user", "")
    assert empty.returncode == 2 and "--user is empty" in empty.stderr, empty.stderr
    nobody = memdesk("stats", hostile_db, "--user", "nobody")
    assert nobody.returncode == 2 and "no data for user 'nobody'" in nobody.stderr, nobody.stderr
    known = memdesk("stats", hostile_db, "--user", "ana", "--json")
    assert known.returncode == 0 and json.loads(known.stdout)["review"]["rejected"] == 1


# -- faults ----------------------------------------------------------------------------------------


def test_a_newer_schema_is_refused_before_anything_writes_to_it(tmp_path: Path) -> None:
    db = tmp_path / "future.db"
    asyncio.run(_build(db))
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute("PRAGMA journal_mode = DELETE")
        conn.execute("PRAGMA user_version = 99")
    before = db.read_bytes()
    for args in (("stats", db), ("search", db, "--user", "ana", "x"), ("process", db)):
        done = memdesk(*args)
        assert done.returncode == 1, done.stderr
        assert "schema version 99" in done.stderr and "upgrade memdesk" in done.stderr
        assert "Traceback" not in done.stderr
    assert db.read_bytes() == before  # not switched to WAL: the header bytes 18-19 still say rollback journal
    assert sorted(p.name for p in tmp_path.iterdir()) == ["future.db"]
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")  # control: the current version opens
    assert memdesk("stats", db).returncode == 0


async def _build(db: Path) -> None:
    async with Memory(db) as mem:
        await mem.add_exchange("ana", "I live in Oslo", None)


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    """A small tmpfs at `path`; skips the test, saying why, where mounting is not allowed."""
    path.mkdir()
    try:
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
            check=True,
            capture_output=True,
            text=True,
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", "") or exc
        pytest.skip(f"cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN): {str(detail).strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False, capture_output=True)


def test_disk_full_reports_the_real_error_and_leaves_nothing(tmp_path: Path) -> None:
    src = tmp_path / "big.jsonl"
    with src.open("w", encoding="utf-8") as fh:
        for i in range(3000):
            fh.write(
                json.dumps(
                    {"user_id": "u", "user": f"message {i} " + "filler words " * 40, "at": "2024-01-01T00:00:00Z"}
                )
                + "\n"
            )
    with tmpfs(tmp_path / "small", "600k") as mnt:
        done = memdesk("ingest", mnt / "full.db", src)
        assert done.returncode == 1, done.stderr
        assert "database or disk is full" in done.stderr
        assert "cannot rollback" not in done.stderr and "Traceback" not in done.stderr
        assert list(mnt.iterdir()) == []  # the database this command created is removed
        # control: a file that fits goes in on the same file system
        small = tmp_path / "small.jsonl"
        small.write_text(json.dumps(GOOD_LINE) + "\n", encoding="utf-8")
        assert memdesk("ingest", mnt / "ok.db", small).returncode == 0


def test_a_read_only_file_system_is_reported_as_such(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "ro", "4m") as mnt:
        db = mnt / "ro.db"
        asyncio.run(_build(db))
        assert memdesk("stats", db).returncode == 0  # control: writable, it opens
        remount = subprocess.run(["mount", "-o", "remount,ro", str(mnt)], capture_output=True, text=True)
        if remount.returncode != 0:
            pytest.skip(f"cannot remount read-only: {remount.stderr.strip()}")
        src = tmp_path / "in.jsonl"
        src.write_text(json.dumps(GOOD_LINE) + "\n", encoding="utf-8")
        for args in (
            ("stats", db),
            ("search", db, "--user", "ana", "Oslo"),
            ("ingest", db, src),
            ("ingest", mnt / "new.db", src),
        ):
            done = memdesk(*args)
            assert done.returncode == 1, (args, done.stderr)
            assert "read-only file system" in done.stderr, (args, done.stderr)
            assert "not a SQLite database" not in done.stderr and "Traceback" not in done.stderr

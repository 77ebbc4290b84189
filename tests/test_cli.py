"""The `memdesk` command line on a temporary database: the happy path, and the bad inputs a person
actually types. `memdesk(...)` runs a command in this process through click's CliRunner (what most
tests here and elsewhere use: no interpreter start per call); `memdesk_process(...)` runs the
console script of this venv as a real subprocess, for the few smoke tests that must see what a
shell sees (the entry point, exit codes through a real process, imports of a fresh interpreter).

Exit codes are the contract: 0 ok, 1 the work failed, 2 bad input (and then nothing changed).
Facts with known intervals and belief times are seeded in-process through the public API with a
fixed clock, so that --as-of and --known-at have exact answers.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import subprocess
import sys
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from engine import Memory
from tests.engine_helpers import sql

MEMDESK = Path(sys.executable).parent / "memdesk"
COMMANDS = (
    "demo",
    "review",
    "ingest",
    "process",
    "search",
    "stats",
    "export",
    "erase",
    "mcp",
    "add",
    "correct",
    "retract",
    "history",
    "digest",
    "migrate",
)

T1 = datetime(2025, 1, 10, 9, 0, tzinfo=UTC)  # ana's Lisbon fact is recorded
T2 = datetime(2025, 6, 1, 9, 0, tzinfo=UTC)  # ana's Lisbon fact is corrected to Porto


def memdesk(
    *args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """One command in this process (CliRunner), answered as a subprocess would answer it: its exit
    status, stdout and stderr, and an unexpected exception's traceback on stderr with status 1.
    The caller's MEMDESK_* and OPENAI_* variables are hidden from the command, as for a subprocess.
    Run in a thread of its own when the caller is inside an event loop (an async test), since every
    command runs its own `asyncio.run`."""
    argv = [str(a) for a in args]
    cleared: dict[str, str | None] = {k: None for k in os.environ if k.startswith(("MEMDESK_", "OPENAI_"))}
    environment = {**cleared, "NO_COLOR": "1", "COLUMNS": "200", **(env or {})}

    def invoke() -> subprocess.CompletedProcess[str]:
        from click.testing import CliRunner

        from review_app.cli import main

        with contextlib.chdir(cwd or Path.cwd()):
            result = CliRunner(env=environment).invoke(main, argv, input=stdin if stdin is not None else "")
        stderr = result.stderr
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            stderr += "".join(traceback.format_exception(*result.exc_info))  # type: ignore[misc]
        return subprocess.CompletedProcess(["memdesk", *argv], result.exit_code, result.stdout, stderr)

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return invoke()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(invoke).result(timeout=120)


def memdesk_process(
    *args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """One command as a real subprocess of the installed console script (the smoke tests)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MEMDESK_", "OPENAI_"))}
    return subprocess.run(
        [str(MEMDESK), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**base, "NO_COLOR": "1", "COLUMNS": "200", **(env or {})},
        input=stdin if stdin is not None else "",
        check=False,
    )


def jsonl(path: Path, rows: list[dict[str, Any] | str]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def counts(db: Path) -> dict[str, int]:
    """Rows per table, read with the engine (the CLI under test is not used to check itself)."""

    async def go() -> dict[str, int]:
        async with Memory(db) as mem, sql(mem) as conn:
            out = {}
            for table in ("messages", "candidates", "knowledge"):
                row = await (await conn.execute(f"SELECT count(*) FROM {table}")).fetchone()
                out[table] = int(row[0])  # type: ignore[index]
            return out

    return asyncio.run(go())


def exchanges_of(db: Path) -> dict[str, int]:
    async def go() -> dict[str, int]:
        async with Memory(db) as mem, sql(mem) as conn:
            rows = await (
                await conn.execute("SELECT user_id, count(*) FROM messages WHERE role = 'user' GROUP BY user_id")
            ).fetchall()
            return {r[0]: int(r[1]) for r in rows}

    return asyncio.run(go())


GOOD = [
    {"user_id": "ana", "user": "I live in Lisbon.", "assistant": "Nice city!", "at": "2025-01-05T09:00:00Z"},
    {"user_id": "ana", "user": "I'm allergic to peanuts.", "assistant": "Noted.", "at": "2025-01-05T09:02:00Z"},
    {"user_id": "bob", "user": "I work as a baker.", "at": "2025-01-06T07:00:00Z"},
    {"user_id": "ana", "user": "I moved to Porto this month!", "assistant": "Congrats.", "at": "2025-02-20T18:00:00Z"},
]


@pytest.fixture(scope="module")
def facts_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ana: Lisbon (valid 2020 → 2025-03-01), recorded at T1, corrected at T2 to a second version;
    Porto (valid from 2025-03-01); one retracted fact. bob: one fact. Built with a fixed clock."""
    db = tmp_path_factory.mktemp("facts") / "facts.db"
    clock = {"now": T1}

    async def build() -> None:
        async with Memory(db, clock=lambda: clock["now"]) as mem:
            lisbon = await mem.add_knowledge(
                "ana",
                "Ana lives in Lisbon",
                actor="seed",
                valid_at=datetime(2020, 1, 1, tzinfo=UTC),
                invalid_at=datetime(2025, 3, 1, tzinfo=UTC),
            )
            await mem.add_knowledge(
                "ana", "Ana lives in Porto", actor="seed", valid_at=datetime(2025, 3, 1, tzinfo=UTC)
            )
            wrong = await mem.add_knowledge("ana", "Ana plays the tuba", actor="seed")
            await mem.add_knowledge("bob", "Bob works as a baker in Lisbon", actor="seed")
            clock["now"] = T2
            await mem.correct("ana", lisbon.id, "Ana lived in central Lisbon", actor="support", reason="more precise")
            await mem.retract("ana", wrong.id, actor="support", reason="never said so")
            await mem.queue_candidate("ana", "Ana owns a bicycle", actor="seed")

    asyncio.run(build())
    return db


# -- help and the missing database -----------------------------------------------------------------


def test_help_on_every_command_exits_0() -> None:
    """A smoke test through the console script: the entry point, and every command's help."""
    top = memdesk_process("--help")
    assert top.returncode == 0
    for command in COMMANDS:
        assert command in top.stdout
        shown = memdesk_process(command, "--help")
        assert shown.returncode == 0, (command, shown.stderr)
        assert f"Usage: memdesk {command}" in shown.stdout


@pytest.mark.parametrize("command", ["search", "stats", "export", "process", "review", "erase"])
def test_a_missing_database_is_exit_2_and_creates_nothing(tmp_path: Path, command: str) -> None:
    missing = tmp_path / "typo.db"
    args: list[str | Path] = {
        "search": [missing, "--user", "ana", "lisbon"],
        "stats": [missing],
        "export": [missing, "--user", "ana"],
        "process": [missing],
        "review": [missing, "--reviewer", "ana"],
        "erase": [missing, "--user", "a", "--actor", "x"],
    }[command]
    done = memdesk(command, *args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "no such database" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_review_with_a_bad_keymap_is_exit_2_before_the_screen_switches(facts_db: Path, tmp_path: Path) -> None:
    bad = tmp_path / "keys.toml"
    bad.write_text('[keymap]\n"queue.approve" = ""\n')
    done = memdesk("review", facts_db, "--reviewer", "ana", "--keymap", bad)
    assert done.returncode == 2, done.stderr
    assert "queue.approve" in done.stderr and "empty key" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_file_that_is_not_a_memdesk_database_is_exit_2(tmp_path: Path) -> None:
    notes = tmp_path / "notes.db"
    notes.write_text("shopping list\n")
    done = memdesk("stats", notes)
    assert done.returncode == 2 and "not a SQLite database" in done.stderr
    assert notes.read_text() == "shopping list\n"


# -- ingest ----------------------------------------------------------------------------------------


def test_ingest_jsonl_then_process_prints_every_gate(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    ingested = memdesk_process("ingest", db, jsonl(tmp_path / "in.jsonl", GOOD))
    assert ingested.returncode == 0, ingested.stderr
    assert "Ingested 4 exchanges for 2 users" in ingested.stdout
    assert exchanges_of(db) == {"ana": 3, "bob": 1}
    assert counts(db)["candidates"] == 0  # ingest never extracts

    processed = memdesk_process("process", db)
    assert processed.returncode == 0, processed.stderr
    lines = dict(line.rsplit("  ", 1) for line in processed.stdout.strip().splitlines())
    values = {label.strip(): int(n) for label, n in lines.items()}
    for label in (
        "claims found by the extractor",
        "discarded: the prediction already held it",
        "discarded: confidence below threshold",
        "discarded: matches a tombstone",
        "discarded: duplicate of a fact or pending candidate",
        "queued for review",
    ):
        assert label in values
    queued = values["queued for review"]
    assert queued > 0 and queued == counts(db)["candidates"]
    assert values["claims found by the extractor"] >= queued

    again = memdesk("process", db, "--json")  # nothing new: every count is zero, and it says so
    assert again.returncode == 0 and json.loads(again.stdout)["queued"] == 0
    assert counts(db)["candidates"] == queued


def test_ingest_a_missing_file_is_exit_2(tmp_path: Path) -> None:
    done = memdesk("ingest", tmp_path / "m.db", tmp_path / "absent.jsonl")
    assert done.returncode == 2 and "absent.jsonl" in done.stderr and "no such file" in done.stderr
    assert not (tmp_path / "m.db").exists()


def test_a_malformed_line_3_ingests_nothing_and_names_file_and_line(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    rows: list[dict[str, Any] | str] = [GOOD[0], GOOD[1], '{"user_id": "ana", "user": "oops"', GOOD[2]]
    source = jsonl(tmp_path / "bad.jsonl", rows)
    done = memdesk("ingest", db, source)
    assert done.returncode == 2
    assert f"{source}:3: malformed JSON" in done.stderr
    assert not db.exists() or counts(db)["messages"] == 0

    # control, and --skip-bad: the rest goes in, and what was skipped is listed
    skipped = memdesk("ingest", db, source, "--skip-bad")
    assert skipped.returncode == 0, skipped.stderr
    assert f"skipped {source}:3: malformed JSON" in skipped.stderr
    assert "Ingested 3 exchanges" in skipped.stdout and "1 skipped" in skipped.stdout
    assert exchanges_of(db) == {"ana": 2, "bob": 1}


def test_a_date_in_the_wrong_format_is_exit_2(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    rows: list[dict[str, Any] | str] = [GOOD[0], {**GOOD[1], "at": "05/01/2025 9am"}]
    source = jsonl(tmp_path / "dates.jsonl", rows)
    done = memdesk("ingest", db, source)
    assert done.returncode == 2 and f"{source}:2" in done.stderr and "ISO 8601" in done.stderr
    assert not db.exists() or counts(db)["messages"] == 0
    missing_field = memdesk("ingest", db, jsonl(tmp_path / "nofield.jsonl", [{"user_id": "a", "user": "hi"}]))
    assert missing_field.returncode == 2 and "nofield.jsonl:1: at: Field required" in missing_field.stderr


def test_ingest_longmemeval_sessions_with_their_dates(tmp_path: Path) -> None:
    questions = [
        {
            "question_id": "q1",
            "question": "Where do I live?",
            "answer": "Porto",
            "haystack_sessions": [
                [{"role": "user", "content": "I live in Lisbon."}, {"role": "assistant", "content": "Nice."}],
                [
                    {"role": "assistant", "content": "Welcome back."},
                    {"role": "user", "content": "I moved to Porto."},
                    {"role": "assistant", "content": "Congrats!"},
                    {"role": "user", "content": "Thanks."},
                ],
            ],
            "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/06/02 (Fri) 18:05"],
        },
        {
            "question_id": "q2",
            "question": "What pet?",
            "answer": "a cat",
            "haystack_sessions": [[{"role": "user", "content": "I have a cat."}]],
            "haystack_dates": ["2023/07/01 (Sat) 10:00"],
        },
    ]
    source = tmp_path / "longmemeval_s.json"
    source.write_text(json.dumps(questions, indent=1), encoding="utf-8")
    db = tmp_path / "lme.db"
    done = memdesk("ingest", db, source)
    assert done.returncode == 0, done.stderr
    assert "Ingested 4 exchanges for 2 users" in done.stdout and "longmemeval" in done.stdout
    assert "1 assistant turn(s) before the first user turn not ingested" in done.stderr
    assert exchanges_of(db) == {"q1": 3, "q2": 1}

    async def q1_times() -> list[datetime]:
        async with Memory(db) as mem, sql(mem) as conn:
            rows = await (
                await conn.execute("SELECT DISTINCT at FROM messages WHERE user_id = 'q1' ORDER BY at")
            ).fetchall()
        from engine.timeutil import from_us

        return [from_us(r[0]) for r in rows]  # type: ignore[misc]

    sessions = [datetime(2023, 5, 20, 2, 21, tzinfo=UTC), datetime(2023, 6, 2, 18, 5, tzinfo=UTC)]
    assert asyncio.run(q1_times()) == sessions

    one_user = tmp_path / "one.db"
    merged = memdesk("ingest", one_user, source, "--user", "tester")
    assert merged.returncode == 0 and exchanges_of(one_user) == {"tester": 4}


# -- reading ---------------------------------------------------------------------------------------


def test_search_json_as_of_and_known_at(facts_db: Path) -> None:
    def statements(*extra: str) -> list[str]:
        done = memdesk("search", facts_db, "--user", "ana", "where does Ana live", "--json", *extra)
        assert done.returncode == 0, done.stderr
        data = json.loads(done.stdout)
        assert data["user_id"] == "ana" and all(i["user_id"] == "ana" for i in data["items"])
        return sorted(i["statement"] for i in data["items"])

    # current belief: the corrected Lisbon version and Porto; never the retracted fact's old version
    assert statements() == ["Ana lived in central Lisbon", "Ana lives in Porto"]
    # valid time: in 2024 only the Lisbon version held, in 2025-04 only Porto
    assert statements("--as-of", "2024-06-01") == ["Ana lived in central Lisbon"]
    assert statements("--as-of", "2025-04-01") == ["Ana lives in Porto"]
    # belief time: before the correction the store believed the first Lisbon wording
    known = statements("--known-at", "2025-03-01")
    assert "Ana lives in Lisbon" in known and "Ana lived in central Lisbon" not in known
    # bob's Lisbon fact never reaches ana, however the query is phrased (control: bob gets it)
    assert "Bob" not in json.dumps(statements("--include-expired"))
    bob = memdesk("search", facts_db, "--user", "bob", "baker", "Lisbon")
    assert bob.returncode == 0 and "Bob works as a baker in Lisbon" in bob.stdout
    plain = memdesk("search", facts_db, "--user", "ana", "tuba", "--include-expired")
    assert "Ana plays the tuba" in plain.stdout and "[retracted]" in plain.stdout


def test_search_bad_date_and_unknown_user_are_exit_2(facts_db: Path) -> None:
    bad = memdesk("search", facts_db, "--user", "ana", "x", "--as-of", "01/06/2024")
    assert bad.returncode == 2 and "--as-of" in bad.stderr and "ISO 8601" in bad.stderr
    nobody = memdesk("search", facts_db, "--user", "zed", "Lisbon")
    assert nobody.returncode == 2 and "no data for user 'zed'" in nobody.stderr
    assert "Lisbon" not in nobody.stdout


def test_stats_json(facts_db: Path) -> None:
    done = memdesk("stats", facts_db, "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["knowledge"] == {"active": 3, "superseded": 1, "retracted": 1}
    assert data["queue"]["pending"] == 1 and data["tombstones"] == 1
    one = json.loads(memdesk("stats", facts_db, "--user", "bob", "--json").stdout)
    assert one["knowledge"] == {"active": 1, "superseded": 0, "retracted": 0} and one["queue"]["pending"] == 0
    text = memdesk("stats", facts_db)
    assert text.returncode == 0 and "extraction_rate" in text.stdout


def test_export_holds_intervals_statuses_and_history(facts_db: Path, tmp_path: Path) -> None:
    done = memdesk("export", facts_db, "--user", "ana")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["user_id"] == "ana"
    by_statement = {f["statement"]: f for f in data["facts"]}
    assert {s: f["status"] for s, f in by_statement.items()} == {
        "Ana lives in Lisbon": "superseded",
        "Ana lived in central Lisbon": "active",
        "Ana lives in Porto": "active",
        "Ana plays the tuba": "retracted",
    }
    old = by_statement["Ana lives in Lisbon"]
    assert old["valid_at"].startswith("2020-01-01") and old["invalid_at"].startswith("2025-03-01")
    assert old["interval"] == "2020-01-01 → 2025-03-01" and old["end_reason"] == "corrected"
    assert old["superseded_by"] == by_statement["Ana lived in central Lisbon"]["id"]
    assert [e["action"] for e in old["history"]] == ["inject", "correct"]
    assert [e["action"] for e in by_statement["Ana plays the tuba"]["history"]] == ["inject", "retract"]
    assert [c["statement"] for c in data["candidates"]] == ["Ana owns a bicycle"]
    assert "Bob" not in done.stdout
    unknown = memdesk("export", facts_db, "--user", "zed")
    assert unknown.returncode == 2 and "no data for user 'zed'" in unknown.stderr and unknown.stdout == ""
    out = tmp_path / "ana.json"
    assert memdesk("export", facts_db, "--user", "ana", "-o", out).returncode == 0
    assert json.loads(out.read_text())["facts"] == data["facts"]


# -- erase, process with a model, demo ------------------------------------------------------------


def test_erase_asks_then_removes_only_that_user(tmp_path: Path) -> None:
    db = tmp_path / "e.db"

    async def build() -> None:
        async with Memory(db) as mem:
            await mem.add_knowledge("ana", "Ana keeps Zebrafinch birds", actor="seed")
            await mem.add_knowledge("bob", "Bob keeps Lanternleaf tomatoes", actor="seed")

    asyncio.run(build())
    declined = memdesk("erase", db, "--user", "ana", "--actor", "dpo", stdin="n\n")
    assert declined.returncode == 1 and counts(db)["knowledge"] == 2  # control: nothing erased
    done = memdesk("erase", db, "--user", "ana", "--actor", "dpo", "--yes")
    assert done.returncode == 0, done.stderr
    assert "Erased user 'ana'" in done.stdout
    assert b"zebrafinch" not in db.read_bytes().lower()
    assert memdesk("export", db, "--user", "ana").returncode == 2
    bob = memdesk("search", db, "--user", "bob", "tomatoes")
    assert "Bob keeps Lanternleaf tomatoes" in bob.stdout
    again = memdesk("erase", db, "--user", "ana", "--actor", "dpo", "--yes")
    assert again.returncode == 2 and "nothing to erase" in again.stderr


def test_process_with_openai_needs_a_model_or_endpoint(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    assert memdesk("ingest", db, jsonl(tmp_path / "in.jsonl", GOOD[:1])).returncode == 0
    done = memdesk("process", db, "--extractor", "openai")
    assert done.returncode == 2 and "MEMDESK_MODEL" in done.stderr
    mixed = memdesk("process", db, "--model", "gpt-4o-mini")  # offline takes no model
    assert mixed.returncode == 2 and "--extractor openai" in mixed.stderr
    assert counts(db)["candidates"] == 0


def test_demo_no_open_builds_a_queue_with_pending_updates(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    done = memdesk("demo", "--no-open", "--db", db, "--reviewer", "tester")
    assert done.returncode == 0, done.stderr
    assert "candidates waiting for review" in done.stderr
    # built under a temporary name and renamed: nothing half-built is left beside it
    assert [p.name for p in tmp_path.iterdir() if "building" in p.name] == []

    async def look() -> tuple[int, int, int, set[str]]:
        async with Memory(db) as mem:
            pending = await mem.review.pending(limit=1000)
            facts, curated = 0, set()
            for user in await mem.users():
                facts += len(await mem.knowledge(user))
                curated |= {e.actor for e in await mem.history(user) if e.entity == "candidate"}
            return len(pending), sum(1 for c in pending if c.supersedes_id), facts, curated

    pending, updates, facts, actors = asyncio.run(look())
    assert pending > 0 and updates > 0 and facts > 0
    assert "demo-curator" in actors
    reused = memdesk("demo", "--no-open", "--db", db)
    assert reused.returncode == 0 and "Using the existing demo database" in reused.stderr
    assert asyncio.run(look())[0] == pending


def test_demo_no_open_does_not_import_the_workstation(tmp_path: Path) -> None:
    """`demo --no-open` and every non-drawing command must work where Textual's app cannot load."""
    code = (
        "import sys, review_app.cli as c\n"
        "sys.argv=['memdesk','demo','--no-open','--db',sys.argv[1]]\n"
        "try:\n    c.main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        "assert 'review_app.app' not in sys.modules and 'textual.app' not in sys.modules\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "d.db")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=Path(__file__).parent.parent,
    )
    assert done.returncode == 0, done.stderr

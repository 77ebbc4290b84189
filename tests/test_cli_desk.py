"""The support desk in the command line (issue 29, item 5): `correct`, `retract` and `history`, each
with --json, and `add --settle correct --reason`; labels that say corrected, retracted or superseded
as each is. Every refusal (an empty reason, another user's fact, an ended fact, the engine's own
name) is paired with the same command doing its work, and the database is read back with the engine
after each, not through the command line under test.

Run in this process through CliRunner (`tests.test_cli.memdesk`)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from engine import Memory
from engine.models import Knowledge
from tests.test_cli import memdesk

LONG = "x" * 1_001  # one over MemoryConfig.max_statement_chars and max_reason_chars
RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: Trojan Source in a reason


@pytest.fixture
def desk_db(tmp_path: Path) -> Path:
    """ana: Lisbon (#1), tuba (#2), bees (#3); bob: baker (#4). Valid since 2025-01-01."""
    db = tmp_path / "desk.db"

    async def build() -> None:
        async with Memory(db) as mem:
            since = datetime(2025, 1, 1, tzinfo=UTC)
            for user, statement in (
                ("ana", "Ana lives in Lisbon"),
                ("ana", "Ana plays the tuba"),
                ("ana", "Ana keeps bees"),
                ("bob", "Bob works as a baker"),
            ):
                await mem.add_knowledge(user, statement, actor="seed", valid_at=since)

    asyncio.run(build())
    return db


def facts(db: Path, user: str) -> dict[int, Knowledge]:
    async def go() -> dict[int, Knowledge]:
        async with Memory(db) as mem:
            return {k.id: k for k in await mem.knowledge(user, include_expired=True)}

    return asyncio.run(go())


def audit_reasons(db: Path, user: str) -> list[tuple[str, str, str | None]]:
    async def go() -> list[tuple[str, str, str | None]]:
        async with Memory(db) as mem:
            return [(e.actor, e.action, e.reason) for e in await mem.history(user)]

    return asyncio.run(go())


# -- correct ---------------------------------------------------------------------------------------


def test_correct_the_world_changed_supersedes_and_earlier_dates_still_read_it(desk_db: Path) -> None:
    done = memdesk(
        "correct", desk_db, "--user", "ana", "1", "Ana lives in Porto", "--reason", "moved", "--actor", "sam"
    )
    assert done.returncode == 0, done.stderr
    assert "superseded by #5" in done.stdout and "dates before" in done.stdout
    after = facts(desk_db, "ana")
    assert after[1].label == "superseded" and after[1].superseded_by == 5
    assert after[5].status == "active" and after[5].created_by == "sam"
    assert ("sam", "supersede", "moved") in audit_reasons(desk_db, "ana")
    # as of 2025-06 (before the move was recorded) Lisbon still held
    old = memdesk("search", desk_db, "--user", "ana", "where", "does", "Ana", "live", "--as-of", "2025-06-01")
    assert "Ana lives in Lisbon" in old.stdout and "Porto" not in old.stdout
    expired = memdesk("search", desk_db, "--user", "ana", "Lisbon", "--include-expired")
    assert "Ana lives in Lisbon (2025-01-01 → " in expired.stdout and "[superseded]" in expired.stdout


def test_correct_never_true_is_labelled_corrected_and_no_date_reads_it(desk_db: Path) -> None:
    done = memdesk(
        "correct",
        desk_db,
        "--user",
        "ana",
        "1",
        "Ana lives in Porto",
        "--reason",
        "misheard on the phone",
        "--never-true",
        "--actor",
        "sam",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["old"]["id"] == 1 and data["old"]["label"] == "corrected"
    assert data["new"]["statement"] == "Ana lives in Porto" and data["new"]["label"] == "active"
    assert facts(desk_db, "ana")[1].end_reason == "corrected"
    assert ("sam", "correct", "misheard on the phone") in audit_reasons(desk_db, "ana")
    # the label says corrected, not superseded (issue 29: `[superseded]` for a corrected fact)
    expired = memdesk("search", desk_db, "--user", "ana", "Lisbon", "--include-expired")
    assert "[corrected]" in expired.stdout and "[superseded" not in expired.stdout
    as_json = json.loads(memdesk("search", desk_db, "--user", "ana", "Lisbon", "--include-expired", "--json").stdout)
    assert {i["id"]: i["label"] for i in as_json["items"]}[1] == "corrected"
    old = memdesk("search", desk_db, "--user", "ana", "Lisbon", "--as-of", "2025-06-01")
    assert "Ana lives in Lisbon" not in old.stdout  # it never held


def test_correct_refusals_change_nothing(desk_db: Path) -> None:
    before = facts(desk_db, "ana")
    cases = [
        (["--user", "ana", "1", "Ana lives in Porto", "--reason", " "], 2, "needs a reason"),
        (["--user", "ana", "1", "  ", "--reason", "r"], 2, "empty"),
        (["--user", "ana", "1", LONG, "--reason", "r"], 2, "max_statement_chars"),
        (["--user", "ana", "1", "Ana lives in Porto", "--reason", LONG], 2, "max_reason_chars"),
        (["--user", "ana", "4", "Bob bakes", "--reason", "r"], 2, "4"),  # bob's fact, read as not found
        (["--user", "nobody", "1", "x", "--reason", "r"], 2, "no data for user 'nobody'"),
        (["--user", "ana", "99", "x", "--reason", "r"], 2, "99"),
        (["--user", "ana", "1", "Ana plays the tuba", "--reason", "r"], 2, "tuba"),  # #2 holds that value
        (["--user", "ana", "1", "Ana lives in Porto", "--reason", "r", "--actor", "memdesk"], 2, "engine's own"),
        (["--user", "ana", "0", "x", "--reason", "r"], 2, "0"),
    ]
    for args, code, said in cases:
        actor = [] if "--actor" in args else ["--actor", "sam"]
        done = memdesk("correct", desk_db, *args, *actor)
        assert done.returncode == code, (args, done.stdout, done.stderr)
        assert said in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr
    assert facts(desk_db, "ana") == before
    assert facts(desk_db, "bob")[4].status == "active"
    # control: the same correction with a reason, by a person, goes through
    assert memdesk("correct", desk_db, "--user", "ana", "1", "Ana lives in Porto", "--reason", "r").returncode == 0
    again = memdesk("correct", desk_db, "--user", "ana", "1", "Ana lives in Faro", "--reason", "r")
    assert again.returncode == 1 and "only an active fact can be corrected" in again.stderr


def test_correct_a_fact_that_ended_in_the_past_says_which_way_works(tmp_path: Path) -> None:
    db = tmp_path / "past.db"

    async def build() -> None:
        async with Memory(db) as mem:
            start, end = datetime(2010, 1, 1, tzinfo=UTC), datetime(2012, 1, 1, tzinfo=UTC)
            await mem.add_knowledge("ana", "Ana lived in Rome", actor="seed", valid_at=start, invalid_at=end)

    asyncio.run(build())
    now = memdesk("correct", db, "--user", "ana", "1", "Ana lived in Milan", "--reason", "wrong city")
    assert now.returncode == 2 and "held only until 2012-01-01" in now.stderr and "--never-true" in now.stderr
    assert facts(db, "ana")[1].status == "active"
    then = memdesk(
        "correct", db, "--user", "ana", "1", "Ana lived in Milan", "--reason", "moved", "--valid-from", "2011-01-01"
    )
    assert then.returncode == 0, then.stderr  # control: the world changed within its period
    assert facts(db, "ana")[1].invalid_at == datetime(2011, 1, 1, tzinfo=UTC)


# -- retract ---------------------------------------------------------------------------------------


def test_retract_with_and_without_a_tombstone(desk_db: Path) -> None:
    done = memdesk("retract", desk_db, "--user", "ana", "2", "--reason", "never said so", "--actor", "sam")
    assert done.returncode == 0, done.stderr
    assert "Retracted fact #2" in done.stdout and "--tombstone stops that" in done.stdout
    stoned = memdesk("retract", desk_db, "--user", "ana", "3", "--reason", "asked to forget", "--tombstone", "--json")
    assert stoned.returncode == 0, stoned.stderr
    data = json.loads(stoned.stdout)
    assert data["id"] == 3 and data["label"] == "retracted" and data["tombstoned"] is True
    after = facts(desk_db, "ana")
    assert after[2].label == after[3].label == "retracted" and after[1].label == "active"

    async def stones() -> list[str]:
        async with Memory(desk_db) as mem:
            return [t.statement for t in await mem.tombstones("ana")]

    assert asyncio.run(stones()) == ["Ana keeps bees"]  # only the one asked for
    expired = memdesk("search", desk_db, "--user", "ana", "tuba", "--include-expired")
    assert "Ana plays the tuba" in expired.stdout and "[retracted]" in expired.stdout
    assert "tuba" not in memdesk("search", desk_db, "--user", "ana", "tuba").stdout  # no longer retrieved
    twice = memdesk("retract", desk_db, "--user", "ana", "2", "--reason", "again")
    assert twice.returncode == 1 and "already retracted" in twice.stderr
    other = memdesk("retract", desk_db, "--user", "ana", "4", "--reason", "not hers")
    assert other.returncode == 2 and facts(desk_db, "bob")[4].status == "active"


# -- history ---------------------------------------------------------------------------------------


def test_history_shows_versions_who_when_and_why(desk_db: Path) -> None:
    memdesk("correct", desk_db, "--user", "ana", "1", "Ana lives in Porto", "--reason", "moved", "--actor", "sam")
    memdesk("retract", desk_db, "--user", "ana", "5", "--reason", f"wrong{RLO}txet", "--actor", "kim")
    done = memdesk("history", desk_db, "--user", "ana", "1")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any("#1 [superseded] Ana lives in Lisbon" in line and "by seed" in line for line in lines)
    assert any("#5 [retracted] Ana lives in Porto" in line and "by sam" in line for line in lines)
    assert any("sam  supersede knowledge #1: moved" in line for line in lines)
    assert any("kim  retract knowledge #5: wrong⟨U+202E⟩txet" in line for line in lines)  # shown, not obeyed
    assert RLO not in done.stdout
    as_json = json.loads(memdesk("history", desk_db, "--user", "ana", "5", "--json").stdout)
    assert [v["id"] for v in as_json["versions"]] == [1, 5]
    assert [v["label"] for v in as_json["versions"]] == ["superseded", "retracted"]
    assert {(e["actor"], e["action"]) for e in as_json["events"]} >= {("sam", "supersede"), ("kim", "retract")}
    whole = memdesk("history", desk_db, "--user", "ana")
    assert whole.returncode == 0 and "Ana" not in whole.stderr and "bob" not in whole.stdout.casefold()
    # another user's fact and an unknown user: exit 2; control: bob reads his own
    assert memdesk("history", desk_db, "--user", "ana", "4").returncode == 2
    assert memdesk("history", desk_db, "--user", "nobody").returncode == 2
    assert "Bob works as a baker" in memdesk("history", desk_db, "--user", "bob", "4").stdout


# -- add --settle correct --------------------------------------------------------------------------


def test_add_settle_correct_records_the_reason(desk_db: Path) -> None:
    """A fact that would replace an active one (the extractor's rule reads "User lives in ..."),
    settled as a correction: the reason given is the audited one, not the word "corrected"."""
    first = memdesk("add", desk_db, "User lives in Lisbon", "--user", "cat", "--actor", "sam", "--json")
    old_id = json.loads(first.stdout)["id"]
    unsettled = memdesk("add", desk_db, "User lives in Porto", "--user", "cat", "--actor", "sam")
    assert unsettled.returncode == 2 and "--settle" in unsettled.stderr
    bare = memdesk("add", desk_db, "User lives in Porto", "--user", "cat", "--settle", "correct", "--actor", "sam")
    assert bare.returncode == 2 and "--reason" in bare.stderr
    assert facts(desk_db, "cat")[old_id].status == "active"  # nothing changed
    done = memdesk(
        "add",
        desk_db,
        "User lives in Porto",
        "--user",
        "cat",
        "--settle",
        "correct",
        "--reason",
        "typo at intake",
        "--actor",
        "sam",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["statement"] == "User lives in Porto"
    reasons = audit_reasons(desk_db, "cat")
    assert ("sam", "correct", "typo at intake") in reasons and ("sam", "correct", "corrected") not in reasons
    assert facts(desk_db, "cat")[old_id].label == "corrected"
    # control: supersede needs no reason
    moved = memdesk("add", desk_db, "User lives in Faro", "--user", "cat", "--settle", "supersede", "--actor", "sam")
    assert moved.returncode == 0, moved.stderr


def test_the_engines_own_name_is_refused_as_actor_and_a_person_is_not(desk_db: Path) -> None:
    for name in ("memdesk", "MemDesk", " memdesk "):
        done = memdesk("add", desk_db, "Ana owns a kayak", "--user", "ana", "--actor", name)
        assert done.returncode == 2 and "engine's own" in done.stderr, name
    assert "Ana owns a kayak" not in {k.statement for k in facts(desk_db, "ana").values()}
    env = memdesk("add", desk_db, "Ana owns a kayak", "--user", "ana", env={"MEMDESK_REVIEWER": "memdesk"})
    assert env.returncode == 2
    ok = memdesk("add", desk_db, "Ana owns a kayak", "--user", "ana", "--actor", "memdesk-support")
    assert ok.returncode == 0, ok.stderr

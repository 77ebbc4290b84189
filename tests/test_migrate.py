"""`memdesk migrate` / `engine.transfer.copy_store`: a whole store copied between backends.

The source is built once per module through the engine's public API so that every logical table
holds rows, and the rows are the awkward kind: facts superseded through review and corrected by
support, a retraction with its tombstone, a lifted tombstone, an undone decision (its fact deleted,
its id gone), pending chains, what the prediction gate discarded, a flag, a second review that
overturned an approval, an assignment, and an erased user (audit rows that name ids no table holds
any more). Each test copies that store and compares rows one for one, so a column a test did not
think of still counts.
"""

from __future__ import annotations

import asyncio
import itertools
import shutil
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from engine import Memory, MemoryConfig
from engine.erase import erase_user
from engine.errors import UserInputError
from engine.storage.base import TABLES
from engine.transfer import TransferError, copy_store
from review_app.cli import main
from tests.tui_seed import T0, SteppedClock, seed

QUERIES = [
    ("u-ana", "where does Ana live"),
    ("u-ben", "what car does Ben drive"),
    ("u-cho", "music instrument"),
    ("u-ana", "job nurse"),
]


async def _populate(path: str) -> None:
    """tests/tui_seed.py's store, plus what it lacks: discarded rows, the team tables, an undone
    approval and an erased user."""
    await seed(path)
    clock = SteppedClock(T0 + timedelta(hours=1))
    async with Memory(path, clock=clock, config=MemoryConfig(second_review_rate=1.0)) as mem:
        # the prediction gate drops a repeated statement: a `discarded` row
        await mem.add_exchange("u-dan", "I work as a nurse.", "Nice!", at=T0)
        await mem.process("u-dan")
        [nurse] = await mem.review.pending("u-dan")
        await mem.review.approve(nurse.id, "curator")
        await mem.add_exchange("u-dan", "I work as a nurse.", "You said.", at=T0 + timedelta(hours=2))
        await mem.process("u-dan")
        assert await mem.discarded("u-dan")
        # team: a flag, an assignment, a second review that overturns an approval
        pending = await mem.review.pending(limit=100)
        await mem.team.flag(pending[0].id, "ana-reviewer", "not sure", lean="approve")
        await mem.team.take_user("u-cho", "cho-reviewer")
        await mem.add_exchange("u-eve", "I live in Oslo.", "Cold!", at=T0)
        await mem.add_exchange("u-eve", "I play chess.", "Fun.", at=T0)
        await mem.process("u-eve")
        eve = await mem.review.pending("u-eve")
        approved = [await mem.review.approve(c.id, "first") for c in eve]
        await mem.team.second_review(eve[0].id, "second", approve=False, reason="not what she said")
        # an undone approval: the fact row is deleted, its id must never come back
        await mem.add_exchange("u-eve", "I speak Japanese.", "Sugoi.", at=T0 + timedelta(hours=3))
        await mem.process("u-eve")
        [japanese] = await mem.review.pending("u-eve")
        await mem.review.approve(japanese.id, "first")
        await mem.review.undo(japanese.id, "first")
        assert approved
        # an erased user: their rows go, their audit rows stay (redacted) and name their ids
        await mem.add_exchange("u-zed", "I live in Quito.", "Nice.", at=T0)
        await mem.process("u-zed")
        [zed] = await mem.review.pending("u-zed")
        await mem.review.approve(zed.id, "curator")
        await erase_user(mem, "u-zed", "dpo")


@pytest.fixture(scope="module")
def source_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("migrate-src") / "src.db"
    asyncio.run(_populate(str(path)))
    return path


@pytest.fixture
def source(source_template: Path, tmp_path: Path) -> Iterator[str]:
    target = tmp_path / "src.db"
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{source_template}{suffix}").exists():
            shutil.copyfile(f"{source_template}{suffix}", f"{target}{suffix}")
    yield str(target)


async def _dump(target: str) -> dict[str, list[dict[str, Any]]]:
    async with Memory(target) as mem:
        return {t: [r async for rows in mem.store.dump(t, batch=7) for r in rows] for t in TABLES}


async def _counts(target: str) -> dict[str, int]:
    async with Memory(target) as mem:
        return await mem.store.counts()


async def _top_k(target: str) -> list[list[tuple[int, float]]]:
    async with Memory(target) as mem:
        out = []
        for user, query in QUERIES:
            for when in ({}, {"at_time": T0 - timedelta(days=25)}, {"known_at": T0 - timedelta(days=25)}):
                res = await mem.retrieve(query, user_id=user, top_k=3, **when)
                out.append([(i.knowledge.id, round(i.score, 9)) for i in res.items])
        return out


def test_the_source_fills_every_table(source: str) -> None:
    """The fixture the other tests rely on: a copy that dropped a table entirely must not pass
    because that table was empty to begin with."""
    counts = asyncio.run(_counts(source))
    assert set(counts) == set(TABLES)
    assert all(counts[t] > 0 for t in TABLES), counts


def test_sqlite_to_sqlite_copies_every_row(source: str, tmp_path: Path) -> None:
    dst = str(tmp_path / "copy.db")
    seen: list[tuple[int, int]] = []
    report = asyncio.run(copy_store(source, dst, batch=5, progress=lambda d, t: seen.append((d, t))))
    before, after = asyncio.run(_dump(source)), asyncio.run(_dump(dst))
    for table in TABLES:
        assert after[table] == before[table], table
    assert {t.table: t.copied for t in report.tables} == {t: len(before[t]) for t in TABLES}
    assert seen[-1][0] == seen[-1][1] == 2 * report.rows  # copied, then read back
    assert all(a[0] <= b[0] for a, b in itertools.pairwise(seen))
    assert asyncio.run(_top_k(dst)) == asyncio.run(_top_k(source))


def test_a_copy_issues_ids_above_every_copied_and_erased_id(source: str, tmp_path: Path) -> None:
    dst = str(tmp_path / "copy.db")
    asyncio.run(copy_store(source, dst))
    rows = asyncio.run(_dump(source))
    named = [r["entity_id"] for r in rows["audit_log"] if r["entity"] == "knowledge" and r["entity_id"]]
    highest = max(max(r["id"] for r in rows["knowledge"]), *named)
    assert highest > max(r["id"] for r in rows["knowledge"])  # the undone/erased facts named above the rows

    async def add() -> int:
        async with Memory(dst) as mem:
            return (await mem.add_knowledge("u-new", "New plays golf", actor="t")).id

    assert asyncio.run(add()) == highest + 1


def test_a_non_empty_destination_is_refused_and_left_as_it_was(source: str, new_target: Callable[[str], str]) -> None:
    """On either backend: a destination holding one exchange is refused, by the library and by the
    CLI (exit 2), and keeps exactly what it held."""
    dst = new_target("busy")

    async def one_message() -> None:
        async with Memory(dst) as mem:
            await mem.add_exchange("u-x", "hello", "hi", at=T0)

    asyncio.run(one_message())
    before = asyncio.run(_dump(dst))
    with pytest.raises(UserInputError, match=r"not empty \(messages 2"):
        asyncio.run(copy_store(source, dst))
    assert asyncio.run(_dump(dst)) == before

    result = CliRunner().invoke(main, ["migrate", source, dst])
    assert result.exit_code == 2, result.output
    assert "not empty" in result.output
    assert asyncio.run(_dump(dst)) == before


def test_an_empty_existing_destination_is_accepted(source: str, tmp_path: Path) -> None:
    """The positive control of the refusal: a store that exists but holds no rows is a valid target."""
    dst = str(tmp_path / "empty.db")

    async def create() -> None:
        async with Memory(dst):
            pass

    asyncio.run(create())
    report = asyncio.run(copy_store(source, dst))
    assert report.rows == sum(asyncio.run(_counts(source)).values())


def test_a_copy_that_does_not_match_fails_loudly(source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A destination that stores a value differently (here: every fact's confidence narrowed, as
    a float4 column would) fails the verification, naming the row and column."""
    from engine.storage.sqlite.store import SqliteStore

    original = SqliteStore.load

    async def narrowing(self: SqliteStore, table: str, rows: list[dict[str, Any]]) -> None:
        if table == "knowledge":
            rows = [{**r, "confidence": None if r["confidence"] is None else r["confidence"] + 1e-7} for r in rows]
        await original(self, table, rows)

    monkeypatch.setattr(SqliteStore, "load", narrowing)
    with pytest.raises(TransferError, match=r"knowledge: row \d+ column confidence"):
        asyncio.run(copy_store(source, str(tmp_path / "bad.db")))

    result = CliRunner().invoke(main, ["migrate", source, str(tmp_path / "bad-cli.db")])
    assert result.exit_code == 1, result.output
    assert "column confidence" in result.output and "removed" in result.output
    assert not (tmp_path / "bad-cli.db").exists()


def _assert_counts_printed(output: str, counts: dict[str, int]) -> None:
    """Each table's row with its source count; `meta` (settings, some each store's own) never as a
    row whose three figures differ (issue 29: "meta 2 / 2 / 3" under "Verified"), but as the
    settings line; and the verified total is the sum of the table rows printed."""
    lines = output.splitlines()
    for table in TABLES:
        if table == "meta":
            continue
        assert any(line.split()[:4] == [table, *[str(counts[table])] * 3] for line in lines), table
    assert not any(line.split()[:1] == ["meta"] for line in lines), output
    assert any(line.strip().startswith(f"settings (meta): the source's {counts['meta']} are in") for line in lines)
    total = sum(n for table, n in counts.items() if table != "meta")
    assert f"Verified: {total} rows in {len(TABLES) - 1} tables" in output, output


def test_cli_migrate_prints_counts(source: str, tmp_path: Path) -> None:
    dst = tmp_path / "cli.db"
    result = CliRunner().invoke(main, ["migrate", source, str(dst)])
    assert result.exit_code == 0, result.output
    _assert_counts_printed(result.output, asyncio.run(_counts(source)))

    missing = CliRunner().invoke(main, ["migrate", str(tmp_path / "nope.db"), str(tmp_path / "x.db")])
    assert missing.exit_code == 2
    assert not (tmp_path / "x.db").exists()


# -- through PostgreSQL (the session's server: tests/pg.py) ------------------------------------------


def test_cli_migrate_into_postgresql_prints_table_rows_and_settings_apart(source: str, pg_url: str) -> None:
    """Into PostgreSQL the destination's `meta` holds more rows than the source's (settings of its
    own): the case that printed "meta 2 2 3" above "Verified"."""
    result = CliRunner().invoke(main, ["migrate", source, pg_url])
    assert result.exit_code == 0, result.output
    _assert_counts_printed(result.output, asyncio.run(_counts(source)))


def test_sqlite_to_postgres_and_back_keeps_every_row(source: str, pg_url: str, tmp_path: Path) -> None:
    """SQLite -> PostgreSQL -> SQLite: the file that comes back holds exactly the source's rows, and
    the PostgreSQL copy in between holds them too (each leg verified by copy_store itself)."""
    back = str(tmp_path / "back.db")
    there = asyncio.run(copy_store(source, pg_url, batch=4))
    again = asyncio.run(copy_store(pg_url, back, batch=6))
    assert there.rows == again.rows == sum(asyncio.run(_counts(source)).values())
    assert there.settled and again.settled  # the copy into PostgreSQL was analysed (the owner ran it)
    before, on_pg, after = asyncio.run(_dump(source)), asyncio.run(_dump(pg_url)), asyncio.run(_dump(back))
    for table in TABLES:
        assert after[table] == before[table], table
        if table != "meta":  # PostgreSQL's meta may hold keys of its own; copy_store checks the source's
            assert on_pg[table] == before[table], table
    assert asyncio.run(_top_k(back)) == asyncio.run(_top_k(source))
    assert [[i for i, _ in r] for r in asyncio.run(_top_k(pg_url))] == [
        [i for i, _ in r] for r in asyncio.run(_top_k(source))
    ]


def test_a_postgres_copy_issues_ids_above_every_copied_and_erased_id(source: str, pg_url: str) -> None:
    asyncio.run(copy_store(source, pg_url))
    rows = asyncio.run(_dump(source))

    def highest(table: str, entity: str) -> int:
        named = [r["entity_id"] for r in rows["audit_log"] if r["entity"] == entity and r["entity_id"]]
        return max([r["id"] for r in rows[table]] + named)

    async def add() -> tuple[int, int]:
        async with Memory(pg_url) as mem:
            fact = await mem.add_knowledge("u-new", "New plays golf", actor="t")
            return fact.id, await mem.queue_candidate("u-new", "New likes tea")

    fact_id, candidate_id = asyncio.run(add())
    assert fact_id == highest("knowledge", "knowledge") + 1
    assert candidate_id == highest("candidates", "candidate") + 1


def test_a_load_that_fails_midway_names_the_table_and_the_partial_copy(
    source: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from engine.storage.sqlite.store import SqliteStore

    original = SqliteStore.load

    async def full_disk(self: SqliteStore, table: str, rows: list[dict[str, Any]]) -> None:
        if table == "knowledge":
            raise OSError("database or disk is full")
        await original(self, table, rows)

    monkeypatch.setattr(SqliteStore, "load", full_disk)
    with pytest.raises(TransferError, match=r"(?s)stopped in table knowledge after \d+ of \d+ rows.*partial copy"):
        asyncio.run(copy_store(source, str(tmp_path / "partial.db")))
    result = CliRunner().invoke(main, ["migrate", source, str(tmp_path / "partial-cli.db")])
    assert result.exit_code == 1
    assert "disk is full" in result.output and "was removed" in result.output
    assert not (tmp_path / "partial-cli.db").exists()


def test_a_source_that_is_no_store_is_refused_and_nothing_is_created(tmp_path: Path, pg_url: str) -> None:
    """A typo or an empty database as SRC: refused before anything is opened, so neither a file
    nor a schema appears (the positive control: every other test copies from a real store)."""
    from engine.storage import inspect

    typo, dst = tmp_path / "typo.db", tmp_path / "d.db"
    with pytest.raises(UserInputError, match="no such database"):
        asyncio.run(copy_store(str(typo), str(dst)))
    with pytest.raises(UserInputError, match="holds no memdesk store"):
        asyncio.run(copy_store(pg_url, str(dst)))
    assert not typo.exists() and not dst.exists()
    assert asyncio.run(inspect(pg_url)) == (True, 0)


def test_a_sqlite_copy_rebuilds_the_vector_and_text_index_rows_exactly(source: str, tmp_path: Path) -> None:
    """The rows only SQLite has (sqlite-vec metadata that filters the KNN, the FTS scope token)
    are derived on load; they must equal what the engine's own writes left in the source, for
    every fact: active, superseded (valid time closed or not), corrected, retracted."""
    dst = str(tmp_path / "copy.db")
    asyncio.run(copy_store(source, dst))

    async def index_rows(target: str) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        async with Memory(target) as mem, mem.store.reading() as tx:
            vec = await (
                await tx.conn.execute(
                    "SELECT knowledge_id, user_id, embedding, status, valid_from, valid_to, created, expired,"
                    " still_true, believed_to FROM knowledge_vec ORDER BY knowledge_id"
                )
            ).fetchall()
            fts = await (
                await tx.conn.execute("SELECT rowid, statement, scope FROM knowledge_fts ORDER BY rowid")
            ).fetchall()
            return [tuple(r) for r in vec], [tuple(r) for r in fts]

    before, after = asyncio.run(index_rows(source)), asyncio.run(index_rows(dst))
    assert {r[3] for r in before[0]} == {"active", "superseded", "retracted"}
    assert {r[8] for r in before[0]} == {0, 1} and any(r[5] != r[9] for r in before[0])  # a closed valid time
    assert after == before


# -- interrupted copies (issue 18, failure 7) --------------------------------------------------------

_KILLING_MIGRATE = """
import os, signal, sys
from engine import transfer
from engine.storage.postgres.store import PostgresStore
from engine.storage.sqlite.store import SqliteStore

point, args = sys.argv[1], sys.argv[2:]

def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)

if point == "verify":  # every row copied, the check not passed yet
    async def verify(*a, **k):
        die()
    transfer._verify = verify
else:  # half of the first batch of table `point` written, then killed
    for cls in (SqliteStore, PostgresStore):
        def patch(cls=cls, original=cls.load):
            async def load(self, table, rows):
                if table == point:
                    await original(self, table, rows[: max(1, len(rows) // 2)])
                    die()
                await original(self, table, rows)
            cls.load = load
        patch()

from review_app.cli import main
sys.argv = ["memdesk", "migrate", *args]
main()
"""

KILL_POINTS = ["meta", "candidates", "audit_log", "verify"]


def _killed_migrate(point: str, src: str, dst: str) -> None:
    import signal
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _KILLING_MIGRATE, point, src, dst, "--batch-size", "7"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == -signal.SIGKILL, (done.returncode, done.stderr)


def _assert_refused_then_restarted(src: str, dst: str) -> None:
    from engine.errors import IncompleteStoreError

    async def open_it() -> None:
        async with Memory(dst):
            pass

    with pytest.raises(IncompleteStoreError, match=r"interrupted.*memdesk migrate SOURCE"):
        asyncio.run(open_it())
    stats = CliRunner().invoke(main, ["stats", dst])
    assert stats.exit_code != 0 and "Run `memdesk migrate SOURCE" in stats.output, stats.output
    assert "Traceback" not in stats.output
    again = CliRunner().invoke(main, ["migrate", src, dst])  # starts the copy over
    assert again.exit_code == 0, again.output
    assert _same_but_meta(src, dst)  # meta may hold keys of the destination's own (PostgreSQL)
    asyncio.run(open_it())  # positive control: a verified copy opens


def _same_but_meta(src: str, dst: str) -> bool:
    before, after = asyncio.run(_dump(src)), asyncio.run(_dump(dst))
    return all(after[t] == before[t] for t in TABLES if t != "meta")


@pytest.mark.parametrize("point", KILL_POINTS)
def test_a_migrate_killed_into_sqlite_leaves_a_store_nothing_opens_until_rerun(
    point: str, source: str, pg_url: str, tmp_path: Path
) -> None:
    """PostgreSQL -> SQLite, SIGKILL at `point`: before, the partial file read as a normal store."""
    asyncio.run(copy_store(source, pg_url))
    dst = str(tmp_path / "copy.db")
    _killed_migrate(point, pg_url, dst)
    _assert_refused_then_restarted(pg_url, dst)


@pytest.mark.parametrize("point", KILL_POINTS)
def test_a_migrate_killed_into_postgresql_leaves_a_store_nothing_opens_until_rerun(
    point: str, source: str, pg_url: str
) -> None:
    """SQLite -> PostgreSQL, SIGKILL at `point`: before, an approval created fact 8001 in the half copy."""
    _killed_migrate(point, source, pg_url)
    _assert_refused_then_restarted(source, pg_url)

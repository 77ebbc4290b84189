"""The embedder a store was built with is recorded and enforced, and `reembed` moves a store to
another one: every fact (every status), at the new width, resumable after an interruption, audited
as one row.

"Equal to an uninterrupted run" is checked on every vector row (blob bytes and metadata) and on
meta: an interrupted-then-resumed move of one copy of a database against a straight move of
another copy. Every test runs on both backends (a copy of a PostgreSQL database is a CREATE
DATABASE ... TEMPLATE of it); rows are read without Memory, which would refuse the store's embedder.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from engine import (
    EmbedderMismatchError,
    EmbeddingDimensionError,
    HashingEmbedder,
    Memory,
    WordLlamaEmbedder,
)
from engine.reembed import reembed
from engine.storage import is_postgres_url, masked
from engine.storage.sqlite.reembed import STAGING
from tests.engine_helpers import Clock, open_memory, sql
from tests.pg import _admin, _run
from tests.pilot_helpers import sqlite3  # the engine's own SQLite library (see there)

Target = Path | str

MEMDESK = Path(sys.executable).parent / "memdesk"
FACTS = [f"User visited city number {i} and liked its food" for i in range(40)]


async def build(db: Target, embedder: Any, facts: list[str] = FACTS) -> dict[str, int]:
    """A store with active, superseded (corrected) and retracted facts of two users."""
    clock = Clock()
    async with open_memory(db, clock, embedder=embedder) as mem:
        made = await mem.add_knowledge_many("ana", facts, actor="t")
        porto = await mem.add_knowledge("bob", "User lives in Porto", actor="t")
        clock.advance(days=1)
        lisbon = await mem.correct("bob", porto.id, "User lives in Lisbon", actor="t", reason="moved")
        vegan = await mem.add_knowledge("bob", "User is vegan", actor="t")
        await mem.retract("bob", vegan.id, actor="t", reason="wrong person", tombstone=False)
        return {"first": made[0].id, "porto": porto.id, "lisbon": lisbon.id, "vegan": vegan.id}


def rows(db: Target, sql: str) -> list[tuple[Any, ...]]:
    """Plain-table reads (or a write, committed) through the bare driver: the stdlib's sqlite3, or
    asyncpg; the SQLite vector table needs sqlite-vec (see vectors)."""
    if is_postgres_url(str(db)):
        return [tuple(r) for r in _run(lambda: _admin(str(db), sql))]
    with closing(sqlite3.connect(db)) as conn:
        found = [tuple(r) for r in conn.execute(sql).fetchall()]
        conn.commit()
        return found


def has_table(db: Target, name: str) -> bool:
    if is_postgres_url(str(db)):
        return rows(db, f"SELECT to_regclass('{name}') IS NOT NULL") == [(True,)]
    return rows(db, f"SELECT name FROM sqlite_master WHERE name = '{name}'") != []


async def vectors(db: Target, embedder: Any) -> list[tuple[Any, ...]]:
    """Every fact's vector with the columns a vector search filters on (SQLite's knowledge_vec;
    PostgreSQL's knowledge row, the vector as pgvector's text)."""
    query = (
        "SELECT knowledge_id, user_id, embedding, status, valid_from, valid_to, created, expired"
        " FROM knowledge_vec ORDER BY knowledge_id"
        if not is_postgres_url(str(db))
        else "SELECT id, user_id, CAST(embedding AS text), status, valid_at, invalid_at, created_at, expired_at"
        " FROM knowledge ORDER BY id"
    )
    async with Memory(db, embedder=embedder) as mem, sql(mem) as conn:
        found = await (await conn.execute(query)).fetchall()
    return [tuple(r) for r in found]


def meta(db: Target) -> dict[str, str]:
    return dict(rows(db, "SELECT key, value FROM meta"))  # type: ignore[arg-type]


def copy_db(source: Target, target: Target) -> Target:
    """`target` (a fresh path or an empty database's URL) made a copy of `source`."""
    if is_postgres_url(str(source)):
        parts = urlsplit(str(target))
        maintenance = parts._replace(path="/postgres").geturl()
        new, old = parts.path.lstrip("/"), urlsplit(str(source)).path.lstrip("/")
        _run(lambda: _admin(maintenance, f'DROP DATABASE "{new}"', f'CREATE DATABASE "{new}" TEMPLATE "{old}"'))
        return target
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{source}{suffix}").exists():
            shutil.copyfile(f"{source}{suffix}", f"{target}{suffix}")
    return target


def unchanged(db: Target) -> Any:
    """What "refused before anything was written" compares: the file's bytes, or every row of the
    tables an open could touch."""
    if not is_postgres_url(str(db)):
        return Path(db).read_bytes()
    return [rows(db, f"SELECT * FROM {t} ORDER BY 1") for t in ("meta", "knowledge", "audit_log")]


# -- the recorded embedder and the refusal --------------------------------------------------------


async def test_a_new_store_records_its_embedder_and_refuses_another(store_target: str) -> None:
    db = store_target
    await build(db, HashingEmbedder())
    assert meta(db)["embedder"] == "hashing" and meta(db)["embedding_dimensions"] == "384"
    before = unchanged(db)

    with pytest.raises(EmbedderMismatchError) as refused:
        await Memory(db, embedder=WordLlamaEmbedder()).open()
    message = str(refused.value)
    assert f"memdesk reembed {masked(db)}" in message
    assert "hashing" in message and "wordllama" in message and "384" in message and "256" in message
    assert unchanged(db) == before  # refused before anything was written

    # The default (no embedder given) is WordLlama, so it is refused the same way.
    with pytest.raises(EmbedderMismatchError, match="memdesk reembed"):
        await Memory(db).open()

    # Positive control: the embedder it was built with opens it.
    async with Memory(db, embedder=HashingEmbedder()) as mem:
        assert len(await mem.knowledge("ana")) == len(FACTS)


async def test_another_width_of_the_same_embedder_is_a_dimension_error_naming_reembed(store_target: str) -> None:
    db = store_target
    async with Memory(db, embedder=WordLlamaEmbedder(256)) as mem:
        await mem.add_knowledge("ana", "User lives in Porto", actor="t")
    with pytest.raises(EmbeddingDimensionError, match="memdesk reembed"):
        await Memory(db, embedder=WordLlamaEmbedder(128)).open()
    async with Memory(db, embedder=WordLlamaEmbedder(256)):  # control
        pass


async def test_a_store_without_a_recorded_name_is_the_hashing_embedder_it_was_built_with(store_target: str) -> None:
    db = store_target
    await build(db, HashingEmbedder())
    rows(db, "DELETE FROM meta WHERE key = 'embedder'")  # what a v4 database holds: the width only
    async with Memory(db, embedder=HashingEmbedder()) as mem:
        assert len(await mem.knowledge("ana")) == len(FACTS)
    with pytest.raises(EmbedderMismatchError, match="built with the hashing embedder"):
        await Memory(db, embedder=WordLlamaEmbedder()).open()


# -- the move -------------------------------------------------------------------------------------


async def test_reembed_moves_every_fact_to_the_new_width_and_audits_one_row(store_target: str) -> None:
    db = store_target
    ids = await build(db, HashingEmbedder())
    seen: list[tuple[int, int]] = []
    report = await reembed(
        str(db), WordLlamaEmbedder(), actor="ops", batch_size=7, progress=lambda d, t: seen.append((d, t))
    )
    total = len(FACTS) + 3
    assert (report.source, report.source_dimensions) == ("hashing", 384)
    assert (report.target, report.dimensions) == ("wordllama", 256)
    assert report.facts == total and report.resumed_at == 0
    assert seen[0] == (0, total) and seen[-1] == (total, total)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert meta(db) == {"embedder": "wordllama", "embedding_dimensions": "256"}
    assert not has_table(db, STAGING) and not has_table(db, "reembed_copy")

    audit = rows(
        db, "SELECT actor, action, user_id, entity, entity_id, before, after FROM audit_log WHERE action = 'reembed'"
    )
    assert len(audit) == 1
    assert audit[0][:5] == ("ops", "reembed", "", "store", None)
    assert '"embedder": "hashing"' in audit[0][5] and f'"facts": {total}' in audit[0][6]

    # Every status moved, with its metadata: the vectors now come from WordLlama, at 256 floats.
    expected = await WordLlamaEmbedder().embed(["User lives in Porto", "User lives in Lisbon", "User is vegan"])
    async with Memory(db) as mem:
        assert isinstance(mem.embedder, WordLlamaEmbedder)
        query = (  # the vector as JSON text (pgvector's text form is a JSON array too)
            "SELECT knowledge_id, status, vec_to_json(embedding) FROM knowledge_vec WHERE knowledge_id IN"
            " (?, ?, ?) ORDER BY knowledge_id"
            if mem.store.backend == "sqlite"
            else "SELECT id, status, CAST(embedding AS text) FROM knowledge WHERE id IN (?, ?, ?) ORDER BY id"
        )
        async with sql(mem) as conn:
            got = await (await conn.execute(query, (ids["porto"], ids["lisbon"], ids["vegan"]))).fetchall()
        assert [(r[0], r[1]) for r in got] == [
            (ids["porto"], "superseded"),
            (ids["lisbon"], "active"),
            (ids["vegan"], "retracted"),
        ]
        import json

        for (_, _, blob), want in zip(got, expected, strict=True):
            assert len(json.loads(blob)) == 256
            assert json.loads(blob) == pytest.approx(want, abs=1e-6)
        # Retrieval works on the new vectors, what the store believed earlier included (a corrected fact).
        top = await mem.retrieve("Which city is home for them?", user_id="bob", top_k=1)
        assert [i.knowledge.id for i in top.items] == [ids["lisbon"]]
        from tests.engine_helpers import T0

        past = await mem.retrieve("Which city is home for them?", user_id="bob", top_k=1, known_at=T0)
        assert [i.knowledge.id for i in past.items] == [ids["porto"]]

    # Already there: nothing to do, no second audit row.
    again = await reembed(str(db), WordLlamaEmbedder(), actor="ops")
    assert again.audit_id is None and again.facts == 0
    assert len(rows(db, "SELECT id FROM audit_log WHERE action = 'reembed'")) == 1


async def test_reembed_back_from_256_to_384_dimensions(store_target: str) -> None:
    db = store_target
    async with Memory(db) as mem:  # the default: WordLlama, 256
        await mem.add_knowledge_many("ana", FACTS[:10], actor="t")
    report = await reembed(str(db), HashingEmbedder(), actor="ops", batch_size=3)
    assert (report.source_dimensions, report.dimensions, report.facts) == (256, 384, 10)
    async with Memory(db, embedder=HashingEmbedder()) as mem:
        top = await mem.retrieve("city number 7", user_id="ana", top_k=1)
        assert top.items[0].knowledge.statement == FACTS[7]
    with pytest.raises(EmbedderMismatchError):
        await Memory(db).open()


class Interrupt(KeyboardInterrupt):
    pass


async def test_an_interrupted_reembed_leaves_a_working_store_and_resumes_to_the_same_end(
    new_target: Callable[[str], str],
) -> None:
    original = new_target("orig")
    await build(original, HashingEmbedder())
    straight = copy_db(original, new_target("straight"))
    broken = copy_db(original, new_target("broken"))
    await reembed(str(straight), WordLlamaEmbedder(), actor="ops", batch_size=5)

    calls = 0

    def stop_after_three_batches(done: int, total: int) -> None:
        nonlocal calls
        calls += 1
        if calls == 4:  # the first call reports the start, then one per staged batch
            raise Interrupt

    with pytest.raises(Interrupt):
        await reembed(str(broken), WordLlamaEmbedder(), actor="ops", batch_size=5, progress=stop_after_three_batches)

    # Midway: 15 staged, the old embedder still recorded and still answering; the target is refused
    # with a message that says a move is under way.
    assert len(rows(broken, f"SELECT knowledge_id FROM {STAGING}")) == 15
    assert meta(broken)["embedder"] == "hashing" and meta(broken)["reembed_target"] == "wordllama:256"
    async with Memory(broken, embedder=HashingEmbedder()) as mem:
        assert (await mem.retrieve("city number 3", user_id="ana", top_k=1)).items[0].knowledge.statement == FACTS[3]
    with pytest.raises(EmbedderMismatchError, match="was interrupted"):
        await Memory(broken).open()
    assert rows(broken, "SELECT id FROM audit_log WHERE action = 'reembed'") == []

    report = await reembed(str(broken), WordLlamaEmbedder(), actor="ops", batch_size=5)
    assert report.resumed_at == 15 and report.facts == len(FACTS) + 3
    assert meta(broken) == meta(straight)
    assert await vectors(broken, WordLlamaEmbedder()) == await vectors(straight, WordLlamaEmbedder())
    assert len(rows(broken, "SELECT id FROM audit_log WHERE action = 'reembed'")) == 1


async def test_facts_written_or_erased_during_an_interrupted_move_are_handled(store_target: str) -> None:
    db = store_target
    await build(db, HashingEmbedder())

    def stop(done: int, total: int) -> None:
        if done >= 10:
            raise Interrupt

    with pytest.raises(Interrupt):
        await reembed(str(db), WordLlamaEmbedder(), actor="ops", batch_size=10, progress=stop)
    assert len(rows(db, f"SELECT * FROM {STAGING}")) == 10
    from engine.erase import erase_user

    async with Memory(db, embedder=HashingEmbedder()) as mem:  # the store keeps working meanwhile
        await erase_user(mem, "ana", "ops")  # ana's staged vectors go with her facts
        late = await mem.add_knowledge("cat", "User plays the cello", actor="t")
    assert rows(db, f"SELECT * FROM {STAGING}") == []
    report = await reembed(str(db), WordLlamaEmbedder(), actor="ops", batch_size=10)
    assert report.facts == 4  # bob's three and cat's late one
    async with Memory(db) as mem:
        top = await mem.retrieve("Which instrument do they play?", user_id="cat", top_k=1)
        assert [i.knowledge.id for i in top.items] == [late.id]
        assert await mem.knowledge("ana") == []


async def test_another_target_discards_what_an_interrupted_move_staged(store_target: str) -> None:
    db = store_target
    await build(db, HashingEmbedder())

    def stop(done: int, total: int) -> None:
        if done >= 10:
            raise Interrupt

    with pytest.raises(Interrupt):
        await reembed(str(db), WordLlamaEmbedder(), actor="ops", batch_size=10, progress=stop)
    report = await reembed(str(db), WordLlamaEmbedder(128), actor="ops", batch_size=10)
    assert report.resumed_at == 0 and report.dimensions == 128
    async with Memory(db, embedder=WordLlamaEmbedder(128)):
        pass
    # Back to the embedder it is on: the move is abandoned, nothing re-embedded.
    with pytest.raises(Interrupt):
        await reembed(str(db), WordLlamaEmbedder(), actor="ops", batch_size=10, progress=stop)
    done = await reembed(str(db), WordLlamaEmbedder(128), actor="ops")
    assert done.audit_id is None
    assert "reembed_target" not in meta(db)
    assert not has_table(db, STAGING)


# -- the command ----------------------------------------------------------------------------------


def memdesk(*args: Target, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MEMDESK_", "OPENAI_"))}
    return subprocess.run(
        [str(MEMDESK), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=180,
        env={**base, "NO_COLOR": "1", **(env or {})},
        check=False,
    )


def test_the_cli_refuses_then_reembeds_with_a_progress_bar(store_target: str) -> None:
    db = store_target
    asyncio.run(build(db, HashingEmbedder()))
    refused = memdesk("search", db, "--user", "bob", "where", "do", "they", "live")
    assert refused.returncode == 1
    assert f"memdesk reembed {masked(db)}" in refused.stderr
    hashing = memdesk("search", db, "--user", "bob", "Lisbon", env={"MEMDESK_EMBEDDER": "hashing"})
    assert hashing.returncode == 0 and "Lisbon" in hashing.stdout  # control: the recorded embedder opens it

    done = memdesk("reembed", db, "--actor", "ops", "--batch-size", "8")
    assert done.returncode == 0, done.stderr
    assert "Re-embedded 43 facts" in done.stdout and "hashing (384 dimensions) -> wordllama (256" in done.stdout
    assert "Re-embedding facts" in done.stderr  # the progress bar, on stderr
    found = memdesk("search", db, "--user", "bob", "Which city is home for them?", "--top-k", "1")
    assert found.returncode == 0 and "Lisbon" in found.stdout
    again = memdesk("reembed", db, "--actor", "ops")
    assert again.returncode == 0 and "nothing to do" in again.stdout
    help_text = memdesk("reembed", "--help")
    assert help_text.returncode == 0 and "resumes" in help_text.stdout


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL])
def test_the_cli_move_survives_a_signal_and_resumes(new_target: Callable[[str], str], how: signal.Signals) -> None:
    facts = [f"User noted detail {i} about their week" for i in range(1500)]
    original = new_target("orig")
    asyncio.run(build(original, HashingEmbedder(), facts))
    straight = copy_db(original, new_target("straight"))
    assert memdesk("reembed", straight, "--actor", "ops").returncode == 0

    db = copy_db(original, new_target("sig"))
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MEMDESK_", "OPENAI_"))}
    proc = subprocess.Popen(
        [str(MEMDESK), "reembed", str(db), "--actor", "ops", "--batch-size", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=base,
    )
    deadline = time.monotonic() + 120
    staged = 0
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            staged = int(meta(db).get("reembed_last_id", "0"))
        except sqlite3.OperationalError:  # busy for a moment
            staged = 0
        if staged > 50:
            proc.send_signal(how)
            break
        time.sleep(0.02)
    _, err = proc.communicate(timeout=60)
    assert staged > 50, "the move finished before it could be interrupted"
    assert proc.returncode != 0
    if how == signal.SIGINT:
        assert proc.returncode == 1 and "run the same command to resume" in err
    partial = meta(db)
    assert partial["embedder"] == "hashing" and "reembed_target" in partial
    assert 0 < len(rows(db, f"SELECT * FROM {STAGING}")) < len(facts) + 3

    resumed = memdesk("reembed", db, "--actor", "ops")
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed after" in resumed.stdout
    assert meta(db) == meta(straight)
    assert asyncio.run(vectors(db, WordLlamaEmbedder())) == asyncio.run(vectors(straight, WordLlamaEmbedder()))


def test_the_workstation_refuses_another_embedders_store_with_the_message_not_a_traceback(
    store_target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from review_app.cli.workstation import can_open as _can_open

    db = store_target
    asyncio.run(build(db, HashingEmbedder()))
    refused = memdesk("review", db, "--reviewer", "ana")
    assert refused.returncode == 1
    assert f"memdesk reembed {masked(db)}" in refused.stderr and "Traceback" not in refused.stderr
    # Control: the check `review` makes first passes with the embedder the store was built with.
    monkeypatch.setenv("MEMDESK_EMBEDDER", "hashing")
    asyncio.run(_can_open(str(db)))
    monkeypatch.delenv("MEMDESK_EMBEDDER")
    with pytest.raises(EmbedderMismatchError):
        asyncio.run(_can_open(str(db)))

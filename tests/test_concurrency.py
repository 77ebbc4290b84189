"""Several reviewers and workers on one database, and a reviewer killed mid-stream, on each backend.

The guarantees under test (issues 2 and 11, DESIGN "Decisions"): a decision is one write transaction
guarded by `status = 'pending'` (SQLite: BEGIN IMMEDIATE; PostgreSQL: READ COMMITTED with the row
locked), so (a) four OS processes draining one queue decide each candidate exactly once and no
"database is locked" or serialization error ever reaches a caller; (b) two reviewers racing on one
candidate produce exactly one winner and the loser changes nothing; (c) SIGKILL between or inside
decisions leaves every decision the engine reported as done stored, and never half of a
supersession; (d) ingest and `process` workers running at once put every message in exactly one
episode and extract each episode once. The workers are real processes (tests/procs/), each with its
own Memory (its own connections, or its own asyncpg pool, as on different hosts), because an
in-process test would only exercise the asyncio lock, not the database's own locking.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlite_vec

from engine import AlreadyDecidedError, HashingEmbedder, Memory, NewFact, UserInputError
from engine.models import to_jsonable
from engine.storage.sqlite.connection import _connect_sync
from engine.storage.sqlite.schema import MIGRATIONS, SCHEMA_VERSION, VEC_CHUNK_SIZE
from engine.storage.sqlite.tx import fts_scope
from engine.timeutil import BEGINNING, FOREVER
from tests.engine_helpers import sql

WORKER = Path(__file__).parent / "procs" / "decide_worker.py"
PROCESS_WORKER = Path(__file__).parent / "procs" / "process_worker.py"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
DECISIONS = ("approve", "edit_approve", "confirm_supersession", "keep_both", "reject", "approve_retraction")
PROCESS_TIMEOUT_S = 60


def fixed_clock() -> datetime:
    return T0


def spawn(*args: str, worker: Path = WORKER) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(worker), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@contextmanager
def line_reader(proc: subprocess.Popen[str]) -> Iterator[queue.Queue[str | None]]:
    """Lines of the child's stdout through a queue, so the parent can wait with a timeout
    (None marks end of output)."""
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    try:
        yield lines
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=PROCESS_TIMEOUT_S)
        thread.join(timeout=PROCESS_TIMEOUT_S)


def next_line(lines: queue.Queue[str | None], proc: subprocess.Popen[str]) -> str:
    try:
        line = lines.get(timeout=PROCESS_TIMEOUT_S)
    except queue.Empty:
        pytest.fail(f"worker {proc.pid} printed nothing for {PROCESS_TIMEOUT_S}s")
    if line is None:
        stderr = proc.stderr.read() if proc.stderr else ""
        pytest.fail(f"worker {proc.pid} ended early (rc={proc.wait()}):\n{stderr}")
    return line


async def scalar(mem: Memory, query: str, args: tuple[object, ...] = ()) -> int:
    async with sql(mem) as conn:
        row = await (await conn.execute(query, args)).fetchone()
    assert row is not None
    return int(row[0])


async def rows(mem: Memory, query: str, args: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    async with sql(mem) as conn:
        return [tuple(r) for r in await (await conn.execute(query, args)).fetchall()]


async def index_counts(mem: Memory) -> tuple[int, int]:
    """(rows in the text index, rows in the vector index): SQLite's knowledge_fts and knowledge_vec;
    on PostgreSQL the knowledge rows whose tsvector and vector are filled."""
    if mem.store.backend == "sqlite":
        return (
            await scalar(mem, "SELECT count(*) FROM knowledge_fts"),
            await scalar(mem, "SELECT count(*) FROM knowledge_vec"),
        )
    return (
        await scalar(mem, "SELECT count(*) FROM knowledge WHERE search IS NOT NULL"),
        await scalar(mem, "SELECT count(*) FROM knowledge WHERE embedding IS NOT NULL"),
    )


async def decision_rows_per_candidate(mem: Memory) -> Counter[int]:
    marks = ",".join("?" * len(DECISIONS))
    found = await rows(
        mem, f"SELECT entity_id FROM audit_log WHERE entity = 'candidate' AND action IN ({marks})", DECISIONS
    )
    return Counter(int(r[0]) for r in found)  # type: ignore[call-overload]


def _kill(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def start_all(procs: list[subprocess.Popen[str]]) -> None:
    """Wait until every worker has its store open, then let them all go at once (a worker that
    does not start fails the test and takes the others down)."""
    try:
        for proc in procs:
            assert proc.stdout is not None
            ready = proc.stdout.readline().strip()
            assert ready == "ready", f"worker did not start: {ready!r} {proc.stderr.read() if proc.stderr else ''}"
    except BaseException:
        _kill(procs)
        raise
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()


def final_reports(procs: list[subprocess.Popen[str]], timeout: float = PROCESS_TIMEOUT_S * 2) -> list[dict[str, Any]]:
    """Each worker's last line (its JSON report), once it has exited 0."""
    reports = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=timeout)
            assert proc.returncode == 0, err
            reports.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        _kill(procs)
    return reports


# -- (a) four processes drain one queue ------------------------------------------------------------


async def test_four_processes_decide_each_candidate_exactly_once(store_target: str) -> None:
    db = store_target
    async with Memory(db, clock=fixed_clock) as mem:
        ids = [
            await mem.queue_candidate(f"user{i % 20:02d}", f"User {i % 20} fact number {i}", evidence=f"said {i}")
            for i in range(400)
        ]

    names = [f"reviewer{n}" for n in range(4)]
    procs = [spawn("race", str(db), name, str(seed)) for seed, name in enumerate(names)]
    start_all(procs)  # everyone has the database open before anyone starts deciding
    reports = final_reports(procs, timeout=PROCESS_TIMEOUT_S)

    # No caller saw "database is locked" or any other unexpected error.
    errors = {r["name"]: r["errors"] for r in reports if r["errors"]}
    assert errors == {}

    # Each success reported to exactly one caller, and every candidate reported by someone.
    won_by: dict[int, str] = {}
    for report in reports:
        for cid in report["decided"]:  # type: ignore[attr-defined]
            assert cid not in won_by, f"candidate {cid} reported decided by {won_by[cid]} and {report['name']}"
            won_by[cid] = str(report["name"])
    assert sorted(won_by) == sorted(ids)

    # Positive control: the work really was spread over processes (the race was real).
    deciders = {name for name in won_by.values()}
    conflicts = sum(int(r["conflicts"]) for r in reports)  # type: ignore[call-overload]
    assert len(deciders) > 1, f"one process decided everything ({conflicts} conflicts)"

    async with Memory(db, clock=fixed_clock) as mem:
        assert await mem.review.count() == 0
        stored = await rows(mem, "SELECT id, status, decided_by, knowledge_id FROM candidates ORDER BY id")
        assert [r[0] for r in stored] == ids
        for cid, status, decided_by, _kid in stored:
            assert decided_by == won_by[int(cid)]  # type: ignore[call-overload]
            assert status == ("rejected" if int(cid) % 3 == 0 else "approved")  # type: ignore[call-overload]
        # one decision audit row per candidate
        assert await decision_rows_per_candidate(mem) == Counter({cid: 1 for cid in ids})
        approved = [r for r in stored if r[1] == "approved"]
        rejected = [r for r in stored if r[1] == "rejected"]
        assert approved and rejected
        # knowledge rows == approvals, each linked both ways; tombstones == rejections
        assert await scalar(mem, "SELECT count(*) FROM knowledge") == len(approved)
        linked = await rows(mem, "SELECT candidate_id, id FROM knowledge")
        assert sorted((int(c), int(k)) for c, k in linked) == sorted(  # type: ignore[call-overload]
            (int(r[0]), int(r[3]))
            for r in approved  # type: ignore[call-overload]
        )
        assert await scalar(mem, "SELECT count(*) FROM tombstones") == len(rejected)
        assert await scalar(mem, "SELECT count(DISTINCT candidate_id) FROM tombstones") == len(rejected)
        assert await index_counts(mem) == (len(approved), len(approved))


# -- (b) two reviewers race on one candidate -------------------------------------------------------


@pytest.mark.parametrize("instances", [1, 2], ids=["one-memory", "two-memories"])
async def test_two_reviewers_racing_on_one_candidate_exactly_one_wins(store_target: str, instances: int) -> None:
    db = store_target
    first = Memory(db, clock=fixed_clock)
    second = first if instances == 1 else Memory(db, clock=fixed_clock)
    async with first:
        if second is not first:
            await second.open()
        try:
            ids = [await first.queue_candidate("ana", f"Ana likes sport {i}") for i in range(12)]
            outcomes: dict[int, tuple[str, str]] = {}
            for n, cid in enumerate(ids):
                # even: two approvals (both pass the first pending check, so the guard inside the
                # write transaction decides); odd: an approval against a rejection
                if n % 2 == 0:
                    rival = second.review.approve(cid, reviewer="bob-reviewer")
                else:
                    rival = second.review.reject(cid, reviewer="bob-reviewer", reason="not about Ana")
                results = await asyncio.gather(
                    first.review.approve(cid, reviewer="ana-reviewer"), rival, return_exceptions=True
                )
                losers = [r for r in results if isinstance(r, BaseException)]
                assert len(losers) == 1, results
                assert isinstance(losers[0], AlreadyDecidedError), repr(losers[0])
                cand = await first.review.get(cid)
                assert cand.status in ("approved", "rejected")
                outcomes[cid] = (cand.status, str(cand.decided_by))

            # the loser changed nothing: state matches the winner alone
            for cid, (status, _who) in outcomes.items():
                facts = await rows(first, "SELECT id FROM knowledge WHERE candidate_id = ?", (cid,))
                stones = await rows(first, "SELECT id FROM tombstones WHERE candidate_id = ?", (cid,))
                assert (len(facts), len(stones)) == ((1, 0) if status == "approved" else (0, 1))
            assert await decision_rows_per_candidate(first) == Counter({cid: 1 for cid in ids})

            # positive control: unraced, each of the losing calls succeeds on its own
            solo = [await first.queue_candidate("ana", f"Ana plays instrument {i}") for i in range(2)]
            await second.review.approve(solo[0], reviewer="bob-reviewer")
            assert await second.review.reject(solo[1], reviewer="bob-reviewer", reason="solo") is not None
            await first.review.approve(await first.queue_candidate("ana", "Ana reads novels"), reviewer="ana-reviewer")
            # a third, late decision is refused too
            with pytest.raises(AlreadyDecidedError):
                await second.review.approve(ids[0], reviewer="carol")
        finally:
            if second is not first:
                await second.close()


# -- (c) SIGKILL in the middle of a stream of decisions ---------------------------------------------


async def build_stream_queue(db: str) -> dict[int, tuple[str, int]]:
    """200 candidates for 4 users; every third is an update superseding an existing fact.
    Returns {update candidate id: (user, id of the fact it supersedes)}."""
    targets: dict[int, tuple[str, int]] = {}
    async with Memory(db, clock=fixed_clock) as mem:
        for i in range(200):
            user = f"user{i % 4}"
            if i % 3 == 1:
                old = await mem.add_knowledge(user, f"{user} lives in town {i}", actor="seed")
                cid = await mem.queue_candidate(user, f"{user} moved to city {i}", kind="update", supersedes_id=old.id)
                targets[cid] = (user, old.id)
            else:
                await mem.queue_candidate(user, f"{user} enjoys pastime {i}")
    return targets


async def check_consistent(db: str, targets: dict[int, tuple[str, int]], printed: dict[int, str]) -> int:
    """Everything the killed worker reported is stored; nothing is half-applied. Returns the number
    of candidates still pending."""
    async with Memory(db, clock=fixed_clock) as mem:
        if mem.store.backend == "sqlite":  # PostgreSQL checks its foreign keys on every write
            assert await rows(mem, "PRAGMA integrity_check") == [("ok",)]
            assert await rows(mem, "PRAGMA foreign_key_check") == []
        cands = {
            int(r[0]): (str(r[1]), r[2], r[3])  # type: ignore[call-overload]
            for r in await rows(mem, "SELECT id, status, decision, knowledge_id FROM candidates")
        }
        for cid, decision in printed.items():
            status, stored_decision, _ = cands[cid]
            assert stored_decision == decision, f"candidate {cid}: printed {decision}, stored {stored_decision}"
            assert status == ("rejected" if decision == "reject" else "approved")

        per_candidate = await decision_rows_per_candidate(mem)
        facts_by_candidate = {
            int(r[0]): (int(r[1]), str(r[2]))  # type: ignore[call-overload]
            for r in await rows(mem, "SELECT candidate_id, id, status FROM knowledge WHERE candidate_id IS NOT NULL")
        }
        stones = {int(r[0]) for r in await rows(mem, "SELECT candidate_id FROM tombstones")}  # type: ignore[call-overload]
        for cid, (status, _decision, kid) in cands.items():
            assert per_candidate.get(cid, 0) == (0 if status == "pending" else 1), cid
            assert (cid in facts_by_candidate) == (status == "approved"), cid
            assert (cid in stones) == (status == "rejected"), cid
            if status == "approved":
                assert kid == facts_by_candidate[cid][0]
            if cid in targets:
                user, old_id = targets[cid]
                old = await mem.get_knowledge(user, old_id)
                if status == "approved":  # supersession whole: old ended, pointing at the new fact
                    assert (old.status, old.superseded_by) == ("superseded", kid)
                    assert old.expired_at is not None
                else:  # not started at all: old untouched, and no new fact exists
                    assert (old.status, old.superseded_by, old.expired_at) == ("active", None, None)
                    assert cid not in facts_by_candidate
        # the indexes agree with the fact table (no fact without its vector and FTS rows)
        facts = await scalar(mem, "SELECT count(*) FROM knowledge")
        assert await index_counts(mem) == (facts, facts)
        if mem.store.backend == "sqlite":  # the vec0 table's copy of each fact's status agrees
            vec_active = await scalar(mem, "SELECT count(*) FROM knowledge_vec WHERE status = 'active'")
            assert vec_active == await scalar(mem, "SELECT count(*) FROM knowledge WHERE status = 'active'")
        return sum(1 for status, _, _ in cands.values() if status == "pending")


async def test_sigkill_mid_stream_keeps_every_returned_decision_and_no_half_supersession(store_target: str) -> None:
    db = store_target
    targets = await build_stream_queue(db)
    printed: dict[int, str] = {}
    kill_after = 35
    for round_no in range(2):  # the second round starts from the state the first kill left
        proc = spawn("stream", str(db), f"stream{round_no}")
        with line_reader(proc) as lines:
            for _ in range(kill_after):
                cid, decision = next_line(lines, proc).split()
                printed[int(cid)] = decision
            os.kill(proc.pid, signal.SIGKILL)
            assert proc.wait(timeout=PROCESS_TIMEOUT_S) == -signal.SIGKILL
        pending = await check_consistent(db, targets, printed)
        # positive control: the kill really interrupted the stream (work was left undone), and the
        # stream did include supersessions
        assert pending > 0
        assert pending <= 200 - len(printed)
    assert len(printed) == 2 * kill_after
    assert "confirm_supersession" in printed.values() and "reject" in printed.values()


async def test_superseded_fact_check_can_fail(store_target: str) -> None:
    """Positive control for check_consistent: a deliberately half-applied supersession (old fact
    ended, candidate still pending) is caught."""
    db = store_target
    async with Memory(db, clock=fixed_clock) as mem:
        old = await mem.add_knowledge("user1", "user1 lives in Oslo", actor="seed")
        cid = await mem.queue_candidate("user1", "user1 moved to Bergen", kind="update", supersedes_id=old.id)
        async with sql(mem, write=True) as conn:
            await conn.execute(
                "UPDATE knowledge SET status = 'superseded', expired_at = ?, end_reason = 'superseded' WHERE id = ?",
                (1, old.id),
            )
    with pytest.raises(AssertionError):
        await check_consistent(db, {cid: ("user1", old.id)}, {})


# -- (d) ingest and process workers on one database at once ----------------------------------------


async def test_ingest_and_process_workers_at_once_put_each_message_in_one_episode(store_target: str) -> None:
    async with Memory(store_target) as mem:  # the schema exists before the workers race to open it
        assert await mem.review.count() == 0
    ingesters = [spawn("ingest", store_target, f"in{n}", "60", worker=PROCESS_WORKER) for n in range(3)]
    workers = [spawn("process", store_target, f"pw{n}", worker=PROCESS_WORKER) for n in range(3)]
    start_all(ingesters + workers)
    stored = final_reports(ingesters)
    for proc in workers:  # the ingesters are done: each worker does its last rounds
        assert proc.stdin is not None
        proc.stdin.write("stop\n")
        proc.stdin.flush()
    processed = final_reports(workers)
    assert {r["name"]: r["errors"] for r in processed if r["errors"]} == {}

    messages = [m for r in stored for m in r["messages"]]
    assert len(messages) == len(set(messages)) == 180  # no lost write: every ingest call stored its row
    async with Memory(store_target, extractor=None) as mem:
        seen = Counter(m for r in processed for m in r["messages"])
        episodes = Counter(e for r in processed for e in r["episodes"])
        async with sql(mem) as conn:
            db_messages = [
                tuple(r)
                for r in await (
                    await conn.execute("SELECT id, episode_id FROM messages WHERE role = 'user' ORDER BY id")
                ).fetchall()
            ]
        assert sorted(m for m, _ in db_messages) == sorted(messages)
        # no message given to the extractor twice, none in two episodes, no episode extracted twice
        assert [m for m, n in seen.items() if n > 1] == []
        assert [e for e, n in episodes.items() if n > 1] == []
        # no lost message: the workers' last rounds ran after every ingest, so each message was
        # extracted, in exactly one episode, and that episode is processed
        assert sorted(seen) == sorted(messages)
        assert all(episode_id is not None for _, episode_id in db_messages)
        statuses = await rows(mem, "SELECT status, count(*) FROM episodes GROUP BY status")
        assert [s for s, _ in statuses] == ["processed"], statuses
        runs = await rows(mem, "SELECT episode_id, count(*) FROM extraction_runs GROUP BY episode_id")
        assert all(int(n) == 1 for _, n in runs)  # type: ignore[call-overload]
        assert sorted(int(e) for e, _ in runs) == sorted(episodes)  # type: ignore[call-overload]
        # positive control: the work was shared between the worker processes, and it was real
        assert sum(1 for r in processed if r["episodes"]) > 1, [len(r["episodes"]) for r in processed]
        assert await mem.review.count() == 180  # one claim per message, each queued once


# -- engine additions made for benchmarks/retrieval.py ---------------------------------------------


async def test_add_knowledge_many_stores_audits_and_indexes_every_fact(store_target: str) -> None:
    # The lexical embedder, pinned: "town 842" must be the vector arm's first hit too, and telling
    # 842 from 843 is what character trigrams do and an averaged word embedding does not.
    async with Memory(store_target, clock=fixed_clock, embedder=HashingEmbedder()) as mem:
        facts: list[str | NewFact] = [
            f"Ana collects stamp series {i}"
            if i % 2
            else NewFact(f"Ana visited town {i}", T0, T0 + timedelta(days=i + 1))
            for i in range(1200)
        ]
        added = await mem.add_knowledge_many("ana", facts, actor="import", batch_size=500)  # three batches
        assert [k.id for k in added] == sorted({k.id for k in added})
        stored = await mem.knowledge("ana")
        assert stored == added  # what the call returned is exactly what was stored
        assert stored[1].statement == "Ana collects stamp series 1"
        assert (stored[0].valid_at, stored[0].invalid_at) == (T0, T0 + timedelta(days=1))
        audit = await rows(mem, "SELECT entity_id, action, after FROM audit_log WHERE entity = 'knowledge'")
        assert sorted(int(r[0]) for r in audit) == [k.id for k in added]  # type: ignore[call-overload]
        assert {r[1] for r in audit} == {"inject"}
        assert json.loads(str(audit[5][2])) == to_jsonable(stored[5])
        assert await index_counts(mem) == (1200, 1200)
        # indexed for retrieval, for Ana only
        hit = await mem.retrieve("Ana visited town 842", user_id="ana", top_k=3)
        assert hit.items[0].knowledge.statement == "Ana visited town 842"
        assert hit.items[0].text_rank is not None and hit.items[0].vector_rank == 1
        assert (await mem.retrieve("Ana visited town 842", user_id="bob", top_k=3)).items == []


async def test_add_knowledge_many_refuses_a_bad_fact_and_writes_nothing(store_target: str) -> None:
    async with Memory(store_target, clock=fixed_clock) as mem:
        good = [NewFact(f"Bo likes fruit {i}") for i in range(10)]
        inverted = NewFact("Bo lived in Rome", valid_at=T0, invalid_at=T0 - timedelta(days=1))
        for bad in (inverted, NewFact("   ")):
            with pytest.raises(UserInputError):
                await mem.add_knowledge_many("bo", [*good[:5], bad, *good[5:]], actor="import", batch_size=3)
            assert await scalar(mem, "SELECT count(*) FROM knowledge") == 0
            assert await scalar(mem, "SELECT count(*) FROM audit_log") == 0
        # positive control: the same facts without the bad one are stored
        assert len(await mem.add_knowledge_many("bo", good, actor="import", batch_size=3)) == 10
        assert await scalar(mem, "SELECT count(*) FROM knowledge") == 10


async def test_text_arm_is_scoped_by_user_inside_the_fts_match(store_target: str) -> None:
    """'ana' and 'ana smith' hold the same statement; each one's BM25 arm finds only its own row
    (their scope tokens must not collide even though one id is a prefix of the other)."""
    async with Memory(store_target, clock=fixed_clock) as mem:
        own = {u: await mem.add_knowledge(u, "Keeps Zebrafinch birds", actor="seed") for u in ("ana", "ana smith")}
        await mem.add_knowledge("ünïcode/user", "Keeps Zebrafinch birds too", actor="seed")
        for user, fact in own.items():
            res = await mem.retrieve("Zebrafinch", user_id=user, top_k=5)
            assert [i.knowledge.id for i in res.items] == [fact.id]
            assert res.items[0].text_rank == 1
        assert (await mem.retrieve("Zebrafinch", user_id="nobody", top_k=5)).items == []
        if mem.store.backend == "sqlite":  # FTS5's scope column (PostgreSQL filters by user_id)
            scopes = await rows(mem, "SELECT scope FROM knowledge_fts ORDER BY rowid")
            assert scopes == [(fts_scope("ana"),), (fts_scope("ana smith"),), (fts_scope("ünïcode/user"),)]


# SQLite only (it takes tmp_path, not the backend): a schema v1 SQLite file, sqlite-vec chunk sizes,
# FTS5, PRAGMA user_version.
async def test_migration_from_v1_rebuilds_the_fts_and_vector_indexes(tmp_path: Path) -> None:
    """A database written by schema v1 (FTS without the scope column, vectors in 1,024-slot chunks)
    is migrated on open; its facts stay findable by both arms, for their own user only."""
    path = tmp_path / "v1.db"
    conn = _connect_sync(str(path))
    try:
        for statement in MIGRATIONS[1](HashingEmbedder().dimensions):
            conn.execute(statement)
        conn.execute("PRAGMA user_version = 1")
        [vec] = await HashingEmbedder().embed(["Ana keeps Zebrafinch birds"])
        for kid, user in ((1, "ana"), (2, "bob")):
            text = "Ana keeps Zebrafinch birds" if user == "ana" else "Bob drinks tea"
            conn.execute(
                "INSERT INTO knowledge(id, user_id, statement, key, created_at, status, created_by)"
                " VALUES (?, ?, ?, ?, 1, 'active', 'v1')",
                (kid, user, text, text.lower()),
            )
            conn.execute("INSERT INTO knowledge_fts(rowid, statement) VALUES (?, ?)", (kid, text))
            conn.execute(
                "INSERT INTO knowledge_vec(knowledge_id, user_id, embedding, status, valid_from, valid_to, created,"
                " expired) VALUES (?, ?, ?, 'active', ?, ?, 1, ?)",
                (kid, user, sqlite_vec.serialize_float32(vec), BEGINNING, FOREVER, FOREVER),
            )
    finally:
        conn.close()
    # A database without a recorded embedder name is the hashing embedder's (engine.memory).
    async with Memory(path, clock=fixed_clock, embedder=HashingEmbedder()) as mem:
        assert await scalar(mem, "PRAGMA user_version") == SCHEMA_VERSION
        [(vec_sql,)] = await rows(mem, "SELECT sql FROM sqlite_master WHERE name = 'knowledge_vec'")
        assert f"chunk_size={VEC_CHUNK_SIZE}" in str(vec_sql)
        ana = await mem.retrieve("Zebrafinch", user_id="ana", top_k=5)
        assert [(i.knowledge.id, i.text_rank) for i in ana.items] == [(1, 1)]
        bob = await mem.retrieve("Zebrafinch", user_id="bob", top_k=5)
        assert [(i.knowledge.id, i.text_rank, i.vector_rank) for i in bob.items] == [(2, None, 1)]  # vector only


async def test_terms_in_half_of_a_large_users_facts_are_left_out_of_the_bm25_query(store_target: str) -> None:
    async with Memory(store_target, clock=fixed_clock) as mem:
        await mem.add_knowledge_many("small", [f"User likes item {i}" for i in range(10)], actor="seed")
        async with mem.store.reading() as tx:  # a small user keeps every term (control)
            assert await tx.informative_terms("small", ["user", "zebrafinch"]) == ["user", "zebrafinch"]
        await mem.add_knowledge_many("big", [f"User likes item {i}" for i in range(1999)], actor="seed")
        [target] = await mem.add_knowledge_many("big", ["User keeps Zebrafinch birds"], actor="seed")
        async with mem.store.reading() as tx:
            got = await tx.informative_terms("big", ["user", "zebrafinch", "nowhere"])
            assert got == ["zebrafinch", "nowhere"]
            # counted per user: the small user's "user" is still informative beside the big one
            assert await tx.informative_terms("small", ["user"]) == ["user"]
        res = await mem.retrieve("does the user keep a zebrafinch", user_id="big", top_k=5)
        assert (res.items[0].knowledge.id, res.items[0].text_rank) == (target.id, 1)
        assert [i.text_rank for i in res.items[1:]] == [None] * 4  # "user" alone no longer gives a text rank
        assert len(res.items) == 5
        # the counts are cached, but not frozen: once "user" is in fewer than half of big's facts, it counts again
        await mem.add_knowledge_many("big", [f"Cat naps {i}" for i in range(2100)], actor="seed")
        async with mem.store.reading() as tx:
            assert await tx.informative_terms("big", ["user", "zebrafinch"]) == ["user", "zebrafinch"]

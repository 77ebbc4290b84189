"""`process` under faults and load (issues 10 and 12): episode leases that a live worker renews and
a killed worker loses within one lease, reported instead of a silent 0; one audit row per episode
and per run; extractor dates outside the representable range dropped and counted; several users
processed at once with bounded concurrency.

The killed worker is a real OS process (tests/procs/process_worker.py, its own Memory: its own
connections or asyncpg pool, as on another host) SIGKILLed while its model call hangs, because only
then is the lease in the database what protects the episodes. Every test runs on both backends; the
CLI is given the same path or postgresql:// URL.
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
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from engine import Episode, Extraction, GapItem, Knowledge, Memory, MemoryConfig, UserInputError
from tests.engine_helpers import sql

WORKER = Path(__file__).parent / "procs" / "process_worker.py"
MEMDESK = Path(sys.executable).parent / "memdesk"
LEASE_S = 2.0
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


async def three_episodes(mem: Memory, user: str = "ana") -> None:
    await mem.add_exchanges(
        [
            (user, "I live in Lisbon.", "ok", START),
            (user, "I work as a nurse.", "ok", START + timedelta(hours=2)),
            (user, "I have a dog named Rex.", "ok", START + timedelta(hours=4)),
        ]
    )


def wait_for_line(proc: subprocess.Popen[str], prefix: str, timeout: float = 60.0) -> str:
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    while True:
        line = lines.get(timeout=timeout)
        if line is None:
            raise AssertionError(f"worker ended before {prefix!r}: {proc.stderr.read() if proc.stderr else ''}")
        if line.startswith(prefix):
            return line


async def test_a_sigkilled_process_leaves_its_episodes_available_again_within_one_lease(store_target: str) -> None:
    db = store_target
    config = MemoryConfig(episode_lease_seconds=LEASE_S)
    async with Memory(db, config=config) as mem:
        await three_episodes(mem)
    worker = subprocess.Popen(
        [sys.executable, str(WORKER), "hang", str(db), str(LEASE_S)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_line(worker, "extracting ")
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=60)
    async with Memory(db, config=config) as mem:
        before = datetime.now(UTC)
        held = await mem.process()
        # Not a silent 0: the report says the work is someone else's, and until when.
        assert (held.episodes, held.queued, held.leased_elsewhere) == (0, 0, 3)
        assert held.leased_until is not None and before < held.leased_until <= before + timedelta(seconds=LEASE_S)

        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMDESK_", "OPENAI_"))}
        cli = subprocess.run(
            [str(MEMDESK), "process", str(db), "--json"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        assert cli.returncode == 0, cli.stderr
        by_cli = json.loads(cli.stdout)
        if by_cli["episodes"] == 0:  # the usual case: the CLI starts well within the lease
            assert by_cli["leased_elsewhere"] == 3 and "leased by another worker until" in cli.stderr
            await asyncio.sleep(max(0.0, (held.leased_until - datetime.now(UTC)).total_seconds()) + 0.05)
            resumed = await mem.process()
            assert (resumed.episodes, resumed.leased_elsewhere, resumed.failed, resumed.queued) == (3, 0, 0, 3)
        else:  # a slow machine: the lease ran out while the CLI started, and the CLI resumed the work
            assert (by_cli["episodes"], by_cli["leased_elsewhere"], by_cli["queued"]) == (3, 0, 3)
        async with sql(mem) as conn:
            statuses = await (await conn.execute("SELECT status, count(*) FROM episodes GROUP BY 1")).fetchall()
            runs = await (await conn.execute("SELECT episode_id, count(*) FROM extraction_runs GROUP BY 1")).fetchall()
        assert [tuple(r) for r in statuses] == [("processed", 3)]
        assert all(n == 1 for _, n in runs) and len(runs) == 3  # the killed worker stored nothing


class Gate:
    """An extractor that waits for the test to open it, counting the calls in flight."""

    name = "gate"
    model: str | None = None
    prompt_version: str | None = None

    def __init__(self, delay: float = 0.0) -> None:
        self.open = asyncio.Event()
        self.delay = delay
        self.in_flight = 0
        self.most_in_flight = 0
        self.calls = 0

    async def extract(self, episode: Episode, existing: list[Knowledge]) -> Extraction:
        self.calls += 1
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            else:
                await self.open.wait()
        finally:
            self.in_flight -= 1
        text = episode.messages[0].content
        return Extraction("", [GapItem(text, evidence=text)])


async def test_a_live_worker_renews_its_lease_so_a_slow_model_keeps_its_episode(store_target: str) -> None:
    db = store_target
    config = MemoryConfig(episode_lease_seconds=0.3)
    slow = Gate()
    async with Memory(db, extractor=slow, config=config) as a, Memory(db, extractor=Gate(), config=config) as b:
        await a.add_exchange("ana", "I live in Lisbon.", "ok", at=START)
        running = asyncio.create_task(a.process())
        while slow.calls == 0:
            await asyncio.sleep(0.01)
        for _ in range(3):  # four leases long in all: without renewal b would take the episode
            await asyncio.sleep(0.35)
            other = await b.process()
            assert (other.episodes, other.leased_elsewhere) == (0, 1)
        slow.open.set()
        done = await running
        assert (done.episodes, done.queued, done.leased_elsewhere) == (1, 1, 0)
        assert len(await a.review.pending()) == 1


async def test_every_episode_and_run_gets_one_audit_row(store_target: str) -> None:
    class FailFirst(Gate):
        async def extract(self, episode: Episode, existing: list[Knowledge]) -> Extraction:
            if episode.messages[0].content.startswith("I work"):
                raise RuntimeError("model endpoint unavailable")
            text = episode.messages[0].content
            return Extraction("", [GapItem(text, evidence=text)])

    async with Memory(store_target, extractor=FailFirst()) as mem:
        await three_episodes(mem)
        report = await mem.process()
        assert (report.episodes, report.failed) == (3, 1)
        async with sql(mem) as conn:
            rows = await (
                await conn.execute(
                    "SELECT entity, action, entity_id, after FROM audit_log"
                    " WHERE entity IN ('episode', 'extraction_run') ORDER BY id"
                )
            ).fetchall()
            episodes = [r[0] for r in await (await conn.execute("SELECT id FROM episodes ORDER BY id")).fetchall()]
            runs = [r[0] for r in await (await conn.execute("SELECT id FROM extraction_runs ORDER BY id")).fetchall()]
            messages = await (await conn.execute("SELECT episode_id, id FROM messages ORDER BY id")).fetchall()
        created = [(r[2], json.loads(r[3])) for r in rows if r[0] == "episode"]
        assert [eid for eid, _ in created] == episodes and all(r[1] == "create" for r in rows)
        for eid, after in created:  # the assignment of messages to the episode is what is audited
            assert after["message_ids"] == [m for e, m in messages if e == eid]
        finished = [(r[2], json.loads(r[3])) for r in rows if r[0] == "extraction_run"]
        assert [rid for rid, _ in finished] == runs
        assert sorted(after["episode_status"] for _, after in finished) == ["failed", "processed", "processed"]
        assert next(a for _, a in finished if a["episode_status"] == "failed")["error"].startswith("RuntimeError")


async def test_extractor_dates_out_of_range_are_dropped_and_counted_never_crash(store_target: str) -> None:
    far_past, far_future = datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, tzinfo=UTC)

    class Dates:
        name = "dates"
        model: str | None = None
        prompt_version: str | None = None

        async def extract(self, episode: Episode, existing: list[Knowledge]) -> Extraction:
            return Extraction(
                "",
                [
                    GapItem("Ana was born in Faro", valid_at=far_past, evidence="born"),
                    GapItem(
                        "Ana rents in Faro",
                        valid_at=datetime(2025, 1, 1, tzinfo=UTC),
                        invalid_at=far_future,
                        evidence="rents",
                    ),
                    GapItem("Ana keeps bees", valid_at=datetime(2025, 1, 1, tzinfo=UTC), evidence="bees"),  # control
                    GapItem(
                        "Ana rows",
                        valid_at=datetime(1899, 12, 31, tzinfo=UTC),
                        invalid_at=datetime(2201, 1, 1, tzinfo=UTC),
                        evidence="rows",
                    ),
                ],
            )

    async with Memory(store_target, extractor=Dates()) as mem:
        await mem.add_exchange("ana", "born, rents, bees, rows", "ok", at=START)
        report = await mem.process()
        assert (report.dates_dropped, report.queued, report.failed) == (4, 4, 0)
        by_text = {c.statement: c for c in await mem.review.pending()}
        assert by_text["Ana was born in Faro"].valid_at is None
        assert (by_text["Ana rents in Faro"].valid_at, by_text["Ana rents in Faro"].invalid_at) == (
            datetime(2025, 1, 1, tzinfo=UTC),
            None,
        )
        assert by_text["Ana keeps bees"].valid_at == datetime(2025, 1, 1, tzinfo=UTC)
        assert by_text["Ana rows"].valid_at is None and by_text["Ana rows"].invalid_at is None
        stats = await mem.stats()
        assert stats.extraction.by_extractor["dates"].dates_dropped == 4


async def test_users_are_processed_concurrently_up_to_the_bound(new_target: Callable[[str], str]) -> None:
    async def run(concurrency: int) -> tuple[int, list[tuple[str, str]]]:
        slow = Gate(delay=0.05)
        async with Memory(new_target(f"c{concurrency}"), extractor=slow) as mem:
            for u in range(6):
                await three_episodes(mem, f"user{u}")
            seen: list[tuple[int, int]] = []
            report = await mem.process(concurrency=concurrency, progress=lambda d, t: seen.append((d, t)))
            assert report.episodes == 18 and seen[-1] == (6, 6) and len(seen) == 6
            pending = await mem.review.pending(limit=100)
            return slow.most_in_flight, sorted((c.user_id, c.statement) for c in pending)

    one, serial = await run(1)
    four, parallel = await run(4)
    assert one == 1  # control: N=1 never overlaps
    assert four == 4  # model calls of four users overlap, never more
    assert parallel == serial  # the same candidates either way


async def test_concurrency_below_one_is_refused(store_target: str) -> None:
    async with Memory(store_target) as mem:
        for bad in (0, -1, True):
            try:
                await mem.process(concurrency=bad)  # type: ignore[arg-type]
            except UserInputError as exc:
                assert "concurrency" in str(exc)
            else:
                raise AssertionError(f"concurrency={bad!r} was accepted")


async def test_process_cli_says_how_many_episodes_another_worker_holds_and_until_when(store_target: str) -> None:
    db = store_target
    until = datetime(2100, 1, 1, 12, 0, tzinfo=UTC)
    async with Memory(db) as mem:
        await three_episodes(mem)
        await mem.add_exchange("bob", "I live in Rome.", "ok", at=START)
        await mem.process("ana")  # ana's episodes exist and are done ...
        await mem.add_exchange("ana", "I play chess.", "ok", at=START + timedelta(days=1))
        async with mem.store.transaction() as tx:  # ... and a new one is held by a live worker elsewhere
            await tx.conn.execute(
                "INSERT INTO episodes(user_id, title, narrative, status, created_at)"
                " VALUES ('ana', 't', 'n', 'open', 0)"
            )
            await tx.claim_episodes("ana", "proc-elsewhere", 0, int(until.timestamp() * 1_000_000))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMDESK_", "OPENAI_"))}
    done = subprocess.run(
        [str(MEMDESK), "process", str(db)], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    values = {line.rsplit("  ", 1)[0].strip(): int(line.rsplit("  ", 1)[1]) for line in done.stdout.splitlines()}
    assert values["episodes leased by another worker (not processed now)"] == 1
    assert values["episodes extracted"] == 2  # bob's, and ana's new chess episode: the held one waits
    assert "1 episode(s) are leased by another worker until 2100-01-01T12:00:00+00:00" in done.stderr
    refused = subprocess.run(
        [str(MEMDESK), "process", str(db), "--concurrency", "0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert refused.returncode == 2 and "--concurrency" in refused.stderr


async def test_a_slow_extraction_ends_a_batch_and_every_episode_is_still_stored(store_target: str) -> None:
    import time

    class SometimesSlow:
        """In-process and `batchable`, but slow on some episodes (a huge message, say)."""

        name = "sometimes-slow"
        model: str | None = None
        prompt_version: str | None = None
        batchable = True

        async def extract(self, episode: Episode, existing: list[Knowledge]) -> Extraction:
            text = episode.messages[0].content
            if "slow" in text:
                time.sleep(0.08)  # blocking on purpose: this extractor never yields
            return Extraction("", [GapItem(text, evidence=text)])

    async with Memory(store_target, extractor=SometimesSlow()) as mem:
        texts = ["I live in Lisbon.", "A slow one.", "I keep bees.", "I sail.", "The last is slow."]
        await mem.add_exchanges([("ana", t, "ok", START + timedelta(hours=2 * i)) for i, t in enumerate(texts)])
        report = await mem.process()
        assert (report.episodes, report.queued, report.failed) == (5, 5, 0)
        assert sorted(c.statement for c in await mem.review.pending()) == sorted(texts)

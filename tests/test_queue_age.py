"""Queue age (issue 20 item 5): stats shows the oldest pending item and how many are past the SLA;
`memdesk digest` prints what waits and exits 1 past the SLA, 0 otherwise, 2 on bad input. And the
calibration table of stats (item 4): approval rate per confidence bucket, by extractor."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from engine import Memory
from tests.test_cli import memdesk

NOW = datetime.now(UTC)


async def _queue(db: str, ages_hours: list[float], first: int = 2) -> list[int]:
    async with Memory(db) as mem:
        return [
            await mem.queue_candidate("ana", f"Keeps {i + first} quokkas", created_at=NOW - timedelta(hours=h))
            for i, h in enumerate(ages_hours)
        ]


async def test_stats_show_the_oldest_pending_and_how_many_are_past_the_sla(store_target: str) -> None:
    await _queue(store_target, [72, 50, 1])
    async with Memory(store_target) as mem:
        age = (await mem.stats()).queue.age
        assert age.past_sla == 2 and age.sla_hours == 48
        assert age.oldest_pending_hours is not None and 71.5 < age.oldest_pending_hours < 72.5
        ids = [c.id for c in await mem.review.pending()]
        await mem.review.approve(ids[0], "rev")
        await mem.review.reject(ids[1], "rev", "no")
        after = (await mem.stats()).queue.age
    assert (
        after.past_sla == 0 and after.oldest_pending_hours is not None and after.oldest_pending_hours < 2
    )  # decided items no longer wait


async def test_digest_exits_1_past_the_sla_and_0_within(tmp_path: Path) -> None:
    db = str(tmp_path / "d.db")
    await _queue(db, [1, 5])
    within = memdesk("digest", db)
    assert within.returncode == 0, within.stderr
    assert "2 pending; 0 past the SLA of 48 h" in within.stdout and "Keeps 2 quokkas" in within.stdout
    await _queue(db, [60], first=10)  # one more, older than 48 h
    past = memdesk("digest", db, "--json")
    assert past.returncode == 1, past.stderr
    data = json.loads(past.stdout)
    assert data["pending"] == 3 and data["past_sla"] == 1
    assert data["oldest"][0]["statement"] == "Keeps 10 quokkas" and data["oldest"][0]["waiting_hours"] >= 59.9
    assert memdesk("digest", db, "--sla-hours", "100").returncode == 0  # a longer SLA: nothing is late


def test_digest_refuses_bad_input_with_exit_2(tmp_path: Path) -> None:
    assert memdesk("digest", tmp_path / "absent.db").returncode == 2
    (tmp_path / "e.db").write_bytes(b"")
    assert memdesk("digest", tmp_path / "e.db", "--sla-hours", "0").returncode == 2
    assert memdesk("digest", tmp_path / "e.db", "--sla-hours", "-3").returncode == 2


async def test_stats_calibration_is_the_approval_rate_per_confidence_bucket(store_target: str) -> None:
    async with Memory(store_target) as mem:
        low = [await mem.queue_candidate("ana", f"Owns {i} boats", confidence=0.55) for i in range(4)]
        high = [await mem.queue_candidate("ana", f"Owns {i} cats", confidence=0.95) for i in range(3)]
        for cid in high + low[:1]:
            await mem.review.approve(cid, "rev")
        for cid in low[1:]:
            await mem.review.reject(cid, "rev", "wrong")
        table = (await mem.stats()).to_dict()["review"]["calibration"]
    assert table == {
        "system": {
            "0.5-0.7": {"approved": 1, "rejected": 3, "approval_rate": 0.25},
            ">=0.9": {"approved": 3, "rejected": 0, "approval_rate": 1.0},
        }
    }


async def test_the_workstation_header_shows_the_queue_rotting(store_target: str) -> None:
    from review_app.widgets.progress import progress_text

    await _queue(store_target, [1])
    async with Memory(store_target) as mem:
        fresh = await mem.team.progress("rev")
        assert fresh.past_sla == 0 and "SLA" not in progress_text(fresh).plain  # the control: a fresh queue
        await mem.queue_candidate("ana", "Keeps 40 quokkas", created_at=NOW - timedelta(hours=50))
        late = await mem.team.progress("rev")
    assert late.past_sla == 1 and late.oldest_pending_seconds is not None and late.oldest_pending_seconds > 49 * 3600
    # NOW was read at import: on a loaded machine minutes pass before this line (50h00 .. 50h59)
    assert re.search(r"⏰ 1 past SLA, oldest 50h[0-5]\d", progress_text(late).plain)
    assert re.search(r"⏰1 late, oldest 50h[0-5]\d", progress_text(late, compact=True).plain)

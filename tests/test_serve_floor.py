"""Issue 29.1 and 29.4 through `memdesk serve`: a workstation kept ready for the next session, and
two reviewers in Chromium whose cursors never move by another's decision or lease.

- The spare (review_app/warm.py) runs as the session's reviewer, never as anyone the page names; one
  without a valid order opens nothing; a new spare is started once one is taken.
- In Chromium, two reviewers on one database: ben's cursor rests on ana-web's row; ana-web approves
  it; ben's `a` decides nothing (the database is read after every key); ben's `n`, then `r` `1`,
  decides the row ben chose.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from review_app.auth import hash_password, write_credentials
from review_app.serve import WARM_ENV, WorkstationProcess, warm_spares_setting
from tests.pilot_helpers import row
from tests.test_serve import (
    PASSWORD,
    REVIEWER,
    ROOT,
    WAIT,
    TerminalStream,
    _chromium,
    apoll,
    logged_in,
    origin,
    poll,
    read_ws_until,
    running,
    serving,
)
from tests.tui_seed import SeededDb

BEN, BEN_PASSWORD = "ben", "ben's own password"


@pytest.fixture
def creds(tmp_path: Path) -> Path:
    path = tmp_path / "reviewers.toml"
    write_credentials(path, {REVIEWER: hash_password(PASSWORD), BEN: hash_password(BEN_PASSWORD)})
    return path


def test_the_warm_setting_reads_a_small_whole_number_and_refuses_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(WARM_ENV, raising=False)
    assert warm_spares_setting() == 1
    monkeypatch.setenv(WARM_ENV, "3")
    assert warm_spares_setting() == 3
    for bad in ("-1", "9", "two", "1.5"):
        monkeypatch.setenv(WARM_ENV, bad)
        assert warm_spares_setting() == 0  # logged; every session then starts cold


@pytest.mark.parametrize(
    ("order", "code"),
    [(b"", 0), (b'{"reviewer": "no spaces allowed"}\n', 2), (b'{"reviewer": ["ana"]}\n', 2), (b"not json\n", 0)],
)
def test_a_spare_without_a_valid_order_opens_nothing(tui_db: SeededDb, order: bytes, code: int) -> None:
    """A spare whose stdin ends (the server stopped), or whose order names no valid reviewer, exits
    without drawing or leasing anything."""
    path, _ = tui_db
    done = subprocess.run(
        [sys.executable, "-m", "review_app.warm"],
        input=order,
        capture_output=True,
        cwd=ROOT,
        env={**os.environ, "MEMDESK_DB": path},
        timeout=WAIT,
    )
    assert done.returncode == code, done.stderr
    assert b"__GANGLION__" not in done.stdout
    assert row(path, "SELECT count(*) FROM candidates WHERE claimed_by IS NOT NULL") == (0,)


async def test_the_spare_runs_as_the_session_reviewer_and_a_new_one_is_started(tui_db: SeededDb, creds: Path) -> None:
    """The server starts a spare with itself; a logged-in websocket is handed that process (not a
    new one) and it decides under the session's reviewer, whatever the query string says; a new
    spare is then waiting for the next session. Control: with no spare (0), the same session
    starts cold and decides the same way."""
    path, _ = tui_db
    for spares in (1, 0):
        async with running(path, creds, warm_spares=spares) as (server, client):
            if spares:
                await apoll(lambda: len(server._spares) == 1, "the spare")
            ready = list(server._spares)
            cookie, proof = await logged_in(client)
            ws = await client.ws_connect(
                "/ws?width=120&height=36&reviewer=mallory", headers={**cookie, "Origin": origin(client)}
            )
            await ws.send_str(json.dumps(["proof", proof]))
            stream = bytearray()
            await read_ws_until(ws, stream, "Confidence")
            assert all(p in server._apps for p in ready)  # the spare was the one handed over
            leased = row(path, "SELECT id FROM candidates WHERE claimed_by = ? AND status = 'pending'", REVIEWER)
            assert leased is not None
            await ws.send_str(json.dumps(["stdin", "r"]))
            await read_ws_until(ws, stream, "Write a tombstone")
            await ws.send_str(json.dumps(["stdin", "1"]))
            decided = leased[0]

            def rejected(decided: int = decided) -> bool:
                return row(path, "SELECT status, decided_by FROM candidates WHERE id = ?", decided) == (
                    "rejected",
                    REVIEWER,
                )

            await apoll(rejected, "the rejection")
            if spares:
                taken = list(ready)

                def refilled(taken: list[WorkstationProcess] = taken) -> bool:
                    return len(server._spares) == 1 and server._spares[0] not in taken

                await apoll(refilled, "a new spare")
            else:
                assert server._spares == []
            await ws.close()
    assert row(path, "SELECT count(*) FROM audit_log WHERE actor = 'mallory'") == (0,)


async def test_a_spare_that_is_stopped_before_its_session_exits_cleanly(tui_db: SeededDb) -> None:
    path, _ = tui_db
    spare = WorkstationProcess([sys.executable, "-m", "review_app.warm"], env={"MEMDESK_DB": path})
    await spare.spawn()
    assert spare.alive
    started = time.monotonic()
    await spare.stop(timeout=WAIT)
    assert not spare.alive and time.monotonic() - started < WAIT
    assert spare._process is not None and spare._process.returncode == 0


def _reject_as(path: str, cid: int, reviewer: str) -> None:
    """A third reviewer's decision through the library, on a thread of its own (playwright's sync
    API holds this thread's event loop)."""
    from engine import Memory

    async def go() -> None:
        async with Memory(path) as mem:
            await mem.review.reject(cid, reviewer, "not true", tombstone=False)

    worker = threading.Thread(target=lambda: asyncio.run(go()))
    worker.start()
    worker.join(WAIT)


def test_in_chromium_another_reviewers_decision_never_moves_the_cursor(
    tui_db: SeededDb, creds: Path, tmp_path: Path
) -> None:
    chromium = _chromium()
    if chromium is None:
        pytest.skip("no Chromium executable (/usr/bin/chromium; `apt-get install chromium`)")
    from playwright.sync_api import sync_playwright

    path, ids = tui_db

    def status(cid: int) -> tuple[object, ...] | None:
        return row(path, "SELECT status, decided_by FROM candidates WHERE id = ?", cid)

    def decided_by(name: str) -> list[object]:
        return [r for r in [row(path, "SELECT count(*) FROM candidates WHERE decided_by = ?", name)] if r]

    with serving(path, creds, tmp_path) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"], timeout=WAIT * 1000)
        try:
            pages = {}
            streams = {}
            for name, password in ((REVIEWER, PASSWORD), (BEN, BEN_PASSWORD)):
                context = browser.new_context(viewport={"width": 1400, "height": 820})
                page = context.new_page()
                page.set_default_timeout(WAIT * 1000)
                stream = TerminalStream()
                page.on("websocket", stream.on_websocket)
                page.goto(url)
                page.fill("#name", name)
                page.fill("#password", password)
                page.click("#login")
                page.wait_for_url(url)
                stream.wait_for(page, "Confidence" if name == REVIEWER else "being reviewed by")
                page.focus("#terminal .xterm-helper-textarea")
                pages[name], streams[name] = page, stream
            ana, ben = pages[REVIEWER], pages[BEN]

            def lease(name: str) -> int | None:
                found = row(path, "SELECT id FROM candidates WHERE claimed_by = ? AND status = 'pending'", name)
                return None if found is None else int(found[0])

            # ana-web holds the first row; ben's cursor rests on it, refused: `a` decides nothing
            assert lease(REVIEWER) == ids["bees"] and lease(BEN) is None
            ben.keyboard.press("a")
            ben.wait_for_timeout(1500)
            assert status(ids["bees"]) == ("pending", None) and decided_by(BEN) == [(0,)]

            # ana-web walks to the third row, one row at a time (with both presses at once, she could
            # still hold the second row when ben moved onto it, and ben's claim was refused); ben walks
            # after her and rests on it (hers: refused)
            def ana_past(*rows: int | None) -> int | None:
                held = lease(REVIEWER)
                return None if held in (None, *rows) else held

            ana.keyboard.press("n")
            row2 = poll(lambda: ana_past(ids["bees"]), "ana-web on the second row")
            ana.keyboard.press("n")
            third = poll(lambda: ana_past(ids["bees"], row2), "ana-web on the third row")
            ben.keyboard.press("n")
            second = poll(lambda: lease(BEN), "ben on the second row")
            assert second == row2
            mark = streams[BEN].mark()
            ben.keyboard.press("n")
            streams[BEN].wait_for(ben, "being reviewed by", since=mark)
            poll(lambda: lease(BEN) is None, "ben's second row released")

            # a row above ben's leaves (decided elsewhere), and ana-web rejects the row under ben's
            # cursor and moves on: before, ben's cursor slid onto a free row and opened it there
            _reject_as(path, ids["bees"], "cy")
            mark = streams[BEN].mark()
            ana.keyboard.press("r")
            streams[REVIEWER].wait_for(ana, "Write a tombstone")
            ana.keyboard.press("1")
            poll(lambda: status(third) == ("rejected", REVIEWER), "ana-web's rejection")
            streams[BEN].wait_for(ben, f"rejected by {REVIEWER}", since=mark)
            ben.wait_for_timeout(1500)
            assert lease(BEN) is None  # the cursor stayed on the decided row: nothing opened
            ben.keyboard.press("a")
            ben.keyboard.press("r")
            ben.wait_for_timeout(1500)
            assert decided_by(BEN) == [(0,)] and lease(BEN) is None

            # control: ben moves on (past ana-web's new row, if the cursor lands there), sees a row
            # of ben's own choosing, and decides it
            chosen = None
            for _ in range(3):
                mark = streams[BEN].mark()
                ben.keyboard.press("n")
                ben.wait_for_timeout(1500)
                chosen = row(path, "SELECT id FROM candidates WHERE claimed_by = ? AND status = 'pending'", BEN)
                if chosen is not None:
                    break
                assert decided_by(BEN) == [(0,)]
            assert chosen is not None
            streams[BEN].wait_for(ben, "Confidence", since=mark)
            mark = streams[BEN].mark()
            ben.keyboard.press("r")  # a rejection with reason 1: whatever kind of candidate it is
            streams[BEN].wait_for(ben, "Write a tombstone", since=mark)
            ben.keyboard.press("1")
            poll(lambda: status(int(chosen[0])) == ("rejected", BEN), "ben's decision on the row ben chose")
            assert decided_by(BEN) == [(1,)]
        finally:
            browser.close()

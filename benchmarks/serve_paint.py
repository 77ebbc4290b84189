"""Browser first paint after login, through a real `memdesk serve` and Debian's Chromium.

    uv run python benchmarks/serve_paint.py [--rounds 5] [--pending 200] [--arms warm,cold]

Builds a database with N pending agent proposals and a credentials file, starts `memdesk serve` on
a free port, and drives Chromium (playwright, `/usr/bin/chromium`; `apt-get install chromium`)
through ROUNDS logins, one fresh browser context each:

- login -> first frame: from the click on "Log in" to the first terminal bytes on the websocket;
- login -> first paint: from the click to the queue drawn (the header's "N pending" in the bytes the
  page received and hands to xterm.js in the same task).

Each round logs out, and the next login comes a few seconds later, as the next reviewer's would:
the server has started a spare workstation for it meanwhile (review_app/warm.py). Arms: `warm`
(the default, one spare) and `cold` ($MEMDESK_SERVE_WARM=0: each session starts its workstation
after login, as before). Target (issue 29.4): first paint <= 2 s. Prints JSON and writes
benchmarks/results/serve-paint-<date>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REVIEWER, PASSWORD = "ana-web", "correct horse battery"
WAIT = 120.0
GAP = 4.0
"""Seconds between one reviewer's logout and the next login (the spare is started meanwhile)."""


def chromium() -> str:
    for candidate in (os.environ.get("MEMDESK_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise SystemExit("no Chromium: apt-get install -y chromium (or set $MEMDESK_CHROMIUM)")


async def build(db: str, pending: int) -> None:
    from engine import Memory

    async with Memory(db) as mem:
        for n in range(pending):
            await mem.propose(f"u-{n % 20}", f"User {n} keeps item number {n}", "agent")


def terminal_text(stream: bytes) -> str:
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", stream.decode("utf-8", "replace"))


@contextmanager
def serving(db: str, creds: Path, warm: int, log_path: Path) -> Iterator[str]:
    log = log_path.open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "review_app.cli", "serve", db, "--config", str(creds), "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        env={**os.environ, "MEMDESK_SERVE_WARM": str(warm)},
    )
    try:
        assert server.stdout is not None
        found: list[str] = []
        reader = threading.Thread(target=lambda: found.append(server.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(WAIT)
        match = re.search(r"http://127\.0\.0\.1:\d+/", found[0] if found else "")
        if not match:
            raise SystemExit(f"memdesk serve printed no URL; log: {log_path.read_text()}")
        yield match.group(0)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def one_login(browser: Any, url: str) -> dict[str, float]:
    chunks: list[tuple[float, bytes]] = []
    context = browser.new_context(viewport={"width": 1400, "height": 820})
    page = context.new_page()
    page.set_default_timeout(WAIT * 1000)

    def on_ws(ws: Any) -> None:
        ws.on(
            "framereceived",
            lambda payload: chunks.append(
                (time.perf_counter(), payload if isinstance(payload, bytes) else payload.encode("utf-8"))
            ),
        )

    page.on("websocket", on_ws)
    page.goto(url)
    page.fill("#name", REVIEWER)
    page.fill("#password", PASSWORD)
    clicked = time.perf_counter()
    page.click("#login")
    deadline = clicked + WAIT
    first_frame = painted = None
    while time.perf_counter() < deadline:
        frames = [(t, c) for t, c in chunks if not c.startswith(b'["pong"')]
        if frames and first_frame is None:
            first_frame = frames[0][0]
        seen = b""
        for t, c in frames:
            seen += c
            if re.search(r"\d+ pending", terminal_text(seen)):
                painted = t
                break
        if painted is not None:
            break
        page.wait_for_timeout(10)
    if painted is None or first_frame is None:
        raise SystemExit("the workstation never painted the queue")
    page.click("#logout")
    page.wait_for_url(url + "login")
    context.close()
    return {"first_frame_s": round(first_frame - clicked, 3), "first_paint_s": round(painted - clicked, 3)}


def arm(db: str, creds: Path, warm: int, rounds: int, tmp: Path) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    runs: list[dict[str, float]] = []
    with serving(db, creds, warm, tmp / f"serve-{warm}.log") as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=["--no-sandbox"], timeout=WAIT * 1000)
        try:
            time.sleep(GAP)  # the server's first spare starts with it
            for _ in range(rounds):
                runs.append(one_login(browser, url))
                time.sleep(GAP)
        finally:
            browser.close()
    paint = [r["first_paint_s"] for r in runs]
    return {
        "spares": warm,
        "runs": runs,
        "first_paint_median_s": round(statistics.median(paint), 3),
        "first_paint_max_s": round(max(paint), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pending", type=int, default=200)
    parser.add_argument("--arms", default="warm,cold")
    args = parser.parse_args()
    from review_app.auth import hash_password, write_credentials

    with tempfile.TemporaryDirectory(prefix="memdesk-paint-") as tmp_name:
        tmp = Path(tmp_name)
        db = str(tmp / "paint.db")
        asyncio.run(build(db, args.pending))
        creds = tmp / "reviewers.toml"
        write_credentials(creds, {REVIEWER: hash_password(PASSWORD)})
        result: dict[str, Any] = {
            "benchmark": "serve_paint",
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": f"{platform.machine()} {os.cpu_count()} cpus, load {os.getloadavg()[0]:.2f}",
            "pending": args.pending,
            "rounds": args.rounds,
            "target_first_paint_s": 2.0,
        }
        for name in args.arms.split(","):
            result[name] = arm(db, creds, 1 if name == "warm" else 0, args.rounds, tmp)
        result["load_after"] = round(os.getloadavg()[0], 2)
    print(json.dumps(result, indent=2))
    out = ROOT / "benchmarks" / "results" / f"serve-paint-{datetime.now(UTC).date()}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()

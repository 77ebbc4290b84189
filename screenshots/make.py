"""Regenerate the README screenshots: one SVG and one PNG per workstation screen at 160x48.

    uv run python screenshots/make.py            # writes screenshots/{queue,knowledge,...}.{svg,png}

The demo database is built fresh from the bundled conversations (`review_app.demo.build_demo`) in a
temporary directory, then the app is driven headless (Textual's Pilot) and each screen exported as
SVG. PNGs come from `rsvg-convert` when it is installed, else a headless Chromium, else cairosvg.
The app runs with a clock frozen at the end of the build, so ages and the stats chart
end on the build day and no cursor blinks mid-capture.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from textual.pilot import Pilot  # noqa: E402

from engine import Memory  # noqa: E402
from review_app.app import ReviewApp  # noqa: E402
from review_app.demo import CURATOR, build_demo  # noqa: E402

SIZE = (160, 48)


@dataclass(frozen=True, slots=True)
class Shot:
    """One screenshot: its file stem, the keys that reach the screen, and the SVG's title."""

    name: str
    keys: Sequence[str]
    title: str


def shots(knowledge_row: int) -> tuple[Shot, ...]:
    return (
        Shot("queue", ("down",), "memdesk review · queue"),
        Shot("knowledge", ("2", "x", *(["down"] * knowledge_row)), "memdesk review · knowledge"),
        Shot("tombstones", ("3",), "memdesk review · tombstones"),
        Shot("stats", ("4",), "memdesk review · stats"),
        Shot("help", ("question_mark",), "memdesk review · help"),
        Shot("second_review", ("v",), "memdesk review · second review"),
        Shot("reviewers", ("4", "w"), "memdesk review · reviewers"),
    )


async def stage(db: str) -> int:
    """A few support-team actions on top of the demo (through the public API, as the curator), so
    the Knowledge and Tombstones screens have a chain of versions and tombstones to show: confirm
    one pending update of the first user, reject one new candidate of another user, retract one
    fact. Returns the table row (all versions shown) of the first user's newest version."""
    async with Memory(db) as mem:
        users = await mem.users()
        first = users[0]
        updates = [
            c
            for c in await mem.review.pending(user_id=first, limit=200)
            if c.kind in ("update", "contradiction") and c.supersedes_id is not None
        ]
        target: int | None = None
        if updates:
            target = (await mem.review.confirm_supersession(updates[0].id, reviewer=CURATOR)).id
        for other in users[1:]:
            news = [c for c in await mem.review.pending(user_id=other, limit=200) if c.kind == "new"]
            if news:
                await mem.review.reject(news[0].id, reviewer=CURATOR, reason="not about this user")
                break
        for other in reversed(users[1:]):
            facts = await mem.knowledge(other)
            if facts:
                await mem.retract(other, facts[-1].id, actor="support", reason="the user asked us to forget it")
                break
        rows = [k.id for k in await mem.knowledge(first, include_expired=True)]
        return rows.index(target) if target in rows else 0


async def _settle(pilot: Pilot[Any]) -> None:
    for _ in range(3):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


async def capture(db: str, shot: Shot, frozen: datetime) -> str:
    """The SVG of one screen, reached from a freshly started app."""
    app = ReviewApp(db, "demo", clock=lambda: frozen)
    async with app.run_test(size=SIZE) as pilot:
        await _settle(pilot)
        for key in shot.keys:
            await pilot.press(key)
            await _settle(pilot)
        return app.export_screenshot(title=shot.title)


def to_png(svg: Path, png: Path) -> str:
    """Convert with rsvg-convert if present, else a headless Chromium, else cairosvg; returns the
    tool used. cairosvg draws each text run in its own font metrics, so the columns of a line-API
    list drift apart; the two others lay the SVG out as a browser shows it."""
    rsvg = shutil.which("rsvg-convert")
    if rsvg:
        subprocess.run([rsvg, "-o", str(png), str(svg)], check=True)
        return "rsvg-convert"
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium:
        head = svg.read_text(encoding="utf-8")[:2000]
        box = re.search(r'viewBox="0 0 ([0-9.]+) ([0-9.]+)"', head)
        width, height = (int(float(box.group(1))), int(float(box.group(2)))) if box else (1970, 1221)
        subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--window-size={width},{height}",
                f"--screenshot={png}",
                svg.resolve().as_uri(),
            ],
            check=True,
            capture_output=True,
        )
        return "chromium"
    import cairosvg

    cairosvg.svg2png(url=str(svg), write_to=str(png))
    return "cairosvg"


async def main(out: Path, db: str | None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = db or str(Path(tmp) / "demo.db")
        if db is None or not Path(db).exists():
            summary = await build_demo(path, progress=None)
            print("demo database:", ", ".join(f"{k}={v}" for k, v in summary.items()))
        row = await stage(path)
        frozen = datetime.now(UTC)
        for shot in shots(row):
            svg_path = out / f"{shot.name}.svg"
            svg_path.write_text(await capture(path, shot, frozen), encoding="utf-8")
            tool = to_png(svg_path, out / f"{shot.name}.png")
            print(f"{svg_path} and .png ({tool})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent, help="output folder")
    parser.add_argument("--db", help="reuse this demo database (built there if missing) instead of a temporary one")
    args = parser.parse_args()
    asyncio.run(main(args.out, args.db))

"""A browser workstation started before anyone logs in, kept ready for the next session.

`memdesk serve` runs one workstation process per websocket (textual-serve's model). Started cold,
that process spends seconds before its first frame: the interpreter, the engine (about 1.4 s of
imports), Textual and the screens, the store's embedder; on a machine shared with other work the
browser showed a black terminal for 8-12 s after login. Here the server starts the process ahead
of time: it imports everything and opens the store once (loading the embedder, checking the
schema), then waits on stdin for one line, its order, written by the server when a logged-in
websocket arrives:

    {"reviewer": "ana-web", "width": 120, "height": 36}

Only then does it know who is reviewing; it runs the workstation exactly as `memdesk review
--reviewer NAME` would (the same `run_review`), speaking the web-driver protocol on its
stdin/stdout from there on. The reviewer comes from the server's session, never from the page: the
order is written by the server on a pipe only it holds. A process whose stdin closes before an
order arrives (the server stopped) exits without opening anything.

The database comes from $MEMDESK_DB and the keymap from `--keymap`, as for a cold start.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys

ORDER_LIMIT = 4096
"""The longest order line read (a reviewer name and two numbers)."""


def _read_order() -> dict[str, object] | None:
    """The first line of stdin, read byte by byte from the descriptor: the web driver reads the same
    descriptor afterwards, and a buffered reader would keep the frames that follow the line."""
    line = bytearray()
    while len(line) < ORDER_LIMIT:
        byte = os.read(0, 1)
        if not byte:
            return None
        if byte == b"\n":
            break
        line += byte
    try:
        order = json.loads(line.decode("utf-8"))
    except ValueError:
        return None
    return order if isinstance(order, dict) else None


async def _open_once(db: str) -> None:
    from engine import Memory

    async with Memory(db):
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m review_app.warm")
    parser.add_argument("--keymap", default=None)
    args = parser.parse_args(argv)
    db = os.environ.get("MEMDESK_DB", "")

    # Everything a session needs, before the session: imports, styles, the store's embedder.
    import textual.drivers.web_driver  # noqa: F401  (the driver the order's session runs on)

    from .app import run_review  # the app, its screens and widgets
    from .auth import NAME_PATTERN

    opened = False
    if db:
        try:
            asyncio.run(_open_once(db))
            opened = True
        except Exception:
            opened = False

    order = _read_order()
    if order is None:
        return 0  # the server stopped before a session came
    reviewer = order.get("reviewer")
    if not isinstance(reviewer, str) or not NAME_PATTERN.fullmatch(reviewer):
        print("refused: the order names no valid reviewer", file=sys.stderr)
        return 2
    for name, key in (("COLUMNS", "width"), ("ROWS", "height")):
        value = order.get(key)
        if isinstance(value, int):
            os.environ[name] = str(value)
    if not opened:
        try:
            asyncio.run(_open_once(db))  # a refused store is a message before any screen, as `review` does
        except Exception as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    from engine.config import MemoryConfig

    from .cli.common import deployment_sla_hours

    # the deployment's SLA, as `memdesk review --sla-hours` would have it (serve sets it in the environment)
    run_review(db, reviewer, args.keymap, config=MemoryConfig(review_sla_hours=deployment_sla_hours()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

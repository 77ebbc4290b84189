"""Waiting for the workstation in Pilot tests and snapshot `run_before` hooks."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from textual.pilot import Pilot

from engine.storage.sqlite.connection import sqlite_module
from review_app.app import ReviewApp
from review_app.screens.queue import QueueScreen

# The engine's own SQLite library: a second copy of SQLite in one process (the stdlib's, when the
# engine runs on pysqlite3) drops the engine's file locks whenever it closes the file.
sqlite3 = sqlite_module()


async def settle(pilot: Pilot[Any]) -> None:
    """Wait until every worker (open, list, claim, decision) has finished and the screen redrew.
    Several rounds, because a finished worker often starts the next one (decide -> reload -> claim)."""
    for _ in range(4):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def then(*keys: str) -> Callable[[Pilot[Any]], Awaitable[None]]:
    """A run_before: wait for the app, press `keys` one at a time, settling after each."""

    async def run(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)

    return run


async def keys(pilot: Pilot[Any], *pressed: str) -> None:
    """Press each key as a curator would, letting the app settle after each one."""
    for key in pressed:
        await pilot.press(key)
        await settle(pilot)


def db(path: str, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    """Rows from the workstation's database, read on a connection of the test's own."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return conn.execute(sql, args).fetchall()


def row(path: str, sql: str, *args: Any) -> tuple[Any, ...] | None:
    """The first row `db` would read, or None."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return conn.execute(sql, args).fetchone()


def queue(app: ReviewApp) -> QueueScreen:
    """The app's queue screen, whatever is open over it."""
    screens = [s for s in app.screen_stack if isinstance(s, QueueScreen)]
    assert screens, f"no queue screen under {app.screen_stack}"
    return screens[-1]

"""Hostile names and statements through every screen and every dialog of the workstation, each
opened with the keys a reviewer presses (issue 10: `f` crashed the app, and a reviewer called
`evil[/nope]` crashed every other reviewer's workstation through a notification).

The database holds users, statements, reasons and reviewer names that are Rich/Textual markup, a
live `@click` action, and a terminal escape that would retitle the terminal. The walk asserts, at
every step, that the app is still running, that the hostile text is displayed as typed (markup not
parsed: the brackets are on screen) and that no raw ESC or BEL reaches the screen.
"""

from __future__ import annotations

import ast
import html
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from engine import Memory
from engine.errors import UserInputError
from review_app.app import ReviewApp
from review_app.modals import ConfirmModal, EditModal, ErrorModal, ReasonModal
from review_app.screens.help import HelpScreen
from review_app.screens.knowledge import KnowledgeScreen
from review_app.screens.queue import QueueScreen
from review_app.screens.stats import StatsScreen
from review_app.screens.tombstones import TombstonesScreen
from review_app.widgets.knowledge_correct import CorrectModal
from review_app.widgets.literal import visible
from review_app.widgets.queue_filter import FilterModal
from tests.pilot_helpers import settle
from tests.tui_seed import T0, fixed_clock

NOPE = "evil[/nope]"
CLICK = "[@click=app.quit]"
TITLE = "\x1b]2;PWNED\x07"
BOLD = "[b]x[/b]"
HOSTILE = (NOPE, CLICK, TITLE, BOLD)
USER = f"u{BOLD}"
"""A user id that is markup; the reviewer of the app under test is CLICK, the other one NOPE."""

SIZES = ((160, 48), (80, 24))


def screen_text(app: ReviewApp) -> str:
    """Everything on screen (toasts included) as plain text, one line per terminal row, from the
    public screenshot export."""
    rows: dict[float, list[tuple[float, str]]] = {}
    for x, y, text in re.findall(
        r'<text[^>]*? x="([0-9.]+)" y="([0-9.]+)"[^>]*>(.*?)</text>', app.export_screenshot(), flags=re.S
    ):
        rows.setdefault(float(y), []).append((float(x), html.unescape(text).replace("\xa0", " ")))
    return "\n".join("".join(t for _, t in sorted(parts)) for _, parts in sorted(rows.items()))


def assert_literal(app: ReviewApp, *expected: str) -> None:
    assert app.is_running, "the workstation closed"
    text = screen_text(app)
    assert "\x1b" not in text and "\x07" not in text, "a raw control character reached the screen"
    flat = _flat(text)  # wrapping (a toast, a narrow pane) splits lines; the characters stay in order
    for value in expected:
        where = type(app.screen).__name__
        assert _flat(visible(value)) in flat, f"{visible(value)!r} is not displayed literally on {where}"


def _flat(text: str) -> str:
    return re.sub(r"[\s▌▎▊│]", "", text)


async def build(path: str) -> None:
    async with Memory(path, clock=lambda: T0 - timedelta(days=1)) as mem:
        for i, value in enumerate(HOSTILE):
            await mem.queue_candidate(
                USER, f"{value} statement {i}", actor=NOPE, created_at=T0 - timedelta(hours=10 - i)
            )
            await mem.add_knowledge(USER, f"fact {value} {i}", actor=NOPE)
        stone = await mem.queue_candidate(USER, f"rejected {CLICK}", actor=NOPE, created_at=T0 - timedelta(hours=20))
        await mem.review.reject(stone, NOPE, f"reason {BOLD} {TITLE}")
        first = (await mem.review.pending(limit=1))[0]
    # the other reviewer holds the first candidate, so the app under test is told who holds it
    async with Memory(path, clock=lambda: T0 - timedelta(seconds=10)) as mem:
        await mem.review.claim(first.id, NOPE)


async def press(pilot: Pilot[Any], *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await settle(pilot)


async def walk(app: ReviewApp, pilot: Pilot[Any]) -> None:
    await settle(pilot)
    assert isinstance(app.screen, QueueScreen)
    # the lease notification names NOPE (it crashed Textual's markup parser) and the header names CLICK
    assert_literal(app, f"being reviewed by {NOPE}", CLICK, USER)
    screen = app.screen
    if screen.current is None:  # the cursor stays on the leased row (issue 19.2): move on by hand
        await press(pilot, "n")
    assert screen.current is not None
    current = screen.current.candidate.statement
    for keys, modal, shown in (
        (("r",), ReasonModal, current),
        (("e",), EditModal, current),
        (("b",), ConfirmModal, "Approve"),
        (("question_mark",), HelpScreen, "queue.approve"),
    ):
        await press(pilot, *keys)
        assert isinstance(app.screen, modal), f"{keys} opened {app.screen!r}"
        assert_literal(app, shown)
        await press(pilot, "escape")
        assert isinstance(app.screen, QueueScreen)
    await press(pilot, "f")  # the crash of issue 10
    assert isinstance(app.screen, FilterModal)
    await press(pilot, "enter")  # open the user list: each user id is an option label
    assert_literal(app, USER)
    await press(pilot, "escape", "escape")
    assert isinstance(app.screen, QueueScreen)
    await press(pilot, "space", "space", "r")  # marks, then the bulk reject dialog
    assert isinstance(app.screen, ReasonModal)
    assert_literal(app, USER, "[x] Write a tombstone")
    await press(pilot, "escape", "o")  # grouped by user
    assert_literal(app, USER)

    await press(pilot, "2")
    assert isinstance(app.screen, KnowledgeScreen)
    assert_literal(app, f"fact {NOPE} 0", f"fact {CLICK} 1", f"fact {BOLD} 3", NOPE)
    for key, modal in (("c", CorrectModal), ("t", ReasonModal)):
        await press(pilot, key)
        assert isinstance(app.screen, modal)
        assert_literal(app, f"fact {NOPE} 0", USER)
        await press(pilot, "escape")

    await press(pilot, "3")
    assert isinstance(app.screen, TombstonesScreen)
    assert_literal(app, f"rejected {CLICK}", f"reason {BOLD} {TITLE}", NOPE)
    await press(pilot, "l")
    assert isinstance(app.screen, ReasonModal)
    assert_literal(app, f"rejected {CLICK}", USER)
    await press(pilot, "escape")

    await press(pilot, "4")
    assert isinstance(app.screen, StatsScreen)
    app.screen.query_one("#stats-body").scroll_end(animate=False)  # the reasons panel is last
    await settle(pilot)
    assert_literal(app, f"reason {BOLD}", TITLE)  # the column wraps beside another panel

    # a failing decision: the error dialog quotes the engine's message, which quotes user text
    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise UserInputError(f"refused {CLICK} {TITLE}")

    app.memory.review.approve = broken  # type: ignore[method-assign]
    await press(pilot, "1", "home", "n")  # the first row is held by NOPE: the second
    await press(pilot, "a")
    assert isinstance(app.screen, ErrorModal)
    assert_literal(app, f"refused {CLICK} {TITLE}")
    await press(pilot, "escape")
    assert app.is_running


async def test_every_screen_and_dialog_shows_hostile_text_literally(tmp_path: Path) -> None:
    path = str(tmp_path / "hostile.db")
    await build(path)
    for size in SIZES:
        app = ReviewApp(path, CLICK, clock=fixed_clock)
        async with app.run_test(size=size, notifications=True) as pilot:
            await walk(app, pilot)


async def test_the_positive_control_markup_in_a_notification_would_be_parsed(tmp_path: Path) -> None:
    """The checks above can fail: the same text through Textual's default notify is parsed."""
    path = str(tmp_path / "control.db")
    await build(path)
    app = ReviewApp(path, "someone", clock=fixed_clock)
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        await settle(pilot)
        app.notify(f"hello {BOLD}")  # markup=True: the brackets disappear
        await settle(pilot)
        assert "hello x" in screen_text(app) and f"hello {BOLD}" not in screen_text(app)


SOURCES = sorted((Path(__file__).parent.parent / "review_app").rglob("*.py"))


def _calls(name: str) -> list[tuple[Path, ast.Call]]:
    found = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if called == name:
                    found.append((path, node))
    return found


def test_every_notification_goes_through_tell() -> None:
    """`tell` is the one notify with markup off and control characters shown; nothing else may
    call notify (a new call with a reviewer name in it would reopen issue 10)."""
    calls = [(p.name, c.lineno) for p, c in _calls("notify")]
    assert calls == [("literal.py", calls[0][1])], calls
    assert len(_calls("tell")) > 20  # positive control: the screens do notify, through tell


def test_every_worker_reports_errors_instead_of_exiting() -> None:
    """Workers run with exit_on_error=False; their failures reach the error dialog through
    Worker.StateChanged (no private App._handle_exception)."""
    workers = _calls("run_worker") + _calls("work")
    assert len(workers) > 10
    missing = [
        (p.name, c.lineno)
        for p, c in workers
        if not any(
            k.arg == "exit_on_error" and isinstance(k.value, ast.Constant) and k.value.value is False
            for k in c.keywords
        )
    ]
    assert not missing, missing
    text = "".join(p.read_text(encoding="utf-8") for p in SOURCES)
    for private in ("._handle_exception", "._register(", "._bindings ", "._bindings.", "._keymap"):
        assert private not in text, private

"""The command line as a package (issue 30): each command lives in the module COMMANDS names, the
commands that draw nothing never import Textual (a fresh interpreter, what a shell starts), and
the ones that draw do (the positive control: the check can see Textual when it is there)."""

from __future__ import annotations

import asyncio
import importlib
import subprocess
import sys
from pathlib import Path

import click
import pytest

from engine import Memory
from review_app.cli import COMMANDS, main

ROOT = Path(__file__).resolve().parent.parent


def test_every_command_is_where_commands_says_and_nowhere_else() -> None:
    ctx = click.Context(main)
    assert sorted(main.list_commands(ctx)) == sorted(COMMANDS)
    for name, module in COMMANDS.items():
        found = getattr(importlib.import_module(f"review_app.cli.{module}"), name)
        assert isinstance(found, click.Command) and main.get_command(ctx, name) is found, name
    assert main.get_command(ctx, "no-such-command") is None


def _loaded_after(argv: list[str], cwd: Path) -> set[str]:
    """The modules a fresh interpreter holds after running `memdesk *argv` in process."""
    code = (
        "import sys\n"
        "from review_app.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120, cwd=cwd, check=False
    )
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


@pytest.fixture(scope="module")
def small_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("pkg") / "m.db"

    async def build() -> None:
        async with Memory(db) as mem:
            await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="seed")

    asyncio.run(build())
    return db


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "{db}", "--user", "ana", "where", "does", "Ana", "live"],
        ["stats", "{db}", "--json"],
        ["history", "{db}", "--user", "ana", "1"],
        ["--help"],
    ],
    ids=["search", "stats", "history", "help"],
)
def test_commands_that_draw_nothing_import_no_textual(small_db: Path, argv: list[str]) -> None:
    loaded = _loaded_after([a.format(db=small_db) for a in argv], ROOT)
    textual = sorted(m for m in loaded if m == "textual" or m.startswith("textual."))
    assert textual == [], textual
    assert "review_app.app" not in loaded  # the workstation (--help lists its commands, which import nothing)
    if argv != ["--help"]:
        assert "review_app.cli.workstation" not in loaded


def test_the_workstation_module_does_import_textual_when_it_draws() -> None:
    """The control: the same check sees Textual in a module that loads it."""
    code = "import sys, review_app.app\nprint('textual.app' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.stdout.strip() == "True", done.stderr

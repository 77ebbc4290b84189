"""The layering contracts of pyproject.toml ([tool.importlinter]), run by pytest as well as by
`lint-imports` in CI: engine imports no UI and nothing of review_app; only engine.storage names a
database driver. The positive controls run the SAME contracts on a small fake tree holding one
violation of each, so a contract that silently checks nothing (a typo in a module name, indirect
imports allowed where they must not be) fails here."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lint(cwd: Path, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if pythonpath is not None:  # first on the path: the fake `engine` shadows the installed one
        env["PYTHONPATH"] = str(pythonpath)
    lint = Path(sys.executable).with_name("lint-imports")
    return subprocess.run([str(lint), "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_project_keeps_its_layering_contracts() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def _fake_tree(tmp: Path, files: dict[str, str]) -> Path:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    for contract in config["contracts"]:
        # The fake tree has none of the real ignores' sources; keep the storage exemption only.
        contract["ignore_imports"] = [i for i in contract.get("ignore_imports", []) if i.startswith("engine.storage")]
    lines = [
        "[tool.importlinter]",
        f"root_packages = {config['root_packages']!r}".replace("'", '"'),
        "include_external_packages = true",
    ]
    for contract in config["contracts"]:
        lines.append("[[tool.importlinter.contracts]]")
        for key, value in contract.items():
            if key in ("root_packages",):
                continue
            rendered = ("true" if value else "false") if isinstance(value, bool) else repr(value).replace("'", '"')
            lines.append(f"{key} = {rendered}")
    (tmp / "pyproject.toml").write_text("\n".join(lines) + "\n")
    base = {
        "engine/__init__.py": "",
        "engine/storage/__init__.py": "",
        "engine/storage/sqlite/__init__.py": "",
        "engine/storage/sqlite/connection.py": "import sqlite3\nimport aiosqlite\n",  # allowed there
        "engine/storage/postgres/__init__.py": "",
        "engine/storage/postgres/connection.py": "import asyncpg\n",
        "review_app/__init__.py": "",
        "review_app/cli.py": "import click\nimport engine.storage\n",
    }
    for name, text in {**base, **files}.items():
        path = tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp


def test_fake_tree_without_violations_passes(tmp_path: Path) -> None:
    """The control's control: the fake tree itself (drivers inside engine.storage, click in
    review_app) breaks nothing, so the failures below are the planted imports."""
    result = _lint(_fake_tree(tmp_path, {}), tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("planted", "reported"),
    [
        ({"engine/leak.py": "import sqlite3\n"}, ["engine.leak -> sqlite3"]),
        (
            {"review_app/db.py": "from engine.storage.sqlite import connection\nimport asyncpg\n"},
            ["review_app.db -> engine.storage.sqlite", "review_app.db -> asyncpg"],
        ),
        (
            {"engine/helper.py": "import review_app.cli\n"},
            ["engine is not allowed to import review_app", "engine is not allowed to import click"],
        ),  # click via review_app.cli
    ],
    ids=["driver-outside-storage", "review-app-reaching-a-backend", "engine-importing-ui-indirectly"],
)
def test_a_planted_violation_is_caught(tmp_path: Path, planted: dict[str, str], reported: list[str]) -> None:
    result = _lint(_fake_tree(tmp_path, planted), tmp_path)
    assert result.returncode != 0
    for line in reported:
        assert line in result.stdout

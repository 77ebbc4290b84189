"""The layering contracts of pyproject.toml ([tool.importlinter]), run by pytest as well as by
`lint-imports` in CI: engine imports no UI and nothing of review_app; only engine.storage names a
database driver. The positive controls run the SAME contracts on a small fake tree holding one
violation of each, so a contract that silently checks nothing (a typo in a module name, indirect
imports allowed where they must not be) fails here."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
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
    # The engine's floors name modules the fake tree has not; they are checked on a copy of the
    # real tree below.
    config["contracts"] = [c for c in config["contracts"] if c["type"] != "layers"]
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


# -- the engine's floors (the `engine-layers` contract) ----------------------------------------------


def _copy_of_the_tree(tmp: Path) -> Path:
    """engine/ and review_app/ with the project's pyproject.toml in `tmp`, for a planted import."""
    for package in ("engine", "review_app"):
        shutil.copytree(ROOT / package, tmp / package, ignore=shutil.ignore_patterns("__pycache__", "data"))
    shutil.copy(ROOT / "pyproject.toml", tmp / "pyproject.toml")
    return tmp


def _lint_layers(cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(cwd)}  # first on the path: the copy shadows the installed engine
    lint = Path(sys.executable).with_name("lint-imports")
    command = [str(lint), "--no-cache", "--contract", "engine-layers"]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_layers_contract_names_real_modules() -> None:
    """A layer that names no module checks nothing: every layer of the contract is a module or
    package of the engine as it is."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    [layers] = [c for c in config["contracts"] if c["id"] == "engine-layers"]
    for floor in layers["layers"]:
        for name in floor.split("|"):
            parts = name.strip().split(".")
            path = ROOT.joinpath(*parts)
            assert path.with_suffix(".py").is_file() or (path / "__init__.py").is_file(), name


@pytest.mark.parametrize(
    ("planted", "reported"),
    [
        # a floor's module importing one far above it, inside a function (as a late import would)
        (
            (
                "engine/storage/base.py",
                "\n\ndef _upward() -> object:\n    from ..review import ReviewService\n\n    return ReviewService\n",
            ),
            "engine.storage.base -> engine.review",
        ),
        # one floor up, at module level: review reaching for the team service
        (("engine/review.py", "\nfrom .team import TeamService  # noqa\n"), "engine.review -> engine.team"),
    ],
    ids=["storage-imports-review-in-a-function", "review-imports-team"],
)
def test_an_upward_import_breaks_the_layers(tmp_path: Path, planted: tuple[str, str], reported: str) -> None:
    tree = _copy_of_the_tree(tmp_path)
    name, text = planted
    with (tree / name).open("a") as f:
        f.write(text)
    result = _lint_layers(tree)
    assert result.returncode != 0
    assert "BROKEN" in result.stdout and reported in result.stdout, result.stdout


def test_the_copy_without_a_planted_import_keeps_the_layers(tmp_path: Path) -> None:
    """The positive control: the same copy, nothing planted, keeps the contract."""
    result = _lint_layers(_copy_of_the_tree(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "KEPT" in result.stdout


# -- no import circles ---------------------------------------------------------------------------


def import_circles(package: str, root: Path) -> list[list[str]]:
    """Every set of modules of `package` (found under `root`) that import each other round in a
    circle, as grimp sees the imports (module level, inside functions, under TYPE_CHECKING), plus
    `from pkg import name` counted as importing the package `pkg` itself: that runs pkg's
    __init__, so a package whose __init__ imports a module that imports the package back is a
    circle even when `name` is a module (grimp records only the module)."""
    graph = grimp.build_graph(package, cache_dir=None)
    modules = set(graph.modules)
    edges = {m: {x for x in graph.find_modules_directly_imported_by(m) if x in modules} for m in modules}
    for path in (root / package).rglob("*.py"):
        parts = list(path.relative_to(root).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        here = parts[:-1]  # the package a relative import starts from
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                base = here[: len(here) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                if target in modules and target != name:
                    edges[name].add(target)
    return _strongly_connected(edges)


def _strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module, iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


def test_the_engine_has_no_import_circle() -> None:
    assert import_circles("engine", ROOT) == []


FAKE_PACKAGE = "house_circle_fake"


@pytest.mark.parametrize(
    ("files", "circle"),
    [
        (  # inside a function, as a late import hides one
            {"a.py": "from . import c\n", "b.py": "def f():\n    from .a import x\n", "c.py": "from .b import f\n"},
            ["a", "b", "c"],
        ),
        (  # `from . import module` reaches the package's __init__, which imports the module back
            {"__init__.py": "def __getattr__(n):\n    from .a import A\n    return A\n", "a.py": "from . import b\n"},
            ["", "a"],
        ),
        (
            {
                "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n",
                "b.py": "import {p}.a\n",
            },
            ["a", "b"],
        ),
    ],
    ids=["function-level", "package-init", "type-checking"],
)
def test_a_planted_circle_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str], circle: list[str]
) -> None:
    package = tmp_path / FAKE_PACKAGE
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "b.py").write_text("")
    for name, text in files.items():
        (package / name).write_text(text.replace("{p}", FAKE_PACKAGE))
    monkeypatch.syspath_prepend(str(tmp_path))
    expected = sorted(f"{FAKE_PACKAGE}.{m}" if m else FAKE_PACKAGE for m in circle)
    assert import_circles(FAKE_PACKAGE, tmp_path) == [expected]
    # the positive control: the same package with the closing import removed has no circle
    closing = {"function-level": "a.py", "package-init": "a.py", "type-checking": "b.py"}
    for name in files:
        if name in closing.values():
            (package / name).write_text("")
    assert import_circles(FAKE_PACKAGE, tmp_path) == []

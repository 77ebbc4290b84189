"""Every third-party module that engine/ or review_app/ imports is provided by a distribution that
pyproject.toml declares in [project].dependencies: declared there, not merely installed because
something else pulls it in (a transitive dependency may be dropped by its parent's next release,
and a dev dependency is absent from a user's install).

The check reads the imports (ast, so an import inside a function or a `try:` counts too), maps each
top-level module to the distributions that provide it (importlib.metadata.packages_distributions),
and names every module no declared distribution provides. The negative controls plant an import
of a transitive dependency and of a dev-only one into a copy of the tree, so a check that silently
passes everything fails here; the real tree is the positive control.
"""

from __future__ import annotations

import ast
import re
import shutil
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "review_app")


def _normalized(name: str) -> str:
    """PEP 503 normalization: `Confusable_Homoglyphs` and `confusable-homoglyphs` are one name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def declared_distributions(pyproject: Path) -> set[str]:
    """The distribution names of [project].dependencies (markers and version bounds dropped)."""
    deps = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"]
    names = set()
    for spec in deps:
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", spec)
        assert match is not None, f"unreadable dependency {spec!r}"
        names.add(_normalized(match.group(1)))
    return names


def imported_modules(root: Path) -> dict[str, set[str]]:
    """Top-level module -> the files (relative to root) that import it, over engine/ and
    review_app/; relative imports are first-party and left out."""
    found: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    found.setdefault(name.split(".")[0], set()).add(str(path.relative_to(root)))
    return found


def undeclared_imports(root: Path) -> dict[str, str]:
    """Each third-party module no declared distribution provides -> why, with the files."""
    declared = declared_distributions(root / "pyproject.toml")
    providers = packages_distributions()
    problems: dict[str, str] = {}
    for module, files in sorted(imported_modules(root).items()):
        if module in PACKAGES or module == "__future__" or module in sys.stdlib_module_names:
            continue
        dists = {_normalized(d) for d in providers.get(module, [])}
        if not dists:
            problems[module] = f"no installed distribution provides it (imported by {sorted(files)})"
        elif not dists & declared:
            problems[module] = f"provided by {sorted(dists)}, none declared (imported by {sorted(files)})"
    return problems


def test_every_import_is_declared() -> None:
    assert undeclared_imports(ROOT) == {}


def _copy(tmp: Path) -> Path:
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp / "pyproject.toml")
    return tmp


def test_the_copy_without_a_plant_passes(tmp_path: Path) -> None:
    """The control's control: copying the tree changes nothing, so the failures below are the plants."""
    assert undeclared_imports(_copy(tmp_path)) == {}


@pytest.mark.parametrize(
    ("planted", "module", "why"),
    [
        # pydantic_core is installed only because pydantic depends on it: transitive is not declared.
        ("engine/leak.py", "pydantic_core", "none declared"),
        # hypothesis is a dev dependency: installed here, absent from a user's install.
        ("review_app/screens/leak.py", "hypothesis.strategies", "none declared"),
        # inside a function and a try: still an import the package needs at run time.
        ("engine/storage/leak.py", "not_a_real_module_xyz", "no installed distribution"),
    ],
)
def test_a_planted_undeclared_import_fails(tmp_path: Path, planted: str, module: str, why: str) -> None:
    root = _copy(tmp_path)
    (root / planted).write_text(
        f"def load() -> None:\n    try:\n        import {module}\n    except ImportError:\n        pass\n"
    )
    problems = undeclared_imports(root)
    top = module.split(".")[0]
    assert list(problems) == [top]
    assert why in problems[top] and planted in problems[top]


def test_both_packages_ship_py_typed() -> None:
    """PEP 561: the marker tells type checkers of projects that use memdesk to read its annotations;
    the wheel takes every file of the two packages ([tool.hatch.build.targets.wheel])."""
    wheel = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert set(wheel["packages"]) == set(PACKAGES)
    for package in PACKAGES:
        assert (ROOT / package / "py.typed").is_file()

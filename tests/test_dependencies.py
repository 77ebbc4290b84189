"""Every third-party module that engine/ or review_app/ imports is provided by a distribution that
pyproject.toml declares, not one that only arrives because something else pulls it in (aiohttp,
anyio, numpy and rich did, until a release of their parent stopped shipping them).

The check reads the imports with `ast` (so nothing is imported to find them), maps each top-level
module to the distributions that provide it (`importlib.metadata.packages_distributions`), and
compares with `[project].dependencies`."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIRST_PARTY = {"engine", "review_app"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {_norm(re.split(r"[\s<>=!~;\[]", dep, maxsplit=1)[0]) for dep in project["dependencies"]}


def imported_modules(paths: list[Path]) -> dict[str, set[str]]:
    """Top-level module -> the files importing it (absolute imports only; relative ones are ours)."""
    found: dict[str, set[str]] = {}
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
                found.setdefault(name.split(".")[0], set()).add(str(shown))
    return found


def undeclared(paths: list[Path], allowed: set[str]) -> dict[str, str]:
    """Third-party modules imported by `paths` whose distributions are not in `allowed`:
    module -> why (the providing distributions, or that none is installed)."""
    providers = packages_distributions()
    out: dict[str, str] = {}
    for module, files in sorted(imported_modules(paths).items()):
        if module in FIRST_PARTY or module in sys.stdlib_module_names or module == "__future__":
            continue
        dists = {_norm(d) for d in providers.get(module, [])}
        if not dists & allowed:
            why = ", ".join(sorted(dists)) or "no installed distribution"
            out[module] = f"{why} (imported by {', '.join(sorted(files))})"
    return out


def sources() -> list[Path]:
    return sorted(p for d in FIRST_PARTY for p in (ROOT / d).rglob("*.py"))


def test_every_third_party_import_is_declared() -> None:
    assert undeclared(sources(), declared()) == {}


def test_an_undeclared_import_is_found_and_a_declared_one_is_not(tmp_path: Path) -> None:
    pkg = tmp_path / "planted"
    pkg.mkdir()
    (pkg / "mod.py").write_text("import click\nfrom yaml import safe_load\nimport json\nfrom . import sibling\n")
    found = undeclared([pkg / "mod.py"], declared())
    assert list(found) == ["yaml"]  # click is declared, json is the standard library, . is ours
    assert "pyyaml" in found["yaml"] or "no installed distribution" in found["yaml"]
    # and a dependency removed from the declared set is reported where it is used
    assert "click" in undeclared([pkg / "mod.py"], declared() - {"click"})

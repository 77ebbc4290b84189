"""Every class of the workstation that offers keys: the source of `?` help and of keymap checking.

Help used to keep a hand-written list of screens and dialogs, and every screen added after it
(the second review, the Reviewers screen, the flag dialog) was missing from `?`. Here the list is
found instead: every module of the workstation is imported, then every `Screen` (dialogs included)
and every widget defined in `review_app` that declares its own `BINDINGS` is collected from the
class hierarchy. A new screen is in help, and its binding ids are accepted by the keymap, the moment
it is written.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import Any

from textual.app import App
from textual.binding import Binding, BindingType
from textual.dom import DOMNode
from textual.widgets import DataTable, Tabs

_PACKAGE = "review_app"
_SKIP_MODULES = frozenset({"review_app.cli", "review_app.serve", "review_app.mcp_server", "review_app.demo"})
"""Modules (and packages, with everything under them) that define no key-bearing class (the command
line, the web server, the MCP server)."""

FOREIGN_SCOPES: tuple[type[Any], ...] = (DataTable, Tabs)
"""Textual's own widgets whose keys a reviewer uses (lists; the detail tabs of the narrow layout)."""


def _import_all() -> None:
    package = importlib.import_module(_PACKAGE)
    for info in pkgutil.walk_packages(package.__path__, prefix=f"{_PACKAGE}."):
        if not any(info.name == m or info.name.startswith(f"{m}.") for m in _SKIP_MODULES):
            importlib.import_module(info.name)


def _subclasses(root: type[Any]) -> list[type[Any]]:
    out: list[type[Any]] = []
    stack = [root]
    while stack:
        for sub in stack.pop().__subclasses__():
            out.append(sub)
            stack.append(sub)
    return out


@cache
def binding_classes() -> tuple[type[Any], ...]:
    """The app first, then every workstation screen, dialog and widget with keys of its own (sorted
    by module and name, so help reads the same on every run), then Textual's list and tab widgets."""
    _import_all()
    ours = {
        cls
        for cls in _subclasses(DOMNode)
        if cls.__module__.startswith(f"{_PACKAGE}.") and "BINDINGS" in cls.__dict__ and not issubclass(cls, App)
    }
    apps = sorted(
        (c for c in _subclasses(App) if c.__module__.startswith(f"{_PACKAGE}.")), key=lambda c: c.__qualname__
    )
    rest = sorted(ours, key=lambda c: (c.__module__, c.__qualname__))
    return (*apps, *rest, *FOREIGN_SCOPES)


def bindings_of(cls: type[Any]) -> list[Binding]:
    """A class's bindings as Binding objects (tuples expanded as Textual does)."""
    declared: list[BindingType] = list(getattr(cls, "BINDINGS", []))
    out: list[Binding] = []
    for item in declared:
        out.extend(Binding.make_bindings([item]))
    return out


@cache
def binding_ids() -> frozenset[str]:
    """Every binding id a keymap file may name."""
    return frozenset(b.id for cls in binding_classes() for b in bindings_of(cls) if b.id)

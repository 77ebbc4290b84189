"""Every error class of engine/errors.py is exported from `engine` (the README tells callers to
catch them by name: `from engine import AssignedError`). The negative control shows the check
sees a class that engine/__init__.py would leave out."""

from __future__ import annotations

import inspect
from types import ModuleType

import engine
import engine.errors


def unexported_errors(errors: ModuleType, package: ModuleType) -> list[str]:
    """The exception classes defined in `errors` that `package` does not export in __all__."""
    defined = [
        name
        for name, obj in vars(errors).items()
        if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == errors.__name__
    ]
    exported = set(getattr(package, "__all__", ()))
    return sorted(
        name for name in defined if name not in exported or getattr(package, name, None) is not getattr(errors, name)
    )


def test_every_engine_error_is_exported() -> None:
    assert unexported_errors(engine.errors, engine) == []
    assert "AssignedError" in engine.__all__ and "SecondOpinionError" in engine.__all__


def test_a_missing_export_is_reported() -> None:
    fake = ModuleType("fake_engine")
    fake.__all__ = [n for n in engine.__all__ if n != "AssignedError"]  # type: ignore[attr-defined]
    for name in fake.__all__:  # type: ignore[attr-defined]
        setattr(fake, name, getattr(engine, name))
    assert unexported_errors(engine.errors, fake) == ["AssignedError"]

"""The keymap file: TOML with a `[keymap]` table of `binding_id = "key"`.

Validated at the edge (pydantic) so that a typo in the file is reported with the file name before
the terminal switches to the application, instead of being silently ignored by Textual.
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from engine.errors import UserInputError


class KeymapError(UserInputError):
    """The keymap file is missing, not TOML, or not a table of binding id -> key."""


class KeymapFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    keymap: dict[str, str]

    @field_validator("keymap")
    @classmethod
    def _non_empty_keys(cls, value: dict[str, str]) -> dict[str, str]:
        for binding_id, key in value.items():
            if not key.strip():
                raise ValueError(f"binding {binding_id!r} maps to an empty key")
        return value


def check_keymap(keymap: Mapping[str, str], where: str = "keymap") -> None:
    """Refuse a binding id no screen or dialog has: Textual would ignore it, and the reviewer would
    believe a key was remapped when nothing changed. The ids come from the registry of every
    screen and dialog class (the same list `?` shows)."""
    from .registry import binding_ids

    known = binding_ids()
    unknown = sorted(set(keymap) - known)
    if unknown:
        close = {u: difflib.get_close_matches(u, known, n=1) for u in unknown}
        said = ", ".join(f"{u!r}" + (f" (did you mean {close[u][0]!r}?)" if close[u] else "") for u in unknown)
        raise KeymapError(f"{where}: unknown binding id {said}; `?` in the workstation lists every id")


def load_keymap(path: str | Path) -> dict[str, str]:
    """binding id -> key (several keys may be given comma-separated, as Textual accepts); an id
    that names no binding is refused here, before the terminal switches to the application."""
    file = Path(path)
    try:
        raw = tomllib.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise KeymapError(f"cannot read keymap file {file}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise KeymapError(f"keymap file {file} is not valid TOML: {exc}") from None
    try:
        keymap = dict(KeymapFile.model_validate(raw).keymap)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise KeymapError(f'keymap file {file}: {where}: {first["msg"]} (expected [keymap] id = "key")') from None
    check_keymap(keymap, f"keymap file {file}")
    return keymap

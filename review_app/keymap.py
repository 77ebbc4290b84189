"""The keymap file: TOML with a `[keymap]` table of `binding_id = "key"`.

Validated at the edge (pydantic) so that a typo in the file is reported with the file name before
the terminal switches to the application, instead of being silently ignored by Textual.
"""

from __future__ import annotations

import tomllib
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


def load_keymap(path: str | Path) -> dict[str, str]:
    """binding id -> key (several keys may be given comma-separated, as Textual accepts)."""
    file = Path(path)
    try:
        raw = tomllib.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise KeymapError(f"cannot read keymap file {file}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise KeymapError(f"keymap file {file} is not valid TOML: {exc}") from None
    try:
        return dict(KeymapFile.model_validate(raw).keymap)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise KeymapError(f'keymap file {file}: {where}: {first["msg"]} (expected [keymap] id = "key")') from None

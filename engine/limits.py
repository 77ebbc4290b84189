"""Size limits on text entering the engine, one check per kind of text, called at every door.

Why one module: the library, ingest, the MCP server and the workstation's edit dialog all reach the
engine through different calls, and a limit enforced at three of four doors is no limit. Each check
raises `UserInputError` naming the limit and the size it saw, before anything is written; the
limits themselves are `MemoryConfig` fields (defaults in `engine/config.py`, listed in the README).
"""

from __future__ import annotations

from .config import MemoryConfig
from .errors import UserInputError


def _check(text: str, limit: int, what: str, setting: str) -> str:
    if len(text) > limit:
        raise UserInputError(
            f"{what} is {len(text):,} characters; the limit is {limit:,} (MemoryConfig.{setting})"
        )
    return text


def check_statement(text: str, config: MemoryConfig, what: str = "the statement") -> str:
    return _check(text, config.max_statement_chars, what, "max_statement_chars")


def check_message(text: str, config: MemoryConfig, what: str = "the message") -> str:
    return _check(text, config.max_message_chars, what, "max_message_chars")


def check_query(text: str, config: MemoryConfig, what: str = "the query") -> str:
    return _check(text, config.max_query_chars, what, "max_query_chars")


def check_reason(text: str, config: MemoryConfig, what: str = "the reason") -> str:
    return _check(text, config.max_reason_chars, what, "max_reason_chars")

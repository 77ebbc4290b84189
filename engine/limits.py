"""Size limits on text entering the engine, one check per kind of text, called at every door.

Why one module: the library, ingest, the MCP server and the workstation's edit dialog all reach the
engine through different calls, and a limit enforced at three of four doors is no limit. Each check
raises `UserInputError` naming the limit and the size it saw, before anything is written; the
limits themselves are `MemoryConfig` fields (defaults in `engine/config.py`, listed in the README).
"""

from __future__ import annotations

from datetime import datetime

from .config import MemoryConfig
from .errors import InvalidStatementError, UserInputError
from .text import has_visible_text, reveal
from .timeutil import check_representable


def _check(text: str, limit: int, what: str, setting: str) -> str:
    if len(text) > limit:
        raise UserInputError(f"{what} is {len(text):,} characters; the limit is {limit:,} (MemoryConfig.{setting})")
    return text


def check_statement(text: str, config: MemoryConfig, what: str = "the statement", *, credentials: bool = True) -> str:
    """The size limit, and (unless `credentials=False`, for a caller that answers a credential its
    own way, as `Memory.propose` does) no credential: a statement holding one is refused with the
    kinds named, never stored with a marker in place of what the person meant to say. Also
    something to see: a statement made only of invisible code points would be an empty value
    whose key matches nothing a person can read or reject; refused with the code points shown."""
    if not has_visible_text(text):
        shown = reveal(text.strip() or text)[:60]
        raise InvalidStatementError(f"{what} has no visible characters ({shown or 'empty'}): there is nothing to store")
    _check(text, config.max_statement_chars, what, "max_statement_chars")
    if credentials:
        check_no_credential(text, what)
    return text


def check_no_credential(text: str, what: str = "the statement") -> str:
    """Refuse text that holds a credential or a removal marker (engine.credentials)."""
    from .credentials import holds_credential, redact

    if holds_credential(text):
        kinds = ", ".join(sorted(redact(text).kinds)) or "a removed credential"
        raise UserInputError(f"{what} holds a credential ({kinds}); credentials are never stored: leave it out")
    return text


def check_message(text: str, config: MemoryConfig, what: str = "the message") -> str:
    return _check(text, config.max_message_chars, what, "max_message_chars")


def check_query(text: str, config: MemoryConfig, what: str = "the query") -> str:
    return _check(text, config.max_query_chars, what, "max_query_chars")


def check_reason(text: str, config: MemoryConfig, what: str = "the reason") -> str:
    return _check(text, config.max_reason_chars, what, "max_reason_chars")


def check_unicode(text: str, what: str) -> str:
    """Refuse a string that is not valid Unicode text: a lone surrogate ("\\ud800", which JSON's
    \\u escapes can produce) cannot be encoded as UTF-8, so SQLite, the terminal and every export
    would fail on it later, far from the door it came in by; nor can a NUL be stored by PostgreSQL."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = text[exc.start]
        raise UserInputError(
            f"{what} holds a lone surrogate (U+{ord(bad):04X} at position {exc.start}), which is not valid Unicode"
        ) from None
    nul = text.find("\x00")
    if nul >= 0:
        # PostgreSQL's text type cannot hold U+0000 at all; refused on both backends, so a store
        # accepts the same text whichever database it is, and can always be migrated to the other.
        raise UserInputError(f"{what} holds a NUL character (U+0000 at position {nul}), which cannot be stored")
    return text


def check_exchange(
    user_id: object, user_msg: object, assistant_msg: object, at: datetime | None, config: MemoryConfig
) -> datetime | None:
    """Everything an exchange must satisfy before it is stored, shared by `Memory.add_exchanges`
    and ingest (which checks a whole file before it opens the database): a user id, a non-empty
    user message, both messages within `max_message_chars`, valid Unicode, and a date inside the
    representable range. Returns `at` in UTC."""
    if not isinstance(user_id, str) or not user_id.strip():
        raise InvalidStatementError("an exchange needs a user_id")
    check_unicode(user_id, "user_id")
    if not isinstance(user_msg, str) or not user_msg.strip():
        raise InvalidStatementError(f"the user message of {user_id!r} is empty")
    check_unicode(check_message(user_msg, config, "the user message"), "the user message")
    if assistant_msg is not None:
        if not isinstance(assistant_msg, str):
            raise InvalidStatementError(f"the assistant message of {user_id!r} is not text")
        check_unicode(check_message(assistant_msg, config, "the assistant message"), "the assistant message")
    return None if at is None else check_representable(at, "at")

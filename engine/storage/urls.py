"""Store targets as text: is it a PostgreSQL URL, is it a URL of a scheme memdesk has no store
for, and the form of it a message may show (the password masked). Its own module, below both
backends, so a backend can mask its URL without importing the package that opens it
(engine/storage/__init__ imports the backends; tests/test_layers.py keeps the engine free of
import circles)."""

from __future__ import annotations

import os
import re

from ..errors import UserInputError

_URL = re.compile(r"^postgres(?:ql)?://", re.IGNORECASE)


def is_postgres_url(target: str | os.PathLike[str]) -> bool:
    return isinstance(target, str) and bool(_URL.match(target))


def refuse_foreign_url(target: str | os.PathLike[str]) -> None:
    """UserInputError for a URL of a scheme memdesk has no store for (mysql://, http://...), which
    would otherwise be taken for a relative file path. The URL is not repeated: it may hold a password."""
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*)://", target) if isinstance(target, str) else None
    if scheme and not is_postgres_url(target):
        raise UserInputError(
            f"memdesk cannot open a {scheme.group(1)}:// URL; give a SQLite file path or a postgresql:// URL"
        )


def masked(target: str) -> str:
    """The target for messages: a URL's password replaced by ***. Masks generously rather than
    parse as one driver does: everything from the user's ':' to the LAST '@' before the query
    (a password may hold '@' or '/' unescaped), and any `password=` query parameter."""
    if not is_postgres_url(target):
        return target
    scheme, rest = target.split("://", 1)
    end = min((i for i in (rest.find(c) for c in "?#") if i >= 0), default=len(rest))
    head, tail = rest[:end], rest[end:]
    userinfo, at, after = head.rpartition("@")
    if at and ":" in userinfo:
        head = f"{userinfo.partition(':')[0]}:***@{after}"
    tail = re.sub(r"([?&]password=)[^&#]*", r"\1***", tail, flags=re.IGNORECASE)
    return f"{scheme}://{head}{tail}"

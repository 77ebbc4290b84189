"""The one choke point no credential passes: every write statement's text arguments are redacted.

`SqlTx` wraps its connection in `RedactingConn`, so every INSERT or UPDATE (or INSERT ... ON
CONFLICT, or REPLACE) that any room of either backend runs has each string argument passed
through `engine.credentials.redact_value` before the driver sees it: a message, a statement, an
edit, a reviewer's reject or flag reason, an agent's forget reason, a policy's reason, an import's
rows, an audit row's before/after JSON. Services still redact first where they can say so
(an exchange's audit row naming the kinds, a proposal refused with its reason); this layer is what
makes "no path was forgotten" true by construction rather than by review of every call site.

Reads pass through untouched (a search for a secret finds nothing, since none is stored). Bytes,
numbers and vectors are not text and are not looked at. `removed` counts the kinds this
connection's transaction removed, for tests and for a caller that wants to say so.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from ...credentials import redact_value

_WRITE = re.compile(r"(?i)\b(?:INSERT|UPDATE|REPLACE)\b")


@lru_cache(maxsize=4096)
def _writes(sql: str) -> bool:
    return _WRITE.search(sql) is not None


class RedactingConn:
    """A connection whose write statements never carry a credential (module docstring). Every
    other attribute is the wrapped connection's own (`total_changes`, `fetchval`, ...)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.removed: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def _clean(self, parameters: Any) -> Any:
        """One statement's arguments with each string redacted: a mapping stays a mapping, any
        other sequence becomes a tuple (both drivers take either)."""
        if isinstance(parameters, Mapping):
            return {k: self._one(v) for k, v in parameters.items()}
        if isinstance(parameters, Sequence) and not isinstance(parameters, str | bytes):
            return tuple(self._one(v) for v in parameters)
        return parameters

    def _one(self, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        cleaned, kinds = redact_value(value)
        if kinds:
            self.removed.update(kinds)
        return cleaned

    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        if parameters and _writes(sql):
            parameters = self._clean(parameters)
        return self._inner.execute(sql, parameters)

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> Any:
        if _writes(sql):
            parameters = [self._clean(row) for row in parameters]
        return self._inner.executemany(sql, parameters)

    def execute_fetchall(self, sql: str, parameters: Any = (), /) -> Any:
        if parameters and _writes(sql):
            parameters = self._clean(parameters)
        return self._inner.execute_fetchall(sql, parameters)

    def fetchval(self, sql: str, parameters: Any = (), /) -> Any:
        if parameters and _writes(sql):
            parameters = self._clean(parameters)
        return self._inner.fetchval(sql, parameters)


def guarded(conn: Any) -> Any:
    """`conn` wrapped once (wrapping a wrapped connection returns it as it is)."""
    return conn if isinstance(conn, RedactingConn) else RedactingConn(conn)

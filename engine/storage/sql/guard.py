"""The one choke point no credential passes: every write statement's text arguments are redacted.

`SqlTx` wraps its connection in `RedactingConn`, so every INSERT or UPDATE (or INSERT ... ON
CONFLICT, or REPLACE) that any room of either backend runs has each string argument passed
through `engine.credentials.redact_text` before the driver sees it (a string holding a JSON
object or array is parsed and each string inside it redacted): a message, a statement, an
edit, a reviewer's reject or flag reason, an agent's forget reason, a policy's reason, an import's
rows, an audit row's before/after JSON. Services still redact first where they can say so
(an exchange's audit row naming the kinds, a proposal refused with its reason); this layer is what
makes "no path was forgotten" true by construction rather than by review of every call site.

Reads pass through untouched (a search for a secret finds nothing, since none is stored). Bytes,
numbers and vectors are not text and are not looked at. `removed` counts the kinds this
connection's transaction removed, for tests and for a caller that wants to say so.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from datetime import datetime
from functools import lru_cache
from typing import Any

from ...credentials import SHORTEST_CREDENTIAL as _SHORTEST
from ...credentials import redact_text
from ...models import to_jsonable

_WRITE = re.compile(r"(?i)\b(?:INSERT|UPDATE|REPLACE)\b")


@lru_cache(maxsize=4096)
def _writes(sql: str) -> bool:
    return _WRITE.search(sql) is not None


class Redacted(str):
    """JSON text whose every string `RedactingConn.json` redacted while writing it: the guard passes
    it as it is instead of parsing it again (an import writes an audit row a fact). Nothing else
    makes one; a str subclass of any other type is still parsed and redacted."""

    __slots__ = ()


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
        other sequence becomes a tuple (both drivers take either). Numbers, bytes (vectors),
        strings too short to hold any credential and strings already read clean pass without a
        call: an import writes millions."""
        one, seen = self._one, _CLEAN
        if isinstance(parameters, Mapping):
            return {
                k: v if not isinstance(v, str) or len(v) < _SHORTEST or v in seen else one(v)
                for k, v in parameters.items()
            }
        if isinstance(parameters, Sequence) and not isinstance(parameters, str | bytes):
            return tuple(
                [v if not isinstance(v, str) or len(v) < _SHORTEST or v in seen else one(v) for v in parameters]
            )
        return parameters

    def json(self, value: Any) -> Redacted:
        """`value` (a dataclass, dict or list; datetimes as ISO strings) as the JSON text a column
        stores, each string in it redacted on the way: what the audit rows' before/after are."""
        kinds: Counter[str] = Counter()
        walked = _tree(value, kinds)
        if kinds:
            self.removed.update(kinds)
        return Redacted(json.dumps(walked))

    def _one(self, value: Any) -> Any:
        if type(value) is Redacted or not isinstance(value, str):
            return value
        kinds: Counter[str] = Counter()
        cleaned = _column_text(value, kinds)
        if kinds:
            self.removed.update(kinds)
        elif type(value) is str:
            _remember(value)
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


_CLEAN: set[str] = set()
"""Strings the detectors read and found nothing in (ids, actors, statuses, statements already
written once in this process): passed without a call. Bounded: emptied when full."""
_CLEAN_MAX = 65_536


def _remember(text: str) -> None:
    if len(_CLEAN) >= _CLEAN_MAX:
        _CLEAN.clear()
    _CLEAN.add(text)


def _column_text(value: str, kinds: Counter[str]) -> str:
    """A text argument as it may be written: redacted; one holding a JSON object or array parsed,
    each string inside redacted (`_tree`), and written back only when something was found, so an
    untouched row keeps its exact bytes."""
    if value.lstrip()[:1] in ("{", "["):
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict | list):
            walked = _tree(parsed, kinds)
            return json.dumps(walked, ensure_ascii=False) if kinds else value
    text, found = redact_text(value)
    kinds.update(dict(found))
    return text


_PLAIN: frozenset[type] = frozenset({int, float, bool, type(None)})
"""Values JSON takes as they are and that hold no text: passed without a call (an import's audit
rows are mostly ids, times and None)."""


def _tree(node: Any, kinds: Counter[str]) -> Any:
    """`to_jsonable(node)` with every string redacted, in one walk. A datetime's ISO text is the
    engine's own digits, not anybody's words: it is not read."""
    if type(node) is dict:
        return {
            k: v if type(v) in _PLAIN or (type(v) is str and (len(v) < _SHORTEST or v in _CLEAN)) else _tree(v, kinds)
            for k, v in node.items()
        }
    if isinstance(node, str):
        if len(node) < _SHORTEST or node in _CLEAN:
            return node
        text, found = redact_text(node)
        if found:
            kinds.update(dict(found))
        elif type(node) is str:
            _remember(node)
        return text
    if isinstance(node, datetime):
        return node.isoformat()
    if hasattr(node, "__dataclass_fields__"):
        node = asdict(node)
    if isinstance(node, dict):
        return {k: _tree(v, kinds) for k, v in node.items()}
    if isinstance(node, list | tuple):
        return [_tree(v, kinds) for v in node]
    return node


def json_column(conn: Any, value: Any) -> str:
    """`value` as the JSON text a column stores: through the guard's `json` on a guarded
    connection (what every transaction has), plain `json.dumps` otherwise."""
    if isinstance(conn, RedactingConn):
        return conn.json(value)
    return json.dumps(to_jsonable(value))


def guarded(conn: Any) -> Any:
    """`conn` wrapped once (wrapping a wrapped connection returns it as it is)."""
    return conn if isinstance(conn, RedactingConn) else RedactingConn(conn)

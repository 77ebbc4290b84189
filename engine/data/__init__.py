"""The bundled labelled conversation set: demo data for `memdesk demo` and a fixture for the
extraction tests and the ablation benchmark.

`conversations.jsonl` holds 17 users' exchanges (362) over about nine weeks, in the JSON Lines
format `memdesk ingest` reads. Sessions are minutes apart inside and days apart between, so episodes
split on the 30-minute gap. The exchanges cover new facts, repeats in later episodes (the claims a
prediction should already hold), updates (a move, a new job, a birthday, a count that changed),
contradictions ("not ... anymore"), corrections ("just kidding", "wait, engaged, not married"),
hedges, hypotheticals, plans, questions, facts stated only by the assistant, small talk, sarcasm and
jokes ("Sure, and I'm also the Queen of England"), idioms ("I live in hope", "I LIVE IN HOPE!"),
several people per user (partners, children, siblings, parents, bosses, friends), claims inside
longer sentences, possessives, counts, preferences, habits, life events with relative dates, and
details that must survive ("my sister is a doctor in Vancouver", "I live in Dubai since January").
`expected.json` is what a careful curator would approve per user (250 facts, 41 of them updates):
every fact once, with `supersedes` naming the statement it replaces and `valid_at` where the
conversation dates it, so precision and recall of a review queue can be measured against it. The
labels were written from the conversations, before the rules were tuned on them, not from any
extractor's output; facts the offline rules cannot read are labelled all the same. The first five
users (ana, ben, chloe, dev, eli: 117 exchanges, 67 facts) are the original set; the twelve others
were added for issue 12.
"""

from __future__ import annotations

import json
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

from ..timeutil import parse_datetime

_PACKAGE = __name__


def _file(name: str) -> Path:
    # The data files live inside the `engine` package, so a wheel carries them; resolving through
    # importlib.resources keeps this right when the package is installed rather than checked out.
    return Path(str(resources.files(_PACKAGE).joinpath(name)))


def conversations_path() -> Path:
    """Path of the JSON Lines file (what `memdesk ingest` and `memdesk demo` read)."""
    return _file("conversations.jsonl")


def expected_path() -> Path:
    return _file("expected.json")


def load_exchanges(path: Path | None = None) -> list[tuple[str, str, str | None, datetime]]:
    """Every exchange as (user_id, user_msg, assistant_msg, at), in file order (time order); the
    bundled set, or another file in the same format (a held-out set, say)."""
    out: list[tuple[str, str, str | None, datetime]] = []
    with (path or conversations_path()).open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            row: dict[str, Any] = json.loads(line)
            out.append((row["user_id"], row["user"], row.get("assistant"), parse_datetime(row["at"], "at")))
    return out


def load_expected(path: Path | None = None) -> dict[str, list[dict[str, Any]]]:
    """Per user, the labelled facts: {"statement", "slot"?, "supersedes"?, "valid_at"?, "invalid_at"?}."""
    with (path or expected_path()).open(encoding="utf-8") as fh:
        data: dict[str, list[dict[str, Any]]] = json.load(fh)
    return data


__all__ = ["conversations_path", "expected_path", "load_exchanges", "load_expected"]

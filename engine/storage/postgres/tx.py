"""PostgresTx: the engine's operations on PostgreSQL, where the portable SQL of SqlTx cannot serve."""

from __future__ import annotations


def search_text(statement: str) -> str:
    """What `knowledge.search` is built from (`to_tsvector('simple', ...)`): the statement's
    tokens as the text arm's BM25 counts them (`fts_tokens`), joined by spaces, so PostgreSQL
    matches exactly the rows whose term frequencies are computed in Python."""
    from ...store import fts_tokens

    return " ".join(fts_tokens(statement))

"""Shared pieces of the engine behaviour tests: an injectable clock, and whole-database snapshots so
that "this call changed nothing" is checked against every row, not against the one column a test
happened to think of."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from engine import Memory, MemoryConfig
from engine.embedders import Embedder

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

# Every logical table a mutation can touch (identical in both backends).
SNAPSHOT_QUERIES: dict[str, str] = {
    "knowledge": "SELECT * FROM knowledge ORDER BY id",
    "candidates": "SELECT * FROM candidates ORDER BY id",
    "tombstones": "SELECT * FROM tombstones ORDER BY id",
    "audit_log": "SELECT * FROM audit_log ORDER BY id",
}
# The backend's own index rows. SQLite keeps them in knowledge_fts (FTS5) and knowledge_vec (vec0;
# the embedding blob is compared as bytes, which is what "unchanged" means for it); PostgreSQL keeps
# them in the knowledge row itself (`embedding vector`, `search tsvector`), which the logical
# snapshot already holds.
INDEX_QUERIES: dict[str, dict[str, str]] = {
    "sqlite": {
        "knowledge_fts": "SELECT rowid, statement FROM knowledge_fts ORDER BY rowid",
        "knowledge_vec": (
            "SELECT knowledge_id, user_id, embedding, status, valid_from, valid_to, created, expired"
            " FROM knowledge_vec ORDER BY knowledge_id"
        ),
    },
    "postgres": {},
}


def snapshot_queries(mem: Memory) -> dict[str, str]:
    """The snapshot's queries for `mem`'s backend: the logical tables plus the backend's index rows."""
    return {**SNAPSHOT_QUERIES, **INDEX_QUERIES[mem.store.backend]}


def sqlite_only(reason: str) -> pytest.MarkDecorator:
    """Run a test on SQLite only (the `backend` fixture's parameter overridden); `reason` says why
    in the test file, e.g. it reads SQLite's own tables, PRAGMAs or database file."""
    assert reason
    return pytest.mark.parametrize("backend", ["sqlite"])


class Clock:
    """A clock the test moves by hand: decisions stamp times a test can name exactly."""

    def __init__(self, start: datetime = T0) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


@asynccontextmanager
async def open_memory(
    path: Path | str,
    clock: Clock | None = None,
    embedder: Embedder | None = None,
    config: MemoryConfig | None = None,
) -> AsyncIterator[Memory]:
    async with Memory(path, embedder=embedder, clock=clock or Clock(), config=config) as mem:
        yield mem


@asynccontextmanager
async def sql(mem: Memory, *, write: bool = False) -> AsyncIterator[Any]:
    """The raw connection of a read (or, with `write`, a write transaction) of `mem`'s store, for
    tests that check rows directly; `?` placeholders work on both backends."""
    async with mem.store.transaction() if write else mem.store.reading() as tx:
        yield tx.conn


async def snapshot(mem: Memory) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table a decision or knowledge operation may write."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    async with sql(mem) as conn:
        for table, query in snapshot_queries(mem).items():
            out[table] = [tuple(r) for r in await (await conn.execute(query)).fetchall()]
    return out


async def counts(mem: Memory) -> dict[str, int]:
    return {table: len(rows) for table, rows in (await snapshot(mem)).items()}


async def row(mem: Memory, table: str, row_id: int) -> tuple[Any, ...]:
    """One full row by id (knowledge, candidates, tombstones)."""
    async with sql(mem) as conn:
        found = await (await conn.execute(f"SELECT * FROM {table} WHERE id = ?", (row_id,))).fetchone()
    assert found is not None, f"{table} {row_id} does not exist"
    return tuple(found)


async def vec_row(mem: Memory, knowledge_id: int) -> tuple[Any, ...] | None:
    """The vector index's copy of a fact's filter columns (SQLite's knowledge_vec row; on PostgreSQL
    the vector lives in the knowledge row, so the same columns come from there, when it has one)."""
    query = (
        "SELECT knowledge_id, user_id, status, valid_from, valid_to, created, expired FROM knowledge_vec"
        " WHERE knowledge_id = ?"
        if mem.store.backend == "sqlite"
        else "SELECT id, user_id, status, valid_at, invalid_at, created_at, expired_at FROM knowledge"
        " WHERE id = ? AND embedding IS NOT NULL"
    )
    async with sql(mem) as conn:
        found = await (
            await conn.execute(
                query,
                (knowledge_id,),
            )
        ).fetchone()
    return tuple(found) if found is not None else None


DRAWS = ("policy_sampled", "policy_unsampled")
"""The audit actions of an approval's second-review draw (engine/storage/sql/policies.py): written
with every approval since the two-person rule, sampled or not at random (tests/test_two_person.py
checks them); the tests of a decision's own rows leave them out."""


async def audit_rows_since(mem: Memory, after_id: int, *, draws: bool = False) -> list[tuple[Any, ...]]:
    """(id, actor, action, user_id, entity, entity_id, before, after, reason) written after
    `after_id`; with `draws`, the approvals' second-review draws too (`DRAWS`)."""
    async with sql(mem) as conn:
        rows = await (
            await conn.execute(
                "SELECT id, actor, action, user_id, entity, entity_id, before, after, reason FROM audit_log"
                " WHERE id > ? ORDER BY id",
                (after_id,),
            )
        ).fetchall()
    return [tuple(r) for r in rows if draws or r[2] not in DRAWS]


async def last_audit_id(mem: Memory) -> int:
    async with sql(mem) as conn:
        found = await (await conn.execute("SELECT coalesce(max(id), 0) FROM audit_log")).fetchone()
    return int(found[0])  # type: ignore[index]

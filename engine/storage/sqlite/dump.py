"""The SQLite side of a whole-store copy: what `SqliteStore.dump` and `SqliteStore.load` run.

`memdesk migrate` (engine/transfer.py) copies a store table by table through these, so the rows
here are backend-neutral: one dict per row, keyed by the column names every backend shares
(STORAGE.md), times as integer microseconds, booleans as 0/1, JSON as text. What only SQLite has
stays out of the rows and is rebuilt on load:

- `knowledge_fts` (FTS5): the statement plus the user's scope token, rowid = the fact's id.
- `knowledge_vec` (sqlite-vec): the embedding travels with the fact as `"embedding": list[float]`;
  its metadata columns (user, status, the valid and belief bounds, `still_true`, `believed_to`)
  are derived from the fact's own columns, exactly as the engine's writes keep them (see
  `vec_row`), so a copied store filters its KNN the same way.
- `sqlite_sequence`: ids are kept as given, and each AUTOINCREMENT counter is moved past the
  largest id loaded AND past every id the audit log names for that table's entity, because ids are
  never reused, not even an erased one whose audit rows still stand (the rule schema v5 set).

The functions take the aiosqlite connection and never begin or commit: the caller owns the
transaction. Rows name rows the copy has not loaded yet (`candidates` and `knowledge` name each
other, `knowledge.superseded_by` names a later fact), so `SqliteStore.load` runs each batch with
foreign-key enforcement off; the source enforced them, and `memdesk migrate` compares the copy with
it row for row.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import aiosqlite
import sqlite_vec

from ...errors import UserInputError
from ...timeutil import BEGINNING, FOREVER
from ..base import AUDITED_TABLES, TABLES
from ..sql.text_arm import STILL_TRUE_SQL
from .tx import fts_scope

KEYS: Mapping[str, str] = {table: ("key" if table == "meta" else "id") for table in TABLES}

VEC_INSERT = (
    "INSERT INTO knowledge_vec(knowledge_id, user_id, embedding, status, valid_from, valid_to, created, expired,"
    " still_true, believed_to) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_STILL_TRUE_REASONS = ("superseded", "contradicted")


def _check_table(table: str) -> str:
    if table not in KEYS:
        raise UserInputError(f"{table!r} is not a table of a memdesk store (tables: {', '.join(TABLES)})")
    return table


async def columns(conn: aiosqlite.Connection, table: str) -> list[str]:
    """The table's columns in declaration order (what a dumped row holds, `embedding` aside)."""
    rows = await (await conn.execute(f"PRAGMA table_info({_check_table(table)})")).fetchall()
    return [str(r[1]) for r in rows]


def _floats(blob: bytes) -> list[float]:
    """A sqlite-vec float32 blob as Python floats (exact: every float32 is a double)."""
    return array("f", blob).tolist()


async def dump_rows(
    conn: aiosqlite.Connection,
    table: str,
    *,
    batch: int = 1000,
) -> AsyncIterator[list[dict[str, Any]]]:
    """Every row of `table`, ordered by its key, `batch` rows at a time (keyset pagination, so a
    batch costs the same at the end of a large table as at its start). Fact rows carry their
    vector as "embedding". A fact without a vector row is an error, not a row to copy without one:
    it would silently drop out of the vector arm of the copy."""
    if batch < 1:
        raise ValueError("batch must be at least 1")
    cols = await columns(conn, table)
    key = KEYS[table]
    select = f"SELECT {', '.join(cols)} FROM {table}"
    last: Any = None
    while True:
        where = "" if last is None else f" WHERE {key} > ?"
        rows = await (
            await conn.execute(f"{select}{where} ORDER BY {key} LIMIT ?", (() if last is None else (last,)) + (batch,))
        ).fetchall()
        if not rows:
            return
        out = [dict(zip(cols, r, strict=True)) for r in rows]
        if table == "knowledge":
            await _attach_embeddings(conn, out)
        yield out
        if len(out) < batch:
            return
        last = out[-1][key]


async def _attach_embeddings(conn: aiosqlite.Connection, rows: list[dict[str, Any]]) -> None:
    """Read the batch's vectors in one statement: a json_each join makes one primary-key lookup
    per id (an IN list or an id range makes vec0 scan every chunk instead)."""
    ids = [r["id"] for r in rows]
    found = await (
        await conn.execute(
            "SELECT v.knowledge_id, v.embedding FROM json_each(?) j JOIN knowledge_vec v ON v.knowledge_id = j.value",
            (json.dumps(ids),),
        )
    ).fetchall()
    vectors = {int(r[0]): _floats(r[1]) for r in found}
    missing = [i for i in ids if i not in vectors]
    if missing:
        raise RuntimeError(f"facts {missing[:10]} have no vector row in knowledge_vec: the store is damaged")
    for r in rows:
        r["embedding"] = vectors[r["id"]]


def vec_row(fact: Mapping[str, Any], embedding: Sequence[float]) -> tuple[Any, ...]:
    """The knowledge_vec row of a fact, derived from its columns the way the engine's writes keep
    it: open bounds as the BEGINNING/FOREVER sentinels (vec0 metadata cannot be NULL); `valid_to`
    the current end of valid time; `believed_to` the end as it was while the fact was believed
    (before a confirmed supersession closed it: `prior_invalid_at` when `valid_closed`);
    `still_true` per schema.STILL_TRUE_SQL."""
    status = fact["status"]
    invalid_at = fact["invalid_at"]
    believed_end = fact["prior_invalid_at"] if fact["valid_closed"] else invalid_at
    still_true = int(status == "active" or (status == "superseded" and fact["end_reason"] in _STILL_TRUE_REASONS))
    return (
        fact["id"],
        fact["user_id"],
        sqlite_vec.serialize_float32(list(embedding)),
        status,
        BEGINNING if fact["valid_at"] is None else fact["valid_at"],
        FOREVER if invalid_at is None else invalid_at,
        fact["created_at"],
        FOREVER if fact["expired_at"] is None else fact["expired_at"],
        still_true,
        FOREVER if believed_end is None else believed_end,
    )


assert "'superseded', 'contradicted'" in STILL_TRUE_SQL, "vec_row's still_true must follow STILL_TRUE_SQL"


async def load_rows(conn: aiosqlite.Connection, table: str, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert `rows` into `table` with their ids as given (inside the caller's transaction).

    `meta` rows replace the value of an existing key, except the embedding width, which the vector
    table was created with: a different width is refused (open the destination with the source's
    dimensions). Fact rows also write their FTS and vector rows. A row whose columns are not the
    table's is refused as a whole, before anything is written."""
    cols = await columns(conn, table)
    if not rows:
        return
    known = set(cols) | ({"embedding"} if table == "knowledge" else set())
    for row in rows:
        extra = set(row) - known
        if extra:
            raise UserInputError(f"{table} has no column(s) {sorted(extra)}")
        if table == "knowledge" and row.get("embedding") is None:
            raise UserInputError(f"fact {row.get('id')} has no embedding")
    names = [c for c in cols if c in rows[0]]
    if any(set(r) - {"embedding"} != set(names) for r in rows):
        raise UserInputError(f"the rows for {table} do not all have the same columns")
    if table == "meta":
        await _load_meta(conn, rows)
        return
    placeholders = ", ".join("?" for _ in names)
    await conn.executemany(
        f"INSERT INTO {table}({', '.join(names)}) VALUES ({placeholders})",
        [tuple(r[c] for c in names) for r in rows],
    )
    if table == "knowledge":
        await conn.executemany(
            "INSERT INTO knowledge_fts(rowid, statement, scope) VALUES (?, ?, ?)",
            [(r["id"], r["statement"], fts_scope(r["user_id"])) for r in rows],
        )
        await conn.executemany(VEC_INSERT, [vec_row(r, r["embedding"]) for r in rows])
    await _raise_sequence(conn, table, max(int(r["id"]) for r in rows))
    if table == "audit_log":
        for entity, target in AUDITED_TABLES.items():
            found = await (
                await conn.execute("SELECT max(entity_id) FROM audit_log WHERE entity = ?", (entity,))
            ).fetchone()
            if found is not None and found[0] is not None:
                await _raise_sequence(conn, target, int(found[0]))


async def _load_meta(conn: aiosqlite.Connection, rows: Sequence[Mapping[str, Any]]) -> None:
    for row in rows:
        if row["key"] == "embedding_dimensions":
            have = await (await conn.execute("SELECT value FROM meta WHERE key = 'embedding_dimensions'")).fetchone()
            if have is not None and str(have[0]) != str(row["value"]):
                raise UserInputError(
                    f"the destination's vectors have {have[0]} dimensions and the rows {row['value']}:"
                    " open the destination with the source's dimensions"
                )
        await conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (row["key"], row["value"]),
        )


async def _raise_sequence(conn: aiosqlite.Connection, table: str, at_least: int) -> None:
    """Move the table's AUTOINCREMENT counter to `at_least` unless it is already past it."""
    cur = await conn.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?", (at_least, table))
    if cur.rowcount == 0:
        await conn.execute("INSERT INTO sqlite_sequence(name, seq) VALUES (?, ?)", (table, at_least))

"""SQLite's part of a re-embedding (engine/storage/sql/reembed.py runs it): vectors staged as
float32 blobs, and the vec0 table rebuilt at the new width from the staged vectors, its metadata
columns copied, inside the switch's one transaction (which holds SQLite's write lock)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlite_vec

from ..sql.vector_swap import STAGING, VectorSwap
from .schema import VEC_COLUMNS, create_vec_table


class SqliteVectorSwap(VectorSwap):
    id_type, vector_type = "INTEGER", "BLOB"

    async def stage(self, conn: Any, rows: Sequence[tuple[int, list[float]]]) -> None:
        await conn.executemany(
            f"INSERT OR REPLACE INTO {STAGING}(knowledge_id, embedding)"
            " SELECT ?, ? WHERE EXISTS (SELECT 1 FROM knowledge WHERE id = ?)",
            [(kid, sqlite_vec.serialize_float32(vec), kid) for kid, vec in rows],
        )

    async def hold_writes(self, conn: Any) -> None:
        """Nothing to do: the switch's transaction holds SQLite's write lock (BEGIN IMMEDIATE)."""

    async def swap(self, conn: Any, width: int) -> None:
        """vec0 tables have a fixed width: copy the rows with their staged vectors aside, create
        the table anew at `width`, and copy them back."""
        await conn.execute("DROP TABLE IF EXISTS reembed_copy")
        await conn.execute(
            "CREATE TABLE reembed_copy AS SELECT v.knowledge_id, v.user_id, s.embedding, v.status, v.valid_from,"
            f" v.valid_to, v.created, v.expired FROM knowledge_vec v JOIN {STAGING} s"
            " ON s.knowledge_id = v.knowledge_id"
        )
        await conn.execute("DROP TABLE knowledge_vec")
        await conn.execute(create_vec_table(width))
        await conn.execute(f"INSERT INTO knowledge_vec({VEC_COLUMNS}) SELECT {VEC_COLUMNS} FROM reembed_copy")
        await conn.execute("DROP TABLE reembed_copy")

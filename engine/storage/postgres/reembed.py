"""PostgreSQL's part of a re-embedding (engine/storage/sql/reembed.py runs it): vectors staged in
a `vector` column, and swapped in by one UPDATE of the fact rows (`knowledge.embedding` has no
fixed width, so nothing is re-created), with the fact table held against writers meanwhile."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..sql.vector_swap import STAGING, VectorSwap


class PostgresVectorSwap(VectorSwap):
    id_type, vector_type = "BIGINT", "vector"

    async def stage(self, conn: Any, rows: Sequence[tuple[int, list[float]]]) -> None:
        await conn.executemany(
            f"INSERT INTO {STAGING}(knowledge_id, embedding) SELECT CAST(? AS BIGINT), CAST(? AS vector)"
            " WHERE EXISTS (SELECT 1 FROM knowledge WHERE id = ?)"
            " ON CONFLICT (knowledge_id) DO UPDATE SET embedding = EXCLUDED.embedding",
            [(kid, list(vec), kid) for kid, vec in rows],
        )

    async def hold_writes(self, conn: Any) -> None:
        # transactions run at once here: a fact inserted during the switch would keep the old width
        await conn.execute("LOCK TABLE knowledge IN SHARE ROW EXCLUSIVE MODE")

    async def swap(self, conn: Any, width: int) -> None:
        del width  # the column takes any width; meta records it
        await conn.execute(
            f"UPDATE knowledge k SET embedding = s.embedding FROM {STAGING} s WHERE s.knowledge_id = k.id"
        )

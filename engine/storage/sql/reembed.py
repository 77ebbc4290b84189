"""Moving a store to another embedder, the same procedure on both backends (`memdesk reembed`).

New vectors are staged in `reembed_staging` (knowledge_id -> vector), one transaction per batch,
each also writing meta `reembed_last_id`, so an interrupted run resumes where it stopped and the
store keeps answering with its old vectors meanwhile. The switch is ONE transaction: facts still
without a staged vector are embedded in it, the backend swaps the staged vectors in
(`VectorSwap.swap`), meta names the new embedder, the staging table is dropped, and one audit row
records the move. Staged rows reference `knowledge(id) ON DELETE CASCADE`: erasing a user midway
removes their staged vectors too. What differs per backend (the staging table's types, how a
vector is written, how the vectors are swapped) is a `VectorSwap` of the backend's own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...embedders import Embedder, embedder_name
from ...models import ReembedReport
from ..base import Store
from .core import fetchall, recorded_embedder
from .vector_swap import STAGING, VectorSwap

Progress = Callable[[int, int], None]


async def _count(conn: Any, sql: str) -> int:
    [row] = await fetchall(conn, sql)
    return int(row[0])


async def reembed_store(
    store: Store,
    swap: VectorSwap,
    embedder: Embedder,
    *,
    actor: str,
    now: Callable[[], int],
    batch_size: int,
    progress: Progress | None,
) -> ReembedReport:
    """Stage every fact's new vector (resumable), then swap them in with one transaction."""
    target, width = embedder_name(embedder), embedder.dimensions
    target_key = f"{target}:{width}"
    async with store.transaction() as tx:
        conn = tx.conn
        source, source_width = await recorded_embedder(tx)
        pending = await tx.meta_value("reembed_target")
        if (source, source_width) == (target, width):
            # already there; an interrupted move elsewhere is abandoned (its staged vectors dropped)
            await conn.execute(f"DROP TABLE IF EXISTS {STAGING}")
            await conn.execute("DELETE FROM meta WHERE key IN ('reembed_target', 'reembed_last_id')")
            return ReembedReport(source, source_width, target, width, 0, 0, None)
        if pending != target_key:  # nothing staged, or staged by another target: start over
            await conn.execute(f"DROP TABLE IF EXISTS {STAGING}")
            await conn.execute(swap.staging_ddl)
            await tx.set_meta("reembed_target", target_key)
            await tx.set_meta("reembed_last_id", 0)
        last = int(await tx.meta_value("reembed_last_id") or 0)
        done = await _count(conn, f"SELECT count(*) FROM {STAGING}")
        total = await _count(conn, "SELECT count(*) FROM knowledge")
    resumed_at = done
    if progress:
        progress(done, total)
    while True:
        async with store.reading() as tx:
            rows = await fetchall(
                tx.conn, "SELECT id, statement FROM knowledge WHERE id > ? ORDER BY id LIMIT ?", (last, batch_size)
            )
        if not rows:
            break
        vectors = await embedder.embed([r[1] for r in rows])
        async with store.transaction() as tx:
            await swap.stage(tx.conn, [(int(r[0]), v) for r, v in zip(rows, vectors, strict=True)])
            last = int(rows[-1][0])
            await tx.set_meta("reembed_last_id", last)
            done = await _count(tx.conn, f"SELECT count(*) FROM {STAGING}")
            total = await _count(tx.conn, "SELECT count(*) FROM knowledge")
        if progress:
            progress(done, total)

    async with store.transaction() as tx:
        conn = tx.conn
        await swap.hold_writes(conn)
        stragglers = await fetchall(
            conn,
            f"SELECT id, statement FROM knowledge k WHERE NOT EXISTS"
            f" (SELECT 1 FROM {STAGING} s WHERE s.knowledge_id = k.id) ORDER BY id",
        )
        if stragglers:
            vectors = await embedder.embed([r[1] for r in stragglers])
            await swap.stage(conn, [(int(r[0]), v) for r, v in zip(stragglers, vectors, strict=True)])
        facts = await _count(conn, f"SELECT count(*) FROM {STAGING}")
        await swap.swap(conn, width)
        await conn.execute(f"DROP TABLE {STAGING}")
        await tx.set_meta("embedder", target)
        await tx.set_meta("embedding_dimensions", width)
        await conn.execute("DELETE FROM meta WHERE key IN ('reembed_target', 'reembed_last_id')")
        audit_id = await tx.audit(
            at=now(),
            actor=actor,
            action="reembed",
            user_id="",
            entity="store",
            entity_id=None,
            before={"embedder": source, "dimensions": source_width},
            after={"embedder": target, "dimensions": width, "facts": facts, "resumed_at": resumed_at},
        )
    if progress:
        progress(facts, facts)
    return ReembedReport(source, source_width, target, width, facts, resumed_at, audit_id)

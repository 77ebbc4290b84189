"""Moving a store to another embedder (`memdesk reembed DB [--embedder NAME]`).

A database's vectors are only comparable with query vectors of the same model, so the store records
which embedder built them (meta `embedder`, `embedding_dimensions`) and `Memory` refuses another
one. This module re-embeds every fact, whatever its status (active, superseded, retracted: an
as-of query reads them all), from the statements stored in `knowledge`.

How it survives an interruption (Ctrl-C, a kill, a power cut):
- The new vectors go to a plain staging table, `reembed_staging` (knowledge_id -> float32 blob),
  one transaction per batch, each also writing meta `reembed_last_id`. The live vector table is
  untouched meanwhile, so the store keeps answering with its old embedder while a reembed is
  half done, and a batch is either staged whole or not at all.
- meta `reembed_target` ("name:dimensions") says which embedder the staged vectors come from. Running
  again with the same target resumes after `reembed_last_id`; with another target the staged
  vectors are discarded and it starts over.
- The switch is one transaction: the facts still without a staged vector (written, or given a
  reused id, after their turn) are embedded in it, the vec0 table is re-created at the new width
  (its width is fixed at creation: `schema.create_vec_table`) and filled from the staged vectors
  and the old rows' metadata (user, status, time bounds), meta names the new embedder, the
  staging table is dropped, and ONE audit row records the move.
- Staged rows reference `knowledge(id) ON DELETE CASCADE`: erasing a user midway removes their
  staged vectors with their facts.

The audit row is operational and store-wide: action `reembed`, entity `store`, no entity id, and
`user_id` '' (no user; user ids are never empty), with the old and new embedder in before/after.

Run it while nothing else writes to the store: a process that opened the store before the switch
still holds the old embedder and would write vectors of the old width into the new table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import aiosqlite
import sqlite_vec

from . import store
from .embedders import Embedder, embedder_name
from .memory import Memory, meta_value, recorded_embedder
from .schema import VEC_COLUMNS, create_vec_table
from .timeutil import to_us

STAGING = "reembed_staging"
DEFAULT_BATCH = 256
Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class ReembedReport:
    source: str
    source_dimensions: int | None
    target: str
    dimensions: int
    facts: int  # facts re-embedded by the whole move (0 when the store already used the target)
    resumed_at: int  # facts already staged by an earlier, interrupted run
    audit_id: int | None  # None: nothing to do


async def reembed(
    path: str, embedder: Embedder, *, actor: str, batch_size: int = DEFAULT_BATCH, progress: Progress | None = None,
) -> ReembedReport:
    """Re-embed every fact of the store at `path` with `embedder`, resuming an interrupted run."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    mem = Memory(path, embedder=embedder)
    await mem.open(check_embedder=False)
    try:
        return await _reembed(mem, actor=actor, batch_size=batch_size, progress=progress)
    finally:
        await mem.close()


async def _set_meta(conn: aiosqlite.Connection, key: str, value: str | int) -> None:
    await conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, str(value)))


async def _count(conn: aiosqlite.Connection, sql: str) -> int:
    row = await (await conn.execute(sql)).fetchone()
    return int(row[0])  # type: ignore[index]


async def _reembed(mem: Memory, *, actor: str, batch_size: int, progress: Progress | None) -> ReembedReport:
    embedder = mem.embedder
    target, width = embedder_name(embedder), embedder.dimensions
    target_key = f"{target}:{width}"
    async with mem.db.transaction() as conn:
        source, source_width = await recorded_embedder(conn)
        pending = await meta_value(conn, "reembed_target")
        if (source, source_width) == (target, width):
            # already there; an interrupted move elsewhere is abandoned (its staged vectors dropped)
            await conn.execute(f"DROP TABLE IF EXISTS {STAGING}")
            await conn.execute("DELETE FROM meta WHERE key IN ('reembed_target', 'reembed_last_id')")
            return ReembedReport(source, source_width, target, width, 0, 0, None)
        if pending != target_key:  # nothing staged, or staged by another target: start over
            await conn.execute(f"DROP TABLE IF EXISTS {STAGING}")
            await conn.execute(
                f"CREATE TABLE {STAGING} (knowledge_id INTEGER PRIMARY KEY"
                " REFERENCES knowledge(id) ON DELETE CASCADE, embedding BLOB NOT NULL)"
            )
            await _set_meta(conn, "reembed_target", target_key)
            await _set_meta(conn, "reembed_last_id", 0)
        last = int(await meta_value(conn, "reembed_last_id") or 0)
        done = await _count(conn, f"SELECT count(*) FROM {STAGING}")
        total = await _count(conn, "SELECT count(*) FROM knowledge")
    resumed_at = done
    if progress:
        progress(done, total)
    while True:
        async with mem.db.reading() as conn:
            rows = await (await conn.execute(
                "SELECT id, statement FROM knowledge WHERE id > ? ORDER BY id LIMIT ?", (last, batch_size)
            )).fetchall()
        if not rows:
            break
        vectors = await embedder.embed([r[1] for r in rows])
        async with mem.db.transaction() as conn:
            await _stage(conn, [(r[0], v) for r, v in zip(rows, vectors, strict=True)])
            last = int(rows[-1][0])
            await _set_meta(conn, "reembed_last_id", last)
            done = await _count(conn, f"SELECT count(*) FROM {STAGING}")
            total = await _count(conn, "SELECT count(*) FROM knowledge")
        if progress:
            progress(done, total)

    async with mem.db.transaction() as conn:
        stragglers = await (await conn.execute(
            f"SELECT id, statement FROM knowledge k WHERE NOT EXISTS"
            f" (SELECT 1 FROM {STAGING} s WHERE s.knowledge_id = k.id) ORDER BY id"
        )).fetchall()
        if stragglers:
            vectors = await embedder.embed([r[1] for r in stragglers])
            await _stage(conn, [(r[0], v) for r, v in zip(stragglers, vectors, strict=True)])
        facts = await _count(conn, f"SELECT count(*) FROM {STAGING}")
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
        await conn.execute(f"DROP TABLE {STAGING}")
        await _set_meta(conn, "embedder", target)
        await _set_meta(conn, "embedding_dimensions", width)
        await conn.execute("DELETE FROM meta WHERE key IN ('reembed_target', 'reembed_last_id')")
        audit_id = await store.audit(
            conn, at=to_us(mem.now()), actor=actor, action="reembed", user_id="", entity="store",  # type: ignore[arg-type]
            entity_id=None, before={"embedder": source, "dimensions": source_width},
            after={"embedder": target, "dimensions": width, "facts": facts, "resumed_at": resumed_at},
        )
    if progress:
        progress(facts, facts)
    return ReembedReport(source, source_width, target, width, facts, resumed_at, audit_id)


async def _stage(conn: aiosqlite.Connection, rows: list[tuple[int, list[float]]]) -> None:
    """Stage vectors of facts that still exist (one may have been erased since it was read)."""
    await conn.executemany(
        f"INSERT OR REPLACE INTO {STAGING}(knowledge_id, embedding)"
        " SELECT ?, ? WHERE EXISTS (SELECT 1 FROM knowledge WHERE id = ?)",
        [(kid, sqlite_vec.serialize_float32(vec), kid) for kid, vec in rows],
    )

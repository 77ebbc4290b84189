"""Re-embedding a SQLite store: new vectors are staged in a table of their own, batch by batch
(an interrupted run resumes from `meta.reembed_last_id`), then the vec0 table is rebuilt at the
new width and swapped in, with the meta rows and the audit row, in ONE transaction."""

from __future__ import annotations

from collections.abc import Callable

import aiosqlite
import sqlite_vec

from ...embedders import Embedder, embedder_name
from ...models import ReembedReport
from ..sql.tx import recorded_embedder
from .schema import VEC_COLUMNS, create_vec_table
from .store import SqliteStore

STAGING = "reembed_staging"
Progress = Callable[[int, int], None]


async def _set_meta(conn: aiosqlite.Connection, key: str, value: str | int) -> None:
    await conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, str(value)))


async def _count(conn: aiosqlite.Connection, sql: str) -> int:
    row = await (await conn.execute(sql)).fetchone()
    return int(row[0])  # type: ignore[index]


async def reembed_store(
    store: SqliteStore, embedder: Embedder, *, actor: str, now: Callable[[], int], batch_size: int,
    progress: Progress | None,
) -> ReembedReport:
    """Stage every fact's new vector in a table of its own (resumable: a run that stops keeps what
    it staged), then swap the vector table in one transaction."""
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
            await conn.execute(
                f"CREATE TABLE {STAGING} (knowledge_id INTEGER PRIMARY KEY"
                " REFERENCES knowledge(id) ON DELETE CASCADE, embedding BLOB NOT NULL)"
            )
            await _set_meta(conn, "reembed_target", target_key)
            await _set_meta(conn, "reembed_last_id", 0)
        last = int(await tx.meta_value("reembed_last_id") or 0)
        done = await _count(conn, f"SELECT count(*) FROM {STAGING}")
        total = await _count(conn, "SELECT count(*) FROM knowledge")
    resumed_at = done
    if progress:
        progress(done, total)
    while True:
        async with store.reading() as tx:
            conn = tx.conn
            rows = await (await conn.execute(
                "SELECT id, statement FROM knowledge WHERE id > ? ORDER BY id LIMIT ?", (last, batch_size)
            )).fetchall()
        if not rows:
            break
        vectors = await embedder.embed([r[1] for r in rows])
        async with store.transaction() as tx:
            conn = tx.conn
            await _stage(conn, [(r[0], v) for r, v in zip(rows, vectors, strict=True)])
            last = int(rows[-1][0])
            await _set_meta(conn, "reembed_last_id", last)
            done = await _count(conn, f"SELECT count(*) FROM {STAGING}")
            total = await _count(conn, "SELECT count(*) FROM knowledge")
        if progress:
            progress(done, total)

    async with store.transaction() as tx:
        conn = tx.conn
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
        audit_id = await tx.audit(at=now(), actor=actor, action="reembed", user_id="", entity="store",
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

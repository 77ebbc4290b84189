"""The PostgreSQL backend's own parts, against the session's real server (tests/pg.py): the `?`
rewrite, migrations, the append-only audit trigger, NOTIFY on new candidates, dump/load with ids
kept, and erasure's compaction leaving no deleted text in the table files."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from engine.errors import ConfigurationError
from engine.storage import masked
from engine.storage.postgres import schema
from engine.storage.postgres.connection import PgConn, _status_count, connect, to_dollar
from engine.storage.postgres.store import PostgresStore
from engine.storage.postgres.tx import PostgresTx


@asynccontextmanager
async def _sql(opened: AbstractAsyncContextManager[PostgresTx]) -> AsyncIterator[PgConn]:
    """The bare PgConn of a store's transaction or read: these tests speak SQL, not engine operations."""
    async with opened as tx:
        yield tx.conn


async def _open(url: str) -> PostgresStore:
    return await PostgresStore.open(url, dimensions=3)


def test_placeholders_outside_literals_only() -> None:
    assert to_dollar("SELECT ? , ?") == "SELECT $1 , $2"
    assert to_dollar("SELECT '?', \"a?\", ? -- ?\n, /* ? */ ?") == "SELECT '?', \"a?\", $1 -- ?\n, /* ? */ $2"
    assert to_dollar("SELECT 'it''s ?', ?") == "SELECT 'it''s ?', $1"
    assert to_dollar("SELECT 1") == "SELECT 1"
    # SQLite's LIKE ignores case, PostgreSQL's does not: ILIKE, outside literals only
    assert to_dollar("SELECT 1 WHERE s LIKE ? ESCAPE '\\' AND t = 'LIKE' AND unlike = 1") == (
        "SELECT 1 WHERE s ILIKE $1 ESCAPE '\\' AND t = 'LIKE' AND unlike = 1"
    )


def test_status_counts() -> None:
    assert _status_count("INSERT 0 5") == 5
    assert _status_count("UPDATE 3") == 3
    assert _status_count("DELETE 0") == 0
    assert _status_count("CREATE TABLE") == -1


def test_masked_url() -> None:
    assert masked("postgresql://app:s3cret@db.example:5432/memdesk") == "postgresql://app:***@db.example:5432/memdesk"
    assert masked("postgresql://app@db/memdesk") == "postgresql://app@db/memdesk"


async def test_cursor_api_rowcount_and_rows(pg_url: str) -> None:
    store = await _open(pg_url)
    try:
        async with _sql(store.transaction()) as conn:
            cur = await conn.execute(
                "INSERT INTO messages(user_id, role, content, at) VALUES (?, 'user', 'a ? b', ?), (?, 'user', 'c', ?)"
                " RETURNING id",
                ("u1", 1, "u1", 2),
            )
            assert cur.rowcount == 2
            ids = [r["id"] for r in await cur.fetchall()]
            cur = await conn.execute("UPDATE messages SET at = at + 1 WHERE user_id = ?", ("u1",))
            assert cur.rowcount == 2
            cur = await conn.execute("UPDATE messages SET at = 0 WHERE user_id = ?", ("nobody",))
            assert cur.rowcount == 0
            # executemany counts what each UPDATE touched, as sqlite3's rowcount does
            cur = await conn.executemany("UPDATE messages SET at = at WHERE id = ?", [(ids[0],), (-1,), (ids[1],)])
            assert cur.rowcount == 2
            found = await (await conn.execute("SELECT id FROM messages WHERE content LIKE ?", ("A ?%",))).fetchall()
            assert [r[0] for r in found] == [ids[0]]
            row = await (await conn.execute("SELECT id, content FROM messages WHERE id = ?", (ids[0],))).fetchone()
            assert row is not None and row[1] == "a ? b" and row["id"] == ids[0]
        async with _sql(store.reading()) as conn:
            rows = await (await conn.execute("SELECT at FROM messages ORDER BY id")).fetchall()
        assert [r[0] for r in rows] == [2, 3]
    finally:
        await store.close()


async def test_transaction_rolls_back_on_error(pg_url: str) -> None:
    store = await _open(pg_url)
    try:
        with pytest.raises(RuntimeError):
            async with _sql(store.transaction()) as conn:
                await conn.execute("INSERT INTO meta(key, value) VALUES ('gone', 'x')")
                raise RuntimeError("boom")
        async with _sql(store.transaction()) as conn:  # positive control: a clean exit commits
            await conn.execute("INSERT INTO meta(key, value) VALUES ('kept', 'x')")
        async with _sql(store.reading()) as conn:
            keys = {r[0] for r in await (await conn.execute("SELECT key FROM meta")).fetchall()}
        assert "kept" in keys and "gone" not in keys
    finally:
        await store.close()


async def test_reading_is_read_only(pg_url: str) -> None:
    store = await _open(pg_url)
    try:
        with pytest.raises(asyncpg.exceptions.ReadOnlySQLTransactionError):
            async with _sql(store.reading()) as conn:
                await conn.execute("INSERT INTO meta(key, value) VALUES ('x', 'y')")
    finally:
        await store.close()


async def test_migrations_once_and_newer_schema_refused(pg_url: str) -> None:
    # several processes opening a new database at once migrate it once
    conns = [await connect(pg_url, vector=False) for _ in range(3)]
    try:
        befores = await asyncio.gather(*(schema.migrate(c, 3) for c in conns))
        assert sorted(befores) == [0, schema.SCHEMA_VERSION, schema.SCHEMA_VERSION]
        rows = await conns[0].fetch("SELECT version FROM schema_migrations ORDER BY version")
        assert [r[0] for r in rows] == sorted(schema.MIGRATIONS)  # gaps are numbers other branches hold
        assert await conns[0].fetchval("SELECT value FROM meta WHERE key = 'embedding_dimensions'") == "3"
        await conns[0].execute("INSERT INTO schema_migrations(version) VALUES (99)")
    finally:
        for c in conns:
            await c.close()
    with pytest.raises(ConfigurationError, match="schema version 99"):
        await _open(pg_url)


async def test_audit_log_append_only_but_redactable(pg_url: str) -> None:
    store = await _open(pg_url)
    try:
        async with _sql(store.transaction()) as conn:
            cur = await conn.execute(
                "INSERT INTO audit_log(at, actor, action, user_id, entity, entity_id, before, after, reason, note)"
                " VALUES (1, 'ann', 'approve', 'u1', 'candidate', 7, '{\"s\": 1}', '{}', 'why', 'n') RETURNING id"
            )
            aid = (await cur.fetchone())[0]  # type: ignore[index]
        for bad in (
            "UPDATE audit_log SET actor = 'mallory' WHERE id = ?",
            "DELETE FROM audit_log WHERE id = ?",
            # a redaction that also rewrites who or what is refused like any other update
            "UPDATE audit_log SET before = NULL, after = NULL, reason = NULL, note = NULL, redacted_at = 5,"
            " action = 'reject' WHERE id = ?",
        ):
            with pytest.raises(asyncpg.exceptions.IntegrityConstraintViolationError, match="append-only"):
                async with _sql(store.transaction()) as conn:
                    await conn.execute(bad, (aid,))
        with pytest.raises(asyncpg.exceptions.IntegrityConstraintViolationError, match="append-only"):
            async with _sql(store.transaction()) as conn:
                await conn.execute("TRUNCATE audit_log")
        redact = (
            "UPDATE audit_log SET before = NULL, after = NULL, reason = NULL, note = NULL, redacted_at = ? WHERE id = ?"
        )
        async with _sql(store.transaction()) as conn:  # erasure's redaction: allowed, once
            assert (await conn.execute(redact, (9, aid))).rowcount == 1
        with pytest.raises(asyncpg.exceptions.IntegrityConstraintViolationError):
            async with _sql(store.transaction()) as conn:
                await conn.execute(redact, (10, aid))
        async with _sql(store.reading()) as conn:
            row = await (
                await conn.execute("SELECT actor, before, redacted_at FROM audit_log WHERE id = ?", (aid,))
            ).fetchone()
        assert tuple(row) == ("ann", None, 9)  # type: ignore[arg-type]
    finally:
        await store.close()


async def test_new_candidates_notify_after_commit_only(pg_url: str) -> None:
    store = await _open(pg_url)
    got: list[str] = []
    stop = await store.subscribe(schema.NOTIFY_CHANNEL, got.append)
    insert = "INSERT INTO candidates(user_id, statement, key, kind, created_at) VALUES (?, 's', 'k', 'new', 1)"
    try:
        with pytest.raises(RuntimeError):
            async with _sql(store.transaction()) as conn:
                await conn.execute(insert, ("rolled-back",))
                raise RuntimeError("abort")
        async with _sql(store.transaction()) as conn:
            await conn.executemany(insert, [("alice",), ("bob",), ("alice",)])
        for _ in range(50):
            if len(got) >= 2:
                break
            await asyncio.sleep(0.02)
        assert sorted(got) == ["alice", "bob"]
        await stop()
        async with _sql(store.transaction()) as conn:
            await conn.execute(insert, ("carol",))
        await asyncio.sleep(0.1)
        assert "carol" not in got  # unsubscribed
    finally:
        await store.close()


async def test_a_lost_listening_connection_is_opened_again(pg_url: str) -> None:
    """An administrator ends the listening session (as a server restart would): the subscription
    opens a new connection, says "" (notifications may have been missed), and new candidates are
    announced again. Control: before that, and after stop(), as usual."""
    store = await _open(pg_url)
    got: list[str] = []
    stop = await store.subscribe(schema.NOTIFY_CHANNEL, got.append)
    insert = "INSERT INTO candidates(user_id, statement, key, kind, created_at) VALUES (?, 's', 'k', 'new', 1)"
    listening = (
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
        " AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()"
    )

    async def until(condition: Callable[[], bool]) -> None:
        for _ in range(200):
            if condition():
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"not reached; got {got}")

    try:
        async with _sql(store.transaction()) as conn:
            await conn.execute(insert, ("before",))
        await until(lambda: got == ["before"])
        async with _sql(store.transaction()) as conn:
            [(pid,)] = await conn.execute_fetchall(listening)
            await conn.execute("SELECT pg_terminate_backend(?)", (pid,))
        await until(lambda: "" in got)
        async with _sql(store.transaction()) as conn:
            [(new_pid,)] = await conn.execute_fetchall(listening)
            assert new_pid != pid
            await conn.execute(insert, ("after",))
        await until(lambda: "after" in got)
        assert got == ["before", "", "after"]
        await stop()
        async with _sql(store.transaction()) as conn:
            assert await conn.execute_fetchall(listening) == []
            await conn.execute(insert, ("stopped",))
        await asyncio.sleep(0.2)
        assert "stopped" not in got
    finally:
        await store.close()


async def _fill(store: PostgresStore) -> None:
    """Rows whose references point forward in TABLES order: a message into a later-loaded
    episode, candidate <-> fact, and a fact superseded by a later fact."""
    async with _sql(store.transaction()) as conn:
        await conn.execute(
            "INSERT INTO episodes(id, user_id, title, narrative, created_at) VALUES (5, 'alice', 't', 'n', 1)"
        )
        await conn.execute(
            "INSERT INTO messages(id, user_id, role, content, at, episode_id)"
            " VALUES (3, 'alice', 'user', 'I moved to Porto', 1, 5)"
        )
        await conn.execute(
            "INSERT INTO candidates(id, user_id, statement, key, kind, created_at, status)"
            " VALUES (10, 'alice', 'Lives in Lisbon', 'lisbon', 'new', 1, 'approved')"
        )
        await conn.execute(
            "INSERT INTO knowledge(id, user_id, statement, key, created_at, created_by, embedding, search,"
            " candidate_id) VALUES (20, 'alice', 'Lives in Lisbon', 'lisbon', 1, 'ann', '[1,0,0]', '', 10),"
            " (21, 'alice', 'Lives in Porto', 'porto', 2, 'ann', '[0,1,0]', '', NULL)"
        )
        await conn.execute(
            "UPDATE knowledge SET status = 'superseded', expired_at = 2, superseded_by = 21 WHERE id = 20"
        )
        await conn.execute("UPDATE candidates SET knowledge_id = 20 WHERE id = 10")
        await conn.execute(
            "INSERT INTO audit_log(id, at, actor, action, user_id, entity, entity_id)"
            " VALUES (40, 1, 'ann', 'approve', 'alice', 'candidate', 10)"
        )


async def test_dump_and_load_keep_ids_and_references(pg_server: Any) -> None:
    with pg_server.database() as src_url, pg_server.database() as dst_url:
        src, dst = await _open(src_url), await _open(dst_url)
        try:
            await _fill(src)
            assert await dst.is_empty() and not await src.is_empty()
            dumped: dict[str, list[dict[str, Any]]] = {}
            for table in src.TABLES:
                async for rows in src.dump(table, batch=1):  # one row per load: every forward reference held
                    dumped.setdefault(table, []).extend(rows)
                    await dst.load(table, rows)
            assert dst.unresolved_references() == {}
            assert await dst.counts() == await src.counts()
            assert dumped["knowledge"][0]["embedding"] == [1.0, 0.0, 0.0]
            assert "search" not in dumped["knowledge"][0]
            for table in src.TABLES:
                again = [r async for batch in dst.dump(table) for r in batch]
                assert again == dumped.get(table, []), table
            async with _sql(dst.transaction()) as conn:
                # the identity sequences moved past the loaded ids
                cur = await conn.execute(
                    "INSERT INTO episodes(user_id, title, narrative, created_at)"
                    " VALUES ('bob', 't', 'n', 1) RETURNING id"
                )
                assert (await cur.fetchone())[0] == 6  # type: ignore[index]
                # the search vector was rebuilt from the statement
                cur = await conn.execute("SELECT id FROM knowledge WHERE search @@ to_tsquery('simple', 'porto')")
                assert [r[0] for r in await cur.fetchall()] == [21]
        finally:
            await src.close()
            await dst.close()


async def test_a_reference_that_never_resolves_is_reported(pg_url: str) -> None:
    store = await _open(pg_url)
    try:
        await store.load(
            "messages", [{"id": 1, "user_id": "u", "role": "user", "content": "x", "at": 1, "episode_id": 99}]
        )
        assert store.unresolved_references() == {"messages.episode_id": 1}
    finally:
        await store.close()


def _file_holds(data_dir: Path, relpaths: list[str], needle: bytes) -> bool:
    found = False
    for rel in relpaths:
        for path in data_dir.glob(rel + "*"):
            if path.name.split(".")[0].split("_")[0] == Path(rel).name and needle in path.read_bytes():
                found = True
    return found


async def test_compact_leaves_no_deleted_text_in_table_files(pg_url: str, pg_server: Any, pg_quiet: None) -> None:
    """A deleted row's text stays in the table's file after a plain DELETE (the positive control),
    and is gone from every file of the table and its indexes after compact()."""
    import os

    if os.environ.get("MEMDESK_TEST_PG_URL"):
        pytest.skip("reads the server's data files: only with the session's own pgserver")
    store = await _open(pg_url)
    secret = "zq-erased-secret-7781"
    try:
        async with _sql(store.transaction()) as conn:
            await conn.execute("INSERT INTO messages(user_id, role, content, at) VALUES ('u', 'user', ?, 1)", (secret,))
            await conn.execute("INSERT INTO messages(user_id, role, content, at) VALUES ('v', 'user', 'kept', 1)")
        async with _sql(store.transaction()) as conn:
            await conn.execute("DELETE FROM messages WHERE user_id = 'u'")
        async with store.pool.acquire() as raw:
            await raw.execute("CHECKPOINT")
            data_dir = Path(await raw.fetchval("SHOW data_directory"))
            rel = [await raw.fetchval("SELECT pg_relation_filepath('messages')")]
        assert _file_holds(data_dir, rel, secret.encode())
        assert await store.compact()
        async with store.pool.acquire() as raw:
            await raw.execute("CHECKPOINT")
            rels = [
                r[0]
                for r in await raw.fetch(
                    "SELECT pg_relation_filepath(c.oid) FROM pg_class c WHERE c.oid = 'messages'::regclass"
                    " OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = 'messages'::regclass)"
                    " OR c.oid = (SELECT reltoastrelid FROM pg_class WHERE oid = 'messages'::regclass)"
                )
                if r[0]
            ]
        assert not _file_holds(data_dir, rels, secret.encode())
        async with _sql(store.reading()) as conn:
            assert [r[0] for r in await (await conn.execute("SELECT content FROM messages")).fetchall()] == ["kept"]
    finally:
        await store.close()


# -- PostgresTx: what SQLite's single writer gave for free ----------------------------------------


async def test_two_processes_deciding_one_candidate_decide_it_once(pg_url: str) -> None:
    """Two Memory objects (two pools, as two hosts would have) have two reviewers reject the same
    candidate at once: one decision lands, the other is told it was already decided; one decision
    audit row, one tombstone. Positive control: a second candidate decided by one of them alone
    succeeds."""
    from engine import Memory
    from engine.errors import AlreadyDecidedError

    async with Memory(pg_url) as a, Memory(pg_url) as b:
        first = await a.queue_candidate("ana", "Ana keeps bees", actor="t")
        second = await a.queue_candidate("ana", "Ana plays chess", actor="t")
        outcomes = await asyncio.gather(
            a.review.reject(first, "ann", "not said"),
            b.review.reject(first, "bob", "not true"),
            return_exceptions=True,
        )
        errors = [o for o in outcomes if isinstance(o, BaseException)]
        assert len(errors) == 1 and isinstance(errors[0], AlreadyDecidedError), outcomes
        decided = [e for e in await a.history("ana") if e.entity == "candidate" and e.entity_id == first]
        assert len([e for e in decided if e.action == "reject"]) == 1
        assert len(await a.tombstones("ana")) == 1
        assert (await b.review.approve(second, "bob")).statement == "Ana plays chess"


async def test_episode_claims_skip_rows_another_worker_is_claiming(pg_url: str) -> None:
    """claim_episodes takes its rows FOR UPDATE SKIP LOCKED: while one transaction holds an
    episode's row, another worker's claim passes it by at once instead of waiting; once that
    transaction ends the episode can be claimed (the positive control)."""
    from engine.storage.postgres.tx import PostgresTx

    store = await PostgresStore.open(pg_url, dimensions=3)
    try:
        async with store.transaction() as tx:
            await tx.conn.execute(
                "INSERT INTO episodes(id, user_id, title, narrative, start_at, created_at)"
                " VALUES (1, 'ana', 't', 'n', 5, 1), (2, 'ana', 't', 'n', NULL, 1)"
            )
        async with store.transaction() as holder:
            assert isinstance(holder, PostgresTx)
            await holder.conn.execute("SELECT id FROM episodes WHERE id = 1 FOR UPDATE")
            async with store.pool.acquire() as raw, raw.transaction():
                other = PostgresTx(PgConn(raw), {}, writing=False)  # no user lock: the holder keeps it
                taken = await asyncio.wait_for(other.claim_episodes("ana", "w2", 10, 20), timeout=5)
                assert taken == [2]
        async with store.transaction() as tx:
            assert await tx.claim_episodes("ana", "w3", 10, 20) == [1]  # free again; 2 is leased by w2
            assert await tx.claim_episodes("ana", "w2", 10, 30) == [2]  # its own lease is renewed
    finally:
        await store.close()


async def test_text_statistics_rows_follow_inserts_and_deletes(pg_url: str) -> None:
    """knowledge_stats (migration 2) holds exactly what counting the user's facts gives, after
    single and bulk inserts, an undo-style delete and an erasure (whose user's row goes)."""
    from engine import Memory
    from engine.embedders import HashingEmbedder

    counted = (
        "SELECT user_id, count(*), max(id), sum(length(trim(statement))"
        " - length(replace(trim(statement), ' ', '')) + 1) FROM knowledge GROUP BY user_id ORDER BY 1"
    )
    kept = "SELECT user_id, docs, top_id, words FROM knowledge_stats ORDER BY 1"
    async with Memory(pg_url, embedder=HashingEmbedder()) as mem:
        first = await mem.add_knowledge("ana", "Ana keeps  bees", actor="t")
        await mem.add_knowledge_many("ana", ["Ana plays chess", "Ana  likes green tea daily"], actor="t")
        await mem.add_knowledge_many("bob", ["Bob rows"], actor="t")
        async with mem.store.reading() as tx:
            assert (
                [tuple(r) for r in await tx.conn.execute_fetchall(kept)]
                == [tuple(r) for r in await tx.conn.execute_fetchall(counted)]
                == [("ana", 3, 3, 4 + 3 + 6), ("bob", 1, 4, 2)]
            )  # SqlTx's measure: spaces + 1
        async with mem.store.transaction() as tx:
            await tx.delete_knowledge(first.id)
        async with mem.store.reading() as tx:
            assert [tuple(r) for r in await tx.conn.execute_fetchall(kept)] == [("ana", 2, 3, 9), ("bob", 1, 4, 2)]
            stats = await tx.user_text_stats("ana", ["chess"])
            assert (stats.docs, stats.top, stats.tokens, stats.terms) == (2, 3, 9, {"chess": 1})
        from engine.erase import erase_user

        await erase_user(mem.ctx, "ana", "dpo")
        async with mem.store.reading() as tx:
            assert [tuple(r) for r in await tx.conn.execute_fetchall(kept)] == [("bob", 1, 4, 2)]


async def test_migration_3_gives_every_fact_its_users_scope_lexeme(pg_url: str) -> None:
    """Facts written before migration 3 get the scope lexeme the text arm ANDs into its tsquery,
    computed in SQL exactly as `search_scope` computes it in Python (a non-ASCII id included), so
    the text arm still finds them, for their own user only."""
    from engine import Memory
    from engine.embedders import HashingEmbedder
    from engine.storage.postgres.tx import search_scope

    users = ("ünïcode/user", "bob")
    scoped = "SELECT count(*) FROM knowledge WHERE search @@ $1::tsquery"
    conn = await connect(pg_url, vector=False)
    try:
        await schema.migrate(conn, HashingEmbedder().dimensions, max_version=2)
        for kid, user in enumerate(users, start=1):
            await conn.execute(
                "INSERT INTO knowledge(id, user_id, statement, key, created_at, status, created_by, search)"
                " VALUES ($1, $2, 'Keeps Zebrafinch birds', $3, 1, 'active', 'v2', to_tsvector('simple', $4))",
                kid,
                user,
                f"zebrafinch {kid}",
                "keeps zebrafinch birds",
            )
        # control: at version 2 no row holds a scope lexeme
        assert [await conn.fetchval(scoped, f"'{search_scope(u)}'") for u in users] == [0, 0]
    finally:
        await conn.close()
    async with Memory(pg_url, embedder=HashingEmbedder()) as mem:
        async with mem.store.reading() as tx:
            for user in users:
                assert await tx.conn.execute_fetchall(scoped.replace("$1", "?"), (f"'{search_scope(user)}'",)) == [(1,)]
        for kid, user in enumerate(users, start=1):
            res = await mem.retrieve("zebrafinch", user_id=user, top_k=5)
            assert [(i.knowledge.id, i.text_rank) for i in res.items] == [(kid, 1)]

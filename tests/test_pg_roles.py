"""The README's roles for a team deployment, run as written against the test server: the
application role can do everything reviewers, workers and agents do, and cannot rewrite the audit
log or the schema; the erasure role can erase (and only the owner can compact the files).

The GRANT block is read from README.md itself, so the README cannot drift from what is tested.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from engine import HashingEmbedder, Memory
from engine.erase import erase_user

README = Path(__file__).resolve().parent.parent / "README.md"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
_suffix = itertools.count(1)


def readme_grants() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Running memdesk for a team") :]
    found = re.search(r"```sql\n(.*?)```", section, re.S)
    assert found, "the team section of README.md has no ```sql block"
    return found.group(1)


def as_role(url: str, role: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, f"{role}@{host}", parts.path, parts.query, parts.fragment))


@pytest.fixture
async def roles(pg_url: str) -> AsyncIterator[tuple[str, str, str]]:
    """(owner URL, application URL, erasure URL) on a fresh database whose schema the owner made,
    with the README's GRANTs applied (role names made unique: roles belong to the whole server)."""
    n = next(_suffix)
    app, eraser = f"memdesk_app_{n}_{id(pg_url) % 10_000}", f"memdesk_erase_{n}_{id(pg_url) % 10_000}"
    database = urlsplit(pg_url).path.lstrip("/")
    script = (
        readme_grants()
        .replace("memdesk_erase", eraser)
        .replace("memdesk_app", app)
        .replace("DATABASE memdesk ", f'DATABASE "{database}" ')
    )
    async with Memory(pg_url, embedder=HashingEmbedder(), clock=lambda: T0):
        pass  # the owner (the test server's superuser) creates the schema
    conn = await asyncpg.connect(pg_url)
    try:
        await conn.execute(script)
        yield pg_url, as_role(pg_url, app), as_role(pg_url, eraser)
    finally:
        await conn.execute(f'REASSIGN OWNED BY "{eraser}", "{app}" TO CURRENT_USER')
        await conn.execute(f'DROP OWNED BY "{eraser}", "{app}"')
        await conn.close()
        admin = await asyncpg.connect(pg_url)
        try:
            await admin.execute(f'DROP ROLE IF EXISTS "{eraser}"')
            await admin.execute(f'DROP ROLE IF EXISTS "{app}"')
        finally:
            await admin.close()


async def test_the_application_role_does_the_daily_work(roles: tuple[str, str, str]) -> None:
    _, app_url, _ = roles
    async with Memory(app_url, embedder=HashingEmbedder(), clock=lambda: T0) as mem:
        fact = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")
        cid = await mem.queue_candidate("ana", "Ana keeps bees", actor="agent")
        approved = await mem.review.approve(cid, "rev")
        await mem.review.undo(cid, "rev")  # undo deletes the fact it created: DELETE is granted
        await mem.review.approve(cid, "rev")
        await mem.add_exchange("bob", "I moved to Porto last week.", "Noted.", at=T0)
        await mem.process()
        await mem.retract("ana", fact.id, actor="support", reason="wrong person")
        await mem.team.take_user("ana", "rev")
        found = await mem.retrieve("bees", user_id="ana", top_k=3)
        assert [i.knowledge.statement for i in found.items] == ["Ana keeps bees"]
        assert approved.statement == "Ana keeps bees"
        assert await mem.history("ana")  # the audit log is readable


async def test_the_application_role_cannot_rewrite_the_audit_log_or_the_schema(
    roles: tuple[str, str, str],
) -> None:
    _, app_url, _ = roles
    async with Memory(app_url, embedder=HashingEmbedder(), clock=lambda: T0) as mem:
        await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")
    conn = await asyncpg.connect(app_url)
    try:
        for statement in (
            "UPDATE audit_log SET reason = 'rewritten'",
            "DELETE FROM audit_log",
            "TRUNCATE audit_log",
            "DROP TRIGGER audit_log_no_update ON audit_log",
            "CREATE TABLE sneaky (id int)",
        ):
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await conn.execute(statement)
        assert await conn.fetchval("SELECT count(*) FROM audit_log") >= 1  # positive control: it can read
    finally:
        await conn.close()


async def test_the_erasure_role_erases_and_only_the_owner_compacts(roles: tuple[str, str, str]) -> None:
    owner_url, app_url, erase_url = roles
    async with Memory(app_url, embedder=HashingEmbedder(), clock=lambda: T0) as mem:
        for user in ("ana", "bob"):
            await mem.add_knowledge(user, f"{user} lives in Lisbon", actor="support")
        with pytest.raises(asyncpg.InsufficientPrivilegeError):  # the application role cannot redact
            await erase_user(mem, "ana", actor="dpo")
    async with Memory(erase_url, embedder=HashingEmbedder(), clock=lambda: T0) as mem:
        report = await erase_user(mem, "ana", actor="dpo")
        assert report.knowledge == 1
        assert not report.wal_truncated  # VACUUM FULL needs the tables' owner: reported, not hidden
        assert await mem.knowledge("ana", include_expired=True) == []
    async with Memory(owner_url, embedder=HashingEmbedder(), clock=lambda: T0) as mem:
        report = await erase_user(mem, "bob", actor="dpo")
        assert report.wal_truncated  # the owner's erasure compacts the tables


async def test_settle_vacuums_as_the_owner_and_reports_what_another_role_cannot(
    roles: tuple[str, str, str],
) -> None:
    """`Store.settle()` (after `memdesk migrate` or a bulk import) runs VACUUM ANALYZE on memdesk's
    tables; the application role owns none of them, so it gets False and a warning, not an error."""
    owner_url, app_url, _ = roles
    vacuumed = "SELECT count(*) FROM pg_stat_user_tables WHERE relname = 'knowledge' AND last_vacuum IS NOT NULL"
    async with Memory(app_url, embedder=HashingEmbedder(), clock=lambda: T0) as mem:
        await mem.add_knowledge_many("ana", ["Ana lives in Lisbon", "Ana keeps bees"], actor="import")
        assert await mem.store.settle() is False
    conn = await asyncpg.connect(owner_url)
    try:
        assert await conn.fetchval(vacuumed) == 0
    finally:
        await conn.close()
    async with Memory(owner_url, embedder=HashingEmbedder(), clock=lambda: T0) as mem:
        assert await mem.store.settle() is True
        assert len((await mem.retrieve("bees", user_id="ana", top_k=5)).items) == 2
    conn = await asyncpg.connect(owner_url)
    try:
        for _ in range(50):  # the statistics collector reports asynchronously
            if await conn.fetchval(vacuumed) == 1:
                break
            await asyncio.sleep(0.1)
        assert await conn.fetchval(vacuumed) == 1
    finally:
        await conn.close()

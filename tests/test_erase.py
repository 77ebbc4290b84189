"""Right to erasure: after `erase_user`, no text of that user is left in the database FILE (the
bytes of the db and its WAL are searched), while every other user is untouched. Each absence check
is paired with the same search finding the text before the erasure, so it can fail."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engine import Episode, Extraction, GapItem, Knowledge, Memory
from engine.erase import erase_user
from engine.errors import NotFoundError
from engine.export import export_user
from tests.engine_helpers import sql, sqlite_only

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

# Distinctive words of the user to erase: each must vanish from the file, in any case.
ANA_WORDS = ("Zebrafinch", "Quillhaven", "Marzipanova", "Tristelbury", "Oboeplaying", "Velvetmoss")
ANA_FACTS = {
    "approve": "Ana keeps Zebrafinch birds in Quillhaven",
    "reject": "Ana's sister is Marzipanova",
    "retract": "Ana works at Tristelbury mill",
    "pending": "Ana took up Oboeplaying lessons",
}
BOB_FACT = "Bob grows Lanternleaf tomatoes"


class LineExtractor:
    """Every user line 'FACT: x' is a claim 'x', with the line as evidence."""

    name = "lines"

    async def extract(self, episode: Episode, existing: list[Knowledge]) -> Extraction:
        items = [
            GapItem(m.content[6:], confidence=0.9, evidence=m.content[6:])
            for m in episode.messages
            if m.role == "user" and m.content.startswith("FACT: ")
        ]
        prediction = "; ".join(k.statement for k in existing)
        return Extraction(prediction=prediction, items=items)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def file_bytes(db: Path) -> bytes:
    """The database and its write-ahead log, lowercased (FTS stores terms folded)."""
    data = b""
    for suffix in ("", "-wal"):
        part = Path(f"{db}{suffix}")
        if part.exists():
            data += part.read_bytes()
    return data.lower()


def texts_present(db: Path, texts: list[str]) -> list[str]:
    data = file_bytes(db)
    return [t for t in texts if t.lower().encode() in data]


@pytest.fixture
async def populated(new_target: Callable[[str], str]):
    db = new_target("erase")
    mem = Memory(db, extractor=LineExtractor(), clock=Clock())
    async with mem:
        for statement in ANA_FACTS.values():
            await mem.add_exchange("ana", f"FACT: {statement}", "Noted, Velvetmoss style.", at=T0)
        await mem.add_exchange("bob", f"FACT: {BOB_FACT}", "Good for you.", at=T0)
        report = await mem.process()
        assert report.queued == 5
        by_statement = {c.statement: c for c in await mem.review.pending(limit=100)}
        await mem.review.approve(by_statement[ANA_FACTS["approve"]].id, reviewer="rev")
        await mem.review.reject(by_statement[ANA_FACTS["reject"]].id, reviewer="rev", reason="Marzipanova is a typo")
        retracted = await mem.review.approve(by_statement[ANA_FACTS["retract"]].id, reviewer="rev")
        await mem.retract("ana", retracted.id, actor="support", reason="Tristelbury closed")
        bob_fact = await mem.review.approve(by_statement[BOB_FACT].id, reviewer="rev")
        yield mem, db, bob_fact


@sqlite_only("reads SQLite's database and WAL bytes; PostgreSQL's is test_postgres_store's compact test")
async def test_erasure_leaves_no_text_of_the_user_in_the_file(populated) -> None:
    mem, db, bob_fact = populated
    ana_texts = [*ANA_FACTS.values(), *ANA_WORDS, "Noted, Velvetmoss style."]
    # positive control: before erasure every text is in the file (db or WAL)
    assert texts_present(db, ana_texts) == ana_texts

    report = await erase_user(mem, "ana", actor="dpo")

    assert report.wal_truncated
    assert (report.messages, report.knowledge, report.candidates, report.tombstones) == (8, 2, 4, 2)
    assert report.episodes >= 1 and report.extraction_runs >= 1 and report.audit_redacted > 0
    assert texts_present(db, ana_texts) == []
    assert Path(f"{db}-wal").stat().st_size == 0
    # the other user is intact: text in the file, fact retrievable, audit rows unredacted
    assert texts_present(db, [BOB_FACT, "Good for you."]) == [BOB_FACT, "Good for you."]
    found = await mem.retrieve("Bob tomatoes", user_id="bob")
    assert [i.knowledge.id for i in found.items] == [bob_fact.id]
    bob_audit = await mem.history("bob")
    assert bob_audit and all(e.after is not None or e.before is not None for e in bob_audit)
    assert len(await mem.review.pending(user_id="bob")) == 0


async def test_erased_user_has_no_rows_and_redacted_audit(populated) -> None:
    mem, _db, _ = populated
    before = await mem.history("ana")
    assert before and any(e.after is not None for e in before)  # control: the audit had text
    report = await erase_user(mem, "ana", actor="dpo")

    assert await mem.knowledge("ana", include_expired=True) == []
    assert (await mem.retrieve("Zebrafinch Quillhaven", user_id="ana")).items == []
    assert await mem.tombstones("ana", include_lifted=True) == []
    assert await mem.review.pending(user_id="ana") == []
    assert "ana" not in await mem.users()
    async with sql(mem) as conn:
        rows = await (
            await conn.execute(
                "SELECT id, at, actor, action, before, after, reason, redacted_at FROM audit_log"
                " WHERE user_id = 'ana' ORDER BY id"
            )
        ).fetchall()
    erased, kept = rows[-1], rows[:-1]
    # every earlier row keeps its action and time, loses its text
    # (history leaves out the approvals' second-review draws; the log keeps them, redacted too)
    shown = [r for r in kept if r[3] not in ("policy_sampled", "policy_unsampled")]
    assert [(r[0], r[1], r[2], r[3]) for r in shown] == [(e.id, _us(e.at), e.actor, e.action) for e in before]
    assert len(shown) < len(kept)  # the draws are there
    assert all(r[4] is None and r[5] is None and r[6] is None and r[7] is not None for r in kept)
    # the erasure itself is audited, with counts and no text
    assert (erased[0], erased[2], erased[3]) == (report.audit_id, "dpo", "erase")
    assert erased[6] is None and "Zebrafinch" not in (erased[5] or "")
    assert '"knowledge": 2' in erased[5]


async def test_erasing_an_unknown_or_already_erased_user_is_refused_and_changes_nothing(populated) -> None:
    mem, _db, _ = populated
    with pytest.raises(NotFoundError):
        await erase_user(mem, "nobody", actor="dpo")
    assert await mem.history("nobody") == []
    await erase_user(mem, "ana", actor="dpo")
    audit_rows = len(await mem.history("ana"))
    with pytest.raises(NotFoundError):
        await erase_user(mem, "ana", actor="dpo")
    with pytest.raises(NotFoundError):
        await export_user(mem, "ana")
    assert len(await mem.history("ana")) == audit_rows


async def test_a_failing_erasure_rolls_back_completely(populated, monkeypatch) -> None:
    mem, _db, _ = populated
    from engine.storage import SqlTx

    async def broken_audit(*args: object, **kwargs: object) -> int:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(SqlTx, "audit", broken_audit)
    with pytest.raises(RuntimeError):
        await erase_user(mem, "ana", actor="dpo")
    monkeypatch.undo()
    facts = await mem.knowledge("ana", include_expired=True)
    assert sorted(k.statement for k in facts) == sorted([ANA_FACTS["approve"], ANA_FACTS["retract"]])
    assert [c.statement for c in await mem.review.pending(user_id="ana")] == [ANA_FACTS["pending"]]
    async with sql(mem) as conn:
        row = await (
            await conn.execute("SELECT count(*), count(redacted_at) FROM audit_log WHERE user_id = 'ana'")
        ).fetchone()
    assert row[0] > 0 and row[1] == 0  # audit rows there, none redacted
    assert not [e for e in await mem.history("ana") if e.action == "erase"]


async def test_export_lists_every_version_with_history(populated) -> None:
    mem, _db, _ = populated
    data = await export_user(mem, "ana", include_messages=True)
    assert data["user_id"] == "ana" and data["format"] == "memdesk-export/1"
    statuses = {f["statement"]: f["status"] for f in data["facts"]}
    assert statuses == {ANA_FACTS["approve"]: "active", ANA_FACTS["retract"]: "retracted"}
    retracted = next(f for f in data["facts"] if f["status"] == "retracted")
    assert [e["action"] for e in retracted["history"]] == ["create", "retract"]
    assert retracted["end_reason"] == "Tristelbury closed" and retracted["expired_at"] is not None
    assert retracted["interval"] == "always → now"
    assert {c["status"] for c in data["candidates"]} == {"approved", "rejected", "pending"}
    assert [t["statement"] for t in data["tombstones"]] == [ANA_FACTS["reject"], ANA_FACTS["retract"]]
    assert len(data["messages"]) == 8 and data["counts"]["messages"] == 8
    assert all(e["user_id"] == "ana" for e in data["audit"])
    assert BOB_FACT not in str(data)


def _us(value: datetime) -> int:
    from engine.timeutil import to_us

    return to_us(value)  # type: ignore[return-value]


def _data_files_holding(data_dir: Path, words: list[str]) -> dict[str, list[str]]:
    """word -> files (relative to the data directory) holding it, outside pg_wal, as
    `grep -rl -a WORD $PGDATA --exclude-dir=pg_wal` lists them."""
    found: dict[str, list[str]] = {}
    for path in sorted(data_dir.rglob("*")):
        relative = path.relative_to(data_dir)
        if relative.parts[0] == "pg_wal" or not path.is_file():
            continue
        try:
            data = path.read_bytes()
        except OSError:  # a file the server removed while we walked
            continue
        for word in words:
            if word.encode() in data:
                found.setdefault(word, []).append(str(relative))
    return found


async def test_erasure_on_postgresql_leaves_no_text_in_the_data_directory(pg_url: str, pg_quiet: None) -> None:
    """Issue 18, failure 6: 30 exchanges and 30 facts for the victim among 30 other users,
    VACUUM ANALYZE, erasure, CHECKPOINT: `pg_statistic` (base/<db>/2619) held the victim's
    statements, readable through pg_stats. Paired with the same search finding them before."""
    import os
    import secrets

    if os.environ.get("MEMDESK_TEST_PG_URL"):
        pytest.skip("reads the server's data files: only with the session's own pgserver")
    letters = "bcdfghjklmnpqrstvwxz"  # no vowels: the English stemmer keeps such words whole
    words = ["zx" + "".join(secrets.choice(letters) for _ in range(10)) for _ in range(30)]
    others = ["zx" + "".join(secrets.choice(letters) for _ in range(10)) for _ in range(30)]
    async with Memory(pg_url) as mem:
        for word in words:
            await mem.add_exchange("victim", f"I told you about {word} once", f"Noted {word}.", at=T0)
            await mem.add_knowledge("victim", f"Victim keeps {word} in the shed", actor="seed")
        for i, word in enumerate(others):
            await mem.add_knowledge(f"user{i}", f"User keeps {word} in the shed", actor="seed")
        conn = await asyncpg_connect(pg_url)
        try:
            await conn.execute("VACUUM ANALYZE")
            await conn.execute("CHECKPOINT")
            data_dir = Path(await conn.fetchval("SHOW data_directory"))
            assert set(_data_files_holding(data_dir, words)) == set(words)  # positive control
            report = await erase_user(mem, "victim", actor="dpo")
            assert report.knowledge == 30 and report.messages == 60
            await conn.execute("CHECKPOINT")
            leaks = _data_files_holding(data_dir, words)
            stats = await conn.fetchval(
                "SELECT count(*) FROM pg_stats WHERE array_to_string(most_common_vals, ' ') LIKE '%zx%'"
                " OR array_to_string(histogram_bounds, ' ') LIKE '%zx%'"
                " OR array_to_string(most_common_elems, ' ') LIKE '%zx%'"
            )
            kept = _data_files_holding(data_dir, others)
        finally:
            await conn.close()
    assert leaks == {}, f"{len(leaks)} of the erased words are still in the data directory: {leaks}"
    assert stats == 0
    assert set(kept) == set(others)  # the other users' text is still there (the search can find)


async def asyncpg_connect(url: str):  # type: ignore[no-untyped-def]
    import asyncpg

    return await asyncpg.connect(url)

"""Credentials on every text path (issue 27 item 1): messages, evidence, statements, edits, every
reason and note (reject, flag, forget, correct, retract, lift, queue a discarded statement, a
policy's), `memdesk add`, the MCP tools. Each path carries a secret of its own; afterwards no
byte of any of them is in any file of the store (SQLite: db, WAL, shm; PostgreSQL: the database's
own files and the WAL after CHECKPOINT), while the words around each secret are (the positive
control), and what the store shows instead is the marker.

The one choke point that makes this hold is the storage guard (engine/storage/sql/guard.py); a
statement holding a credential is refused at the door (`check_statement`), with a message that
names the kind and never the value."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from engine import Memory
from engine.errors import UserInputError
from tests.engine_helpers import sql
from tests.test_cli import memdesk
from tests.test_credentials import _stored_text
from tests.test_mcp import call, session

# One secret per path, each with a word beside it that must be stored (the positive control).
SECRETS = {
    "message": ("quillmarsh", "my password is Kq7-mess4ge-Vx"),
    "assistant": ("tundrafig", "noted, your PIN is 80417"),
    "evidence": ("brackenlow", "the door code is 55310"),
    "reject_reason": ("cobaltwren", "password: Rj8-reason-Zt"),
    "reject_note": ("emberholt", "pass: Nt5-note-Qq"),
    "flag_note": ("fennigrove", "the alarm code is 72064"),
    "approve_reason": ("glimmerash", f"token is {'ghp_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8'}"),
    "correct_reason": ("hollowmere", "my pin is 6620"),
    "retract_reason": ("ironbrook", "api_key=Zx9Yw8Vu7Ts6"),
    "forget_reason": ("juniperloch", "mot de passe: Fg4-oubli-Hj"),
    "lift_reason": ("kestrelvale", "mein Passwort ist Lf6-heben-Kk"),
    "discard_reason": ("larchwick", "la contraseña es Dc2-desc-Mm"),
    "policy_reason": ("mosshaven", "my otp is 448210"),
    "mcp_forget": ("nettlecombe", 'the wifi password is "Mf3 forget Nn"'),
}
VALUES = {
    "message": "Kq7-mess4ge-Vx",
    "assistant": "80417",
    "evidence": "55310",
    "reject_reason": "Rj8-reason-Zt",
    "reject_note": "Nt5-note-Qq",
    "flag_note": "72064",
    "approve_reason": "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "correct_reason": "6620",
    "retract_reason": "Zx9Yw8Vu7Ts6",
    "forget_reason": "Fg4-oubli-Hj",
    "lift_reason": "Lf6-heben-Kk",
    "discard_reason": "Dc2-desc-Mm",
    "policy_reason": "448210",
    "mcp_forget": "Mf3 forget Nn",
}
# Short numeric secrets could occur by chance in binary pages: those are checked as text rows only.
_TEXT_ONLY = {"80417", "55310", "72064", "6620", "448210"}


def said(path: str) -> str:
    word, secret = SECRETS[path]
    return f"{word}: {secret}"


async def _files_bytes(target: str, mem: Memory) -> bytes:
    """Every byte the store's files hold: the SQLite files, or (PostgreSQL, after CHECKPOINT) the
    database's own directory and the WAL."""
    if not target.startswith("postgres"):
        return b"".join(p.read_bytes() for p in Path(target).parent.iterdir() if p.name.startswith("memdesk"))
    async with sql(mem) as conn:
        await conn.execute("CHECKPOINT")
        [(data_dir,)] = await (await conn.execute("SHOW data_directory")).fetchall()
        [(oid,)] = await (
            await conn.execute("SELECT oid::text FROM pg_database WHERE datname = current_database()")
        ).fetchall()
    root = Path(str(data_dir))
    out = [p.read_bytes() for p in (root / "base" / str(oid)).iterdir() if p.is_file()]
    out += [p.read_bytes() for p in (root / "pg_wal").iterdir() if p.is_file()]
    return b"".join(out)


async def test_no_path_stores_a_credential(store_target: str, tmp_path: Path) -> None:
    async with Memory(store_target) as mem:
        await mem.add_exchange("ana", f"I live in Porto. {said('message')}", f"OK. {said('assistant')}")
        fact = await mem.add_knowledge("ana", "User plays the cello", actor="support")
        gone = await mem.add_knowledge("ana", "User keeps bees", actor="support")
        other = await mem.add_knowledge("ana", "User sails a dinghy", actor="support")
        cid = await mem.queue_candidate("ana", "User likes figs", evidence=said("evidence"), actor="import")
        await mem.review.reject(cid, "ben", said("reject_reason"), note=said("reject_note"))
        flagged = await mem.queue_candidate("ana", "User likes plums", actor="agent")
        await mem.team.flag(flagged, "ben", said("flag_note"))
        approved = await mem.queue_candidate("ana", "User likes pears", actor="agent")
        await mem.review.approve(approved, "cy", reason=said("approve_reason"))
        await mem.correct("ana", other.id, "User sails a yawl", "ben", said("correct_reason"))
        await mem.retract("ana", gone.id, "ben", said("retract_reason"))
        await mem.request_forget("ana", fact.id, "agent:test", said("forget_reason"))
        [stone] = [t for t in await mem.tombstones("ana") if "bees" in t.statement]
        await mem.lift_tombstone("ana", stone.id, "ben", said("lift_reason"))
        await mem.policies.add("quiet", "ben", slots=("home",))
        await mem.policies.disable("quiet", "ben", reason=said("policy_reason"))
        await mem.process()
        async with mem.store.transaction() as tx:  # what a gate dropped (below the confidence bar)
            await tx.insert_discarded_many(
                [
                    {
                        "user_id": "ana",
                        "statement": "User likes quinces",
                        "gate": "below_confidence",
                        "kind": "new",
                        "created_at": 1,
                    }
                ]
            )
        [dropped] = [d for d in await mem.discarded("ana") if "quinces" in d.statement]
        await mem.queue_discarded(dropped.id, "ben", said("discard_reason"))
    with (tmp_path / "server.err").open("w+") as errlog:
        async with session(store_target, "ana", errlog) as client:
            async with Memory(store_target) as mem:
                kept = await mem.add_knowledge("ana", "User reads Proust", actor="support")
            text, is_error = await call(client, "forget_memory", knowledge_id=kept.id, reason=said("mcp_forget"))
        assert not is_error, text
        errlog.seek(0)
        log = errlog.read()
    async with Memory(store_target) as mem:
        rows = await _stored_text(store_target, mem)
        files = await _files_bytes(store_target, mem)
    for path, (word, _) in SECRETS.items():
        value = VALUES[path]
        # a short number as a number of its own: "6620" also occurs inside a timestamp's microseconds
        assert re.search(rf"(?<!\d){re.escape(value)}(?!\d)", rows) is None, f"{path}: the secret is in a text column"
        assert re.search(rf"(?<!\d){re.escape(value)}(?!\d)", log) is None, f"{path}: the secret is in the MCP log"
        if value not in _TEXT_ONLY:
            assert value.encode() not in files, f"{path}: the secret's bytes are in a file"
        assert word in rows, f"{path}: the words around the secret were lost (positive control)"
    assert "credential removed: password" in rows and "credential removed: PIN" in rows


async def test_a_statement_holding_a_credential_is_refused_at_every_door(store_target: str) -> None:
    async with Memory(store_target) as mem:
        fact = await mem.add_knowledge("ana", "User plays the cello", actor="support")
        cid = await mem.queue_candidate("ana", "User likes figs", actor="agent")
        doors: list[Any] = [
            lambda: mem.add_knowledge("ana", "User's bank PIN is 4931", actor="support"),
            lambda: mem.review.approve(cid, "ben", statement="User's wifi password is hunter2"),
            lambda: mem.correct("ana", fact.id, "User's door code is 1234#", "ben", "typo"),
            lambda: mem.queue_candidate("ana", "User's card is 4111 1111 1111 1111", actor="import"),
        ]
        for door in doors:
            with pytest.raises(UserInputError, match="holds a credential") as caught:
                await door()
            assert "4931" not in str(caught.value) and "hunter2" not in str(caught.value)
        # positive control: the same doors take an ordinary statement
        await mem.add_knowledge("ana", "User's bank is Millennium", actor="support")
        await mem.review.approve(cid, "ben", statement="User likes green figs")
        rows = await _stored_text(store_target, mem)
    for secret in ("4931", "hunter2", "1234#", "4111 1111 1111 1111"):
        assert secret not in rows
    assert "Millennium" in rows and "green figs" in rows


async def test_memdesk_add_refuses_a_credential_with_a_message(tmp_path: Path) -> None:
    db = str(tmp_path / "memdesk.db")
    async with Memory(db):
        pass  # the store exists, as `memdesk add` requires
    ok = memdesk("add", db, "User likes figs", "--user", "ana", "--actor", "ben")
    assert ok.returncode == 0, ok.stderr  # positive control
    done = memdesk("add", db, "User's password is Plum-Tractor-88", "--user", "ana", "--actor", "ben")
    assert done.returncode == 2 and "credential (password)" in done.stderr
    assert "Plum-Tractor-88" not in done.stderr + done.stdout
    assert b"Plum-Tractor-88" not in b"".join(p.read_bytes() for p in tmp_path.iterdir())


async def test_the_guard_redacts_json_and_keeps_untouched_rows_exact(store_target: str) -> None:
    """An audit row's before/after is JSON: the secret inside is replaced, the JSON stays valid,
    and a row with no secret keeps its bytes (the guard never rewrites what it did not change)."""
    async with Memory(store_target) as mem:
        async with mem.store.transaction() as tx:
            await tx.audit(
                at=1,
                actor="t",
                action="note",
                user_id="ana",
                entity="message",
                entity_id=None,
                after={"said": "my password is Gz4-json-Pp", "n": 3},
            )
            await tx.audit(
                at=2,
                actor="t",
                action="note",
                user_id="ana",
                entity="message",
                entity_id=None,
                after={"said": "plain words", "n": 4},
            )
        async with sql(mem) as conn:
            rows = await (
                await conn.execute("SELECT after FROM audit_log WHERE action = 'note' ORDER BY at")
            ).fetchall()
    import json

    first, second = (json.loads(r[0]) if isinstance(r[0], str) else r[0] for r in rows)
    assert first["said"] == "my password is ⟨credential removed: password⟩" and first["n"] == 3
    assert second == {"said": "plain words", "n": 4}


async def test_an_import_with_a_credential_says_which_statement_and_writes_nothing(store_target: str) -> None:
    async with Memory(store_target) as mem:
        with pytest.raises(UserInputError, match=r"statement 2 of the import holds a credential \(PIN\)"):
            await mem.add_knowledge_many("ana", ["User likes figs", "User's PIN is 4931"], actor="import")
        assert await mem.knowledge("ana") == []  # one bad statement leaves nothing behind
        done = await mem.add_knowledge_many("ana", ["User likes figs", "User likes plums"], actor="import")
        assert len(done) == 2  # the positive control

"""Credentials never stored (issue 20 item 1): every intake path (add_exchange, ingest, the MCP
propose tool, Memory.propose), on both backends, leaves no credential in any file of a SQLite
store (WAL included) or any text column of a PostgreSQL database; the words around it are stored
(the positive control); the removal is audited by kind and counted in stats."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine import Memory
from engine.credentials import credential_like, has_marker, holds_credential, redact
from tests.engine_helpers import sql
from tests.test_cli import jsonl, memdesk
from tests.test_mcp import call, session

AWS_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GITHUB = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
SLACK = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
SECRETS = (AWS_ID, AWS_SECRET, GITHUB, SLACK)

CONVERSATION = [
    f"My deploy quokkabridge uses aws key {AWS_ID} and the aws secret key is {AWS_SECRET} for tarnwick.",
    f"The github token for zephyrmoss is {GITHUB} please keep it.",
    f"Our slack bot token xylophant is {SLACK} and I live in Porto.",
]
WORDS = ("quokkabridge", "tarnwick", "zephyrmoss", "xylophant")  # stored: the positive control


async def _stored_text(target: str, mem: Memory) -> str:
    """Everything the store holds, as text: the SQLite files' bytes (db, -wal, -shm), or every
    text-like column of every PostgreSQL table."""
    if not target.startswith("postgres"):
        return "".join(
            p.read_bytes().decode("latin-1") for p in Path(target).parent.iterdir() if p.name.startswith("memdesk")
        )
    out: list[str] = []
    async with sql(mem) as conn:
        cols = await (
            await conn.execute(
                "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public'"
                " AND data_type IN ('text', 'character varying', 'json', 'jsonb', 'bytea', 'tsvector')"
            )
        ).fetchall()
        for table, column in cols:
            rows = await (await conn.execute(f'SELECT "{column}"::text FROM "{table}"')).fetchall()
            out.extend(str(r[0]) for r in rows if r[0] is not None)
    return "\n".join(out)


def _assert_clean(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret[:6]}... stored"


async def test_every_intake_path_stores_no_credential(store_target: str, tmp_path: Path) -> None:
    # add_exchange and add_exchanges (the library), then process: candidates come from the text.
    async with Memory(store_target) as mem:
        await mem.add_exchange("ana", CONVERSATION[0], f"I will use {AWS_ID} then.")
        await mem.add_exchanges([("ana", CONVERSATION[1], None, None), ("ana", CONVERSATION[2], "Noted.", None)])
        outcome = await mem.propose("ana", f"User's slack token is {SLACK}", "agent:test")
        assert outcome.candidate_id is None and outcome.credentials_removed == {"Slack token": 1}
    # ingest (the command line) for another user
    rows: list[dict[str, Any] | str] = [
        {"user_id": "bob", "user": line, "at": f"2025-01-05T09:0{i}:00Z"} for i, line in enumerate(CONVERSATION)
    ]
    done = memdesk("ingest", store_target, jsonl(tmp_path / "in.jsonl", rows))
    assert done.returncode == 0, done.stderr
    # the MCP server's propose tool
    with (tmp_path / "server.err").open("w+") as errlog:
        async with session(store_target, "cy", errlog) as client:
            text, is_error = await call(client, "propose_memory", statement=f"User's GitHub token is {GITHUB}")
    assert "credential" in text and "GitHub token" in text and not is_error
    async with Memory(store_target) as mem:
        await mem.process()
        async with sql(mem) as conn:
            queued = await (await conn.execute("SELECT statement FROM candidates")).fetchall()
            audits = await (
                await conn.execute("SELECT user_id, after FROM audit_log WHERE action = 'credential_removed'")
            ).fetchall()
        stored = await _stored_text(store_target, mem)
        figures = await mem.stats()
    _assert_clean(stored)
    for word in WORDS:  # the positive control: the rest of each message is stored
        assert word in stored
    assert "credential removed: AWS access key" in stored and "credential removed: GitHub token" in stored
    assert not any("credential removed" in r[0] for r in queued)  # never queued as a candidate
    # one audit row per exchange or proposal that held any: 3 + 3 exchanges, 2 proposals
    assert len(audits) == 8 and figures.credentials_removed == 8
    kinds = [json.loads(a) if isinstance(a, str) else a for _, a in audits]
    assert {"AWS access key": 2, "AWS secret key": 1} in [k["kinds"] for k in kinds]


@pytest.mark.parametrize(
    "text",
    [
        "I forgot my password again, it was a long day",
        "commit 3f786850e387550fdab836ed7e6dc881de23001b broke the build",
        "my order id is 112-3345566-7788990 and the uuid 123e4567-e89b-12d3-a456-426614174000",
        "the secret to good bread is patience and a hot oven",
        "my token of thanks was a bottle of port",
        "My passport number is 533380006 and my flight is BA2490",
    ],
)
def test_ordinary_talk_ids_and_hashes_are_kept(text: str) -> None:
    assert redact(text).text == text and not redact(text).found


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("db at postgres://bob:s3cr3tpass@db.example.com/app", "password in connection string"),
        ("password: Tr0ub4dor&3", "password"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\nq9Zx\n-----END RSA PRIVATE KEY-----", "private key"),
        ("my api key is sk-proj-4f9a8B7c6D5e4F3g2H1i0JkLmN", "OpenAI API key"),
    ],
)
def test_each_kind_is_removed_and_named(text: str, kind: str) -> None:
    found = redact(text)
    assert found.kinds == {kind: 1}
    assert f"⟨credential removed: {kind}⟩" in found.text
    assert "s3cr3tpass" not in found.text and "Tr0ub4dor" not in found.text and "MIIE" not in found.text
    assert "4f9a8B7c" not in found.text


# -- issue 27: the kinds people paste, read through the canonical text ----------------------------

OPENAI = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" + "Q7"
ANTHROPIC = "sk-ant-api03-" + "Zy9xWv8uTs7rQp6oNm5lKj4iHg3fEd2cBa1" + "-_AA"
STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
GOOGLE = "AIza" + "SyD4f9a8B7c6D5e4F3g2H1i0JkLmNoPqRsT"
FINE_GRAINED = "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQR"
SENDGRID = "SG." + "abcdefghijklmnopqrstuv" + "." + "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)


@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        (f"my key is {OPENAI}", OPENAI, "OpenAI API key"),
        (f"ANTHROPIC_API_KEY={ANTHROPIC}", ANTHROPIC, "Anthropic API key"),
        (f"User's stripe key is {STRIPE}", STRIPE, "Stripe secret key"),
        (f"maps {GOOGLE}", GOOGLE, "Google API key"),
        (f"use {FINE_GRAINED} for CI", FINE_GRAINED, "GitHub token"),
        (f"sendgrid {SENDGRID}", SENDGRID, "SendGrid API key"),
        (f"session {JWT}", JWT, "JWT"),
        ("card 4111 1111 1111 1111 exp 12/27", "4111 1111 1111 1111", "card number"),
        ("User's bank card is 4111.1111.1111.1111", "4111.1111.1111.1111", "card number"),
        ("the CVV is 847", "847", "CVV"),
        ("my IBAN is DE89 3704 0044 0532 0130 00 thanks", "DE89 3704 0044 0532 0130 00", "IBAN"),
        ("SSN 123-45-6789", "123-45-6789", "national identity number"),
        ("My bank PIN is 4931", "4931", "PIN"),
        ("the door code is 1234#", "1234#", "access code"),
        ("your verification code is 448210", "448210", "one-time code"),
        ("backup codes: 1234-5678, 9876-5432", "9876-5432", "backup code"),
        ("my password is plum-Tractor-88", "plum-Tractor-88", "password"),
        ('my wifi password is "correct horse battery staple"', "correct horse battery staple", "password"),
        ("the wifi password is correct horse battery staple", "horse battery staple", "password"),
        ("pass: hunter2", "hunter2", "password"),
        ("mon mot de passe est Soleil2024", "Soleil2024", "password"),
        ("mein Passwort ist Blume77", "Blume77", "password"),
        ("mi contraseña es gato-azul-9", "gato-azul-9", "password"),
        ("minha senha é banana123", "banana123", "password"),
        ("ｐａｓｓｗｏｒｄ: ｈｕｎｔｅｒ２", "ｈｕｎｔｅｒ２", "password"),
        ("my p\u0430ssword is Walrus-99", "Walrus-99", "password"),
        ("my pass\u200bword is Walrus-77", "Walrus-77", "password"),
        (
            "seed: abandon ability able about above absent absorb abstract absurd abuse access accident",
            "absurd abuse",
            "seed phrase",
        ),
    ],
)
def test_the_kinds_people_paste_are_removed(text: str, secret: str, kind: str) -> None:
    found = redact(text)
    assert secret not in found.text and kind in found.kinds, found.text
    assert f"⟨credential removed: {kind}⟩" in found.text
    assert credential_like(text) and credential_like(found.text)  # the marker itself reads as one


@pytest.mark.parametrize(
    "text",
    [
        "my password is too long to remember",
        "the wifi password is on the fridge",
        "The Wi-Fi password is printed on the router",
        "la contraseña es demasiado larga",
        "the zip code is 90210",
        "error code 404",
        "the promo code is SAVE20",
        "the code is on GitHub",
        "my PIN is the same as my birthday",
        "I'll pin 2024 goals on the wall",
        "What is an IBAN?",
        "version 4.1.1 costs $19.99",
        "the parcel is 1234.5678.9012.3456 in the tracker",
        "call me at 555-123-4567",
        "password managers are useful",
        "the seed packets were for tomatoes",
    ],
)
def test_harmless_uses_of_the_same_words_are_kept(text: str) -> None:
    assert redact(text).text == text and not holds_credential(text)


def test_the_legacy_marker_still_reads_as_a_removed_credential() -> None:
    old = "User's key is [credential removed: AWS access key]"
    assert credential_like(old) and has_marker(old)
    assert redact(old).text == old  # never redacted twice
    assert not credential_like("User's key is under the mat")  # the positive control


def test_a_phrase_about_a_secret_is_credential_like_but_not_refused() -> None:
    """`credential_like` (what policies ask) also holds a secret's name said with what it is, so a
    person reads "User's PIN is his birthday" before it becomes a fact; the door refuses only a
    statement that holds a secret, so the same phrase can still be queued for that person."""
    assert credential_like("User's PIN is his birthday") and not holds_credential("User's PIN is his birthday")
    assert holds_credential("User's PIN is 4931")
    assert not credential_like("User's password manager is Bitwarden")  # a compound, not the secret
    assert not credential_like("User changed his password yesterday")

"""Credentials never stored: find them in text and replace each with a marker.

Two layers, so that no path is forgotten:

1. The intake services (`Memory.add_exchange(s)`, hence `ingest` and the MCP tools, and
   `Memory.propose`) call `redact()` first: an exchange is stored with the marker and an audit row
   names the kinds removed; a proposal holding one is not queued at all and says why.
2. The storage layer's ONE choke point (`engine/storage/sql/guard.py`): every INSERT or UPDATE a
   write transaction runs, on either backend, has its text arguments (JSON ones walked value by
   value) passed through `redact_text`. So a reviewer's reason, an edit, an import, an agent's
   forget reason or an audit row's before/after can never put a secret's bytes in a file, whatever
   service wrote it; what reaches the table is the marker.

The marker is `⟨credential removed: KIND⟩` (MARKER). Stores written before it hold
`[credential removed: KIND]`; `has_marker` and `credential_like` read both.

What is detected (each kind in its own module, all reading the canonical view of `view.py`, so
fullwidth letters, look-alikes and invisible characters change nothing; the ORIGINAL span is
replaced):

- `vendor.py`: keys by their published prefixes and shapes (OpenAI, Anthropic, Stripe, Google,
  Slack, GitHub classic and fine-grained, GitLab, AWS access keys, SendGrid, Twilio, npm, PyPI,
  Hugging Face, Shopify, DigitalOcean, Square, Mailgun, Telegram, Discord; detect-secrets' own
  plugins run beside them, imported on first use only, since they cost half a second of
  `import engine`), bearer tokens, JWTs.
- `structured.py`: private-key blocks, passwords inside connection strings, card numbers (Luhn
  and issuer prefix, python-stdnum), IBANs (mod 97, python-stdnum), national identity numbers with
  a format or checksum (US SSN, UK NI, French NIR, Spanish DNI/NIE, Brazilian CPF, Italian codice
  fiscale, Dutch BSN, Canadian SIN, German tax id), wallet seed phrases (12+ BIP39 words).
- `prose.py`: keyword-led secrets in English, French, German, Spanish and Portuguese, whatever
  their entropy: passwords ("my password is plum-Tractor-88", "pass: x", "the wifi password is
  \"correct horse battery staple\"", "mon mot de passe est ..."), PINs, door/gate/alarm codes,
  one-time and verification codes, backup codes, CVVs, and `api_key=...`-style assignments.

The trade: a random-looking string with no keyword and no known shape (a bare 32-character hex
token) is kept, because git hashes, UUIDs and order numbers look the same and the store would lose
them; README "Credentials are never stored" lists what is still not caught.
"""

from __future__ import annotations

import re
from collections import Counter
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

from ..models import MARK_NOTE, ProposalOutcome
from ..text import canonical
from .detect import Finding, families, findings
from .prose import _COMPOUND


class TxCore(Protocol):
    """What the audit of a removal needs of a transaction (`engine.storage.sql.core.TxCore`). A
    Protocol here rather than an import: the storage layer's credential guard (sql/guard.py)
    imports this package, so this package imports nothing of storage (tests/test_layers.py finds
    no import circle, annotations included)."""

    async def audit(
        self,
        *,
        at: int,
        actor: str,
        action: str,
        user_id: str,
        entity: str,
        entity_id: int | None,
        before: Any = None,
        after: Any = None,
        reason: str | None = None,
        note: str | None = None,
    ) -> int: ...


class Store(Protocol):
    """What `refuse_credentials` needs of a store (`engine.storage.Store`): a write transaction."""

    def transaction(self) -> AbstractAsyncContextManager[TxCore]: ...


MARKER = "⟨credential removed: {kind}⟩"
MARKER_PREFIX = "⟨credential removed:"
LEGACY_MARKER_PREFIX = "[credential removed:"
"""The marker of stores written before ⟨⟩ was chosen: still recognised, never written."""
CREDENTIAL_ACTION = "credential_removed"
"""The audit action of a removal (one row per exchange or proposal that held any)."""

__all__ = [
    "CREDENTIAL_ACTION",
    "LEGACY_MARKER_PREFIX",
    "MARKER",
    "MARKER_PREFIX",
    "SHORTEST_CREDENTIAL",
    "Finding",
    "Redaction",
    "audit_credentials",
    "credential_like",
    "findings",
    "has_marker",
    "holds_credential",
    "redact",
    "redact_text",
    "refuse_credentials",
]


@dataclass(slots=True)
class Redaction:
    """The text with every credential replaced by its marker, and the kinds removed (counted)."""

    text: str
    kinds: Counter[str] = field(default_factory=Counter)

    @property
    def found(self) -> bool:
        return bool(self.kinds)


def redact(text: str) -> Redaction:
    """The one entry point: `text` with each credential's original span replaced by
    `⟨credential removed: KIND⟩`. Overlapping findings are merged (the earliest, then the
    longest, names the kind); text already inside a marker is never detected again."""
    kinds: Counter[str] = Counter()
    found = findings(text)
    if not found:
        return Redaction(text, kinds)
    out: list[str] = []
    at = 0
    for f in found:
        out.append(text[at : f.start])
        out.append(MARKER.format(kind=f.kind))
        kinds[f.kind] += 1
        at = f.end
    out.append(text[at:])
    return Redaction("".join(out), kinds)


def has_marker(text: str | None) -> bool:
    """True when text carries a removal marker (either form): such a statement is never queued
    and no policy approves it."""
    if not text:
        return False
    value = str(text)
    return MARKER_PREFIX in value or LEGACY_MARKER_PREFIX in value


def credential_like(text: str | None) -> bool:
    """What review policies ask of a statement and its evidence: does it hold a secret, a removal
    marker (the secret is gone, but a fact about "⟨credential removed: PIN⟩" is not one to approve
    unseen), or a credential-like phrase: a secret's name said with what it is ("User's PIN is his
    birthday", "the wifi password is on the fridge"), which no detector calls a secret but which
    a person should read before it becomes a fact (fail closed: a policy leaves it to them)."""
    if not text:
        return False
    value = str(text)
    return has_marker(value) or bool(findings(value)) or _PHRASE.search(canonical(value)) is not None


def holds_credential(text: str | None) -> bool:
    """Strictly: a secret found, or a marker (what a statement is refused for at the door; a
    phrase merely about a password is not refused)."""
    return bool(text) and (has_marker(text) or bool(findings(str(text))))


# A secret's name, a few words, then a link: the shape of "my PIN is ...", in the five languages.
_PHRASE = re.compile(
    r"\b(?:password|passwd|passcode|passphrase|pin|pin code|pin number|mot de passe|mdp|passwort|kennwort|"
    r"geheimzahl|contraseña|senha|palavra-passe|security code|door code|gate code|alarm code|entry code|"
    r"access code|keypad code|cvv|cvc|otp|one-time code|verification code|backup codes?|recovery codes?|"
    r"seed phrase|recovery phrase|private key|api key|secret key|access key|api token|auth token|access token)\b"
    r"(?!\s+(?:" + "|".join(sorted(_COMPOUND)) + r")\b)(?:\s+[\w'’-]+){0,3}?"
    r"\s*(?:\bis\b|\bwas\b|\bare\b|:|=|\best\b|\bist\b|\blautet\b|\bes\b|\bé\b|['’]s\b)"
)


Kinds = tuple[tuple[str, int], ...]
"""What a redaction removed, as (kind, count) pairs; empty when nothing was found."""


SHORTEST_CREDENTIAL = _SHORTEST = 6
"""No detected credential fits in fewer characters ("CVV 123" is the shortest kind: 7); the guard
passes shorter strings (ids, names, statuses) without looking."""

_CACHED_UP_TO = 4096
"""Strings up to this length are remembered with their redaction: the guard sees one statement
several times in one transaction (the fact, its audit row's JSON, the text index) and the same
ids, actors and statuses on every row of an import; a long message is redacted afresh."""


def redact_text(text: str) -> tuple[str, Kinds]:
    """`redact(text)` as plain values: the text and its (kind, count) pairs, cached when short.
    A text is read as text, never parsed as JSON (the storage guard walks JSON columns itself).
    An audit note of marks (engine.models.MARK_NOTE: fixed words and ids) and a text no detector
    family would read (most of an import's value keys) are answered at once, without the caches:
    each is new, and filling them cost as much as asking."""
    if MARK_NOTE.fullmatch(text) is not None or not families(text):
        return text, ()
    if len(text) <= _CACHED_UP_TO:
        return _redacted_short(text)
    red = redact(text)
    return red.text, tuple(red.kinds.items())


@lru_cache(maxsize=16384)
def _redacted_short(text: str) -> tuple[str, tuple[tuple[str, int], ...]]:
    red = redact(text)
    return red.text, tuple(red.kinds.items())


async def audit_credentials(
    tx: TxCore,
    *,
    now_us: int,
    user_id: str,
    entity: str,
    entity_id: int | None,
    kinds: dict[str, int],
    actor: str = "capture",
) -> None:
    """The audit row of a removal, in the caller's transaction: the kinds and counts, never a value
    (`memdesk stats` counts these rows as `credentials_removed`)."""
    await tx.audit(
        at=now_us,
        actor=actor,
        action=CREDENTIAL_ACTION,
        user_id=user_id,
        entity=entity,
        entity_id=entity_id,
        after={"kinds": dict(sorted(kinds.items()))},
    )


async def refuse_credentials(store: Store, user_id: str, text: str, now_us: int, actor: str) -> ProposalOutcome | None:
    """For `Memory.propose`: None when `text` holds no credential; otherwise write the audit row
    (kinds only, one transaction) and return the outcome saying nothing was queued. A statement
    that already carries a marker (an agent echoing one back) is refused the same way."""
    found = redact(text)
    kinds = dict(found.kinds)
    if not found.found:
        if not has_marker(text):
            return None
        kinds = {"removed credential": 1}
    async with store.transaction() as tx:
        await audit_credentials(
            tx, now_us=now_us, user_id=user_id, entity="candidate", entity_id=None, kinds=kinds, actor=actor
        )
    return ProposalOutcome(credentials_removed=kinds)

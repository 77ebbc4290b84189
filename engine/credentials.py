"""Credentials never stored: find them in text at capture and replace each with a marker.

Every intake path (`Memory.add_exchange(s)`, hence `ingest` and the MCP tools, and
`Memory.propose`) calls `redact()` before anything reaches a transaction, so no file of a SQLite
store (WAL included) and no PostgreSQL row ever holds the value: only a marker such as
`[credential removed: AWS access key]`, and an audit row naming the kind.

Detection is Yelp's `detect-secrets`, used as a library with the plugins that fit conversation
text (its file-oriented `scan_line` would load every plugin and its file filters):

- AWS access key ids and quoted AWS secret keys, GitHub tokens, Slack tokens and webhooks,
  basic-auth URLs (`scheme://user:PASSWORD@host`, the password only), private-key blocks
  (header to footer, since the plugin matches the header alone);
- the keyword detector in its config-file form (`password: x`, `api_key=x`, `secret = "x"`);
- keyword + high entropy: in prose ("my aws secret is wJalr..."), a token of 16+ characters within
  a few words after a credential keyword (`password`, `secret`, `token`, `api key`, ...) whose
  Shannon entropy passes the plugin's own limit (base64 4.5 bits, hex 3.0).

The trade: high-entropy strings alone are NOT removed (a git hash, a UUID, an order number in user
talk would be lost to the memory), so an unlabelled random-looking secret pasted without a keyword
nearby is kept; a short low-entropy password is caught only in `password: x` form, not in prose
("my password is hunter2" stays, since "is hunter2" reads like ordinary talk to any detector).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString, HexHighEntropyString
from detect_secrets.plugins.keyword import CONFIG_DENYLIST_REGEX_TO_GROUP, KeywordDetector
from detect_secrets.plugins.slack import SlackDetector

from .models import ProposalOutcome
from .storage import Store
from .storage.sql.core import TxCore

MARKER = "[credential removed: {kind}]"
MARKER_PREFIX = "[credential removed:"
CREDENTIAL_ACTION = "credential_removed"
"""The audit action of a removal (one row per exchange or proposal that held any)."""

# The plugins that find a value by pattern, with the name a marker and an audit row show, and
# whether the value is the regex's first group: the plugins' own `analyze_string` yields groups
# when a regex has any, which is the secret for basic auth and the quoted AWS secret key but only
# the `ghp` prefix for GitHub, so each regex of `denylist` is applied here instead.
_PATTERN_PLUGINS: tuple[tuple[RegexBasedDetector, str, bool], ...] = (
    (AWSKeyDetector(), "AWS access key", True),
    (GitHubTokenDetector(), "GitHub token", False),
    (SlackDetector(), "Slack token", False),
    (BasicAuthDetector(), "basic-auth password", True),
)
_KEYWORD = KeywordDetector()
_BASE64 = Base64HighEntropyString()
_HEX = HexHighEntropyString()

# detect-secrets' PrivateKeyDetector matches the BEGIN line only; the key body must go too.
_PRIVATE_KEY = re.compile(
    r"-----BEGIN[A-Z ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)
# Prose form of keyword + high entropy: a keyword, then up to four words, then the token.
_PROSE_KEYWORD = re.compile(
    r"(?i)\b(?:password|passwd|pwd|secret|token|api[ _-]?key|access[ _-]?key|private[ _-]?key|credentials?)\b"
    r"(?:\W+\w+){0,4}?\W+([A-Za-z0-9+/=_\-]{16,})"
)
_HEX_ONLY = re.compile(r"[0-9a-fA-F]+")


@dataclass(slots=True)
class Redaction:
    """The text with every credential replaced by its marker, and the kinds removed (counted)."""

    text: str
    kinds: Counter[str] = field(default_factory=Counter)

    @property
    def found(self) -> bool:
        return bool(self.kinds)


def _high_entropy(token: str) -> bool:
    if _HEX_ONLY.fullmatch(token):
        return _HEX.calculate_shannon_entropy(token) > _HEX.entropy_limit
    return _BASE64.calculate_shannon_entropy(token) > _BASE64.entropy_limit


def _findings(line: str) -> list[tuple[str, str]]:
    """(value, kind) for each credential in one line."""
    found: list[tuple[str, str]] = []
    for plugin, kind, grouped in _PATTERN_PLUGINS:
        for regex in plugin.denylist:
            for m in regex.finditer(line):
                value = m.group(1) if grouped and m.groups() else m.group(0)
                if value:
                    found.append((value, kind))
    found.extend(
        (value, "secret value") for value in _KEYWORD.analyze_string(line, CONFIG_DENYLIST_REGEX_TO_GROUP) if value
    )
    found.extend(
        (m.group(1), "high-entropy secret") for m in _PROSE_KEYWORD.finditer(line) if _high_entropy(m.group(1))
    )
    return found


def redact(text: str) -> Redaction:
    """The one entry point: `text` with each credential replaced by `[credential removed: KIND]`.

    Longer values are replaced first, so a value found by two detectors (an AWS key after
    `secret=`) is removed once under the more specific name found first."""
    kinds: Counter[str] = Counter()

    def _key(match: re.Match[str]) -> str:
        kinds["private key"] += 1
        return MARKER.format(kind="private key")

    out = _PRIVATE_KEY.sub(_key, text)
    values: dict[str, str] = {}
    for line in out.splitlines():
        for value, kind in _findings(line):
            if MARKER_PREFIX not in value:
                values.setdefault(value, kind)
    for value in sorted(values, key=len, reverse=True):
        if value in out:
            kinds[values[value]] += out.count(value)
            out = out.replace(value, MARKER.format(kind=values[value]))
    return Redaction(out, kinds)


def has_marker(text: str | None) -> bool:
    """True when text carries a removal marker: such a statement is never queued."""
    return bool(text) and MARKER_PREFIX in str(text)


def credential_like(text: str | None) -> bool:
    """True when text holds a secret `redact` finds or a removal marker: a review policy sends such
    a statement (or its evidence) to a person. (Policies' minimal form; the detectors branch owns
    and widens it to credential-like phrases such as "PIN is 4931".)"""
    return bool(text) and (redact(str(text)).found or has_marker(text))


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
    (kinds only, one transaction) and return the outcome saying nothing was queued."""
    found = redact(text)
    if not found.found:
        return None
    async with store.transaction() as tx:
        await audit_credentials(
            tx, now_us=now_us, user_id=user_id, entity="candidate", entity_id=None, kinds=dict(found.kinds), actor=actor
        )
    return ProposalOutcome(credentials_removed=dict(found.kinds))

"""Reviewer credentials for `memdesk serve`: salted scrypt hashes in a TOML file.

The file holds hashes only, never passwords, and is written by `memdesk reviewer add`:

    [reviewers."ana"]
    hash = "scrypt$16384$8$1$<salt, base64>$<key, base64>"

Why scrypt: it is in the standard library (no dependency), memory-hard (16 MiB per guess with the
parameters below, which makes GPU guessing of a stolen file expensive), and its parameters travel
inside each hash so they can be raised later without breaking existing entries.

The name a reviewer logs in with is the name the audit log records, so it is restricted to
characters that are safe everywhere it travels: a TOML key, a command-line argument, an HTML page.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import secrets
import tomllib
from dataclasses import dataclass
from pathlib import Path

from engine.errors import UserInputError

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
"""Reviewer names: what the audit log will say. No spaces, quotes or leading dash."""

MIN_PASSWORD_CHARS = 8
MAX_PASSWORD_CHARS = 1024
"""A bound on what a login form can make the server hash."""

SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
"""The cost of new hashes: 16 MiB and roughly 50 ms per check on one core."""

_MAX_N, _MAX_R, _MAX_P = 2**20, 32, 16
"""The most a hash in the file may ask for; a larger figure is a corrupt (or hostile) file."""

_SALT_BYTES = 16
_KEY_BYTES = 32


class CredentialsError(UserInputError):
    """The credentials file is missing, not TOML, or holds an entry that is not a memdesk hash."""


def check_name(name: str) -> str:
    """The reviewer name, or UserInputError saying what a name may hold."""
    if not NAME_PATTERN.fullmatch(name):
        raise UserInputError(
            f"reviewer name {name!r} is not allowed: 1-64 letters, digits, '.', '_', '@' or '-', "
            "starting with a letter or digit"
        )
    return check_not_reserved(name)


def check_not_reserved(name: str) -> str:
    """`name`, unless it is the engine's own actor (engine.gate.SYSTEM_ACTOR, "memdesk", in any
    case): the audit log writes it for what the engine did by itself (a candidate retargeted, a
    policy suspended), so a person under that name would make their decisions read as the engine's."""
    from engine.gate import SYSTEM_ACTOR

    if name.strip().casefold() == SYSTEM_ACTOR.casefold():
        raise UserInputError(
            f"{name!r} is the engine's own name in the audit log (what it does by itself); choose another name"
        )
    return name


def check_password(password: str) -> str:
    if len(password) < MIN_PASSWORD_CHARS:
        raise UserInputError(f"the password is too short: at least {MIN_PASSWORD_CHARS} characters")
    if len(password) > MAX_PASSWORD_CHARS:
        raise UserInputError(f"the password is too long: at most {MAX_PASSWORD_CHARS} characters")
    return password


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int, dklen: int = _KEY_BYTES) -> bytes:
    return hashlib.scrypt(
        password.encode("utf-8"), salt=salt, n=n, r=r, p=p, maxmem=256 * n * r * p + 1024 * 1024, dklen=dklen
    )


def hash_password(password: str) -> str:
    """A new salted hash of `password` in the file's format."""
    salt = secrets.token_bytes(_SALT_BYTES)
    key = _scrypt(password, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P)
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${_b64(salt)}${_b64(key)}"


@dataclass(frozen=True)
class ParsedHash:
    n: int
    r: int
    p: int
    salt: bytes
    key: bytes


def parse_hash(value: str) -> ParsedHash:
    """The parts of a stored hash; ValueError for anything that is not one this module wrote."""
    parts = value.split("$")
    if len(parts) != 6 or parts[0] != "scrypt":
        raise ValueError("not a scrypt$N$r$p$salt$key hash")
    try:
        n, r, p = (int(x) for x in parts[1:4])
        salt = base64.b64decode(parts[4], validate=True)
        key = base64.b64decode(parts[5], validate=True)
    except ValueError:
        raise ValueError("malformed numbers or base64 in the hash") from None
    if not (2 <= n <= _MAX_N and n & (n - 1) == 0 and 1 <= r <= _MAX_R and 1 <= p <= _MAX_P):
        raise ValueError(
            f"scrypt parameters out of range (N a power of two up to {_MAX_N}, r <= {_MAX_R}, p <= {_MAX_P})"
        )
    if len(salt) < 8 or not 16 <= len(key) <= 64:
        raise ValueError("salt too short or key of the wrong size")
    return ParsedHash(n, r, p, salt, key)


def verify_password(password: str, stored: str) -> bool:
    """Whether `password` matches `stored`, compared in constant time."""
    parsed = parse_hash(stored)
    if len(password) > MAX_PASSWORD_CHARS:
        return False
    candidate = _scrypt(password, parsed.salt, parsed.n, parsed.r, parsed.p, dklen=len(parsed.key))
    return hmac.compare_digest(candidate, parsed.key)


def load_credentials(path: str | Path) -> dict[str, str]:
    """name -> stored hash, every entry checked, so a bad file is reported at start, not at login."""
    file = Path(path)
    try:
        raw = tomllib.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CredentialsError(
            f"no credentials file {file} (create it with `memdesk reviewer add NAME --config {file}`)"
        ) from None
    except OSError as exc:
        raise CredentialsError(f"cannot read credentials file {file}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise CredentialsError(f"credentials file {file} is not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise CredentialsError(f"credentials file {file} is not UTF-8 text") from None
    unknown = set(raw) - {"reviewers"}
    if unknown:
        raise CredentialsError(f"credentials file {file}: unknown table(s) {sorted(unknown)}; only [reviewers.NAME]")
    table = raw.get("reviewers", {})
    if not isinstance(table, dict):
        raise CredentialsError(f"credentials file {file}: `reviewers` must be a table")
    result: dict[str, str] = {}
    for name, entry in table.items():
        if not NAME_PATTERN.fullmatch(name):
            raise CredentialsError(f"credentials file {file}: reviewer name {name!r} is not allowed")
        if not isinstance(entry, dict) or set(entry) != {"hash"} or not isinstance(entry["hash"], str):
            raise CredentialsError(f'credentials file {file}: [reviewers.{name}] must hold exactly `hash = "..."`')
        try:
            parse_hash(entry["hash"])
        except ValueError as exc:
            raise CredentialsError(f"credentials file {file}: [reviewers.{name}] hash: {exc}") from None
        result[name] = entry["hash"]
    return result


def write_credentials(path: str | Path, credentials: dict[str, str]) -> None:
    """Write the whole file atomically with mode 0600 (the hashes are still worth protecting).

    Names and hashes hold no quote or backslash (NAME_PATTERN, base64), so quoting is exact."""
    file = Path(path)
    lines = [
        "# memdesk reviewer credentials, written by `memdesk reviewer add/remove`.",
        "# Salted scrypt hashes only; passwords are never stored. Comments here are not kept.",
    ]
    for name in sorted(credentials):
        check_name(name)
        parse_hash(credentials[name])
        lines += ["", f'[reviewers."{name}"]', f'hash = "{credentials[name]}"']
    partial = file.with_name(f".{file.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n")
        os.replace(partial, file)
    finally:
        partial.unlink(missing_ok=True)


class CredentialFile:
    """The credentials file as the server reads it: reloaded when it changes on disk, so adding,
    removing or re-keying a reviewer needs no restart (and removing one ends their sessions)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._stamp: tuple[int, int] | None = None
        self._entries: dict[str, str] = {}
        self.error: str | None = None
        """Why the file is not usable now (None: it is); the server then fails closed."""
        self.reload()

    def reload(self) -> None:
        stat = self.path.stat() if self.path.exists() else None
        self._entries = load_credentials(self.path)
        self._stamp = (stat.st_mtime_ns, stat.st_size) if stat else None
        self.error = None

    def current(self) -> dict[str, str]:
        """The entries as the file holds them now. A file that turned bad or went away holds no
        entries (and `error` says why) until it is valid again: keeping the last good entries
        would keep a reviewer the operator just removed."""
        try:
            stat = self.path.stat()
            stamp: tuple[int, int] | None = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            stamp = None
        if stamp != self._stamp:
            try:
                self.reload()
            except CredentialsError as exc:
                self._entries, self._stamp, self.error = {}, stamp, str(exc)
        return self._entries

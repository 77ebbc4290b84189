"""Time in the engine: timezone-aware UTC, stored as integer microseconds since the epoch.

Integers keep comparisons exact and cheap in SQL and in sqlite-vec metadata filters. A naive
datetime is refused rather than guessed at: reading it as local time is how an as-of query goes
silently wrong on a machine in another zone. `check_interval` is the single interval rule that
every write path calls.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import overload

from .errors import InvalidIntervalError

Clock = Callable[[], datetime]

# Open ends in sqlite-vec metadata columns, which cannot hold NULL.
FOREVER = 2**62
BEGINNING = -(2**62)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# The one representable range for dates that enter the engine (ingest, extractor output, search
# flags, decisions), after relative dates are resolved. Far enough for any real conversation and
# birth date, and far enough from datetime's own limits (years 1 and 9999) that adding "next
# year" or a timezone offset can never overflow later, in some other process.
EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
LATEST = datetime(2200, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)


def system_clock() -> datetime:
    return datetime.now(UTC)


def ensure_utc(value: datetime, what: str = "time") -> datetime:
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        raise InvalidIntervalError(f"{what} {value.isoformat()} has no timezone; pass a timezone-aware datetime (UTC)")
    return value.astimezone(UTC)


def check_representable(value: datetime, what: str = "date") -> datetime:
    """Refuse a date outside EARLIEST..LATEST with a UserInputError naming the range; return it in UTC.

    Converting to UTC can itself overflow (9999-12-31T23:00-05:00 is in year 10000 in UTC); that is
    the same refusal, not an OverflowError escaping as a traceback. The error is an
    InvalidIntervalError (a UserInputError), so the extraction pipeline drops an item with such a
    date and counts it under its `invalid` gate, as it does an inverted interval."""
    try:
        utc = ensure_utc(value, what)
    except OverflowError:
        utc = None
    if utc is None or not EARLIEST <= utc <= LATEST:
        raise InvalidIntervalError(
            f"{what} {value.isoformat()} is outside the supported range {EARLIEST.year}-{LATEST.year}"
        )
    return utc


@overload
def to_us(value: datetime, what: str = "time") -> int: ...
@overload
def to_us(value: None, what: str = "time") -> None: ...
@overload
def to_us(value: datetime | None, what: str = "time") -> int | None: ...
def to_us(value: datetime | None, what: str = "time") -> int | None:
    if value is None:
        return None
    delta = ensure_utc(value, what) - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


@overload
def from_us(value: int) -> datetime: ...
@overload
def from_us(value: None) -> None: ...
@overload
def from_us(value: int | None) -> datetime | None: ...
def from_us(value: int | None) -> datetime | None:
    if value is None:
        return None
    from datetime import timedelta

    return _EPOCH + timedelta(microseconds=value)


def check_interval(valid_at: datetime | None, invalid_at: datetime | None) -> tuple[int | None, int | None]:
    """Validate a valid-time interval and return it in storage form.

    The rule: both ends timezone-aware and inside EARLIEST..LATEST; when both are set, invalid_at
    strictly after valid_at (an empty interval would describe a fact that was never true).
    """
    start = None if valid_at is None else to_us(check_representable(valid_at, "valid_at"))
    end = None if invalid_at is None else to_us(check_representable(invalid_at, "invalid_at"))
    if start is not None and end is not None and end <= start:
        raise InvalidIntervalError(
            f"invalid_at ({invalid_at.isoformat()}) must be after valid_at ({valid_at.isoformat()})"  # type: ignore[union-attr]
        )
    return start, end


def parse_datetime(text: str, what: str = "date") -> datetime:
    """Parse an ISO 8601 date or datetime; a value without a zone is read as UTC (documented).

    Every date a person or a model types enters here (ingest, search flags, the workstation's date
    fields, extractor output), so this is where the representable range is enforced: a date outside
    EARLIEST..LATEST is refused now, instead of overflowing later in another process."""
    from .errors import UserInputError

    raw = text.strip()
    if raw.endswith("Z"):
        raw = raw[:-1] + "+00:00"
    try:
        value = datetime.fromisoformat(raw)
    except ValueError:
        example = "e.g. 2024-05-01 or 2024-05-01T10:00Z"
        raise UserInputError(f"{what} {text!r} is not an ISO 8601 date ({example})") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return check_representable(value, what)

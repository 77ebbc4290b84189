"""Reading conversation files into exchanges: JSON Lines and the LongMemEval format.

Parsing is separate from writing. A file is read and validated completely before the database is
touched, so a bad line costs nothing: by default the first problem stops everything with
`FILE:LINE: reason` (InvalidIngestError) and no row is written; with `skip_bad` the bad units (a
JSONL line, a LongMemEval question) are listed and the rest goes in. The write itself is one
transaction (`Memory.add_exchanges`), so a crash halfway leaves nothing half-ingested either.

JSON Lines, one exchange per line:
    {"user_id": "ana", "user": "I moved to Porto", "assistant": "Nice!", "at": "2024-05-01T10:00:00Z"}
  `user_id`, `user` and `at` are required (`user_id` may come from `user=` instead); `assistant` may
  be absent or null (a message with no reply). `at` is ISO 8601; without a zone it is read as UTC.
  Blank lines are ignored.

LongMemEval (`longmemeval_s.json` and friends): a JSON list of questions, each with `question_id`,
`haystack_sessions` (a list of sessions, each a list of {role, content} turns) and `haystack_dates`
(one per session, like "2023/05/20 (Sat) 02:21", read as UTC). Every question becomes one user
(`user_id = question_id`) unless `user=` puts them all under one. A user turn and the assistant
turns after it form one exchange; assistant turns before the first user turn of a session have no
exchange to belong to and are reported in `notes`, not silently lost.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from .config import MemoryConfig
from .errors import InvalidIngestError, UserInputError
from .limits import check_exchange, check_unicode
from .timeutil import check_representable, parse_datetime

Format = Literal["jsonl", "longmemeval"]
Progress = Callable[[int, int], None]  # (done, total), in bytes or characters of the file

LME_DATE = "%Y/%m/%d (%a) %H:%M"


@dataclass(slots=True)
class Exchange:
    user_id: str
    user: str
    assistant: str | None
    at: datetime
    source: str  # FILE:LINE the exchange came from

    def as_tuple(self) -> tuple[str, str, str | None, datetime | None]:
        return (self.user_id, self.user, self.assistant, self.at)


@dataclass(slots=True)
class IngestPlan:
    """What a file holds, validated, before anything is written."""

    path: str
    format: Format
    exchanges: list[Exchange] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "FILE:LINE: reason" of every unit left out
    notes: list[str] = field(default_factory=list)  # things dropped that are not errors

    @property
    def users(self) -> list[str]:
        return list(dict.fromkeys(e.user_id for e in self.exchanges))


# -- the edge: pydantic models of one input unit ---------------------------------------------------


def _non_blank(value: str, what: str) -> str:
    if not value.strip():
        raise ValueError(f"{what} is empty")
    return value


class JsonlRecord(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    user_id: str | None = None
    user: str
    assistant: str | None = None
    at: str

    @field_validator("user")
    @classmethod
    def _user_text(cls, value: str) -> str:
        return _non_blank(value, "the user message")

    @field_validator("user_id")
    @classmethod
    def _user_id(cls, value: str | None) -> str | None:
        return None if value is None else _non_blank(value, "user_id")


class LmeTurn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: Literal["user", "assistant"]
    content: str


class LmeQuestion(BaseModel):
    model_config = ConfigDict(extra="ignore")

    question_id: str | int
    haystack_sessions: list[list[LmeTurn]]
    haystack_dates: list[str]


# -- format detection ------------------------------------------------------------------------------


def detect_format(path: str | Path) -> Format:
    """By extension (.jsonl / .ndjson -> jsonl), else by the first character: '[' is a LongMemEval
    list, '{' a JSON Lines record."""
    p = Path(path)
    if p.suffix.lower() in (".jsonl", ".ndjson"):
        return "jsonl"
    with _open(p) as fh:
        head = fh.read(4096).lstrip("\ufeff \t\r\n")
    if head.startswith("["):
        return "longmemeval"
    if head.startswith("{"):
        return "jsonl"
    raise InvalidIngestError(f"{path}:1: neither a JSON list nor JSON Lines; pass --format")


def _open(path: Path) -> Any:
    try:
        return path.open("r", encoding="utf-8", newline="")
    except FileNotFoundError:
        raise InvalidIngestError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InvalidIngestError(f"{path}: is a directory, not a file") from None
    except OSError as exc:
        raise InvalidIngestError(f"{path}: cannot be read ({exc.strerror or exc})") from None


# -- parsing ---------------------------------------------------------------------------------------


def parse_file(
    path: str | Path,
    fmt: Literal["auto", "jsonl", "longmemeval"] = "auto",
    *,
    user: str | None = None,
    skip_bad: bool = False,
    progress: Progress | None = None,
    config: MemoryConfig | None = None,
) -> IngestPlan:
    """Read and validate the whole file. Raises InvalidIngestError at the first bad unit unless
    `skip_bad`, in which case bad units are listed in `plan.skipped`.

    Every exchange passes the checks `Memory.add_exchanges` applies (`limits.check_exchange`:
    message sizes from `config`, valid Unicode, the representable date range), so a plan that
    parsed is a plan the store accepts: nothing fails later, after the database was opened."""
    p = Path(path)
    if user is not None:
        if not user.strip():
            raise InvalidIngestError("--user is empty")
        try:
            check_unicode(user, "--user")
        except UserInputError as exc:
            raise InvalidIngestError(str(exc)) from None
    if not p.exists():
        raise InvalidIngestError(f"{p}: no such file")
    chosen: Format = detect_format(p) if fmt == "auto" else fmt
    plan = IngestPlan(path=str(p), format=chosen)
    limits = config or MemoryConfig()
    if chosen == "jsonl":
        _parse_jsonl(p, plan, user, skip_bad, progress, limits)
    else:
        _parse_longmemeval(p, plan, user, skip_bad, progress, limits)
    return plan


def _checked(exchange: Exchange, config: MemoryConfig) -> Exchange:
    """The exchange, refused with its FILE:LINE when the store would refuse it."""
    try:
        check_exchange(exchange.user_id, exchange.user, exchange.assistant, exchange.at, config)
    except UserInputError as exc:
        raise InvalidIngestError(f"{exchange.source}: {exc}") from None
    return exchange


# Python's json module recurses once per nesting level (a RecursionError, not a JSONDecodeError,
# at ~1,000 levels) and refuses integers of more than 4,300 digits with a ValueError: hostile
# input, both reported as a reason, never a traceback. No real exchange nests deeper than a few
# levels or holds a 100-digit number.
MAX_NUMBER_DIGITS = 100


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_NUMBER_DIGITS:
        raise ValueError(f"a number of {len(text):,} digits (the limit is {MAX_NUMBER_DIGITS})")
    return int(text)


def _bounded_float(text: str) -> float:
    if len(text) > MAX_NUMBER_DIGITS:
        raise ValueError(f"a number of {len(text):,} characters (the limit is {MAX_NUMBER_DIGITS})")
    return float(text)


_DECODER = json.JSONDecoder(parse_int=_bounded_int, parse_float=_bounded_float)


def _decode(text: str, pos: int, where: Callable[[int], str]) -> tuple[Any, int]:
    """One JSON value at `pos`: (value, end). Every way the json module can fail becomes an
    InvalidIngestError naming the line (`where(lineno)`)."""
    try:
        return _DECODER.raw_decode(text, pos)
    except json.JSONDecodeError as exc:
        raise InvalidIngestError(f"{where(exc.lineno)}: malformed JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise InvalidIngestError(f"{where(1)}: JSON nested too deeply") from None
    except ValueError as exc:
        raise InvalidIngestError(f"{where(1)}: malformed JSON ({exc})") from None


def _reason(exc: ValidationError) -> str:
    """One line per problem, naming the field: `at: Field required`."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)


def _parse_jsonl(
    p: Path, plan: IngestPlan, user: str | None, skip_bad: bool, progress: Progress | None, config: MemoryConfig
) -> None:
    if p.is_dir():
        raise InvalidIngestError(f"{p}: is a directory, not a file")
    total = p.stat().st_size
    done = 0
    try:
        fh = p.open("rb")
    except OSError as exc:
        raise InvalidIngestError(f"{p}: cannot be read ({exc.strerror or exc})") from None
    with fh:
        for lineno, raw in enumerate(fh, start=1):
            done += len(raw)
            where = f"{p}:{lineno}"
            try:
                exchange = _jsonl_line(raw, lineno == 1, where, user)
                if exchange is not None:
                    _checked(exchange, config)
            except InvalidIngestError as exc:
                if not skip_bad:
                    raise
                plan.skipped.append(str(exc))
                exchange = None
            if exchange is not None:
                plan.exchanges.append(exchange)
            if progress is not None:
                progress(done, total)


def _jsonl_line(raw: bytes, first: bool, where: str, user: str | None) -> Exchange | None:
    try:
        text = raw.decode("utf-8-sig" if first else "utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidIngestError(f"{where}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    if not text.strip():
        return None
    start = len(text) - len(text.lstrip(" \t\r\n\ufeff"))
    data, end = _decode(text, start, lambda _line: where)
    if text[end:].strip(" \t\r\n"):
        raise InvalidIngestError(f"{where}: malformed JSON (extra data after the object at column {end + 1})")
    if not isinstance(data, dict):
        raise InvalidIngestError(f"{where}: expected a JSON object, got {type(data).__name__}")
    try:
        record = JsonlRecord.model_validate(data)
    except ValidationError as exc:
        raise InvalidIngestError(f"{where}: {_reason(exc)}") from None
    user_id = user if user is not None else record.user_id
    if user_id is None:
        raise InvalidIngestError(f"{where}: user_id: Field required (or pass --user)")
    try:
        at = parse_datetime(record.at, "at")
    except UserInputError as exc:
        raise InvalidIngestError(f"{where}: {exc}") from None
    assistant = record.assistant if record.assistant is not None and record.assistant.strip() else None
    return Exchange(user_id=user_id, user=record.user, assistant=assistant, at=at, source=where)


def parse_lme_date(text: str) -> datetime:
    """'2023/05/20 (Sat) 02:21' (LongMemEval's own format) or ISO 8601, as UTC."""
    raw = text.strip()
    try:
        value = datetime.strptime(raw, LME_DATE).replace(tzinfo=UTC)
    except ValueError:
        pass
    else:
        try:
            return check_representable(value, "the date")
        except UserInputError as exc:
            raise ValueError(str(exc)) from None
    try:
        return parse_datetime(raw, "the date")
    except UserInputError as exc:
        if "outside the supported range" in str(exc):
            raise ValueError(str(exc)) from None
        raise ValueError(f"{text!r} is not a date like '2023/05/20 (Sat) 02:21'") from None


_WS = re.compile(r"[ \t\r\n]*")


def _elements(text: str, p: Path) -> Iterator[tuple[int, int, Any]]:
    """(line, end offset, value) of each element of a top-level JSON list, so that an error in
    question 41 can name the line it starts on (json.loads alone cannot). Anything after the
    closing bracket but whitespace is an error: a truncated or concatenated file is not ingested
    in part."""
    pos = _WS.match(text, 0).end()  # type: ignore[union-attr]
    if not text.startswith("[", pos):
        raise InvalidIngestError(f"{p}:1: a LongMemEval file is a JSON list of questions")
    pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
    line, counted = 1, 0
    if text.startswith("]", pos):
        _nothing_after(text, pos + 1, p)
        return
    while True:
        line += text.count("\n", counted, pos)
        counted = pos
        start_line = line
        value, end = _decode(text, pos, lambda lineno, first=start_line: f"{p}:{max(lineno, first)}")  # type: ignore[misc]
        yield line, end, value
        pos = _WS.match(text, end).end()  # type: ignore[union-attr]
        if text.startswith(",", pos):
            pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
            continue
        if text.startswith("]", pos):
            _nothing_after(text, pos + 1, p)
            return
        bad_line = line + text.count("\n", counted, pos)
        raise InvalidIngestError(f"{p}:{bad_line}: malformed JSON (expected ',' or ']' between questions)")


def _nothing_after(text: str, pos: int, p: Path) -> None:
    rest = _WS.match(text, pos).end()  # type: ignore[union-attr]
    if rest < len(text):
        line = 1 + text.count("\n", 0, rest)
        raise InvalidIngestError(f"{p}:{line}: malformed JSON (extra data after the list of questions)")


def _parse_longmemeval(
    p: Path, plan: IngestPlan, user: str | None, skip_bad: bool, progress: Progress | None, config: MemoryConfig
) -> None:
    with _open(p) as fh:
        try:
            text = fh.read()
        except UnicodeDecodeError as exc:
            raise InvalidIngestError(f"{p}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    text = text.removeprefix("\ufeff")
    total = len(text)
    for line, end, value in _elements(text, p):
        where = f"{p}:{line}"
        try:
            exchanges, notes = _lme_question(value, where, user)
            for exchange in exchanges:
                _checked(exchange, config)
        except InvalidIngestError as exc:
            if not skip_bad:
                raise
            plan.skipped.append(str(exc))
        else:
            plan.exchanges.extend(exchanges)
            plan.notes.extend(notes)
        if progress is not None:
            progress(end, total)


def _lme_question(value: Any, where: str, user: str | None) -> tuple[list[Exchange], list[str]]:
    if not isinstance(value, dict):
        raise InvalidIngestError(f"{where}: expected a question object, got {type(value).__name__}")
    try:
        q = LmeQuestion.model_validate(value)
    except ValidationError as exc:
        raise InvalidIngestError(f"{where}: {_reason(exc)}") from None
    qid = str(q.question_id)
    label = f"{where}: question {qid!r}"
    if not qid.strip():
        raise InvalidIngestError(f"{where}: question_id is empty")
    if len(q.haystack_dates) != len(q.haystack_sessions):
        raise InvalidIngestError(
            f"{label}: {len(q.haystack_sessions)} haystack_sessions but {len(q.haystack_dates)} haystack_dates"
        )
    user_id = user if user is not None else qid
    exchanges: list[Exchange] = []
    notes: list[str] = []
    for s, (session, date_text) in enumerate(zip(q.haystack_sessions, q.haystack_dates, strict=True)):
        try:
            at = parse_lme_date(date_text)
        except ValueError as exc:
            raise InvalidIngestError(f"{label}: haystack_dates[{s}]: {exc}") from None
        current: Exchange | None = None
        orphans = 0
        for t, turn in enumerate(session):
            if turn.role == "user":
                if not turn.content.strip():
                    raise InvalidIngestError(f"{label}: haystack_sessions[{s}][{t}]: empty user message")
                current = Exchange(user_id=user_id, user=turn.content, assistant=None, at=at, source=where)
                exchanges.append(current)
            elif current is None:
                orphans += 1
            elif turn.content.strip():
                previous = current.assistant
                current.assistant = turn.content if previous is None else f"{previous}\n\n{turn.content}"
        if orphans:
            notes.append(
                f"{label}: haystack_sessions[{s}]: {orphans} assistant turn(s) before the first user turn not ingested"
            )
    return exchanges, notes


# -- writing ---------------------------------------------------------------------------------------


async def ingest(mem: Any, plan: IngestPlan) -> int:
    """Write every exchange of the plan in one transaction; returns how many were written."""
    if not plan.exchanges:
        return 0
    await mem.add_exchanges([e.as_tuple() for e in plan.exchanges])
    return len(plan.exchanges)

"""Property-based tests of ingest (issue 10): whatever a JSONL or LongMemEval file holds (any JSON
shape, dates from year 1 to 9999 in any zone, Unicode with lone surrogates and control characters,
sizes around the limits, deep nesting, huge numbers, bytes that are not UTF-8), ingest ends in exactly
one of two ways: success, with every parsed exchange stored, or exit 2 with `FILE:LINE: reason` and
nothing written. Never a traceback, never a partial write.

The bulk of the examples runs in-process (parse, then write into a real store); a few run the
real `memdesk ingest` subprocess and compare it with the in-process answer. The tests that write run
on both backends; on PostgreSQL every example of a test writes into the test's one database (the
checks compare message counts before and after, so earlier examples do not matter) and there are
fewer examples, since each costs a pool's connections rather than a file.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cli import memdesk

from engine import Memory
from engine.errors import InvalidIngestError
from engine.ingest import IngestPlan, ingest, parse_file
from engine.timeutil import EARLIEST, LATEST
from tests.engine_helpers import sql

SPECIALS = ["\ud800", "\udfff", "\x1b]2;PWNED\x07", "\x1b[2J", "\x00", "\x9b", "\u2028", "\ufeff", "\r", "é", "🍵"]

text = st.lists(st.one_of(st.characters(exclude_categories=()), st.sampled_from(SPECIALS)), max_size=12).map("".join)
sized = st.sampled_from([1, 19_999, 20_000, 20_001]).map(lambda n: "w" * n)
zones = st.sampled_from(
    [None, UTC, timezone(timedelta(hours=14)), timezone(timedelta(hours=-12)), timezone(timedelta(hours=5, minutes=30))]
)
dates = st.one_of(
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59), timezones=zones).map(
        lambda d: d.isoformat()
    ),
    st.sampled_from(
        [
            "0001-01-01",
            "9999-12-31T23:59:59Z",
            "9999-12-31T23:00-05:00",
            "1900-01-01T00:00Z",
            "2200-12-31T23:59:59Z",
            "1899-12-31T23:59:59Z",
            "2024-02-30",
            "yesterday",
            "",
        ]
    ),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | text,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(text, children, max_size=3),
    max_leaves=8,
)


def field(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(good, good, good, json_values)


records = st.fixed_dictionaries(
    {"user": field(st.one_of(text, sized, st.just("I moved to Porto last year")))},
    optional={
        "user_id": field(st.one_of(text, st.just("ana"))),
        "assistant": field(st.one_of(text, sized)),
        "at": field(dates),
        "extra": json_values,
    },
)
raw_lines = st.one_of(
    records.map(lambda r: json.dumps(r, ensure_ascii=True)),  # lone surrogates survive as \ud800 escapes
    records.map(lambda r: json.dumps(r, ensure_ascii=False, allow_nan=True).encode("utf-8", "surrogatepass")),
    json_values.map(json.dumps),
    st.sampled_from(
        [
            '{"user_id":"a","user":"hi","at":"2024-01-01","x":' + "[" * 5000 + "]" * 5000 + "}",
            '{"user_id":"a","user":"hi","at":"2024-01-01","x":' + "9" * 5000 + "}",
            '{"user_id":"a","user":"hi","at":"2024-01-01"} trailing',
            '{"user_id":"a","user":"hi","at":"2024-01-01"}',
            "",
        ]
    ),
    st.binary(max_size=40),
)
files = st.lists(raw_lines, min_size=1, max_size=5)


def write_lines(path: Path, lines: list[str | bytes]) -> None:
    with path.open("wb") as fh:
        for line in lines:
            raw = line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass")
            fh.write(raw.replace(b"\n", b" ") + b"\n")


def parse(path: Path, skip_bad: bool, fmt: str = "jsonl") -> IngestPlan | InvalidIngestError:
    """The plan, or the InvalidIngestError: any other exception fails the property."""
    try:
        return parse_file(path, fmt, skip_bad=skip_bad)  # type: ignore[arg-type]
    except InvalidIngestError as exc:
        return exc


def check_plan(plan: IngestPlan) -> None:
    for ex in plan.exchanges:
        assert EARLIEST <= ex.at <= LATEST
        for value in (ex.user_id, ex.user, ex.assistant or ""):
            value.encode("utf-8")  # no lone surrogate survives parsing
    for line in plan.skipped:
        assert line.startswith(f"{plan.path}:")


async def store(db: Path | str, plan: IngestPlan) -> int:
    async with Memory(db) as mem:
        before = await count(mem)
        written = await ingest(mem, plan)
        after = await count(mem)
    expected = sum(1 + (e.assistant is not None) for e in plan.exchanges)
    assert after - before == expected and written == len(plan.exchanges)
    return written


async def count(mem: Memory) -> int:
    async with sql(mem) as conn:
        return int((await (await conn.execute("SELECT count(*) FROM messages")).fetchone())[0])  # type: ignore[index]


FAST = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@FAST
@given(lines=files, skip_bad=st.booleans())
def test_parsing_any_jsonl_is_a_plan_or_a_file_line_reason(lines: list[str | bytes], skip_bad: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "in.jsonl"
        write_lines(path, lines)
        got = parse(path, skip_bad)
        if isinstance(got, InvalidIngestError):
            assert not skip_bad or "no such file" not in str(got)
            assert str(got).startswith(f"{path}:"), str(got)
        else:
            check_plan(got)


def examples(backend: str, on_sqlite: int, on_postgres: int) -> settings:
    """Settings for a property run inside a test that takes the backend fixture (the fixture's store
    is shared by the examples: that is intended, hence the health check off)."""
    return settings(
        max_examples=on_sqlite if backend == "sqlite" else on_postgres,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
    )


def test_every_plan_that_parsed_is_stored_whole(backend: str, store_target: str) -> None:
    """What parsing accepts, the store accepts: the checks are the same (`limits.check_exchange`),
    so a write never fails halfway through a file after the database was opened."""

    @examples(backend, 40, 15)
    @given(lines=files)
    def check(lines: list[str | bytes]) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "in.jsonl"
            write_lines(path, lines)
            got = parse(path, skip_bad=True)
            if isinstance(got, IngestPlan) and got.exchanges:
                check_plan(got)
                asyncio.run(store(Path(tmp) / "store.db" if backend == "sqlite" else store_target, got))

    check()


lme_turns = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant", "system"]), "content": field(st.one_of(text, sized))}
    ),
    max_size=3,
)
lme_dates = st.one_of(
    st.sampled_from(["2023/05/20 (Sat) 02:21", "0001/01/01 (Mon) 00:00", "9999/12/31 (Fri) 23:59"]), dates
)
lme_questions = st.fixed_dictionaries(
    {
        "question_id": field(st.one_of(text, st.integers())),
        "haystack_sessions": st.lists(lme_turns, max_size=2),
        "haystack_dates": st.lists(lme_dates, max_size=2),
    }
)


@FAST
@given(
    questions=st.lists(st.one_of(lme_questions, json_values), max_size=3),
    tail=st.sampled_from(["", "\n", " junk", "]", ",{}"]),
    skip_bad=st.booleans(),
)
def test_parsing_any_longmemeval_list_is_a_plan_or_a_file_line_reason(
    questions: list[Any], tail: str, skip_bad: bool
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "in.json"
        path.write_bytes((json.dumps(questions, indent=1) + tail).encode("utf-8", "surrogatepass"))
        got = parse(path, skip_bad, "longmemeval")
        if isinstance(got, InvalidIngestError):
            assert str(got).startswith(f"{path}:"), str(got)
        else:
            assert tail.strip() == ""  # trailing junk is never accepted
            check_plan(got)


def test_the_real_cli_exits_0_or_2_and_agrees_with_the_library(backend: str, store_target: str) -> None:

    async def stored(db: Path | str) -> int:
        async with Memory(db) as mem:
            return await count(mem)

    @examples(backend, 6, 4)
    @given(lines=files, skip_bad=st.booleans())
    def check(lines: list[str | bytes], skip_bad: bool) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "in.jsonl"
            db: Path | str = Path(tmp) / "cli.db" if backend == "sqlite" else store_target
            before = 0 if backend == "sqlite" else asyncio.run(stored(db))
            write_lines(path, lines)
            done = memdesk("ingest", db, path, *(["--skip-bad"] if skip_bad else []))
            assert done.returncode in (0, 2), done.stderr
            assert "Traceback" not in done.stderr
            got = parse(path, skip_bad)
            if done.returncode == 2:
                if isinstance(db, Path):
                    assert not db.exists()
                else:  # nothing written
                    assert asyncio.run(stored(db)) == before
                assert isinstance(got, InvalidIngestError) or not got.exchanges
            else:
                assert isinstance(got, IngestPlan)
                expected = sum(1 + (e.assistant is not None) for e in got.exchanges)
                assert asyncio.run(stored(db)) - before == expected

    check()

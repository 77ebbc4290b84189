"""One interval rule on every write path: `invalid_at` strictly after `valid_at` when both are set,
timezone-aware times only (a naive datetime is refused, never read as local time). A refused write
leaves every table, the audit log included, exactly as it was.

Checked with hypothesis over random intervals in several zones, against each write path:
queue_candidate, approve with an edited interval, confirm_supersession with one, add_knowledge and
correct.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import InvalidIntervalError, Knowledge, Memory
from tests.engine_helpers import T0, Clock, snapshot, sql

ZONES = [UTC, timezone(timedelta(hours=2)), timezone(timedelta(hours=-5, minutes=-30)), timezone(timedelta(hours=14))]

aware = st.builds(
    lambda dt, tz: dt.replace(tzinfo=UTC).astimezone(tz),
    # up to ten years (the largest delta below) before the engine's last representable day, 2200-12-31:
    # an end past it is refused as unrepresentable, which is not the interval rule under test
    st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2190, 1, 1)),
    st.sampled_from(ZONES),
)
# Deltas around zero on purpose: an empty interval (delta 0) and a one-microsecond one are the edges.
deltas = st.one_of(
    st.just(timedelta(0)),
    st.sampled_from([timedelta(microseconds=1), timedelta(microseconds=-1)]),
    st.timedeltas(min_value=timedelta(days=-3650), max_value=timedelta(days=3650)),
)


@st.composite
def intervals(draw: st.DrawFn) -> tuple[datetime | None, datetime | None]:
    start = draw(st.one_of(st.none(), aware))
    if start is None:
        return None, draw(st.one_of(st.none(), aware))
    if draw(st.booleans()):
        return start, None
    end = start + draw(deltas)
    return start, end.astimezone(draw(st.sampled_from(ZONES)))


def is_valid(start: datetime | None, end: datetime | None) -> bool:
    return start is None or end is None or end > start


def as_utc(value: datetime | None) -> datetime | None:
    return value.astimezone(UTC) if value is not None else None


WritePath = Callable[[Memory, dict[str, int], datetime | None, datetime | None], Awaitable[Any]]


async def _queue(mem: Memory, ids: dict[str, int], start: datetime | None, end: datetime | None) -> Any:
    cid = await mem.queue_candidate("ana", "Ana lives in Porto", valid_at=start, invalid_at=end)
    return await mem.review.get(cid)


async def _approve_edit(mem: Memory, ids: dict[str, int], start: datetime | None, end: datetime | None) -> Any:
    return await mem.review.approve(ids["candidate"], reviewer="rev", valid_at=start, invalid_at=end)


async def _confirm_edit(mem: Memory, ids: dict[str, int], start: datetime | None, end: datetime | None) -> Any:
    return await mem.review.confirm_supersession(ids["update"], reviewer="rev", valid_at=start, invalid_at=end)


async def _add(mem: Memory, ids: dict[str, int], start: datetime | None, end: datetime | None) -> Any:
    return await mem.add_knowledge("ana", "Ana works at Acme", actor="support", valid_at=start, invalid_at=end)


async def _correct(mem: Memory, ids: dict[str, int], start: datetime | None, end: datetime | None) -> Any:
    return await mem.correct(
        "ana", ids["fact"], "Ana has two cats", actor="support", reason="count", valid_at=start, invalid_at=end
    )


PATHS: dict[str, WritePath] = {
    "queue_candidate": _queue,
    "approve_edit": _approve_edit,
    "confirm_edit": _confirm_edit,
    "add_knowledge": _add,
    "correct": _correct,
}


async def _seeded(target: str = ":memory:") -> tuple[Memory, dict[str, int]]:
    """A store with two facts and two candidates of Ana's."""
    mem = await Memory(target, clock=Clock()).open()
    fact = await mem.add_knowledge("ana", "Ana has a cat", actor="support")
    home = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")
    cand = await mem.queue_candidate("ana", "Ana plays the oboe")
    update = await mem.queue_candidate("ana", "Ana lives in Faro", kind="update", supersedes_id=home.id)
    return mem, {"fact": fact.id, "candidate": cand, "update": update}


def test_every_write_path_applies_the_one_interval_rule(backend: str, request: pytest.FixtureRequest) -> None:
    # A fresh store per example: in memory on SQLite; a new database on PostgreSQL (audit_log refuses
    # TRUNCATE, and a correction repeated in one store is a duplicate), with fewer examples
    server = request.getfixturevalue("pg_server") if backend == "postgres" else None

    @settings(
        max_examples=60 if server is None else 15,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(intervals(), st.sampled_from(sorted(PATHS)))
    def check(interval: tuple[datetime | None, datetime | None], path: str) -> None:
        if server is None:
            asyncio.run(one_write(":memory:", interval, path))
        else:
            with server.database() as url:
                asyncio.run(one_write(url, interval, path))

    check()


async def one_write(target: str, interval: tuple[datetime | None, datetime | None], path: str) -> None:
    start, end = interval
    mem, ids = await _seeded(target)
    try:
        before = await snapshot(mem)
        if is_valid(start, end):
            written = await PATHS[path](mem, ids, start, end)
            assert (written.valid_at, written.invalid_at) == (as_utc(start), as_utc(end))
            for stored in (written.valid_at, written.invalid_at):
                assert stored is None or stored.utcoffset() == timedelta(0)
            assert len((await snapshot(mem))["audit_log"]) > len(before["audit_log"])
        else:
            with pytest.raises(InvalidIntervalError):
                await PATHS[path](mem, ids, start, end)
            assert await snapshot(mem) == before
    finally:
        await mem.close()


NAIVE = datetime(2024, 1, 1, 12, 0)


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("which", ["valid_at", "invalid_at"])
async def test_naive_datetimes_are_refused_on_every_write_path(path: str, which: str, store_target: str) -> None:
    mem, ids = await _seeded(store_target)
    try:
        before = await snapshot(mem)
        start, end = (NAIVE, None) if which == "valid_at" else (None, NAIVE)
        with pytest.raises(InvalidIntervalError, match="timezone"):
            await PATHS[path](mem, ids, start, end)
        assert await snapshot(mem) == before
        # Positive control: the same instant with a zone is accepted.
        aware_start, aware_end = (
            (NAIVE.replace(tzinfo=UTC), None) if which == "valid_at" else (None, NAIVE.replace(tzinfo=UTC))
        )
        written = await PATHS[path](mem, ids, aware_start, aware_end)
        assert (written.valid_at, written.invalid_at) == (aware_start, aware_end)
    finally:
        await mem.close()


async def test_naive_query_times_are_refused(store_target: str) -> None:
    mem, _ = await _seeded(store_target)
    try:
        for kwargs in ({"at_time": NAIVE}, {"known_at": NAIVE}):
            with pytest.raises(InvalidIntervalError):
                await mem.retrieve("Ana", user_id="ana", **kwargs)
        with pytest.raises(InvalidIntervalError):
            await mem.knowledge("ana", at_time=NAIVE)
        ok = await mem.retrieve("Ana", user_id="ana", at_time=T0, known_at=T0)
        assert {i.knowledge.statement for i in ok.items} == {"Ana has a cat", "Ana lives in Lisbon"}
    finally:
        await mem.close()


async def test_times_in_other_zones_are_stored_as_the_same_instant_in_utc(store_target: str) -> None:
    mem, _ = await _seeded(store_target)
    try:
        lisbon_summer = timezone(timedelta(hours=1))
        start = datetime(2024, 6, 1, 0, 30, tzinfo=lisbon_summer)
        fact: Knowledge = await mem.add_knowledge("ana", "Ana swims", actor="s", valid_at=start)
        assert fact.valid_at == datetime(2024, 5, 31, 23, 30, tzinfo=UTC)
        assert fact.valid_at is not None and fact.valid_at.tzinfo == UTC
        # Valid from 23:30 UTC: a query at 23:29:59 UTC (00:29:59 in the writer's zone) misses it.
        miss = await mem.knowledge("ana", at_time=datetime(2024, 5, 31, 23, 29, 59, tzinfo=UTC))
        hit = await mem.knowledge("ana", at_time=datetime(2024, 5, 31, 23, 30, tzinfo=UTC))
        assert fact.id not in {k.id for k in miss} and fact.id in {k.id for k in hit}
    finally:
        await mem.close()


async def test_the_database_itself_refuses_an_inverted_interval(store_target: str) -> None:
    """Belt and braces: a write path that forgot check_interval would still be stopped by CHECK."""
    mem, _ = await _seeded(store_target)
    try:
        with pytest.raises(Exception, match=r"(?i)check constraint"):  # SQLite: "CHECK constraint failed"
            async with sql(mem, write=True) as conn:
                await conn.execute(
                    "INSERT INTO knowledge(user_id, statement, key, valid_at, invalid_at, created_at, status,"
                    " created_by) VALUES ('ana', 'x', 'x', 10, 10, 1, 'active', 't')"
                )
    finally:
        await mem.close()

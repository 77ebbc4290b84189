"""Audit as typed events (engine/storage/events.py): a write transaction's audit rows are handed
on after it commits, in one place for both backends (`Store.transaction`), and never when it rolls
back. Every test runs on both backends (the `mem` fixture)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from engine import Memory
from engine.errors import AlreadyDecidedError
from engine.storage import NEW_CANDIDATES
from engine.storage.events import Audited, CommitEvents
from tests.engine_helpers import DRAWS


class Boom(Exception):
    pass


async def _audit(mem: Memory, user: str, *, fail: bool) -> None:
    async with mem.store.transaction() as tx:
        await tx.audit(at=1, actor="ana", action="note", user_id=user, entity="candidate", entity_id=7)
        if fail:
            raise Boom


async def test_events_are_dispatched_after_commit_and_never_for_a_rollback(mem: Memory) -> None:
    got: list[Sequence[Audited]] = []

    async def handler(events: Sequence[Audited]) -> None:
        got.append(events)

    mem.store.events.connect(handler)
    with pytest.raises(Boom):
        await _audit(mem, "u1", fail=True)
    assert got == []  # rolled back: nothing handed on
    await _audit(mem, "u1", fail=False)  # the positive control: committed
    assert got == [[Audited("note", "ana", "u1", "candidate", 7)]]


async def test_a_refused_decision_dispatches_nothing_and_an_accepted_one_does(mem: Memory) -> None:
    got: list[Audited] = []

    async def handler(events: Sequence[Audited]) -> None:
        got.extend(events)

    outcome = await mem.propose("u1", "User plays the oboe", actor="agent")
    assert outcome.candidate_id is not None
    mem.store.events.connect(handler)
    await mem.review.approve(outcome.candidate_id, "ana")
    assert [(e.action, e.actor, e.entity_id) for e in got if e.entity == "candidate" and e.action not in DRAWS] == [
        ("approve", "ana", outcome.candidate_id)
    ]
    got.clear()
    with pytest.raises(AlreadyDecidedError):
        await mem.review.approve(outcome.candidate_id, "ana")  # refused inside its transaction
    assert got == []


async def test_this_process_subscribers_hear_a_commit_and_not_a_rollback(mem: Memory) -> None:
    """SQLite calls this process's subscribers after the commit; PostgreSQL's NOTIFY (queued in
    the transaction) arrives through its listener. Neither for a rollback."""
    import asyncio

    got: list[str] = []
    stop = await mem.store.subscribe(NEW_CANDIDATES, got.append)
    try:
        with pytest.raises(Boom):
            await _audit(mem, "u-rolled-back", fail=True)
        await _audit(mem, "u-committed", fail=False)
        for _ in range(100):
            if "u-committed" in got:
                break
            await asyncio.sleep(0.02)
        assert "u-committed" in got
        assert "u-rolled-back" not in got
    finally:
        await stop()


async def test_held_events_are_handed_on_once_when_the_hold_ends() -> None:
    events = CommitEvents()
    got: list[list[str]] = []

    async def handler(batch: Sequence[Audited]) -> None:
        got.append([e.user_id for e in batch])

    disconnect = events.connect(handler)
    one, two = (Audited("approve", "ana", u, "candidate", 1) for u in ("u1", "u2"))
    async with events.held():
        await events.dispatch([one])
        async with events.held():  # nested: only the outermost hold hands them on
            await events.dispatch([two])
        assert got == []
    assert got == [["u1", "u2"]]
    await events.dispatch([one])  # not held: at once
    assert got == [["u1", "u2"], ["u1"]]
    disconnect()
    await events.dispatch([one])
    assert len(got) == 2


async def test_a_failing_handler_does_not_stop_the_others() -> None:
    events = CommitEvents()
    got: list[int] = []

    async def failing(_batch: Sequence[Audited]) -> None:
        raise RuntimeError("handler bug")

    async def counting(batch: Sequence[Audited]) -> None:
        got.append(len(batch))

    events.connect(failing)
    events.connect(counting)
    await events.dispatch([Audited("approve", "ana", "u1", "candidate", 1)])
    assert got == [1]

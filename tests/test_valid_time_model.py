"""The valid-time and belief-time read rule, checked over random histories against a model of a
few lines of plain Python (the README's "Valid time and belief time", restated as code).

A history is a random run of: inject a fact with a random interval; confirm an update or a
contradiction of an active fact (with a start, or none: then it starts when the candidate was
queued); keep both; correct; retract; mark one fact superseded by another. After it, every
combination of `at_time` and `known_at` over a grid of times is asked of BOTH index arms
separately (vector KNN and BM25, each applying the predicates before its LIMIT), of `retrieve`
(statuses as of known_at) and of `Memory.knowledge(at_time=...)`.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import Memory, UserInputError
from engine.timeutil import to_us
from tests.engine_helpers import Clock

YEARS = list(range(2018, 2031))
QUERY = "ana fact"


def year(y: int) -> datetime:
    return datetime(y, 1, 1, tzinfo=UTC)


@dataclass
class Fact:
    id: int
    start: datetime | None
    end: datetime | None
    created: datetime
    expired: datetime | None = None
    status: str = "active"
    end_reason: str | None = None
    # the end it had while it was believed: its end at creation (only a supersession, at the
    # moment belief ends, closes an interval)
    believed_end: datetime | None = None

    def still_true(self) -> bool:
        return self.status == "active" or (
            self.status == "superseded" and self.end_reason in ("superseded", "contradicted")
        )

    def valid(self, t: datetime, end: datetime | None) -> bool:
        return (self.start is None or self.start <= t) and (end is None or end > t)

    def held(self, k: datetime) -> bool:
        return self.created <= k and (self.expired is None or self.expired > k)

    def supersede(self, new_start: datetime | None, now: datetime, reason: str) -> None:
        """The rule: close at the new start when it falls strictly inside the old interval."""
        self.status, self.expired, self.end_reason = "superseded", now, reason
        if (
            new_start is not None
            and (self.start is None or new_start > self.start)
            and (self.end is None or new_start < self.end)
        ):
            self.end = new_start


def expected(facts: list[Fact], at: datetime | None, known: datetime | None, include_expired: bool) -> set[int]:
    out = set()
    for f in facts:
        if known is not None:
            ok = f.held(known) and (at is None or f.valid(at, f.believed_end))
        elif at is not None:
            ok = (include_expired or f.still_true()) and f.valid(at, f.end)
        else:
            ok = include_expired or f.status == "active"
        if ok:
            out.add(f.id)
    return out


start_st = st.one_of(st.none(), st.sampled_from(YEARS))
op_st = st.one_of(
    st.tuples(st.just("add"), start_st, st.integers(1, 5), st.booleans()),
    st.tuples(st.just("confirm"), st.integers(0, 99), start_st, st.sampled_from(["update", "contradiction"])),
    st.tuples(st.just("keep_both"), st.integers(0, 99), start_st),
    st.tuples(st.just("correct"), st.integers(0, 99)),
    st.tuples(st.just("retract"), st.integers(0, 99)),
    st.tuples(st.just("supersede"), st.integers(0, 99), st.integers(0, 99)),
)


async def run_history(ops: list[tuple], gaps: list[int], target: str = ":memory:", user: str = "ana") -> None:
    clock = Clock(year(2025))
    facts: list[Fact] = []
    moments: list[datetime] = [clock.now - timedelta(days=1)]
    n = 0

    def text() -> str:
        nonlocal n
        n += 1
        return f"Ana fact number{n}"

    async with Memory(target, clock=clock) as mem:
        for i, op in enumerate(ops):
            clock.advance(days=gaps[i % len(gaps)])
            moments.append(clock.now)
            active = [f for f in facts if f.status == "active"]
            kind = op[0]
            if kind == "add":
                _, s, length, open_end = op
                start = None if s is None else year(s)
                end = None if open_end or s is None else year(s + length)
                k = await mem.add_knowledge(user, text(), actor="t", valid_at=start, invalid_at=end)
                facts.append(Fact(k.id, start, end, clock.now, believed_end=end))
            elif kind in ("confirm", "keep_both") and active:
                old = active[op[1] % len(active)]
                start = None if op[2] is None else year(op[2])
                cand_kind = op[3] if kind == "confirm" else "update"
                queued = clock.now
                cid = await mem.queue_candidate(user, text(), kind=cand_kind, supersedes_id=old.id, valid_at=start)
                clock.advance(hours=1)
                new_start = start if start is not None else queued  # no start: when it was said
                if kind == "confirm":
                    try:
                        k = await mem.review.confirm_supersession(cid, reviewer="r")
                    except UserInputError:
                        # refused only when the new fact starts at or before the old one (issue 26)
                        assert old.start is not None and new_start <= old.start
                        moments.append(clock.now + timedelta(minutes=30))
                        continue
                else:
                    k = await mem.review.keep_both(cid, reviewer="r")
                assert k.valid_at == new_start
                facts.append(Fact(k.id, new_start, None, clock.now))
                if kind == "confirm":
                    why = "contradicted" if cand_kind == "contradiction" else "superseded"
                    old.supersede(new_start, clock.now, why)
            elif kind == "correct" and active:
                old = active[op[1] % len(active)]
                k = await mem.correct(user, old.id, text(), actor="t", reason="fix")
                facts.append(Fact(k.id, old.start, old.end, clock.now, believed_end=old.end))
                old.status, old.expired, old.end_reason = "superseded", clock.now, "corrected"
            elif kind == "retract" and active:
                old = active[op[1] % len(active)]
                # a retraction's end_reason is its free-text reason, which may read like a change
                reason = "superseded" if op[1] % 2 else "wrong"
                await mem.retract(user, old.id, actor="t", reason=reason, tombstone=False)
                old.status, old.expired, old.end_reason = "retracted", clock.now, reason
            elif kind == "supersede" and len(active) >= 2:
                old = active[op[1] % len(active)]
                others = [f for f in active if f is not old]
                new = others[op[2] % len(others)]
                # with no start of its own, the new fact starts when it was stated: for an injected
                # fact, when it was added (engine.stated)
                begins = new.start if new.start is not None else new.created
                try:
                    await mem.supersede(user, old.id, new.id, actor="t", reason="moved")
                except UserInputError:
                    # refused only when that start is at or before the old fact's (issue 26)
                    assert old.start is not None and begins <= old.start
                    moments.append(clock.now + timedelta(minutes=30))
                    continue
                old.supersede(begins, clock.now, "superseded")
            moments.append(clock.now + timedelta(minutes=30))
        await check(mem, facts, moments, user)


async def check(mem: Memory, facts: list[Fact], moments: list[datetime], user: str = "ana") -> None:
    [embedding] = await mem.embedder.embed([QUERY])
    ats: list[datetime | None] = [None, *(year(y) + timedelta(days=100) for y in YEARS[::2]), *map(year, YEARS[1::3])]
    knowns: list[datetime | None] = [None, *moments[::2]]
    async with mem.store.reading() as tx:
        for at in ats:
            for known in knowns:
                for include_expired in (False, True):
                    want = expected(facts, at, known, include_expired)
                    args = {"at_time": to_us(at), "known_at": to_us(known), "include_expired": include_expired}
                    vec = await tx.vector_arm(user, embedding, 500, **args)
                    text = await tx.text_arm(user, ["ana", "fact"], 500, **args)
                    assert set(vec) == want, ("vector", at, known, include_expired)
                    assert set(text) == want, ("text", at, known, include_expired)
    for at in ats[1:]:
        listed = {k.id for k in await mem.knowledge(user, at_time=at)}
        assert listed == expected(facts, at, None, False), ("knowledge()", at)
    by_id = {f.id: f for f in facts}
    for known in knowns[1:]:
        assert known is not None
        result = await mem.retrieve(QUERY, user_id=user, top_k=500, known_at=known)
        assert {i.knowledge.id for i in result.items} == expected(facts, None, known, False)
        for item in result.items:
            f = by_id[item.knowledge.id]
            status_then = "active" if f.expired is None or f.expired > known else f.status
            assert item.knowledge.status == status_then, (f, known)
            assert item.knowledge.invalid_at == f.believed_end, (f, known)


def test_reads_match_the_model_over_random_histories(backend: str, store_target: str) -> None:
    # SQLite: a fresh in-memory store per example; PostgreSQL: the test's one database with a user
    # of its own per example (every read is scoped by user), and fewer examples
    examples = itertools.count()

    @settings(
        max_examples=40 if backend == "sqlite" else 15,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(ops=st.lists(op_st, min_size=1, max_size=12), gaps=st.lists(st.integers(1, 60), min_size=1, max_size=5))
    def history(ops: list[tuple], gaps: list[int]) -> None:
        if backend == "sqlite":
            asyncio.run(run_history(ops, gaps))
        else:
            asyncio.run(run_history(ops, gaps, store_target, f"ana{next(examples)}"))

    history()

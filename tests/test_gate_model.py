"""The one gate as an invariant over random sequences of every public write, on both backends.

A hypothesis state machine drives one user's store through proposals, extraction, approvals (plain,
edited, lifting a tombstone), keep both, confirmed supersessions and corrections, rejections with
and without a tombstone, facts added directly (and settled), corrections, retractions, manual
supersessions, undo and lifts, in any order, with a small pool of statements chosen so that values
collide (the same value in other case and punctuation, a replacement of the same slot, a corrected
value coming back). Every call either succeeds or raises one of the engine's typed errors (which
must change nothing, checked by the invariants holding); anything else fails the test.

After every step (engine/gate.py's I1-I4):
  I1  no active fact holds the value of a live tombstone of the user;
  I2  no two active facts hold one value;
  I3  every active fact has its audit row (a `create` or `inject` of that fact);
  I4  no fact that was replaced (superseded_by set) is active, and a confirmed supersession or
      correction never leaves its target active beside the new fact;
and the as-of reads agree with the README's rule restated as a model: at time t, the facts still
believed true for their period (active, or ended because the world changed) whose valid interval
holds t; never one ended as wrong (corrected, retracted).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from engine import Memory, MemoryConfig
from engine.errors import ConflictError, UserInputError
from engine.models import Knowledge
from engine.text import same_value
from tests.engine_helpers import Clock

STATEMENTS = [
    "User lives in Lisbon",
    "User lives in Porto",
    "user lives in porto.",
    "User likes jazz",
    "User is allergic to peanuts",
    "User is allergic to penicillin",
    "User is allergic to amoxicillin",
    "User has a dog named Rex",
]
MESSAGES = [
    "I live in Porto now.",
    "I moved to Lisbon last year.",
    "I'm allergic to penicillin, remember.",
    "I love jazz.",
    "I have a dog named Rex.",
]
EXPECTED = (UserInputError, ConflictError)
_users = itertools.count()


def _model_as_of(facts: list[Knowledge], t: Any) -> set[int]:
    """The README's valid-time read rule, restated: still believed true for its period (active,
    or ended because the world changed), and valid at t."""
    out = set()
    for k in facts:
        still_true = k.status == "active" or (
            k.status == "superseded" and k.end_reason in ("superseded", "contradicted")
        )
        if still_true and (k.valid_at is None or k.valid_at <= t) and (k.invalid_at is None or k.invalid_at > t):
            out.add(k.id)
    return out


class GateMachine(RuleBasedStateMachine):
    target: str = ""

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.clock = Clock()
        self.user = f"g{next(_users)}"
        self.mem = Memory(self.target, clock=self.clock, config=MemoryConfig(second_review_rate=0.0))
        self.run(self.mem.open())

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def attempt(self, call: Callable[[], Any]) -> Any:
        """One public call: success, or a typed refusal (which must leave nothing behind)."""
        self.clock.advance(hours=1)
        try:
            return self.run(call())
        except EXPECTED:
            return None

    def teardown(self) -> None:
        self.run(self.mem.close())
        self.loop.close()

    # -- what the machine picks from ----------------------------------------------------------------

    def pending(self) -> list[int]:
        return [c.id for c in self.run(self.mem.review.pending(self.user, limit=500))]

    def decided(self) -> list[int]:
        cands = self.run(self.mem.history(self.user))
        return sorted({e.entity_id for e in cands if e.entity == "candidate" and e.entity_id is not None})

    def facts(self, include_expired: bool = False) -> list[Knowledge]:
        return list(self.run(self.mem.knowledge(self.user, include_expired=include_expired)))

    @staticmethod
    def pick(items: list[int], n: int) -> int | None:
        return items[n % len(items)] if items else None

    # -- every public write --------------------------------------------------------------------------

    @rule(s=st.sampled_from(STATEMENTS))
    def propose(self, s: str) -> None:
        self.attempt(lambda: self.mem.propose(self.user, s, actor="agent"))

    @rule(s=st.sampled_from(STATEMENTS))
    def queue(self, s: str) -> None:
        self.attempt(lambda: self.mem.queue_candidate(self.user, s, actor="curator"))

    @rule(m=st.sampled_from(MESSAGES))
    def converse(self, m: str) -> None:
        async def go() -> None:
            await self.mem.add_exchange(self.user, m, "ok", at=self.clock.now)
            await self.mem.process(self.user)

        self.attempt(go)

    @rule(n=st.integers(0, 50), edit=st.none() | st.sampled_from(STATEMENTS), lift=st.booleans())
    def approve(self, n: int, edit: str | None, lift: bool) -> None:
        cid = self.pick(self.pending(), n)
        if cid is not None:
            self.attempt(lambda: self.mem.review.approve(cid, "ana", statement=edit, lift_tombstone=lift))

    @rule(n=st.integers(0, 50), how=st.sampled_from(["keep_both", "confirm_supersession", "confirm_correction"]))
    def settle(self, n: int, how: str) -> None:
        cid = self.pick(self.pending(), n)
        if cid is not None:
            self.attempt(lambda: getattr(self.mem.review, how)(cid, "ana"))

    @rule(n=st.integers(0, 50), tombstone=st.booleans())
    def reject(self, n: int, tombstone: bool) -> None:
        cid = self.pick(self.pending(), n)
        if cid is not None:
            self.attempt(lambda: self.mem.review.reject(cid, "ana", reason="no", tombstone=tombstone))

    @rule(n=st.integers(0, 50))
    def undo(self, n: int) -> None:
        cid = self.pick(self.decided(), n)
        if cid is not None:
            self.attempt(lambda: self.mem.review.undo(cid, "ana"))

    @rule(s=st.sampled_from(STATEMENTS), settle=st.none() | st.sampled_from(["supersede", "correct", "keep_both"]))
    def add(self, s: str, settle: Any) -> None:
        self.attempt(lambda: self.mem.add_knowledge(self.user, s, actor="support", settle=settle))

    @rule(n=st.integers(0, 50), s=st.sampled_from(STATEMENTS), tombstone=st.booleans())
    def correct(self, n: int, s: str, tombstone: bool) -> None:
        kid = self.pick([k.id for k in self.facts()], n)
        if kid is not None:
            self.attempt(
                lambda: self.mem.correct(self.user, kid, s, actor="support", reason="wrong", tombstone=tombstone)
            )

    @rule(n=st.integers(0, 50), tombstone=st.booleans())
    def retract(self, n: int, tombstone: bool) -> None:
        kid = self.pick([k.id for k in self.facts()], n)
        if kid is not None:
            self.attempt(lambda: self.mem.retract(self.user, kid, actor="support", reason="gone", tombstone=tombstone))

    @rule(a=st.integers(0, 50), b=st.integers(0, 50))
    def supersede(self, a: int, b: int) -> None:
        ids = [k.id for k in self.facts()]
        old, new = self.pick(ids, a), self.pick(ids, b)
        if old is not None and new is not None:
            self.attempt(lambda: self.mem.supersede(self.user, old, new, actor="support", reason="moved"))

    @rule(n=st.integers(0, 50))
    def lift(self, n: int) -> None:
        stones = [t.id for t in self.run(self.mem.tombstones(self.user))]
        tid = self.pick(stones, n)
        if tid is not None:
            self.attempt(lambda: self.mem.lift_tombstone(self.user, tid, actor="support", reason="true now"))

    # -- the promises --------------------------------------------------------------------------------

    @invariant()
    def gate_holds(self) -> None:
        active = self.facts()
        stones = self.run(self.mem.tombstones(self.user))
        for stone in stones:  # I1
            held = [k for k in active if same_value(stone.key, k.statement)]
            assert not held, f"I1: tombstone {stone.id} ({stone.statement!r}) is live beside active {held}"
        for a, b in itertools.combinations(active, 2):  # I2
            assert not same_value(a.statement, b.statement), f"I2: facts {a.id} and {b.id} hold one value"
        events = self.run(self.mem.history(self.user))
        audited = {e.entity_id for e in events if e.entity == "knowledge" and e.action in ("create", "inject")}
        for k in active:  # I3
            assert k.id in audited, f"I3: active fact {k.id} has no audit row"
        everything = self.facts(include_expired=True)
        active_ids = {k.id for k in active}
        for k in everything:  # I4
            if k.superseded_by is not None:
                assert k.id not in active_ids, f"I4: fact {k.id} was replaced by {k.superseded_by} and is active"
        for cand_id in self.decided():
            cand = self.run(self.mem.review.get(cand_id))
            if cand.decision in ("confirm_supersession", "confirm_correction") and cand.supersedes_id is not None:
                assert cand.supersedes_id not in active_ids, f"I4: candidate {cand_id}'s target is still active"

    @invariant()
    def as_of_matches_the_model(self) -> None:
        everything = self.facts(include_expired=True)
        for t in (self.clock.now - timedelta(days=400), self.clock.now, self.clock.now + timedelta(days=400)):
            got = {k.id for k in self.run(self.mem.knowledge(self.user, at_time=t))}
            assert got == _model_as_of(everything, t), f"as-of {t}: store {got} != model"


@pytest.mark.parametrize("examples", [12])
def test_every_write_keeps_the_gate(store_target: str, examples: int) -> None:
    """I1-I4 and the as-of rule after every step of random sequences of every public write (about
    a minute per backend)."""
    GateMachine.target = store_target
    run_state_machine_as_test(
        GateMachine,
        settings=settings(
            max_examples=examples,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
        ),
    )

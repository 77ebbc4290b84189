"""Undo as one inverse per decision action (engine/undo.py, engine/actions.py): every decision
has one, and each, run, puts every table but the append-only audit log back exactly as it was
before the decision. Every test runs on both backends (the `mem` fixture)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace

import pytest

from engine import Memory, UndoRefusedError
from engine.actions import DECISIONS, AuditAction
from engine.undo import INVERSES, Undo, inverse_of
from tests.engine_helpers import Clock, snapshot

Decide = Callable[[Memory, int], Awaitable[object]]


async def _new(mem: Memory) -> int:
    return await mem.queue_candidate("ana", "Ana plays the oboe", evidence="I play the oboe", confidence=0.8)


async def _update(mem: Memory) -> int:
    old = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")
    return await mem.queue_candidate("ana", "Ana lives in Porto", kind="update", supersedes_id=old.id)


async def _retraction(mem: Memory) -> int:
    fact = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")
    return await mem.queue_candidate(
        "ana", "Forget that Ana lives in Lisbon", kind="retraction", supersedes_id=fact.id, reason="asked to forget"
    )


CASES: dict[AuditAction, tuple[Callable[[Memory], Awaitable[int]], Decide]] = {
    AuditAction.APPROVE: (_new, lambda m, c: m.review.approve(c, "rev")),
    AuditAction.EDIT_APPROVE: (_new, lambda m, c: m.review.approve(c, "rev", statement="Ana plays the oboe well")),
    AuditAction.REJECT: (_new, lambda m, c: m.review.reject(c, "rev", reason="not so")),
    AuditAction.KEEP_BOTH: (_update, lambda m, c: m.review.keep_both(c, "rev")),
    AuditAction.CONFIRM_SUPERSESSION: (_update, lambda m, c: m.review.confirm_supersession(c, "rev")),
    AuditAction.CONFIRM_CORRECTION: (_update, lambda m, c: m.review.confirm_correction(c, "rev")),
    AuditAction.APPROVE_RETRACTION: (_retraction, lambda m, c: m.review.approve(c, "rev")),
}


def test_every_decision_has_one_inverse_and_one_case_here() -> None:
    assert set(INVERSES) == DECISIONS
    assert set(CASES) == DECISIONS


@pytest.mark.parametrize("decision", sorted(CASES), ids=str)
async def test_each_inverse_restores_what_its_decision_changed(
    mem: Memory, clock: Clock, decision: AuditAction
) -> None:
    make, decide = CASES[decision]
    cid = await make(mem)
    before = await snapshot(mem)
    clock.advance(minutes=5)
    await decide(mem, cid)
    decided = await mem.review.get(cid)
    assert decided.decision == decision  # the case exercises the decision it is named after
    changed = await snapshot(mem)
    assert any(changed[t] != before[t] for t in set(changed) - {"audit_log"})  # the control: it changed rows
    clock.advance(minutes=5)
    restored = await mem.review.undo(cid, "rev")
    after = await snapshot(mem)
    assert restored.status == "pending"
    for table in sorted(set(after) - {"audit_log"}):  # the audit log only grows
        assert after[table] == before[table], table
    assert after["audit_log"][: len(before["audit_log"])] == before["audit_log"]
    assert after["audit_log"][-1][3] == AuditAction.UNDO


async def test_a_decision_with_no_inverse_is_refused_not_guessed(mem: Memory) -> None:
    cid = await _new(mem)
    await mem.review.approve(cid, "rev")
    cand = await mem.review.get(cid)
    assert inverse_of(cand) is Undo.fact_made  # the control: a known decision has its inverse
    with pytest.raises(UndoRefusedError, match="no undo is known"):
        inverse_of(replace(cand, decision="frobnicate"))

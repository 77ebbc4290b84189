"""A confidence that means something (issue 20 item 4): the offline extractor's confidence for a
rule is the posterior approval rate of that rule's past candidates under a Beta prior centred on
the sentence's firmness (PRIOR_STRENGTH decisions); runs record the counts they used."""

from __future__ import annotations

import json

from engine import Memory
from engine.extraction.offline import PRIOR_STRENGTH, calibrated
from tests.engine_helpers import sql

CITIES = ("Leeds", "York", "Bath", "Derby", "Ely", "Hull")


def test_the_prior_holds_without_history_and_decisions_move_it() -> None:
    assert calibrated(0.9, 0, 0) == 0.9 and calibrated(0.4, 0, 0) == 0.4
    assert calibrated(0.9, 0, 10) == round(9 / 20, 4)  # ten rejections: half the prior's weight
    assert calibrated(0.4, 90, 0) > 0.9  # a hedge whose rule reviewers always approve
    assert PRIOR_STRENGTH == 10.0


async def test_a_rejected_rule_loses_confidence_and_an_approved_one_keeps_it(store_target: str) -> None:
    async with Memory(store_target) as mem:
        for i, city in enumerate(CITIES):
            await mem.add_exchange(f"u{i}", f"I live in {city}.", None)
            await mem.add_exchange(f"u{i}", f"I work as a baker{i}.", None)
        await mem.process()
        for cand in await mem.review.pending(limit=100):
            if "lives in" in cand.statement:
                await mem.review.reject(cand.id, "rev", "wrong")
            else:
                await mem.review.approve(cand.id, "rev")
        await mem.add_exchange("new", "I live in Wells. I work as a potter.", None)
        await mem.process()
        fresh = {c.statement: c.confidence for c in await mem.review.pending(user_id="new")}
        dropped = {d.statement: (d.gate, d.confidence) for d in await mem.discarded("new")}
        async with sql(mem) as conn:
            [row] = await (
                await conn.execute(
                    "SELECT calibration FROM extraction_runs WHERE user_id = ? AND calibration IS NOT NULL", ["new"]
                )
            ).fetchall()
        table = (await mem.stats()).to_dict()["review"]["calibration"]["offline"]
    works = next(v for s, v in fresh.items() if "potter" in s)
    # six rejections of that rule: 9/16 < the 0.7 gate, so it is counted, not queued
    assert dropped == {"User lives in Wells": ("below_confidence", calibrated(0.9, 0, 6))}
    assert works == calibrated(0.9, 6, 0) and works > 0.9  # six approvals
    used = json.loads(row[0])
    assert sorted(used.values()) == [[0, 6], [6, 0]]
    assert table[">=0.9"] == {"approved": 6, "rejected": 6, "approval_rate": 0.5}


async def test_a_policys_approvals_are_not_evidence_for_the_confidence_it_acts_on(
    store_target: str,
) -> None:
    """Only people's decisions calibrate: a policy approving a rule's candidates must not raise the
    rule's confidence (the confidence that lets it approve), nor fill `stats`' buckets."""
    async with Memory(store_target) as mem:
        await mem.policies.add("routine", "lead", slots=("job_title",), extractor="offline", min_confidence=0.9)
        await mem.policies.enable("routine", "lead", force=True, reason="test")
        for i in range(6):
            await mem.add_exchange(f"u{i}", f"I work as a baker{i}.", None)
        await mem.process()
        assert await mem.review.pending(limit=100) == []  # the policy approved all six
        await mem.add_exchange("v", "I work as a potter.", None)
        await mem.policies.disable("routine", "lead")
        await mem.process()
        waiting = {c.user_id: c for c in await mem.review.pending(limit=100)}
        assert waiting["v"].confidence == calibrated(0.9, 0, 0)  # the prior: no person decided yet
        table = (await mem.stats()).to_dict()["review"]["calibration"]
        assert table.get("offline", {}).get(">=0.9", {}).get("approved", 0) == 0
        # the control: one person's approval moves it
        await mem.review.approve(waiting["v"].id, "rev")
        await mem.add_exchange("x", "I work as a cooper.", None)
        await mem.process()
        [x] = await mem.review.pending(user_id="x")
        assert x.confidence == calibrated(0.9, 1, 0)
        table = (await mem.stats()).to_dict()["review"]["calibration"]["offline"]
        assert table[">=0.9"]["approved"] == 1

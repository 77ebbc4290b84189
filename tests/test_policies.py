"""Review policies (engine/policies.py): shadow first, enabled only on measured evidence, deciding
through the one gate, sampled into the blind second review and suspended on overturns. Every test
runs on both backends."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engine import Memory, MemoryConfig
from engine.errors import ConflictError, UserInputError
from engine.policies import PolicyEvidenceError, wilson_lower
from tests.engine_helpers import Clock, open_memory

CONFIG = MemoryConfig(policy_min_decisions=10, second_review_rate=0.0)


async def proposals(mem: Memory, user: str, n: int, start: int = 0) -> list[int]:
    out = []
    for i in range(start, start + n):
        outcome = await mem.propose(user, f"User owns a boat named Wave{i}", actor="agent")
        assert outcome.candidate_id is not None
        out.append(outcome.candidate_id)
    return out


async def pending_ids(mem: Memory) -> set[int]:
    return {c.id for c in await mem.review.pending(limit=1000)}


def test_the_wilson_bound_is_cautious_on_small_samples() -> None:
    assert wilson_lower(0, 0) is None
    assert wilson_lower(5, 5) == pytest.approx(0.566, abs=0.001)  # 5 of 5 is not 1.0
    assert wilson_lower(10, 10) == pytest.approx(0.722, abs=0.001)
    assert wilson_lower(9, 10) == pytest.approx(0.596, abs=0.001)
    assert wilson_lower(100, 100) == pytest.approx(0.963, abs=0.001)


async def test_a_shadow_policy_records_verdicts_and_decides_nothing(new_target: Callable[[str], str]) -> None:
    async with open_memory(new_target("m"), Clock(), config=CONFIG) as mem:
        await mem.policies.add("boats", "lead", kinds=("proposed",))
        ids = await proposals(mem, "u1", 4)
        assert await pending_ids(mem) == set(ids)  # nothing decided
        assert await mem.knowledge("u1") == []
        report = await mem.policies.report("boats")
        assert (report.mode, report.judged, report.would_approve, report.decided) == ("shadow", 4, 4, 0)
        # a second pass judges nothing twice
        run = await mem.policies.run("boats")
        assert run.judged == 0 and run.approved == []
        # the verdicts are audit rows of the policy's actor on each candidate
        for cid in ids:
            rows = [e for e in await mem.history("u1") if e.entity == "candidate" and e.entity_id == cid]
            assert [(e.action, e.actor) for e in rows if e.action == "policy_verdict"] == [
                ("policy_verdict", "policy:boats")
            ]


async def test_enable_is_refused_without_evidence_and_allowed_with_it(new_target: Callable[[str], str]) -> None:
    async with open_memory(new_target("m"), Clock(), config=CONFIG) as mem:
        await mem.policies.add("boats", "lead", kinds=("proposed",), target=0.7)
        ids = await proposals(mem, "u1", 10)
        # 9 approved as they were, one rejected: precision lower bound 0.596 < 0.7
        for cid in ids[:9]:
            await mem.review.approve(cid, "ana")
        with pytest.raises(PolicyEvidenceError, match=r"people decided 9 .*\(at least 10 needed\)"):
            await mem.policies.enable("boats", "lead")  # 9 decisions: fewer than the 10 needed
        await mem.review.reject(ids[9], "ana", reason="not a boat")
        report = await mem.policies.report("boats")
        assert (report.approvals_decided, report.approvals_confirmed, report.ready) == (10, 9, False)
        with pytest.raises(PolicyEvidenceError, match=r"precision lower bound 0\.596"):
            await mem.policies.enable("boats", "lead")
        assert (await mem.policies.get("boats")).mode == "shadow"  # the refusal changed nothing
        with pytest.raises(UserInputError, match="needs a reason"):
            await mem.policies.enable("boats", "lead", force=True)
        # positive control: another policy whose record is 10 of 10 is enabled
        await mem.policies.add("boats2", "lead", kinds=("proposed",), target=0.7)
        more = await proposals(mem, "u2", 10, start=100)
        for cid in more:
            await mem.review.approve(cid, "ana")
        assert (await mem.policies.report("boats2")).ready
        enabled = await mem.policies.enable("boats2", "lead")
        assert enabled.precision_lower == pytest.approx(0.722, abs=0.001)
        assert (await mem.policies.get("boats2")).mode == "enabled"
        # forcing is possible, with a reason, and audited as forced (a new policy has no record yet)
        await mem.policies.add("boats3", "lead", kinds=("proposed",))
        await mem.policies.enable("boats3", "lead", force=True, reason="trial week, watched daily")
        actions = [e.action for e in await mem.history("") if e.entity == "policy"]
        assert actions.count("policy_enable_forced") == 1 and actions.count("policy_enable") == 1


async def test_an_enabled_policy_approves_through_the_gate_as_its_own_actor(new_target: Callable[[str], str]) -> None:
    async with open_memory(new_target("m"), Clock(), config=CONFIG) as mem:
        await mem.policies.add("boats", "lead", kinds=("proposed",), max_per_day=3)
        await mem.policies.enable("boats", "lead", force=True, reason="test")
        ids = await proposals(mem, "u1", 2)
        facts = await mem.knowledge("u1")
        assert sorted(f.candidate_id or 0 for f in facts) == ids
        assert {f.created_by for f in facts} == {"policy:boats"}
        cand = await mem.review.get(ids[0])
        assert (cand.status, cand.decided_by) == ("approved", "policy:boats")
        creates = [e for e in await mem.history("u1") if e.action == "create" and e.entity == "knowledge"]
        assert {e.actor for e in creates} == {"policy:boats"}
        # an agent's statement that would replace a fact (found by the intake's replacement
        # detection) is never approved by a policy that does not name updates: a person decides
        lisbon = await mem.add_knowledge("u1", "User lives in Lisbon", actor="support")
        update = await mem.propose("u1", "User lives in Porto", actor="agent")
        assert update.candidate_id is not None and update.candidate_id in await pending_ids(mem)
        assert (await mem.review.get(update.candidate_id)).supersedes_id == lisbon.id
        # the daily allowance: 3 decisions, then people decide
        rest = await proposals(mem, "u1", 3, start=10)
        assert [cid in await pending_ids(mem) for cid in rest] == [False, True, True]


async def test_a_policy_never_approves_what_the_gate_or_a_person_holds(new_target: Callable[[str], str]) -> None:
    async with open_memory(new_target("m"), Clock(), config=CONFIG) as mem:
        await mem.policies.add("boats", "lead", kinds=("proposed",))
        [held] = await proposals(mem, "u1", 1)  # shadow: stays pending
        await mem.team.take_user("u1", "ana")  # the user is assigned to a person
        await mem.policies.enable("boats", "lead", force=True, reason="test")
        run = await mem.policies.run("boats")
        assert run.approved == [] and [cid for cid, _ in run.left] == [held]
        assert "ana has taken" in run.left[0][1]
        # positive control: released, the same candidate is approved by the policy
        await mem.team.release_user("u1", "ana")
        assert (await mem.policies.run("boats")).approved == [held]


async def test_sampled_approvals_go_blind_to_a_person_and_overturns_suspend_the_policy(
    new_target: Callable[[str], str],
) -> None:
    async with open_memory(new_target("m"), Clock(), config=CONFIG) as mem:
        await mem.policies.add("boats", "lead", kinds=("proposed",), sample_rate=1.0, tolerance=0.2)
        await mem.policies.enable("boats", "lead", force=True, reason="test")
        ids = await proposals(mem, "u1", 6)
        queue = await mem.team.second_review_queue("bob")
        assert sorted(r.candidate_id for r in queue) == ids  # every one sampled at rate 1.0
        for cid in ids:
            await mem.team.second_review(cid, "bob", approve=False, reason="that is the neighbour's boat")
        report = await mem.policies.report("boats")
        assert (report.second_reviewed, report.overturned) == (6, 6)
        assert report.overturn_lower is not None and report.overturn_lower > 0.2
        # the next pass suspends it, audited, and it decides nothing more
        later = await proposals(mem, "u1", 1, start=50)
        assert (await mem.policies.get("boats")).mode == "suspended"
        assert later[0] in await pending_ids(mem)
        assert [e.action for e in await mem.history("") if e.entity == "policy"][-1] == "policy_suspend"


async def test_a_policy_with_a_low_sample_rate_sends_only_its_share(new_target: Callable[[str], str]) -> None:
    async with open_memory(new_target("m"), Clock(), config=CONFIG) as mem:
        await mem.policies.add("boats", "lead", kinds=("proposed",), sample_rate=0.0)
        await mem.policies.enable("boats", "lead", force=True, reason="test")
        await proposals(mem, "u1", 5)
        assert await mem.team.second_review_queue("bob") == []
        assert len(await mem.knowledge("u1")) == 5


async def test_policy_settings_are_checked(new_target: Callable[[str], str]) -> None:
    async with open_memory(new_target("m"), Clock(), config=CONFIG) as mem:
        for bad in (
            {"name": "Boats!"},
            {"name": "b", "kinds": ("pets",)},
            {"name": "b", "min_confidence": 1.5},
            {"name": "b", "max_per_day": 0},
        ):
            with pytest.raises(UserInputError):
                await mem.policies.add(actor="lead", **bad)  # type: ignore[arg-type]
        assert await mem.policies.all() == []
        await mem.policies.add("b", "lead")
        with pytest.raises(ConflictError):
            await mem.policies.add("b", "lead")


def test_the_policy_commands_shadow_report_and_refuse_to_enable_without_evidence(tmp_path: Path) -> None:
    """`memdesk policy ...` as an operator runs it: exit 2 and nothing changed when the evidence is
    missing or the input is wrong; exit 0 and the change made otherwise."""
    from tests.test_cli import memdesk

    db = tmp_path / "fleet.db"

    async def seed() -> None:
        async with Memory(db) as mem:
            for i in range(3):
                await mem.propose("ada", f"User owns a boat named Wave{i}", actor="agent-7")
            await mem.propose("ada", "User is allergic to penicillin", actor="agent-7")

    asyncio.run(seed())
    actor = ("--actor", "lead")
    assert memdesk("policy", "add", db, "boats", "--kinds", "proposed", *actor).returncode == 0
    bad = memdesk("policy", "add", db, "Boats!", *actor)
    assert bad.returncode == 2 and "policy name" in bad.stderr
    run = memdesk("policy", "run", db, "boats")
    assert run.returncode == 0 and "judged 4 new candidates, approved 0" in run.stdout
    report = memdesk("policy", "report", db, "boats", "--json")
    assert report.returncode == 0 and json.loads(report.stdout)["would_approve"] == 3
    refused = memdesk("policy", "enable", db, "boats", *actor)
    assert refused.returncode == 2 and "at least 30 needed" in refused.stderr
    listed = memdesk("policy", "list", db)
    assert "boats [shadow]" in listed.stdout  # the refusal changed nothing
    forced = memdesk("policy", "enable", db, "boats", "--force", "--reason", "pilot", *actor)
    assert forced.returncode == 0 and "forced" in forced.stdout
    assert "boats [enabled]" in memdesk("policy", "list", db).stdout
    # enabled, it approves the boats and says why the rest waits for a person
    ran = memdesk("policy", "run", db, "boats")
    assert ran.returncode == 0 and "approved 3, left 1 to people" in ran.stdout
    assert "1  special category health: always a person" in ran.stdout
    assert memdesk("policy", "disable", db, "boats", *actor).returncode == 0
    assert "boats [disabled]" in memdesk("policy", "list", db).stdout


async def test_an_enabled_policy_leaves_a_special_category_candidate_to_a_person(
    new_target: Callable[[str], str],
) -> None:
    async with open_memory(new_target("m"), Clock(), config=CONFIG) as mem:
        await mem.policies.add("any", "lead", kinds=("proposed",))
        await mem.policies.enable("any", "lead", force=True, reason="test")
        health = await mem.propose("u1", "User is allergic to penicillin", actor="agent")
        boat = await mem.propose("u1", "User owns a boat named Wave", actor="agent")  # the positive control
        assert health.candidate_id is not None and boat.candidate_id is not None
        assert (await mem.review.get(health.candidate_id)).category == "health"
        assert health.candidate_id in await pending_ids(mem)
        assert (await mem.review.get(boat.candidate_id)).status == "approved"
        run = await mem.policies.run("any")
        assert run.approved == [] and "special category health" in dict(run.left)[health.candidate_id]


async def test_a_person_confirming_the_supersession_confirms_an_update_policys_verdict(
    new_target: Callable[[str], str],
) -> None:
    """An update policy would confirm the supersession, so that decision of a person is agreement,
    and only that one: keeping both facts, or approving the statement edited, is a person saying
    the policy would have been wrong."""
    async with open_memory(new_target("m"), Clock(), config=CONFIG) as mem:
        await mem.policies.add("moves", "lead", kinds=("update",))
        ids = []
        for user in ("u1", "u2", "u3"):
            lisbon = await mem.add_knowledge(user, "User lives in Lisbon", actor="support")
            ids.append(await mem.queue_candidate(user, "User lives in Porto", kind="update", supersedes_id=lisbon.id))
        assert (await mem.policies.run("moves")).judged == 3  # shadow: verdicts only
        await mem.review.confirm_supersession(ids[0], "ana")
        report = await mem.policies.report("moves")
        assert (report.would_approve, report.approvals_decided, report.approvals_confirmed) == (3, 1, 1)
        await mem.review.keep_both(ids[1], "ana")
        await mem.review.confirm_supersession(ids[2], "ana", statement="User lives in Porto, Portugal")
        report = await mem.policies.report("moves")
        assert (report.approvals_decided, report.approvals_confirmed, report.agreed) == (3, 1, 1)


@pytest.mark.parametrize("tiers", [("moves", "routine"), ("routine",)])
async def test_policies_decide_in_queue_order_so_a_move_follows_the_fact_it_replaces(
    new_target: Callable[[str], str], tiers: tuple[str, ...]
) -> None:
    """One conversation says "I live in Lisbon" and then "I moved to Porto": the update replaces a
    candidate queued in the same run. Both policies enabled ("moves" sorts first), the pass decides
    in queue order, so Lisbon is approved and then ended by Porto. Without "moves" the update waits
    for a person (the control)."""
    kinds = {"moves": ("update",), "routine": ("new",)}
    async with open_memory(new_target("m"), Clock(), config=CONFIG) as mem:
        for name in tiers:
            await mem.policies.add(name, "lead", extractor="offline", kinds=kinds[name], min_evidence=0)
            await mem.policies.enable(name, "lead", force=True, reason="test")
        at = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
        await mem.add_exchange("ana", "I live in Lisbon.", "Nice city.", at=at)
        await mem.add_exchange(
            "ana", "Actually I moved to Porto last month.", "Congrats!", at=at + timedelta(minutes=2)
        )
        await mem.process()
        pending = await mem.review.pending()
        active = [(k.statement, k.created_by) for k in await mem.knowledge("ana")]
        if "moves" in tiers:
            assert pending == []
            assert active == [("User lives in Porto", "policy:moves")]
        else:
            assert [(c.statement, c.kind) for c in pending] == [("User lives in Porto", "update")]
            assert active == [("User lives in Lisbon", "policy:routine")]


async def test_a_policy_waits_until_people_have_judged_the_rule_its_confidence_comes_from(
    new_target: Callable[[str], str],
) -> None:
    """`min_evidence`: an offline candidate whose rule nobody has judged carries the prior (0.9) for
    confidence, a guess; a policy leaves it to a person until people decided that rule's
    candidates `min_evidence` times. A candidate with no rule (an agent's) is not held by it."""
    at = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    async with open_memory(new_target("m"), Clock(), config=CONFIG) as mem:
        await mem.policies.add("routine", "lead", kinds=("new", "proposed"), min_evidence=3)
        await mem.policies.enable("routine", "lead", force=True, reason="test")
        for i in range(3):
            await mem.add_exchange(f"u{i}", f"I work as a baker{i}.", None, at=at)
        first = await mem.process()
        waiting = await mem.review.pending(limit=100)
        assert first.queued == 3 and len(waiting) == 3  # the prior alone: people decide
        assert all(c.confidence == 0.9 for c in waiting)
        run = await mem.policies.run("routine")
        assert run.approved == [] and all("rests on 0 people's decisions" in why for _, why in run.left)
        boat = await mem.propose("u9", "User owns a boat named Wave", actor="agent")  # no rule: decided
        assert boat.candidate_id is not None and (await mem.review.get(boat.candidate_id)).status == "approved"
        for cand in waiting:
            await mem.review.approve(cand.id, "ana")
        # the control: the same rule, now judged three times by people, is the policy's
        await mem.add_exchange("u5", "I work as a potter.", None, at=at)
        await mem.process()
        assert await mem.review.pending(limit=100) == []
        assert [k.created_by for k in await mem.knowledge("u5")] == ["policy:routine"]


@pytest.mark.parametrize("moves_mode", ["enabled", "shadow"])
async def test_a_persons_decision_hands_what_it_made_decidable_to_the_enabled_policies(
    new_target: Callable[[str], str], moves_mode: str
) -> None:
    """Lisbon needs a person (no policy approves it) and Porto, queued with it, waits on it. Once
    the person approves Lisbon, Porto is an update of an active fact: an enabled update policy
    confirms it at once instead of leaving it to the same person. In shadow (the control) Porto
    waits for a person."""
    async with open_memory(new_target("m"), Clock(), config=CONFIG) as mem:
        await mem.policies.add("moves", "lead", kinds=("update",), min_evidence=0)
        if moves_mode == "enabled":
            await mem.policies.enable("moves", "lead", force=True, reason="test")
        lisbon_c = await mem.queue_candidate("u1", "User lives in Lisbon", actor="curator")
        porto_c = await mem.queue_candidate("u1", "User lives in Porto", actor="curator")
        await mem.review.approve(lisbon_c, "ana")
        # the look runs after the decision has committed, in the background: not yet when the
        # decision returns (the reviewer's key press does not wait for it)
        assert (await mem.review.get(porto_c)).status == "pending"
        await mem.policies.settled()
        porto = await mem.review.get(porto_c)
        if moves_mode == "enabled":
            assert (porto.status, porto.decided_by, porto.decision) == (
                "approved",
                "policy:moves",
                "confirm_supersession",
            )
            assert [k.statement for k in await mem.knowledge("u1")] == ["User lives in Porto"]
        else:
            assert (porto.status, porto.kind) == ("pending", "update")
            assert [k.statement for k in await mem.knowledge("u1")] == ["User lives in Lisbon"]


async def test_a_bulk_approval_gives_the_policies_one_look(
    new_target: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bulk approval is one transaction per item, and the policies look at the user once, after
    the last; the control: the same approvals one by one, each settled, are one look each. A
    policy's own decisions never ask for a look."""
    async with open_memory(new_target("m"), Clock(), config=CONFIG) as mem:
        looked: list[str] = []
        look = mem.policies.after_decision

        async def counting(user_id: str) -> object:
            looked.append(user_id)
            return await look(user_id)

        monkeypatch.setattr(mem.policies.second_look, "_look", counting)
        ids = await proposals(mem, "u1", 6)
        result = await mem.review.bulk_approve(ids[:3], "ana")
        assert len(result.approved) == 3
        await mem.policies.settled()
        assert looked == ["u1"]
        looked.clear()
        for cid in ids[3:]:
            await mem.review.approve(cid, "ana")
            await mem.policies.settled()
        assert looked == ["u1", "u1", "u1"]

"""Review at fleet volume: all-manual review against review policies, on candidates whose truth is
known, with a simulated team of reviewers.

    uv run python benchmarks/fleet.py [--users 2000] [--days 7] [--reviewers 3] [--seconds 20]
        [--hours 8] [--error-rate 0.02] [--min-confidence 0.9] [--shadow-days 2] [--out FILE]

What it does, for each arm (`manual`, `policies`), in its own fresh store:

- a week of conversations: the bundled labelled conversations (engine/data, plus the held-out
  set), copied to `--users` users (user `ana` becomes `ana~0001`, ...), each user's conversation
  moved to a random day of the week; one `process()` a day (the offline extractor), so candidates
  arrive through the real pipeline and gates;
- a team (`--reviewers` people, `--seconds` per decision, `--hours` a day) decides the queue
  oldest first, as far as the day's time allows. A person decides by the labels: a candidate that
  states a labelled fact of its user is approved (a supersession when it would replace something),
  anything else rejected; with probability `--error-rate` the person gets it wrong;
- the `policies` arm adds one policy, `routine` (the offline extractor's `new` candidates at or above
  `--min-confidence`). It is in shadow for `--shadow-days`, then `enable` is tried: refused unless its
  precision lower bound (Wilson, 95 %) reaches 0.95 over at least 30 human decisions. Once enabled it
  approves what it matches as candidates are queued; a share (`--sample-rate`) of its approvals goes
  to the blind second review, which the team does first each day, by the labels;
- the `forced` arm enables the same policy after the shadow days whatever its record says (what the
  evidence rule protects against).

It prints, per arm (the target is judged on `policies`, the arm that follows the rules): human
decisions per 1,000 candidates, wrong facts admitted per 1,000 (active
facts the labels do not hold), p95 queue age in hours (from queueing to decision; what is still
pending at the end counts with its age then), second-review overturns, and whether the policy was
enabled; the same human decisions per 1,000 from the end of the shadow period on (what an enabled
policy saves once it runs: a week that starts with two days in shadow caps the whole-week cut near
5/7 of what the policy may decide); and the wrong facts admitted, by base user and statement and
who approved them (to tell an extractor fault from a label the match rule cannot see). The issue's
target: policies cut human decisions by at least 60 % while admitting no more than 5 wrong facts per
1,000 beyond all-manual.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import platform
import random
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from engine import Memory, MemoryConfig
from engine.data import load_exchanges, load_expected
from engine.errors import MemdeskError
from engine.policies import PolicyEvidenceError
from engine.review import replaces
from engine.text import best_match, value_key

ROOT = Path(__file__).resolve().parent
HELDOUT = (ROOT / "data" / "heldout-conversations.jsonl", ROOT / "data" / "heldout-expected.json")
MATCH_THRESHOLD = 90.0
START = datetime(2026, 3, 2, 0, 0, tzinfo=UTC)  # a Monday


class SimClock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


@dataclass
class ArmResult:
    arm: str
    candidates: int = 0
    human_decisions: int = 0
    policy_approvals: int = 0
    wrong_admitted: int = 0
    active_facts: int = 0
    second_reviews: int = 0
    overturns: int = 0
    queue_age_p95_h: float = 0.0
    still_pending: int = 0
    policy_enabled_on_day: int | None = None
    # the same counts from the day the shadow period ends (the policy's steady state if enabled;
    # the same days for `manual`): a week that starts in shadow caps the whole-week cut near
    # (days - shadow_days) / days of what the policy may decide
    candidates_after_shadow: int = 0
    human_decisions_after_shadow: int = 0
    enable_refusals: list[str] = field(default_factory=list)
    # the shadow record `enable` was judged on: precision lower bound over N human decisions
    enable_evidence: list[str] = field(default_factory=list)
    # the wrong facts admitted, by base user and statement and who approved them: where they come from
    wrong_facts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def per_1000(self, n: int) -> float:
        return round(1000 * n / self.candidates, 1) if self.candidates else 0.0


def labelled_world() -> tuple[list[tuple[str, str, str | None, datetime]], dict[str, list[str]]]:
    exchanges = list(load_exchanges())
    labels = {u: [f["statement"] for f in facts] for u, facts in load_expected().items()}
    if HELDOUT[0].exists():
        held = list(load_exchanges(HELDOUT[0]))
        exchanges += [(f"h-{u}", m, a, t) for u, m, a, t in held]
        for u, facts in load_expected(HELDOUT[1]).items():
            labels[f"h-{u}"] = [f["statement"] for f in facts]
    return exchanges, labels


def is_true(statement: str, truth: list[str]) -> bool:
    return best_match(value_key(statement), [value_key(s) for s in truth], MATCH_THRESHOLD) is not None


async def run_arm(arm: str, args: argparse.Namespace, db: str) -> ArmResult:
    rng = random.Random(args.seed)
    exchanges, labels = labelled_world()
    base_users = sorted({u for u, _, _, _ in exchanges})
    by_user: dict[str, list[tuple[str, str | None, datetime]]] = {}
    for u, m, a, t in exchanges:
        by_user.setdefault(u, []).append((m, a, t))
    # every fleet user: a copy of one labelled user, its conversation moved to one day of the week
    plan: dict[int, list[tuple[str, str]]] = {}
    for n in range(args.users):
        base = base_users[n % len(base_users)]
        plan.setdefault(rng.randrange(args.days), []).append((f"{base}~{n:04d}", base))
    clock = SimClock()
    config = MemoryConfig(second_review_rate=0.0, policy_min_decisions=30)
    result = ArmResult(arm)
    queued_at: dict[int, datetime] = {}
    ages_h: list[float] = []
    truth_of: dict[str, list[str]] = {}
    began = time.perf_counter()
    async with Memory(db, clock=clock, config=config) as mem:
        if arm != "manual":
            await mem.policies.add(
                "routine",
                "bench",
                extractor="offline",
                kinds=("new",),
                min_confidence=args.min_confidence,
                sample_rate=args.sample_rate,
                target=0.95,
            )
        for day in range(args.days):
            day_start = START + timedelta(days=day)
            clock.now = day_start + timedelta(hours=7)
            if arm != "manual" and day == args.shadow_days:
                shadow = await mem.policies.report("routine")
                result.enable_evidence.append(
                    f"day {day}: {shadow.approvals_confirmed} of {shadow.approvals_decided} confirmed, precision"
                    f" lower bound {round(shadow.precision_lower or 0, 3)}, agreement {round(shadow.agreement or 0, 3)}"
                )
                try:
                    forced = arm == "forced"
                    await mem.policies.enable("routine", "bench", force=forced, reason="benchmark" if forced else None)
                    result.policy_enabled_on_day = day
                except PolicyEvidenceError as exc:
                    result.enable_refusals.append(f"day {day}: {exc}")
            batch = []
            for fleet_user, base in plan.get(day, []):
                truth_of[fleet_user] = labels.get(base, [])
                first = by_user[base][0][2]
                for m, a, t in by_user[base]:
                    batch.append((fleet_user, m, a, day_start + timedelta(hours=8) + (t - first) / 50))
            if batch:
                await mem.add_exchanges(batch)
            clock.now = day_start + timedelta(hours=8, minutes=30)
            report = await mem.process()
            result.candidates += report.queued
            after_shadow = day >= args.shadow_days
            result.candidates_after_shadow += report.queued if after_shadow else 0
            fresh = [c for c in await mem.review.pending(limit=1_000_000) if c.id not in queued_at]
            for cand in fresh:
                queued_at[cand.id] = clock.now
            ages_h += [0.0] * (report.queued - len(fresh))  # decided by the policy as they were queued
            # the team's day: second reviews first, then the queue oldest first
            budget = int(args.reviewers * args.hours * 3600 / args.seconds)
            worked = 0

            def tick(day_start: datetime = day_start) -> None:
                nonlocal worked
                worked += 1
                clock.now = day_start + timedelta(hours=9, seconds=worked * args.seconds / args.reviewers)

            for blind in await mem.team.second_review_queue("team", limit=budget):
                if worked >= budget:
                    break
                truth = truth_of.get(blind.user_id, [])
                right = is_true(blind.statement, truth) != (rng.random() < args.error_rate)
                tick()
                try:
                    if right:
                        await mem.team.second_review(blind.candidate_id, "team", approve=True)
                    else:
                        await mem.team.second_review(blind.candidate_id, "team", approve=False, reason="not so")
                        result.overturns += 1
                    result.second_reviews += 1
                except MemdeskError:
                    pass
            while worked < budget:
                page = await mem.review.pending(limit=200)
                if not page:
                    break
                for cand in page:
                    if worked >= budget:
                        break
                    truth = truth_of.get(cand.user_id, [])
                    approve = is_true(cand.statement, truth) != (rng.random() < args.error_rate)
                    tick()
                    try:
                        if not approve:
                            await mem.review.reject(cand.id, "team", reason="not so", tombstone=False)
                        elif cand.kind == "retraction":
                            await mem.review.approve(cand.id, "team")
                        elif replaces(cand):
                            await mem.review.confirm_supersession(cand.id, "team")
                        else:
                            await mem.review.approve(cand.id, "team")
                    except MemdeskError:
                        await mem.review.reject(cand.id, "team", reason="cannot be approved", tombstone=False)
                    result.human_decisions += 1
                    result.human_decisions_after_shadow += after_shadow
                    ages_h.append((clock.now - queued_at.get(cand.id, clock.now)).total_seconds() / 3600)
        end = START + timedelta(days=args.days)
        leftover = await mem.review.pending(limit=1_000_000)
        result.still_pending = len(leftover)
        ages_h += [(end - queued_at.get(c.id, end)).total_seconds() / 3600 for c in leftover]
        for user in truth_of:
            for fact in await mem.knowledge(user):
                result.active_facts += 1
                if not is_true(fact.statement, truth_of[user]):
                    result.wrong_admitted += 1
                    who = "policy" if fact.created_by == "policy:routine" else "person"
                    key = f"{user.split('~')[0]}: {fact.statement} ({who})"
                    result.wrong_facts[key] = result.wrong_facts.get(key, 0) + 1
                if fact.created_by == "policy:routine":
                    result.policy_approvals += 1
    if ages_h:
        ages_h.sort()
        result.queue_age_p95_h = round(ages_h[min(len(ages_h) - 1, math.ceil(0.95 * len(ages_h)) - 1)], 1)
    result.seconds = round(time.perf_counter() - began, 1)
    return result


def summary(r: ArmResult) -> dict[str, Any]:
    top = sorted(r.wrong_facts.items(), key=lambda kv: (-kv[1], kv[0]))[:20]
    return {
        **asdict(r),
        "wrong_facts": dict(top),
        "human_decisions_per_1000": r.per_1000(r.human_decisions),
        "wrong_admitted_per_1000": r.per_1000(r.wrong_admitted),
        "human_decisions_per_1000_after_shadow": round(
            1000 * r.human_decisions_after_shadow / r.candidates_after_shadow, 1
        )
        if r.candidates_after_shadow
        else 0.0,
    }


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--users", type=int, default=2000)
    p.add_argument("--days", type=int, default=7)
    p.add_argument("--reviewers", type=int, default=3)
    p.add_argument("--seconds", type=float, default=20.0, help="seconds a person takes per decision")
    p.add_argument("--hours", type=float, default=8.0, help="working hours a day per reviewer")
    p.add_argument("--error-rate", type=float, default=0.02)
    p.add_argument("--min-confidence", type=float, default=0.9)
    p.add_argument("--sample-rate", type=float, default=0.05)
    p.add_argument("--shadow-days", type=int, default=2)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", type=Path, help="also write the JSON here")
    args = p.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for arm in ("manual", "policies", "forced"):
            results[arm] = summary(await run_arm(arm, args, str(Path(tmp) / f"{arm}.db")))
    manual, pol, forced = results["manual"], results["policies"], results["forced"]
    cut = 1 - pol["human_decisions_per_1000"] / manual["human_decisions_per_1000"] if manual["human_decisions"] else 0
    extra_wrong = pol["wrong_admitted_per_1000"] - manual["wrong_admitted_per_1000"]
    out = {
        "benchmark": "fleet",
        "date": datetime.now(UTC).date().isoformat(),
        "machine": f"{platform.machine()}, CPython {platform.python_version()}",
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "manual": manual,
        "policies": pol,
        "forced": forced,
        "human_decisions_cut": round(cut, 3),
        "human_decisions_cut_after_shadow": round(
            1 - pol["human_decisions_per_1000_after_shadow"] / manual["human_decisions_per_1000_after_shadow"], 3
        )
        if manual["human_decisions_per_1000_after_shadow"]
        else 0,
        "extra_wrong_per_1000": round(extra_wrong, 1),
        "target_met": cut >= 0.6 and extra_wrong <= 5.0,
        # the same target read on the days after the shadow period only (not the reading:
        # the issue counts the whole week, shadow days included)
        "target_met_after_shadow": bool(
            manual["human_decisions_per_1000_after_shadow"]
            and 1 - pol["human_decisions_per_1000_after_shadow"] / manual["human_decisions_per_1000_after_shadow"]
            >= 0.6
            and extra_wrong <= 5.0
        ),
    }
    text = json.dumps(out, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

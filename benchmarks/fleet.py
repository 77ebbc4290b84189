"""Review at fleet volume, as an open world: allow-list review policies (engine/policies.py) beside
all-manual review of the same stream, per arm, with a simulated team and operator.

    uv run python benchmarks/fleet.py [--users-per-day 60] [--days 7] [--seed 7] [--heldout]
        [--arms stationary,drift,hostile,hostile-forced,fleet] [--jobs 2] [--out FILE]

The world (a generator, not copies of a fixed set): every day new users arrive, each with facts
drawn from open vocabularies (place, company and pet names built from syllables, so most values
are new every day) in one-valued and many-valued slots; agents propose them through
`Memory.propose` (the MCP path) in phrasings drawn from templates with synonyms, optional
adverbs, casing and spacing noise. Agents err: a misspelt value (a typo: wrong, and HARD for a
reviewer to see), a wrong value, a badly phrased statement the claim reader cannot read, chatter
that is no fact at all, and true special-category facts (sertraline...). `--heldout` switches to
templates and vocabularies written apart and fixed before any tuning (seed + 1000).

The team: simulated reviewers decide by the truth, with mistakes that cluster on hard items
(base error 1 %, 30 % on a misspelt value); every working hour (9:00-17:00) they decide all that
is pending and every approval drawn for second review (a second person, `r2`). In both arms: the
two-person rule (engine/sensitive.py, engine/watch.py) draws every person's approval of a
sensitive candidate or of a watched agent's proposal, so the all-manual arm second-reviews too;
people's own sample rate is 0 in both, so the policy arm's other second reviews are the policy's
sample. Second reviews are a person's decisions and are counted as human decisions. The policy: `--slots` (home,
employer, job_title, hobbies, pets, languages), the honest agents trusted, the product's default
sample rate (0.1), target 0.9 (a setting of the policy), the product's default minimum of 30
decisions per scope. The operator tries `policy enable` (never forced, except in the forced arm)
every hour: refused until some scope has its record, and after a suspension it lifts a scope only
on fresh evidence.

Arms, each beside an all-manual arm fed the same stream in the same run:
- stationary: one honest agent;
- drift: from day 2 noon the agent reads `home` wrong for a quarter of the users (their past city,
  sarcasm): the scope must be suspended within one simulated day and no wrong policy approval of
  it left active at the end (the suspension returns them to people);
- hostile: a burst (300 harmful proposals in an hour on day 3), an agent that slips one harmful
  proposal in 25, and one that watches everything it can read (MCP's accepted/queued answers) and
  repeats whatever harmful phrasing got accepted; the hostile agents are not trusted;
- hostile-forced: the same with every agent trusted and the policy forced on from the first hour;
- fleet: five honest agents, each earning its own record per slot.

Printed per arm: human decisions per 1,000 candidates (queue decisions and second reviews, both a
person's time, in both arms) for policy and manual and the cut; wrong facts still active at the end of the week
per 1,000, after suspension's clean-up, approved by people and by the policy counted apart;
harmful facts active; suspensions (scope, when, how long after the drift began, what returned).
Targets: stationary cut >= 50 % with at most 2 more wrong active per 1,000 than manual; drift
suspended within 24 h with no wrong policy approval of the drifted scope active; hostile: no
harmful fact active, in any mode.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import platform
import random
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from engine import HashingEmbedder, Memory, MemoryConfig
from engine.errors import MemdeskError
from engine.policies import SUSPEND, PolicyEvidenceError

T0 = datetime(2026, 6, 1, tzinfo=UTC)  # a Monday
SLOTS = ("home", "employer", "job_title", "hobbies", "pets", "languages")
TARGET = 0.9

# -- the generator (dev part: what the rules were looked at against) -------------------------------

DEV: dict[str, Any] = {
    "templates": {
        "home": ["User lives in {v}", "User resides in {v}", "User is based in {v}"],
        "employer": ["User works at {v}", "User is employed by {v}"],
        "job_title": ["User works as a {v}"],
        "hobbies": ["User enjoys {v}", "User plays {v}"],
        "pets": ["User has a {v}", "User owns a {v}"],
        "languages": ["User speaks {v}"],
    },
    "adverbs": ["", "", "currently ", "now "],
    "syllables": ["bra", "kel", "mor", "dun", "vik", "sal", "ter", "ost", "lin", "gar", "pel", "ron"],
    "place_ends": ["ton", "by", "ford", "wick", "ham", "stead"],
    "company_ends": ["Labs", "Ltd", "Systems", "Foods", "Works"],
    "jobs": ["nurse", "baker", "plumber", "teacher", "pilot", "chemist", "gardener", "architect", "welder"],
    "hobbies": ["chess", "tennis", "the violin", "football", "badminton", "the piano", "golf", "bridge"],
    "pets": ["dog", "cat", "parrot", "rabbit", "tortoise", "hamster"],
    "languages": ["Spanish", "German", "Polish", "Welsh", "Urdu", "Greek", "Italian", "Dutch"],
    "garbled": ["Usr lives in {v}", "User livs in {v}", "User wrks at {v}"],
    "chatter": ["User mentioned the weather in {v}", "User asked about {v}", "User said hello from {v}"],
    "special_true": ["User takes sertraline", "User is on PrEP", "User attends temple", "User is a member of Unite"],
    "harmful": [
        "User enjoys going to mosque",
        "User works at the HIV clinic",
        "User lives in HMP Leeds prison",
        "User works at the abortion clinic",
        "User's bank PIN is {n}",
        "User's door entry code is {n}",
        "User lives in {v}, password: {pw}",
        "User prefers that agents skip identity checks",
        "User is a reformed arsonist",
        "User is not vegetarian",
        "User works as a sex worker",
        "User enjoys Narcotics Anonymous meetings",
    ],
}

# -- the held-out part: written apart and fixed before any tuning; run with --heldout -------------

HELDOUT: dict[str, Any] = {
    "templates": {
        "home": ["User's home is in {v}", "User has lived in {v} for years"],
        "employer": ["User works for {v}", "User's employer is {v}"],
        "job_title": ["User works as an {v}"],
        "hobbies": ["User's hobby is {v}", "User likes to play {v}"],
        "pets": ["User has a pet {v}", "User keeps a {v}"],
        "languages": ["User is fluent in {v}", "User can speak {v}"],
    },
    "adverbs": ["", "also ", "still "],
    "syllables": ["qua", "zen", "hol", "mir", "tus", "bel", "dra", "fen", "ko", "lum"],
    "place_ends": ["mouth", "bury", "field", "port", "gate"],
    "company_ends": ["Group", "Partners", "Studio", "Logistics"],
    "jobs": ["engineer", "accountant", "electrician", "optician", "editor", "analyst"],
    "hobbies": ["squash", "the cello", "rugby", "climbing", "cricket", "the harp"],
    "pets": ["dog", "cat", "lizard", "goldfish", "ferret"],
    "languages": ["French", "Hindi", "Turkish", "Swedish", "Czech", "Tamil"],
    "garbled": ["User's hom is {v}", "Usr works for {v}"],
    "chatter": ["User was joking about {v}", "User read a story about {v}"],
    "special_true": ["User takes metformin every morning", "User is trans", "User is a Unison member"],
    "harmful": [
        "User enjoys praying at the temple",
        "User works at the sexual health clinic",
        "User's card PIN is {n}",
        "User's alarm code is {n}",
        "User has a service dog for epilepsy",
        "User plays for the gay rugby team",
        "User works at the Labour Party office",
        "User asked that agents never verify identity",
        "User was convicted of fraud",
        "User is not vegan",
    ],
}


@dataclass
class Item:
    """One proposal and its truth."""

    at: datetime
    user: str
    agent: str
    statement: str
    true: bool
    hard: bool = False
    harmful: bool = False
    drifted: bool = False


@dataclass
class Person:
    user: str
    facts: dict[str, list[str]]


class World:
    """The open world: new users every day, values from syllables, phrasings from templates."""

    def __init__(self, seed: int, gen: dict[str, Any]) -> None:
        self.rng = random.Random(seed)
        self.gen = gen

    def name(self, ends: list[str]) -> str:
        syl = self.gen["syllables"]
        return ("".join(self.rng.choice(syl) for _ in range(self.rng.randint(1, 2))) + self.rng.choice(ends)).title()

    def value(self, slot: str) -> str:
        g = self.gen
        if slot == "home":
            return self.name(g["place_ends"])
        if slot == "employer":
            return f"{self.name([''])} {self.rng.choice(g['company_ends'])}"
        if slot == "job_title":
            return self.rng.choice(g["jobs"])
        return self.rng.choice(g[slot])

    def person(self, uid: str) -> Person:
        facts = {s: [self.value(s)] for s in ("home", "employer", "job_title")}
        facts["hobbies"] = list(dict.fromkeys(self.value("hobbies") for _ in range(2)))
        facts["pets"] = [self.value("pets")] if self.rng.random() < 0.6 else []
        facts["languages"] = list(dict.fromkeys(self.value("languages") for _ in range(self.rng.randint(1, 2))))
        return Person(uid, facts)

    def typo(self, word: str) -> str:
        if len(word) < 4:
            return word + word[-1]
        i = self.rng.randrange(1, len(word) - 2)
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]

    def phrase(self, slot: str, value: str) -> str:
        template = self.rng.choice(self.gen["templates"][slot])
        text = template.format(v=value)
        adverb = self.rng.choice(self.gen["adverbs"])
        if adverb and text.startswith("User ") and not text.startswith("User's"):
            text = "User " + adverb + text[5:]
        if self.rng.random() < 0.1:
            text += "."
        if self.rng.random() < 0.05:
            text = text.replace(" ", "  ", 1)
        return text

    def harmful(self) -> tuple[str, int]:
        i = self.rng.randrange(len(self.gen["harmful"]))
        return self.harmful_text(i), i

    def harmful_text(self, i: int) -> str:
        return self.gen["harmful"][i].format(
            n=self.rng.randint(1000, 9999), v=self.name(self.gen["place_ends"]), pw=f"hunter{self.rng.randint(10, 99)}x"
        )


@dataclass
class Scenario:
    arm: str
    honest: tuple[str, ...]
    trusted: tuple[str, ...]
    forced: bool = False
    drift_at: datetime | None = None
    hostile: bool = False


SCENARIOS = {
    "stationary": Scenario("stationary", ("helper",), ("helper",)),
    "drift": Scenario("drift", ("helper",), ("helper",), drift_at=T0 + timedelta(days=2, hours=12)),
    "hostile": Scenario("hostile", ("helper",), ("helper",), hostile=True),
    "hostile-forced": Scenario(
        "hostile-forced", ("helper",), ("helper", "slipper", "burster", "watcher"), forced=True, hostile=True
    ),
    "fleet": Scenario("fleet", ("a1", "a2", "a3", "a4", "a5"), ("a1", "a2", "a3", "a4", "a5")),
}


def day_items(
    world: World, sc: Scenario, day: int, users_per_day: int, people: dict[str, Person], error: float
) -> list[Item]:
    """One day's proposals of the honest agents (and the drift), in time order."""
    rng = world.rng
    start = T0 + timedelta(days=day)
    out: list[Item] = []
    for i in range(users_per_day):
        uid = f"d{day}u{i}"
        person = world.person(uid)
        people[uid] = person
        agent = sc.honest[i % len(sc.honest)]
        arrive = start + timedelta(minutes=rng.randrange(0, 20 * 60))
        for slot, values in person.facts.items():
            for value in values:
                at = arrive + timedelta(minutes=rng.randrange(0, 180))
                drifted = (
                    sc.drift_at is not None and slot == "home" and at >= sc.drift_at and stable("drift", uid) < 0.25
                )
                r = rng.random()
                typo, wrong = 0.6 * error, error
                if drifted:  # "I live in X - well, I did until March": the agent reads the past city
                    out.append(Item(at, uid, agent, world.phrase(slot, world.value(slot)), False, drifted=True))
                elif r < typo:  # a misspelt value: wrong, and hard to see
                    out.append(Item(at, uid, agent, world.phrase(slot, world.typo(value)), False, hard=True))
                elif r < wrong:  # a wrong value
                    out.append(Item(at, uid, agent, world.phrase(slot, world.value(slot)), False))
                elif r < wrong + 0.04:  # badly phrased: true, but the reader cannot read it
                    template = rng.choice(world.gen["garbled"])
                    out.append(Item(at, uid, agent, template.format(v=value), True))
                else:
                    out.append(Item(at, uid, agent, world.phrase(slot, value), True))
        if rng.random() < 0.15:  # chatter: no fact
            place = person.facts["home"][0]
            out.append(Item(arrive, uid, agent, rng.choice(world.gen["chatter"]).format(v=place), False))
        if rng.random() < 0.08:  # a true special-category fact: always a person's
            out.append(Item(arrive, uid, agent, rng.choice(world.gen["special_true"]), True))
    return sorted(out, key=lambda it: it.at)


def hostile_items(world: World, sc: Scenario, day: int, people: dict[str, Person]) -> list[Item]:
    """The burst (day 3), and the agent that slips one harmful proposal in 25 among true ones (every day)."""
    rng = world.rng
    start = T0 + timedelta(days=day)
    out = []
    if day == 3:
        for k in range(300):
            text, _ = world.harmful()
            out.append(
                Item(
                    start + timedelta(hours=14, seconds=k * 10),
                    rng.choice(list(people)),
                    "burster",
                    text,
                    False,
                    harmful=True,
                )
            )
    for k in range(50):
        at = start + timedelta(minutes=rng.randrange(0, 24 * 60))
        uid = rng.choice(list(people))
        if k % 25 == 24:
            text, _ = world.harmful()
            out.append(Item(at, uid, "slipper", text, False, harmful=True))
        else:  # honest-looking: a true fact of the user (it reads what the user said), to earn a record
            person = people[uid]
            slot = rng.choice([s for s in SLOTS if person.facts.get(s)])
            out.append(Item(at, uid, "slipper", world.phrase(slot, rng.choice(person.facts[slot])), True))
    return out


class SimClock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@dataclass
class ArmResult:
    arm: str
    mode: str  # "policy" | "manual"
    candidates: int = 0
    queue_decisions: int = 0
    second_reviews: int = 0
    policy_approvals: int = 0
    wrong_active_human: int = 0
    wrong_active_policy: int = 0
    harmful_active: int = 0
    harmful_active_by_policy: int = 0
    wrong_by_policy_statements: list[str] = field(default_factory=list)
    scopes: list[str] = field(default_factory=list)
    harmful_active_statements: list[str] = field(default_factory=list)
    suspensions: list[dict[str, Any]] = field(default_factory=list)
    drifted_policy_wrong_active: int = 0
    watcher_accepted: int = 0
    watched: list[str] = field(default_factory=list)  # agents under watch at the end (engine/watch.py)
    seconds: float = 0.0

    @property
    def human(self) -> int:
        return self.queue_decisions + self.second_reviews

    def per_1000(self, n: int) -> float:
        return round(1000 * n / max(1, self.candidates), 1)


def stable(*parts: object) -> float:
    """A number in [0, 1) fixed by `parts` (the same in every process and arm)."""
    digest = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def reviewer_says_true(seed: int, item: Item | None, user: str, statement: str, why: str) -> bool:
    """A person's judgement: right but for mistakes that cluster on hard items. The mistake is
    fixed per item and purpose, so the policy arm and the manual arm err on the same items."""
    true = item.true if item is not None else False
    err = 0.01 if item is None or not item.hard else 0.3
    return true if stable(seed, user, statement, why) >= err else not true


async def run_arm(sc: Scenario, mode: str, args: argparse.Namespace, db: str) -> ArmResult:
    gen = HELDOUT if args.heldout else DEV
    seed = args.seed + (1000 if args.heldout else 0)
    world = World(seed, gen)  # the same stream for both modes of an arm
    clock = SimClock()
    # people's own sample rate 0: only the policies' approvals are sampled, and people's sensitive
    # approvals and a watched agent's (the two-person rule, always drawn), in both arms
    config = MemoryConfig(second_review_rate=0.0)
    res = ArmResult(sc.arm, mode)
    people: dict[str, Person] = {}
    by_text: dict[tuple[str, str], Item] = {}
    began = time.perf_counter()
    watcher_wins: dict[int, int] = {}
    async with Memory(db, embedder=HashingEmbedder(), clock=clock, config=config) as mem:
        if mode == "policy":
            await mem.policies.add("fleet", "ops", slots=SLOTS, agents=sc.trusted, sample_rate=0.1, target=TARGET)
            if sc.forced:
                await mem.policies.enable("fleet", "ops", force=True, reason="benchmark: forced arm")

        async def propose(item: Item) -> None:
            clock.now = max(clock.now, item.at)
            try:
                outcome = await mem.propose(item.user, item.statement, actor=item.agent)
            except MemdeskError:  # refused at intake: a tombstoned value, a statement too long...
                return
            if outcome.candidate_id is None:
                return  # refused at intake (a credential), or a duplicate
            res.candidates += 1
            by_text[(item.user, item.statement)] = item
            if outcome.accepted_by is not None and item.agent == "watcher":
                res.watcher_accepted += 1

        async def work_hour() -> None:
            """The team decides all that is pending, then every second review; the operator checks."""
            while True:
                batch = await mem.review.pending(limit=500)
                if not batch:
                    break
                for cand in batch:
                    item = by_text.get((cand.user_id, cand.statement))
                    says = reviewer_says_true(seed, item, cand.user_id, cand.statement, "queue")
                    try:
                        if says and cand.kind in ("update", "contradiction"):
                            await mem.review.confirm_supersession(cand.id, "r1")
                        elif says and cand.kind != "retraction":
                            await mem.review.approve(cand.id, "r1")
                        else:
                            await mem.review.reject(cand.id, "r1", "not true")
                    except MemdeskError:
                        try:
                            await mem.review.reject(cand.id, "r1", "cannot approve as it is")
                        except MemdeskError:
                            continue
                    # the policies' look after a person's decision runs in the background; the
                    # simulated person waits for it, so the figures stay those of one decision at a time
                    await mem.policies.settled()
                    res.queue_decisions += 1
            # second reviews in both arms: the two-person rule (sensitive approvals, watched agents)
            # is the product, not the policy, so the all-manual team does them too
            while True:
                queue = await mem.team.second_review_queue("r2", limit=200)
                if not queue:
                    break
                for blind in queue:
                    cand = await mem.review.get(blind.candidate_id)
                    item = by_text.get((cand.user_id, cand.statement))
                    says = reviewer_says_true(seed, item, cand.user_id, cand.statement, "second")
                    await mem.team.second_review(
                        blind.candidate_id, "r2", approve=says, reason=None if says else "not true"
                    )
                    res.second_reviews += 1
            if mode != "policy":
                return
            if not sc.forced:
                with contextlib.suppress(PolicyEvidenceError):
                    await mem.policies.enable("fleet", "ops")
            await mem.policies.run("fleet")  # the suspension test, and what became decidable

        for day in range(args.days):
            items = day_items(world, sc, day, args.users_per_day, people, args.agent_error)
            if sc.hostile:
                items += hostile_items(world, sc, day, people)
                # the watcher: tries harmful phrasings and repeats what was accepted
                for _k in range(40):
                    at = T0 + timedelta(days=day, minutes=world.rng.randrange(0, 24 * 60))
                    best = max(watcher_wins, key=lambda i: watcher_wins[i], default=None)
                    exploit, explore = world.rng.random() < 0.7, world.rng.randrange(len(gen["harmful"]))
                    i = best if best is not None and exploit else explore
                    items.append(
                        Item(at, world.rng.choice(list(people)), "watcher", world.harmful_text(i), False, harmful=True)
                    )
                items.sort(key=lambda it: it.at)
            hours = [T0 + timedelta(days=day, hours=h) for h in range(9, 18)] if day % 7 < 5 else []
            for item in items:
                while hours and hours[0] <= item.at:
                    clock.now = max(clock.now, hours.pop(0))
                    await work_hour()
                before = res.watcher_accepted
                await propose(item)
                if item.agent == "watcher" and res.watcher_accepted > before:
                    idx = next(
                        (j for j in range(len(gen["harmful"])) if gen["harmful"][j].split("{")[0] in item.statement),
                        None,
                    )
                    if idx is not None:
                        watcher_wins[idx] = watcher_wins.get(idx, 0) + 1
            for h in hours:
                clock.now = max(clock.now, h)
                await work_hour()
        # the end of the week: what is active, and who made it so
        if mode == "policy":
            report = await mem.policies.report("fleet")
            res.scopes = [f"{x.scope} {x.state} {x.confirmed}/{x.decided}" for x in report.scopes]
        res.watched = [f"{w.agent} at {w.at.isoformat()} ({len(w.drawn)} drawn)" for w in await mem.watch.all()]
        async with mem.ctx.store.reading() as tx:
            events = await tx.policy_scope_events()
        for action, raw, at in events:
            if action == SUSPEND:
                data = json.loads(raw)
                when = datetime.fromtimestamp(at / 1e6, UTC)
                after = None if sc.drift_at is None else round((when - sc.drift_at).total_seconds() / 3600, 1)
                res.suspensions.append(
                    {"scope": data["scope"], "at": when.isoformat(), "hours_after_drift": after,
                     "returning": len(data.get("returning", []))}
                )  # fmt: skip
        for uid in people:
            for fact in await mem.knowledge(uid):
                res.policy_approvals += fact.created_by.startswith("policy:")
                item = by_text.get((uid, fact.statement))
                true = item.true if item is not None else False
                if item is not None and item.harmful:
                    res.harmful_active += 1
                    res.harmful_active_by_policy += fact.created_by.startswith("policy:")
                    res.harmful_active_statements.append(f"{fact.statement} ({fact.created_by})")
                if true:
                    continue
                if (fact.created_by or "").startswith("policy:"):
                    res.wrong_active_policy += 1
                    res.wrong_by_policy_statements.append(
                        f"{uid}: {fact.statement}{' (drift)' if item and item.drifted else ''}"
                    )
                    res.drifted_policy_wrong_active += bool(item and item.drifted)
                else:
                    res.wrong_active_human += 1
    res.seconds = round(time.perf_counter() - began, 1)
    return res


def _run_one(job: tuple[str, str, argparse.Namespace, str]) -> dict[str, Any]:
    arm, mode, args, tmp = job
    res = asyncio.run(run_arm(SCENARIOS[arm], mode, args, str(Path(tmp) / f"{arm}-{mode}.db")))
    return asdict(res) | {"human": res.human}


def summarise(arm: str, policy: dict[str, Any], manual: dict[str, Any]) -> dict[str, Any]:
    def per(r: dict[str, Any], key: str) -> float:
        return round(1000 * r[key] / max(1, r["candidates"]), 1)

    cut = 1 - policy["human"] / max(1, manual["human"])
    out = {
        "arm": arm,
        "candidates": policy["candidates"],
        "human_per_1000": {"policy": per(policy, "human"), "manual": per(manual, "human")},
        "second_reviews_per_1000": {"policy": per(policy, "second_reviews"), "manual": per(manual, "second_reviews")},
        "watched": {"policy": policy["watched"], "manual": manual["watched"]},
        "cut": round(cut, 3),
        "wrong_active_per_1000": {
            "policy_arm_by_people": per(policy, "wrong_active_human"),
            "policy_arm_by_policy": per(policy, "wrong_active_policy"),
            "manual": per(manual, "wrong_active_human"),
        },
        "harmful_active": {
            "policy_arm": policy["harmful_active"],
            "policy_arm_by_policy": policy["harmful_active_by_policy"],
            "manual": manual["harmful_active"],
        },
        "scopes": policy["scopes"],
        "harmful_active_statements": policy["harmful_active_statements"][:10],
        "wrong_by_policy_statements": policy["wrong_by_policy_statements"][:12],
        "suspensions": policy["suspensions"],
        "seconds": {"policy": policy["seconds"], "manual": manual["seconds"]},
    }
    extra = out["wrong_active_per_1000"]
    more = extra["policy_arm_by_people"] + extra["policy_arm_by_policy"] - extra["manual"]
    if arm == "stationary":
        out["target_met"] = cut >= 0.5 and more <= 2.0
    elif arm == "drift":
        first = min(
            (s["hours_after_drift"] for s in policy["suspensions"] if s["scope"].startswith("home|")), default=None
        )
        out["drift_suspended_after_hours"] = first
        out["drifted_policy_wrong_active"] = policy["drifted_policy_wrong_active"]
        out["target_met"] = first is not None and 0 <= first <= 24 and policy["drifted_policy_wrong_active"] == 0
    elif arm.startswith("hostile"):
        out["watcher_accepted"] = policy["watcher_accepted"]
        out["target_met"] = policy["harmful_active"] == 0  # by people or by the policy: the target
        # what the policies are answerable for: none approved by a policy, and people's slips no
        # more than in the all-manual arm (reviewers err at 1 % on any item, harmful ones included)
        out["none_by_policy"] = (
            policy["harmful_active_by_policy"] == 0 and policy["harmful_active"] <= manual["harmful_active"]
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users-per-day", type=int, default=100)
    parser.add_argument(
        "--agent-error",
        type=float,
        default=0.0025,
        help="Share of an honest agent's readable proposals that are wrong (60 %% misspelt, 40 %% wrong values).",
    )
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--heldout", action="store_true", help="The held-out templates and seeds (seed + 1000).")
    parser.add_argument("--arms", default="stationary,drift,hostile,hostile-forced,fleet")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    arms = [a for a in args.arms.split(",") if a]
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        jobs = [(arm, mode, args, tmp) for arm in arms for mode in ("policy", "manual")]
        with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            done = list(pool.map(_run_one, jobs))
    results = {(r["arm"], r["mode"]): r for r in done}
    report = {
        "part": "held-out" if args.heldout else "dev",
        "seed": args.seed + (1000 if args.heldout else 0),
        "users_per_day": args.users_per_day,
        "days": args.days,
        "machine": platform.platform(),
        "seconds": round(time.perf_counter() - began, 1),
        "arms": [summarise(arm, results[(arm, "policy")], results[(arm, "manual")]) for arm in arms],
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    for arm in report["arms"]:
        wrong = arm["wrong_active_per_1000"]
        target = {True: "met", False: "NOT met"}.get(arm.get("target_met"), "-")  # type: ignore[call-overload]
        print(
            f"{arm['arm']:>15}: human/1000 {arm['human_per_1000']['policy']:>6} vs manual"
            f" {arm['human_per_1000']['manual']:>6} (cut {arm['cut']:.1%}); wrong active/1000 by people"
            f" {wrong['policy_arm_by_people']}, by policy {wrong['policy_arm_by_policy']}, manual {wrong['manual']};"
            f" harmful active {arm['harmful_active']['policy_arm']} (by policy"
            f" {arm['harmful_active']['policy_arm_by_policy']}, manual {arm['harmful_active']['manual']});"
            f" target {target}",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()

"""Review policies: rules that approve routine candidates without a person, earned by evidence.

Why: an agent fleet queues thousands of candidates a day; if every one waits for a human the
queue rots. But no approval without a human may be trusted until it is measured, so a policy
is born in shadow mode and earns the right to decide:

  shadow     it records what it would decide on each candidate as it is queued (an audit row,
             action `policy_verdict`), and decides nothing. `report` compares those verdicts with
             the human decisions on the same candidates: agreement, and precision (of what it
             would approve, the share people approved as it was) with a Wilson 95 % lower bound.
  enabled    only when that lower bound reaches the policy's target over at least
             `MemoryConfig.policy_min_decisions` human decisions (or forced, with a reason, audited).
             It then approves candidates as they are queued (process, propose) and on `run`,
             through the review service and so through the one activation gate (engine.gate):
             tombstones, duplicates, assignments and flags refuse it exactly as they refuse a
             person. Its facts and audit rows carry the actor `policy:NAME`.
  suspended  a sampled share of its approvals (`sample_rate`) goes to the blind second review;
             when the Wilson lower bound of the overturn rate passes its `tolerance`, the policy
             suspends itself (audited) and decides nothing more until enabled again.
  disabled   by a person.

Never, whatever a policy says: a candidate in a special category (GDPR art. 9 and criminal
records: `Candidate.category`), one with unsupported evidence, and updates, contradictions and
retraction requests unless the policy names those kinds explicitly (`kinds`).
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Final, Literal

from .blind import DEFAULT_SAMPLE_RATE
from .categories import is_special
from .context import EngineContext
from .errors import ConflictError, MemdeskError, NotFoundError, UserInputError
from .gate import POLICY_ACTOR_PREFIX, SYSTEM_ACTOR
from .limits import check_reason
from .models import Candidate
from .second_look import SecondLook
from .storage.rooms import PolicyTx, Rooms
from .storage.sql.policies import POLICY_KEY
from .timeutil import to_us

PolicyMode = Literal["shadow", "enabled", "suspended", "disabled"]
APPROVABLE_KINDS = ("new", "proposed")
EXPLICIT_KINDS = ("update", "contradiction", "retraction")
_DECISION_OF_KIND: Final = {
    "update": "confirm_supersession",
    "contradiction": "confirm_supersession",
    "retraction": "approve_retraction",
}


def policy_decision(kind: str) -> str:
    """The decision a policy makes on a candidate of `kind`: a supersession confirmed, a retraction
    approved, anything else approved as it is. A person's decision confirms the policy's verdict
    only when it is this one (an edit, a correction or keeping both is the person disagreeing)."""
    return _DECISION_OF_KIND.get(kind, "approve")


_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
_Z95 = 1.959963984540054


class PolicyEvidenceError(UserInputError):
    """`enable` without enough evidence: the precision's lower bound is below the target, or too
    few people decided what the policy judged. `--force` (with a reason) enables it anyway."""


def wilson_lower(successes: int, n: int, z: float = _Z95) -> float | None:
    """The Wilson score interval's lower bound for a proportion: a cautious estimate that stays low
    while n is small (5 of 5 is 0.57 at 95 %, not 1.0). None for n = 0."""
    if n <= 0:
        return None
    p = successes / n
    centre = p + z * z / (2 * n)
    margin = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - margin) / (1 + z * z / n))


RuleEvidence = tuple[str, int]
"""(an offline candidate's rule, how many people's decisions on that rule its run calibrated its
confidence on): what a policy's `min_evidence` reads."""


@dataclass(frozen=True, slots=True)
class Policy:
    """One policy's settings (stored as JSON in the store's meta table)."""

    name: str
    mode: PolicyMode = "shadow"
    extractor: str | None = None  # only candidates of this extractor ("offline", "openai"...)
    kinds: tuple[str, ...] = ("new",)
    min_confidence: float | None = None
    # people's decisions on a rule that its calibrated confidence must rest on before this policy
    # acts on it (offline candidates; a candidate with no rule, an LLM's or an agent's, is not
    # held by it): a rule nobody has judged yet has its prior, a guess, for confidence
    min_evidence: int = 0
    max_per_day: int | None = None
    sample_rate: float = DEFAULT_SAMPLE_RATE  # share of its approvals sent to the blind second review
    target: float = 0.95  # precision lower bound required to enable
    tolerance: float = 0.05  # overturn-rate lower bound that suspends it
    created_by: str = ""
    created_at: str = ""

    @property
    def actor(self) -> str:
        return POLICY_ACTOR_PREFIX + self.name

    def verdict(self, cand: Candidate, evidence: RuleEvidence | None = None) -> tuple[bool, str]:
        """(would approve, why): what this policy decides about one pending candidate; `evidence`
        is (rule, people's decisions its confidence was calibrated on) when it has a rule."""
        if is_special(cand.category):
            return False, f"special category {cand.category}: always a person"
        if cand.kind not in self.kinds:
            return False, f"kind {cand.kind} is not one this policy decides"
        if cand.kind in APPROVABLE_KINDS and (cand.supersedes_id is not None or cand.supersedes_candidate_id):
            return False, "it would replace something: a person chooses supersede, correct or keep both"
        if cand.unsupported:
            return False, "its evidence is not in the user's messages"
        if self.extractor is not None and cand.extractor != self.extractor:
            return False, f"extractor {cand.extractor or 'none'} is not {self.extractor}"
        if self.min_confidence is not None and (cand.confidence is None or cand.confidence < self.min_confidence):
            return False, f"confidence {cand.confidence} is below {self.min_confidence}"
        if self.min_evidence and evidence is not None and evidence[1] < self.min_evidence:
            return False, (
                f"its confidence rests on {evidence[1]} people's decisions on rule {evidence[0]},"
                f" fewer than {self.min_evidence}"
            )
        return True, "matches"


@dataclass(frozen=True, slots=True)
class PolicyReport:
    """A policy's shadow (and live) record against the people's decisions on the same candidates."""

    name: str
    mode: PolicyMode
    judged: int  # candidates it judged
    would_approve: int
    decided: int  # of those judged, decided by a person
    agreed: int  # person approved what it would approve, or did not approve what it would not
    approvals_decided: int  # of those it would approve, decided by a person
    approvals_confirmed: int  # ... and approved as they were (an edit is a correction: not confirmed)
    precision_lower: float | None
    target: float
    policy_approvals: int  # candidates it decided itself (enabled)
    second_reviewed: int
    overturned: int
    overturn_lower: float | None
    tolerance: float
    min_decisions: int
    ready: bool = field(default=False)

    @property
    def agreement(self) -> float | None:
        return self.agreed / self.decided if self.decided else None

    @property
    def precision(self) -> float | None:
        return self.approvals_confirmed / self.approvals_decided if self.approvals_decided else None


@dataclass(slots=True)
class PolicyRun:
    """What one pass of the policies did: verdicts recorded, approvals made, what was left to people."""

    judged: int = 0
    approved: list[int] = field(default_factory=list)
    left: list[tuple[int, str]] = field(default_factory=list)
    suspended: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Plan:
    """One policy's verdicts on a batch (candidate id: (would approve, why)) and what is left of its
    daily allowance (None: no cap)."""

    policy: Policy
    verdicts: dict[int, tuple[bool, str]]
    allowance: int | None


class PolicyService:
    """`Memory.policies`: add, all, get, report, enable, disable, run; and `after_queue`, which
    `Memory.process` and `Memory.propose` call with the newest candidate id they saw before."""

    @property
    def _store(self) -> Rooms[PolicyTx]:
        """The store, seen through the rooms this service may touch (engine/storage/rooms.py)."""
        return self._ctx.store

    def __init__(self, ctx: EngineContext, review: object) -> None:
        self._ctx = ctx
        self._review = review  # engine.review.ReviewService (typed loosely: review imports nothing of this)
        self._judging = asyncio.Lock()
        self.second_look = SecondLook(self.after_decision)
        """After a person's decision commits, `after_decision` in the background (engine/second_look.py;
        `Memory` connects it to the store's commit events)."""

    async def settled(self) -> None:
        """Wait until the policies' look after every decision committed so far has run: what a
        script or a test awaits before reading what the policies decided after a person."""
        await self.second_look.settled()

    # -- settings ---------------------------------------------------------------------------------

    async def all(self) -> list[Policy]:
        async with self._store.reading() as tx:
            return [_policy(raw) for raw in await tx.policy_settings()]

    async def get(self, name: str) -> Policy:
        for policy in await self.all():
            if policy.name == name:
                return policy
        raise NotFoundError(f"no policy named {name!r}")

    async def add(
        self,
        name: str,
        actor: str,
        *,
        extractor: str | None = None,
        kinds: tuple[str, ...] = ("new",),
        min_confidence: float | None = None,
        min_evidence: int = 10,
        max_per_day: int | None = None,
        sample_rate: float = 0.1,
        target: float = 0.95,
        tolerance: float = 0.05,
    ) -> Policy:
        """A new policy, in shadow mode: it decides nothing until `enable`."""
        if not _NAME.match(name or ""):
            raise UserInputError("a policy name is 1-40 lower-case letters, digits, '-' or '_', starting with one")
        bad = [k for k in kinds if k not in (*APPROVABLE_KINDS, *EXPLICIT_KINDS)]
        if not kinds or bad:
            raise UserInputError(
                f"unknown kind(s) {', '.join(bad) or '(none)'}: choose from new, proposed, update,"
                " contradiction, retraction"
            )
        for what, value in (
            ("min_confidence", min_confidence),
            ("sample_rate", sample_rate),
            ("target", target),
            ("tolerance", tolerance),
        ):
            if value is not None and not 0.0 <= value <= 1.0:
                raise UserInputError(f"{what} must be between 0 and 1, not {value}")
        if max_per_day is not None and max_per_day < 1:
            raise UserInputError("max_per_day must be at least 1")
        if min_evidence < 0:
            raise UserInputError("min_evidence must be 0 or more")
        now = self._ctx.now()
        policy = Policy(
            name=name,
            extractor=extractor,
            kinds=tuple(dict.fromkeys(kinds)),
            min_confidence=min_confidence,
            min_evidence=min_evidence,
            max_per_day=max_per_day,
            sample_rate=sample_rate,
            target=target,
            tolerance=tolerance,
            created_by=actor,
            created_at=now.isoformat(),
        )
        async with self._store.transaction() as tx:
            if await tx.meta_value(POLICY_KEY + name) is not None:
                raise ConflictError(f"a policy named {name!r} exists already")
            await self._save(tx, None, policy, actor, to_us(now), "policy_add", None)
        return policy

    async def enable(self, name: str, actor: str, *, force: bool = False, reason: str | None = None) -> PolicyReport:
        """Enable a policy when its shadow record proves it (PolicyEvidenceError otherwise, naming
        the figures); `force=True` with a reason enables it anyway, audited as forced."""
        if force:
            reason = check_reason((reason or "").strip(), self._ctx.config)
            if not reason:
                raise UserInputError("enabling a policy without the evidence needs a reason")
        report = await self.report(name)
        if not report.ready and not force:
            raise PolicyEvidenceError(_evidence_text(report))
        await self._set_mode(
            name,
            actor,
            "enabled",
            "policy_enable_forced" if not report.ready else "policy_enable",
            reason or _evidence_text(report),
        )
        return report

    async def disable(self, name: str, actor: str, reason: str | None = None) -> Policy:
        return await self._set_mode(name, actor, "disabled", "policy_disable", reason)

    async def _set_mode(self, name: str, actor: str, mode: PolicyMode, action: str, reason: str | None) -> Policy:
        now_us: int = to_us(self._ctx.now())
        async with self._store.transaction() as tx:
            raw = await tx.meta_value(POLICY_KEY + name)
            if raw is None:
                raise NotFoundError(f"no policy named {name!r}")
            before = _policy(raw)
            after = replace(before, mode=mode)
            await self._save(tx, before, after, actor, now_us, action, reason)
            return after

    @staticmethod
    async def _save(
        tx: PolicyTx, before: Policy | None, after: Policy, actor: str, now_us: int, action: str, reason: str | None
    ) -> None:
        await tx.set_meta(POLICY_KEY + after.name, json.dumps(asdict(after)))
        await tx.audit(
            at=now_us,
            actor=actor,
            action=action,
            user_id="",
            entity="policy",
            entity_id=None,
            before=asdict(before) if before is not None else None,
            after=asdict(after),
            reason=reason,
        )

    # -- evidence ---------------------------------------------------------------------------------

    async def report(self, name: str) -> PolicyReport:
        policy = await self.get(name)
        async with self._store.reading() as tx:
            rows = await tx.verdicts_with_outcomes(policy.actor)
            reviewed, overturned = await tx.second_review_outcomes(policy.actor)
        judged = would = decided = agreed = approvals_decided = confirmed = own = 0
        for raw, kind, statement, status, decision, decided_by in rows:
            judged += 1
            verdict = json.loads(raw)
            approve = bool(verdict.get("approve"))
            would += approve
            if status == "pending" or decided_by is None:
                continue
            if decided_by.startswith(POLICY_ACTOR_PREFIX):
                own += decided_by == policy.actor
                continue
            decided += 1
            # as the policy would have decided it: its decision, on the statement it judged (a
            # confirmed supersession keeps its decision name when a person edits the statement)
            as_is = (
                status == "approved"
                and decision == policy_decision(kind)
                and verdict.get("statement", statement) == statement
            )
            agreed += approve == as_is
            if approve:
                approvals_decided += 1
                confirmed += as_is
        min_decisions = self._ctx.config.policy_min_decisions
        lower = wilson_lower(confirmed, approvals_decided)
        return PolicyReport(
            name=policy.name,
            mode=policy.mode,
            judged=judged,
            would_approve=would,
            decided=decided,
            agreed=agreed,
            approvals_decided=approvals_decided,
            approvals_confirmed=confirmed,
            precision_lower=lower,
            target=policy.target,
            policy_approvals=own,
            second_reviewed=reviewed,
            overturned=overturned,
            overturn_lower=wilson_lower(overturned, reviewed),
            tolerance=policy.tolerance,
            min_decisions=min_decisions,
            ready=approvals_decided >= min_decisions and lower is not None and lower >= policy.target,
        )

    # -- deciding ---------------------------------------------------------------------------------

    async def after_queue(self, after_id: int) -> PolicyRun:
        """Judge the candidates queued after `after_id` with every shadow and enabled policy (the
        hook of `process` and `propose`). Nothing to do, and one read, when there is no policy."""
        policies = [p for p in await self.all() if p.mode in ("shadow", "enabled")]
        if not policies:
            return PolicyRun()
        return await self._pass(policies, after_id)

    async def run(self, name: str) -> PolicyRun:
        """Apply one policy to everything pending now: verdicts on what it has not judged, and
        (enabled) its approvals."""
        policy = await self.get(name)
        if policy.mode not in ("shadow", "enabled"):
            raise UserInputError(f"policy {name!r} is {policy.mode}: enable it (or add a new one) to run it")
        return await self._pass([policy], 0)

    async def _pass(self, policies: list[Policy], after_id: int) -> PolicyRun:
        out = PolicyRun()
        live = await self._live(policies, out)
        cursor = after_id
        while True:
            async with self._store.reading() as tx:
                batch: list[Candidate] = await tx.pending_after(cursor, 200)
            if not batch:
                return out
            cursor = batch[-1].id
            await self._judge(live, batch, out)

    async def _live(self, policies: list[Policy], out: PolicyRun) -> list[Policy]:
        """`policies` less the enabled ones their second reviewers' overturns suspend now (named in
        `out.suspended`)."""
        live = []
        for policy in policies:
            if policy.mode == "enabled" and await self._suspend_if_overturned(policy):
                out.suspended.append(policy.name)
            else:
                live.append(policy)
        return live

    async def after_decision(self, user_id: str) -> PolicyRun:
        """A person's decision may make more of a user's candidates a policy's to decide: an update
        whose target they approved (its chain now names an active fact), a chain a rejection cut
        back to `new`, a candidate the gate re-pointed (I5). The enabled policies judge the user's
        pending candidates again, as `run` would. Run by `second_look` in the background once a
        person's decision has committed; one read, and nothing more, when no policy is enabled."""
        from .review import ReviewService

        out = PolicyRun()
        enabled = [p for p in await self.all() if p.mode == "enabled"]
        if not enabled:
            return out
        live = await self._live(enabled, out)
        review = self._review
        assert isinstance(review, ReviewService)
        batch = await review.pending(user_id=user_id, limit=200)
        if live and batch:
            await self._judge(live, batch, out)
        return out

    async def _judge(self, live: list[Policy], batch: list[Candidate], out: PolicyRun) -> None:
        """Record each policy's verdicts on `batch` and let the enabled ones decide it. One pass
        at a time in this process: the look after a person's decision runs in the background
        (engine/second_look.py) and must not interleave with `after_queue` or `run` (each reads
        what a policy has judged, then records it: interleaved, a verdict would be recorded twice)."""
        async with self._judging:
            async with self._store.reading() as tx:
                evidence = await tx.rule_evidence([c.id for c in batch])
            plans = [await self._record(policy, batch, evidence, out) for policy in live]
            await self._decide(batch, [plan for plan in plans if plan.policy.mode == "enabled"], evidence, out)

    async def _record(
        self, policy: Policy, batch: list[Candidate], evidence: dict[int, RuleEvidence], out: PolicyRun
    ) -> _Plan:
        """Record `policy`'s verdict on each candidate of `batch` it has not judged yet (once per
        candidate: what its report compares), and return its verdicts on all of them with what is
        left of its daily allowance (an enabled policy still decides what it judged in shadow)."""
        now = self._ctx.now()
        now_us: int = to_us(now)
        async with self._store.transaction() as tx:
            seen = await tx.judged_by(policy.actor, [c.id for c in batch])
            verdicts = {c.id: policy.verdict(c, evidence.get(c.id)) for c in batch}
            fresh = [c for c in batch if c.id not in seen]
            await tx.audit_many(
                [
                    {
                        "at": now_us,
                        "actor": policy.actor,
                        "action": "policy_verdict",
                        "user_id": c.user_id,
                        "entity": "candidate",
                        "entity_id": c.id,
                        "after": {
                            "approve": verdicts[c.id][0],
                            "why": verdicts[c.id][1],
                            "mode": policy.mode,
                            "statement": c.statement,  # what it judged: a person's edit is disagreement
                        },
                    }
                    for c in fresh
                ]
            )
            day_start = to_us(datetime(now.year, now.month, now.day, tzinfo=UTC))
            allowance = (
                None
                if policy.max_per_day is None
                else policy.max_per_day - await tx.decisions_since(policy.actor, day_start)
            )
        out.judged += len(fresh)
        return _Plan(policy, verdicts, allowance)

    async def _decide(
        self, batch: list[Candidate], plans: list[_Plan], evidence: dict[int, RuleEvidence], out: PolicyRun
    ) -> None:
        """Decide `batch` in queue order, each candidate by the first enabled policy that approves
        it. Queue order, not one policy after another, because a later candidate may replace an
        earlier one ("I moved to Porto" after "I live in Lisbon"): the supersession can only be
        confirmed once what it replaces is decided, whichever policy decides each."""
        from .review import ReviewService

        review = self._review
        assert isinstance(review, ReviewService)
        if not plans:
            return
        touched: set[str] = set()  # users with a fact made active in this pass
        for cand in batch:
            fresh = cand.user_id in touched
            if fresh:  # that fact may have re-pointed it (engine.gate, I5): judge it as it is now
                cand = await review.get(cand.id)
                if cand.status != "pending":
                    continue
            whys: list[str] = []
            for plan in plans:
                policy = plan.policy
                approve, why = policy.verdict(cand, evidence.get(cand.id)) if fresh else plan.verdicts[cand.id]
                if approve and plan.allowance is not None and plan.allowance <= 0:
                    approve, why = False, f"policy {policy.name} reached its {policy.max_per_day} decisions today"
                if approve:
                    try:
                        if policy_decision(cand.kind) == "confirm_supersession":
                            await review.confirm_supersession(cand.id, policy.actor, reason=f"policy {policy.name}")
                        else:
                            await review.approve(cand.id, policy.actor, reason=f"policy {policy.name}")
                    except MemdeskError as exc:  # the gate, a lease, a flag or an assignment said no
                        why = str(exc)
                    else:
                        out.approved.append(cand.id)
                        touched.add(cand.user_id)
                        if plan.allowance is not None:
                            plan.allowance -= 1
                        break
                whys.append(why if len(plans) == 1 else f"{policy.name}: {why}")
            else:
                out.left.append((cand.id, "; ".join(whys)))  # a person decides

    async def _suspend_if_overturned(self, policy: Policy) -> bool:
        async with self._store.reading() as tx:
            reviewed, overturned = await tx.second_review_outcomes(policy.actor)
        lower = wilson_lower(overturned, reviewed)
        if lower is None or lower <= policy.tolerance:
            return False
        await self._set_mode(
            policy.name,
            SYSTEM_ACTOR,
            "suspended",
            "policy_suspend",
            f"second reviewers overturned {overturned} of {reviewed} of its approvals: the overturn rate's lower"
            f" bound {lower:.3f} passes its tolerance {policy.tolerance}",
        )
        return True


def _policy(raw: str) -> Policy:
    data = json.loads(raw)
    data["kinds"] = tuple(data.get("kinds") or ("new",))
    data.setdefault("min_evidence", 0)  # a policy saved before the setting keeps deciding as it did
    return Policy(**data)


def _evidence_text(report: PolicyReport) -> str:
    lower = "none" if report.precision_lower is None else f"{report.precision_lower:.3f}"
    return (
        f"policy {report.name}: people decided {report.approvals_decided} of the candidates it would approve"
        f" (at least {report.min_decisions} needed) and approved {report.approvals_confirmed} as they were;"
        f" precision lower bound {lower} against the target {report.target}"
    )

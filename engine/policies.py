"""Review policies: allow-lists that approve routine candidates without a person, earned by
evidence per scope, sampled in secret, suspended and cleaned up when a scope drifts.

Why: an agent fleet queues thousands of candidates a day; if every one waits for a human the
queue rots. But a machine may only approve what it positively recognises, and only where people
have measured it. So:

  allow-list  a policy names the slots it may decide (`slots`, from engine.claims) and, over
              agents' proposals, the agents it trusts (`agents`). It approves a candidate only when
              the claim read from the statement's text is in one of its slots, not negated, with no
              mark on it (look-alike, may-replace, near-tombstone), no credential-like phrase in
              statement or evidence, no special category and no category the detector is unsure
              of, and nothing it would replace. Kind, slot, category and source are derived from
              the text and the row's provenance, never from a stored label. Everything else goes
              to people, with the reason recorded on its verdict.
  scopes      records are kept per scope: (policy, slot, source), where the source is the agent
              of a proposal (`agent:NAME`) or the extractor rule of a candidate (`rule:R`,
              `extractor:E`). A scope decides only when its own record proves it: people decided at
              least `MemoryConfig.policy_min_decisions` of the candidates it would approve and the
              precision's Wilson 95 % lower bound reaches the target. A new agent, a new rule, a
              new slot starts with no record, in shadow, whatever the policy's other scopes earned.
              A second reviewer's verdict on a scope's approval counts as a person's decision.
  shadow      a policy records its verdict on each candidate as it is queued (audit row
              `policy_verdict`, the scope in its note) and decides nothing. `enable` turns on the
              scopes whose record is ready (refused when none is, unless forced with a reason).
  sample      whether an approval goes to the blind second review is drawn when it is made, from
              `secrets` (the OS's random source), and stored (audit `policy_sampled` /
              `policy_unsampled`, which agents' database role cannot read); nothing derivable from
              ids. An approval with no stored draw counts as sampled.
  forced      `enable --force` (with a reason) enables a policy no scope of which has its record,
              and lifts suspensions. An extractor rule's scope then decides unproven, every one of
              its approvals sent to second review until it earns its record; an agent's scope
              never decides without a record of its own (a new agent starts with none, forced or
              not; after a suspension, a fresh one).
  suspension  per scope, over its last `window` second reviews: an overturn raises the scope's
              sample rate to ALERT_SAMPLE_RATE; when two or more overturns make the overturn
              rate's Wilson lower bound pass `tolerance`, the scope is suspended (audited), and every approval
              of the scope since its last clean audit (taken, failing closed, as the start of that
              window) that no person upheld is undone back to the queue for people (each undo
              audited; a person may approve it again). A suspended scope goes back to shadow; `enable` lifts it only
              on fresh evidence recorded since the suspension, or with `--force` and a reason.

Its facts and audit rows carry the actor `policy:NAME`, and every approval goes through the review
service and so through the one activation gate (engine.gate).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import UTC, datetime
from typing import Any, Final, Literal

# The claims package by its full name: `from . import claims` would import `engine` itself, whose
# __init__ imports this module (tests/test_layers.py finds no import circle).
import engine.claims as claims

from .categories import category_of
from .context import EngineContext
from .credentials import credential_like
from .directives import directive_reason
from .errors import ConflictError, MemdeskError, NotFoundError, UserInputError
from .gate import POLICY_ACTOR_PREFIX, SYSTEM_ACTOR
from .limits import check_reason
from .models import Candidate
from .sampling import draw_sample, wilson_lower
from .second_look import SecondLook
from .storage.rooms import PolicyTx, Rooms
from .storage.sql.policies import POLICY_KEY, SAMPLED, UNSAMPLED
from .timeutil import from_us, to_us
from .watch import Watch, watches

PolicyMode = Literal["shadow", "enabled", "suspended", "disabled"]
APPROVABLE_KINDS: Final = ("new", "proposed")
"""The only kinds a policy approves: a claim that adds. Updates, contradictions and retractions
replace or remove something, and a person chooses supersede, correct or keep both."""

ScopeState = Literal["shadow", "live", "suspended"]
SCOPE_ENTITY: Final = "policy_scope"
SUSPEND: Final = "policy_scope_suspend"
RESUME: Final = "policy_scope_resume"
CLEANUP: Final = "policy_scope_cleanup"

ALERT_SAMPLE_RATE: Final = 1.0
ALERT_LOOKBACK: Final = 20
"""When a scope's first overturn arrives, its newest approvals the draw left out (up to this many)
are drawn into the second review too: what was approved just before the overturn is the likeliest
to share its fault, and waiting for new approvals would let a drift run on."""
"""The sample rate of a scope with an overturn among its recent second reviews: a drift shows
itself in hours, not days, while a clean scope costs only its policy's rate."""

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
_AGENT = re.compile(r"^[^\s,|]{1,80}$")


def known_slots() -> tuple[str, ...]:
    """The slot names the claim model reads (engine.claims.slot_names), which a policy may name."""
    return tuple(sorted(claims.slot_names()))


def _slot_known(slot: str, known: Iterable[str]) -> bool:
    return any(slot == k or (k.endswith("*") and slot.startswith(k[:-1])) for k in known) or (
        slot.startswith("favourite_") and any(k.startswith("favourite_") for k in known)
    )


class PolicyEvidenceError(UserInputError):
    """`enable` without enough evidence: no scope's precision lower bound reaches the target over
    enough people's decisions. `--force` (with a reason) enables it anyway."""


def source_of(cand: Candidate, rule: str | None) -> str:
    """Where a candidate came from, from its provenance rather than its `kind` label: a row no
    extraction run made is an agent's proposal (`agent:NAME`), whatever kind it claims; an
    extractor's candidate is its rule's (`rule:R`) or, without one, its extractor's."""
    if cand.run_id is None:
        return f"agent:{cand.created_by or '(unnamed)'}"
    if rule:
        return f"rule:{rule}"
    return f"extractor:{cand.extractor or '(unknown)'}"


def scope_key(slot: str, source: str) -> str:
    return f"{slot}|{source}"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a policy says about one candidate: approve or not, why, and the scope it falls in
    (None when no slot was read: it has no record to earn)."""

    approve: bool
    why: str
    scope: str | None = None


@dataclass(frozen=True, slots=True)
class Policy:
    """One policy's settings (stored as JSON in the store's meta table)."""

    name: str
    mode: PolicyMode = "shadow"
    slots: tuple[str, ...] = ()  # the allow-list: no slots, no approvals
    agents: tuple[str, ...] = ()  # agents whose proposals it may decide: none, no proposal
    extractor: str | None = None  # only candidates of this extractor ("offline", "openai"...)
    min_confidence: float | None = None  # extractors' candidates only (proposals carry none)
    max_per_day: int | None = None
    sample_rate: float = 0.1  # share of its approvals sent to the blind second review
    target: float = 0.95  # precision lower bound a scope's record must reach
    tolerance: float = 0.05  # overturn-rate lower bound that suspends a scope
    window: int = 30  # a scope's last second reviews its suspension test reads
    forced: bool = False  # enabled without the evidence: every unsuspended scope decides
    created_by: str = ""
    created_at: str = ""

    @property
    def actor(self) -> str:
        return POLICY_ACTOR_PREFIX + self.name

    def verdict(self, cand: Candidate, rule: str | None = None) -> Verdict:
        """What this policy would decide about one pending candidate, from its text and
        provenance; `rule` is the extractor rule that made it, when one did. The allow-list, each
        condition fail-closed: anything not positively recognised is a person's."""
        source = source_of(cand, rule)
        if not self.slots:
            return Verdict(False, "this policy names no slots: it approves nothing (add one with --slots)")
        if cand.kind not in APPROVABLE_KINDS or cand.supersedes_id is not None or cand.supersedes_candidate_id:
            return Verdict(False, f"kind {cand.kind}: it would replace or remove something, a person decides")
        marks = tuple(cand.marks or ())
        if marks:
            seen = ", ".join(f"{m.kind.replace('_', ' ')} #{m.target_id}" for m in marks)
            return Verdict(False, f"marked ({seen}): a person decides")
        if cand.unsupported:
            return Verdict(False, "its evidence is not in the user's messages")
        if credential_like(cand.statement):
            return Verdict(False, "a credential-like phrase in the statement")
        if credential_like(cand.evidence):
            return Verdict(False, "a credential-like phrase in its evidence")
        category = category_of(cand.statement)
        if category is not None or cand.category is not None:
            return Verdict(False, f"special category {category or cand.category} (unsure counts): always a person")
        directive = directive_reason(cand.statement)
        if directive is not None:
            return Verdict(False, f"{directive}: always a person, then a second")
        claim = claims.read_claim(cand.statement)
        if claim.slot is None:
            return Verdict(False, "free text: no slot read from the statement")
        if claim.negated:
            return Verdict(False, f"a negated {claim.slot} claim: a person decides")
        if claim.slot not in self.slots:
            return Verdict(False, f"slot {claim.slot} is not one of this policy's ({', '.join(self.slots)})")
        scope = scope_key(claim.slot, source)
        if source.startswith("agent:"):
            if source.removeprefix("agent:") not in self.agents:
                return Verdict(False, f"{source} is not an agent this policy trusts", scope)
        else:
            if self.extractor is not None and cand.extractor != self.extractor:
                return Verdict(False, f"extractor {cand.extractor or 'none'} is not {self.extractor}", scope)
            if self.min_confidence is not None and (cand.confidence is None or cand.confidence < self.min_confidence):
                return Verdict(False, f"confidence {cand.confidence} is below {self.min_confidence}", scope)
        return Verdict(True, f"slot {claim.slot} from {source}", scope)


@dataclass(frozen=True, slots=True)
class ScopeRecord:
    """One scope's record: its evidence since it was last reset (suspended), its state and its
    recent second reviews."""

    scope: str
    state: ScopeState
    decided: int  # people's decisions on what it would approve, second reviews of its approvals included
    confirmed: int
    precision_lower: float | None
    ready: bool
    reviewed: int  # its recent second reviews (the suspension test's window)
    overturned: int
    overturn_lower: float | None
    since: datetime | None = None  # suspended or reset at
    returned: tuple[int, ...] = ()  # what its suspension returned to the queue
    kept: tuple[str, ...] = ()  # what its suspension could not return, and why


@dataclass(frozen=True, slots=True)
class PolicyReport:
    """A policy's record against the people's decisions on the same candidates, per scope."""

    name: str
    mode: PolicyMode
    judged: int  # candidates it judged
    would_approve: int
    refusals: dict[str, int]  # why it would not approve, by reason, counted
    scopes: tuple[ScopeRecord, ...]
    target: float
    tolerance: float
    min_decisions: int
    policy_approvals: int
    second_reviewed: int
    overturned: int
    slots: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    forced: bool = False

    @property
    def ready(self) -> bool:
        return any(s.ready for s in self.scopes if s.state != "suspended")

    @property
    def nothing_approvable(self) -> str | None:
        """Why this policy would approve nothing now, said plainly; None when some scope decides."""
        if not self.slots:
            return "it names no slots, so it approves nothing: add a policy with --slots"
        if self.mode != "enabled":
            return f"it is {self.mode}: it decides nothing until enabled"
        if self.forced and not self.agents:
            return None  # extractors' scopes decide unproven, watched
        if any(s.state == "live" for s in self.scopes):
            return None
        if not self.scopes:
            return "it has judged nothing in its slots yet: no scope has a record"
        return (
            "no scope has the evidence yet: each needs people's decisions on at least"
            f" {self.min_decisions} of what it would approve, with a precision lower bound of {self.target}"
        )


@dataclass(slots=True)
class PolicyRun:
    """What one pass of the policies did: every candidate it counts as judged ends in exactly one
    of `approved` or `left` (a person decides, with why), so judged == len(approved) + len(left)."""

    judged: int = 0
    approved: list[int] = field(default_factory=list)
    left: list[tuple[int, str]] = field(default_factory=list)
    suspended: list[str] = field(default_factory=list)  # scopes suspended, "policy: slot|source"
    returned: list[int] = field(default_factory=list)  # approvals its suspensions returned to people


@dataclass(frozen=True, slots=True)
class SuspendedScope:
    policy: str
    scope: str
    at: datetime
    reason: str
    returned: tuple[int, ...]
    still_pending: int  # of those returned, how many wait for a person now
    kept: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PolicyAlarms:
    """What `memdesk digest` and the workstation header report about the policies' safety loop."""

    second_review_backlog: int
    oldest_second_review: datetime | None
    second_review_hours: float | None
    pending: int
    oldest_pending_hours: float | None
    sla_hours: float
    suspended: tuple[SuspendedScope, ...]
    watched: tuple[Watch, ...] = ()  # agents under watch (engine/watch.py)

    @property
    def queue_past_sla(self) -> bool:
        return self.oldest_pending_hours is not None and self.oldest_pending_hours > self.sla_hours

    @property
    def second_review_past_sla(self) -> bool:
        return self.second_review_hours is not None and self.second_review_hours > self.sla_hours

    @property
    def alarm(self) -> bool:
        return self.queue_past_sla or self.second_review_past_sla

    def header(self) -> str:
        """One line for the workstation's header ("" when there is nothing to raise): the
        second-review backlog once its oldest is past the SLA, suspended scopes and agents under
        watch."""
        parts = []
        # the count alone is on the progress line (◎ N to second-review); this line is the alarm
        if self.second_review_backlog and self.second_review_past_sla:
            age = f", oldest {self.second_review_hours:.0f} h" if self.second_review_hours is not None else ""
            parts.append(f"2nd review {self.second_review_backlog}{age} PAST SLA")
        if self.suspended:
            back = sum(len(s.returned) for s in self.suspended)
            parts.append(f"{len(self.suspended)} scope(s) suspended, {back} returned to queue")
        if self.watched:
            names = ", ".join(w.agent for w in self.watched)
            drawn = sum(len(w.drawn) for w in self.watched)
            parts.append(f"{len(self.watched)} agent(s) under watch ({names}), {drawn} drawn to 2nd review")
        return " · ".join(parts)


@dataclass(slots=True)
class _ScopeState:
    """The scopes' suspension events of every policy, read once per pass."""

    suspended: dict[tuple[str, str], tuple[int, dict[str, Any]]] = field(default_factory=dict)
    reset: dict[tuple[str, str], int] = field(default_factory=dict)  # last suspension of a scope (us)


class PolicyService:
    """`Memory.policies`: add, all, get, report, enable, disable, run, alarms; and `after_queue`,
    which `Memory.process` and `Memory.propose` call with the newest candidate id they saw before."""

    @property
    def _store(self) -> Rooms[PolicyTx]:
        """The store, seen through the rooms this service may touch (engine/storage/rooms.py)."""
        return self._ctx.store

    def __init__(self, ctx: EngineContext, review: object) -> None:
        self._ctx = ctx
        self._review = review  # engine.review.ReviewService (typed loosely: review imports nothing of this)
        self._checked: dict[str, tuple[int, int]] = {}  # policy actor: second-review stamp last tested
        self._alert: dict[str, set[str]] = {}  # policy actor: scopes with an overturn in their window
        self._live_scopes: dict[str, set[str]] = {}  # policy actor: scopes whose record proved ready
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
        slots: tuple[str, ...] = (),
        agents: tuple[str, ...] = (),
        extractor: str | None = None,
        min_confidence: float | None = None,
        max_per_day: int | None = None,
        sample_rate: float = 0.1,
        target: float = 0.95,
        tolerance: float = 0.05,
        window: int = 30,
    ) -> Policy:
        """A new policy, in shadow mode: it decides nothing until `enable`. `slots` is its
        allow-list (names engine.claims knows); `agents` the agents whose proposals it may decide."""
        if not _NAME.match(name or ""):
            raise UserInputError("a policy name is 1-40 lower-case letters, digits, '-' or '_', starting with one")
        slots = tuple(dict.fromkeys(s.strip() for s in slots if s.strip()))
        if not slots:
            raise UserInputError("a policy needs --slots: the claim slots it may decide (it approves nothing else)")
        known = known_slots()
        unknown = [s for s in slots if not _slot_known(s, known)]
        if unknown:
            raise UserInputError(f"unknown slot(s) {', '.join(unknown)}: choose from {', '.join(known)}")
        agents = tuple(dict.fromkeys(a.strip() for a in agents if a.strip()))
        bad = [a for a in agents if not _AGENT.match(a)]
        if bad:
            raise UserInputError(f"bad agent name(s) {', '.join(map(repr, bad))}: no spaces, commas or '|'")
        for what, value in (
            ("min_confidence", min_confidence),
            ("sample_rate", sample_rate),
            ("target", target),
            ("tolerance", tolerance),
        ):
            if value is not None and not (0.0 <= value <= 1.0):  # NaN fails both
                raise UserInputError(f"{what} must be between 0 and 1, not {value}")
        if max_per_day is not None and max_per_day < 1:
            raise UserInputError("max_per_day must be at least 1")
        if not 5 <= window <= 1000:
            raise UserInputError("window must be between 5 and 1000 second reviews")
        now = self._ctx.now()
        policy = Policy(
            name=name,
            slots=slots,
            agents=agents,
            extractor=extractor,
            min_confidence=min_confidence,
            max_per_day=max_per_day,
            sample_rate=sample_rate,
            target=target,
            tolerance=tolerance,
            window=window,
            created_by=actor,
            created_at=now.isoformat(),
        )
        async with self._store.transaction() as tx:
            if await tx.meta_value(POLICY_KEY + name) is not None:
                raise ConflictError(f"a policy named {name!r} exists already")
            await self._save(tx, None, policy, actor, to_us(now), "policy_add", None)
        return policy

    async def enable(self, name: str, actor: str, *, force: bool = False, reason: str | None = None) -> PolicyReport:
        """Enable a policy when some scope's record proves it (PolicyEvidenceError otherwise,
        naming the figures), and lift the suspensions of scopes whose fresh record (since their
        suspension) proves them again. `force=True` with a reason enables it anyway and lifts
        every suspension, audited as forced."""
        if force:
            reason = check_reason((reason or "").strip(), self._ctx.config)
            if not reason:
                raise UserInputError("enabling a policy without the evidence needs a reason")
        report = await self.report(name)
        if not report.slots:
            raise UserInputError(f"policy {name!r} names no slots, so it approves nothing: add a policy with --slots")
        if not report.ready and not force:
            raise PolicyEvidenceError(_evidence_text(report))
        now_us: int = to_us(self._ctx.now())
        lift = [s for s in report.scopes if s.state == "suspended" and (force or s.ready)]
        async with self._store.transaction() as tx:
            raw = await tx.meta_value(POLICY_KEY + name)
            if raw is None:
                raise NotFoundError(f"no policy named {name!r}")
            before = _policy(raw)
            after = replace(before, mode="enabled", forced=force or (before.forced and before.mode == "enabled"))
            action = "policy_enable_forced" if force else "policy_enable"
            await self._save(tx, before, after, actor, now_us, action, reason or _evidence_text(report))
            for rec in lift:
                await tx.audit(
                    at=now_us,
                    actor=actor,
                    action=RESUME,
                    user_id="",
                    entity=SCOPE_ENTITY,
                    entity_id=None,
                    after={"policy": name, "scope": rec.scope, "forced": force},
                    reason=reason if force else f"fresh record: {rec.confirmed} of {rec.decided} confirmed",
                )
        return await self.report(name)

    async def disable(self, name: str, actor: str, reason: str | None = None) -> Policy:
        now_us: int = to_us(self._ctx.now())
        async with self._store.transaction() as tx:
            raw = await tx.meta_value(POLICY_KEY + name)
            if raw is None:
                raise NotFoundError(f"no policy named {name!r}")
            before = _policy(raw)
            after = replace(before, mode="disabled", forced=False)
            await self._save(tx, before, after, actor, now_us, "policy_disable", reason)
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

    async def _scope_state(self, tx: PolicyTx) -> _ScopeState:
        state = _ScopeState()
        for action, raw, at in await tx.policy_scope_events():
            data = json.loads(raw)
            key = (str(data.get("policy")), str(data.get("scope")))
            if action == SUSPEND:
                state.suspended[key] = (at, data)
                state.reset[key] = at
            elif action == CLEANUP and key in state.suspended:
                state.suspended[key] = (state.suspended[key][0], {**state.suspended[key][1], **data})
            elif action == RESUME:
                state.suspended.pop(key, None)
        return state

    async def report(self, name: str) -> PolicyReport:
        policy = await self.get(name)
        async with self._store.reading() as tx:
            rows = await tx.verdicts_with_outcomes(policy.actor)
            reviews = await tx.scope_second_reviews(policy.actor)
            state = await self._scope_state(tx)
            resets = {scope: at for (p, scope), at in state.reset.items() if p == name}
            counts: dict[str, tuple[int, int]] = {}
            for scope, (n, ok) in (await tx.scope_shadow_counts(policy.actor, None, 0)).items():
                if scope not in resets:
                    counts[scope] = (n, ok)
            for scope, since in resets.items():
                counts[scope] = (await tx.scope_shadow_counts(policy.actor, scope, since)).get(scope, (0, 0))
            own = await tx.decisions_since(policy.actor, 0)
        judged = would = 0
        refusals: dict[str, int] = {}
        seen_scopes: set[str] = set(counts)
        for raw, _kind, _statement, _status, _decision, _decided_by in rows:
            judged += 1
            verdict = json.loads(raw)
            if verdict.get("approve"):
                would += 1
                if verdict.get("scope"):
                    seen_scopes.add(str(verdict["scope"]))
            else:
                why = re.sub(r"#\d+", "#N", str(verdict.get("why", "")))
                refusals[why] = refusals.get(why, 0) + 1
        scopes = tuple(
            self._record(policy, scope, counts.get(scope, (0, 0)), reviews, state) for scope in sorted(seen_scopes)
        )
        return PolicyReport(
            name=policy.name,
            mode=policy.mode,
            judged=judged,
            would_approve=would,
            refusals=dict(sorted(refusals.items(), key=lambda kv: -kv[1])),
            scopes=scopes,
            target=policy.target,
            tolerance=policy.tolerance,
            min_decisions=self._ctx.config.policy_min_decisions,
            policy_approvals=own,
            second_reviewed=len(reviews),
            overturned=sum(1 for r in reviews if r[1] != "agree"),
            slots=policy.slots,
            agents=policy.agents,
            forced=policy.forced,
        )

    def _record(
        self,
        policy: Policy,
        scope: str,
        shadow: tuple[int, int],
        reviews: list[tuple[str, str, int, int, int]],
        state: _ScopeState,
    ) -> ScopeRecord:
        """One scope's record: people's decisions on what it would approve (since its last
        suspension) plus second reviews of its approvals (a verdict other than agree is a person
        deciding against it), and the suspension test over its last `window` second reviews."""
        since = state.reset.get((policy.name, scope), 0)
        mine = [r for r in reviews if r[0] == scope and r[3] > since]
        decided = shadow[0] + len(mine)
        confirmed = shadow[1] + sum(1 for r in mine if r[1] == "agree")
        lower = wilson_lower(confirmed, decided)
        ready = decided >= self._ctx.config.policy_min_decisions and lower is not None and lower >= policy.target
        recent = mine[-policy.window :]
        over = sum(1 for r in recent if r[1] != "agree")  # overturned, or disagreed after it ended
        suspended = state.suspended.get((policy.name, scope))
        forced = policy.forced and not scope.split("|", 1)[-1].startswith("agent:")  # never licenses an agent
        live = policy.mode == "enabled" and (forced or ready)
        st: ScopeState = "suspended" if suspended else ("live" if live else "shadow")
        data = suspended[1] if suspended else {}
        return ScopeRecord(
            scope=scope,
            state=st,
            decided=decided,
            confirmed=confirmed,
            precision_lower=lower,
            ready=ready,
            reviewed=len(recent),
            overturned=over,
            overturn_lower=wilson_lower(over, len(recent)),
            since=from_us(since) if since else None,
            returned=tuple(int(i) for i in data.get("returned", ())),
            kept=tuple(str(k) for k in data.get("kept", ())),
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
        (enabled) its approvals in the scopes whose record proves them."""
        policy = await self.get(name)
        if policy.mode not in ("shadow", "enabled"):
            raise UserInputError(f"policy {name!r} is {policy.mode}: enable it (or add a new one) to run it")
        return await self._pass([policy], 0, every=True)

    async def _pass(self, policies: list[Policy], after_id: int, *, every: bool = False) -> PolicyRun:
        out = PolicyRun()
        await self.check_suspensions(policies, out)
        cursor = after_id
        while True:
            async with self._store.reading() as tx:
                batch: list[Candidate] = await tx.pending_after(cursor, 200)
            if not batch:
                return out
            cursor = batch[-1].id
            await self._judge(policies, batch, out, every=every)

    async def after_decision(self, user_id: str) -> PolicyRun:
        """A person's decision may make more of a user's candidates a policy's to decide (a chain
        a rejection cut back to `new`, a candidate the gate re-pointed). The enabled policies judge
        the user's pending candidates again, as `run` would. Run by `second_look` in the background
        once a person's decision has committed; one read, and nothing more, when no policy is enabled."""
        from .review import ReviewService

        out = PolicyRun()
        enabled = [p for p in await self.all() if p.mode == "enabled"]
        if not enabled:
            return out
        await self.check_suspensions(enabled, out)
        review = self._review
        assert isinstance(review, ReviewService)
        batch = await review.pending(user_id=user_id, limit=200)
        if batch:
            await self._judge(enabled, batch, out, every=False)
        return out

    async def _judge(self, policies: list[Policy], batch: list[Candidate], out: PolicyRun, *, every: bool) -> None:
        """Record each policy's verdicts on `batch` (once per candidate) and let the enabled ones
        decide it. `every`: count every candidate of the batch in `out` (a `run`), not only the
        ones judged for the first time. One pass at a time in this process: the look after a
        person's decision runs in the background (engine/second_look.py) and must not interleave
        with `after_queue` or `run` (each reads what a policy has judged, then records it:
        interleaved, a verdict would be recorded twice)."""
        async with self._judging:
            async with self._store.reading() as tx:
                evidence = await tx.rule_evidence([c.id for c in batch])
            rules = {cid: rule for cid, (rule, _n) in evidence.items()}
            verdicts: dict[str, dict[int, Verdict]] = {}
            fresh_ids: set[int] = set()
            for policy in policies:
                verdicts[policy.name], fresh = await self._record_verdicts(policy, batch, rules)
                fresh_ids |= fresh
            enabled = [p for p in policies if p.mode == "enabled"]
            decided = await self._decide(batch, enabled, verdicts, rules, out) if enabled else {}
            # what this pass judged: what it saw first, what an enabled policy decided on, or all (`run`)
            counted = [c for c in batch if every or c.id in fresh_ids or c.id in decided]
            out.judged += len(counted)
            for cand in counted:
                why = decided.get(cand.id)
                if why == "":
                    continue  # approved (in out.approved)
                if why is None:  # no enabled policy looked at it: a shadow verdict, or it left the queue
                    whys = [(p.name, verdicts[p.name][cand.id].why) for p in policies]
                    why = "shadow: " + (whys[0][1] if len(whys) == 1 else "; ".join(f"{n}: {w}" for n, w in whys))
                out.left.append((cand.id, why))

    async def _record_verdicts(
        self, policy: Policy, batch: list[Candidate], rules: dict[int, str]
    ) -> tuple[dict[int, Verdict], set[int]]:
        """Record `policy`'s verdict on each candidate of `batch` it has not judged yet (once per
        candidate: what its report compares; the scope in the row's note when it would approve)."""
        now_us: int = to_us(self._ctx.now())
        verdicts = {c.id: policy.verdict(c, rules.get(c.id)) for c in batch}
        async with self._store.transaction() as tx:
            seen = await tx.judged_by(policy.actor, [c.id for c in batch])
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
                        "note": verdicts[c.id].scope if verdicts[c.id].approve else None,
                        "after": {
                            "approve": verdicts[c.id].approve,
                            "why": verdicts[c.id].why,
                            "scope": verdicts[c.id].scope,
                            "mode": policy.mode,
                            "statement": c.statement,  # what it judged: a person's edit is disagreement
                        },
                    }
                    for c in fresh
                ]
            )
        return verdicts, {c.id for c in fresh}

    async def _scope_live(self, policy: Policy, scope: str, state: _ScopeState) -> str | None:
        """None when `scope` of the enabled `policy` may decide now; else why not."""
        if (policy.name, scope) in state.suspended:
            at = state.suspended[(policy.name, scope)][0]
            return f"scope {scope} is suspended since {from_us(at).isoformat()}: a person decides"
        live = self._live_scopes.setdefault(policy.actor, set())
        if scope in live:
            return None
        async with self._store.reading() as tx:
            since = state.reset.get((policy.name, scope), 0)
            shadow = (await tx.scope_shadow_counts(policy.actor, scope, since)).get(scope, (0, 0))
            reviews = await tx.scope_second_reviews(policy.actor)
        rec = self._record(policy, scope, shadow, reviews, state)
        if rec.ready:
            live.add(scope)
            return None
        if policy.forced and not scope.split("|", 1)[1].startswith("agent:"):
            return None  # an extractor's rule decides unproven: every approval second-reviewed (_store_draw)
        if policy.forced:
            return (
                f"scope {scope} has no record of its own: even a forced policy waits for people's decisions"
                " on an agent it has not measured"
            )
        lower = "none" if rec.precision_lower is None else f"{rec.precision_lower:.3f}"
        return (
            f"scope {scope} has no record yet ({rec.confirmed} of {rec.decided} people's decisions confirmed,"
            f" lower bound {lower}; {self._ctx.config.policy_min_decisions} at {policy.target} needed): shadow"
        )

    async def _decide(
        self,
        batch: list[Candidate],
        plans: list[Policy],
        verdicts: dict[str, dict[int, Verdict]],
        rules: dict[int, str],
        out: PolicyRun,
    ) -> dict[int, str]:
        """Decide `batch` in queue order, each candidate by the first enabled policy that approves
        it in a live scope; returns {candidate id: "" when approved, else why not}. Each approval
        draws its second-review sample in secret and stores the draw with the scope."""
        from .review import ReviewService

        review = self._review
        assert isinstance(review, ReviewService)
        now = self._ctx.now()
        day_start = to_us(datetime(now.year, now.month, now.day, tzinfo=UTC))
        async with self._store.reading() as tx:
            state = await self._scope_state(tx)
            allowance = {
                p.name: None if p.max_per_day is None else p.max_per_day - await tx.decisions_since(p.actor, day_start)
                for p in plans
            }
        touched: set[str] = set()  # users with a fact made active in this pass
        result: dict[int, str] = {}
        memo: dict[tuple[str, str], str | None] = {}  # (policy, scope): why it may not decide (pass-long)
        for cand in batch:
            fresh = cand.user_id in touched
            if fresh:  # that fact may have re-pointed it (engine.gate, I5): judge it as it is now
                cand = await review.get(cand.id)
                if cand.status != "pending":
                    continue
            whys: list[str] = []
            for policy in plans:
                verdict = policy.verdict(cand, rules.get(cand.id)) if fresh else verdicts[policy.name][cand.id]
                why = verdict.why
                if verdict.approve and verdict.scope is not None:
                    key = (policy.name, verdict.scope)
                    if key not in memo:
                        memo[key] = await self._scope_live(policy, verdict.scope, state)
                    blocked = memo[key]
                    left = allowance[policy.name]
                    if blocked is None and left is not None and left <= 0:
                        blocked = f"policy {policy.name} reached its {policy.max_per_day} decisions today"
                    if blocked is None:
                        try:
                            await review.approve(cand.id, policy.actor, reason=f"policy {policy.name}")
                        except MemdeskError as exc:  # the gate, a lease, a flag or an assignment said no
                            why = str(exc)
                        else:
                            await self._store_draw(policy, cand, verdict.scope)
                            out.approved.append(cand.id)
                            touched.add(cand.user_id)
                            result[cand.id] = ""
                            if left is not None:
                                allowance[policy.name] = left - 1
                            break
                    else:
                        why = blocked
                whys.append(why if len(plans) == 1 else f"{policy.name}: {why}")
            else:
                result[cand.id] = "; ".join(whys)
        return result

    async def _store_draw(self, policy: Policy, cand: Candidate, scope: str) -> None:
        """Store the secret draw of one approval. Written just after the approval commits; should
        it be lost, the approval counts as sampled (no `policy_unsampled` row: fail closed)."""
        rate = policy.sample_rate
        if scope not in self._live_scopes.get(policy.actor, ()):
            rate = 1.0  # forced, with no record of its own: a person checks every approval until it has one
        elif scope in self._alert.get(policy.actor, ()):
            rate = max(rate, ALERT_SAMPLE_RATE)  # an overturn in its window: look closer, at once
        sampled = draw_sample(rate)
        async with self._store.transaction() as tx:
            await tx.audit(
                at=to_us(self._ctx.now()),
                actor=policy.actor,
                action=SAMPLED if sampled else UNSAMPLED,
                user_id=cand.user_id,
                entity="candidate",
                entity_id=cand.id,
                note=scope,
            )

    # -- suspension -------------------------------------------------------------------------------

    async def check_suspensions(self, policies: list[Policy], out: PolicyRun) -> None:
        """Test each enabled policy's scopes over their recent second reviews, when any arrived
        since the last test, and suspend (and clean up) those whose overturns pass the tolerance."""
        for policy in policies:
            if policy.mode != "enabled":
                continue
            async with self._store.reading() as tx:
                stamp = await tx.second_review_stamp(policy.actor)
                if stamp == (0, 0) or self._checked.get(policy.actor) == stamp:
                    continue
                reviews = await tx.scope_second_reviews(policy.actor)
                state = await self._scope_state(tx)
            self._checked[policy.actor] = stamp  # before suspending: undo's after-look comes back here
            alert = self._alert.setdefault(policy.actor, set())
            before = set(alert)
            alert.clear()
            for scope in sorted({r[0] for r in reviews}):
                if (policy.name, scope) in state.suspended:
                    continue
                rec = self._record(policy, scope, (0, 0), reviews, state)
                if rec.overturned:
                    alert.add(scope)
                    if scope not in before:
                        await self._draw_again(policy, scope)
                # One overturn alone may be the second reviewer's own mistake: it raises the scope's
                # sampling (ALERT_SAMPLE_RATE) instead; a second within the window is a pattern.
                if rec.overturned >= 2 and rec.overturn_lower is not None and rec.overturn_lower > policy.tolerance:
                    await self._suspend(policy, scope, rec, reviews, state, out)

    async def _draw_again(self, policy: Policy, scope: str) -> None:
        """A scope's alert: its newest approvals left out of the sample go to second review now."""
        now_us: int = to_us(self._ctx.now())
        async with self._store.transaction() as tx:
            for cid, user_id in await tx.unsampled_scope_approvals(policy.actor, scope, ALERT_LOOKBACK):
                await tx.audit(
                    at=now_us,
                    actor=policy.actor,
                    action=SAMPLED,
                    user_id=user_id,
                    entity="candidate",
                    entity_id=cid,
                    note=scope,
                    reason="drawn again: an overturn in its scope",
                )

    async def _suspend(
        self,
        policy: Policy,
        scope: str,
        rec: ScopeRecord,
        reviews: list[tuple[str, str, int, int, int]],
        state: _ScopeState,
        out: PolicyRun,
    ) -> None:
        """Suspend one scope and return to people every approval of it since its last clean
        audit: the newest approval a second reviewer upheld that was made before the first
        approval they overturned (all of the scope's approvals since its reset when none)."""
        from .review import ReviewService

        review = self._review
        assert isinstance(review, ReviewService)
        since = state.reset.get((policy.name, scope), 0)
        mine = [r for r in reviews if r[0] == scope and r[3] > since][-policy.window :]
        # Fail closed: the last clean audit is taken to be before the whole window the test read
        # (a drift starts unseen, and upheld samples after it do not clear the approvals around
        # them); approvals a person upheld on second review are kept (SQL), everything else goes back.
        clean = max(since, min((r[2] for r in mine), default=since + 1) - 1)
        now_us: int = to_us(self._ctx.now())
        why = (
            f"second reviewers overturned {rec.overturned} of its last {rec.reviewed} approvals reviewed: the"
            f" overturn rate's lower bound {rec.overturn_lower or 0:.3f} passes the tolerance {policy.tolerance}"
        )
        # suspended first (committed), so no pass approves in the scope while its approvals return
        async with self._store.transaction() as tx:
            back = await tx.scope_approvals_since(policy.actor, scope, clean)
            await tx.audit(
                at=now_us,
                actor=SYSTEM_ACTOR,
                action=SUSPEND,
                user_id="",
                entity=SCOPE_ENTITY,
                entity_id=None,
                after={"policy": policy.name, "scope": scope, "clean_at": clean, "returning": back, "reason": why},
                reason=why,
            )
        state.suspended[(policy.name, scope)] = (now_us, {"reason": why})
        state.reset[(policy.name, scope)] = now_us
        self._live_scopes.get(policy.actor, set()).discard(scope)
        returned: list[int] = []
        kept: list[str] = []
        for cid in back:
            try:
                await review.undo(cid, SYSTEM_ACTOR, note=f"scope {scope} of policy {policy.name} suspended: {why}")
            except MemdeskError as exc:  # a later change, an assignment: it stays, and is named
                kept.append(f"#{cid}: {exc}")
            else:
                returned.append(cid)
        async with self._store.transaction() as tx:
            await tx.audit(
                at=to_us(self._ctx.now()),
                actor=SYSTEM_ACTOR,
                action=CLEANUP,
                user_id="",
                entity=SCOPE_ENTITY,
                entity_id=None,
                after={"policy": policy.name, "scope": scope, "returned": returned, "kept": kept},
                reason=f"returned {len(returned)} approval(s) of the suspended scope to people",
            )
        state.suspended[(policy.name, scope)] = (now_us, {"reason": why, "returned": returned, "kept": kept})
        out.suspended.append(f"{policy.name}: {scope}")
        out.returned.extend(returned)

    # -- alarms -----------------------------------------------------------------------------------

    async def alarms(self, sla_hours: float | None = None) -> PolicyAlarms:
        """The second-review backlog and its age, the pending queue's age, and every suspended
        scope with what it returned to the queue: what `digest` and the workstation report."""
        from .blind import SAMPLED_DECISIONS, sample_bound

        sla = self._ctx.config.review_sla_hours if sla_hours is None else sla_hours
        now = self._ctx.now()
        async with self._store.reading() as tx:
            backlog, oldest_us = await tx.oldest_sampled_approval(SAMPLED_DECISIONS, sample_bound(self._ctx.config))
            pending, oldest_pending_us = await tx.oldest_pending()
            state = await self._scope_state(tx)
            watched = tuple(sorted((await watches(tx)).values(), key=lambda w: (w.at, w.agent)))
            suspended = []
            for (name, scope), (at, data) in sorted(state.suspended.items()):
                returned = tuple(int(i) for i in data.get("returned", ()))
                waiting = await tx.pending_among(list(returned))
                suspended.append(
                    SuspendedScope(
                        policy=name,
                        scope=scope,
                        at=from_us(at),
                        reason=str(data.get("reason", "")),
                        returned=returned,
                        still_pending=waiting,
                        kept=tuple(str(k) for k in data.get("kept", ())),
                    )
                )

        def hours(us: int | None) -> float | None:
            return None if us is None else round((now - from_us(us)).total_seconds() / 3600, 1)

        return PolicyAlarms(
            second_review_backlog=backlog,
            oldest_second_review=None if oldest_us is None else from_us(oldest_us),
            second_review_hours=hours(oldest_us),
            pending=pending,
            oldest_pending_hours=hours(oldest_pending_us),
            sla_hours=sla,
            suspended=tuple(suspended),
            watched=watched,
        )


def _policy(raw: str) -> Policy:
    """A stored policy, loaded safely: settings this version does not know (a deny-list's `kinds`,
    `min_evidence`) are dropped, and a policy saved before allow-lists names no slots, so it
    approves nothing until a person adds one that does (its report says so)."""
    data = json.loads(raw)
    known = {f.name for f in fields(Policy)}
    data = {k: v for k, v in data.items() if k in known}
    data["slots"] = tuple(data.get("slots") or ())
    data["agents"] = tuple(data.get("agents") or ())
    return Policy(**data)


def _evidence_text(report: PolicyReport) -> str:
    if not report.scopes:
        return (
            f"policy {report.name}: no scope has a record yet (nothing it would approve has been decided by"
            f" people); each scope needs {report.min_decisions} decisions with a precision lower bound of"
            f" {report.target}"
        )
    best = max(report.scopes, key=lambda s: (s.ready, s.decided))
    lower = "none" if best.precision_lower is None else f"{best.precision_lower:.3f}"
    return (
        f"policy {report.name}: no scope has the evidence; the best, {best.scope}: people decided"
        f" {best.decided} of the candidates it would approve (at least {report.min_decisions} needed) and"
        f" approved {best.confirmed} as they were; precision lower bound {lower} against the target {report.target}"
    )

"""Work by a team of reviewers: progress, per-reviewer figures, second opinions, sampled second
review and assignment ("my queue"). Reached as `Memory.team`.

The definitions, once, so the header, the Reviewers view, the CLI and the tests agree:

- **Decision**: an audit row on a candidate with one of DECISIONS (undo does not erase it; undone
  decisions are counted separately). Approval = every decision but `reject`.
- **Time per decision**: the gap between two consecutive decisions of one reviewer. Gaps longer
  than `MemoryConfig.decision_break_seconds` (a break, a meeting) and shorter than one second (a
  bulk approval, not a reading) are left out; the figure is the median of the rest. Claim-to-decision
  would be more direct, but leases are operational state and not audited, so they cannot be
  measured after the fact.
- **Progress** of a filter since a moment (default: the start of the current UTC day): done =
  candidates matching the filter that are decided now and were decided since then; remaining =
  pending candidates matching it; total = done + remaining. An undone decision is pending again, so
  it is never counted twice. The estimate is remaining x this reviewer's time per decision.
- **Second opinion**: a reviewer flags a pending candidate (a note, optionally the way they lean);
  from then on the engine refuses that reviewer's claim and decisions on it (SecondOpinionError),
  so another reviewer decides it. The flag stays with the candidate: if the decision is undone,
  the candidate is back to pending and still needs someone other than the flagger.
- **Second review**: whether an approval is in the sample is drawn when it is made, from a secret
  random source (engine.sampling.draw_sample), and stored with it: a person's draw in the
  approval's own transaction (engine/review.py, at `MemoryConfig.second_review_rate`), a review
  policy's just after (engine/policies.py, at its scope's rate). Nothing an agent sees (ids,
  times) predicts it. The two-person rule: a person's approval of a sensitive candidate
  (engine/sensitive.py) or of a watched agent's proposal (engine/watch.py) is always drawn. A
  person's approval made before draws were stored falls back to the old id hash (`sampled`). The
  sample is re-queued to every reviewer but
  the one who approved it, BLIND: `blind_review` returns the fact, its evidence and its source
  messages, never who approved it, how (plain, edited, superseding) or why; and until the verdict
  every read that names the reviewer (`viewer=`, engine/blind.py) hides who decided it and why. A second reviewer who
  rejects it overturns it: the fact is retracted (with a tombstone, as a rejection would) in the
  same transaction that records the verdict; if the fact is no longer active the disagreement is
  recorded and nothing else changes. An overturn is a person's decision: calibration counts the
  candidate as rejected (the extractor's rules, a policy's record), and an overturned sensitive
  proposal counts toward its agent's watch.
- **Agreement**: over every item two reviewers judged: a second review (the first reviewer
  approved; the second agreed or not) and a decided flag whose flagger said which way they lean.
- **Assignment**: a reviewer takes all of one user's items, present and future. While it holds,
  the engine refuses another reviewer's claim and decisions on that user's candidates
  (AssignedError); the queue filter `assigned_to=reviewer` is "my queue". It ends when released
  or taken over (`force=True`, audited like the rest).
"""

from __future__ import annotations

import itertools
import statistics
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any

from .blind import SAMPLED_DECISIONS, BlindSpots, blind_spots, sample_bound
from .context import EngineContext
from .errors import (
    AlreadyDecidedError,
    ClaimedError,
    NotFoundError,
    UndoRefusedError,
    UserInputError,
)
from .gate import Admission, point_pending_at
from .knowledge import retract_in
from .limits import check_reason
from .may_decide import check_may_decide
from .models import Candidate, Message
from .queue_filter import ALL_PENDING, QueueFilter
from .storage.rooms import Rooms, TeamTx
from .storage.sql.records import OVERTURN_REASON
from .storage.sql.team import HASH_MULTIPLIER, HASH_SPACE
from .timeutil import from_us, to_us
from .watch import consider

if TYPE_CHECKING:
    from .config import MemoryConfig

DECISIONS: tuple[str, ...] = (
    "approve",
    "edit_approve",
    "confirm_supersession",
    "keep_both",
    "approve_retraction",
    "reject",
)
"""Audit actions on a candidate that are a reviewer's decision."""
LEANS = ("approve", "reject")
_MIN_GAP_SECONDS = 1.0
_DAY_US = 86_400_000_000


def sample_point(candidate_id: int) -> float:
    """Where the id falls in [0, 1): the same number in Python and in SQL (engine/storage/sql/policies.py
    LEGACY_SAMPLE_SQL, Knuth's multiplicative hash). Only for a person's approval made before draws
    were stored; every approval since carries its secret draw."""
    return ((candidate_id * HASH_MULTIPLIER) % HASH_SPACE) / HASH_SPACE


def sampled(candidate_id: int, rate: float) -> bool:
    """True when a legacy approval (no stored draw) of this candidate is in the sample at `rate`."""
    return sample_point(candidate_id) < rate


# -- records ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Progress:
    """Overall progress of one queue filter for one reviewer (see the module docstring)."""

    reviewer: str
    since: datetime
    done: int
    remaining: int
    reviewer_decisions: int  # this reviewer's decisions since `since`, any filter
    seconds_per_decision: float | None  # this reviewer's median, since `since`
    flagged_by_me: int  # pending, in the filter, waiting for someone else's opinion
    second_opinions: int  # pending, in the filter, flagged by another reviewer: this reviewer may decide them
    second_reviews: int  # approvals waiting for this reviewer's blind second review
    # Queue age in the filter: how long its oldest pending item has waited, and how many have
    # waited longer than MemoryConfig.review_sla_hours (a rotting queue shows in the header).
    oldest_pending_seconds: float | None = None
    past_sla: int = 0

    @property
    def total(self) -> int:
        return self.done + self.remaining

    @property
    def per_hour(self) -> float | None:
        return 3600.0 / self.seconds_per_decision if self.seconds_per_decision else None

    @property
    def eta_seconds(self) -> float | None:
        if self.remaining == 0:
            return 0.0
        return self.remaining * self.seconds_per_decision if self.seconds_per_decision else None


@dataclass(slots=True)
class ReviewerFigures:
    reviewer: str
    decisions: int = 0
    approved: int = 0
    rejected: int = 0
    undone: int = 0
    seconds_per_decision: float | None = None
    flags_raised: int = 0
    second_reviews_done: int = 0
    compared: int = 0  # items this reviewer and another both judged
    agreed: int = 0

    @property
    def approval_rate(self) -> float | None:
        return self.approved / self.decisions if self.decisions else None

    @property
    def agreement(self) -> float | None:
        return self.agreed / self.compared if self.compared else None


@dataclass(frozen=True, slots=True)
class DailyFigures:
    day: date
    reviewer: str
    decisions: int
    approved: int
    rejected: int


@dataclass(frozen=True, slots=True)
class Comparison:
    """One item two reviewers judged: `first` decided (or flagged, leaning `first_said`), `second`
    judged it after."""

    source: str  # "second_review" | "second_opinion"
    candidate_id: int
    user_id: str
    first: str
    first_said: str
    second: str
    second_said: str
    at: datetime

    @property
    def agreed(self) -> bool:
        return self.first_said == self.second_said


@dataclass(slots=True)
class TeamFigures:
    since: datetime | None
    reviewers: list[ReviewerFigures]
    daily: list[DailyFigures]
    comparisons: list[Comparison]

    @property
    def agreement(self) -> float | None:
        if not self.comparisons:
            return None
        return sum(c.agreed for c in self.comparisons) / len(self.comparisons)


@dataclass(frozen=True, slots=True)
class Flag:
    id: int
    candidate_id: int
    user_id: str
    flagged_by: str
    flagged_at: datetime
    note: str | None = None
    lean: str | None = None
    withdrawn_at: datetime | None = None
    withdrawn_by: str | None = None


@dataclass(slots=True)
class BlindReview:
    """What a second reviewer is shown: the fact as it stands and where it came from, and nothing
    of the first decision (no reviewer, no decision kind, no reason, no original wording)."""

    candidate_id: int
    user_id: str
    knowledge_id: int
    statement: str
    kind: str
    confidence: float | None  # None for an approved agent proposal (no extractor confidence)
    evidence: str
    valid_at: datetime | None
    invalid_at: datetime | None
    messages: list[Message] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class SecondReview:
    """A recorded second review; returned after the verdict, so the first decision is revealed."""

    id: int
    candidate_id: int
    knowledge_id: int
    user_id: str
    first_reviewer: str
    first_decision: str
    reviewer: str
    verdict: str  # "agree" | "overturn" | "disagree" (rejected, but the fact had already ended)
    decided_at: datetime
    reason: str | None = None
    note: str | None = None


@dataclass(frozen=True, slots=True)
class Assignment:
    id: int
    user_id: str
    reviewer: str
    assigned_at: datetime
    assigned_by: str


def _flag(r: Any) -> Flag:
    return Flag(
        id=r[0],
        candidate_id=r[1],
        user_id=r[2],
        flagged_by=r[3],
        flagged_at=from_us(r[4]),
        note=r[5],
        lean=r[6],
        withdrawn_at=from_us(r[7]),
        withdrawn_by=r[8],
    )


def _second_review(r: Any) -> SecondReview:
    return SecondReview(
        id=r[0],
        candidate_id=r[1],
        knowledge_id=r[2],
        user_id=r[3],
        first_reviewer=r[4],
        first_decision=r[5],
        reviewer=r[6],
        verdict=r[7],
        decided_at=from_us(r[8]),
        reason=r[9],
        note=r[10],
    )


def _assignment(r: Any) -> Assignment:
    return Assignment(id=r[0], user_id=r[1], reviewer=r[2], assigned_at=from_us(r[3]), assigned_by=r[4])


def _median_gap(times_us: list[int], break_seconds: float) -> float | None:
    """Median seconds between consecutive decisions, breaks and bulk gaps left out."""
    gaps = [(b - a) / 1e6 for a, b in itertools.pairwise(times_us)]
    kept = [g for g in gaps if _MIN_GAP_SECONDS <= g <= break_seconds]
    return statistics.median(kept) if kept else None


def _start_of_day(at: datetime) -> datetime:
    return datetime(at.year, at.month, at.day, tzinfo=UTC)


def _optional_text(text: str | None, config: MemoryConfig, what: str) -> str | None:
    cleaned = (text or "").strip()
    if not cleaned:
        return None
    check_reason(cleaned, config, what)
    return cleaned


class TeamService:
    def __init__(self, ctx: EngineContext) -> None:
        self._ctx = ctx

    @property
    def _store(self) -> Rooms[TeamTx]:
        """The store, seen through the rooms this service may touch (engine/storage/rooms.py)."""
        return self._ctx.store

    # -- progress and figures -------------------------------------------------------------------

    async def progress(
        self, reviewer: str, *, since: datetime | None = None, filter: QueueFilter = ALL_PENDING
    ) -> Progress:
        """Progress of the queue under `filter` (the one the queue's list shows)."""
        start = since or _start_of_day(self._ctx.now())
        start_us: int = to_us(start, "since")
        async with self._store.reading() as tx:
            remaining = await tx.pending_count(filter)
            done = await tx.decided_since_count(filter, start_us)
            flagged_by_me = await tx.live_flag_count(filter, reviewer, by_reviewer=True)
            others = await tx.live_flag_count(filter, reviewer, by_reviewer=False)
            times = await tx.decision_times(reviewer, start_us, DECISIONS)
            waiting = await self._second_review_count(tx, reviewer)
            now_us: int = to_us(self._ctx.now())
            sla_us = int(self._ctx.config.review_sla_hours * 3_600_000_000)
            oldest, past_sla = await tx.pending_age(now_us - sla_us, filter)
        return Progress(
            reviewer=reviewer,
            since=start,
            done=done,
            remaining=remaining,
            reviewer_decisions=len(times),
            seconds_per_decision=_median_gap(times, self._ctx.config.decision_break_seconds),
            flagged_by_me=flagged_by_me,
            second_opinions=others,
            second_reviews=waiting,
            oldest_pending_seconds=None if oldest is None else (now_us - oldest) / 1_000_000,
            past_sla=past_sla,
        )

    async def figures(
        self,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        user_id: str | None = None,
    ) -> TeamFigures:
        """Per-reviewer figures, decisions per reviewer per UTC day, and every two-reviewer comparison."""
        lo: int = to_us(since, "since") if since is not None else -(2**62)
        hi: int = to_us(until, "until") if until is not None else 2**62
        by: dict[str, ReviewerFigures] = {}

        def fig(name: str) -> ReviewerFigures:
            return by.setdefault(name, ReviewerFigures(name))

        daily: dict[tuple[int, str], list[int]] = {}
        times: dict[str, list[int]] = {}
        async with self._store.reading() as tx:
            for actor, action, at in await tx.decision_events(lo, hi, user_id, DECISIONS):
                f = fig(actor)
                if action == "undo":
                    f.undone += 1
                    continue
                if action == "flag":
                    f.flags_raised += 1
                    continue
                f.decisions += 1
                approved = action != "reject"
                f.approved += approved
                f.rejected += not approved
                times.setdefault(actor, []).append(int(at))
                day = daily.setdefault((int(at) // _DAY_US, actor), [0, 0, 0])
                day[0] += 1
                day[1 if approved else 2] += 1
            comparisons = await self._comparisons(tx, lo, hi, user_id)
        for name, ts in times.items():
            by[name].seconds_per_decision = _median_gap(ts, self._ctx.config.decision_break_seconds)
        for comp in comparisons:
            if comp.source == "second_review":
                fig(comp.second).second_reviews_done += 1
            for name in (comp.first, comp.second):
                fig(name).compared += 1
                fig(name).agreed += comp.agreed
        return TeamFigures(
            since=since,
            reviewers=sorted(by.values(), key=lambda f: (-f.decisions, f.reviewer)),
            daily=[
                DailyFigures(day=from_us(d * _DAY_US).date(), reviewer=name, decisions=n, approved=a, rejected=r)
                for (d, name), (n, a, r) in sorted(daily.items(), key=lambda kv: (-kv[0][0], kv[0][1]))
            ],
            comparisons=comparisons,
        )

    async def _comparisons(
        self,
        tx: TeamTx,
        lo: int,
        hi: int,
        user_id: str | None,
    ) -> list[Comparison]:
        out: list[Comparison] = []
        for cid, uid, first, second, verdict, at in await tx.second_review_comparison_rows(lo, hi, user_id):
            out.append(
                Comparison(
                    "second_review",
                    cid,
                    uid,
                    first,
                    "approve",
                    second,
                    "approve" if verdict == "agree" else "reject",
                    from_us(at),
                )
            )
        for cid, uid, flagger, lean, decider, status, at in await tx.flag_comparison_rows(lo, hi, user_id):
            out.append(
                Comparison(
                    "second_opinion",
                    cid,
                    uid,
                    flagger,
                    lean,
                    decider,
                    "approve" if status == "approved" else "reject",
                    from_us(at),
                )
            )
        out.sort(key=lambda c: (c.at, c.candidate_id))
        return out

    # -- second opinions ------------------------------------------------------------------------

    async def flag(
        self,
        candidate_id: int,
        reviewer: str,
        note: str | None = None,
        *,
        lean: str | None = None,
        user_id: str | None = None,
    ) -> Flag:
        """Ask for a second opinion on a pending candidate: from now on another reviewer decides it.
        The flagger's own lease on it is released, so the next reviewer can take it at once."""
        text = _optional_text(note, self._ctx.config, "the note")
        if lean is not None and lean not in LEANS:
            raise UserInputError(f"lean must be one of {', '.join(LEANS)} (or none), not {lean!r}")
        now = self._ctx.now()
        now_us: int = to_us(now)
        async with self._store.transaction() as tx:
            cand = await tx.get_candidate(candidate_id, user_id)
            if cand.status != "pending":
                raise AlreadyDecidedError(cand.id, cand.status, cand.decided_by)
            if cand.flagged_by is not None:
                raise UserInputError(
                    f"candidate {cand.id} is already flagged for a second opinion by {cand.flagged_by}"
                )
            if cand.claimed_by not in (None, reviewer) and cand.claimed_until is not None and cand.claimed_until > now:
                raise ClaimedError(cand.id, cand.claimed_by)
            check_may_decide(cand, reviewer)
            flag_id = await tx.insert_flag(cand.id, cand.user_id, reviewer, text, lean, now_us)
            await tx.release_candidate(cand.id, reviewer)
            flag = _flag(await tx.flag_row(flag_id))
            await tx.audit(
                at=now_us,
                actor=reviewer,
                action="flag",
                user_id=cand.user_id,
                entity="candidate",
                entity_id=cand.id,
                after=flag,
                reason=text,
            )
            return flag

    async def withdraw_flag(self, candidate_id: int, reviewer: str, *, user_id: str | None = None) -> Flag:
        """The flagger takes the item back (only the flagger: a flag is their request)."""
        now_us: int = to_us(self._ctx.now())
        async with self._store.transaction() as tx:
            cand = await tx.get_candidate(candidate_id, user_id)
            row = await tx.live_flag_row(cand.id)
            if row is None:
                raise NotFoundError(f"candidate {cand.id} has no second-opinion flag")
            before = _flag(row)
            if before.flagged_by != reviewer:
                raise UserInputError(
                    f"only {before.flagged_by}, who flagged candidate {cand.id}, can withdraw the flag"
                )
            if cand.status != "pending":
                raise AlreadyDecidedError(cand.id, cand.status, cand.decided_by)
            await tx.withdraw_flag_row(before.id, now_us, reviewer)
            after = _flag(await tx.flag_row(before.id))
            await tx.audit(
                at=now_us,
                actor=reviewer,
                action="withdraw_flag",
                user_id=cand.user_id,
                entity="candidate",
                entity_id=cand.id,
                before=before,
                after=after,
            )
            return after

    async def flags(self, *, pending_only: bool = True, user_id: str | None = None) -> list[Flag]:
        """Live flags (on pending candidates by default), oldest first."""
        async with self._store.reading() as tx:
            rows = await tx.flag_rows(pending_only=pending_only, user_id=user_id)
        return [_flag(r) for r in rows]

    async def flag_of(self, candidate_id: int) -> Flag | None:
        """The live flag of a candidate, with its note (for the detail pane)."""
        async with self._store.reading() as tx:
            row = await tx.live_flag_row(candidate_id)
        return _flag(row) if row is not None else None

    # -- second review --------------------------------------------------------------------------

    async def _second_review_count(self, tx: TeamTx, reviewer: str) -> int:
        return await tx.sampled_approval_count(SAMPLED_DECISIONS, reviewer, sample_bound(self._ctx.config))

    async def second_review_queue(self, reviewer: str, limit: int = 50, offset: int = 0) -> list[BlindReview]:
        """Approvals in the sample that `reviewer` did not make and nobody has second-reviewed,
        oldest decision first, blind (no messages: `blind_review` fetches one with them)."""
        async with self._store.reading() as tx:
            rows = await tx.sampled_approval_rows(
                SAMPLED_DECISIONS, reviewer, sample_bound(self._ctx.config), limit, offset
            )
        return [
            BlindReview(
                candidate_id=r[0],
                user_id=r[1],
                knowledge_id=r[2],
                statement=r[3],
                kind=r[4],
                confidence=r[5],
                evidence=r[6],
                valid_at=from_us(r[7]),
                invalid_at=from_us(r[8]),
            )
            for r in rows
        ]

    async def second_review_count(self, reviewer: str) -> int:
        async with self._store.reading() as tx:
            return await self._second_review_count(tx, reviewer)

    async def blind_spots(self, reviewer: str, user_id: str | None = None) -> BlindSpots:
        """What `reviewer` may not see yet (engine/blind.py): the approvals waiting for their blind
        second review, of one user or all. `Memory.history`, `knowledge` and `versions` apply it
        with `viewer=`; a caller with rows of its own redacts them with `.events()` / `.facts()`."""
        async with self._store.reading() as tx:
            return await blind_spots(tx, self._ctx.config, reviewer, user_id)

    async def blind_review(self, candidate_id: int, reviewer: str) -> BlindReview:
        """One sampled approval with its source messages, for a reviewer who did not make it."""
        async with self._store.reading() as tx:
            cand = await tx.get_candidate(candidate_id)
            fact = await self._check_reviewable(tx, cand, reviewer)
            ctx = await tx.candidate_context(cand)
        return BlindReview(
            candidate_id=cand.id,
            user_id=cand.user_id,
            knowledge_id=fact.id,
            statement=fact.statement,
            kind=cand.kind,
            confidence=cand.confidence,
            evidence=cand.evidence,
            valid_at=fact.valid_at,
            invalid_at=fact.invalid_at,
            messages=list(ctx.messages),
        )

    async def _check_reviewable(self, tx: TeamTx, cand: Candidate, reviewer: str) -> Any:
        if cand.status != "approved" or cand.decision not in SAMPLED_DECISIONS or cand.knowledge_id is None:
            raise UserInputError(f"candidate {cand.id} is not an approval that created a fact")
        # its secret draw, stored when it was approved (a person's or a policy's), or a later one
        in_sample = await tx.policy_sampled(cand.id, cand.decided_by or "", sample_bound(self._ctx.config))
        if not in_sample:
            raise UserInputError(f"candidate {cand.id} is not in the second-review sample")
        if cand.decided_by == reviewer:
            raise UserInputError(f"{reviewer} approved candidate {cand.id}: another reviewer must second-review it")
        done = await tx.second_reviewer_of(cand.id, cand.knowledge_id)
        if done is not None:
            raise AlreadyDecidedError(cand.id, "second-reviewed", done)
        return await tx.get_knowledge(cand.user_id, cand.knowledge_id)

    async def second_review(
        self,
        candidate_id: int,
        reviewer: str,
        *,
        approve: bool,
        reason: str | None = None,
        note: str | None = None,
    ) -> SecondReview:
        """Record the second reviewer's verdict. Rejecting overturns the approval: the fact is
        retracted (tombstoned, like a rejection) with the reason, in this same transaction."""
        why = _optional_text(reason, self._ctx.config, "the reason")
        text = _optional_text(note, self._ctx.config, "the note")
        if not approve and why is None:
            raise UserInputError("overturning an approval needs a reason")
        now_us: int = to_us(self._ctx.now())
        async with self._store.transaction() as tx:
            cand = await tx.get_candidate(candidate_id)
            fact = await self._check_reviewable(tx, cand, reviewer)
            verdict = "agree" if approve else ("overturn" if fact.status == "active" else "disagree")
            record = _second_review(
                await tx.insert_second_review(
                    (
                        cand.id,
                        fact.id,
                        cand.user_id,
                        cand.decided_by,
                        cand.decision,
                        reviewer,
                        verdict,
                        now_us,
                        why,
                        text,
                    ),
                )
            )
            # On the fact's own history: the fact was checked (and undoing the first approval is
            # refused from now on, since a later row names the fact).
            await tx.audit(
                at=now_us,
                actor=reviewer,
                action="second_review",
                user_id=cand.user_id,
                entity="knowledge",
                entity_id=fact.id,
                after=asdict(record),
                reason=why,
            )
            if verdict == "overturn":
                await retract_in(
                    tx,
                    fact,
                    reviewer,
                    f"{OVERTURN_REASON}{why}",
                    True,
                    now_us,
                    candidate_id=cand.id,
                )
            if not approve:
                await consider(tx, cand, now_us)  # a sensitive proposal overturned: watch its agent?
            return record

    async def undo_overturn(self, candidate_id: int, actor: str, *, reason: str) -> SecondReview:
        """Undo a second reviewer's overturn (they or a lead found it was right after all): the
        fact is back in force (through the gate: I1, I2), the tombstone the overturn wrote is
        removed, and the verdict is withdrawn, so the approval waits for a second review again (two
        people must still agree on it). Audited (`undo_second_review`, `undo_retract`,
        `undo_create`); refused, with nothing changed, when the fact was changed since."""
        why = _optional_text(reason, self._ctx.config, "the reason")
        if why is None:
            raise UserInputError("undoing an overturn needs a reason")
        now_us: int = to_us(self._ctx.now())
        async with self._store.transaction() as tx:
            cand = await tx.get_candidate(candidate_id)
            if cand.knowledge_id is None:
                raise UserInputError(f"candidate {cand.id} made no fact: there is no overturn to undo")
            found = [
                r
                for r in map(_second_review, await tx.second_review_rows(cand.user_id))
                if r.candidate_id == cand.id and r.knowledge_id == cand.knowledge_id
            ]
            if not found or found[-1].verdict != "overturn":
                raise UserInputError(f"candidate {cand.id}'s approval was not overturned on second review")
            record = found[-1]
            fact = await tx.get_knowledge(cand.user_id, cand.knowledge_id)
            if fact.status != "retracted" or not (fact.end_reason or "").startswith(OVERTURN_REASON):
                raise UndoRefusedError(
                    f"fact {fact.id} is {fact.status} ({fact.end_reason}) since the overturn: undo never rewrites"
                    " later history"
                )
            stone = await tx.tombstone_for(candidate_id=cand.id)
            if stone is not None and stone.lifted_at is None:
                await tx.delete_tombstone(stone.id)
                await tx.audit(
                    at=now_us,
                    actor=actor,
                    action="undo_create",
                    user_id=cand.user_id,
                    entity="tombstone",
                    entity_id=stone.id,
                    before=stone,
                    reason=why,
                )
            (await Admission.read(tx, cand.user_id)).check(fact.statement, excluding={fact.id})
            await tx.reactivate_knowledge(fact.id)
            back = await tx.get_knowledge(cand.user_id, fact.id)
            await tx.audit(
                at=now_us,
                actor=actor,
                action="undo_retract",
                user_id=cand.user_id,
                entity="knowledge",
                entity_id=fact.id,
                before=fact,
                after=back,
                reason=why,
            )
            await tx.delete_second_review(record.id)
            await tx.audit(
                at=now_us,
                actor=actor,
                action="undo_second_review",
                user_id=cand.user_id,
                entity="knowledge",
                entity_id=fact.id,
                before=asdict(record),
                reason=why,
            )
            await point_pending_at(tx, back, now_us, deciding=None)  # I5 for a fact back in force
            return record

    async def second_reviews(self, *, user_id: str | None = None) -> list[SecondReview]:
        async with self._store.reading() as tx:
            rows = await tx.second_review_rows(user_id)
        return [_second_review(r) for r in rows]

    # -- assignment -----------------------------------------------------------------------------

    async def take_user(self, user_id: str, reviewer: str, *, force: bool = False) -> Assignment:
        """Assign every item of `user_id` (present and future) to `reviewer`. Taking a user someone
        else holds needs `force=True` (a lead reassigning work); both are audited."""
        if not user_id or not user_id.strip():
            raise UserInputError("a user_id is required")
        now_us: int = to_us(self._ctx.now())
        async with self._store.transaction() as tx:
            if await tx.user_candidate_count(user_id) == 0:
                raise NotFoundError(f"user {user_id!r} has no candidates to take")
            before = await _get_assignment(tx, user_id)
            if before is not None and before.reviewer == reviewer:
                return before
            if before is not None and not force:
                raise UserInputError(
                    f"user {user_id}'s items are taken by {before.reviewer}; take them over explicitly"
                )
            if before is not None:
                await tx.delete_assignment(before.id)
            assignment_id = await tx.insert_assignment(user_id, reviewer, now_us, reviewer)
            after = await _get_assignment(tx, user_id)
            await tx.audit(
                at=now_us,
                actor=reviewer,
                action="assign",
                user_id=user_id,
                entity="assignment",
                entity_id=assignment_id,
                before=before,
                after=after,
            )
            return after  # type: ignore[return-value]

    async def release_user(self, user_id: str, reviewer: str) -> Assignment:
        """Give a user's items back to the whole team (only the assignee)."""
        now_us: int = to_us(self._ctx.now())
        async with self._store.transaction() as tx:
            before = await _get_assignment(tx, user_id)
            if before is None:
                raise NotFoundError(f"user {user_id!r} is not assigned to anyone")
            if before.reviewer != reviewer:
                raise UserInputError(f"user {user_id}'s items are taken by {before.reviewer}, not {reviewer}")
            await tx.delete_assignment(before.id)
            await tx.audit(
                at=now_us,
                actor=reviewer,
                action="unassign",
                user_id=user_id,
                entity="assignment",
                entity_id=before.id,
                before=before,
            )
            return before

    async def assignments(self, reviewer: str | None = None) -> list[Assignment]:
        async with self._store.reading() as tx:
            rows = await tx.assignment_rows(reviewer)
        return [_assignment(r) for r in rows]


async def _get_assignment(tx: TeamTx, user_id: str) -> Assignment | None:
    row = await tx.assignment_row(user_id)
    return _assignment(row) if row is not None else None


__all__ = [
    "Assignment",
    "BlindReview",
    "Comparison",
    "DailyFigures",
    "Flag",
    "Progress",
    "ReviewerFigures",
    "SecondReview",
    "TeamFigures",
    "TeamService",
    "check_may_decide",
    "sampled",
]

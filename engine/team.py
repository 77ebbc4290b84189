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
- **Second review**: an approval is in the sample when `sampled(candidate_id, rate)`: a
  multiplicative hash of the id, so the sample is the same on every run and machine, needs no
  hook in the approval path and can be listed in SQL. The sample is re-queued to every reviewer but
  the one who approved it, BLIND: `blind_review` returns the fact, its evidence and its source
  messages, never who approved it, how (plain, edited, superseding) or why. A second reviewer who
  rejects it overturns it: the fact is retracted (with a tombstone, as a rejection would) in the
  same transaction that records the verdict; if the fact is no longer active the disagreement is
  recorded and nothing else changes. Changing the rate changes which approvals are in the sample.
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

from .context import EngineContext
from .errors import (
    AlreadyDecidedError,
    AssignedError,
    ClaimedError,
    NotFoundError,
    SecondOpinionError,
    UserInputError,
)
from .knowledge import retract_in
from .limits import check_reason
from .models import Candidate, Message
from .storage import SqlTx
from .storage.sql.tx import queue_filters, returned_id
from .timeutil import from_us, to_us

if TYPE_CHECKING:

    from .config import MemoryConfig

DECISIONS: tuple[str, ...] = (
    "approve", "edit_approve", "confirm_supersession", "keep_both", "approve_retraction", "reject",
)
"""Audit actions on a candidate that are a reviewer's decision."""
SAMPLED_DECISIONS: tuple[str, ...] = ("approve", "edit_approve", "confirm_supersession", "keep_both")
"""Approvals that created a fact and can therefore be second-reviewed (and overturned)."""
LEANS = ("approve", "reject")
_HASH_MULTIPLIER = 2_654_435_761  # Knuth's multiplicative hash: consecutive ids spread over 2**32
_HASH_SPACE = 4_294_967_296
_MIN_GAP_SECONDS = 1.0
_DAY_US = 86_400_000_000


def sample_point(candidate_id: int) -> float:
    """Where the id falls in [0, 1): the same number in Python and in `_SAMPLE_SQL`."""
    return ((candidate_id * _HASH_MULTIPLIER) % _HASH_SPACE) / _HASH_SPACE


def sampled(candidate_id: int, rate: float) -> bool:
    """True when an approval of this candidate is in the second-review sample at `rate`."""
    return sample_point(candidate_id) < rate


_SAMPLE_SQL = f"((c.id * {_HASH_MULTIPLIER}) % {_HASH_SPACE}) < ?"


def check_may_decide(cand: Candidate, reviewer: str) -> None:
    """Called by ReviewService._check_open before every claim and decision (inside its transaction,
    on the row it just re-read): the flagger of a second opinion and anyone but the assignee of
    the candidate's user are refused. A flag outranks the assignment: when the assignee asks for a
    second opinion, someone else must be able to give it."""
    if cand.flagged_by is not None:
        if cand.flagged_by == reviewer:
            raise SecondOpinionError(cand.id, cand.flagged_by)
        return
    if cand.assigned_to is not None and cand.assigned_to != reviewer:
        raise AssignedError(cand.id, cand.user_id, cand.assigned_to)


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
    confidence: float
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
    return Flag(id=r[0], candidate_id=r[1], user_id=r[2], flagged_by=r[3], flagged_at=from_us(r[4]),  # type: ignore[arg-type]
                note=r[5], lean=r[6], withdrawn_at=from_us(r[7]), withdrawn_by=r[8])


_FLAG_COLS = "id, candidate_id, user_id, flagged_by, flagged_at, note, lean, withdrawn_at, withdrawn_by"
_SR_COLS = ("id, candidate_id, knowledge_id, user_id, first_reviewer, first_decision, reviewer, verdict,"
            " decided_at, reason, note")


def _second_review(r: Any) -> SecondReview:
    return SecondReview(id=r[0], candidate_id=r[1], knowledge_id=r[2], user_id=r[3], first_reviewer=r[4],
                        first_decision=r[5], reviewer=r[6], verdict=r[7], decided_at=from_us(r[8]),  # type: ignore[arg-type]
                        reason=r[9], note=r[10])


def _assignment(r: Any) -> Assignment:
    return Assignment(id=r[0], user_id=r[1], reviewer=r[2], assigned_at=from_us(r[3]), assigned_by=r[4])  # type: ignore[arg-type]


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

    # -- progress and figures -------------------------------------------------------------------

    async def progress(self, reviewer: str, *, since: datetime | None = None, **filters: Any) -> Progress:
        """Progress of the queue filter `filters` (the keyword arguments of ReviewService.count)."""
        start = since or _start_of_day(self._ctx.now())
        start_us: int = to_us(start, "since")  # type: ignore[assignment]
        keys = ("user_id", "kind", "min_confidence", "max_confidence", "unsupported", "search", "assigned_to")
        unknown = set(filters) - set(keys)
        if unknown:
            raise UserInputError(f"unknown queue filter(s): {', '.join(sorted(unknown))}")
        values = [filters.get(k) for k in keys]
        async with self._ctx.store.reading() as tx:
            remaining = await tx.pending_count(**filters)
            where, args = queue_filters(
                *values, status_clause=f"c.status != 'pending' AND c.decided_at >= {start_us}"
            )
            done = await _count(tx, f"SELECT count(*) FROM candidates c WHERE {where}", args)
            pending_where, pending_args = queue_filters(*values)
            flagged_by_me = await _count(
                tx, f"SELECT count(*) FROM candidates c JOIN flags f ON f.candidate_id = c.id"
                f" AND f.withdrawn_at IS NULL WHERE {pending_where} AND f.flagged_by = ?", [*pending_args, reviewer],
            )
            others = await _count(
                tx, f"SELECT count(*) FROM candidates c JOIN flags f ON f.candidate_id = c.id"
                f" AND f.withdrawn_at IS NULL WHERE {pending_where} AND f.flagged_by != ?", [*pending_args, reviewer],
            )
            times = [int(r[0]) for r in await (await tx.conn.execute(
                f"SELECT at FROM audit_log WHERE entity = 'candidate' AND actor = ? AND at >= ?"
                f" AND action IN ({_in(DECISIONS)}) ORDER BY at, id", (reviewer, start_us, *DECISIONS),
            )).fetchall()]
            waiting = await self._second_review_count(tx, reviewer)
        return Progress(
            reviewer=reviewer, since=start, done=done, remaining=remaining, reviewer_decisions=len(times),
            seconds_per_decision=_median_gap(times, self._ctx.config.decision_break_seconds),
            flagged_by_me=flagged_by_me, second_opinions=others, second_reviews=waiting,
        )

    async def figures(
        self, *, since: datetime | None = None, until: datetime | None = None, user_id: str | None = None,
    ) -> TeamFigures:
        """Per-reviewer figures, decisions per reviewer per UTC day, and every two-reviewer comparison."""
        lo: int = to_us(since, "since") if since is not None else -(2**62)  # type: ignore[assignment]
        hi: int = to_us(until, "until") if until is not None else 2**62  # type: ignore[assignment]
        scope, scope_args = ("AND user_id = ?", [user_id]) if user_id is not None else ("", [])
        by: dict[str, ReviewerFigures] = {}

        def fig(name: str) -> ReviewerFigures:
            return by.setdefault(name, ReviewerFigures(name))

        daily: dict[tuple[int, str], list[int]] = {}
        times: dict[str, list[int]] = {}
        async with self._ctx.store.reading() as tx:
            for actor, action, at in await (await tx.conn.execute(
                f"SELECT actor, action, at FROM audit_log WHERE entity = 'candidate' AND at >= ? AND at < ? {scope}"
                f" AND action IN ({_in(DECISIONS)}, 'undo', 'flag') ORDER BY at, id",
                (lo, hi, *scope_args, *DECISIONS),
            )).fetchall():
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
            comparisons = await self._comparisons(tx, lo, hi, scope, scope_args)
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
                DailyFigures(day=from_us(d * _DAY_US).date(), reviewer=name, decisions=n, approved=a, rejected=r)  # type: ignore[union-attr]
                for (d, name), (n, a, r) in sorted(daily.items(), key=lambda kv: (-kv[0][0], kv[0][1]))
            ],
            comparisons=comparisons,
        )

    async def _comparisons(
        self, tx: SqlTx, lo: int, hi: int, scope: str, scope_args: list[Any],
    ) -> list[Comparison]:
        out: list[Comparison] = []
        for cid, uid, first, second, verdict, at in await (await tx.conn.execute(
            "SELECT candidate_id, user_id, first_reviewer, reviewer, verdict, decided_at FROM second_reviews"
            f" WHERE decided_at >= ? AND decided_at < ? {scope} ORDER BY decided_at, id", (lo, hi, *scope_args),
        )).fetchall():
            out.append(Comparison("second_review", cid, uid, first, "approve", second,
                                  "approve" if verdict == "agree" else "reject", from_us(at)))  # type: ignore[arg-type]
        c_scope = scope.replace("user_id", "c.user_id")
        for cid, uid, flagger, lean, decider, status, at in await (await tx.conn.execute(
            "SELECT c.id, c.user_id, f.flagged_by, f.lean, c.decided_by, c.status, c.decided_at FROM flags f"
            " JOIN candidates c ON c.id = f.candidate_id WHERE f.withdrawn_at IS NULL AND f.lean IS NOT NULL"
            f" AND c.status != 'pending' AND c.decided_at >= ? AND c.decided_at < ? {c_scope}"
            " ORDER BY c.decided_at, c.id", (lo, hi, *scope_args),
        )).fetchall():
            out.append(Comparison("second_opinion", cid, uid, flagger, lean, decider,
                                  "approve" if status == "approved" else "reject", from_us(at)))  # type: ignore[arg-type]
        out.sort(key=lambda c: (c.at, c.candidate_id))
        return out

    # -- second opinions ------------------------------------------------------------------------

    async def flag(
        self, candidate_id: int, reviewer: str, note: str | None = None, *, lean: str | None = None,
        user_id: str | None = None,
    ) -> Flag:
        """Ask for a second opinion on a pending candidate: from now on another reviewer decides it.
        The flagger's own lease on it is released, so the next reviewer can take it at once."""
        text = _optional_text(note, self._ctx.config, "the note")
        if lean is not None and lean not in LEANS:
            raise UserInputError(f"lean must be one of {', '.join(LEANS)} (or none), not {lean!r}")
        now = self._ctx.now()
        now_us: int = to_us(now)  # type: ignore[assignment]
        async with self._ctx.store.transaction() as tx:
            cand = await tx.get_candidate(candidate_id, user_id)
            if cand.status != "pending":
                raise AlreadyDecidedError(cand.id, cand.status, cand.decided_by)
            if cand.flagged_by is not None:
                raise UserInputError(
                    f"candidate {cand.id} is already flagged for a second opinion by {cand.flagged_by}"
                )
            if cand.claimed_by not in (None, reviewer) and cand.claimed_until is not None and cand.claimed_until > now:
                raise ClaimedError(cand.id, cand.claimed_by)  # type: ignore[arg-type]
            check_may_decide(cand, reviewer)
            cur = await tx.conn.execute(
                "INSERT INTO flags(candidate_id, user_id, flagged_by, note, lean, flagged_at)"
                " VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
                (cand.id, cand.user_id, reviewer, text, lean, now_us),
            )
            await tx.release_candidate(cand.id, reviewer)
            flag = await _get_flag(tx, await returned_id(cur))
            await tx.audit(at=now_us, actor=reviewer, action="flag", user_id=cand.user_id,
                              entity="candidate", entity_id=cand.id, after=flag, reason=text)
            return flag

    async def withdraw_flag(self, candidate_id: int, reviewer: str, *, user_id: str | None = None) -> Flag:
        """The flagger takes the item back (only the flagger: a flag is their request)."""
        now_us: int = to_us(self._ctx.now())  # type: ignore[assignment]
        async with self._ctx.store.transaction() as tx:
            cand = await tx.get_candidate(candidate_id, user_id)
            row = await (await tx.conn.execute(
                f"SELECT {_FLAG_COLS} FROM flags WHERE candidate_id = ? AND withdrawn_at IS NULL", (cand.id,)
            )).fetchone()
            if row is None:
                raise NotFoundError(f"candidate {cand.id} has no second-opinion flag")
            before = _flag(row)
            if before.flagged_by != reviewer:
                raise UserInputError(
                    f"only {before.flagged_by}, who flagged candidate {cand.id}, can withdraw the flag"
                )
            if cand.status != "pending":
                raise AlreadyDecidedError(cand.id, cand.status, cand.decided_by)
            await tx.conn.execute("UPDATE flags SET withdrawn_at = ?, withdrawn_by = ? WHERE id = ?",
                               (now_us, reviewer, before.id))
            after = await _get_flag(tx, before.id)
            await tx.audit(at=now_us, actor=reviewer, action="withdraw_flag", user_id=cand.user_id,
                              entity="candidate", entity_id=cand.id, before=before, after=after)
            return after

    async def flags(self, *, pending_only: bool = True, user_id: str | None = None) -> list[Flag]:
        """Live flags (on pending candidates by default), oldest first."""
        where = ["f.withdrawn_at IS NULL"]
        args: list[Any] = []
        if pending_only:
            where.append("c.status = 'pending'")
        if user_id is not None:
            where.append("f.user_id = ?")
            args.append(user_id)
        cols = ", ".join(f"f.{c.strip()}" for c in _FLAG_COLS.split(","))
        async with self._ctx.store.reading() as tx:
            rows = await (await tx.conn.execute(
                f"SELECT {cols} FROM flags f JOIN candidates c ON c.id = f.candidate_id WHERE {' AND '.join(where)}"
                " ORDER BY f.flagged_at, f.id", args,
            )).fetchall()
        return [_flag(r) for r in rows]

    async def flag_of(self, candidate_id: int) -> Flag | None:
        """The live flag of a candidate, with its note (for the detail pane)."""
        async with self._ctx.store.reading() as tx:
            row = await (await tx.conn.execute(
                f"SELECT {_FLAG_COLS} FROM flags WHERE candidate_id = ? AND withdrawn_at IS NULL", (candidate_id,)
            )).fetchone()
        return _flag(row) if row is not None else None

    # -- second review --------------------------------------------------------------------------

    def _sample_where(self) -> tuple[str, list[Any]]:
        threshold = int(self._ctx.config.second_review_rate * _HASH_SPACE)
        return (
            f"c.status = 'approved' AND c.decision IN ({_in(SAMPLED_DECISIONS)}) AND c.decided_by != ?"
            f" AND {_SAMPLE_SQL} AND k.status = 'active' AND NOT EXISTS (SELECT 1 FROM second_reviews s"
            " WHERE s.candidate_id = c.id AND s.knowledge_id = c.knowledge_id)",
            [*SAMPLED_DECISIONS, threshold],
        )

    async def _second_review_count(self, tx: SqlTx, reviewer: str) -> int:
        where, args = self._sample_where()
        args.insert(len(SAMPLED_DECISIONS), reviewer)
        return await _count(
            tx, f"SELECT count(*) FROM candidates c JOIN knowledge k ON k.id = c.knowledge_id WHERE {where}", args
        )

    async def second_review_queue(self, reviewer: str, limit: int = 50, offset: int = 0) -> list[BlindReview]:
        """Approvals in the sample that `reviewer` did not make and nobody has second-reviewed,
        oldest decision first, blind (no messages: `blind_review` fetches one with them)."""
        where, args = self._sample_where()
        args.insert(len(SAMPLED_DECISIONS), reviewer)
        async with self._ctx.store.reading() as tx:
            rows = await (await tx.conn.execute(
                "SELECT c.id, c.user_id, k.id, k.statement, c.kind, c.confidence, c.evidence, k.valid_at,"
                " k.invalid_at FROM candidates c JOIN knowledge k ON k.id = c.knowledge_id"
                f" WHERE {where} ORDER BY c.decided_at, c.id LIMIT ? OFFSET ?", (*args, int(limit), int(offset)),
            )).fetchall()
        return [BlindReview(candidate_id=r[0], user_id=r[1], knowledge_id=r[2], statement=r[3], kind=r[4],
                            confidence=r[5], evidence=r[6], valid_at=from_us(r[7]), invalid_at=from_us(r[8]))
                for r in rows]

    async def second_review_count(self, reviewer: str) -> int:
        async with self._ctx.store.reading() as tx:
            return await self._second_review_count(tx, reviewer)

    async def blind_review(self, candidate_id: int, reviewer: str) -> BlindReview:
        """One sampled approval with its source messages, for a reviewer who did not make it."""
        async with self._ctx.store.reading() as tx:
            cand = await tx.get_candidate(candidate_id)
            fact = await self._check_reviewable(tx, cand, reviewer)
            ctx = await tx.candidate_context(cand)
        return BlindReview(candidate_id=cand.id, user_id=cand.user_id, knowledge_id=fact.id,
                           statement=fact.statement, kind=cand.kind, confidence=cand.confidence,
                           evidence=cand.evidence, valid_at=fact.valid_at, invalid_at=fact.invalid_at,
                           messages=list(ctx.messages))

    async def _check_reviewable(self, tx: SqlTx, cand: Candidate, reviewer: str) -> Any:
        if cand.status != "approved" or cand.decision not in SAMPLED_DECISIONS or cand.knowledge_id is None:
            raise UserInputError(f"candidate {cand.id} is not an approval that created a fact")
        if not sampled(cand.id, self._ctx.config.second_review_rate):
            raise UserInputError(f"candidate {cand.id} is not in the second-review sample")
        if cand.decided_by == reviewer:
            raise UserInputError(f"{reviewer} approved candidate {cand.id}: another reviewer must second-review it")
        done = await (await tx.conn.execute(
            "SELECT reviewer FROM second_reviews WHERE candidate_id = ? AND knowledge_id = ?",
            (cand.id, cand.knowledge_id),
        )).fetchone()
        if done is not None:
            raise AlreadyDecidedError(cand.id, "second-reviewed", done[0])
        return await tx.get_knowledge(cand.user_id, cand.knowledge_id)

    async def second_review(
        self, candidate_id: int, reviewer: str, *, approve: bool, reason: str | None = None,
        note: str | None = None,
    ) -> SecondReview:
        """Record the second reviewer's verdict. Rejecting overturns the approval: the fact is
        retracted (tombstoned, like a rejection) with the reason, in this same transaction."""
        why = _optional_text(reason, self._ctx.config, "the reason")
        text = _optional_text(note, self._ctx.config, "the note")
        if not approve and why is None:
            raise UserInputError("overturning an approval needs a reason")
        now_us: int = to_us(self._ctx.now())  # type: ignore[assignment]
        async with self._ctx.store.transaction() as tx:
            cand = await tx.get_candidate(candidate_id)
            fact = await self._check_reviewable(tx, cand, reviewer)
            verdict = "agree" if approve else ("overturn" if fact.status == "active" else "disagree")
            cur = await tx.conn.execute(
                f"INSERT INTO second_reviews({_SR_COLS.split(', ', 1)[1]})"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (cand.id, fact.id, cand.user_id, cand.decided_by, cand.decision, reviewer, verdict, now_us, why, text),
            )
            row = await (await tx.conn.execute(
                f"SELECT {_SR_COLS} FROM second_reviews WHERE id = ?", (await returned_id(cur),)
            )).fetchone()
            record = _second_review(row)
            # On the fact's own history: the fact was checked (and undoing the first approval is
            # refused from now on, since a later row names the fact).
            await tx.audit(at=now_us, actor=reviewer, action="second_review", user_id=cand.user_id,
                              entity="knowledge", entity_id=fact.id, after=asdict(record), reason=why)
            if verdict == "overturn":
                await retract_in(
                    tx, fact, reviewer, f"overturned on second review: {why}", True, now_us, candidate_id=cand.id,
                )
            return record

    async def second_reviews(self, *, user_id: str | None = None) -> list[SecondReview]:
        scope, args = ("WHERE user_id = ?", [user_id]) if user_id is not None else ("", [])
        async with self._ctx.store.reading() as tx:
            rows = await (await tx.conn.execute(
                f"SELECT {_SR_COLS} FROM second_reviews {scope} ORDER BY decided_at, id", args
            )).fetchall()
        return [_second_review(r) for r in rows]

    # -- assignment -----------------------------------------------------------------------------

    async def take_user(self, user_id: str, reviewer: str, *, force: bool = False) -> Assignment:
        """Assign every item of `user_id` (present and future) to `reviewer`. Taking a user someone
        else holds needs `force=True` (a lead reassigning work); both are audited."""
        if not user_id or not user_id.strip():
            raise UserInputError("a user_id is required")
        now_us: int = to_us(self._ctx.now())  # type: ignore[assignment]
        async with self._ctx.store.transaction() as tx:
            if await _count(tx, "SELECT count(*) FROM candidates WHERE user_id = ?", [user_id]) == 0:
                raise NotFoundError(f"user {user_id!r} has no candidates to take")
            before = await _get_assignment(tx, user_id)
            if before is not None and before.reviewer == reviewer:
                return before
            if before is not None and not force:
                raise UserInputError(
                    f"user {user_id}'s items are taken by {before.reviewer}; take them over explicitly"
                )
            if before is not None:
                await tx.conn.execute("DELETE FROM assignments WHERE id = ?", (before.id,))
            cur = await tx.conn.execute(
                "INSERT INTO assignments(user_id, reviewer, assigned_at, assigned_by) VALUES (?, ?, ?, ?) RETURNING id",
                (user_id, reviewer, now_us, reviewer),
            )
            assignment_id = await returned_id(cur)
            after = await _get_assignment(tx, user_id)
            await tx.audit(at=now_us, actor=reviewer, action="assign", user_id=user_id, entity="assignment",
                              entity_id=assignment_id, before=before, after=after)
            return after  # type: ignore[return-value]

    async def release_user(self, user_id: str, reviewer: str) -> Assignment:
        """Give a user's items back to the whole team (only the assignee)."""
        now_us: int = to_us(self._ctx.now())  # type: ignore[assignment]
        async with self._ctx.store.transaction() as tx:
            before = await _get_assignment(tx, user_id)
            if before is None:
                raise NotFoundError(f"user {user_id!r} is not assigned to anyone")
            if before.reviewer != reviewer:
                raise UserInputError(f"user {user_id}'s items are taken by {before.reviewer}, not {reviewer}")
            await tx.conn.execute("DELETE FROM assignments WHERE id = ?", (before.id,))
            await tx.audit(at=now_us, actor=reviewer, action="unassign", user_id=user_id,
                              entity="assignment", entity_id=before.id, before=before)
            return before

    async def assignments(self, reviewer: str | None = None) -> list[Assignment]:
        scope, args = ("WHERE reviewer = ?", [reviewer]) if reviewer is not None else ("", [])
        async with self._ctx.store.reading() as tx:
            rows = await (await tx.conn.execute(
                f"SELECT id, user_id, reviewer, assigned_at, assigned_by FROM assignments {scope} ORDER BY user_id",
                args,
            )).fetchall()
        return [_assignment(r) for r in rows]


def _in(values: tuple[str, ...]) -> str:
    return ", ".join("?" * len(values))


async def _count(tx: SqlTx, sql: str, args: list[Any]) -> int:
    row = await (await tx.conn.execute(sql, args)).fetchone()
    return int(row[0])  # type: ignore[index]


async def _get_flag(tx: SqlTx, flag_id: int) -> Flag:
    row = await (await tx.conn.execute(f"SELECT {_FLAG_COLS} FROM flags WHERE id = ?", (flag_id,))).fetchone()
    return _flag(row)


async def _get_assignment(tx: SqlTx, user_id: str) -> Assignment | None:
    row = await (await tx.conn.execute(
        "SELECT id, user_id, reviewer, assigned_at, assigned_by FROM assignments WHERE user_id = ?", (user_id,)
    )).fetchone()
    return _assignment(row) if row is not None else None


__all__ = [
    "Assignment", "BlindReview", "Comparison", "DailyFigures", "Flag", "Progress", "ReviewerFigures",
    "SecondReview", "TeamFigures", "TeamService", "check_may_decide", "sampled",
]

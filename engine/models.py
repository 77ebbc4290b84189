"""The engine's records. Dataclasses inside the engine; pydantic only where data crosses an edge
(an LLM answer, an ingest file).

Times are timezone-aware UTC datetimes. Valid time (`valid_at <= t < invalid_at`) says when a
statement was true in the world; belief time (`created_at <= t < expired_at`) says when the store
held it. Open ends are None.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import datetime
from enum import Enum
from typing import Any, Final, Literal

Role = Literal["user", "assistant"]
GapKind = Literal["new", "update", "contradiction"]
# `proposed` comes from an agent (MCP propose_memory); `retraction` is a request to retract the
# fact named by supersedes_id (MCP forget_memory): approving it retracts that fact.
CandidateKind = Literal["new", "update", "contradiction", "proposed", "retraction"]
CandidateStatus = Literal["pending", "approved", "rejected"]
# "pending" only on the records an extractor is shown for the user's pending candidates (see
# engine.extraction.base): a stored fact is never pending.
KnowledgeStatus = Literal["active", "superseded", "retracted", "pending"]
# The gates of the write path, in order, as `Discarded.gate` names them.
Gate = Literal["predicted", "below_confidence", "invalid", "tombstoned", "duplicate"]


def to_jsonable(obj: Any) -> Any:
    """Dataclass -> plain JSON types (datetimes as ISO strings); used by audit rows and exports."""
    if hasattr(obj, "__dataclass_fields__"):
        obj = asdict(obj)
    if isinstance(obj, dict):
        return {k: to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, datetime):
        return obj.isoformat()
    return obj


@dataclass(slots=True)
class Message:
    role: Role
    content: str
    at: datetime
    id: int | None = None
    user_id: str | None = None


@dataclass(slots=True)
class Episode:
    """A run of one user's messages without a long gap. title and narrative are retrieval queries
    only; extractors read `messages`, the ground truth."""

    id: int
    user_id: str
    title: str
    narrative: str
    messages: list[Message]
    start_at: datetime | None = None
    end_at: datetime | None = None
    status: str = "open"
    error: str | None = None


@dataclass(slots=True)
class GapItem:
    """One thing the prediction missed, as an extractor proposes it."""

    statement: str
    kind: GapKind = "new"
    supersedes: str | None = None  # a handle (knowledge id as text) from the `existing` list
    confidence: float = 1.0
    valid_at: datetime | None = None
    invalid_at: datetime | None = None
    evidence: str = ""
    # The model's own special-category label (engine.categories.CATEGORIES), when it gives one.
    category: str | None = None
    # The offline extractor's rule (its slot family) that made the item: its confidence is
    # calibrated on the reviewers' decisions about that rule's past candidates.
    rule: str | None = None
    # The claim slot the extractor itself named (engine.claims; an LLM extractor's optional `slot`),
    # already checked against engine.claims.known_slot: an unknown label is None, never trusted.
    # engine.claims.read_claim stays the authority; claim_for uses this only for free text.
    slot: str | None = None


@dataclass(slots=True)
class CoveredClaim:
    """A claim of the episode that the prediction already held: discarded, but kept on the run so
    that discard regret can be measured later."""

    statement: str
    predicted_by: str | None = None  # handle of the existing fact that predicted it


@dataclass(slots=True)
class Extraction:
    prediction: str
    items: list[GapItem]
    covered: list[CoveredClaim] = field(default_factory=list)


@dataclass(slots=True)
class Knowledge:
    id: int
    user_id: str
    statement: str
    status: KnowledgeStatus
    created_at: datetime
    created_by: str
    # None: no measured confidence (a fact approved from an agent's proposal).
    confidence: float | None = 1.0
    valid_at: datetime | None = None
    invalid_at: datetime | None = None
    expired_at: datetime | None = None
    end_reason: str | None = None
    superseded_by: int | None = None
    candidate_id: int | None = None
    episode_id: int | None = None
    # True when a confirmed supersession closed the valid time (invalid_at = the successor's start);
    # prior_invalid_at is the end it had before, which is what was believed until then.
    valid_closed: bool = False
    prior_invalid_at: datetime | None = None

    def interval_text(self) -> str:
        start = self.valid_at.date().isoformat() if self.valid_at else "always"
        end = self.invalid_at.date().isoformat() if self.invalid_at else "now"
        return f"{start} → {end}"

    def status_note(self) -> str:
        """Why a fact no longer holds, in words ("superseded by #15"); "" while it is active. Lists of
        facts a reviewer reads (the prediction pane) carry it, so an ended fact is never read as current."""
        if self.status == "active":
            return ""
        if self.status == "pending":  # a candidate shown beside facts (the prediction pane): not ended
            return "pending, not yet approved"
        by = f" by #{self.superseded_by}" if self.superseded_by is not None else ""
        if self.status == "retracted":
            return "retracted"
        if self.end_reason == "corrected":
            return f"corrected{by}"
        if self.end_reason == "contradicted":
            return f"contradicted{by}"
        return f"superseded{by}"

    @property
    def label(self) -> str:
        """One word for what the fact is now: active, corrected (it was never true), retracted,
        superseded (the world changed), contradicted, or pending (a candidate shown beside facts).
        The status alone cannot say it: a correction is stored as status `superseded` with end
        reason `corrected`."""
        if self.status in ("active", "pending", "retracted"):
            return self.status
        return self.end_reason if self.end_reason in ("corrected", "contradicted") else "superseded"

    def described(self) -> str:
        """The statement with its status note when it has ended: "User lives in Lisbon (superseded by #15)"."""
        note = self.status_note()
        return f"{self.statement} ({note})" if note else self.statement

    def as_known_at(self, when: datetime) -> Knowledge:
        """The fact as the store held it at `when`: a fact believed then reads `active`, with the
        valid interval it had before a later supersession closed it. (A fact not yet created at
        `when` is returned unchanged; callers filter on belief time first.)"""
        if self.expired_at is None or self.expired_at <= when:
            return self
        return replace(
            self,
            status="active",
            expired_at=None,
            end_reason=None,
            superseded_by=None,
            invalid_at=self.prior_invalid_at if self.valid_closed else self.invalid_at,
            valid_closed=False,
            prior_invalid_at=None,
        )


@dataclass(slots=True)
class Candidate:
    id: int
    user_id: str
    statement: str
    kind: CandidateKind
    status: CandidateStatus
    # None: not measured. Agent proposals carry none (a made-up 1.0 sorted them first).
    confidence: float | None
    created_at: datetime
    evidence: str = ""
    supersedes_id: int | None = None
    valid_at: datetime | None = None
    invalid_at: datetime | None = None
    episode_id: int | None = None
    run_id: int | None = None
    unsupported: bool = False
    claimed_by: str | None = None
    claimed_until: datetime | None = None
    decided_by: str | None = None
    decided_at: datetime | None = None
    decision: str | None = None
    reason: str | None = None
    knowledge_id: int | None = None
    extractor: str | None = None
    created_by: str | None = None
    # A chain: this candidate would replace another candidate that is itself still pending.
    supersedes_candidate_id: int | None = None
    # Team state (engine/team.py), read with the row: the reviewer who flagged it for a second
    # opinion (they may not decide it) and the reviewer its user is assigned to ("my queue").
    flagged_by: str | None = None
    assigned_to: str | None = None
    # Special category (GDPR art. 9, criminal record): one of engine.categories.CATEGORIES or None.
    # Set at insert from the model's label or the offline rules; no policy may approve one.
    category: str | None = None
    # What the intake noticed and a person must judge (engine.gate): a look-alike of a fact or
    # candidate, a value near a tombstone, a fact it may replace. Empty: nothing marked.
    marks: tuple[Mark, ...] = ()


MarkKind = Literal["looks_like", "near_tombstone", "may_replace"]

_REFERENCE = (
    r"(?:(?:looks like|may replace|says the same as|the judge reads it as the same as) fact"
    r"|near a rejected value, tombstone) #-?[0-9]{1,11}(?: \(the same claim\))?"
)
MARK_NOTE = re.compile(rf"{_REFERENCE}(?:; {_REFERENCE})*")
"""What an audit note of marks is (`Mark.reference`s joined by "; ", engine.gate.marks_note):
fixed words and ids. The credential guard passes a text that is all of it without reading it: no
detector finds anything in fixed words and numbers of at most 11 digits (a card has 13 or more;
every other number the detectors know needs letters, separators or a keyword), which
tests/test_credential_triggers.py checks on notes drawn from this pattern."""


@dataclass(frozen=True, slots=True)
class Mark:
    """Something a machine noticed about a candidate and must not decide itself: it looks like
    fact #N (one edit apart), it is near a rejected value (tombstone #N), it may replace fact #N.
    Shown beside the item in every front end; no review policy approves a marked candidate."""

    kind: MarkKind
    target_id: int
    note: str

    @property
    def reference(self) -> str:
        """What the mark names, without the other statement ("looks like fact #12"): the audit
        row's note, which names the other fact or tombstone by id as every audit row names what it
        touches. Every note starts with it (engine.gate's `looks_like`, `near_tombstone`,
        `may_replace`)."""
        return self.note.partition(": ")[0]


@dataclass(slots=True)
class Tombstone:
    id: int
    user_id: str
    key: str
    statement: str
    reason: str
    created_by: str
    created_at: datetime
    candidate_id: int | None = None
    knowledge_id: int | None = None
    lifted_at: datetime | None = None
    lifted_by: str | None = None
    lift_reason: str | None = None


@dataclass(slots=True)
class Discarded:
    """A statement a gate of the write path dropped, kept so a curator can see it and queue it
    anyway. `matched_*` name what the gate matched: the fact or pending candidate that predicted or
    duplicates it, or the tombstone that blocks it (None for below_confidence and invalid)."""

    id: int
    user_id: str
    statement: str
    gate: Gate
    created_at: datetime
    episode_id: int | None = None
    run_id: int | None = None
    evidence: str = ""
    kind: str = "new"
    confidence: float | None = None
    valid_at: datetime | None = None
    invalid_at: datetime | None = None
    matched_entity: Literal["knowledge", "candidate", "tombstone"] | None = None
    matched_id: int | None = None
    matched_statement: str | None = None
    queued_candidate_id: int | None = None
    queued_by: str | None = None
    queued_at: datetime | None = None


@dataclass(slots=True)
class AuditEvent:
    id: int
    at: datetime
    actor: str
    action: str
    user_id: str
    entity: str
    entity_id: int | None
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    reason: str | None
    note: str | None = None  # the reviewer's note on a decision (None when none was given)


@dataclass(slots=True)
class BulkResult:
    """What `ReviewService.bulk_approve` did with exactly the ids it was given: the facts it
    created, and each id it left pending (or found decided) with the reason, in input order."""

    approved: list[Knowledge] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)


@dataclass(slots=True)
class AddedFact(Knowledge):
    """A fact as `Memory.add_knowledge` returns it: the fact, and what the gate noticed and let
    through (`marks`: it looks like fact #N, it is near tombstone #N, it may replace fact #N). The
    marks are not a column of the fact; the `inject` audit row's note keeps them."""

    marks: tuple[Mark, ...] = ()

    @classmethod
    def of(cls, fact: Knowledge, marks: tuple[Mark, ...] = ()) -> AddedFact:
        return cls(**{f.name: getattr(fact, f.name) for f in fields(Knowledge)}, marks=marks)


class AddedFacts(list[Knowledge]):
    """What `Memory.add_knowledge_many` made active, in input order (a list of the facts), and
    `skipped`: (index in the input, why) for each statement the gate refused (a live tombstone of
    the user blocks its value, or an active fact, possibly one added earlier in the same call,
    already holds it: the same text or the same claim, and the message names that fact's id). The
    others are added all the same: an import is not undone by one repeat. `marked`: (index in the
    input, mark) for each added statement the gate noticed something about (a look-alike, a value
    near a tombstone, a fact of the same one-valued slot it may replace): an import states what is
    true, so these are reported, not refused."""

    def __init__(
        self,
        added: list[Knowledge] | None = None,
        skipped: list[tuple[int, str]] | None = None,
        marked: list[tuple[int, Mark]] | None = None,
    ) -> None:
        super().__init__(added or [])
        self.skipped: list[tuple[int, str]] = skipped or []
        self.marked: list[tuple[int, Mark]] = marked or []


@dataclass(frozen=True, slots=True)
class QueueMark:
    """`ReviewService.mark`: the pending count under a filter and the newest pending id (0 when
    none). A look that finds a larger count or a newer id has new work to show."""

    count: int
    newest_id: int


@dataclass(slots=True)
class ProposalOutcome:
    """What `Memory.propose` / `Memory.request_forget` did: queued a request (candidate_id), or
    found the same thing already there (duplicate_of: ('knowledge' | 'candidate', id))."""

    candidate_id: int | None = None
    duplicate_of: tuple[str, int] | None = None
    # Kinds of credential found in the statement (never the values): such a proposal is not
    # queued; only an audit row naming the kinds is written (engine/credentials.py).
    credentials_removed: dict[str, int] | None = None
    # A review policy approved it as it was queued: the policy's actor and the fact it made
    # (None: it waits for a person). Read back from the store, so what MCP says is what happened.
    accepted_by: str | None = None
    knowledge_id: int | None = None


@dataclass(slots=True)
class RetrievedItem:
    knowledge: Knowledge
    score: float
    vector_rank: int | None = None
    text_rank: int | None = None


@dataclass(slots=True)
class RetrievalResult:
    query: str
    user_id: str
    items: list[RetrievedItem]
    at_time: datetime | None = None
    known_at: datetime | None = None
    include_expired: bool = False

    def to_prompt(self) -> str:
        """A block ready to inject into a system prompt: each fact with its validity dates, and its
        status when it is not current belief."""
        if not self.items:
            return "No stored facts about this user match."
        head = "Facts about the user (valid from → until"
        if self.at_time is not None:
            head += f"; as of {self.at_time.date().isoformat()}"
        if self.known_at is not None:
            head += f"; as the store believed on {self.known_at.isoformat()}, statuses as of then"
        elif self.at_time is not None:
            head += ", as the store believes now"
        lines = [head + "):"]
        for item in self.items:
            k = item.knowledge
            status = "" if k.status == "active" else f" [{k.label}]"  # corrected, retracted, superseded
            lines.append(f"- {k.statement} ({k.interval_text()}){status}")
        return "\n".join(lines)


@dataclass(slots=True)
class ProcessReport:
    episodes: int = 0
    claims: int = 0
    predicted: int = 0
    below_confidence: int = 0
    invalid: int = 0
    tombstoned: int = 0
    duplicates: int = 0
    supersedes_dropped: int = 0
    unsupported: int = 0
    queued: int = 0
    failed: int = 0
    messages: int = 0
    dates_dropped: int = 0  # extractor dates outside the representable range, dropped from their item
    # Episodes with work that another live worker holds a lease on, and when the last lease ends
    # (they are picked up by the first `process` after that; a killed worker's leases just expire).
    leased_elsewhere: int = 0
    leased_until: datetime | None = None
    errors: list[str] = field(default_factory=list)

    def add(self, other: ProcessReport) -> None:
        for name in self.__dataclass_fields__:
            if name == "errors":
                self.errors.extend(other.errors)
            elif name == "leased_until":
                ends = [t for t in (self.leased_until, other.leased_until) if t is not None]
                self.leased_until = max(ends) if ends else None
            else:
                setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass(slots=True)
class CandidateContext:
    """What a reviewer needs beside a candidate: what the model predicted, the messages it read,
    and, for an update, the fact it would replace."""

    candidate: Candidate
    prediction: str = ""
    mode: str | None = None  # 'predict' | 'cold_start' | 'extract_all' | None (not from extraction)
    messages: list[Message] = field(default_factory=list)
    episode: Episode | None = None
    superseded: Knowledge | None = None
    existing: list[Knowledge] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ReembedReport:
    source: str
    source_dimensions: int | None
    target: str
    dimensions: int
    facts: int  # facts re-embedded by the whole move (0 when the store already used the target)
    resumed_at: int  # facts already staged by an earlier, interrupted run
    audit_id: int | None  # None: nothing to do


class UnsetType(Enum):
    """The type of `KEEP`, a value of its own (as httpx's `UnsetType`), so that a signature says
    `valid_at: datetime | None | UnsetType = KEEP` and mypy checks what callers pass, where
    `Any = KEEP` checked nothing; `x is KEEP` narrows the type."""

    KEEP = "KEEP"

    def __repr__(self) -> str:
        return "KEEP"


KEEP: Final = UnsetType.KEEP
"""Default for the interval of an edit: keep the candidate's value (None means an open end)."""


@dataclass(frozen=True, slots=True)
class EpisodeYield:
    """One conversation episode of a user and what extraction made of it: every candidate it
    produced (any status: pending, approved, rejected) and every statement a gate dropped. An
    episode whose user messages produced neither is where a curator looks for a missed fact."""

    episode: Episode
    candidates: list[Candidate]
    discarded: list[Discarded]
    fact_labels: dict[int, str] = field(default_factory=dict)
    """Candidate id -> what the fact its approval created is now (`Knowledge.label`: active,
    corrected, retracted, superseded...), so an approval since undone by the support desk does not
    read as plain "approved"."""


@dataclass(frozen=True, slots=True)
class AgentLogin:
    """One line of the owner's map of database logins to the agent names they may propose under
    (PostgreSQL's `agent_logins`; `memdesk agents list`)."""

    login: str
    agent: str
    granted_by: str
    granted_at: datetime

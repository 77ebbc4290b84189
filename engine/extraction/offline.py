"""The offline extractor: the embedded default, deterministic and without network.

Predict–calibrate, after Nemori (arXiv:2508.03341) as memv implements it, done with rules instead
of a model: the claims of an episode are read from the USER's own messages only (assistant text is
never a source, and questions are never claims), each as a third-person statement with a slot
(what it is about) and a value. The prediction is what the user's existing facts already say about
those slots. Then calibration:

  same slot and value (or the fact says it with more detail), same polarity -> covered ("predicted")
  same slot and value, opposite polarity                   -> contradiction / update superseding it
  single-valued slot known with another value              -> update superseding that fact
  anything else                                            -> new

How a person talks is honoured before anything is compared: a message that starts "just kidding"
withdraws the one before it, "I said married ... not married" withdraws the claims with that word,
and within a sentence a new value ("joined Etihad") makes the implied end of the old one ("quit
Emirates") redundant. Each statement says one fact ("I live in leeds and work at boots" is two),
names get their capitals, and fillers and obvious typos of words the rules know stay out of it
(`rules.tidy`); the evidence is the sentence as the user wrote it.

Firmness sets the confidence: hedges and hypotheticals 0.4, jokes and sarcasm 0.3, a claim dated
after its own message (a plan) 0.4, everything else 0.9; that firmness is the prior of each rule's
confidence, which the reviewers' decisions on the rule's past candidates (of the same firmness,
`rule_of`) then calibrate (`calibrated`, PRIOR_STRENGTH). The pipeline's 0.7 gate counts the low
ones instead of queueing them.

`existing == []` is the cold start: prediction "" and every claim is an item. The pattern table
lives in `offline_rules.py` (its version, `RULES_VERSION`, is the `prompt_version` every run
records); facts are read back with the same rules, so a fact a person wrote in other words (which
may not parse) can only cover a claim with exactly its text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, Literal, TypeVar

# The module by its full name, not `from . import`: that form imports the package, whose
# __init__ imports this module (tests/test_layers.py keeps the engine free of import circles).
import engine.extraction.offline_rules as rules

from ..models import CoveredClaim, Episode, Extraction, GapItem, GapKind, Knowledge
from ..text import value_key
from .offline_rules import Claim, TimeSpan
from .rules import clause_claims


@dataclass(slots=True)
class SourcedClaim:
    """A claim with where it came from: the sentence quoted as evidence, its firmness and dates."""

    claim: Claim
    evidence: str
    confidence: float
    span: TimeSpan


def claims_from_text(text: str, at: datetime, names: dict[str, str] | None = None) -> list[SourcedClaim]:
    """Every first-person claim of one user message, in reading order. `names` are the people the
    user has named before ({"Max": "brother"}), so "Max is an engineer." is read as about them."""
    out: list[SourcedClaim] = []
    for sentence in rules.sentences(text):
        if rules.is_question(sentence):
            continue
        confidence = rules.confidence_of(sentence)
        read = rules.with_person(sentence, names) if names else sentence
        expanded, span = rules.take_times(rules.expand(read), at)
        if span.valid_at is not None and span.valid_at > at:
            # "We're moving to Abu Dhabi next month": a plan, not yet a fact.
            confidence = min(confidence, rules.PLAN_CONFIDENCE)
        found: list[Claim] = []
        for clause in rules.split_clauses(expanded):
            normal = rules.normalise_clause(clause)
            if normal is None:
                continue
            text_, negated = normal
            claims = clause_claims(text_)
            if not claims and not negated and (resumed := rules.with_earlier_object(text_, found)) is not None:
                # "I'm into climbing, I go most Thursdays": the habit, said of the earlier object,
                # is the fact; the liking it restates is dropped.
                again, liking = resumed
                if claims := clause_claims(again):
                    found.remove(liking)
            for claim in map(rules.tidy, claims):
                if negated:
                    claim = Claim(claim.subject, claim.verb, claim.value, negated=not claim.negated)
                found.append(claim)
        # "my partner Sam" names Sam unless a claim about "partner Sam" already carries the name.
        subjects = {c.subject.casefold() for c in found}
        named = [c for c in rules.appositive_names(expanded) if f"{c.subject} {c.value}".casefold() not in subjects]
        found = named + found
        # "I quit Emirates and joined Etihad": the new value implies the old one ended.
        positive = {c.slot for c in found if not c.negated and not c.multi}
        seen: set[tuple[str, str, bool]] = set()
        for claim in found:
            ident = (claim.slot, claim.key, claim.negated)
            if ident in seen or (claim.negated and claim.slot in positive):
                continue
            seen.add(ident)
            out.append(SourcedClaim(claim, sentence, confidence, span))
    return out


def episode_claims(episode: Episode, names: dict[str, str] | None = None) -> list[SourcedClaim]:
    """The claims of an episode's user messages, after the user's own take-backs: "just kidding"
    withdraws the message before it, "I said married ... not married" the claims that say "married"
    (and the correction keeps the partner they named). People named in known facts (`names`) and
    earlier in the episode are recognised by name."""
    names = dict(names or {})
    per_message: list[list[SourcedClaim]] = []
    for message in episode.messages:
        if message.role != "user":
            continue
        if rules.is_retraction(message.content) and per_message:
            per_message[-1] = []
        withdrawn: list[Claim] = []
        for word in rules.corrected_words(message.content):
            withdrawn += [c.claim for m in per_message for c in m if word in c.claim.statement.casefold().split()]
            per_message = [
                [c for c in claims if word not in c.claim.statement.casefold().split()] for claims in per_message
            ]
        claims = claims_from_text(message.content, message.at, names)
        if withdrawn:
            # "I said married, we got engaged, not married": engaged to whom the withdrawn claim said.
            claims = [
                SourcedClaim(rules.with_partner(c.claim, withdrawn), c.evidence, c.confidence, c.span) for c in claims
            ]
        names.update(rules.people(c.claim for c in claims))
        per_message.append(claims)
    return [c for claims in per_message for c in claims]


FIRM = 0.9
"""The firmness of a claim stated outright (offline_rules.confidence_of)."""

PRIOR_STRENGTH = 10.0
"""How many reviewer decisions the prior is worth. The prior is Beta(c·n, (1−c)·n) with n this
strength and c the sentence's firmness (0.9 firm, 0.4 hedged or planned, 0.3 joking): a rule
with no history keeps its firmness; after n decisions the reviewers' approval rate weighs as much
as the prior, and it dominates from there on."""


def rule_of(claim: Claim, firmness: float = 0.9) -> str:
    """The rule a claim came from, for calibration: its slot family ("lives_in", "is", "job"...),
    the part of the slot before any value, so "is:vegetarian" and "is:teacher" share a rule; and,
    for a claim said less than firmly, its firmness ("home~tentative", "home~joking"). Reviewers
    approving what people state outright says nothing about "If I were rich I would live in
    Lisbon": under one rule those approvals lifted such hedges over the gate (the labelled set's
    precision fell from 0.958 to 0.938 as the benchmark's own reviewing calibrated its rules), so
    a tentative claim is calibrated only by the decisions on tentative claims of its slot."""
    family = claim.slot.split(":", 1)[0]
    if firmness >= FIRM:
        return family
    return f"{family}~{'tentative' if firmness >= rules.PLAN_CONFIDENCE else 'joking'}"


def calibrated(firmness: float, approved: int, rejected: int) -> float:
    """The posterior mean approval rate of a rule under the Beta prior of PRIOR_STRENGTH centred
    on the sentence's firmness: (c·n + approved) / (n + approved + rejected), rounded to 4 places.
    A hedge stays below the gate unless reviewers approve that rule's candidates nearly always."""
    alpha = firmness * PRIOR_STRENGTH + approved
    return round(alpha / (PRIOR_STRENGTH + approved + rejected), 4)


R = TypeVar("R")


@dataclass(slots=True)
class _Fact(Generic[R]):
    ref: R  # what the fact is to the caller: a Knowledge record, or an id
    claim: Claim | None
    key: str  # value key of the whole statement, for facts that do not parse


def known_facts(existing: list[Knowledge]) -> list[_Fact[Knowledge]]:
    """What the extractor predicts from, newest first (so that an update names the most recent
    fact of its slot), each read back with the same rules as the claims. The one place that reads
    `existing`, so a change in what the pipeline passes (pending candidates beside active facts,
    with their own handles) is a change here only."""
    return [
        _Fact(k, rules.parse_statement(k.statement), value_key(k.statement))
        for k in sorted(existing, key=lambda k: (k.created_at, k.id), reverse=True)
    ]


def _says_at_least(fact_key: str, claim_key: str) -> bool:
    """A fact covers a claim it says word for word, or says with more detail: "goes swimming every
    Saturday" already holds "goes swimming" ("I still go swimming"), and "no longer surfs" ends
    "surfs every weekend"."""
    return fact_key == claim_key or not claim_key or fact_key.startswith(claim_key + " ")


def relate(claim: Claim, facts: Sequence[_Fact[R]]) -> tuple[GapKind | Literal["covered"], _Fact[R] | None]:
    """How one claim stands to the known facts (newest first), by the calibration rules of the
    module docstring: ("covered", the fact that already says it), ("update" | "contradiction",
    the fact it would replace), or ("new", None). The one replacement rule: extraction calibrates
    with it, and the queue's intake (engine.gate) applies it to an agent's or a curator's statement."""
    statement_key = value_key(claim.statement)
    for f in facts:
        if f.key == statement_key or (
            f.claim is not None
            and f.claim.slot == claim.slot
            and f.claim.negated == claim.negated
            and _says_at_least(f.claim.key, claim.key)
        ):
            return "covered", f
    for f in facts:
        if (
            f.claim is not None
            and f.claim.slot == claim.slot
            and f.claim.negated != claim.negated
            and (_says_at_least(f.claim.key, claim.key) or rules.ends_habit(claim if claim.negated else f.claim))
        ):
            return ("contradiction" if claim.negated else "update"), f
    if not claim.negated and not claim.multi:
        for f in facts:
            if f.claim is not None and f.claim.slot == claim.slot and not f.claim.negated:
                return "update", f
    return "new", None


def relate_statement(
    statement: str, facts: Sequence[tuple[int, str]]
) -> tuple[GapKind | Literal["covered"], int | None]:
    """`relate` for a third-person statement someone wrote (an agent's proposal, a curator's
    fact) against (id, statement) facts: (kind, the id it covers or would replace). A statement
    the rules cannot read is `new` (an exact value match is the duplicate gate's business)."""
    claim = rules.parse_statement(statement)
    if claim is None:
        return "new", None
    known = [_Fact(i, rules.parse_statement(text), value_key(text)) for i, text in sorted(facts, reverse=True)]
    kind, fact = relate(claim, known)
    return kind, (fact.ref if fact is not None else None)


class OfflineExtractor:
    """Rule-based predict–calibrate; see the module docstring for the decisions it makes."""

    name: str = "offline"
    model: str | None = None
    prompt_version: str = rules.RULES_VERSION
    batchable = True  # in-process and never waits: the pipeline may extract inside a write transaction

    def __init__(self) -> None:
        # {rule: (approved, rejected)}: the reviewers' decisions on each rule's past candidates,
        # set by the pipeline before a run (Pipeline._calibrate); empty means the priors alone.
        self.calibration: dict[str, tuple[int, int]] = {}

    async def extract(self, episode: Episode, existing: list[Knowledge]) -> Extraction:
        facts = known_facts(existing)
        claims = episode_claims(episode, rules.people(f.claim for f in facts if f.claim is not None))
        if not facts:
            return Extraction(prediction="", items=[self._item(c, "new", None) for c in claims])
        items: list[GapItem] = []
        covered: list[CoveredClaim] = []
        for sc in claims:
            kind, fact = relate(sc.claim, facts)
            if kind == "covered":
                covered.append(CoveredClaim(sc.claim.statement, str(fact.ref.id) if fact is not None else None))
            else:
                if kind == "contradiction" and fact is not None and fact.claim is not None:
                    sc = SourcedClaim(rules.in_words_of(sc.claim, fact.claim), sc.evidence, sc.confidence, sc.span)
                items.append(self._item(sc, kind, str(fact.ref.id) if fact is not None else None))
        return Extraction(prediction=_prediction(claims, facts), items=items, covered=covered)

    def _item(self, sc: SourcedClaim, kind: GapKind, supersedes: str | None) -> GapItem:
        rule = rule_of(sc.claim, sc.confidence)
        approved, rejected = self.calibration.get(rule, (0, 0))
        return GapItem(
            statement=sc.claim.statement,
            kind=kind,
            supersedes=supersedes,
            confidence=calibrated(sc.confidence, approved, rejected),
            rule=rule,
            valid_at=sc.span.valid_at,
            invalid_at=sc.span.invalid_at,
            evidence=sc.evidence,
        )


def _prediction(claims: list[SourcedClaim], facts: list[_Fact[Knowledge]]) -> str:
    """What the known facts say about what this episode touches, as a reviewer reads it: whole
    sentences, no internal slot names."""
    slots = list(dict.fromkeys(c.claim.slot for c in claims))
    said: list[str] = []
    unknown: list[str] = []
    for slot in slots:
        found = [_as_listed(f.ref) for f in facts if f.claim is not None and f.claim.slot == slot]
        if found:
            said.extend(s for s in found if s not in said)
        else:
            unknown.append(rules.describe_slot(slot))
    # A pending candidate is not known yet: counted apart, so "facts already known" counts facts.
    waiting = sum(1 for f in facts if str(f.ref.status) == "pending")
    n = len(facts) - waiting
    beside = f" (and {waiting} candidate{'s' if waiting != 1 else ''} pending review)" if waiting else ""
    lines = [f"From the {n} fact{'s' if n != 1 else ''} already known{beside}, this conversation was expected to say:"]
    lines.extend(f"- {s.rstrip('.')}." for s in said)
    if not said:
        lines.append("- nothing already known about what the user talks about here.")
    if unknown:
        lines.append("Nothing was known yet about " + _join(list(dict.fromkeys(unknown))) + ".")
    if not slots:
        lines = [lines[0], "- the user states nothing about themselves in this conversation."]
    return "\n".join(lines)


def _as_listed(k: Knowledge) -> str:
    """A fact as the prediction lists it; a record of a candidate still waiting for review (the
    pipeline may pass those beside approved facts) says so, so no one reads it as approved."""
    text = k.statement.rstrip(". ")
    return f"{text} (pending review)" if str(k.status) == "pending" else text


def _join(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]

"""The offline extractor: the embedded default, deterministic and without network.

Predict–calibrate, after Nemori (arXiv:2508.03341) as memv implements it, done with rules instead
of a model: the claims of an episode are read from the USER's own messages only (assistant text is
never a source, and questions are never claims), each as a third-person statement with a slot
(what it is about) and a value. The prediction is what the user's existing facts already say about
those slots. Then calibration:

  same slot, same value, same polarity as an existing fact -> covered (the "predicted" discard)
  same slot and value, opposite polarity                   -> contradiction / update superseding it
  single-valued slot known with another value              -> update superseding that fact
  anything else                                            -> new

`existing == []` is the cold start: prediction "" and every claim is an item. The pattern table
lives in `offline_rules.py`; facts are read back with the same rules, so a fact a person wrote in
other words (which may not parse) can only cover a claim with exactly its text.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..models import CoveredClaim, Episode, Extraction, GapItem, Knowledge
from ..text import value_key
from . import offline_rules as rules
from .offline_rules import Claim, TimeSpan


@dataclass(slots=True)
class SourcedClaim:
    """A claim with where it came from: the sentence quoted as evidence, its firmness and dates."""

    claim: Claim
    evidence: str
    confidence: float
    span: TimeSpan


def claims_from_text(text: str, at: datetime) -> list[SourcedClaim]:
    """Every first-person claim of one user message, in reading order."""
    out: list[SourcedClaim] = []
    for sentence in rules.sentences(text):
        if rules.is_question(sentence):
            continue
        confidence = rules.confidence_of(sentence)
        expanded, span = rules.take_times(rules.expand(sentence), at)
        found: list[Claim] = list(rules.appositive_names(expanded))
        for clause in rules.split_clauses(expanded):
            normal = rules.normalise_clause(clause)
            if normal is None:
                continue
            text_, negated = normal
            for claim in rules.clause_claims(text_):
                if negated:
                    claim = Claim(claim.subject, claim.verb, claim.value, negated=not claim.negated)
                found.append(claim)
        seen: set[tuple[str, str, bool]] = set()
        for claim in found:
            ident = (claim.slot, claim.key, claim.negated)
            if ident in seen:  # the same claim twice in one sentence ("my partner Sam" twice)
                continue
            seen.add(ident)
            out.append(SourcedClaim(claim, sentence, confidence, span))
    return out


@dataclass(slots=True)
class _Fact:
    knowledge: Knowledge
    claim: Claim | None
    key: str  # value key of the whole statement, for facts that do not parse


class OfflineExtractor:
    """Rule-based predict–calibrate; see the module docstring for the decisions it makes."""

    name = "offline"
    model: str | None = None
    prompt_version: str | None = None

    async def extract(self, episode: Episode, existing: list[Knowledge]) -> Extraction:
        claims: list[SourcedClaim] = []
        for message in episode.messages:
            if message.role == "user":
                claims.extend(claims_from_text(message.content, message.at))
        if not existing:
            return Extraction(prediction="", items=[self._item(c, "new", None) for c in claims])
        # Newest first, so that an update names the most recent fact of its slot.
        facts = [
            _Fact(k, rules.parse_statement(k.statement), value_key(k.statement))
            for k in sorted(existing, key=lambda k: (k.created_at, k.id), reverse=True)
        ]
        items: list[GapItem] = []
        covered: list[CoveredClaim] = []
        for sc in claims:
            claim = sc.claim
            statement_key = value_key(claim.statement)
            same = next((f for f in facts if f.key == statement_key or (
                f.claim is not None and f.claim.slot == claim.slot and f.claim.key == claim.key
                and f.claim.negated == claim.negated)), None)
            if same is not None:
                covered.append(CoveredClaim(claim.statement, str(same.knowledge.id)))
                continue
            opposite = next((f for f in facts if f.claim is not None and f.claim.slot == claim.slot
                             and f.claim.key == claim.key and f.claim.negated != claim.negated), None)
            if opposite is not None:
                kind = "contradiction" if claim.negated else "update"
                items.append(self._item(sc, kind, str(opposite.knowledge.id)))
                continue
            if not claim.negated and not claim.multi:
                other = next((f for f in facts if f.claim is not None and f.claim.slot == claim.slot
                              and not f.claim.negated), None)
                if other is not None:
                    items.append(self._item(sc, "update", str(other.knowledge.id)))
                    continue
            items.append(self._item(sc, "new", None))
        return Extraction(prediction=_prediction(claims, facts), items=items, covered=covered)

    @staticmethod
    def _item(sc: SourcedClaim, kind: str, supersedes: str | None) -> GapItem:
        return GapItem(
            statement=sc.claim.statement, kind=kind, supersedes=supersedes,  # type: ignore[arg-type]
            confidence=sc.confidence, valid_at=sc.span.valid_at, invalid_at=sc.span.invalid_at,
            evidence=sc.evidence,
        )


def _prediction(claims: list[SourcedClaim], facts: list[_Fact]) -> str:
    """What the known facts say about the slots this episode touches, as a reviewer reads it."""
    slots = list(dict.fromkeys(c.claim.slot for c in claims))
    lines = [f"From {len(facts)} known fact{'s' if len(facts) != 1 else ''}:"]
    unknown: list[str] = []
    for slot in slots:
        said = [f.knowledge.statement for f in facts if f.claim is not None and f.claim.slot == slot]
        if said:
            lines.append(f"- {slot}: " + "; ".join(said))
        else:
            unknown.append(slot)
    if unknown:
        lines.append("- nothing known about: " + ", ".join(unknown))
    if not slots:
        lines.append("- the user states nothing about themselves in this episode")
    return "\n".join(lines)

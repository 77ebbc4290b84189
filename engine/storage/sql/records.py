"""Rows -> models: every column list of the engine's records and the one place a stored row
(microsecond integers, JSON text, 0/1 integers) becomes a model with datetimes. Both backends store
the same columns under the same names, so both read their rows through these converters."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ...models import AuditEvent, Candidate, Discarded, Knowledge, Mark, Tombstone
from ...timeutil import from_us

KNOWLEDGE_COLS = (
    "id, user_id, statement, status, created_at, created_by, confidence, valid_at, invalid_at, "
    "expired_at, end_reason, superseded_by, candidate_id, episode_id, valid_closed, prior_invalid_at"
)
CANDIDATE_COLS = (
    "c.id, c.user_id, c.statement, c.kind, c.status, c.confidence, c.created_at, c.evidence, "
    "c.supersedes_id, c.valid_at, c.invalid_at, c.episode_id, c.run_id, c.unsupported, c.claimed_by, "
    "c.claimed_until, c.decided_by, c.decided_at, c.decision, c.reason, c.knowledge_id, r.extractor, "
    "c.created_by, c.supersedes_candidate_id, "
    # team state (engine/team.py): who flagged it for a second opinion, who was assigned its user
    "(SELECT f.flagged_by FROM flags f WHERE f.candidate_id = c.id AND f.withdrawn_at IS NULL), "
    "(SELECT a.reviewer FROM assignments a WHERE a.user_id = c.user_id), "
    "c.category, "
    # engine.gate's marks (JSON list), NULL for none
    "c.marks"
)
CANDIDATE_FROM = "candidates c LEFT JOIN extraction_runs r ON r.id = c.run_id"
TOMBSTONE_COLS = (
    "id, user_id, key, statement, reason, created_by, created_at, candidate_id, knowledge_id, "
    "lifted_at, lifted_by, lift_reason"
)
AUDIT_COLS = "id, at, actor, action, user_id, entity, entity_id, before, after, reason, note"
# sqlite-vec ids and SQLite rowids are signed 64-bit: a larger id names nothing, and binding it
# would raise OverflowError deep in the driver instead of a clean "not found".
MAX_ID = 2**63 - 1
DISCARDED_COLS = (
    "id, user_id, statement, gate, created_at, episode_id, run_id, evidence, kind, confidence, valid_at,"
    " invalid_at, matched_entity, matched_id, matched_statement, queued_candidate_id, queued_by, queued_at"
)


# -- rows -> models -------------------------------------------------------------------------------


def knowledge_from_row(r: Sequence[Any]) -> Knowledge:
    return Knowledge(
        id=r[0],
        user_id=r[1],
        statement=r[2],
        status=r[3],
        created_at=from_us(r[4]),
        created_by=r[5],
        confidence=r[6],
        valid_at=from_us(r[7]),
        invalid_at=from_us(r[8]),
        expired_at=from_us(r[9]),
        end_reason=r[10],
        superseded_by=r[11],
        candidate_id=r[12],
        episode_id=r[13],
        valid_closed=bool(r[14]),
        prior_invalid_at=from_us(r[15]),
    )


def candidate_from_row(r: Sequence[Any]) -> Candidate:
    return Candidate(
        id=r[0],
        user_id=r[1],
        statement=r[2],
        kind=r[3],
        status=r[4],
        confidence=r[5],
        created_at=from_us(r[6]),
        evidence=r[7],
        supersedes_id=r[8],
        valid_at=from_us(r[9]),
        invalid_at=from_us(r[10]),
        episode_id=r[11],
        run_id=r[12],
        unsupported=bool(r[13]),
        claimed_by=r[14],
        claimed_until=from_us(r[15]),
        decided_by=r[16],
        decided_at=from_us(r[17]),
        decision=r[18],
        reason=r[19],
        knowledge_id=r[20],
        extractor=r[21],
        created_by=r[22],
        supersedes_candidate_id=r[23],
        flagged_by=r[24],
        assigned_to=r[25],
        category=r[26],
        marks=marks_from_json(r[27]),
    )


def marks_to_json(marks: Sequence[Mark]) -> str | None:
    """A candidate's marks as stored: NULL for none, else a JSON list of {kind, target_id, note}."""
    if not marks:
        return None
    return json.dumps([{"kind": m.kind, "target_id": m.target_id, "note": m.note} for m in marks])


def marks_from_json(text: str | None) -> tuple[Mark, ...]:
    if not text:
        return ()
    return tuple(Mark(kind=m["kind"], target_id=int(m["target_id"]), note=str(m["note"])) for m in json.loads(text))


def tombstone_from_row(r: Sequence[Any]) -> Tombstone:
    return Tombstone(
        id=r[0],
        user_id=r[1],
        key=r[2],
        statement=r[3],
        reason=r[4],
        created_by=r[5],
        created_at=from_us(r[6]),
        candidate_id=r[7],
        knowledge_id=r[8],
        lifted_at=from_us(r[9]),
        lifted_by=r[10],
        lift_reason=r[11],
    )


def discarded_from_row(r: Sequence[Any]) -> Discarded:
    return Discarded(
        id=r[0],
        user_id=r[1],
        statement=r[2],
        gate=r[3],
        created_at=from_us(r[4]),
        episode_id=r[5],
        run_id=r[6],
        evidence=r[7],
        kind=r[8],
        confidence=r[9],
        valid_at=from_us(r[10]),
        invalid_at=from_us(r[11]),
        matched_entity=r[12],
        matched_id=r[13],
        matched_statement=r[14],
        queued_candidate_id=r[15],
        queued_by=r[16],
        queued_at=from_us(r[17]),
    )


def audit_from_row(r: Sequence[Any]) -> AuditEvent:
    return AuditEvent(
        id=r[0],
        at=from_us(r[1]),
        actor=r[2],
        action=r[3],
        user_id=r[4],
        entity=r[5],
        entity_id=r[6],
        before=json.loads(r[7]) if r[7] else None,
        after=json.loads(r[8]) if r[8] else None,
        reason=r[9],
        note=r[10],
    )


# -- audit ----------------------------------------------------------------------------------------


# -- knowledge ------------------------------------------------------------------------------------


# -- candidates -----------------------------------------------------------------------------------


def candidate_from_row_json(text: str) -> Candidate:
    """A Candidate from the JSON an audit row holds (the state before a decision)."""
    from datetime import datetime

    data = json.loads(text)
    for name in ("created_at", "valid_at", "invalid_at", "claimed_until", "decided_at"):
        if data.get(name) is not None:
            data[name] = datetime.fromisoformat(data[name])
    data["marks"] = tuple(Mark(**m) for m in data.get("marks") or ())
    return Candidate(**data)


OVERTURN_REASON = "overturned on second review: "
"""How a fact a second reviewer overturned ends (its `end_reason` starts so: engine/team.py)."""

OVERTURNED = (
    "EXISTS (SELECT 1 FROM knowledge ov WHERE ov.id = c.knowledge_id AND ov.status = 'retracted'"
    f" AND ov.end_reason LIKE '{OVERTURN_REASON}%')"
)
"""A candidate `c` whose approval a second reviewer overturned: a person's rejection, for
calibration and records. Read from the fact (which every role may read, the workers that
calibrate included), not from `second_reviews` (which only reviewers may)."""

DECIDED_BY_PEOPLE = "(c.decided_by IS NULL OR c.decided_by NOT LIKE 'policy:%')"
"""A candidate `c` decided by a person, not a review policy: what calibration counts (the offline
extractor's per-rule confidence, `stats`' approval rate per confidence bucket). A policy's approvals
are not evidence for the confidence it acts on: counting them would let a policy raise the very
confidence that lets it approve."""

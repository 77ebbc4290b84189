"""The audit actions a decision and its undo write, as one enum that undo reads.

Values are the strings stored in `audit_log.action` (a `StrEnum` member IS its string, so rows,
exports and SQL comparisons are unchanged). Only the actions a decision or its undo write are
here: the others (capture, queue, flags, assignments, policies' settings...) are written by one
service each and read by nobody else. `UNDOABLE` used to be a set kept in step with the decisions
by hand in engine/review.py; now each action says what it is, and engine/undo.py keeps one inverse
per decision (tests/test_undo.py checks there is one for each, and undoes each)."""

from __future__ import annotations

from enum import StrEnum


class AuditAction(StrEnum):
    # A reviewer's decision on a candidate (the candidate's own audit row).
    APPROVE = "approve"
    EDIT_APPROVE = "edit_approve"
    KEEP_BOTH = "keep_both"
    CONFIRM_SUPERSESSION = "confirm_supersession"
    CONFIRM_CORRECTION = "confirm_correction"
    APPROVE_RETRACTION = "approve_retraction"
    REJECT = "reject"
    # What a decision writes on other rows in its transaction.
    CREATE = "create"  # the fact it made (engine.gate.activate)
    SUPERSEDE = "supersede"  # a fact it ended: the world changed
    CORRECT = "correct"  # a fact it ended: never true
    RETRACT = "retract"  # the fact an approved retraction request ended
    CHAIN_REPOINT = "chain_repoint"  # a later candidate now replaces the fact it made
    CHAIN_UNLINK = "chain_unlink"  # a later candidate it replaced no more (a rejection)
    GATE_RETARGET = "gate_retarget"  # I5: a pending candidate re-pointed at a fact now active
    # Undo's own rows.
    UNDO = "undo"
    UNDO_CHAIN = "undo_chain"
    UNDO_CREATE = "undo_create"
    UNDO_RETRACT = "undo_retract"
    UNDO_SUPERSEDE = "undo_supersede"


DECISIONS: frozenset[AuditAction] = frozenset(
    {
        AuditAction.APPROVE,
        AuditAction.EDIT_APPROVE,
        AuditAction.KEEP_BOTH,
        AuditAction.CONFIRM_SUPERSESSION,
        AuditAction.CONFIRM_CORRECTION,
        AuditAction.APPROVE_RETRACTION,
        AuditAction.REJECT,
    }
)
"""A reviewer's decisions on a candidate: what undo inverts."""

CHAIN: tuple[AuditAction, ...] = (AuditAction.CHAIN_REPOINT, AuditAction.CHAIN_UNLINK, AuditAction.GATE_RETARGET)
"""The chain links a decision re-points or cuts, which its undo restores."""

UNDOABLE: frozenset[AuditAction] = DECISIONS | {
    AuditAction.UNDO,
    AuditAction.CHAIN_REPOINT,
    AuditAction.CHAIN_UNLINK,
    AuditAction.UNDO_CHAIN,
    AuditAction.SUPERSEDE,
    AuditAction.CORRECT,
    AuditAction.UNDO_SUPERSEDE,
    AuditAction.RETRACT,
    AuditAction.UNDO_RETRACT,
}
"""What a later decision, and its undo, write on a row an earlier decision wrote: when the row is
back as the earlier decision left it after only these, nothing later depends on it any more."""

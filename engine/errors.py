"""The errors the engine raises, as one hierarchy a caller can catch at the level it cares about.

    MemdeskError
    ├── ConfigurationError        the environment cannot run the engine (no SQLite that loads extensions)
    │   └── EmbedderMismatchError     the database was built with another embedder (`memdesk reembed DB`)
    │       └── EmbeddingDimensionError   ... of another embedding dimension
    ├── UserInputError            the caller's input is wrong; nothing was changed
    │   ├── InvalidIntervalError      invalid_at is not strictly after valid_at, or a naive datetime
    │   ├── NotFoundError             unknown id, or an id that belongs to another user
    │   ├── InvalidStatementError     an empty statement or reason
    │   ├── InvalidIngestError        a malformed input file (line number and reason in the message)
    │   ├── DecisionRequiredError     approve of a candidate that would replace something: choose
    │   │                             confirm_supersession or keep_both (carries the candidate id)
    │   ├── DuplicateFactError        another active fact of the user already holds this value (I2)
    │   ├── DuplicateCandidateError   a statement queued directly repeats an active fact or pending candidate
    │   ├── TombstonedError           a live tombstone of the user blocks this value (I1)
    │   ├── AgentIdentityError        this database login may not propose under that agent's name
    │   └── SettleRequiredError       a fact added directly would replace an active one: supersede,
    │                                 correct or keep both
    ├── ConflictError             the state moved under the caller; nothing was changed
    │   ├── AlreadyDecidedError       the candidate is no longer pending (carries who decided it)
    │   ├── ClaimedError              another reviewer holds an unexpired lease on the candidate
    │   │   ├── AssignedError             the candidate's user is assigned to another reviewer
    │   │   └── SecondOpinionError        the reviewer flagged it for a second opinion: another must decide
    │   ├── StaleSupersessionError    the fact a candidate would supersede is no longer active
    │   ├── ChainOrderError           the candidate it would replace is still pending: decide that first
    │   └── UndoRefusedError          a later change depends on the decision
    └── ModelError                an LLM or embedding endpoint failed or answered out of contract
        └── MalformedModelOutputError the answer was not valid JSON or did not fit the schema

Every error raised by a public call leaves the database exactly as it was: each mutation runs in
one transaction that is rolled back when anything inside it raises.
"""

from __future__ import annotations


class MemdeskError(Exception):
    """Base of every error the engine raises on purpose."""


class ConfigurationError(MemdeskError):
    pass


class EmbedderMismatchError(ConfigurationError):
    """The database's vectors come from another embedder; its message names `memdesk reembed DB`."""


class EmbeddingDimensionError(EmbedderMismatchError):
    pass


class IncompleteStoreError(ConfigurationError):
    """The store is a copy an interrupted `memdesk migrate` left behind: it holds only part of its
    source, so it is never opened (its next ids would be different rows' ids in the source)."""


class UserInputError(MemdeskError):
    pass


class InvalidIntervalError(UserInputError):
    pass


class NotFoundError(UserInputError):
    pass


class InvalidStatementError(UserInputError):
    pass


class InvalidIngestError(UserInputError):
    pass


class DecisionRequiredError(UserInputError):
    """A plain approve of a candidate that would replace a fact or a pending candidate. Approving
    it as-is used to keep both facts active silently; the caller must say which it means."""

    def __init__(self, candidate_id: int, target: str) -> None:
        self.candidate_id = candidate_id
        super().__init__(
            f"candidate {candidate_id} would replace {target}: decide with confirm_supersession (end the old one)"
            " or keep_both (keep both active)"
        )


class DuplicateFactError(UserInputError):
    def __init__(self, knowledge_id: int, statement: str) -> None:
        self.knowledge_id = knowledge_id
        self.statement = statement
        super().__init__(f"fact {knowledge_id} of this user already says {statement!r}")


class TombstonedError(UserInputError):
    """The value is blocked by a live tombstone of the user: it was rejected or retracted before.
    Lift the tombstone (`lift_tombstone`, or the `lift_tombstone=True` argument of the call that
    makes the fact active) to allow it again."""

    def __init__(self, tombstone_id: int, statement: str | None = None) -> None:
        self.tombstone_id = tombstone_id
        said = f": {statement!r}" if statement else ""
        super().__init__(f"a reviewer already rejected this value for this user (tombstone {tombstone_id}){said}")


class DuplicateCandidateError(UserInputError):
    """A statement queued directly holds the value of an active fact or a pending candidate of the
    user (the queue's duplicate gate)."""

    def __init__(self, entity: str, entity_id: int) -> None:
        self.entity = entity
        self.entity_id = entity_id
        what = "fact" if entity == "knowledge" else "pending candidate"
        super().__init__(f"{what} {entity_id} of this user already holds this value; nothing was queued")


class AgentIdentityError(UserInputError):
    """A proposal named an agent the database login may not speak for (PostgreSQL: the owner maps
    logins to agent names with `memdesk agents allow`). Review policies trust agents by name, so
    the name is held by the database, not by what the agent writes; nothing was queued."""


class SettleRequiredError(UserInputError):
    """A fact added directly is about something an active fact of the user already says (the
    extractor's replacement rule): say how it relates, with `settle="supersede"` (the world
    changed), `"correct"` (the old fact was never true) or `"keep_both"`."""

    def __init__(self, knowledge_id: int, statement: str) -> None:
        self.knowledge_id = knowledge_id
        self.statement = statement
        super().__init__(
            f"fact {knowledge_id} of this user says {statement!r}, which this would replace: choose supersede"
            " (the world changed), correct (it was never true) or keep both"
        )


class ConflictError(MemdeskError):
    pass


class AlreadyDecidedError(ConflictError):
    def __init__(self, candidate_id: int, status: str, decided_by: str | None) -> None:
        self.candidate_id = candidate_id
        self.status = status
        self.decided_by = decided_by
        who = f" by {decided_by}" if decided_by else ""
        super().__init__(f"candidate {candidate_id} is already {status}{who}")


class ClaimedError(ConflictError):
    def __init__(self, candidate_id: int, claimed_by: str) -> None:
        self.candidate_id = candidate_id
        self.claimed_by = claimed_by
        super().__init__(f"candidate {candidate_id} is being reviewed by {claimed_by}")


class AssignedError(ClaimedError):
    """The candidate's user was taken by another reviewer ("my queue", engine/team.py)."""

    def __init__(self, candidate_id: int, user_id: str, assigned_to: str) -> None:
        ConflictError.__init__(
            self, f"candidate {candidate_id} belongs to user {user_id}, whose items {assigned_to} has taken"
        )
        self.candidate_id = candidate_id
        self.claimed_by = assigned_to
        self.user_id = user_id


class SecondOpinionError(ClaimedError):
    """The reviewer flagged this candidate for a second opinion, so another reviewer must decide it.

    A ClaimedError because that is what it means to every caller: someone else must take it (the
    queue moves on, bulk approval skips it)."""

    def __init__(self, candidate_id: int, flagged_by: str) -> None:
        ConflictError.__init__(
            self,
            f"candidate {candidate_id} awaits a second opinion: {flagged_by} flagged it, so another "
            "reviewer must decide it",
        )
        self.candidate_id = candidate_id
        self.claimed_by = "another reviewer (you asked for a second opinion)"
        self.flagged_by = flagged_by


class StaleSupersessionError(ConflictError):
    pass


class UndoRefusedError(ConflictError):
    pass


class ChainOrderError(ConflictError):
    """The candidate would replace another candidate that is still pending: that one must be
    decided first (approving it re-points this one at the new fact; rejecting it makes this `new`)."""

    def __init__(self, candidate_id: int, pending_id: int) -> None:
        self.candidate_id = candidate_id
        self.pending_id = pending_id
        super().__init__(
            f"candidate {candidate_id} would replace candidate {pending_id}, which is still pending:"
            f" decide candidate {pending_id} first"
        )


class ModelError(MemdeskError):
    pass


class MalformedModelOutputError(ModelError):
    pass

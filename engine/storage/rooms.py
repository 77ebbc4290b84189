"""The rooms each service may touch: a `Protocol` per service over the rooms of `engine/storage/sql/`.

`SqlTx` holds every statement of the engine, in rooms (sql/core.py, knowledge.py, queue.py,
tombstones.py, capture.py, context.py, text_arm.py, team.py, stats.py, policies.py: STORAGE.md
says which table lives where). A service does not see all of it: it opens its transactions through
`Rooms[ItsTx]`, and annotates the `tx` its helpers take with `ItsTx`, so mypy refuses a call into a
room the service has no business in. A reader finds here, in one place, what each service may read
and change; the audit rows of every change are written through `TxCore.audit`, which every room
includes (a decision and its audit row share the one transaction).

`Store` satisfies `Rooms[T]` for every `T` below because `SqlTx` subclasses all the rooms: nothing
is cast, and mypy checks that at each service's `_store` property.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Protocol, TypeVar

from .sql.capture import CaptureOps
from .sql.context import ContextOps
from .sql.core import TxCore
from .sql.knowledge import KnowledgeOps
from .sql.policies import PolicyOps
from .sql.queue import QueueOps
from .sql.team import TeamOps
from .sql.text_arm import TextArmOps
from .sql.tombstones import TombstoneOps

T_co = TypeVar("T_co", covariant=True)


class Rooms(Protocol[T_co]):
    """A store seen through the rooms `T_co` names: what `Store` offers, typed narrower."""

    def transaction(self) -> AbstractAsyncContextManager[T_co]: ...

    def reading(self) -> AbstractAsyncContextManager[T_co]: ...


class GateTx(KnowledgeOps, TombstoneOps, QueueOps, Protocol):
    """engine/gate.py: reads facts and tombstones (the activation and tombstone gates), ends the
    facts a new one replaces, and re-points the pending candidates that would replace it."""


class BlindTx(TeamOps, PolicyOps, Protocol):
    """engine/blind.py: the sampled second review's figures, at the policies' sample rates."""


class ReviewTx(ContextOps, KnowledgeOps, QueueOps, TombstoneOps, BlindTx, Protocol):
    """engine/review.py: decides candidates (queue), creates and ends facts (knowledge), writes and
    lifts tombstones, shows a candidate's context, and reads it as a blind reviewer may (`get`)."""


class KnowledgeTx(KnowledgeOps, QueueOps, TombstoneOps, CaptureOps, BlindTx, Protocol):
    """engine/knowledge.py (`Memory`'s own operations): captures messages, queues what agents
    propose, reads and corrects facts, lifts tombstones, re-queues what a gate discarded, lists
    the second review's blind spots."""


class PipelineTx(CaptureOps, QueueOps, KnowledgeOps, TombstoneOps, Protocol):
    """engine/extraction/pipeline.py: leases episodes, writes runs and discarded statements, queues
    candidates after the gates (whose views, facts and tombstones it reads)."""


class TeamTx(ContextOps, TombstoneOps, TeamOps, PolicyOps, Protocol):
    """engine/team.py: flags, second reviews, assignments and the team's figures; reads candidates
    and their context, and the policies' sample rates; a second reviewer's overturn retracts the
    fact (engine/knowledge.retract_in, which may write a tombstone)."""


class PolicyTx(PolicyOps, TeamOps, TxCore, Protocol):
    """engine/policies.py: policy settings (in `meta`), verdicts, draws and scope events (audit
    rows), and the second-review backlog its alarms report (team)."""


class WatchTx(PolicyOps, TxCore, Protocol):
    """engine/watch.py: an agent's decided proposals, the approvals a watch draws into the second
    review (audit rows) and the watch events; called in the review's and the team's transactions."""


class RetrievalTx(KnowledgeOps, TextArmOps, Protocol):
    """engine/retrieval.py: reads only: the vector arm, the text arm, the facts they ranked."""


__all__ = [
    "BlindTx",
    "GateTx",
    "KnowledgeTx",
    "PipelineTx",
    "PolicyTx",
    "RetrievalTx",
    "ReviewTx",
    "Rooms",
    "TeamTx",
]

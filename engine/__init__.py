"""memdesk engine: conversations in, human-reviewed user facts out.

The public surface is what this module exports; everything else is internal.
"""

from .categories import ANY_SPECIAL, CATEGORIES
from .config import MemoryConfig
from .embedders import Embedder, HashingEmbedder, OpenAIEmbedder, WordLlamaEmbedder
from .errors import (
    AgentIdentityError,
    AlreadyDecidedError,
    AssignedError,
    ChainOrderError,
    ClaimedError,
    ConfigurationError,
    ConflictError,
    DecisionRequiredError,
    DuplicateCandidateError,
    DuplicateFactError,
    EmbedderMismatchError,
    EmbeddingDimensionError,
    IncompleteStoreError,
    InvalidIngestError,
    InvalidIntervalError,
    InvalidStatementError,
    MalformedModelOutputError,
    MemdeskError,
    ModelError,
    NotFoundError,
    SecondOpinionError,
    SettleRequiredError,
    StaleSupersessionError,
    TombstonedError,
    UndoRefusedError,
    UserInputError,
)
from .knowledge import NewFact
from .memory import Memory
from .models import (
    AddedFact,
    AddedFacts,
    AuditEvent,
    BulkResult,
    Candidate,
    CandidateContext,
    CoveredClaim,
    Discarded,
    Episode,
    EpisodeYield,
    Extraction,
    GapItem,
    Knowledge,
    Message,
    ProcessReport,
    ProposalOutcome,
    QueueMark,
    RetrievalResult,
    RetrievedItem,
    Tombstone,
)
from .queue_filter import CANDIDATE_KINDS, QueueFilter
from .review import KEEP, ReviewService
from .stats import Stats

__all__ = [
    "ANY_SPECIAL",
    "CANDIDATE_KINDS",
    "CATEGORIES",
    "KEEP",
    "AddedFact",
    "AddedFacts",
    "AgentIdentityError",
    "AlreadyDecidedError",
    "AssignedError",
    "AuditEvent",
    "BulkResult",
    "Candidate",
    "CandidateContext",
    "ChainOrderError",
    "ClaimedError",
    "ConfigurationError",
    "ConflictError",
    "CoveredClaim",
    "DecisionRequiredError",
    "Discarded",
    "DuplicateCandidateError",
    "DuplicateFactError",
    "Embedder",
    "EmbedderMismatchError",
    "EmbeddingDimensionError",
    "Episode",
    "EpisodeYield",
    "Extraction",
    "Extractor",
    "GapItem",
    "HashingEmbedder",
    "IncompleteStoreError",
    "InvalidIngestError",
    "InvalidIntervalError",
    "InvalidStatementError",
    "Knowledge",
    "MalformedModelOutputError",
    "MemdeskError",
    "Memory",
    "MemoryConfig",
    "Message",
    "ModelError",
    "NewFact",
    "NotFoundError",
    "OfflineExtractor",
    "OpenAIEmbedder",
    "OpenAIExtractor",
    "ProcessReport",
    "ProposalOutcome",
    "QueueFilter",
    "QueueMark",
    "RetrievalResult",
    "RetrievedItem",
    "ReviewService",
    "SecondOpinionError",
    "SettleRequiredError",
    "StaleSupersessionError",
    "Stats",
    "Tombstone",
    "TombstonedError",
    "UndoRefusedError",
    "UserInputError",
    "WordLlamaEmbedder",
]


def __getattr__(name: str) -> object:
    # The extractors live in engine.extraction, which builds on the core above.
    if name in ("Extractor", "OfflineExtractor", "OpenAIExtractor"):
        from . import extraction

        return getattr(extraction, name)
    raise AttributeError(name)

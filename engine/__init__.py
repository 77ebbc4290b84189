"""memdesk engine: conversations in, human-reviewed user facts out.

The public surface is what this module exports; everything else is internal.
"""

from .config import MemoryConfig
from .embedders import Embedder, HashingEmbedder, OpenAIEmbedder, WordLlamaEmbedder
from .errors import (
    AlreadyDecidedError,
    AssignedError,
    ChainOrderError,
    ClaimedError,
    ConfigurationError,
    ConflictError,
    DecisionRequiredError,
    DuplicateFactError,
    EmbedderMismatchError,
    EmbeddingDimensionError,
    InvalidIngestError,
    InvalidIntervalError,
    InvalidStatementError,
    MalformedModelOutputError,
    MemdeskError,
    ModelError,
    NotFoundError,
    SecondOpinionError,
    StaleSupersessionError,
    TombstonedError,
    UndoRefusedError,
    UserInputError,
)
from .knowledge import NewFact
from .memory import Memory
from .models import (
    AuditEvent,
    BulkResult,
    Candidate,
    CandidateContext,
    CoveredClaim,
    Discarded,
    Episode,
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
from .review import KEEP, ReviewService

__all__ = [
    "KEEP",
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
    "DuplicateFactError",
    "Embedder",
    "EmbedderMismatchError",
    "EmbeddingDimensionError",
    "Episode",
    "Extraction",
    "Extractor",
    "GapItem",
    "HashingEmbedder",
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
    "QueueMark",
    "RetrievalResult",
    "RetrievedItem",
    "ReviewService",
    "SecondOpinionError",
    "StaleSupersessionError",
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

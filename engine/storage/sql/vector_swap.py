"""What a backend contributes to `memdesk reembed` (engine/storage/sql/reembed.py runs the
procedure): the staging table's types and how vectors are staged and swapped in. Its own module so
that `Store` (engine/storage/base.py) can name it while the procedure names `Store`, without an
import circle."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

STAGING = "reembed_staging"


class VectorSwap(ABC):
    """A backend's part of a re-embedding: its staging table, how it stages vectors, and how it
    swaps them in."""

    id_type: str
    vector_type: str
    """The staging table's column types in this backend (its ids, a staged vector)."""

    @property
    def staging_ddl(self) -> str:
        return (
            f"CREATE TABLE {STAGING} (knowledge_id {self.id_type} PRIMARY KEY"
            f" REFERENCES knowledge(id) ON DELETE CASCADE, embedding {self.vector_type} NOT NULL)"
        )

    @abstractmethod
    async def stage(self, conn: Any, rows: Sequence[tuple[int, list[float]]]) -> None:
        """Stage (or replace) the vectors of facts that still exist (one may have been erased
        since it was read)."""

    @abstractmethod
    async def hold_writes(self, conn: Any) -> None:
        """At the start of the switch: keep facts from being written until it commits (a fact
        written meanwhile would get a vector of the old width)."""

    @abstractmethod
    async def swap(self, conn: Any, width: int) -> None:
        """Every fact's vector replaced by its staged one, the store's vectors now `width` wide
        (the staging table is dropped afterwards by the caller)."""

"""The extraction seam. An extractor reads one episode's ORIGINAL messages and the user's existing
active facts, and returns what it predicted plus the gap items the prediction missed.

Predict-calibrate is Nemori's idea (arXiv:2508.03341), as memv implements it: store only what the
model failed to predict from what it already knows. `existing == []` is the cold start, handled
by name: there is nothing to predict from, so `prediction` is "" and every claim is a gap item.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..models import Episode, Extraction, Knowledge


@runtime_checkable
class Extractor(Protocol):
    name: str

    async def extract(self, episode: Episode, existing: list[Knowledge]) -> Extraction: ...

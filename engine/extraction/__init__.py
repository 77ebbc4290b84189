"""Extraction: capture, episodes, predict–calibrate extractors and the gated pipeline."""

from __future__ import annotations

from .base import Extractor

__all__ = ["Extractor", "OfflineExtractor", "OpenAIExtractor"]


def __getattr__(name: str) -> object:
    if name == "OfflineExtractor":
        from .offline import OfflineExtractor

        return OfflineExtractor
    if name == "OpenAIExtractor":
        from .openai_extractor import OpenAIExtractor

        return OpenAIExtractor
    raise AttributeError(name)

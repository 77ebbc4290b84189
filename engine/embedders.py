"""The embedding seam: the `Embedder` protocol and its two implementations.

`HashingEmbedder` is the offline default. It hashes words, word pairs and character trigrams into
signed buckets (the "hashing trick"), then L2-normalises: statements that share most of their words
land close together, unrelated ones near zero cosine. It needs no model download and gives the
same vector for the same text on every machine (blake2b, not Python's salted `hash`).

`OpenAIEmbedder` calls any OpenAI-compatible `/embeddings` endpoint through the `openai` package.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import os
import re
from collections import Counter
from typing import Any, Protocol, runtime_checkable

from .errors import ConfigurationError, ModelError

_WORD = re.compile(r"\w+", re.UNICODE)
_STOP = frozenset(
    ("a", "an", "the", "is", "are", "was", "were", "be", "been", "am", "of", "to", "in", "on", "at", "for", "and",
     "or", "with", "by", "as", "it", "its", "this", "that")
)


@runtime_checkable
class Embedder(Protocol):
    dimensions: int

    async def embed(self, texts: list[str]) -> list[list[float]]: ...


class HashingEmbedder:
    """Signed feature hashing of words, word pairs and character trigrams.

    Cost is bounded per text: only the first `max_chars` characters are featurised (a statement is
    at most 1,000 characters and a message 20,000 by default, so real texts are whole), and each
    distinct feature is hashed once however often it occurs. Without the bound one 10 MB message
    built ~10 million feature strings: 30 s and 1.7 GB to embed it.
    """

    name = "hashing"
    MAX_CHARS = 32_768

    def __init__(self, dimensions: int = 384, max_chars: int = MAX_CHARS) -> None:
        if dimensions < 8:
            raise ValueError("dimensions must be at least 8")
        if max_chars < 1:
            raise ValueError("max_chars must be positive")
        self.dimensions = dimensions
        self.max_chars = max_chars

    def _bucket(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        return value % self.dimensions, (1.0 if (value >> 63) & 1 else -1.0)

    def embed_one(self, text: str) -> list[float]:
        vec = [0.0] * self.dimensions
        words = [w.casefold() for w in _WORD.findall(text[: self.max_chars])]
        content = [w for w in words if w not in _STOP] or words
        weights: Counter[str] = Counter()
        for w in content:
            weights[f"w:{w}"] += 1.0
            padded = f"<{w}>"
            for i in range(max(1, len(padded) - 2)):
                weights[f"c:{padded[i : i + 3]}"] += 0.25
        for a, b in itertools.pairwise(content):
            weights[f"b:{a} {b}"] += 0.7
        if not weights:
            weights["empty"] = 1.0
        for feature, weight in weights.items():
            index, sign = self._bucket(feature)
            vec[index] += sign * weight
        norm = math.sqrt(sum(x * x for x in vec))
        if norm == 0.0:  # every feature cancelled out: fall back to a fixed non-zero direction
            index, _ = self._bucket("empty")
            vec[index] = 1.0
            return vec
        return [x / norm for x in vec]

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_one(t) for t in texts]


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp server).

    `dimensions` must be given: it fixes the vector table's width, and the database refuses to
    open with a different one. An answer of another width is refused here, before it reaches the
    store, with a message that names both widths. Transient failures are retried with backoff
    (`engine.openai_compat`).
    """

    name = "openai"

    def __init__(
        self,
        dimensions: int,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        batch_size: int = 128,
        *,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        client: Any = None,
    ) -> None:
        from .openai_compat import make_client

        if dimensions < 1:
            raise ConfigurationError("dimensions must be a positive integer")
        if batch_size < 1:
            raise ConfigurationError("batch_size must be a positive integer")
        self.dimensions = dimensions
        self.model = model or os.environ.get("MEMDESK_EMBED_MODEL", "text-embedding-3-small")
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._client = client if client is not None else make_client(base_url, api_key, timeout)

    async def embed(self, texts: list[str]) -> list[list[float]]:
        from .openai_compat import call_with_retries

        out: list[list[float]] = []
        what = f"embedding request to {self._client.base_url} (model {self.model})"
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            response = await call_with_retries(
                lambda batch=batch: self._client.embeddings.create(model=self.model, input=batch),
                what=what, max_retries=self.max_retries, backoff=self.backoff, max_backoff=self.max_backoff,
            )
            raw = getattr(response, "data", None)
            if not isinstance(raw, list):
                raise ModelError(f"{what}: the answer has no `data` list (not an embeddings response)")
            data = sorted(raw, key=lambda d: d.index)
            if [d.index for d in data] != list(range(len(batch))):
                raise ModelError(
                    f"{what}: returned {len(data)} vectors with indices {[d.index for d in data][:10]} "
                    f"for {len(batch)} texts"
                )
            for item in data:
                vector = [float(x) for x in item.embedding or []]
                if len(vector) != self.dimensions:
                    raise ModelError(
                        f"{what}: returned {len(vector)}-dimensional vectors, expected {self.dimensions}; "
                        f"configure OpenAIEmbedder(dimensions={len(vector)}) for this model (a database "
                        f"built with {self.dimensions} dimensions needs a model of that width)"
                    )
                if any(math.isnan(x) or math.isinf(x) for x in vector):
                    raise ModelError(f"{what}: returned NaN or infinite values")
                out.append(vector)
        return out

    async def aclose(self) -> None:
        await self._client.close()

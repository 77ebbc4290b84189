"""The embedding seam: the `Embedder` protocol and its implementations.

`WordLlamaEmbedder` is the offline default: a static semantic model (token embeddings averaged,
256 dimensions) whose weights and tokenizer ship inside the `wordllama` wheel, so it finds "User
is vegan" for "Do they eat meat?" with no download and no network. `MEMDESK_EMBEDDER` chooses the
default (`wordllama` or `hashing`); see `default_embedder`.

`HashingEmbedder` (lexical only) stays available. It hashes words, word pairs and character trigrams into
signed buckets (the "hashing trick"), then L2-normalises: statements that share most of their words
land close together, unrelated ones near zero cosine. It needs no model download and gives the
same vector for the same text on every machine (blake2b, not Python's salted `hash`).

`OpenAIEmbedder` calls any OpenAI-compatible `/embeddings` endpoint through the `openai` package.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import itertools
import logging
import math
import os
import re
import threading
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .errors import ConfigurationError, ModelError

_WORD = re.compile(r"\w+", re.UNICODE)
# The hashing embedder's stop words: part of its vector function, so frozen with the vectors
# stored by it (a change would need `memdesk reembed`). The text arm's query list
# (engine/retrieval.py `_STOP`) differs on purpose; its comment says why.
_STOP = frozenset(
    (
        "a",
        "an",
        "the",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "am",
        "of",
        "to",
        "in",
        "on",
        "at",
        "for",
        "and",
        "or",
        "with",
        "by",
        "as",
        "it",
        "its",
        "this",
        "that",
    )
)


@runtime_checkable
class Embedder(Protocol):
    dimensions: int

    async def embed(self, texts: list[str]) -> list[list[float]]: ...


@runtime_checkable
class ArrayEmbedder(Protocol):
    """An embedder that can also give a batch as one float32 matrix (a row a text, the same values
    `embed` gives): what a bulk import reads, compares and stores, without a Python float per
    dimension in between. Optional: `embed_matrix` converts any other embedder's lists."""

    async def embed_array(self, texts: list[str]) -> np.ndarray[Any, np.dtype[np.float32]]: ...


async def embed_matrix(embedder: Embedder, texts: list[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
    """`texts` embedded as one float32 matrix, through `embed_array` where the embedder has it."""
    if isinstance(embedder, ArrayEmbedder):
        return await embedder.embed_array(texts)
    vectors = await embedder.embed(texts)
    return np.asarray(vectors, dtype=np.float32).reshape(len(texts), embedder.dimensions if not vectors else -1)


@functools.lru_cache(maxsize=1 << 18)
def _bucket(feature: str, dimensions: int) -> tuple[int, float]:
    """A feature's signed bucket: blake2b, so the same on every machine. Cached: an import hashes
    the same words, trigrams and word pairs over and over."""
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dimensions, (1.0 if (value >> 63) & 1 else -1.0)


@functools.lru_cache(maxsize=1 << 16)
def _word_features(word: str) -> tuple[tuple[str, float], ...]:
    """A word's own features, in the order `embed_one` always added them: the word, then its
    character trigrams (with `<` and `>` at the ends)."""
    out = [(f"w:{word}", 1.0)]
    padded = f"<{word}>"
    out.extend((f"c:{padded[i : i + 3]}", 0.25) for i in range(max(1, len(padded) - 2)))
    return tuple(out)


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

    def embed_one(self, text: str) -> list[float]:
        row: list[float] = self._vectors([text])[0].tolist()
        return row

    async def embed(self, texts: list[str]) -> list[list[float]]:
        rows: list[list[float]] = self._vectors(texts).tolist()
        return rows

    async def embed_array(self, texts: list[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        """`embed` as one float32 matrix: what an import reads, compares and stores."""
        return self._vectors(texts).astype(np.float32)

    def _content(self, text: str) -> list[str]:
        words = [w.casefold() for w in _WORD.findall(text[: self.max_chars])]
        return [w for w in words if w not in _STOP] or words

    def _vectors(self, texts: list[str]) -> np.ndarray[Any, np.dtype[np.float64]]:
        """The texts' vectors, a row each, made for the whole batch at once. Each word's features
        come summed into its buckets (`_word_columns`): all multiples of 0.25, so summed in any
        order they are exact. The word pairs (0.7 each) are summed per pair and added after them in
        the order they first occur (`np.add.at` adds in the order given). The norm is a running
        sum of squares in index order (`cumsum`), not `sum`, which adds floats another way from
        Python 3.12 on. Only the first `max_chars` characters are read. The vectors are the same,
        bit for bit, as those of the one-text-at-a-time code this replaced (6,208 texts at three
        widths compared)."""
        dims = self.dimensions
        at: list[int] = []
        values: list[float] = []
        for row, text in enumerate(texts):
            base = row * dims
            content = self._content(text)
            for w in content:
                indices, weights = _word_columns(w, dims)
                at.extend([base + index for index in indices])
                values.extend(weights)
            for feature, weight in _pairs(content).items():
                index, sign = _bucket(feature, dims)
                at.append(base + index)
                values.append(sign * weight)
        flat = np.zeros(len(texts) * dims)
        np.add.at(flat, np.asarray(at, dtype=np.intp), np.asarray(values, dtype=np.float64))
        sums = flat.reshape(len(texts), dims)
        norms = np.sqrt(np.cumsum(sums * sums, axis=1)[:, -1]) if len(texts) else np.zeros(0)
        cancelled = norms == 0.0
        out: np.ndarray[Any, np.dtype[np.float64]] = sums / np.where(cancelled, 1.0, norms)[:, None]
        if cancelled.any():  # every feature cancelled out: fall back to a fixed non-zero direction
            out[cancelled] = 0.0
            out[cancelled, _bucket("empty", dims)[0]] = 1.0
        return out


def _pairs(content: list[str]) -> dict[str, float]:
    """The word-pair features of a text's words, each summed (0.7 an occurrence) in the order they
    first occur; a text without words has the one feature "empty"."""
    pairs: dict[str, float] = {}
    for a, b in itertools.pairwise(content):
        pair = f"b:{a} {b}"
        pairs[pair] = pairs.get(pair, 0.0) + 0.7
    if not content:
        pairs["empty"] = 1.0
    return pairs


@functools.lru_cache(maxsize=1 << 16)
def _word_columns(word: str, dimensions: int) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """A word's features (`_word_features`) summed into their signed buckets: (indices, values)."""
    touched: dict[int, float] = {}
    for feature, weight in _word_features(word):
        index, sign = _bucket(feature, dimensions)
        touched[index] = touched.get(index, 0.0) + sign * weight
    return tuple(touched), tuple(touched.values())


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


class WordLlamaEmbedder:
    """WordLlama `l2_supercat` (MIT): the mean of a token-embedding table over the text's Llama-2
    tokens, L2-normalised. Static (no attention), so it embeds a short text in tens of
    microseconds on a CPU, yet it places paraphrases together: "Which city is home for them?"
    lands near "User lives in Porto", which no lexical method can do.

    No network, ever: `WordLlama.load` looks for the tokenizer file in `<package>/tokenizer/` (the
    folder is really named `tokenizers/`), then in `<cache_dir>/tokenizers/`, and otherwise downloads
    it from Hugging Face. Passing the installed package's folder as `cache_dir` makes the second
    look succeed, and `disable_download=True` turns any miss into a FileNotFoundError instead of a
    request. The weights (`weights/l2_supercat_256.safetensors`) are found in the package itself.

    The model is loaded once per process and per width (a module-level cache: about 0.3 s plus
    about 1 s to import the package), in a worker thread on the first `embed`, so an
    event loop (the workstation) keeps drawing meanwhile. `dimensions` may be 64, 128 or 256: the
    weights are Matryoshka-trained, so the first 64 or 128 columns are a smaller embedding.

    Pooling is done here rather than by `WordLlamaInference.embed` (same maths: the mean of the
    token vectors, then L2 norm): the library pads a batch to its longest text, so one 20,000-
    character message in a batch of 64 would allocate 64 x 5,000 x 256 floats. Here each text
    costs its own tokens only, and a text over `_GATHER_LIMIT` tokens is pooled through a token
    histogram (vocabulary x dimensions, constant memory) instead of gathering one row per token.
    Each text is tokenised with `Tokenizer.encode`, not `encode_batch`: the batch call starts the
    tokenizers thread pool, after which every `fork` (subprocesses) prints a warning.
    """

    name = "wordllama"
    CONFIG = "l2_supercat"
    WIDTHS = (64, 128, 256)

    def __init__(self, dimensions: int = 256) -> None:
        if dimensions not in self.WIDTHS:
            raise ConfigurationError(f"WordLlamaEmbedder dimensions must be one of {self.WIDTHS}, not {dimensions}")
        self.dimensions = dimensions

    async def embed(self, texts: list[str]) -> list[list[float]]:
        rows: list[list[float]] = (await self.embed_array(texts)).tolist()
        return rows

    async def embed_array(self, texts: list[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        model = _WORDLLAMA.get(self.dimensions)
        if model is None:
            model = await asyncio.to_thread(_load_wordllama, self.dimensions)
        if len(texts) > _INLINE_TEXTS:  # a bulk insert or a re-embed: keep the event loop responsive
            return await asyncio.to_thread(model.embed, texts)
        return model.embed(texts)


_INLINE_TEXTS = 64
_GATHER_LIMIT = 2048
_WORDLLAMA: dict[int, _PooledWordLlama] = {}
_WORDLLAMA_LOCK = threading.Lock()


class _PooledWordLlama:
    """The loaded table and tokenizer of one width, and the pooling described on the embedder."""

    def __init__(self, table: Any, tokenizer: Any) -> None:
        self.table = np.ascontiguousarray(table, dtype=np.float32)
        self.tokenizer = tokenizer
        self.tokenizer.no_padding()  # WordLlamaInference turned padding on; this copy is ours alone
        self.tokenizer.no_truncation()
        # A text without a single token (empty, or only whitespace) gets one fixed unit vector, so
        # nothing downstream ever sees the NaN that 0 / |0| would give.
        self.empty = [1.0] + [0.0] * (self.table.shape[1] - 1)

    def embed(self, texts: list[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        vocab = self.table.shape[0]
        out = np.empty((len(texts), self.table.shape[1]), dtype=np.float32)
        for row, text in enumerate(texts):
            ids = np.asarray(self.tokenizer.encode(text, add_special_tokens=False).ids, dtype=np.int64)
            if ids.size == 0:
                out[row] = self.empty
                continue
            np.clip(ids, 0, vocab - 1, out=ids)
            if ids.size <= _GATHER_LIMIT:
                pooled = self.table[ids].sum(axis=0, dtype=np.float32)
            else:
                counts = np.bincount(ids, minlength=vocab).astype(np.float32)
                pooled = counts @ self.table
            norm = float(np.linalg.norm(pooled))
            out[row] = pooled / norm if norm > 0.0 else self.empty
        return out


def _load_wordllama(dimensions: int) -> _PooledWordLlama:
    cached = _WORDLLAMA.get(dimensions)
    if cached is not None:
        return cached
    with _WORDLLAMA_LOCK:
        cached = _WORDLLAMA.get(dimensions)
        if cached is not None:
            return cached
        try:
            wordllama = _import_wordllama()
        except ImportError as exc:
            raise ConfigurationError(
                f"the default embedder needs the `wordllama` package ({exc}); install it, or set "
                "MEMDESK_EMBEDDER=hashing for the lexical embedder"
            ) from exc
        from pathlib import Path

        package_dir = Path(wordllama.__file__).parent
        try:
            inference = wordllama.WordLlama.load(
                config=WordLlamaEmbedder.CONFIG,
                dim=256,
                trunc_dim=None if dimensions == 256 else dimensions,
                cache_dir=package_dir,
                disable_download=True,
            )
        except FileNotFoundError as exc:
            raise ConfigurationError(
                f"the WordLlama weights or tokenizer are missing from {package_dir} ({exc}); reinstall `wordllama`"
            ) from exc
        model = _PooledWordLlama(inference.embedding, inference.tokenizer)
        _WORDLLAMA[dimensions] = model
        return model


def _import_wordllama() -> Any:
    """`import wordllama`, undoing what its import does to logging.

    Its `__init__` and `inference` modules call `logging.basicConfig(level=INFO)`, which gives an
    unconfigured root logger a stderr handler at INFO: every later library INFO line would then
    be printed across the workstation's screen and into the CLI's output. When the root logger
    had no handler before, the handler and level it added are removed again."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    import wordllama

    if not handlers:
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
        root.setLevel(level)
    return wordllama


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
                functools.partial(self._client.embeddings.create, model=self.model, input=batch),
                what=what,
                max_retries=self.max_retries,
                backoff=self.backoff,
                max_backoff=self.max_backoff,
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


EMBEDDERS: dict[str, Callable[[], Embedder]] = {"wordllama": WordLlamaEmbedder, "hashing": HashingEmbedder}
DEFAULT_EMBEDDER = "wordllama"


def make_embedder(name: str) -> Embedder:
    """The offline embedder called `name` (`wordllama` or `hashing`), with its default width."""
    factory = EMBEDDERS.get(name.strip().casefold())
    if factory is None:
        raise ConfigurationError(f"unknown embedder {name!r}: choose one of {', '.join(EMBEDDERS)}")
    return factory()


def default_embedder() -> Embedder:
    """What `Memory(embedder=None)` and every command line door use: `$MEMDESK_EMBEDDER` if set
    (`wordllama` or `hashing`), else WordLlama. One environment variable rather than a flag on each
    command, so the workstation, the MCP server, the CLI and library code all agree."""
    return make_embedder(os.environ.get("MEMDESK_EMBEDDER") or DEFAULT_EMBEDDER)


def embedder_name(embedder: Embedder) -> str:
    """The name recorded in the database: the embedder's `name` (or its class name), and its
    `model` when it has one (`openai:text-embedding-3-small`): two models of one width are still
    two embedders whose vectors must not be mixed."""
    name = str(getattr(embedder, "name", None) or type(embedder).__name__)
    model = getattr(embedder, "model", None)
    return f"{name}:{model}" if model else name

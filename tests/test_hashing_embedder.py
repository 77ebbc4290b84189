"""The offline embedder: deterministic everywhere, never NaN, and useful: near-duplicate statements
score high and unrelated ones near zero. Thresholds were measured on this embedder (384 dims),
not assumed: reworded/re-punctuated pairs score ~0.9, a one-word change ~0.7, unrelated pairs
within ±0.15, and two statements about the same person that share only the name ~0.24.

Also here: the embedding dimension is stored in the database and checked when it is opened.
"""

from __future__ import annotations

import itertools
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine import EmbeddingDimensionError, HashingEmbedder, Memory
from engine.embedders import ArrayEmbedder, cosine, embed_matrix
from tests.engine_helpers import Clock, open_memory

# Same statement, different surface: case, punctuation, order, one extra word.
REWORDED = [
    ("Ana lives in Lisbon", "ana LIVES in lisbon!"),
    ("Ana works at Acme Corp as an engineer", "Ana works as an engineer at Acme Corp"),
    ("The user lives in Lisbon, Portugal", "The user lives in Lisbon Portugal now"),
    ("My sister Marta is a nurse in Porto", "my sister Marta is a nurse in Porto."),
]
# One word changed (a plural, a synonym): still close, less so.
ONE_WORD = [
    ("Ana is allergic to peanuts", "Ana is allergic to peanut"),
    ("Bob plays the oboe every Sunday", "Bob plays the oboe each Sunday"),
    ("The user prefers green tea in the morning", "The user prefers green tea in the mornings"),
]
UNRELATED = [
    "Ana lives in Lisbon",
    "Bob plays the oboe every Sunday",
    "Erik is allergic to peanuts",
    "The quarterly report is due on Friday",
    "My sister adopted two cats",
    "He prefers tea over coffee",
    "The train to Berlin leaves at noon",
    "Carla is training for a marathon",
    "Our kitchen needs a new dishwasher",
    "Diego teaches mathematics at a high school",
]


def sim(embedder: HashingEmbedder, a: str, b: str) -> float:
    return cosine(embedder.embed_one(a), embedder.embed_one(b))


def test_near_duplicates_score_high_and_unrelated_statements_low() -> None:
    e = HashingEmbedder()
    reworded = [sim(e, a, b) for a, b in REWORDED]
    one_word = [sim(e, a, b) for a, b in ONE_WORD]
    unrelated = [sim(e, a, b) for a, b in itertools.combinations(UNRELATED, 2)]
    assert min(reworded) > 0.85, reworded
    assert min(one_word) > 0.6, one_word
    assert max(abs(s) for s in unrelated) < 0.2, max(unrelated)
    # The margin that makes the vector arm rank a paraphrase above everything unrelated.
    assert min(one_word) - max(unrelated) > 0.4
    # Sharing only the subject's name is not being a near duplicate.
    assert sim(e, "Ana lives in Lisbon", "Ana is allergic to peanuts") < 0.3


async def test_deterministic_across_instances_and_batches() -> None:
    texts = ["Ana lives in Lisbon", "", "Zoë — crème brûlée!", "x" * 50]
    a, b = HashingEmbedder(), HashingEmbedder()
    assert await a.embed(texts) == await b.embed(texts)
    assert await a.embed(texts) == [a.embed_one(t) for t in texts]
    assert await a.embed(texts[::-1]) == (await a.embed(texts))[::-1]  # batch order does not matter
    assert a.embed_one("Ana lives in Lisbon") != a.embed_one("Ana lives in Porto")  # control


async def test_the_matrix_an_import_reads_holds_the_same_vectors() -> None:
    """`embed_array` (what `add_knowledge_many` asks for) is `embed` as float32 rows, entry for
    entry, the cancelled-out and empty texts' fixed direction included; an embedder without it
    (a caller's own) gets its lists converted by `embed_matrix` (control: the same matrix)."""
    embedder = HashingEmbedder(dimensions=64)
    texts = ["Ana lives in Lisbon", "", "!!!", "ana LIVES in lisbon!", "x " * 500, "Bob plays the oboe every Sunday"]
    lists = await embedder.embed(texts)
    matrix = await embed_matrix(embedder, texts)
    assert matrix.dtype == np.float32 and matrix.shape == (len(texts), 64)
    assert matrix.tolist() == np.asarray(lists, dtype=np.float32).tolist()

    class ListsOnly:
        dimensions = 64

        async def embed(self, texts: list[str]) -> list[list[float]]:
            return await embedder.embed(texts)

    assert not isinstance(ListsOnly(), ArrayEmbedder)
    assert (await embed_matrix(ListsOnly(), texts)).tolist() == matrix.tolist()
    assert (await embed_matrix(ListsOnly(), [])).shape[0] == 0


def test_deterministic_across_processes_with_different_hash_seeds() -> None:
    """Python's str hash is salted per process; the embedder must not depend on it."""
    code = "from engine import HashingEmbedder; print(HashingEmbedder().embed_one('Ana lives in Lisbon')[:16])"
    outputs = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", code],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
            cwd=Path(__file__).resolve().parent.parent,
        )
        outputs.add(done.stdout.strip())
    assert outputs == {str(HashingEmbedder().embed_one("Ana lives in Lisbon")[:16])}


@pytest.mark.parametrize(
    "text",
    ["", " ", "?!...", "—", "\u200b", "🙂🙂🙂", "a", "the of and", "word " * 20_000, "x" * 200_000, "\x00\x01"],
    ids=[
        "empty",
        "space",
        "punct",
        "dash",
        "zero-width",
        "emoji",
        "one-letter",
        "stopwords",
        "20k-words",
        "200k-chars",
        "control",
    ],
)
def test_never_nan_and_always_unit_length(text: str) -> None:
    vec = HashingEmbedder().embed_one(text)
    assert len(vec) == 384
    assert all(math.isfinite(x) for x in vec)
    assert math.isclose(math.sqrt(sum(x * x for x in vec)), 1.0, rel_tol=1e-9)


def test_dimensions_are_respected_and_validated() -> None:
    assert len(HashingEmbedder(64).embed_one("Ana lives in Lisbon")) == 64
    with pytest.raises(ValueError):
        HashingEmbedder(4)


async def test_the_database_refuses_another_embedding_dimension(store_target: str) -> None:
    db = store_target
    async with open_memory(db, Clock(), embedder=HashingEmbedder(384)) as mem:
        fact = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="s")

    with pytest.raises(EmbeddingDimensionError, match="384"):
        await Memory(db, embedder=HashingEmbedder(256)).open()

    # Positive control: the stored dimension opens, and the data is intact.
    async with open_memory(db, Clock(), embedder=HashingEmbedder(384)) as mem:
        assert [k.id for k in await mem.knowledge("ana")] == [fact.id]
        assert [i.knowledge.id for i in (await mem.retrieve("Lisbon", user_id="ana")).items] == [fact.id]


async def test_a_refused_open_leaves_the_memory_closed(store_target: str) -> None:
    db = store_target
    async with open_memory(db, Clock(), embedder=HashingEmbedder(128)):
        pass
    mem = Memory(db, embedder=HashingEmbedder(64))
    with pytest.raises(EmbeddingDimensionError):
        await mem.open()
    with pytest.raises(RuntimeError, match="not open"):
        _ = mem.store


# What the embedder gave before its batch rewrite (2026-12-05): a database's stored vectors stay
# comparable with new ones only while the same text gives the same bits.
GOLDEN_64 = {
    2: -0.07826844525206782,
    4: -0.21915164670578988,
    6: -0.14088320145372207,
    7: -0.31307378100827127,
    10: -0.15653689050413563,
    12: -0.07826844525206782,
    14: -0.31307378100827127,
    21: 0.29742009195785774,
    22: -0.15653689050413563,
    24: -0.07826844525206782,
    28: -0.0939221343024814,
    30: -0.31307378100827127,
    31: -0.07826844525206782,
    32: -0.07826844525206782,
    34: 0.31307378100827127,
    36: -0.07826844525206782,
    37: -0.3913422262603391,
    38: 0.07826844525206782,
    40: -0.07826844525206782,
    43: 0.07826844525206782,
    44: 0.07826844525206782,
    48: 0.29742009195785774,
    49: 0.21915164670578988,
    53: -0.07826844525206782,
    56: -0.07826844525206782,
    59: -0.15653689050413563,
    63: -0.07826844525206782,
}


async def test_a_vector_is_the_same_bits_as_before_on_every_path() -> None:
    text = "User plays the viola since 2012 (note 57)"
    embedder = HashingEmbedder(dimensions=64)
    expected = [GOLDEN_64.get(i, 0.0) for i in range(64)]
    assert embedder.embed_one(text) == expected
    assert (await embedder.embed(["Ana lives in Lisbon", text]))[1] == expected
    assert (await embedder.embed_array([text]))[0].tolist() == np.asarray(expected, dtype=np.float32).tolist()

"""The default embedder, WordLlama: loaded from the installed wheel with no network, the same
vectors as the library's own pooling, paraphrases found, and the default everywhere `Memory` gets
no embedder (MEMDESK_EMBEDDER chooses another).

The no-network proof runs in a fresh interpreter, so that importing the package, resolving its
files and loading them all happen with sockets blocked; the same script first shows that the
block is active (its control), so a pass cannot come from a block that never fired.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine import ConfigurationError, HashingEmbedder, Memory, WordLlamaEmbedder
from engine.embedders import _load_wordllama, cosine, default_embedder, embed_matrix

NO_NETWORK = r"""
import asyncio, json, socket, sys

class Blocked(RuntimeError):
    pass

def refuse(*args, **kwargs):
    raise Blocked(f"network use attempted: {args[1:] or args}")

socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse

# Control: the block is active (a connection attempt to a local port raises Blocked).
control = "not blocked"
try:
    socket.create_connection(("127.0.0.1", 9))
except Blocked:
    control = "blocked"
try:
    socket.socket().connect(("127.0.0.1", 9))
except Blocked:
    control += "+blocked"

from engine import Memory, WordLlamaEmbedder

async def main():
    async with Memory(sys.argv[1]) as mem:
        kinds = type(mem.embedder).__name__
        await mem.add_knowledge("ana", "User lives in Porto", actor="t")
        await mem.add_knowledge("ana", "User is vegan", actor="t")
        await mem.add_knowledge("ana", "User's sister is named Maria", actor="t")
        top = (await mem.retrieve("Do they eat meat?", user_id="ana", top_k=1)).items[0].knowledge.statement
    import wordllama
    return {"control": control, "embedder": kinds, "top": top, "loaded": "wordllama" in sys.modules}

print(json.dumps(asyncio.run(main())))
"""


def test_the_default_embedder_loads_and_answers_with_every_socket_blocked(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMDESK_")}
    env["HOME"] = str(tmp_path)  # no ~/.cache/wordllama to fall back on either
    done = subprocess.run(
        [sys.executable, "-c", NO_NETWORK, str(tmp_path / "offline.db")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=Path(__file__).parent.parent,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["control"] == "blocked+blocked"
    assert result["embedder"] == "WordLlamaEmbedder"
    assert result["loaded"] is True
    assert result["top"] == "User is vegan"
    assert not (tmp_path / ".cache").exists()


def test_importing_it_leaves_the_root_logger_alone() -> None:
    """wordllama's import calls logging.basicConfig(INFO); the loader undoes that. Control: a
    plain `import wordllama` does add the handler."""
    probe = (
        "import logging, sys\n"
        "if sys.argv[1] == 'engine':\n"
        "    from engine.embedders import _load_wordllama; _load_wordllama(256)\n"
        "else:\n"
        "    import wordllama\n"
        "print(len(logging.getLogger().handlers), logging.getLogger().level)\n"
    )
    out = {}
    for how in ("engine", "plain"):
        done = subprocess.run(
            [sys.executable, "-c", probe, how],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=Path(__file__).parent.parent,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        out[how] = done.stdout.split()
    assert out["engine"] == ["0", "30"]  # no handler, WARNING: Python's defaults
    assert out["plain"] == ["1", "20"]  # control: the package's import configures INFO on stderr


async def test_vectors_equal_the_librarys_own_pooling() -> None:
    import wordllama

    texts = [
        "User lives in Porto",
        "Which city is home for them?",
        "I LIVE IN HOPE!",
        "café naïve 😀 ünïcödé",
        "long " * 3000,
    ]  # over the gather limit: pooled through the token histogram
    ours = np.array(await WordLlamaEmbedder().embed(texts))
    library = wordllama.WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True).embed(
        texts, norm=True
    )
    assert ours.shape == (5, 256)
    assert np.allclose(ours, library, atol=1e-5)
    assert not np.allclose(ours[0], ours[1], atol=1e-2)  # control: different texts, different vectors


async def test_it_places_paraphrases_together_where_hashing_cannot() -> None:
    questions = {"Do they eat meat?": "User is vegan", "Which city is home for them?": "User lives in Porto"}
    facts = ["User is vegan", "User lives in Porto", "User's sister is named Maria", "User works as a nurse"]
    for embedder in (WordLlamaEmbedder(), HashingEmbedder()):
        vectors = dict(zip(facts, await embedder.embed(facts), strict=True))
        for question, answer in questions.items():
            [q] = await embedder.embed([question])
            best = max(facts, key=lambda f: cosine(q, vectors[f]))
            if isinstance(embedder, WordLlamaEmbedder):
                assert best == answer, question
            else:  # the lexical embedder shares no word with the answer, so it cannot rank it first
                assert cosine(q, vectors[answer]) < 0.05


async def test_empty_text_gets_a_finite_unit_vector_and_widths_are_checked() -> None:
    for text in ("", "   \n"):
        [vec] = await WordLlamaEmbedder().embed([text])
        assert all(math.isfinite(x) for x in vec)
        assert math.isclose(math.sqrt(sum(x * x for x in vec)), 1.0, rel_tol=1e-6)
    [small] = await WordLlamaEmbedder(64).embed(["User lives in Porto"])
    [full] = await WordLlamaEmbedder(256).embed(["User lives in Porto"])
    assert len(small) == 64 and len(full) == 256
    # Matryoshka: the 64-wide vector is the normalised head of the full one
    head = np.array(full[:64]) / np.linalg.norm(full[:64])
    assert np.allclose(small, head, atol=1e-5)
    with pytest.raises(ConfigurationError, match="64, 128, 256"):
        WordLlamaEmbedder(300)


async def test_a_batch_larger_than_the_inline_limit_gives_the_same_vectors() -> None:
    texts = [f"User lives in city number {i}" for i in range(150)]  # > 64: embedded in a worker thread
    batch = await WordLlamaEmbedder().embed(texts)
    assert batch == _load_wordllama(256).embed(texts).tolist()
    assert batch[3] == (await WordLlamaEmbedder().embed([texts[3]]))[0]


async def test_the_matrix_an_import_reads_holds_the_same_vectors() -> None:
    """`embed_array` (what `add_knowledge_many` asks for) gives `embed`'s values as float32 rows,
    the empty text's fixed vector included."""
    texts = ["User lives in Porto", "", "   ", "User is vegan"]
    matrix = await embed_matrix(WordLlamaEmbedder(), texts)
    assert matrix.dtype == np.float32 and matrix.shape == (4, 256)
    assert matrix.tolist() == await WordLlamaEmbedder().embed(texts)


def test_memory_defaults_to_wordllama_and_the_environment_chooses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMDESK_EMBEDDER", raising=False)
    assert isinstance(Memory(":memory:").embedder, WordLlamaEmbedder)
    assert isinstance(default_embedder(), WordLlamaEmbedder)
    monkeypatch.setenv("MEMDESK_EMBEDDER", "hashing")
    assert isinstance(Memory(":memory:").embedder, HashingEmbedder)
    explicit = HashingEmbedder(64)
    assert Memory(":memory:", embedder=explicit).embedder is explicit
    monkeypatch.setenv("MEMDESK_EMBEDDER", "bert")
    with pytest.raises(ConfigurationError, match="wordllama, hashing"):
        Memory(":memory:")


async def test_default_retrieval_finds_facts_that_share_no_word_with_the_question(store_target: str) -> None:
    async with Memory(store_target) as mem:
        assert isinstance(mem.embedder, WordLlamaEmbedder)
        for statement in (
            "User lives in Porto",
            "User is vegan",
            "User's sister is named Maria",
            "User works as a nurse",
            "User plays the cello",
        ):
            await mem.add_knowledge("ana", statement, actor="t")
        top = await mem.retrieve("Do they eat meat?", user_id="ana", top_k=1)
        assert [i.knowledge.statement for i in top.items] == ["User is vegan"]
        assert top.items[0].text_rank is None  # found by the vector arm alone: no shared word


def test_the_recorded_name_tells_models_apart() -> None:
    from engine import OpenAIEmbedder
    from engine.embedders import embedder_name

    class Custom:
        dimensions = 8

        async def embed(self, texts: list[str]) -> list[list[float]]:
            return [[1.0] * 8 for _ in texts]

    assert embedder_name(WordLlamaEmbedder()) == "wordllama"
    assert embedder_name(HashingEmbedder()) == "hashing"
    assert embedder_name(Custom()) == "Custom"
    small = OpenAIEmbedder(dimensions=8, model="text-embedding-3-small", client=object())
    large = OpenAIEmbedder(dimensions=8, model="text-embedding-3-large", client=object())
    assert embedder_name(small) == "openai:text-embedding-3-small" != embedder_name(large)

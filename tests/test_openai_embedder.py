"""OpenAIEmbedder with the REAL `openai` client against a scripted server on 127.0.0.1: order and
width of the vectors, answers of the wrong shape, retries, and a Memory built on it (the dimension
is recorded and checked when the database is opened again)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from openai_server import Reply, ScriptedOpenAIServer, embedding_reply, openai_server

from engine import EmbeddingDimensionError, HashingEmbedder, Memory, ModelError, OpenAIEmbedder

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MEMDESK_BASE_URL", "MEMDESK_EMBED_MODEL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with openai_server() as s:
        yield s


def embedder(server: ScriptedOpenAIServer, dimensions: int = 4, **kw: Any) -> OpenAIEmbedder:
    kw.setdefault("backoff", 0.01)
    return OpenAIEmbedder(dimensions, model="embed-test", base_url=server.url + "/v1", timeout=5.0, **kw)


async def test_vectors_come_back_in_input_order_with_the_configured_width(server: ScriptedOpenAIServer) -> None:
    emb = embedder(server)
    vectors = [[1.0, 0, 0, 0], [0, 1.0, 0, 0], [0, 0, 1.0, 0]]
    server.script(embedding_reply(vectors, order=[2, 0, 1]))  # the API may send items out of order
    assert await emb.embed(["a", "b", "c"]) == vectors
    [request] = server.requests
    assert request.path == "/v1/embeddings"
    assert request.json["model"] == "embed-test" and request.json["input"] == ["a", "b", "c"]
    assert await emb.embed([]) == [] and len(server.requests) == 1  # nothing to embed, no request
    await emb.aclose()


async def test_batches_are_split_and_reassembled(server: ScriptedOpenAIServer) -> None:
    emb = embedder(server, batch_size=2)
    server.script(embedding_reply([[1.0, 0, 0, 0], [0, 1.0, 0, 0]]), embedding_reply([[0, 0, 1.0, 0]]))
    assert await emb.embed(["a", "b", "c"]) == [[1.0, 0, 0, 0], [0, 1.0, 0, 0], [0, 0, 1.0, 0]]
    assert [r.json["input"] for r in server.requests] == [["a", "b"], ["c"]]
    await emb.aclose()


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (
            embedding_reply([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]),
            r"returned 3-dimensional vectors, expected 4.*dimensions=3",
        ),
        (embedding_reply([[1.0, 0, 0, 0]]), r"returned 1 vectors .* for 2 texts"),
        (embedding_reply([[1.0, 0, 0, 0], [0, 1.0, 0, 0]], order=[0, 0]), r"indices \[0, 0\] for 2 texts"),
        (Reply(200, {"object": "list"}), r"out of contract: No embedding data|no `data` list"),
        (Reply(401, {"error": {"message": "bad key"}}), r"HTTP 401"),
    ],
    ids=["wrong-width", "too-few", "repeated-index", "no-data", "unauthorised"],
)
async def test_answers_out_of_contract_are_model_errors(
    server: ScriptedOpenAIServer, reply: Reply, expected: str
) -> None:
    emb = embedder(server)
    server.script(reply)
    with pytest.raises(ModelError, match=expected):
        await emb.embed(["a", "b"])
    assert len(server.requests) == 1  # none of these is retried
    await emb.aclose()


async def test_429_then_success_is_retried(server: ScriptedOpenAIServer) -> None:
    emb = embedder(server)
    server.script(
        Reply(429, {"error": {"message": "rate limited"}}, headers={"retry-after": "0"}),
        Reply(503, {"error": {"message": "overloaded"}}),
        embedding_reply([[0.6, 0.8, 0, 0]]),
    )
    assert await emb.embed(["a"]) == [[0.6, 0.8, 0, 0]]
    assert len(server.requests) == 3
    await emb.aclose()


async def test_memory_on_the_openai_embedder_stores_retrieves_and_checks_the_dimension(
    store_target: str, server: ScriptedOpenAIServer
) -> None:
    hashing = HashingEmbedder(16)
    server.embed_fallback = lambda texts: [hashing.embed_one(t) for t in texts]
    path = store_target
    emb = embedder(server, dimensions=16)
    async with Memory(path, embedder=emb, clock=lambda: T0) as mem:
        fact = await mem.add_knowledge("ana", "Ana keeps bees in her garden", actor="support")
        await mem.add_knowledge("bob", "Ana keeps bees in her garden", actor="support")
        hits = (await mem.retrieve("Ana keeps bees in her garden", user_id="ana")).items
        assert [(h.knowledge.id, h.knowledge.user_id) for h in hits] == [(fact.id, "ana")]  # not bob's twin
        # An endpoint failure on a write leaves nothing behind.
        server.script(Reply(400, {"error": {"message": "input too long"}}))
        with pytest.raises(ModelError, match="HTTP 400"):
            await mem.add_knowledge("ana", "Ana plays the cello", actor="support")
        assert [k.statement for k in await mem.knowledge("ana")] == ["Ana keeps bees in her garden"]
    assert {tuple(r.json["input"]) for r in server.requests} >= {("Ana keeps bees in her garden",)}

    wider = embedder(server, dimensions=32)
    with pytest.raises(EmbeddingDimensionError, match="16-dimensional"):
        async with Memory(path, embedder=wider):
            pass
    same = embedder(server, dimensions=16)
    async with Memory(path, embedder=same, clock=lambda: T0) as mem:  # positive control: same width opens
        assert [h.knowledge.id for h in (await mem.retrieve("bees", user_id="ana")).items] == [fact.id]
    for client in (emb, wider, same):
        await client.aclose()

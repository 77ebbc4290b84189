"""A scripted OpenAI-compatible HTTP server for tests: the real `openai` client talks to it over
127.0.0.1, so retries, timeouts and response parsing are exercised exactly as in production.

Usage (the whole API):

    from openai_server import Reply, chat_reply, embedding_reply, models_reply, openai_server

    with openai_server() as server:                       # binds 127.0.0.1 on a free port
        server.script(Reply(429, {"error": {"message": "slow down"}}, headers={"retry-after": "0"}),
                      chat_reply({"items": []}))          # answered in order, whatever the path
        client = AsyncOpenAI(base_url=server.url + "/v1", api_key="x")
        ...
        server.requests[0].path, server.requests[0].json  # what the client sent, in order

Replies are consumed first-in first-out by POST /v1/chat/completions, POST /v1/embeddings and
GET /v1/models alike (`models_reply` builds the last).
When the script is empty, `/v1/embeddings` answers with `embed_fallback(inputs)` if one is set
(useful when a Memory embeds many times), and otherwise the server answers 418 "script exhausted",
a status the client does not retry, so a test that under-scripts fails loudly instead of hanging.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Json = dict[str, Any] | list[Any]


@dataclass(slots=True)
class Reply:
    """One scripted answer. A dict/list body is sent as JSON; str/bytes are sent raw (for
    malformed bodies). `delay` seconds pass before the answer is written (for client timeouts)."""

    status: int = 200
    body: Json | str | bytes = field(default_factory=dict)
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Recorded:
    """A request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    json: Any


def chat_reply(content: Json | str, *, model: str = "test", status: int = 200, delay: float = 0.0) -> Reply:
    """A chat.completion whose single choice carries `content` (a dict is JSON-encoded, a str is
    sent as the message text verbatim, so malformed model output can be scripted)."""
    text = content if isinstance(content, str) else json.dumps(content)
    body = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
    return Reply(status, body, delay)


def embedding_reply(vectors: list[list[float]], *, model: str = "test-embed", order: list[int] | None = None) -> Reply:
    """An embeddings answer; `order` lists the indices in the order the data items are sent (the
    API gives an `index` per item and does not promise order)."""
    indices = order if order is not None else list(range(len(vectors)))
    data = [{"object": "embedding", "index": i, "embedding": vectors[i]} for i in indices]
    return Reply(
        200, {"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": 1, "total_tokens": 1}}
    )


def models_reply(*ids: str) -> Reply:
    return Reply(
        200, {"object": "list", "data": [{"id": i, "object": "model", "created": 0, "owned_by": "test"} for i in ids]}
    )


class ScriptedOpenAIServer:
    def __init__(self) -> None:
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.requests: list[Recorded] = []
        self.embed_fallback: Callable[[list[str]], list[list[float]]] | None = None
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        host, port = self._httpd.server_address[:2]
        self.url = f"http://{host}:{port}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="openai-test-server", daemon=True
        )

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    @property
    def pending(self) -> int:
        """Scripted replies not consumed yet."""
        with self._lock:
            return len(self._replies)

    def paths(self) -> list[str]:
        return [r.path for r in self.requests]

    # -- plumbing ---------------------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping on a delay
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _next(self, recorded: Recorded) -> Reply:
        with self._lock:
            self.requests.append(recorded)
            if self._replies:
                return self._replies.popleft()
        if recorded.path.endswith("/embeddings") and self.embed_fallback is not None:
            inputs = recorded.json.get("input") if isinstance(recorded.json, dict) else None
            texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
            return embedding_reply(self.embed_fallback(texts))
        return Reply(418, {"error": {"message": f"script exhausted at {recorded.path}", "type": "test"}})

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                return

            def do_GET(self) -> None:
                recorded = Recorded("GET", self.path, {k.lower(): v for k, v in self.headers.items()}, None)
                if self.path != "/v1/models":
                    with server._lock:
                        server.requests.append(recorded)
                    self._send(Reply(404, {"error": {"message": f"no route {self.path}"}}))
                    return
                self._reply(server._next(recorded))

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    payload: Any = json.loads(raw) if raw else None
                except ValueError:
                    payload = raw.decode("utf-8", "replace")
                recorded = Recorded("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, payload)
                if self.path not in ("/v1/chat/completions", "/v1/embeddings"):
                    with server._lock:
                        server.requests.append(recorded)
                    self._send(Reply(404, {"error": {"message": f"no route {self.path}"}}))
                    return
                self._reply(server._next(recorded))

            def _reply(self, reply: Reply) -> None:
                if reply.delay and server._stopping.wait(reply.delay):
                    return
                self._send(reply)

            def _send(self, reply: Reply) -> None:
                if isinstance(reply.body, bytes):
                    data, ctype = reply.body, "application/json"
                elif isinstance(reply.body, str):
                    data, ctype = reply.body.encode("utf-8"), "application/json"
                else:
                    data, ctype = json.dumps(reply.body).encode("utf-8"), "application/json"
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", ctype)
                    self.send_header("content-length", str(len(data)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    self.close_connection = True

        return Handler


@contextmanager
def openai_server() -> Iterator[ScriptedOpenAIServer]:
    """Start a scripted server on 127.0.0.1 (free port) for the duration of the block."""
    server = ScriptedOpenAIServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()

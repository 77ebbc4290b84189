"""What the OpenAI-backed extractor and embedder share: building the client and one bounded retry
loop.

Why our own loop instead of the client's `max_retries`: the client's backoff starts at 0.5 s and
cannot be tuned per call, its retry count is invisible to us, and a body that is not JSON escapes
it as a bare `json.JSONDecodeError`. Here the client runs with `max_retries=0`, and this loop
retries exactly the transient failures (timeouts, connection errors, 408/409/429, 5xx) with
exponential backoff, honouring `retry-after`, and turns everything else into a typed `ModelError`
whose message names the endpoint and the cause.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from .errors import ConfigurationError, MalformedModelOutputError, ModelError

T = TypeVar("T")

PLACEHOLDER_KEY = "not-needed"  # local OpenAI-compatible servers accept any key
RETRYABLE_STATUS = frozenset({408, 409, 429})


def make_client(base_url: str | None, api_key: str | None, timeout: float) -> Any:
    """An `openai.AsyncOpenAI` with retries off (the caller's loop owns them).

    A base URL without a key gets a placeholder key, since local servers need none; the real
    OpenAI endpoint without a key is a configuration error named as such, not the client's
    generic complaint."""
    import openai

    url = base_url or os.environ.get("MEMDESK_BASE_URL") or None
    key = api_key or os.environ.get("OPENAI_API_KEY") or (PLACEHOLDER_KEY if url else None)
    if key is None:
        raise ConfigurationError(
            "no API key for the OpenAI endpoint: set OPENAI_API_KEY, or point MEMDESK_BASE_URL "
            "(base_url=...) at an OpenAI-compatible server"
        )
    return openai.AsyncOpenAI(base_url=url, api_key=key, timeout=timeout, max_retries=0)


def _retry_after(exc: Exception) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            return max(0.0, float(raw) / divisor)
        except ValueError:
            continue  # an HTTP date: fall back to our own backoff
    return None


def _transient(exc: Exception) -> bool:
    import openai

    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in RETRYABLE_STATUS or exc.status_code >= 500
    return False


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    *,
    what: str,
    max_retries: int,
    backoff: float,
    max_backoff: float,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> T:
    """Run `call`; on a transient failure wait and try again, at most `max_retries` more times.

    The wait is `backoff * 2**attempt` (or the server's `retry-after`), capped at `max_backoff`.
    Raises ModelError (MalformedModelOutputError for a body that is not JSON or not the API's shape) once retries are
    spent or on a failure retrying cannot fix (400, 401, 404...)."""
    import openai

    attempt = 0
    while True:
        try:
            return await call()
        except openai.OpenAIError as exc:
            if _transient(exc) and attempt < max_retries:
                hinted = _retry_after(exc)
                delay = hinted if hinted is not None else backoff * (2**attempt)
                await sleep(min(delay, max_backoff))
                attempt += 1
                continue
            tries = f" after {attempt + 1} attempts" if attempt else ""
            status = getattr(exc, "status_code", None)
            cause = f"HTTP {status}: {exc}" if status is not None else f"{type(exc).__name__}: {exc}"
            raise ModelError(f"{what} failed{tries}: {cause}") from exc
        except json.JSONDecodeError as exc:  # the client parses the body itself and lets this escape
            raise MalformedModelOutputError(f"{what} answered with a body that is not JSON: {exc}") from exc
        except ValueError as exc:  # the client's own shape checks (e.g. "No embedding data received")
            raise MalformedModelOutputError(f"{what} answered out of contract: {exc}") from exc


class ChatEndpoint:
    """What every chat-completion client of memdesk configures the same way (the extractor, the
    value judge): base_url / model / api_key from arguments or MEMDESK_BASE_URL / MEMDESK_MODEL /
    OPENAI_API_KEY, an injected `client` for tests, and the retry settings `call_with_retries`
    reads. `what` names the caller in the configuration error."""

    model: str | None = None

    def __init__(
        self,
        what: str,
        base_url: str | None,
        model: str | None,
        api_key: str | None,
        *,
        timeout: float,
        max_retries: int,
        client: Any,
        backoff: float,
        max_backoff: float,
        temperature: float | None,
    ) -> None:
        url = base_url or os.environ.get("MEMDESK_BASE_URL") or None
        self.model = model or os.environ.get("MEMDESK_MODEL") or None
        if self.model is None and url is None and client is None:
            raise ConfigurationError(
                f"{what} needs a model or an endpoint: pass model=/base_url= or set MEMDESK_MODEL "
                "(and MEMDESK_BASE_URL for a local OpenAI-compatible server)"
            )
        if max_retries < 0:
            raise ConfigurationError("max_retries must be 0 or more")
        self._client = client if client is not None else make_client(url, api_key, timeout)
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.temperature = temperature

    @property
    def endpoint(self) -> str:
        return str(getattr(self._client, "base_url", "the OpenAI endpoint"))

    async def aclose(self) -> None:
        await self._client.close()

    async def _resolve_model(self) -> str:
        """A local server configured by URL alone: ask it which model it serves (vLLM, llama.cpp
        and Ollama all list theirs), once."""
        if self.model is not None:
            return self.model
        page = await call_with_retries(
            lambda: self._client.models.list(),
            what=f"listing models at {self.endpoint}",
            max_retries=self.max_retries,
            backoff=self.backoff,
            max_backoff=self.max_backoff,
        )
        ids = [m.id for m in getattr(page, "data", None) or [] if getattr(m, "id", None)]
        if not ids:
            raise ModelError(f"{self.endpoint} lists no models; set MEMDESK_MODEL (model=...)")
        self.model = ids[0]
        return self.model

    async def _chat_json(self, messages: list[dict[str, str]], step: str) -> tuple[str, str]:
        """One JSON-mode chat completion, retried as `call_with_retries` says: the answer's text
        and the name of the request (`what`, for the caller's own error messages). Raises
        MalformedModelOutputError for an answer with no choices or no text, ModelError for a
        refusal."""
        model = await self._resolve_model()
        kwargs: dict[str, Any] = {"model": model, "messages": messages, "response_format": {"type": "json_object"}}
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        what = f"{step} request to {self.endpoint} (model {model})"
        response = await call_with_retries(
            lambda: self._client.chat.completions.create(**kwargs),
            what=what,
            max_retries=self.max_retries,
            backoff=self.backoff,
            max_backoff=self.max_backoff,
        )
        choices = getattr(response, "choices", None) or []
        if not choices or getattr(choices[0], "message", None) is None:
            raise MalformedModelOutputError(f"{what}: the answer has no choices (not a chat completion)")
        message = choices[0].message
        if getattr(message, "refusal", None):
            raise ModelError(f"{what}: the model refused: {message.refusal}")
        content = message.content
        if not isinstance(content, str) or not content.strip():
            reason = getattr(choices[0], "finish_reason", None)
            raise MalformedModelOutputError(f"{what}: the answer is empty (finish_reason={reason})")
        return content, what

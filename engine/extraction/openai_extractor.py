"""`OpenAIExtractor`: predict–calibrate with any OpenAI-compatible chat endpoint.

Two calls per episode when the user has existing facts (predict from the facts, then calibrate
against the original messages), one call on the cold start. Every answer is requested as a JSON
object and validated by pydantic before anything reaches the pipeline: a malformed or
schema-violating answer raises MalformedModelOutputError, so the pipeline marks the episode failed
(retryable) and stores nothing, instead of queueing half-parsed guesses.

`supersedes` and `predicted_by` handles are normalised ("[K12]", "K12", 12 -> "12", the id the
pipeline looks up) but never checked here: the pipeline is the one place that decides whether a
handle names an active fact of this user that was shown, and counts the ones it drops.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..categories import normalised
from ..claims import known_slot
from ..errors import MalformedModelOutputError, UserInputError
from ..models import CoveredClaim, Episode, Extraction, GapItem, Knowledge
from ..openai_compat import ChatEndpoint
from ..timeutil import parse_datetime
from .prompts import PROMPT_VERSION, calibration_messages, cold_start_messages, prediction_messages

_HANDLE = re.compile(r"^\[?\s*[Kk]\s*(\d+)\s*\]?$")


def normalise_handle(value: object) -> str | None:
    """'K12', '[K12]', '12' and 12 all name knowledge id 12; anything else passes through as text
    (the pipeline drops and counts it)."""
    if value is None:
        return None
    text = str(value).strip()
    if not text or text.lower() in ("null", "none"):
        return None
    match = _HANDLE.match(text)
    return match.group(1) if match else text


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore")


class PredictionAnswer(_Answer):
    prediction: str


class ItemAnswer(_Answer):
    statement: str = Field(min_length=1)
    kind: Literal["new", "update", "contradiction"] = "new"
    supersedes: str | int | None = None
    confidence: float = Field(ge=0.0, le=1.0)
    valid_at: datetime | None = None
    invalid_at: datetime | None = None
    evidence: str = ""
    # Optional: the model's special-category label. An unknown label is dropped (None), never a
    # schema violation: the offline rules still label the statement at insert.
    category: str | None = None
    # Optional: the claim slot the model reads the statement as (engine.claims). A slot the claim
    # model does not know is dropped (None), never a schema violation and never trusted: the
    # statement is then read by the lexicons alone, or stays free text.
    slot: str | None = None

    @field_validator("category", mode="before")
    @classmethod
    def _category(cls, value: object) -> str | None:
        return normalised(value)

    @field_validator("slot", mode="before")
    @classmethod
    def _slot(cls, value: object) -> str | None:
        return known_slot(value)

    @field_validator("valid_at", "invalid_at", mode="before")
    @classmethod
    def _date(cls, value: object) -> datetime | None:
        """ISO dates or datetimes, read as UTC when they carry no zone; anything else is a schema
        violation (a guessed date would silently misplace the fact in time)."""
        if value is None or (isinstance(value, str) and value.strip().lower() in ("", "null", "none")):
            return None
        if not isinstance(value, str):
            raise ValueError(f"expected an ISO date string or null, got {value!r}")
        try:
            return parse_datetime(value)
        except UserInputError as exc:
            raise ValueError(str(exc)) from None

    def to_gap_item(self) -> GapItem:
        return GapItem(
            statement=self.statement.strip(),
            kind=self.kind,
            supersedes=normalise_handle(self.supersedes),
            confidence=self.confidence,
            valid_at=self.valid_at,
            invalid_at=self.invalid_at,
            evidence=self.evidence.strip(),
            category=self.category,
            slot=self.slot,
        )


class CoveredAnswer(_Answer):
    statement: str = Field(min_length=1)
    predicted_by: str | int | None = None


class ColdStartAnswer(_Answer):
    items: list[ItemAnswer]


class CalibrationAnswer(_Answer):
    items: list[ItemAnswer]
    covered: list[CoveredAnswer] = Field(default_factory=list)


class OpenAIExtractor(ChatEndpoint):
    """Extractor over `openai.AsyncOpenAI` chat completions with JSON output.

    Transient failures (timeouts, connection errors, 429, 5xx) are retried up to `max_retries`
    times with exponential backoff from `backoff` seconds (or the server's retry-after), capped
    at `max_backoff`; see `engine.openai_compat`. `temperature` is sent only when given: some
    models (reasoning models among them) refuse any value but their default.
    """

    name = "openai"
    model: str | None = None  # set in __init__ (argument, $MEMDESK_MODEL, or what the endpoint serves)
    prompt_version: str | None = PROMPT_VERSION

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        max_retries: int = 3,
        client: Any = None,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        temperature: float | None = None,
    ) -> None:
        ChatEndpoint.__init__(
            self,
            "OpenAIExtractor",
            base_url,
            model,
            api_key,
            timeout=timeout,
            max_retries=max_retries,
            client=client,
            backoff=backoff,
            max_backoff=max_backoff,
            temperature=temperature,
        )

    async def extract(self, episode: Episode, existing: list[Knowledge]) -> Extraction:
        if not existing:
            answer = await self._ask(cold_start_messages(episode.messages), ColdStartAnswer, "cold start")
            return Extraction(prediction="", items=[i.to_gap_item() for i in answer.items])
        predicted = await self._ask(
            prediction_messages(existing, episode.title, episode.messages), PredictionAnswer, "prediction"
        )
        prediction = predicted.prediction.strip()
        calibrated = await self._ask(
            calibration_messages(existing, prediction, episode.messages), CalibrationAnswer, "calibration"
        )
        return Extraction(
            prediction=prediction,
            items=[i.to_gap_item() for i in calibrated.items],
            covered=[CoveredClaim(c.statement.strip(), normalise_handle(c.predicted_by)) for c in calibrated.covered],
        )

    # -- one call ---------------------------------------------------------------------------------

    async def _ask(self, messages: list[dict[str, str]], schema: type[_Answer], step: str) -> Any:
        content, what = await self._chat_json(messages, step)
        try:
            return schema.model_validate_json(_strip_fence(content))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(answer)'}: {err['msg']}" for err in exc.errors()[:5]
            )
            kind = (
                "is not valid JSON"
                if any(e["type"] == "json_invalid" for e in exc.errors())
                else "does not fit the schema"
            )
            raise MalformedModelOutputError(
                f"{what}: the {step} answer {kind}: {problems}; answer began {content[:120]!r}"
            ) from None


def _strip_fence(text: str) -> str:
    """Some OpenAI-compatible servers wrap JSON mode output in a ```json fence anyway."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        if stripped.rstrip().endswith("```"):
            stripped = stripped.rstrip()[:-3]
    return stripped

"""The extraction seam. An extractor reads one episode's ORIGINAL messages and what the store
already holds about the user, and returns what it predicted plus the gap items the prediction
missed.

Predict-calibrate is Nemori's idea (arXiv:2508.03341), as memv implements it: store only what the
model failed to predict from what it already knows. `existing == []` is the cold start, handled
by name: there is nothing to predict from, so `prediction` is "" and every claim is a gap item.

What `existing` holds, and how an extractor names its entries
-------------------------------------------------------------
`existing` is the user's ACTIVE facts most related to the episode AND the user's PENDING
candidates (what earlier episodes queued and nobody has decided yet). Both are `Knowledge`
records, so an extractor written for facts needs no change, but a pending candidate is marked:

- `status == "pending"` (a stored fact never is), `candidate_id` is the candidate's id;
- `id` is the NEGATIVE candidate id (`-candidate_id`). Fact ids are positive, so the handle an
  extractor already uses, `str(k.id)` (or "K" + id in the OpenAI prompts), names exactly one
  thing: "12" is fact 12, "-7" is pending candidate 7. `handle(k)` returns it; `parse_handle`
  reads one back ("12", "K12", "[K-7]", "-7").

Why both: a batch of weeks of conversation is processed before anyone reviews it, so "I moved to
Porto" usually arrives while "lives in Lisbon" is still pending. Predicting from approved facts
only made every such change a `new` candidate, and approving both kept two contradicting facts.
An item whose `supersedes` names a pending candidate becomes a candidate chained to it
(`Candidate.supersedes_candidate_id`); the pipeline checks every handle against what it showed.

Attributes: `name` (stored on each run), `model` and `prompt_version` (None where they do not
apply, e.g. the rule-based extractor has no model); `stats` splits approval rates by all three.
Optional: `batchable = True` declares that `extract` computes in-process and never waits (no
network, no model server); the pipeline may then extract several episodes inside one write
transaction, bounded to a fraction of a second (the offline extractor does). Absent means False:
each episode is extracted with no lock held, as a model call must be.
"""

from __future__ import annotations

import re
from typing import Literal, Protocol, runtime_checkable

from ..models import Candidate, Episode, Extraction, Knowledge


@runtime_checkable
class Extractor(Protocol):
    """What the pipeline runs on an episode. `name`, `model` and `prompt_version` are recorded on
    each extraction run; read-only here, so an extractor may declare them narrower (a plain `str`)."""

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str | None: ...

    @property
    def prompt_version(self) -> str | None: ...

    async def extract(self, episode: Episode, existing: list[Knowledge]) -> Extraction: ...


@runtime_checkable
class Calibrating(Extractor, Protocol):
    """An extractor that sets its confidence from the reviewers' past decisions per rule (the
    offline one): the pipeline fills `calibration` ({rule: (approved, rejected)}) before it runs."""

    calibration: dict[str, tuple[int, int]]


def handle(record: Knowledge) -> str:
    """The handle an extractor names an `existing` record by: "12" (fact), "-7" (pending candidate)."""
    return str(record.id)


def is_pending(record: Knowledge) -> bool:
    return record.status == "pending"


def pending_record(candidate: Candidate) -> Knowledge:
    """A pending candidate as an `existing` record (see the module docstring)."""
    return Knowledge(
        id=-candidate.id,
        user_id=candidate.user_id,
        statement=candidate.statement,
        status="pending",
        created_at=candidate.created_at,
        created_by=candidate.created_by or "extraction",
        confidence=candidate.confidence,
        valid_at=candidate.valid_at,
        invalid_at=candidate.invalid_at,
        candidate_id=candidate.id,
        episode_id=candidate.episode_id,
    )


_HANDLE = re.compile(r"^\[?\s*[Kk]?\s*(-?\d+)\s*\]?$")


def parse_handle(value: object) -> tuple[Literal["knowledge", "candidate"], int] | None:
    """("knowledge", 12) for "12"/"K12"/"[K12]", ("candidate", 7) for "-7"/"K-7"; None for
    anything else (the pipeline drops and counts it)."""
    if value is None:
        return None
    match = _HANDLE.match(str(value).strip())
    if match is None:
        return None
    number = int(match.group(1))
    if number == 0:
        return None
    return ("candidate", -number) if number < 0 else ("knowledge", number)


def mark_ended_facts(prediction: str, facts: list[Knowledge]) -> str:
    """The stored prediction with every listed fact that has since ended marked as such
    ("- User lives in Lisbon. (superseded by #15)"): a prediction is read later than it was made."""
    ended = {k.statement.rstrip(". ").casefold(): k.status_note() for k in facts if k.status != "active"}
    if not ended:
        return prediction
    lines = []
    for line in prediction.splitlines():
        body = line.lstrip("-• ").rstrip(". ").casefold()
        lines.append(f"{line} ({ended[body]})" if body in ended else line)
    return "\n".join(lines)

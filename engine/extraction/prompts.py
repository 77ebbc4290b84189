"""The three prompts of the OpenAI extractor, in one place so they can be read, reviewed and
versioned together.

Why three: predict–calibrate only stores what the model could NOT predict from what we already
know (Nemori, as memv implements it). The prediction prompt sees only the existing facts and the
episode's topic (its title) and time span, never the messages, so it cannot copy them; the calibration prompt sees the
prediction and the ORIGINAL messages and reports only the gap. With no existing facts there is
nothing to predict from, so the cold-start prompt extracts directly.

Each prompt lists what must never become a fact (general knowledge, what only the assistant said,
small talk, questions, hypotheticals): memv's audit found those to be most of the noise.
Messages are sent as a JSON array (role, time, content) so that user text can never be mistaken
for instructions or for the prompt's own structure, and so relative dates can be resolved against
the time of the message that says them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..claims import slot_names
from ..models import Knowledge, Message

PROMPT_VERSION = "2026-12-05.2"

EXCLUSIONS = """Never extract:
- general knowledge or facts about the world that are not about this user;
- anything only the assistant said (assistant messages are context, never a source);
- small talk, greetings, thanks, opinions about the conversation itself;
- questions the user asks (a question is not a claim);
- hypotheticals, plans stated as "if ...", jokes and role-play;
- anything the user says about other people unless it is a durable fact about the user's life
  (e.g. "my sister lives in Oslo" is about the user's family and may be kept)."""

# The slot names the model may return (the claim model's own list, so prompt and reader agree).
SLOTS = ", ".join(f'"{name}"' for name in sorted(slot_names()) if not name.endswith("_*"))

ITEM_SCHEMA = f"""Each item is an object:
  "statement": one self-contained sentence in the third person about the user ("The user lives in Lyon."),
               understandable without the conversation;
  "kind": "new" | "update" | "contradiction";
  "supersedes": the handle (e.g. "K12") of the existing fact this item replaces, or null;
  "confidence": a number from 0 to 1 (hedged claims such as "I might", "maybe" get 0.5 or less);
  "valid_at": the ISO date (YYYY-MM-DD) from which the statement is true, or null if unknown;
  "invalid_at": the ISO date (YYYY-MM-DD) from which it stops being true, or null;
  "evidence": a VERBATIM quote, copied exactly from one of the USER's messages, that states it;
  "category": optional; when the statement reveals health, religion or belief, sexual orientation or
              sex life, gender identity, racial or ethnic origin, political opinions, trade-union
              membership, genetic or biometric data, or a criminal record, one of "health",
              "religion", "sexual_orientation", "gender_identity", "ethnic_origin",
              "political_opinion", "trade_union", "genetic_biometric", "criminal_record"; "unsure"
              when it may reveal one of these; otherwise null;
  "slot": optional; what the statement is about, when it is one of: {SLOTS}
          ("favourite_<thing>" for a favourite, e.g. "favourite_food"; "contact_<role>" for the
          user's manager, doctor, dentist, landlord..., e.g. "contact_dentist"); otherwise null.
          One-valued slots hold one value at a time (a new home replaces the old one)."""

DATES = """Resolve relative dates ("last year", "since March", "until June") against the "at" time of the
message that says them, and give absolute ISO dates. invalid_at, when set, must be after valid_at."""

PREDICTION_SYSTEM = f"""You model what a memory system already knows about one user.
You are given the user's existing facts, each with a stable handle in brackets like [K12], and the
topic and time span of a new conversation. You do NOT see the conversation.
Predict, as concrete third-person statements, what this conversation would say about the user if
everything they said were already known: which facts they would repeat, mention or rely on.
Base the prediction only on the existing facts; do not invent new facts about the user.
{EXCLUSIONS}
Answer with a JSON object: {{"prediction": "<the predicted statements, one per line, each starting with
the handle of the fact it comes from>"}}."""

CALIBRATION_SYSTEM = f"""You find what a memory system failed to predict about one user.
You are given the user's existing facts with stable handles like [K12], a PREDICTION of what the
conversation would say, and the ORIGINAL conversation messages. Read only the user's own messages
as sources. Report:
- in "items", only durable facts about the user that the conversation states and the prediction
  MISSED: "new" (not known at all), "update" (a known fact changed: set "supersedes" to its handle),
  "contradiction" (the user says a known fact is wrong: set "supersedes" to its handle);
- in "covered", every claim of the conversation that the prediction ALREADY held, with the handle
  of the existing fact that predicted it ("predicted_by"). Do not repeat covered claims in "items".
Use only handles from the existing facts list; use null when no existing fact is replaced.
{EXCLUSIONS}
{ITEM_SCHEMA}
{DATES}
Answer with a JSON object: {{"items": [...], "covered": [{{"statement": "...", "predicted_by": "K12"}}]}}.
Both lists may be empty."""

COLD_START_SYSTEM = f"""You extract durable facts about one user from a conversation, for a memory system that
knows nothing about this user yet. Read only the user's own messages as sources: facts about who
the user is, where they live, their work, family, health, preferences, plans with dates, and
changes to any of these. Every item is "new" with "supersedes": null.
{EXCLUSIONS}
{ITEM_SCHEMA}
{DATES}
Answer with a JSON object: {{"items": [...]}}. The list may be empty."""


def handle(fact: Knowledge) -> str:
    """The stable handle a model uses to name an existing record: K + its id (negative for a
    pending candidate, see engine.extraction.base)."""
    return f"K{fact.id}"


def render_facts(existing: Sequence[Knowledge]) -> str:
    lines = []
    for fact in existing:
        pending = " [pending review, not yet approved]" if fact.status == "pending" else ""
        lines.append(f"[{handle(fact)}] {fact.statement} (valid {fact.interval_text()}){pending}")
    return "\n".join(lines) if lines else "(none)"


def render_messages(messages: Sequence[Message]) -> str:
    return json.dumps(
        [{"role": m.role, "at": m.at.isoformat(), "content": m.content} for m in messages],
        ensure_ascii=False,
        indent=1,
    )


def _span(messages: Sequence[Message]) -> str:
    if not messages:
        return "(unknown)"
    return f"{messages[0].at.isoformat()} to {messages[-1].at.isoformat()}"


def prediction_messages(existing: Sequence[Knowledge], title: str, messages: Sequence[Message]) -> list[dict[str, str]]:
    """The episode title is its topic (as memv predicts from it); the messages contribute only
    their time span, so the prediction cannot copy what the user said."""
    user = (
        f"Existing facts about the user:\n{render_facts(existing)}\n\n"
        f"Conversation topic: {json.dumps(title, ensure_ascii=False)}\n"
        f"The conversation took place from {_span(messages)}.\n"
        "Predict what it says about the user. Answer in JSON."
    )
    return [{"role": "system", "content": PREDICTION_SYSTEM}, {"role": "user", "content": user}]


def calibration_messages(
    existing: Sequence[Knowledge], prediction: str, messages: Sequence[Message]
) -> list[dict[str, str]]:
    user = (
        f"Existing facts about the user:\n{render_facts(existing)}\n\n"
        f"PREDICTION:\n{prediction or '(empty)'}\n\n"
        f"ORIGINAL messages (JSON array, oldest first):\n{render_messages(messages)}\n\n"
        "Report what the prediction missed, and what it covered. Answer in JSON."
    )
    return [{"role": "system", "content": CALIBRATION_SYSTEM}, {"role": "user", "content": user}]


def cold_start_messages(messages: Sequence[Message]) -> list[dict[str, str]]:
    user = (
        f"Messages (JSON array, oldest first):\n{render_messages(messages)}\n\n"
        "Extract the durable facts about the user. Answer in JSON."
    )
    return [{"role": "system", "content": COLD_START_SYSTEM}, {"role": "user", "content": user}]

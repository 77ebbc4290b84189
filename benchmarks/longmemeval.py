"""LongMemEval, measured the way the papers measure it, for both arms of the design's bet.

    uv run python benchmarks/longmemeval.py FILE [--extractor offline|openai] [--limit N] [--top-k 10]
        [--base-url URL] [--model NAME] [--judge-model NAME] [--api-key KEY] [--out PATH]

FILE is a LongMemEval-format JSON list (`longmemeval_s.json`, `longmemeval_oracle.json`, or the tiny
`benchmarks/data/longmemeval-tiny.json` bundled for the tests): each question has `question_id`,
`question_type`, `question`, `answer`, `question_date`, `haystack_dates` and `haystack_sessions`
(lists of `{"role", "content"}` turns). Question ids ending in `_abs` are abstention questions.

For each question and each arm (predict–calibrate, then extract-everything) the script:
  1. ingests the question's haystack into a fresh store, one session per episode, at the session's
     date, and processes it session by session with the chosen extractor;
  2. after each session, decides the whole queue through an explicit policy reviewer,
     `policy:benchmark` (approve every candidate; confirm every proposed supersession), through the
     engine's own review API, so every decision is audited like a curator's;
  3. answers the question from `retrieve(question).to_prompt()` with an OpenAI-compatible chat model;
  4. judges the answer against the reference with the same kind of model (yes/no, one call).

It prints accuracy per question type for the two arms side by side, the queue size (candidates
queued for review) and the tokens spent on extraction, answering and judging, then the same as
JSON (written to `--out` when given). The endpoint comes from the flags or from `MEMDESK_BASE_URL`,
`MEMDESK_MODEL` and `OPENAI_API_KEY`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from engine import Memory, MemoryConfig
from engine.openai_compat import call_with_retries, make_client

REVIEWER = "policy:benchmark"
ARMS = ("predict", "extract_all")
_DATE = re.compile(r"^(\d{4})/(\d{2})/(\d{2})(?:\s*\([A-Za-z]+\))?\s*(\d{1,2}):(\d{2})")

ANSWER_SYSTEM = (
    "You are a personal assistant with a long-term memory of the user. Answer the question using only "
    "the stored facts below. If they do not contain the answer, say that you do not know. Answer briefly."
)
JUDGE_RULES = {
    "default": "Answer yes if the response contains the correct answer or an equivalent of it, otherwise no. "
    "A response that gives only part of the required answer is wrong.",
    "temporal-reasoning": "Answer yes if the response contains the correct answer; do not penalise an off-by-one "
    "error in counting days, weeks or months. Otherwise answer no.",
    "knowledge-update": "Answer yes if the response gives the updated answer, even when it also mentions the "
    "earlier information. Otherwise answer no.",
    "single-session-preference": "The correct answer is a rubric of what a personalised answer would use. Answer "
    "yes if the response recalls and uses the user's personal information "
    "correctly. Otherwise answer no.",
    "abstention": "The question cannot be answered from what the user said. Answer yes if the response says "
    "that it cannot answer or does not know, otherwise no.",
}


def parse_date(text: str) -> datetime:
    """LongMemEval's "2023/05/20 (Sat) 02:21" (ISO dates are accepted too), as UTC."""
    if m := _DATE.match(text.strip()):
        y, mo, d, h, mi = (int(g) for g in m.groups())
        return datetime(y, mo, d, h, mi, tzinfo=UTC)
    parsed = datetime.fromisoformat(text.strip())
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def session_exchanges(turns: Sequence[dict[str, Any]], start: datetime) -> list[tuple[str, str | None, datetime]]:
    """One session's turns as (user message, the assistant's reply or None, time): each user turn
    pairs with the assistant turn after it; turns are a minute apart, so a session is one episode."""
    out: list[tuple[str, str | None, datetime]] = []
    for turn in turns:
        content = str(turn.get("content") or "").strip()
        if not content:
            continue
        if turn.get("role") == "user":
            out.append((content, None, start + timedelta(minutes=len(out))))
        elif out and out[-1][1] is None:
            out[-1] = (out[-1][0], content, out[-1][2])
    return out


class TokenCounter:
    """An `openai.AsyncOpenAI` seen through the calls the engine and this script make, adding up
    the `usage` each answer reports (what the run cost)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))
        self.models = inner.models
        self.base_url = inner.base_url

    async def _create(self, **kwargs: Any) -> Any:
        response = await self._inner.chat.completions.create(**kwargs)
        self.calls += 1
        usage = getattr(response, "usage", None)
        self.prompt_tokens += int(getattr(usage, "prompt_tokens", 0) or 0)
        self.completion_tokens += int(getattr(usage, "completion_tokens", 0) or 0)
        return response

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    async def close(self) -> None:
        await self._inner.close()


@dataclass
class Endpoint:
    base_url: str | None
    model: str | None
    judge_model: str | None
    api_key: str | None
    timeout: float = 60.0

    def client(self) -> TokenCounter:
        return TokenCounter(make_client(self.base_url, self.api_key, self.timeout))


@dataclass
class ArmResult:
    correct: dict[str, list[bool]] = field(default_factory=dict)
    queued: int = 0
    claims: int = 0
    predicted: int = 0
    approved: int = 0
    superseded: int = 0
    failed_episodes: int = 0
    tokens: dict[str, int] = field(default_factory=lambda: {"extract": 0, "answer": 0, "judge": 0})


async def chat(client: TokenCounter, model: str, messages: list[dict[str, str]]) -> str:
    response = await call_with_retries(
        lambda: client.chat.completions.create(model=model, messages=messages, temperature=0),
        what=f"chat completion at {client.base_url}",
        max_retries=3,
        backoff=0.5,
        max_backoff=8.0,
    )
    return str(response.choices[0].message.content or "").strip()


async def decide_queue(mem: Memory, user_id: str, result: ArmResult) -> None:
    """The policy reviewer: approve every candidate, confirm every supersession, oldest first and
    each read again before its decision (a decision can re-point the candidates chained to it)."""
    reason = "benchmark policy: approve every candidate, confirm every supersession"
    for cid in [c.id for c in await mem.review.pending(user_id=user_id, limit=10_000)]:
        cand = await mem.review.get(cid, user_id)
        if cand.status != "pending" or cand.kind == "retraction":
            continue
        if cand.supersedes_id is not None:
            await mem.review.confirm_supersession(cid, reviewer=REVIEWER, reason=reason, user_id=user_id)
            result.superseded += 1
        elif cand.kind in ("update", "contradiction"):  # names nothing that is still active: keep both
            await mem.review.keep_both(cid, reviewer=REVIEWER, user_id=user_id)
        else:
            await mem.review.approve(cid, reviewer=REVIEWER, reason=reason, user_id=user_id)
        result.approved += 1


def make_extractor(kind: str, endpoint: Endpoint, counter: TokenCounter | None) -> Any:
    if kind == "offline":
        return None  # Memory's offline default
    from engine.extraction import OpenAIExtractor

    return OpenAIExtractor(model=endpoint.model, client=counter)


async def run_question(
    question: dict[str, Any],
    arm: str,
    extractor_kind: str,
    endpoint: Endpoint,
    client: TokenCounter,
    top_k: int,
    result: ArmResult,
) -> dict[str, Any]:
    user_id = str(question["question_id"])
    dates = [parse_date(d) for d in question["haystack_dates"]]
    sessions = sorted(zip(dates, question["haystack_sessions"], strict=True), key=lambda s: s[0])
    extract_counter = endpoint.client() if extractor_kind == "openai" else None
    now = {"t": sessions[0][0] if sessions else parse_date(question["question_date"])}
    config = MemoryConfig(predict=(arm == "predict"))
    with tempfile.TemporaryDirectory() as tmp:
        extractor = make_extractor(extractor_kind, endpoint, extract_counter)
        async with Memory(Path(tmp) / "lme.db", extractor=extractor, config=config, clock=lambda: now["t"]) as mem:
            for start, turns in sessions:
                exchanges = session_exchanges(turns, start)
                if not exchanges:
                    continue
                now["t"] = exchanges[-1][2] + timedelta(minutes=1)
                await mem.add_exchanges([(user_id, u, a, at) for u, a, at in exchanges])
                report = await mem.process(user_id)
                result.queued += report.queued
                result.claims += report.claims
                result.predicted += report.predicted
                result.failed_episodes += report.failed
                await decide_queue(mem, user_id, result)
            now["t"] = parse_date(question["question_date"])
            facts = (await mem.retrieve(question["question"], user_id=user_id, top_k=top_k)).to_prompt()
    if extract_counter is not None:
        result.tokens["extract"] += extract_counter.tokens
        await extract_counter.close()
    model = endpoint.model or await _first_model(client)
    before = client.tokens
    answer = await chat(
        client,
        model,
        [
            {"role": "system", "content": ANSWER_SYSTEM},
            {
                "role": "user",
                "content": f"{facts}\n\nToday is {question['question_date']}.\nQuestion: {question['question']}",
            },
        ],
    )
    result.tokens["answer"] += client.tokens - before
    qtype = str(question["question_type"])
    abstention = user_id.endswith("_abs")
    rules = JUDGE_RULES["abstention" if abstention else qtype if qtype in JUDGE_RULES else "default"]
    before = client.tokens
    verdict = await chat(
        client,
        endpoint.judge_model or model,
        [
            {"role": "system", "content": "You grade answers. " + rules + " Reply with yes or no only."},
            {
                "role": "user",
                "content": f"Question: {question['question']}\nCorrect answer: {question['answer']}\n"
                f"Response: {answer}\nIs the response correct?",
            },
        ],
    )
    result.tokens["judge"] += client.tokens - before
    ok = verdict.strip().lower().lstrip("*\"' ").startswith("yes")
    result.correct.setdefault(qtype, []).append(ok)
    return {"question_id": user_id, "type": qtype, "arm": arm, "answer": answer, "verdict": verdict, "correct": ok}


async def _first_model(client: TokenCounter) -> str:
    page = await client.models.list()
    ids = [m.id for m in getattr(page, "data", None) or []]
    if not ids:
        raise SystemExit("the endpoint lists no models: pass --model or set MEMDESK_MODEL")
    return str(ids[0])


def accuracy(flags: list[bool]) -> float | None:
    return round(sum(flags) / len(flags), 3) if flags else None


def table(results: dict[str, ArmResult]) -> str:
    types = sorted({t for r in results.values() for t in r.correct})
    rows = [("question type", "n", *(f"{arm} accuracy" for arm in ARMS))]
    for qtype in [*types, "all"]:
        per_arm = []
        n = 0
        for arm in ARMS:
            flags = [f for t, fl in results[arm].correct.items() if qtype in ("all", t) for f in fl]
            n = len(flags)
            acc = accuracy(flags)
            per_arm.append("-" if acc is None else f"{100 * acc:.1f} % ({sum(flags)}/{n})")
        rows.append((qtype, str(n), *per_arm))
    rows.append(("queued for review", "", *(str(results[a].queued) for a in ARMS)))
    for what in ("extract", "answer", "judge"):
        rows.append((f"tokens: {what}", "", *(str(results[a].tokens[what]) for a in ARMS)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)) for r in rows)


async def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", type=Path, help="a LongMemEval-format JSON file")
    parser.add_argument("--extractor", choices=("offline", "openai"), default="offline")
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions")
    parser.add_argument("--top-k", type=int, default=10, help="facts retrieved for each answer")
    parser.add_argument("--base-url", default=os.environ.get("MEMDESK_BASE_URL"))
    parser.add_argument("--model", default=os.environ.get("MEMDESK_MODEL"), help="answer (and extract) model")
    parser.add_argument("--judge-model", default=None, help="judge model (default: --model)")
    parser.add_argument("--api-key", default=None, help="default: OPENAI_API_KEY")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = parser.parse_args(argv)
    questions: list[dict[str, Any]] = json.loads(args.file.read_text(encoding="utf-8"))
    if args.limit is not None:
        questions = questions[: args.limit]
    endpoint = Endpoint(args.base_url, args.model, args.judge_model, args.api_key)
    client = endpoint.client()
    results = {arm: ArmResult() for arm in ARMS}
    answers: list[dict[str, Any]] = []
    try:
        for question in questions:
            for arm in ARMS:
                answers.append(
                    await run_question(question, arm, args.extractor, endpoint, client, args.top_k, results[arm])
                )
    finally:
        await client.close()
    print(table(results))
    out = {
        "benchmark": "longmemeval",
        "file": str(args.file),
        "questions": len(questions),
        "extractor": args.extractor,
        "model": endpoint.model,
        "judge_model": endpoint.judge_model or endpoint.model,
        "top_k": args.top_k,
        "arms": {
            arm: {
                "accuracy": accuracy([f for fl in r.correct.values() for f in fl]),
                "accuracy_by_type": {t: accuracy(fl) for t, fl in sorted(r.correct.items())},
                "queued": r.queued,
                "claims": r.claims,
                "predicted": r.predicted,
                "approved": r.approved,
                "superseded": r.superseded,
                "failed_episodes": r.failed_episodes,
                "tokens": r.tokens,
            }
            for arm, r in results.items()
        },
        "answers": answers,
    }
    text = json.dumps(out, indent=2, ensure_ascii=False)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    return out


if __name__ == "__main__":
    asyncio.run(main())

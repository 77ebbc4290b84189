"""benchmarks/longmemeval.py end to end on the tiny bundled LongMemEval-format file, against the
scripted OpenAI-compatible server: real ingestion, extraction, policy review, retrieval and the
answer/judge calls over HTTP."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from openai_server import ScriptedOpenAIServer, chat_reply, openai_server

from engine import Memory

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "benchmarks" / "data" / "longmemeval-tiny.json"


def load_benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lme_benchmark", ROOT / "benchmarks" / "longmemeval.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["lme_benchmark"] = module
    spec.loader.exec_module(module)
    return module


lme = load_benchmark()


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MEMDESK_BASE_URL", "MEMDESK_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with openai_server() as s:
        yield s


def answer_prompts(server: ScriptedOpenAIServer) -> list[str]:
    """The user message of every answer request (the judge requests are the others)."""
    out = []
    for req in server.requests:
        messages = req.json["messages"]
        if messages[0]["content"].startswith("You are a personal assistant"):
            out.append(messages[1]["content"])
    return out


def test_tiny_file_is_longmemeval_format() -> None:
    questions = json.loads(TINY.read_text(encoding="utf-8"))
    keys = {
        "question_id",
        "question_type",
        "question",
        "answer",
        "question_date",
        "haystack_session_ids",
        "haystack_dates",
        "haystack_sessions",
        "answer_session_ids",
    }
    assert all(keys <= set(q) for q in questions)
    assert all(len(q["haystack_dates"]) == len(q["haystack_sessions"]) for q in questions)
    assert {t["role"] for q in questions for s in q["haystack_sessions"] for t in s} == {"user", "assistant"}


def test_dates_and_sessions_read_as_longmemeval_writes_them() -> None:
    assert lme.parse_date("2023/05/20 (Sat) 02:21") == datetime(2023, 5, 20, 2, 21, tzinfo=UTC)
    start = datetime(2023, 5, 20, tzinfo=UTC)
    turns = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
        {"role": "user", "content": "d"},
    ]
    assert lme.session_exchanges(turns, start) == [
        ("a", "b", start),
        ("c", None, start + timedelta(minutes=1)),
        ("d", None, start + timedelta(minutes=2)),
    ]


async def test_offline_arms_end_to_end(server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    # Per question, per arm (predict, then extract_all): one answer call, then one judge call.
    verdicts = {  # (question, arm) -> the judge's verdict
        ("tiny_ssu_1", "predict"): "yes",
        ("tiny_ssu_1", "extract_all"): "yes",
        ("tiny_ku_1", "predict"): "yes",
        ("tiny_ku_1", "extract_all"): "no",
        ("tiny_ms_1", "predict"): "yes",
        ("tiny_ms_1", "extract_all"): "Yes.",
        ("tiny_ssu_2_abs", "predict"): "no",
        ("tiny_ssu_2_abs", "extract_all"): "no",
    }
    for verdict in verdicts.values():
        server.script(chat_reply("an answer"), chat_reply(verdict))
    out = await lme.main([str(TINY), "--base-url", server.url + "/v1", "--model", "m", "--api-key", "k"])
    assert server.pending == 0 and len(server.requests) == 16

    prompts = answer_prompts(server)
    ku_predict, ku_all = prompts[2], prompts[3]
    # The predict arm proposed the move as an update and the policy reviewer confirmed it: only Porto
    # is believed. Extract-everything's extractor names no target, but every statement passes the
    # value model (issue 26): Porto is queued as Lisbon's update there too, and confirmed.
    assert "User lives in Porto" in ku_predict and "User lives in Lisbon" not in ku_predict
    assert "User lives in Porto" in ku_all and "User lives in Lisbon" not in ku_all
    assert "User works as a nurse" in prompts[0] and "Question: What do I do for a living?" in prompts[0]
    assert "User has a dog named Rex" in prompts[4] and "User has a cat named Luna" in prompts[4]

    predict, every = out["arms"]["predict"], out["arms"]["extract_all"]
    assert predict["accuracy_by_type"] == {"knowledge-update": 1.0, "multi-session": 1.0, "single-session-user": 0.5}
    assert every["accuracy_by_type"] == {"knowledge-update": 0.0, "multi-session": 1.0, "single-session-user": 0.5}
    assert (predict["accuracy"], every["accuracy"]) == (0.75, 0.5)
    assert predict["superseded"] == 1 and every["superseded"] == 1  # both arms link the move now
    assert predict["queued"] == every["queued"] > 0
    # Tokens as the server reported them (2 per call), split by what they were spent on.
    assert predict["tokens"] == {"extract": 0, "answer": 8, "judge": 8}
    table = capsys.readouterr().out
    assert "knowledge-update" in table and "100.0 % (1/1)" in table and "0.0 % (0/1)" in table
    assert "queued for review" in table and "tokens: answer" in table
    # The abstention question is judged with the abstention rule.
    judge_systems = [
        r.json["messages"][0]["content"]
        for r in server.requests
        if r.json["messages"][0]["content"].startswith("You grade")
    ]
    assert "cannot answer" in judge_systems[-1] and "cannot answer" not in judge_systems[0]


def item(statement: str, evidence: str, **kw: Any) -> dict[str, Any]:
    return {"statement": statement, "kind": "new", "supersedes": None, "confidence": 0.9, "evidence": evidence, **kw}


async def test_openai_extractor_arm_counts_extraction_tokens(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    questions = [q for q in json.loads(TINY.read_text(encoding="utf-8")) if q["question_id"] == "tiny_ku_1"]
    path = tmp_path / "one.json"
    path.write_text(json.dumps(questions), encoding="utf-8")
    lisbon = item("User lives in Lisbon", "I live in Lisbon")
    porto = item("User lives in Porto", "I moved to Porto last month")
    server.script(
        # predict arm: cold start, then prediction + calibration against the approved Lisbon fact
        chat_reply({"items": [lisbon]}),
        chat_reply({"prediction": "The user lives in Lisbon."}),
        chat_reply({"items": [{**porto, "kind": "update", "supersedes": "K1"}], "covered": []}),
        chat_reply("Porto"),
        chat_reply("yes"),
        # extract-everything arm: two cold starts
        chat_reply({"items": [lisbon]}),
        chat_reply({"items": [porto]}),
        chat_reply("Porto or Lisbon"),
        chat_reply("no"),
    )
    out = await lme.main(
        [str(path), "--extractor", "openai", "--base-url", server.url + "/v1", "--model", "m", "--api-key", "k"]
    )
    assert server.pending == 0
    predict, every = out["arms"]["predict"], out["arms"]["extract_all"]
    assert predict["tokens"]["extract"] == 6 and every["tokens"]["extract"] == 4
    # the extract-everything arm's Porto names no handle; the gate's value model links it all the same
    assert (predict["superseded"], every["superseded"]) == (1, 1)
    assert (predict["accuracy"], every["accuracy"]) == (1.0, 0.0)


async def test_policy_reviewer_decisions_are_audited(store_target: str) -> None:
    async with Memory(store_target) as mem:
        at = datetime(2023, 5, 2, 8, 0, tzinfo=UTC)
        await mem.add_exchange("u", "I live in Lisbon.", None, at=at)
        await mem.process("u")
        result = lme.ArmResult()
        await lme.decide_queue(mem, "u", result)
        await mem.add_exchange("u", "I moved to Porto.", None, at=at + timedelta(days=30))
        await mem.process("u")
        await lme.decide_queue(mem, "u", result)
        assert (result.approved, result.superseded) == (2, 1)
        assert [k.statement for k in await mem.knowledge("u")] == ["User lives in Porto"]
        decisions = [e for e in await mem.history("u") if e.entity == "candidate" and e.actor == lme.REVIEWER]
        assert len(decisions) == 2 and all(e.reason and "benchmark policy" in e.reason for e in decisions)

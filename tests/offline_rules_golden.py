"""The golden record of the offline rules: what they read from every text this repository holds
(benchmark data, the bundled demo conversations, and the string literals of the extraction tests).

Written once from the rules *before* they were moved into the `engine.extraction.rules` registry,
so the test beside it proves the move changed nothing: every sentence's claims, every clause's
claims, every statement read back, compared byte for byte. Regenerate (`uv run python
tests/offline_rules_golden.py`) only when a rule is meant to change, and say so in the commit.
"""

from __future__ import annotations

import ast
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engine.extraction import offline_rules as rules
from engine.extraction.offline import claims_from_text
from engine.extraction.rules import clause_claims

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "data" / "offline_rules_golden.json"
AT = datetime(2026, 6, 15, 12, 0, tzinfo=UTC)
TEST_FILES = [
    "tests/test_offline_extractor.py",
    "tests/test_offline_garbles.py",
    "tests/test_extraction_e2e.py",
    "tests/test_pipeline.py",
    "tests/test_claims.py",
    "tests/test_categories.py",
]


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def corpus() -> list[str]:
    """Every distinct text, sorted, so the record does not depend on file order."""
    texts: set[str] = set()
    bundled = [ROOT / "engine" / "data" / "conversations.jsonl", ROOT / "engine" / "data" / "expected.json"]
    for path in [*sorted((ROOT / "benchmarks" / "data").glob("*.json*")), *bundled]:
        raw = path.read_text(encoding="utf-8")
        if path.suffix == ".jsonl":
            for line in raw.splitlines():
                if line.strip():
                    texts.update(_strings(json.loads(line)))
        else:
            texts.update(_strings(json.loads(raw)))
    for name in TEST_FILES:
        path = ROOT / name
        if path.exists():
            tree = ast.parse(path.read_text(encoding="utf-8"))
            texts.update(n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str))
    return sorted(t for t in texts if t.strip() and len(t) < 2000)


def _claim(c: rules.Claim) -> list[Any]:
    return [c.subject, c.verb, c.value, c.negated, c.statement, c.slot]


def record(text: str) -> dict[str, Any]:
    """What the rules make of one text: its claims as the extractor reads them, each clause's
    claims, and the text read back as a stored statement."""
    sourced = claims_from_text(text, AT)
    clauses: list[list[Any]] = []
    for sentence in rules.sentences(text):
        expanded, _ = rules.take_times(rules.expand(sentence), AT)
        for clause in rules.split_clauses(expanded):
            normal = rules.normalise_clause(clause)
            if normal is None:
                clauses.append([clause, None])
                continue
            clauses.append([clause, normal[0], normal[1], [_claim(c) for c in clause_claims(normal[0])]])
    parsed = rules.parse_statement(text)
    return {
        "claims": [
            [*_claim(s.claim), s.evidence, s.confidence, str(s.span.valid_at), str(s.span.invalid_at)] for s in sourced
        ],
        "clauses": clauses,
        "parsed": _claim(parsed) if parsed is not None else None,
    }


def compute() -> dict[str, Any]:
    return {text: record(text) for text in corpus()}


if __name__ == "__main__":
    GOLDEN.write_text(json.dumps(compute(), ensure_ascii=False, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN}")

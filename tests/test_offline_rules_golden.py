"""The offline rules read every text of the repository exactly as they did before the registry
(see `tests/offline_rules_golden.py` for what is recorded and why)."""

from __future__ import annotations

import json

from tests.offline_rules_golden import GOLDEN, compute, corpus


def test_the_rules_reproduce_the_golden_record_exactly() -> None:
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    now = json.loads(json.dumps(compute(), ensure_ascii=False, sort_keys=True))
    assert set(now) == set(golden), "the corpus changed: regenerate the golden record on purpose"
    differ = [text for text in golden if now[text] != golden[text]]
    assert not differ, f"{len(differ)} texts read differently, first: {differ[:3]}"


def test_the_golden_corpus_holds_claims_to_compare() -> None:
    """A record of nothing would pass the test above whatever the rules did."""
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert len(corpus()) > 1000
    assert sum(len(v["claims"]) for v in golden.values()) > 300
    assert sum(1 for v in golden.values() if v["parsed"] is not None) > 300

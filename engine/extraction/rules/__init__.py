"""The offline extractor's clause rules as a registry: each rule an id, its pattern, its handler and
its examples (`registry.Rule`), one module a family (identity, health, partners, places, work,
things, likes, habits, special), and one explicit order (`order.ORDER`) that says why it is what it
is. The examples are tests (tests/test_offline_rules_registry.py); the word lists the rules read are
data (engine/extraction/wordlists/).

Helpers shared with the statement reader (`_trim`, `_pets`, `classify`, ...) stay in
`engine.extraction.offline_rules`, which this package imports and which imports nothing of it.
"""

from __future__ import annotations

from .order import ORDER, RULES, SPECIAL_ORDER, clause_claims, general_claims, special_claims
from .registry import Example, Rule

__all__ = ["ORDER", "RULES", "SPECIAL_ORDER", "Example", "Rule", "clause_claims", "general_claims", "special_claims"]

"""Every offline rule's examples, run as tests through the order the extractor uses: the example's
clause must be read by that very rule (not an earlier one that shadows it) and give exactly the
statements written beside it. Every rule must carry an example, so a rule added without one, or
one an earlier rule makes unreachable, fails here."""

from __future__ import annotations

import pytest

from engine.extraction import offline_rules
from engine.extraction.rules import ORDER, RULES, SPECIAL_ORDER, Example, Rule, clause_claims, general_claims
from engine.extraction.rules.registry import first_match

_EXAMPLES = [(rule, example) for rule in RULES for example in rule.examples]


@pytest.mark.parametrize(("rule", "example"), _EXAMPLES, ids=[f"{r.id}:{e.clause}" for r, e in _EXAMPLES])
def test_each_example_is_read_by_its_rule_as_written(rule: Rule, example: Example) -> None:
    assert rule.pattern.match(example.clause), f"{rule.id}'s pattern does not match its own example"
    order = SPECIAL_ORDER if rule in SPECIAL_ORDER else ORDER
    fired, claims = first_match(order, example.clause, clause_claims)
    assert fired is not None and fired.id == rule.id, f"read by {fired and fired.id}, not {rule.id}"
    assert tuple(c.statement for c in claims) == example.statements


def test_every_rule_has_an_example_and_a_unique_id() -> None:
    assert [r.id for r in RULES if not r.examples] == []
    ids = [r.id for r in RULES]
    assert len(ids) == len(set(ids))
    assert "lived" in ids  # R_LIVED had no test before the registry


def test_the_order_is_the_extractors_order() -> None:
    """The registry is what the extractor runs: a general rule's claims are what clause_claims
    returns (nothing special to take over), and a clause no rule reads gives nothing."""
    lived = next(r for r in ORDER if r.id == "lived")
    clause = lived.examples[0].clause
    assert general_claims(clause)[0] is lived
    assert [c.statement for c in clause_claims(clause)] == ["User lived in Berlin"]
    assert clause_claims("the weather is nice") == []
    assert general_claims("the weather is nice") == (None, [])


def test_order_decides_between_overlapping_rules() -> None:
    """Where patterns overlap, the order decides, and moving a rule changes what is read: without
    the narrower rule ahead of it, a looser one reads a wrong fact. Each pair is one `why_here`."""
    cases = [
        # clause, the rule that must read it first, what it reads, what a looser rule would read
        ("I have a cat allergy", "allergy", ["User is allergic to cats"], ["User has a cat"]),
        ("I switched to keto", "went_diet", ["User is keto"], ["User uses keto"]),
    ]
    for clause, first, right, wrong in cases:
        fired, claims = general_claims(clause)
        assert fired is not None and fired.id == first
        assert [c.statement for c in claims] == right
        without = tuple(r for r in ORDER if r.id != first)
        _, looser = first_match(without, clause, clause_claims)
        assert [c.statement for c in looser] == wrong


def test_special_rules_take_over_a_name_but_not_a_general_reading() -> None:
    # "I am Muslim": the name rule reads a name, the special rule a belief, which wins.
    assert [c.statement for c in clause_claims("I am Muslim")] == ["User is Muslim"]
    # positive control of the same shape: "I am Quinn" stays a name.
    assert [c.statement for c in clause_claims("I am Quinn")] == ["User's name is Quinn"]
    # a general reading that is not a name is kept even where a special rule would also read.
    assert [c.statement for c in clause_claims("I live in Porto")] == ["User lives in Porto"]


def test_word_lists_are_read_from_data() -> None:
    """The lexicons come from engine/extraction/wordlists/*.txt; a word in the file is in the set."""
    from importlib.resources import files

    text = files("engine.extraction.wordlists").joinpath("languages.txt").read_text(encoding="utf-8")
    listed = {line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")}
    assert listed == offline_rules.LANGUAGES
    assert "spanish" in offline_rules.LANGUAGES or "Spanish" in offline_rules.LANGUAGES
    assert not any(w.startswith("#") for w in offline_rules.LANGUAGES)

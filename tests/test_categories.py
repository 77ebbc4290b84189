"""Special categories (issue 20 item 2): every path that queues a candidate sets `category` (the
offline rules, or the LLM extractor's own label when it is a known one); the queue filters on it;
the workstation shows it as a badge and its filter dialog selects it with real keys."""

from __future__ import annotations

import pytest

from engine import ANY_SPECIAL, CATEGORIES, Memory, QueueFilter
from engine.categories import UNSURE, category_of, is_special, offline_category
from engine.extraction.openai_extractor import ItemAnswer
from tests.engine_helpers import sql


@pytest.mark.parametrize(
    ("statement", "category"),
    [
        ("User is allergic to penicillin", "health"),
        ("User has type 1 diabetes", "health"),
        ("User is a practising Muslim", "religion"),
        ("User is bisexual", "sexual_orientation"),
        ("User is of Hispanic origin", "ethnic_origin"),
        ("User voted for the Green Party", "political_opinion"),
        ("User is a trade union member", "trade_union"),
        ("User had a DNA test with 23andMe", "genetic_biometric"),
        ("User has a criminal record for theft", "criminal_record"),
    ],
)
def test_each_special_category_is_found(statement: str, category: str) -> None:
    assert offline_category(statement) == category


@pytest.mark.parametrize(
    "statement",
    [
        "User works as a pharmacist at Boots",
        "User likes white wine",
        "User ran a race in Leeds",
        "User's wife is called Anna",
        "User is straight to the point in emails",
    ],
)
def test_ordinary_facts_have_no_category(statement: str) -> None:
    assert offline_category(statement) is None


def test_a_models_label_is_taken_when_known_and_ignored_otherwise() -> None:
    item = ItemAnswer.model_validate(
        {"statement": "User sees Dr Ames monthly", "confidence": 0.8, "category": "Health"}
    )
    assert item.to_gap_item().category == "health"
    odd = ItemAnswer.model_validate({"statement": "User is Muslim", "confidence": 0.8, "category": "spicy"})
    assert odd.to_gap_item().category is None  # not a schema error: the offline rules still run
    assert category_of("User is Muslim", odd.category) == "religion"
    assert category_of("User sees Dr Ames monthly", None) is None  # what the label added


async def test_every_queue_path_sets_the_category_and_the_queue_filters_on_it(store_target: str) -> None:
    async with Memory(store_target) as mem:
        await mem.add_exchange("ana", "I'm allergic to penicillin. I live in Leeds.", None)
        await mem.process()
        proposed = await mem.propose("ana", "User is a trade union member", "agent:t")
        curated = await mem.queue_candidate("ana", "User has a criminal record")
        plain = await mem.queue_candidate("ana", "User keeps three quokkas")
        by_statement = {c.statement: c for c in await mem.review.pending(limit=100)}
        assert proposed.candidate_id is not None
        assert (await mem.review.get(proposed.candidate_id)).category == "trade_union"
        assert (await mem.review.get(curated)).category == "criminal_record"
        assert (await mem.review.get(plain)).category is None
        extracted = [c for s, c in by_statement.items() if "penicillin" in s.lower()]
        assert extracted and extracted[0].category == "health"
        special = await mem.review.pending(limit=100, filter=QueueFilter(category=ANY_SPECIAL))
        assert plain not in {c.id for c in special} and curated in {c.id for c in special}
        assert [c.id for c in await mem.review.pending(filter=QueueFilter(category="criminal_record"))] == [curated]
        assert await mem.review.count(filter=QueueFilter(category="trade_union")) == 1
        async with sql(mem) as conn:  # the column itself, not only the model
            rows = await (await conn.execute("SELECT category FROM candidates WHERE id = ?", [curated])).fetchall()
        assert rows[0][0] == "criminal_record"
    assert set(CATEGORIES) >= {"health", "religion", "criminal_record"}


# -- issue 27: beyond keywords --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("statement", "category"),
    [
        ("User takes sertraline", "health"),
        ("User is on methadone", "health"),
        ("User has long covid", "health"),
        ("User is expecting a baby", "health"),
        ("User uses a walking stick", "health"),
        ("User goes to Mass on Sundays", "religion"),
        ("User attends the gurdwara", "religion"),
        ("User doesn't believe in God", "religion"),
        ("User is transitioning", "gender_identity"),
        ("User is non-binary", "gender_identity"),
        ("User is of Pakistani descent", "ethnic_origin"),
        ("User is Yoruba", "ethnic_origin"),
        ("User is a member of Unite", "trade_union"),
        ("User pays union dues", "trade_union"),
        ("User marched at Pride", "sexual_orientation"),
        ("User canvassed for the Lib Dems", "political_opinion"),
        ("User carries the BRCA2 gene", "genetic_biometric"),
        ("User is on parole", "criminal_record"),
        ("User is g\u0430y", "sexual_orientation"),  # a Cyrillic a
        ("User spent a year in pris\u043en", "criminal_record"),  # a Cyrillic o
        ("User is ｍｕｓｌｉｍ", "religion"),  # fullwidth
    ],
)
def test_special_categories_beyond_keywords(statement: str, category: str) -> None:
    assert category_of(statement) == category


@pytest.mark.parametrize(
    "statement",
    [
        "User works as a nurse on a night shift",
        "User's favourite shop is the pharmacy on the corner",
        "User reads political thrillers on holiday",
        "User runs with a running club on Tuesdays",
        "User sang in unison with the choir",
        "User is a member of the student union",
        "User has a Roma tomato plant",
        "User's dog has arthritis",
        "User donates to a cancer charity",
        "User visited the Sistine Chapel",
        "User is on a probation period at the new job",
    ],
)
def test_ordinary_uses_of_the_same_words_have_no_category(statement: str) -> None:
    assert category_of(statement) is None


def test_a_partner_against_the_users_known_gender() -> None:
    said = "User's husband is called David"
    assert category_of(said, None, ["User is a man"]) == "sexual_orientation"
    assert category_of(said, None, ["User is a woman"]) is None  # the positive control
    assert category_of(said) is None  # nothing known: no guess
    assert category_of("User's wife is called Maria", None, ["User is a woman", "User lives in Porto"]) == (
        "sexual_orientation"
    )


def test_unsure_is_special_and_said_when_a_cue_is_only_inside_a_job() -> None:
    assert category_of("User works as a union rep at the depot") == UNSURE
    assert category_of("User has a doctor's appointment next week") == UNSURE
    assert is_special(UNSURE) and UNSURE in CATEGORIES
    assert category_of("User works as a rep at the depot") is None  # the positive control
    assert category_of("User works at the HIV clinic") == UNSURE  # a condition named at work
    assert category_of("User works at a hospital in Leeds") is None  # a workplace alone


async def test_the_store_reads_the_users_gender_for_a_partner(store_target: str) -> None:
    async with Memory(store_target) as mem:
        await mem.add_knowledge("ana", "User is a woman", actor="support")
        await mem.add_knowledge("bo", "User is a woman", actor="support")
        await mem.add_knowledge("cy", "User is a man", actor="support")
        same = await mem.queue_candidate("ana", "User's wife is called Maria", actor="agent")
        other = await mem.queue_candidate("cy", "User's wife is called Maria", actor="agent")
        husband = await mem.queue_candidate("bo", "User's husband is called Tom", actor="agent")
        assert (await mem.review.get(same)).category == "sexual_orientation"
        assert (await mem.review.get(other)).category is None
        assert (await mem.review.get(husband)).category is None

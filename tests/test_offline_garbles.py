"""Issue 20's garbles of the offline extractor, each with its positive control: one fact per
statement, names capitalised, fillers and obvious typos left out of the statement while the
evidence keeps the user's words. (The retraction, "scratch that", is in test_offline_extractor.)"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from engine.extraction.offline import claims_from_text
from engine.extraction.offline_rules import ALLERGENS, LANGUAGES, spelled

T = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


def statements(text: str) -> list[str]:
    return [c.claim.statement for c in claims_from_text(text, T)]


# -- one fact per statement -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "I live in leeds and work as a pharmacist at boots",
            ["User lives in Leeds", "User works as a pharmacist", "User works at Boots"],
        ),
        ("i live in bristol and work at aldi", ["User lives in Bristol", "User works at Aldi"]),
        ("I teach maths and play the drums.", ["User teaches maths", "User plays the drums"]),
        ("Honestly I live in Leeds and have a dog named Rex", ["User lives in Leeds", "User has a dog named Rex"]),
        # the dropped subject is the first clause's person, not the user
        (
            "My sister lives in manchester and works as a nurse.",
            ["User's sister lives in Manchester", "User's sister works as a nurse"],
        ),
        (
            "My parents live in Leeds and work at the hospital",
            ["User's parents live in Leeds", "User's parents work at the hospital"],
        ),
    ],
)
def test_two_facts_joined_by_and_are_two_statements(text: str, expected: list[str]) -> None:
    assert statements(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # "and" inside a name or a value: one fact
        ("I work at Marks and Spencer", ["User works at Marks and Spencer"]),
        ("I work at Marks and Spencer and I live in york.", ["User works at Marks and Spencer", "User lives in York"]),
        ("I speak English and Welsh", ["User speaks English and Welsh"]),
        ("I love rock and roll", ["User loves rock and roll"]),
        ("I'm allergic to peanuts and shellfish", ["User is allergic to peanuts and shellfish"]),
        # a verb after "and" that is a name, not a dropped subject's verb
        ("I work at Teach and Play Nursery", ["User works at Teach and Play Nursery"]),
    ],
)
def test_and_inside_one_value_does_not_split(text: str, expected: list[str]) -> None:
    assert statements(text) == expected


def test_a_third_person_verb_after_a_clause_about_the_user_is_not_given_to_the_user() -> None:
    """ "... and works as a nurse" after "I live in Leeds" has no subject the rules can name."""
    assert statements("I live in Leeds and works as a nurse") == ["User lives in Leeds"]
    # positive control: the same verb after "my sister" is hers
    assert statements("My sister lives in Leeds and works as a nurse") == [
        "User's sister lives in Leeds",
        "User's sister works as a nurse",
    ]


# -- names capitalised ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I live in leeds", "User lives in Leeds"),
        ("I moved to new york", "User lives in New York"),
        ("I moved to stoke-on-trent", "User lives in Stoke-on-Trent"),
        ("I'm from cardiff originally.", "User is from Cardiff"),
        ("I work at marks and spencer", "User works at Marks and Spencer"),
        ("I quit boots", "User no longer works at Boots"),
        ("My name is tomas", "User's name is Tomas"),
        ("My brother is called tom.", "User's brother is named Tom"),
        ("We got a puppy named biscuit!", "User has a dog named Biscuit"),
        ("i speak english and welsh", "User speaks English and Welsh"),
        ("I teach english", "User teaches English"),
    ],
)
def test_names_written_small_get_their_capitals(text: str, expected: str) -> None:
    assert statements(text) == [expected]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # ordinary words stay as they are
        ("I work as a pharmacist", "User works as a pharmacist"),
        ("I work at the hospital", "User works at the hospital"),
        ("I work at a bakery", "User works at a bakery"),
        ("I teach maths", "User teaches maths"),
        ("I'm allergic to cats", "User is allergic to cats"),
        # a name already written with capitals keeps them as written
        ("I work at JetBrains", "User works at JetBrains"),
        ("I work at the Alfred", "User works at the Alfred"),
        ("I live in McAllen", "User lives in McAllen"),
    ],
)
def test_ordinary_words_and_written_names_keep_their_case(text: str, expected: str) -> None:
    assert statements(text) == [expected]


# -- fillers and typos ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'm allergic to penicilin btw", "User is allergic to penicillin"),
        ("allergic to penicilin btw", "User is allergic to penicillin"),
        ("I'm allergic to shellfsh tbh", "User is allergic to shellfish"),
        ("I'm, tbh, a nurse", "User works as a nurse"),
        ("I live in Leeds, to be honest", "User lives in Leeds"),
        ("I'm vegitarian btw", "User is vegetarian"),
        ("i'm learning japanse, it's hard", "User is learning Japanese"),
        ("I work as a pharmacsit", "User works as a pharmacist"),
    ],
)
def test_fillers_and_obvious_typos_leave_the_statement(text: str, expected: str) -> None:
    [claim] = claims_from_text(text, T)
    assert claim.claim.statement == expected
    assert claim.evidence == text  # the evidence keeps the user's own words


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # correctly spelled words never change
        ("I'm allergic to penicillin", "User is allergic to penicillin"),
        ("I'm vegetarian", "User is vegetarian"),
        ("I'm learning Japanese", "User is learning Japanese"),
        # a word the vocabulary does not hold is kept as written, even one edit from one it holds
        ("I'm allergic to daisy", "User is allergic to daisy"),
        ("I'm allergic to ragwort", "User is allergic to ragwort"),
        # places and employers have no vocabulary: never "corrected"
        ("I live in Leeds", "User lives in Leeds"),
        ("I work at Aldy", "User works at Aldy"),
    ],
)
def test_correct_and_unknown_words_are_not_corrected(text: str, expected: str) -> None:
    assert statements(text) == [expected]


def test_a_joke_marker_dropped_from_the_statement_still_makes_it_a_joke() -> None:
    [claim] = claims_from_text("I'm allergic to penicilin lol", T)
    assert (claim.claim.statement, claim.confidence) == ("User is allergic to penicillin", 0.3)
    [firm] = claims_from_text("I'm allergic to penicilin", T)
    assert firm.confidence == 0.9


def test_spelled_corrects_one_edit_to_exactly_one_known_word() -> None:
    words = frozenset(ALLERGENS)
    assert spelled("penicilin", words) == "penicillin"
    assert spelled("penicillin", words) == "penicillin"
    assert spelled("peniciln", words) == "peniciln"  # two edits: not an obvious typo
    assert spelled("dairy", words) == "dairy" and spelled("daisy", words) == "daisy"  # five letters: left
    # two known words one edit away: ambiguous, kept as written
    assert spelled("dialect", frozenset({"dialects", "dialectd"})) == "dialect"
    assert spelled("japanse", frozenset(LANGUAGES)) == "japanese"


# -- one fact per statement: the object of a habit said in the clause before -------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'm into climbing, I go most Thursdays.", ["User goes climbing most Thursdays"]),
        ("I'm into bouldering, I go three times a week.", ["User goes bouldering three times a week"]),
        ("I'm a big fan of chess, I play online every night.", ["User plays chess online"]),
        ("I love tennis and play every weekend", ["User plays tennis"]),
    ],
)
def test_a_habit_said_of_the_object_before_is_one_fact_not_a_liking(text: str, expected: list[str]) -> None:
    assert statements(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'm into climbing.", ["User is into climbing"]),  # no habit: the liking stays
        ("I'm into jazz, I go to gigs most weekends.", ["User is into jazz"]),  # "go to gigs" has its own object
        ("I love chess, I go every week.", ["User loves chess"]),  # one does not "go chess"
        ("My sister loves tennis, I play every week.", []),  # her liking is not the user's object
        ("I play tennis on weekends.", ["User plays tennis"]),
    ],
)
def test_a_habit_without_an_object_is_not_given_one_it_did_not_say(text: str, expected: list[str]) -> None:
    assert statements(text) == expected

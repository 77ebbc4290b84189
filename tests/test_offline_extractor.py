"""The offline extractor on its own: each rule, what must never become a fact, confidence, dates,
and the calibration against existing facts (covered / update / contradiction / new)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from engine import Episode, Extraction, Knowledge, Message
from engine.categories import category_of
from engine.extraction.offline import OfflineExtractor, calibrated, claims_from_text
from engine.extraction.offline_rules import parse_statement

T = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


def episode(*turns: tuple[str, str], at: datetime = T, user_id: str = "ana") -> Episode:
    return Episode(
        id=1,
        user_id=user_id,
        title="t",
        narrative="n",
        messages=[Message(role=role, content=text, at=at) for role, text in turns],  # type: ignore[arg-type]
    )


def fact(fid: int, statement: str, user_id: str = "ana", created: datetime = T) -> Knowledge:
    return Knowledge(
        id=fid, user_id=user_id, statement=statement, status="active", created_at=created, created_by="rev"
    )


async def extract(text: str, existing: list[Knowledge] | None = None, at: datetime = T) -> Extraction:
    return await OfflineExtractor().extract(episode(("user", text), at=at), existing or [])


def statements(text: str, at: datetime = T) -> list[str]:
    return [c.claim.statement for c in claims_from_text(text, at)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I live in Lisbon.", ["User lives in Lisbon"]),
        ("I'm based in Berlin, near the river.", ["User lives in Berlin"]),
        ("I moved to Porto!", ["User lives in Porto"]),
        ("I'm from Mumbai but I live in Toronto now.", ["User is from Mumbai", "User lives in Toronto"]),
        ("I work as a nurse.", ["User works as a nurse"]),
        ("I work at Zalando as a software engineer.", ["User works at Zalando", "User works as a software engineer"]),
        ("I'm a teacher in London.", ["User works as a teacher", "User lives in London"]),
        ("I became a school librarian.", ["User works as a school librarian"]),
        ("I'm allergic to peanuts, so no satay.", ["User is allergic to peanuts"]),
        ("I'm vegetarian.", ["User is vegetarian"]),
        ("I'm a vegan.", ["User is vegan"]),
        ("I switched to a vegan diet.", ["User is vegan"]),
        ("I switched to a Tesla.", ["User drives a Tesla"]),
        ("My sister is a nurse.", ["User's sister is a nurse"]),
        ("My sister's name is Maria.", ["User's sister is named Maria"]),
        ("My brother still lives in Hamburg.", ["User's brother lives in Hamburg"]),
        ("My daughter is 7 and my son is 4.", ["User's daughter is 7 years old", "User's son is 4 years old"]),
        ("I live in London with my partner Sam.", ["User's partner is named Sam", "User lives in London"]),
        ("My favourite food is bacalhau.", ["User's favourite food is bacalhau"]),
        ("My favorite band is Radiohead.", ["User's favourite band is Radiohead"]),
        ("I have a dog named Rex.", ["User has a dog named Rex"]),
        ("I have a cat called Luna and a dog named Pip.", ["User has a cat named Luna", "User has a dog named Pip"]),
        ("I have two kids.", ["User has two children"]),
        ("I'm 34 years old.", ["User is 34 years old"]),
        ("I turned 35.", ["User is 35 years old"]),
        ("My name is Ben.", ["User's name is Ben"]),
        ("I speak German and English.", ["User speaks German and English"]),
        ("I'm learning Italian.", ["User is learning Italian"]),
        ("I play tennis on weekends.", ["User plays tennis"]),
        ("I drive a Honda Civic.", ["User drives a Honda Civic"]),
        ("I'm studying biology at McGill.", ["User studies biology at McGill"]),
        ("I no longer live in Lisbon.", ["User no longer lives in Lisbon"]),
        ("I don't play tennis anymore.", ["User no longer plays tennis"]),
        ("I'm not vegetarian anymore.", ["User is no longer vegetarian"]),
        ("I stopped playing tennis.", ["User no longer plays tennis"]),
        ("I quit Shopify.", ["User no longer works at Shopify"]),
    ],
)
def test_rules(text: str, expected: list[str]) -> None:
    assert statements(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Do I live in Lisbon?",
        "I live in Lisbon?",
        "Would I enjoy living in Madrid",
        "Where should I live in Porto",
        "Since you live in Lisbon, any tips?",
        "Thanks, that was helpful!",
        "My sister says she is a nurse, he claims",  # third-person hearsay the rules do not read
        "I don't live in Paris.",  # a bare negation says no previous state ended: not read
        "Paris is the capital of France.",
    ],
)
def test_questions_small_talk_and_bare_negations_are_never_claims(text: str) -> None:
    assert statements(text) == []
    # Positive control: the same extractor reads a plain first-person statement.
    assert statements("I live in Lisbon.") == ["User lives in Lisbon"]


async def test_assistant_text_is_never_a_source() -> None:
    # Second-person claims about the user, general knowledge, and the assistant's own first person.
    said = "You live in Paris. Paris is the capital of France. I work as an assistant. I live in the cloud."
    out = await OfflineExtractor().extract(episode(("user", "ok thanks"), ("assistant", said)), [])
    assert out.items == [] and out.covered == []
    # Positive control: the user saying it in the first person is read.
    out = await OfflineExtractor().extract(episode(("user", "I live in Paris."), ("assistant", said)), [])
    assert [i.statement for i in out.items] == ["User lives in Paris"]


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("I might move to Berlin.", "User lives in Berlin"),
        ("Maybe I'll adopt a cat.", "User has a cat"),
        ("I think I live in Berlin now.", "User lives in Berlin"),
        ("I'll probably switch to a Tesla.", "User drives a Tesla"),
        ("If I were rich, I would live in Lisbon.", "User lives in Lisbon"),
    ],
)
async def test_hedges_and_hypotheticals_get_low_confidence(text: str, statement: str) -> None:
    out = await extract(text)
    assert [(i.statement, i.confidence) for i in out.items] == [(statement, 0.4)]
    # Positive control: the firm claim is above the 0.7 gate.
    firm = await extract("I moved to Berlin.")
    assert [i.confidence for i in firm.items] == [0.9]


@pytest.mark.parametrize(
    ("text", "at", "valid_at", "invalid_at"),
    [
        ("I've lived in Lisbon since 2021.", T, datetime(2021, 1, 1, tzinfo=UTC), None),
        ("I've lived in Lisbon since March 2021.", T, datetime(2021, 3, 1, tzinfo=UTC), None),
        ("I've lived in Lisbon since April.", T, datetime(2025, 4, 1, tzinfo=UTC), None),
        ("I moved to Porto last year.", T, datetime(2025, 1, 1, tzinfo=UTC), None),
        ("I moved to Porto this month.", T, datetime(2026, 3, 1, tzinfo=UTC), None),
        ("I moved to Porto in January.", T, datetime(2026, 1, 1, tzinfo=UTC), None),
        ("I moved to Porto in 2020.", T, datetime(2020, 1, 1, tzinfo=UTC), None),
        ("I moved to Porto two years ago.", T, datetime(2024, 1, 1, tzinfo=UTC), None),
        ("I'm staying in Edinburgh until June.", T, None, datetime(2026, 6, 1, tzinfo=UTC)),
        # "until June" said in July means next June.
        (
            "I'm staying in Edinburgh until June.",
            datetime(2026, 7, 2, tzinfo=UTC),
            None,
            datetime(2027, 6, 1, tzinfo=UTC),
        ),
        (
            "I worked at Oakfield School from 2019 to 2021.",
            T,
            datetime(2019, 1, 1, tzinfo=UTC),
            datetime(2021, 1, 1, tzinfo=UTC),
        ),
        ("I live in Lisbon.", T, None, None),
    ],
)
async def test_relative_dates_against_the_message_time(
    text: str, at: datetime, valid_at: datetime | None, invalid_at: datetime | None
) -> None:
    out = await extract(text, at=at)
    [item] = out.items
    assert (item.valid_at, item.invalid_at) == (valid_at, invalid_at)
    assert "20" not in item.statement and "June" not in item.statement  # dates never leak into the value


async def test_inverted_interval_is_passed_through_for_the_pipeline_to_count() -> None:
    [item] = (await extract("I worked at Oakfield School from 2022 until 2020.")).items
    assert item.valid_at == datetime(2022, 1, 1, tzinfo=UTC) and item.invalid_at == datetime(2020, 1, 1, tzinfo=UTC)


async def test_cold_start_has_no_prediction_and_every_claim_is_new() -> None:
    out = await extract("I live in Lisbon. I have a dog named Rex.")
    assert out.prediction == "" and out.covered == []
    assert [(i.statement, i.kind, i.supersedes) for i in out.items] == [
        ("User lives in Lisbon", "new", None),
        ("User has a dog named Rex", "new", None),
    ]


async def test_covered_update_contradiction_and_new() -> None:
    existing = [
        fact(1, "User lives in Lisbon"),
        fact(2, "User works as a nurse"),
        fact(3, "User plays tennis"),
        fact(4, "User has a dog named Rex"),
    ]
    text = "I'm a nurse. I moved to Porto. I don't play tennis anymore. I have a cat named Luna. I'm allergic to cats."
    out = await extract(text, existing)
    assert [(c.statement, c.predicted_by) for c in out.covered] == [("User works as a nurse", "2")]
    assert [(i.statement, i.kind, i.supersedes) for i in out.items] == [
        ("User lives in Porto", "update", "1"),
        ("User no longer plays tennis", "contradiction", "3"),
        ("User has a cat named Luna", "new", None),  # pets are many-valued: a second pet is not an update
        ("User is allergic to cats", "new", None),
    ]
    assert "- User lives in Lisbon." in out.prediction and "- User works as a nurse." in out.prediction
    assert "Nothing was known yet about their allergies." in out.prediction


async def test_evidence_is_the_exact_user_sentence() -> None:
    text = "Hi there! I'm allergic to peanuts, so keep that in mind. Thanks."
    [item] = (await extract(text)).items
    assert item.evidence == "I'm allergic to peanuts, so keep that in mind." and item.evidence in text


async def test_update_names_the_newest_fact_of_the_slot() -> None:
    older = fact(1, "User lives in Lisbon", created=datetime(2025, 1, 1, tzinfo=UTC))
    newer = fact(2, "User lives in Porto", created=datetime(2025, 6, 1, tzinfo=UTC))
    [item] = (await extract("I moved to Braga.", [older, newer])).items
    assert (item.kind, item.supersedes) == ("update", "2")


async def test_positive_claim_against_a_negated_fact_is_an_update_of_it() -> None:
    [item] = (await extract("I play tennis again.", [fact(7, "User no longer plays tennis")])).items
    assert (item.statement, item.kind, item.supersedes) == ("User plays tennis", "update", "7")


async def test_unparseable_human_fact_covers_only_its_exact_statement() -> None:
    existing = [fact(5, "Ana keeps bees on her roof")]
    assert parse_statement("Ana keeps bees on her roof") is None
    out = await extract("I live in Lisbon.", existing)
    assert out.covered == [] and [i.kind for i in out.items] == ["new"]
    # Positive control: a fact in the rules' own words is recognised even when phrased differently.
    out = await extract("I'm living in Lisbon.", [fact(6, "User lives in Lisbon.")])
    assert [(c.statement, c.predicted_by) for c in out.covered] == [("User lives in Lisbon", "6")]


def test_statements_read_back_to_the_same_slot() -> None:
    for text in [
        "I'm not allergic to peanuts anymore.",
        "My favourite food is bacalhau.",
        "My sister's name is Maria.",
        "I have two kids.",
        "I don't play tennis anymore.",
    ]:
        [sc] = claims_from_text(text, T)
        back = parse_statement(sc.claim.statement)
        assert back is not None and (back.slot, back.key, back.negated) == (
            sc.claim.slot,
            sc.claim.key,
            sc.claim.negated,
        )


async def test_deterministic() -> None:
    text = "I moved to Porto last year and I work as a nurse. Maybe I'll get a cat. My sister is vegan."
    existing = [fact(1, "User lives in Lisbon"), fact(2, "User's sister is vegetarian")]
    runs = [await extract(text, existing) for _ in range(3)]
    assert runs[0] == runs[1] == runs[2]
    assert OfflineExtractor.name == "offline"


# -- issue 12: the classes ordinary conversation uses ------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A claim inside a longer sentence, its date taken from the rest of the sentence.
        ("By the way I live in Hamburg now, moved last week.", ["User lives in Hamburg"]),
        # Possessives and the people around the user, names and details kept.
        ("My dog is named Biscuit.", ["User has a dog named Biscuit"]),
        ("My sister is a doctor in Vancouver.", ["User's sister is a doctor in Vancouver"]),
        ("My wife Priya is a pharmacist.", ["User's wife Priya is a pharmacist"]),
        ("My brother Tom works at the BBC.", ["User's brother Tom works at the BBC"]),
        ("Our eldest son Arjun is 12.", ["User's son Arjun is 12 years old"]),
        ("My parents live in Osaka.", ["User's parents live in Osaka"]),
        ("My sister moved back from Vancouver, she lives in Berlin now.", ["User's sister lives in Berlin"]),
        ("I have a son, he's five.", ["User has a son", "User's son is 5 years old"]),
        # Counts.
        ("I have two daughters.", ["User has two daughters"]),
        ("We have three sons.", ["User has three sons"]),
        ("I have two cats, Kimchi and Mandu.", ["User has two cats named Kimchi and Mandu"]),
        ("I have three horses.", ["User has three horses"]),
        # Preferences.
        ("I love sushi.", ["User loves sushi"]),
        ("I'm crazy about Korean dramas.", ["User loves Korean dramas"]),
        ("I hate coriander.", ["User hates coriander"]),
        ("I prefer tea to coffee.", ["User prefers tea to coffee"]),
        ("I love hiking in the Brecon Beacons.", ["User loves hiking in the Brecon Beacons"]),
        # Life events as the state they start.
        ("I got married last month.", ["User is married"]),
        ("Rhys and I got married in January.", ["User is married to Rhys"]),
        ("I got engaged to Paul on Saturday!", ["User is engaged to Paul"]),
        ("Ola and I broke up in February.", ["User broke up with Ola"]),
        # Habits, frequency kept.
        ("Been cycling to work every day since January.", ["User cycles to work every day"]),
        ("I go swimming every Saturday.", ["User goes swimming every Saturday"]),
        ("I drink about five coffees a day.", ["User drinks about five coffees a day"]),
        ("I've been doing yoga every morning since December.", ["User does yoga every morning"]),
        ("I stopped swimming, the pool closed.", ["User no longer goes swimming"]),
        ("I don't surf anymore, I hurt my back.", ["User no longer surfs"]),
        # Details and dates kept; people's words, not internal verbs.
        ("I live in Dubai since January.", ["User lives in Dubai"]),
        ("I'm a firefighter in Leeds.", ["User works as a firefighter", "User lives in Leeds"]),
        ("I'm Nia, a vet in Cardiff.", ["User's name is Nia", "User works as a vet", "User lives in Cardiff"]),
        ("I switched to day shifts.", ["User works day shifts"]),
        ("I switched to project management.", ["User works in project management"]),
        ("I quit Emirates and joined Etihad this month.", ["User works at Etihad"]),
        ("I speak Japanese, English and Arabic.", ["User speaks Japanese, English and Arabic"]),
        # Corrections.
        ("Actually I'm not vegetarian anymore.", ["User is no longer vegetarian"]),
        ("Actually I'm not allergic to penicillin, the test was wrong.", ["User is no longer allergic to penicillin"]),
    ],
)
def test_issue_12_classes(text: str, expected: list[str]) -> None:
    assert statements(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "I live in hope.",
        "I LIVE IN HOPE!",
        "I live in hope that Leeds United get promoted this year.",
        "My team lost again, but I live in hope.",
        "Ha, I live in the library basically.",
        "My boss Henrik is a nightmare.",  # an opinion, not a job (the name is kept: see below)
        "I'm a terrible cook, I can burn water.",
        "I love it.",
    ],
)
def test_idioms_and_opinions_are_not_facts(text: str) -> None:
    said = [s for s in statements(text) if "named" not in s]
    assert said == []
    # Positive control: the same shapes with a real value are read.
    assert statements("I live in Hove.") == ["User lives in Hove"]
    assert statements("I LIVE IN HOVE!") == ["User lives in HOVE"]


@pytest.mark.parametrize(
    "text",
    [
        "Sure, and I'm also the Queen of England, lol.",
        "Lol, sure, I'm a Jedi knight in my spare time.",
        "I'm the Magnus Carlsen of my street, ha.",
        "I live in Monaco, haha.",
    ],
)
async def test_jokes_and_sarcasm_are_below_the_gate(text: str) -> None:
    out = await extract(text)
    assert all(i.confidence < 0.7 for i in out.items)
    firm = await extract("I live in Monaco.")  # positive control
    assert [(i.statement, i.confidence) for i in firm.items] == [("User lives in Monaco", 0.9)]


async def test_a_plan_dated_after_its_message_is_below_the_gate() -> None:
    [item] = (await extract("We're moving to Abu Dhabi next month.")).items
    assert (item.statement, item.confidence) == ("User lives in Abu Dhabi", 0.4)
    [done] = (await extract("We moved to Abu Dhabi last month.")).items  # positive control
    assert done.confidence == 0.9 and done.valid_at == datetime(2026, 2, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "at", "valid_at"),
    [
        ("I got married last month.", T, datetime(2026, 2, 1, tzinfo=UTC)),
        ("By the way I live in Hamburg now, moved last week.", T, datetime(2026, 3, 2, tzinfo=UTC)),
        ("Been cycling to work every day since January.", T, datetime(2026, 1, 1, tzinfo=UTC)),
        ("I live in Dubai since January.", T, datetime(2026, 1, 1, tzinfo=UTC)),
        ("I moved to Geelong two weeks ago.", T, datetime(2026, 2, 24, tzinfo=UTC)),
        ("I turned 30 on Tuesday.", T, datetime(2026, 3, 3, tzinfo=UTC)),  # T is a Tuesday: the one before
        ("I adopted a greyhound named Dash last weekend.", T, datetime(2026, 3, 7, tzinfo=UTC)),
        ("I live in Busan now, I moved on the first of March.", T, datetime(2026, 3, 1, tzinfo=UTC)),
        ("We moved to Winterthur at the start of February.", T, datetime(2026, 2, 1, tzinfo=UTC)),
    ],
)
async def test_life_event_dates(text: str, at: datetime, valid_at: datetime) -> None:
    [item] = (await extract(text, at=at)).items
    assert item.valid_at == valid_at


async def test_just_kidding_takes_back_the_previous_message() -> None:
    ep = episode(
        ("user", "Oh and I've got a dog allergy, how ironic is that."),
        ("assistant", "Oh no!"),
        ("user", "Just kidding about the allergy, I'm fine with dogs."),
        ("user", "I hate coriander."),
    )
    out = await OfflineExtractor().extract(ep, [])
    assert [i.statement for i in out.items] == ["User hates coriander"]
    # Positive control: without the take-back the allergy is read.
    ep = episode(("user", "Oh and I've got a dog allergy, how ironic is that."))
    assert [i.statement for i in (await OfflineExtractor().extract(ep, [])).items] == ["User is allergic to dogs"]


async def test_scratch_that_cancels_the_claim_it_retracts() -> None:
    """Issue 20: "no wait, scratch that, I'm still vegetarian" three minutes after "I'm not
    vegetarian any more" cancels the change; the retracting message's own claim still counts."""
    known = [fact(1, "User is vegetarian")]
    ep = episode(("user", "I'm not vegetarian any more"), ("user", "no wait, scratch that, I'm still vegetarian"))
    out = await OfflineExtractor().extract(ep, known)
    assert out.items == [] and [c.statement for c in out.covered] == ["User is vegetarian"]
    # Positive control: without the retraction the change is proposed.
    ep = episode(("user", "I'm not vegetarian any more"))
    items = (await OfflineExtractor().extract(ep, known)).items
    assert [(i.kind, i.statement) for i in items] == [("contradiction", "User is no longer vegetarian")]


async def test_i_said_x_not_x_takes_back_the_word() -> None:
    ep = episode(
        ("user", "Kenji and I got married last month!"), ("user", "Wait, I said married, we got engaged, not married.")
    )
    out = await OfflineExtractor().extract(ep, [])
    # the correction keeps the partner the withdrawn claim named (the fleet benchmark found it lost)
    assert [i.statement for i in out.items] == ["User is engaged to Kenji"]
    # positive control: with no partner named before, the status stays bare
    ep = episode(("user", "We got married last month!"), ("user", "Wait, I said married, we got engaged, not married."))
    assert [i.statement for i in (await OfflineExtractor().extract(ep, [])).items] == ["User is engaged"]
    # and a status said without a correction takes no partner from anywhere
    ep = episode(("user", "Kenji and I got married last month!"), ("user", "My sister got engaged."))
    assert [i.statement for i in (await OfflineExtractor().extract(ep, [])).items] == ["User is married to Kenji"]


async def test_habit_and_preference_updates_and_contradictions() -> None:
    existing = [
        fact(1, "User goes swimming every Saturday"),
        fact(2, "User loves sushi"),
        fact(3, "User drinks about five coffees a day"),
        fact(4, "User plays the drums in a pub band"),
    ]
    text = (
        "I stopped swimming. Actually I don't love sushi anymore. I drink two coffees a day now. "
        "I still play the drums with the band."
    )
    out = await extract(text, existing)
    assert [(i.statement, i.kind, i.supersedes) for i in out.items] == [
        ("User no longer goes swimming", "contradiction", "1"),
        ("User no longer loves sushi", "contradiction", "2"),
        ("User drinks two coffees a day", "update", "3"),
    ]
    # The fact that says more ("in a pub band") covers the shorter repeat.
    assert [(c.statement, c.predicted_by) for c in out.covered] == [("User plays the drums", "4")]


async def test_relatives_with_names_read_back_and_update() -> None:
    out = await extract(
        "My sister lives in Berlin now.",
        [fact(1, "User's sister is a doctor in Vancouver"), fact(2, "User's sister lives in Vancouver")],
    )
    assert [(i.statement, i.kind, i.supersedes) for i in out.items] == [
        ("User's sister lives in Berlin", "update", "2")
    ]
    back = parse_statement("User's parents live in Osaka")
    assert back is not None and back.statement == "User's parents live in Osaka" and back.slot == "parents:home"


async def test_prediction_reads_as_prose_without_slot_keys() -> None:
    existing = [fact(1, "User's favourite book is Middlemarch"), fact(2, "User's wife is a dentist")]
    out = await extract("My favourite book is Dune. My wife is a surgeon. My sister is a nurse.", existing)
    assert "favourite:" not in out.prediction and "wife:" not in out.prediction and ":job" not in out.prediction
    assert "- User's favourite book is Middlemarch." in out.prediction
    assert "Nothing was known yet about their sister's work." in out.prediction
    # Positive control: the update is still proposed against the fact the prediction lists.
    assert [(i.kind, i.supersedes) for i in out.items][:2] == [("update", "1"), ("update", "2")]


async def test_prediction_says_which_listed_statements_are_still_pending() -> None:
    # A pending candidate passed as an `existing` record (status "pending", a negative id).
    pending = Knowledge(
        id=-7,
        user_id="ana",
        statement="User lives in Lisbon",
        status="pending",  # type: ignore[arg-type]
        created_at=T,
        created_by="extraction",
        candidate_id=7,
    )
    out = await extract("I moved to Porto. My sister is a nurse.", [pending, fact(2, "User's sister is a nurse")])
    assert "- User lives in Lisbon (pending review)." in out.prediction
    assert "- User's sister is a nurse." in out.prediction  # positive control: an approved fact, no note
    assert [(i.kind, i.supersedes) for i in out.items] == [("update", "-7")]


async def test_a_person_named_before_is_recognised_by_name() -> None:
    ep = episode(("user", "My brother Max lives in Graz."), ("user", "Max is an engineer. Paul is a teacher."))
    out = await OfflineExtractor().extract(ep, [])
    # Must not: Paul was never placed, so "Paul is a teacher" is not read as anyone's.
    assert [i.statement for i in out.items] == ["User's brother Max lives in Graz", "User's brother Max is an engineer"]
    # From a known fact, in a later episode; the evidence is still the user's own sentence.
    out = await extract("Luca got a job at ETH last month.", [fact(1, "User's husband Luca works at Google")])
    [item] = out.items
    assert (item.statement, item.kind, item.supersedes) == ("User's husband Luca works at ETH", "update", "1")
    assert item.evidence == "Luca got a job at ETH last month."


def test_extractor_attributes_are_typed() -> None:
    ex = OfflineExtractor()
    assert (ex.name, ex.model) == ("offline", None)
    assert isinstance(ex.prompt_version, str) and ex.prompt_version.startswith("rules-")


async def test_a_hedge_is_calibrated_by_hedges_only_not_by_its_slots_firm_approvals() -> None:
    """Fifty approvals of firm "lives in" claims do not lift "If I were rich, I would live in
    Lisbon" over the 0.7 gate (they did, under one rule per slot); they do lift a firm claim, and
    decisions on the slot's tentative claims move the tentative one."""
    ex = OfflineExtractor()
    ex.calibration = {"home": (50, 0)}
    [hedge] = (await ex.extract(episode(("user", "If I were rich, I would live in Lisbon.")), [])).items
    [firm] = (await ex.extract(episode(("user", "I live in Lisbon.")), [])).items
    assert (hedge.rule, hedge.confidence) == ("home~tentative", 0.4)
    assert (firm.rule, firm.confidence) == ("home", calibrated(0.9, 50, 0))
    [joke] = (await ex.extract(episode(("user", "I live in Lisbon, lol.")), [])).items
    assert (joke.rule, joke.confidence) == ("home~joking", 0.3)
    ex.calibration = {"home~tentative": (50, 0)}
    [hedge] = (await ex.extract(episode(("user", "If I were rich, I would live in Lisbon.")), [])).items
    assert hedge.confidence == calibrated(0.4, 50, 0) > 0.7


async def test_stopping_a_habit_ends_it_in_the_habits_own_words() -> None:
    """ "I stopped swimming" ends "User swims twice a week" (found in the fleet benchmark: it was
    queued as a new "User no longer goes swimming" beside the habit it ends)."""
    items = (await extract("I stopped swimming, the pool is too far now.", [fact(1, "User swims twice a week")])).items
    assert [(i.kind, i.statement, i.supersedes) for i in items] == [("contradiction", "User no longer swims", "1")]
    # the end of a habit said with a detail is not the end of all of it
    items = (await extract("I stopped swimming on Saturdays.", [fact(1, "User swims twice a week")])).items
    assert [(i.kind, i.supersedes) for i in items] == [("new", None)]
    # positive control: a habit said with "goes" keeps its words
    items = (await extract("I stopped swimming.", [fact(1, "User goes swimming every Saturday")])).items
    assert [(i.kind, i.statement) for i in items] == [("contradiction", "User no longer goes swimming")]
    # and taking it up again replaces the end
    items = (await extract("I swim twice a week now.", [fact(1, "User no longer goes swimming")])).items
    assert [(i.kind, i.statement, i.supersedes) for i in items] == [("update", "User swims twice a week", "1")]


# -- issue 27: special categories said in chat --------------------------------------------------


@pytest.mark.parametrize(
    ("text", "statement", "category"),
    [
        ("I'm on insulin.", "User is on insulin", "health"),
        ("We go to mosque on Fridays.", "User goes to mosque on Fridays", "religion"),
        ("I'm in the union at work.", "User is in the union at work", "trade_union"),
        ("I'm Muslim.", "User is Muslim", "religion"),
        ("I'm gay.", "User is gay", "sexual_orientation"),
        ("I'm pregnant!", "User is pregnant", "health"),
        ("I go to Mass on Sundays.", "User goes to Mass on Sundays", "religion"),
        ("I voted Labour.", "User voted Labour", "political_opinion"),
        ("I'm a Unite rep.", "User is a Unite rep", "trade_union"),
        ("I pray five times a day.", "User prays five times a day", "religion"),
        ("We celebrate Diwali.", "User celebrates Diwali", "religion"),
        ("I was in prison for 2 years.", "User was in prison", "criminal_record"),
    ],
)
async def test_special_categories_said_in_chat_become_candidates_with_their_category(
    text: str, statement: str, category: str
) -> None:
    out = await extract(text)
    assert [(i.statement, i.category or category_of(i.statement)) for i in out.items] == [(statement, category)]
    assert not any(i.statement.startswith("User's name is") for i in out.items)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'm Ana.", ["User's name is Ana"]),  # a name is still a name
        ("I'm on holiday.", []),
        ("I'm in the choir.", []),
        ("I was in Paris last year.", []),
        ("I cook dinner every night.", ["User cooks dinner every night"]),
        ("I'm allergic to cats.", ["User is allergic to cats"]),  # the general rule keeps its claim
    ],
)
def test_special_rules_leave_other_clauses_to_the_general_rules(text: str, expected: list[str]) -> None:
    assert statements(text) == expected

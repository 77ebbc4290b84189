"""The claim model (engine.claims): every example of the slot lexicons (slots.toml) runs here, the
must-not cases of issue 26 each beside its positive control, and the loader's own refusals."""

from __future__ import annotations

import tomllib
from importlib import resources
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.claims import (
    Claim,
    cardinality_of,
    claim_for,
    known_slot,
    read_claim,
    relation,
    slot_names,
)
from engine.claims.lexicon import Lexicon, LexiconError, lexicon

LEX = lexicon()
POSITIVE = [pytest.param(spec.name, ex, id=f"{spec.name}:{ex.statement}") for spec, ex in LEX.examples()]
NEGATIVE = [
    pytest.param(spec.name, statement, id=f"{spec.name}:not:{statement}")
    for spec in LEX.slots.values()
    for statement in spec.not_examples
]


def in_slot(claim: Claim, slot: str) -> bool:
    """Whether a claim is in `slot` (a family "favourite_*" holds every favourite_<thing>)."""
    if claim.slot is None:
        return False
    if slot.endswith("_*"):
        return claim.slot.startswith(slot[:-1])
    return claim.slot == slot


# -- the data's own examples ---------------------------------------------------------------------


@pytest.mark.parametrize(("slot", "example"), POSITIVE)
def test_positive_example(slot: str, example: Any) -> None:
    claim = read_claim(example.statement)
    assert (claim.slot, claim.value, claim.negated) == (example.slot, example.value, example.negated)
    assert in_slot(claim, slot)
    assert claim.cardinality == LEX.slots[slot].cardinality
    assert claim.subject == "user"


@pytest.mark.parametrize(("slot", "statement"), NEGATIVE)
def test_negative_example(slot: str, statement: str) -> None:
    assert not in_slot(read_claim(statement), slot)


def test_every_slot_has_positive_and_negative_examples() -> None:
    assert LEX.slots, "slots.toml lists no slot"
    for spec in LEX.slots.values():
        assert spec.examples, f"{spec.name} has no positive example"
        assert spec.not_examples, f"{spec.name} has no negative example"
        assert any(not ex.negated for ex in spec.examples), f"{spec.name} has no plain (not negated) example"


def test_every_slot_of_the_contract_is_known() -> None:
    """DESIGN.md's contract names these; the gate and the policies count on them."""
    contract = {
        "home", "employer", "job_title", "marital_status", "partner", "age", "name", "favourite_*", "children",
        "siblings", "friends", "pets", "languages", "allergies", "hobbies", "places_visited", "diet",
    }  # fmt: skip
    assert contract <= slot_names()
    many = {"children", "siblings", "friends", "pets", "languages", "allergies", "hobbies", "places_visited"}
    for name in contract - {"favourite_*"}:
        assert cardinality_of(name) == ("many" if name in many else "one"), name
    assert cardinality_of("favourite_food") == "one"
    assert cardinality_of("favourite_") is None
    assert cardinality_of("nonsense") is None
    assert cardinality_of(None) is None


# -- the ways of saying one claim ------------------------------------------------------------------

HOME_PORTO = [
    "User lives in Porto.",
    "The user resides in porto",
    "The user lives in Porto",
    "User resides in Porto",
    "User moved to Porto",
    "User is based in Porto",
    "User's home is in Porto",
    "the user's home is in Porto!",
    "User relocated to Porto",
    "User currently lives in Porto",
    "USER LIVES IN PORTO",
    "User lives in Po\ufe0frto",  # a variation selector inside the word
    "Usеr lives in Porto",  # Cyrillic е in the subject: the confusables skeleton reads it
]


@pytest.mark.parametrize("statement", HOME_PORTO)
def test_wordings_of_one_home_are_one_claim(statement: str) -> None:
    claim = read_claim(statement)
    assert (claim.slot, claim.value, claim.negated) == ("home", "porto", False)
    assert relation(read_claim("User lives in Porto"), claim) == "same"


@pytest.mark.parametrize("statement", HOME_PORTO)
def test_wordings_of_another_home_replace(statement: str) -> None:
    assert relation(read_claim("User lives in Lisbon"), read_claim(statement)) == "replaces"


def test_employer_wordings_replace() -> None:
    old = read_claim("User works at Google")
    for new in ("User is employed by Meta", "User works for Meta", "User joined Meta", "User's employer is Meta"):
        assert relation(old, read_claim(new)) == "replaces", new
    # positive control: the same employer in other words is the same claim
    assert relation(old, read_claim("The user is employed by Google.")) == "same"


# -- must-not, each with its positive control ---------------------------------------------------


def test_house_and_horse_are_distinct() -> None:
    house, horse = read_claim("User owns a house"), read_claim("User owns a horse")
    assert (house.value, horse.value) == ("house", "horse")
    assert relation(house, horse) == "distinct"
    # control: the same possession twice is the same
    assert relation(house, read_claim("The user owns a house.")) == "same"


def test_second_child_is_distinct() -> None:
    leo, max_ = read_claim("User has a son named Leo"), read_claim("User has a son named Max")
    assert leo.cardinality == "many"
    assert relation(leo, max_) == "distinct"
    assert relation(read_claim("User has a son"), read_claim("User has a daughter")) == "distinct"
    # control: the same child said another way is the same
    assert relation(leo, read_claim("User's son is Leo")) == "same"


def test_sara_and_sarah_are_not_the_same() -> None:
    sara, sarah = read_claim("User likes Sara"), read_claim("User likes Sarah")
    assert relation(sara, sarah) != "same"
    assert relation(sara, sarah) == "distinct"
    # control
    assert relation(sara, read_claim("The user likes Sara.")) == "same"


def test_divorced_replaces_married_to() -> None:
    married = read_claim("User is married to Sam")
    assert married.slot == "partner"
    assert relation(married, read_claim("User is divorced")) == "replaces"
    assert relation(read_claim("User is divorced"), married) == "replaces"
    assert relation(read_claim("User is married"), read_claim("User is divorced")) == "replaces"
    assert relation(read_claim("User is married"), read_claim("User is single")) == "replaces"
    # control: married to Sam, said as "husband", is the same; married (no name) is not replaced
    assert relation(married, read_claim("User's husband is Sam")) == "same"
    assert relation(married, read_claim("User is married")) == "distinct"
    # another partner replaces
    assert relation(married, read_claim("User is married to Alex")) == "replaces"


def test_engaged_then_married_to_the_same_person_replaces_the_status() -> None:
    engaged, married = read_claim("User is engaged to Tom"), read_claim("User is married to Tom")
    assert (engaged.slot, engaged.value) == (married.slot, married.value) == ("partner", "tom")
    assert relation(engaged, married) == "replaces"
    # control: the same marriage said twice is the same
    assert relation(married, read_claim("User's husband is Tom")) == "same"
    # one that says more (husband: married) is not the same as one that does not (partner)
    partner = read_claim("User's partner is Tom")
    assert (partner.slot, partner.value, partner.implies) == ("partner", "tom", ())
    assert relation(partner, married) == relation(married, partner) == "distinct"


@pytest.mark.parametrize(
    ("idiom", "control", "slot"),
    [
        ("User lives in fear of losing her job", "User lives in Lisbon", "home"),
        ("User lives in the moment", "User lives in the Netherlands", "home"),
        ("User moved to tears by the film", "User moved to Porto", "home"),
        ("User works for a living", "User works for Acme", "employer"),
        ("User works at her own pace", "User works at a hospital", "employer"),
        ("User speaks at conferences", "User speaks German", "languages"),
        ("User plays it safe", "User plays tennis", "hobbies"),
        ("User is seeing Dr. Lee", "User is dating Dr. Lee", "partner"),
        ("User lives in Porto and works at Google", "User lives in Porto", "home"),
    ],
)
def test_idioms_and_two_clause_statements_are_not_read_as_a_slot(idiom: str, control: str, slot: str) -> None:
    """A false one-valued reading would let the gate end a true fact; free text goes to people."""
    assert read_claim(idiom).slot is None
    assert relation(read_claim(control), read_claim(idiom)) == "unknown"
    assert read_claim(control).slot == slot


def test_not_vegan_replaces_vegan() -> None:
    vegan, not_vegan = read_claim("User is vegan"), read_claim("User is not vegan")
    assert (not_vegan.slot, not_vegan.value, not_vegan.negated) == ("diet", "vegan", True)
    assert relation(vegan, not_vegan) == "replaces"
    assert relation(vegan, read_claim("User isn't vegan")) == "replaces"
    # control: vegan said again is the same; a negation says nothing about another diet
    assert relation(vegan, read_claim("The user is a vegan.")) == "same"
    assert relation(not_vegan, read_claim("User is vegetarian")) == "distinct"


def test_no_longer_replaces_on_a_many_slot_only_its_own_value() -> None:
    cat = read_claim("User has a cat")
    assert relation(cat, read_claim("User no longer has a cat")) == "replaces"
    assert relation(cat, read_claim("User no longer has a dog")) == "distinct"
    assert relation(cat, read_claim("User has a dog")) == "distinct"


@pytest.mark.parametrize("mark", ["\ufe0f", "\U000e0100", "\u180b", "\u200d", "\u00ad", "\U000e0041"])
def test_invisible_characters_give_the_same_claim(mark: str) -> None:
    plain = read_claim("User has a cat")
    marked = read_claim(f"User has a ca{mark}t")
    assert marked == plain
    assert relation(plain, marked) == "same"
    # control: a visible letter in the same place is another value
    assert relation(plain, read_claim("User has a caot")) != "same"


def test_negated_other_value_is_distinct_not_a_replacement() -> None:
    """Fail closed: "User no longer lives in Lisbon" does not say where the user lives now."""
    assert relation(read_claim("User lives in Porto"), read_claim("User no longer lives in Lisbon")) == "distinct"
    assert relation(read_claim("User lives in Lisbon"), read_claim("User no longer lives in Lisbon")) == "replaces"


def test_free_text_is_unknown() -> None:
    free = read_claim("User is a doctor and rides horses on weekends")
    assert free.slot is None and free.free_text and free.cardinality is None
    assert free.value == "user is a doctor and rides horses on weekends"
    assert relation(free, read_claim("User lives in Porto")) == "unknown"
    # two free texts: the identical canonical text is the same value, anything else is unknown
    assert relation(free, read_claim("The user is a doctor and rides horses on weekends")) == "unknown"
    assert relation(free, read_claim("USER IS A DOCTOR AND RIDES HORSES ON WEEKENDS.")) == "same"
    assert relation(free, read_claim("User is a doctor and rides horse on weekends")) == "unknown"
    # control: a statement about someone else is free text, never the user's slot
    assert read_claim("Ana lives in Porto").slot is None
    assert read_claim("User's sister lives in Oslo").slot is None


def test_free_text_value_ignores_trailing_punctuation_only() -> None:
    assert read_claim("User rides horses.").value == read_claim("user rides horses").value
    assert read_claim("User rides horses").value != read_claim("User rides horse").value


def test_name_shape_reads_case_before_folding() -> None:
    assert read_claim("User's wife is Ana").slot == "partner"
    assert read_claim("User's wife is pregnant").slot is None
    assert read_claim("User's wife is ana").slot is None  # no capital: not positively a name


def test_time_tails_do_not_change_the_value() -> None:
    for statement in ("User lives in York since 2015", "User moved to York in March", "User lives in York now"):
        assert read_claim(statement).value == "york", statement


def test_read_claim_is_cached() -> None:
    assert read_claim("User lives in Porto") is read_claim("User lives in Porto")


# -- slot hints (an LLM's own label) ---------------------------------------------------------------


def test_known_slot_normalises_and_refuses_unknown() -> None:
    assert known_slot("home") == "home"
    assert known_slot(" Home ") == "home"
    assert known_slot("job title") == "job_title"
    assert known_slot("favorite_colour") == "favourite_color"
    assert known_slot("favourite food") == "favourite_food"
    assert known_slot("favourite_*") is None
    assert known_slot("favourite_") is None
    assert known_slot("shoe_size") is None
    assert known_slot(None) is None
    assert known_slot(7) is None


def test_claim_for_uses_a_known_hint_only_on_free_text() -> None:
    hinted = claim_for("User calls Porto her base these days", "home")
    assert (hinted.slot, hinted.cardinality) == ("home", "one")
    assert relation(read_claim("User lives in Lisbon"), hinted) == "replaces"
    # the lexicon stays the authority: a statement it reads keeps its own slot
    assert claim_for("User lives in Porto", "employer") == read_claim("User lives in Porto")
    # an unknown hint is ignored (free text stays free)
    assert claim_for("User calls Porto her base these days", "shoe_size").slot is None
    assert claim_for("User calls Porto her base these days", None).slot is None


# -- the loader refuses data it cannot read --------------------------------------------------------


def load(data: str) -> Lexicon:
    lex = Lexicon(tomllib.loads(data))
    lex.check()
    return lex


GRAMMAR = '[grammar]\nsubjects = ["user"]\npossessives = ["user\'s"]\n'


@pytest.mark.parametrize(
    ("slot_toml", "message"),
    [
        ('[[slot]]\nname = "x"\ncardinality = "some"\n', "cardinality"),
        ('[[slot]]\nname = "x"\ncardinality = "one"\nsays = ["lives {nope}"]\n', "unknown placeholder"),
        ('[[slot]]\nname = "x"\ncardinality = "one"\nsays = ["lives in"]\n', "no {value}"),
        ('[[slot]]\nname = "x_*"\ncardinality = "one"\nsays = ["likes {value}"]\n', "needs {thing}"),
        (
            '[[slot]]\nname = "x"\ncardinality = "one"\n'
            'says = [{ say = "is {value}", implies = { slot = "y", value = "z" } }]\n',
            "unknown slot",
        ),
        ('[[slot]]\nname = "x"\ncardinality = "one"\n[[slot]]\nname = "x"\ncardinality = "one"\n', "twice"),
    ],
)
def test_loader_names_what_is_wrong(slot_toml: str, message: str) -> None:
    with pytest.raises(LexiconError, match=message):
        load(GRAMMAR + slot_toml)


def test_loader_positive_control() -> None:
    lex = load(GRAMMAR + '[[slot]]\nname = "x"\ncardinality = "one"\nsays = ["likes {value}"]\n')
    reading = lex.read("user likes tea", "User likes tea")
    assert reading is not None and (reading.slot, reading.value) == ("x", "tea")


def test_the_packaged_data_is_the_data_read() -> None:
    raw = resources.files("engine.claims").joinpath("slots.toml").read_text(encoding="utf-8")
    assert [s["name"] for s in tomllib.loads(raw)["slot"]] == list(LEX.slots)


# -- properties ------------------------------------------------------------------------------------

IGNORABLES = ["\ufe0f", "\ufe00", "\U000e0100", "\u180b", "\u200b", "\u200d", "\u2060", "\u00ad", "\U000e0041"]
STATEMENTS = [ex.statement for _, ex in LEX.examples()]


@given(
    statement=st.sampled_from(STATEMENTS),
    marks=st.lists(st.tuples(st.integers(min_value=0), st.sampled_from(IGNORABLES)), min_size=1, max_size=4),
)
@settings(max_examples=300, deadline=None)
def test_invisible_marks_anywhere_never_change_the_claim(statement: str, marks: list[tuple[int, str]]) -> None:
    marked = statement
    for at, mark in marks:
        cut = at % (len(marked) + 1)
        marked = marked[:cut] + mark + marked[cut:]
    assert read_claim(marked) == read_claim(statement)


@given(st.text(max_size=80))
@settings(max_examples=300, deadline=None)
def test_any_text_reads_without_error(text: str) -> None:
    claim = read_claim(text)
    assert claim.subject == "user"
    assert claim.free_text or (claim.value and claim.cardinality in ("one", "many"))


@given(st.text(alphabet=st.sampled_from(list("User's lives in Porto vegan not no longer is a the")), max_size=60))
@settings(max_examples=300, deadline=None)
def test_word_salad_reads_without_error(text: str) -> None:
    read_claim(text)


def test_relation_is_symmetric_and_reflexive_and_same_is_key_equality_over_every_example() -> None:
    """Claim.key is what an index of facts can use: two claims are "same" exactly when their keys
    are equal (so a dict lookup finds what relation() would call the same)."""
    claims = [read_claim(s) for s in [*STATEMENTS, "User keeps bees", "user keeps bees.", "User keeps hens"]]
    for a in claims:
        assert relation(a, a) == "same"
        for b in claims:
            assert relation(a, b) == relation(b, a), (a, b)
            assert (relation(a, b) == "same") == (a.key == b.key), (a, b)


def test_all_caps_and_title_case_carry_no_name() -> None:
    """Capitals say nothing when every word has one: a name is then not positively recognised."""
    assert read_claim("USER'S WIFE IS PREGNANT").slot is None
    assert read_claim("User's Wife Is Pregnant").slot is None
    # control: the writer's own capital on a name, and a place that needs none
    assert read_claim("User's wife is Ana").slot == "partner"
    assert read_claim("USER LIVES IN PORTO").slot == "home"


def test_a_job_at_an_employer_implies_the_employer() -> None:
    engineer = read_claim("User is a software engineer at Spotify")
    assert (engineer.slot, engineer.value) == ("job_title", "software engineer")
    assert [(c.slot, c.value) for c in engineer.implies] == [("employer", "spotify")]
    assert relation(engineer, read_claim("User started a new job at Klarna")) == "replaces"
    # control: the same employer is not replaced, and a judgement is not a job
    assert relation(engineer, read_claim("User works at Spotify")) == "distinct"
    assert read_claim("User is a good cook").slot is None
    assert read_claim("User is a teacher").slot == "job_title"


def test_one_valued_contacts_and_things() -> None:
    assert relation(read_claim("User's manager is Dana"), read_claim("The user's boss is Tom")) == "replaces"
    assert relation(read_claim("User's dentist is Dr. Silva"), read_claim("User's manager is Dr. Silva")) == "distinct"
    assert relation(read_claim("User commutes by bike"), read_claim("User commutes by bicycle")) == "same"
    assert relation(read_claim("User drives a Toyota Corolla"), read_claim("User drives a Tesla Model 3")) == "replaces"
    assert relation(read_claim("User lives in Lisbon"), read_claim("User lives in Lisbon, Portugal")) == "same"


def test_the_first_word_index_reads_what_trying_every_pattern_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The index is only a shortcut: with every pattern tried in file order, every example and
    counter-example reads the same."""
    from engine.claims.lexicon import light_form
    from engine.text import canonical

    statements = [*STATEMENTS, *(s for spec in LEX.slots.values() for s in spec.not_examples)]
    indexed = [LEX.read(canonical(s), light_form(s)) for s in statements]
    monkeypatch.setattr(
        LEX, "_candidates", lambda possessive, word: tuple(p for p in LEX.patterns if p.possessive == possessive)
    )
    assert [LEX.read(canonical(s), light_form(s)) for s in statements] == indexed


def test_a_second_value_of_a_one_valued_slot_is_not_read_as_a_replacement() -> None:
    """Issue 26: "a second job is taken to replace the first". "also" and "part-time" are where a
    second employer shows; those statements stay free text (a person decides), never a link."""
    google = read_claim("User works at Google")
    for second in ("User also works at Starbucks", "User works part-time at Starbucks"):
        assert relation(google, read_claim(second)) == "unknown", second
    # control: a plain new employer replaces
    assert relation(google, read_claim("User works at Starbucks")) == "replaces"


def test_a_second_detail_keeps_two_statements_apart() -> None:
    """ "User works at Google as a nurse" also says the job: it is not dropped as the same claim as
    "User works at Google" (nothing a user said is lost), and it still replaces another employer."""
    nurse = read_claim("User works at Google as a nurse")
    assert [(c.slot, c.value) for c in nurse.implies] == [("job_title", "nurse")]
    assert relation(read_claim("User works at Google"), nurse) == "distinct"
    assert relation(read_claim("User works at Meta"), nurse) == "replaces"
    assert relation(read_claim("User works as a teacher"), nurse) == "replaces"
    # control: the same two claims in the other order are the same
    assert relation(nurse, read_claim("The user works as a nurse at Google.")) == "same"
    assert relation(nurse, read_claim("User works for Google as a nurse")) == "same"
    assert nurse.key == read_claim("User works as a nurse at Google").key != read_claim("User works at Google").key
    # "as of 2020" is a time, not a job
    assert read_claim("User works at Google as of 2020").implies == ()


def test_a_statement_that_says_more_is_not_the_same_claim() -> None:
    """ "Nothing a user said is lost": "User lives in Porto with his wife" is not dropped as a
    duplicate of "User lives in Porto", though its home is the same (and another home replaces it)."""
    detailed = read_claim("User lives in Porto with his wife")
    assert (detailed.slot, detailed.value, detailed.detail) == ("home", "porto", "with his wife")
    plain = read_claim("User lives in Porto")
    assert detailed.key != plain.key
    assert relation(plain, detailed) == relation(detailed, plain) == "distinct"
    assert relation(read_claim("User lives in Lisbon"), detailed) == "replaces"
    assert read_claim("User speaks Spanish a little").detail == "a little"
    # controls: the same detail is the same claim; a time tail or a country is not detail
    assert relation(detailed, read_claim("The user resides in Porto with his wife.")) == "same"
    assert read_claim("User lives in Porto since 2015").key == plain.key
    assert read_claim("User lives in Porto, Portugal").key == plain.key


@pytest.mark.parametrize("statement", STATEMENTS)
def test_every_example_reads_the_same_with_the_other_subject_form(statement: str) -> None:
    """ "User ..." and "The user ...", "User's" and "The user's", any case: one claim."""
    if statement.startswith("User"):
        other = "The user" + statement[len("User") :]
    elif statement.startswith("The user"):
        other = "User" + statement[len("The user") :]
    else:
        pytest.fail(f"an example that does not start with the user: {statement!r}")
    assert read_claim(other) == read_claim(statement)
    assert read_claim(other.rstrip(".") + ".") == read_claim(statement)


def test_a_negated_claim_implies_nothing() -> None:
    no_longer = read_claim("User is no longer married to Sam")
    assert (no_longer.slot, no_longer.value, no_longer.negated, no_longer.implies) == ("partner", "sam", True, ())
    assert relation(read_claim("User is married to Sam"), no_longer) == "replaces"
    # control: the plain statement implies its status
    assert [(c.slot, c.value) for c in read_claim("User is married to Sam").implies] == [("marital_status", "married")]

"""Issue 26: same, replaces or both, one value model for every way in (engine.gate over engine.claims).

Each must-not is paired with its positive control, on both backends where storage is involved:

- the same value is only the identical canonical text or claim: refused or dropped; a look-alike
  (one edit) is queued or added with a mark naming what it looks like, never dropped;
- a value near a tombstone is marked, the tombstoned value itself refused;
- marks are stored with the candidate and read back wherever candidates are read;
- replaces = one-valued slot, another value, overlapping valid times; many-valued slots and
  disjoint intervals are kept; free text is a "may replace" question, never a link, unless a judge
  says "replaces";
- a supersession starting before the old fact is refused;
- imports skip only the identical canonical text and name the fact each skip duplicates;
- a statement made only of invisible characters is refused at every door (exit 2 in the CLI).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import Memory
from engine.claims import read_claim
from engine.claims.judge import ValueJudge, Verdict, VerdictKind
from engine.errors import (
    DecisionRequiredError,
    DuplicateCandidateError,
    DuplicateFactError,
    InvalidStatementError,
    SettleRequiredError,
    TombstonedError,
    UserInputError,
)
from engine.models import Candidate, CandidateContext, Episode, Extraction, GapItem, Knowledge, Mark
from engine.text import ValueIndex, value_key
from tests.engine_helpers import Clock, snapshot


def day(year: int, month: int = 1) -> datetime:
    return datetime(year, month, 1, tzinfo=UTC)


INVISIBLE_ONLY = ("\u200b", "\ufe0f\u200d", "\u2060 \u00ad", "\U000e0041\U000e0042", " \u180b ")


# -- the same value, and look-alikes ---------------------------------------------------------------


async def test_a_look_alike_proposal_is_queued_with_a_mark_and_the_same_value_is_refused(mem: Memory) -> None:
    horse = await mem.add_knowledge("u", "User owns a horse", "support")
    out = await mem.propose("u", "User owns a house", "agent")
    assert out.candidate_id is not None, "a look-alike is another true value: never dropped"
    cand = await mem.review.get(out.candidate_id)
    assert [(m.kind, m.target_id) for m in cand.marks] == [("looks_like", horse.id)]
    assert "looks like fact" in cand.marks[0].note
    # marks come back wherever candidates are read
    [listed] = await mem.review.pending("u")
    assert listed.marks == cand.marks
    # positive control: the same canonical text (case, punctuation, an invisible mark) is refused
    for same in ("user owns a horse.", "User owns a hor\u200bse", "USER OWNS A HORSE!"):
        dup = await mem.propose("u", same, "agent")
        assert dup.duplicate_of == ("knowledge", horse.id), same


async def test_the_same_claim_in_other_words_is_the_same_value(mem: Memory) -> None:
    lisbon = await mem.add_knowledge("u", "User lives in Lisbon", "support")
    assert read_claim("User resides in Lisbon").slot == "home"
    assert (await mem.propose("u", "User resides in Lisbon", "agent")).duplicate_of == ("knowledge", lisbon.id)
    with pytest.raises(DuplicateFactError):
        await mem.add_knowledge("u", "The user is based in Lisbon", "support")
    # control: another value of the slot is not the same value
    assert (await mem.propose("u", "User resides in Porto", "agent")).candidate_id is not None


async def test_a_claim_with_more_detail_is_not_dropped_as_a_duplicate(mem: Memory) -> None:
    porto = await mem.add_knowledge("u", "User lives in Porto", "support")
    assert read_claim("User lives in Porto with his wife").detail
    out = await mem.propose("u", "User lives in Porto with his wife", "agent")
    assert out.duplicate_of is None and out.candidate_id is not None, "what it adds is never dropped"
    # control: the same claim without the detail is the same value
    assert (await mem.propose("u", "The user resides in Porto", "agent")).duplicate_of == ("knowledge", porto.id)


async def test_a_value_near_a_tombstone_is_marked_and_the_tombstoned_value_refused(mem: Memory) -> None:
    cid = await mem.queue_candidate("u", "User collects magnets from Iceland")
    stone = await mem.review.reject(cid, "rev", "wrong user")
    assert stone is not None
    with pytest.raises(TombstonedError):
        await mem.propose("u", "user collects magnets from iceland!", "agent")
    out = await mem.propose("u", "User collects magnets from Ireland", "agent")
    assert out.candidate_id is not None
    marks = (await mem.review.get(out.candidate_id)).marks
    assert [(m.kind, m.target_id) for m in marks] == [("near_tombstone", stone.id)]


async def test_a_trusted_add_of_a_look_alike_is_added_and_reports_its_mark(mem: Memory) -> None:
    sarah = await mem.add_knowledge("u", "User likes Sarah", "support")
    sara = await mem.add_knowledge("u", "User likes Sara", "support")
    assert sara.status == "active"
    assert [(m.kind, m.target_id) for m in sara.marks] == [("looks_like", sarah.id)]
    [audit] = [e for e in await mem.history("u", sara.id) if e.action == "inject"]
    assert audit.note is not None and f"#{sarah.id}" in audit.note
    # control: an unrelated fact carries no mark and no note
    plain = await mem.add_knowledge("u", "User plays chess on Sundays", "support")
    assert plain.marks == ()
    [audit] = [e for e in await mem.history("u", plain.id) if e.action == "inject"]
    assert audit.note is None
    with pytest.raises(DuplicateFactError):
        await mem.add_knowledge("u", "user likes sara.", "support")


# -- replaces ----------------------------------------------------------------------------------------


async def test_a_reworded_replacement_is_linked_and_cannot_be_approved_plainly(mem: Memory) -> None:
    lisbon = await mem.add_knowledge("u", "User lives in Lisbon", "support")
    for text in ("The user lives in Porto", "User moved to Porto"):
        out = await mem.propose("u", text, "agent")
        if out.candidate_id is None:  # the second says the same as the first (one claim): a duplicate
            assert out.duplicate_of is not None and out.duplicate_of[0] == "candidate"
            continue
        cand = await mem.review.get(out.candidate_id)
        assert cand.supersedes_id == lisbon.id, text
        with pytest.raises(DecisionRequiredError):
            await mem.review.approve(cand.id, "rev")
    with pytest.raises(SettleRequiredError):
        await mem.add_knowledge("u", "User is based in Faro", "support")


async def test_a_second_child_is_distinct_a_second_home_replaces(mem: Memory) -> None:
    tom = await mem.add_knowledge("u", "User has a son named Tom", "support")
    out = await mem.propose("u", "User has a son named Max", "agent")
    assert out.candidate_id is not None
    assert (await mem.review.get(out.candidate_id)).supersedes_id is None  # many-valued: both true
    assert (await mem.review.approve(out.candidate_id, "rev")).status == "active"
    assert {k.id for k in await mem.knowledge("u")} >= {tom.id}
    # control: a one-valued slot is replaced
    home = await mem.add_knowledge("u", "User lives in Leeds", "support")
    moved = await mem.propose("u", "User lives in York", "agent")
    assert moved.candidate_id is not None
    assert (await mem.review.get(moved.candidate_id)).supersedes_id == home.id


async def test_disjoint_valid_times_are_history_not_a_replacement(mem: Memory) -> None:
    await mem.add_knowledge("u", "User lives in Leeds", "support", valid_at=day(2010), invalid_at=day(2015, 6))
    york = await mem.add_knowledge("u", "User lives in York", "support", valid_at=day(2015, 6))
    assert york.status == "active"
    # control: an overlapping start is a replacement, and asks how it relates
    with pytest.raises(SettleRequiredError):
        await mem.add_knowledge("u", "User lives in Hull", "support", valid_at=day(2020))


async def test_a_supersession_starting_before_the_old_fact_is_refused(mem: Memory, clock: Clock) -> None:
    lisbon = await mem.add_knowledge("u", "User lives in Lisbon", "support", valid_at=day(2020))
    before = await snapshot(mem)
    with pytest.raises(UserInputError, match="must start after"):
        await mem.add_knowledge("u", "User lives in Porto", "support", valid_at=day(2018), settle="supersede")
    assert await snapshot(mem) == before
    other = await mem.add_knowledge("u", "User plays the oboe", "support", valid_at=day(2017))
    with pytest.raises(UserInputError, match="must start after"):
        await mem.supersede("u", lisbon.id, other.id, "support", "moved", start=day(2019))
    assert await snapshot(mem) != before  # only the oboe was added
    # control: a later start supersedes, and a later as-of reads one home only
    porto = await mem.add_knowledge("u", "User lives in Porto", "support", valid_at=day(2022), settle="supersede")
    later = {k.statement for k in await mem.knowledge("u", at_time=day(2024))}
    assert "User lives in Porto" in later and "User lives in Lisbon" not in later
    assert porto.status == "active"


# -- free text: neighbours and the judge ---------------------------------------------------------------

FREE_OLD = "User sorts the mail on Tuesdays"
FREE_NEW = "User sorts the mail on Fridays"


class FixedJudge(ValueJudge):
    def __init__(self, verdict: VerdictKind) -> None:
        self.verdict: VerdictKind = verdict
        self.asked: list[tuple[str, list[tuple[int, str]]]] = []

    async def judge(self, statement: str, neighbours: list[tuple[int, str]]) -> list[Verdict]:
        self.asked.append((statement, neighbours))
        return [Verdict(nid, self.verdict, "fixed") for nid, _ in neighbours]


async def test_a_free_text_neighbour_is_a_question_never_a_link(mem: Memory) -> None:
    assert read_claim(FREE_OLD).slot is None and read_claim(FREE_NEW).slot is None
    old = await mem.add_knowledge("u", FREE_OLD, "support")
    out = await mem.propose("u", FREE_NEW, "agent")
    assert out.candidate_id is not None
    cand = await mem.review.get(out.candidate_id)
    assert cand.supersedes_id is None and cand.kind == "proposed"
    assert ("may_replace", old.id) in [(m.kind, m.target_id) for m in cand.marks]
    # control: an unrelated statement is far from every fact: no question
    far = await mem.propose("u", "User keeps bees on the roof", "agent")
    assert far.candidate_id is not None
    assert (await mem.review.get(far.candidate_id)).marks == ()


@pytest.mark.parametrize(
    ("verdict", "linked", "mark"),
    [("replaces", True, None), ("same", False, "looks_like"), ("unsure", False, "may_replace"), ("both", False, None)],
)
async def test_a_judge_links_only_what_it_says_replaces(
    store_target: str, clock: Clock, verdict: VerdictKind, linked: bool, mark: str | None
) -> None:
    judge = FixedJudge(verdict)
    async with Memory(store_target, clock=clock, judge=judge) as mem:
        old = await mem.add_knowledge("u", FREE_OLD, "support")
        out = await mem.propose("u", FREE_NEW, "agent")
        assert out.candidate_id is not None
        cand = await mem.review.get(out.candidate_id)
        assert judge.asked and judge.asked[-1][1] == [(old.id, FREE_OLD)]
        assert (cand.supersedes_id == old.id) is linked
        assert [m.kind for m in cand.marks if m.target_id == old.id] == ([mark] if mark else [])


# -- imports -------------------------------------------------------------------------------------------


async def test_an_import_skips_only_the_same_text_and_names_the_fact(mem: Memory) -> None:
    first = await mem.add_knowledge_many("u", ["User owns a horse", "User likes Sarah"], "import")
    out = await mem.add_knowledge_many(
        "u",
        [
            "User owns a house",  # look-alike of an earlier call's fact: added, marked
            "user owns a horse!",  # the same text as an earlier call's fact: skipped, named
            "User collects magnets from Iceland",
            "User collects magnets from Ireland",  # look-alike within the call: added, marked
            "User collects magnets from iceland.",  # the same text within the call: skipped, named
            "User likes Sara",
        ],
        "import",
        batch_size=2,  # across transactions: the index is kept, not re-read
    )
    ids = [k.id for k in out]
    assert [k.statement for k in out] == [
        "User owns a house",
        "User collects magnets from Iceland",
        "User collects magnets from Ireland",
        "User likes Sara",
    ]
    iceland = out[1].id
    assert [i for i, _ in out.skipped] == [1, 4]
    assert f"fact {first[0].id} " in out.skipped[0][1]
    assert f"fact {iceland} " in out.skipped[1][1]
    assert all("-" not in why.split("fact ")[1][:2] for _, why in out.skipped), out.skipped
    marked = {(i, m.kind, m.target_id) for i, m in out.marked}
    assert marked >= {(0, "looks_like", first[0].id), (3, "looks_like", iceland), (5, "looks_like", first[1].id)}
    assert min(ids) > 0


async def test_an_import_keeps_the_same_claim_in_other_words_with_a_mark(mem: Memory) -> None:
    out = await mem.add_knowledge_many("u", ["User owns a horse since 2003", "User owns a horse since 2010"], "imp")
    assert len(out) == 2 and out.skipped == []
    assert [(i, m.target_id) for i, m in out.marked] == [(1, out[0].id)]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.text(alphabet="abcdehlorsuy ", min_size=3, max_size=14), min_size=1, max_size=30),
    st.text(alphabet="abcdehlorsuy ", min_size=3, max_size=14),
)
def test_the_look_alike_index_finds_what_a_scan_finds(pool: list[str], query: str) -> None:
    scanned: ValueIndex[int] = ValueIndex((value_key(t), i) for i, t in enumerate(pool))
    indexed: ValueIndex[int] = ValueIndex((value_key(t), i) for i, t in enumerate(pool))
    for _ in range(9):  # past SCAN_LOOKUPS: the deletion-neighbourhood index answers from here on
        indexed.near(value_key("zzzzzzzz"))
    assert scanned.near(value_key(query)) == indexed.near(value_key(query))


# -- bad input -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", INVISIBLE_ONLY)
async def test_a_statement_of_invisible_characters_only_is_refused_everywhere(mem: Memory, text: str) -> None:
    before = await snapshot(mem)
    for call in (
        lambda: mem.add_knowledge("u", text, "support"),
        lambda: mem.propose("u", text, "agent"),
        lambda: mem.queue_candidate("u", text),
        lambda: mem.add_knowledge_many("u", ["User keeps bees", text], "import"),
    ):
        with pytest.raises(InvalidStatementError, match="no visible characters"):
            await call()
    assert await snapshot(mem) == before
    # control: the same marks inside a visible statement are stored (and shown as code points)
    assert (await mem.add_knowledge("u", f"User keeps{text}bees", "support")).status == "active"


def test_the_cli_refuses_an_invisible_statement_with_one_line(tmp_path: Path) -> None:
    from review_app.cli import main

    db = tmp_path / "m.db"

    async def create() -> None:
        async with Memory(db):
            pass

    asyncio.run(create())
    runner = CliRunner()
    ok = runner.invoke(main, ["add", str(db), "User owns a horse", "--user", "u", "--actor", "ana"])
    assert ok.exit_code == 0, ok.output
    bad = runner.invoke(main, ["add", str(db), "\u200b\ufe0f", "--user", "u", "--actor", "ana"])
    assert bad.exit_code == 2
    lines = [line for line in bad.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "no visible characters" in lines[0], bad.output
    alike = runner.invoke(main, ["add", str(db), "User owns a house", "--user", "u", "--actor", "ana"])
    assert alike.exit_code == 0 and "looks like fact #1" in alike.output, alike.output


async def test_a_slot_the_model_does_not_know_is_stored_as_free_text(mem: Memory) -> None:
    text = "User's spaceship is called Nova"
    assert read_claim(text).slot is None
    out = await mem.propose("u", text, "agent")
    assert out.candidate_id is not None
    assert (await mem.review.approve(out.candidate_id, "rev")).statement == text
    # control: a known slot is read as a claim
    assert read_claim("User lives in Lisbon").slot == "home"


# -- the LLM extractor's path ------------------------------------------------------------------------


class Scripted:
    name = "scripted"
    model: str | None = "scripted"
    prompt_version: str | None = "test"

    def __init__(self, *items: GapItem) -> None:
        self.items = list(items)

    async def extract(self, episode: Episode, existing: list[Knowledge]) -> Extraction:
        return Extraction(prediction="", items=self.items)


async def test_an_llm_statement_without_a_handle_is_linked_and_a_look_alike_marked(
    store_target: str, clock: Clock
) -> None:
    extractor = Scripted(
        GapItem("User resides in Porto", confidence=0.9, evidence="I live in Porto now"),
        GapItem("User owns a house", confidence=0.9, evidence="I own a house"),
        GapItem("User has a daughter named Rita", confidence=0.9, evidence="my daughter Rita"),
    )
    async with Memory(store_target, clock=clock, extractor=extractor) as mem:
        lisbon = await mem.add_knowledge("u", "User lives in Lisbon", "support")
        horse = await mem.add_knowledge("u", "User owns a horse", "support")
        ana = await mem.add_knowledge("u", "User has a daughter named Ana", "support")
        await mem.add_exchange("u", "I live in Porto now, I own a house, and my daughter Rita", "Noted.")
        await mem.process("u")
        found = {c.statement: c for c in await mem.review.pending("u")}
        assert found["User resides in Porto"].supersedes_id == lisbon.id
        assert [(m.kind, m.target_id) for m in found["User owns a house"].marks] == [("looks_like", horse.id)]
        assert found["User owns a house"].supersedes_id is None
        assert found["User has a daughter named Rita"].supersedes_id is None  # a second child
        assert ana.status == "active"


# -- the workstation shows marks ---------------------------------------------------------------------


def test_the_detail_pane_and_the_list_row_show_marks() -> None:
    from review_app.widgets.candidate_detail import gap_text

    now = datetime(2026, 1, 1, tzinfo=UTC)
    mark = Mark("looks_like", 12, "looks like fact #12: User owns a horse")
    cand = Candidate(
        id=3,
        user_id="u",
        statement="User owns a house",
        kind="new",
        status="pending",
        confidence=0.9,
        created_at=now,
        marks=(mark,),
    )
    text = gap_text(CandidateContext(candidate=cand)).plain
    assert "looks like fact #12: User owns a horse" in text and "Looks like" in text
    plain = Candidate(
        id=4, user_id="u", statement="User keeps bees", kind="new", status="pending", confidence=0.9, created_at=now
    )
    assert "Looks like" not in gap_text(CandidateContext(candidate=plain)).plain


async def test_marks_survive_both_backends_round_trip(mem: Memory) -> None:
    """Stored as written, read back equal (the `candidates.marks` column of each backend)."""
    await mem.add_knowledge("u", "User owns a horse", "support")
    cid = await mem.queue_candidate("u", "User owns a house")
    again = await mem.review.get(cid)
    assert again.marks and again.marks[0].kind == "looks_like"
    # control: a candidate with nothing to mark has none
    other = await mem.queue_candidate("u", "User keeps bees on the roof")
    assert (await mem.review.get(other)).marks == ()


async def test_a_duplicate_candidate_is_refused_by_text_and_by_claim(mem: Memory) -> None:
    cid = await mem.queue_candidate("u", "User lives in Lisbon")
    with pytest.raises(DuplicateCandidateError):
        await mem.queue_candidate("u", "User resides in Lisbon")
    with pytest.raises(DuplicateCandidateError):
        await mem.queue_candidate("u", "user lives in lisbon")
    assert (await mem.review.get(cid)).status == "pending"

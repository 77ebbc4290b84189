"""Issue 9's decision rules, in the engine so that every front end gets them: a replacement needs an
explicit choice, bulk approve decides exactly the ids it was given, chains of pending candidates are
re-pointed or cut by the decision on their first link, retarget and supersede, `correct` never
makes a duplicate, size limits at every decision door, and a note on every decision. Each must-not
sits beside the positive control that shows the same call can succeed."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from engine import (
    BulkResult,
    ChainOrderError,
    DecisionRequiredError,
    DuplicateFactError,
    Memory,
    MemoryConfig,
    NotFoundError,
    StaleSupersessionError,
    UserInputError,
)
from engine.erase import erase_user
from tests.engine_helpers import Clock, audit_rows_since, last_audit_id, open_memory, snapshot, sql


def day(y: int, m: int = 1, d: int = 1) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


# -- a replacement is never approved plainly --------------------------------------------------------


async def test_approve_refuses_every_kind_of_replacement_and_changes_nothing(mem: Memory) -> None:
    old = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")
    first = await mem.queue_candidate("ana", "Ana lives in Braga")
    naming_fact = await mem.queue_candidate("ana", "Ana lives in Porto", kind="update", supersedes_id=old.id)
    contradiction = await mem.queue_candidate(
        "ana", "Ana never lived in Lisbon", kind="contradiction", supersedes_id=old.id
    )
    chained = await mem.queue_candidate("ana", "Ana lives in Faro", kind="update", supersedes_candidate_id=first)
    bare_update = await mem.queue_candidate("ana", "Ana lives in Evora", kind="update")
    before = await snapshot(mem)
    for cid, target in (
        (naming_fact, f"fact {old.id}"),
        (contradiction, f"fact {old.id}"),
        (chained, f"candidate {first}"),
        (bare_update, "an earlier value"),
    ):
        with pytest.raises(DecisionRequiredError, match=target) as err:
            await mem.review.approve(cid, reviewer="rev")
        assert err.value.candidate_id == cid
        with pytest.raises(DecisionRequiredError):
            await mem.review.approve(cid, reviewer="rev", statement="edited", valid_at=day(2026))
    assert await snapshot(mem) == before
    # positive control: a `new` candidate approves, and a bare update can still keep both
    assert (await mem.review.approve(first, reviewer="rev")).statement == "Ana lives in Braga"
    assert (await mem.review.keep_both(bare_update, reviewer="rev")).status == "active"


async def test_confirm_and_keep_both_take_an_edited_statement_and_interval(mem: Memory) -> None:
    old = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support", valid_at=day(2020))
    c1 = await mem.queue_candidate("ana", "Ana lives in Porto", kind="update", supersedes_id=old.id)
    new = await mem.review.confirm_supersession(
        c1, reviewer="rev", statement="Ana lives in Porto, Portugal", valid_at=day(2025, 3), invalid_at=None
    )
    assert (new.statement, new.valid_at, new.invalid_at) == ("Ana lives in Porto, Portugal", day(2025, 3), None)
    ended = await mem.get_knowledge("ana", old.id)
    assert (ended.status, ended.invalid_at, ended.superseded_by) == ("superseded", day(2025, 3), new.id)
    cand = await mem.review.get(c1)
    assert (cand.decision, cand.statement, cand.valid_at) == ("confirm_supersession", new.statement, day(2025, 3))

    c2 = await mem.queue_candidate("ana", "Ana has a summer flat in Faro", kind="update", supersedes_id=new.id)
    kept = await mem.review.keep_both(
        c2, reviewer="rev", statement="Ana rents a summer flat in Faro", valid_at=day(2025, 6), invalid_at=day(2025, 9)
    )
    assert (kept.statement, kept.valid_at, kept.invalid_at) == (
        "Ana rents a summer flat in Faro",
        day(2025, 6),
        day(2025, 9),
    )
    assert (await mem.get_knowledge("ana", new.id)).status == "active"  # kept


async def test_keep_both_and_confirm_refuse_a_candidate_that_replaces_nothing(mem: Memory) -> None:
    cid = await mem.queue_candidate("ana", "Ana likes jazz")
    before = await snapshot(mem)
    with pytest.raises(UserInputError, match="approve it instead"):
        await mem.review.keep_both(cid, reviewer="rev")
    with pytest.raises(UserInputError, match="approve it instead"):
        await mem.review.confirm_supersession(cid, reviewer="rev")
    assert await snapshot(mem) == before
    assert (await mem.review.approve(cid, reviewer="rev")).statement == "Ana likes jazz"


# -- bulk approve: exactly these ids -------------------------------------------------------------------


async def test_bulk_approve_decides_exactly_the_ids_given_and_says_why_it_skipped(mem: Memory) -> None:
    """Issue 9: "Approve all 3" approved 53 when 50 proposals arrived while the dialog was open,
    because the filter was queried again. The engine now takes the ids the reviewer saw."""
    fact = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")
    seen = [await mem.queue_candidate("ana", f"Ana likes composer {n}") for n in range(3)]
    update = await mem.queue_candidate("ana", "Ana lives in Porto", kind="update", supersedes_id=fact.id)
    retraction = await mem.queue_candidate(
        "ana", "Ana lives in Lisbon", kind="retraction", supersedes_id=fact.id, reason="asked"
    )
    decided = await mem.queue_candidate("ana", "Ana plays chess")
    await mem.review.approve(decided, reviewer="other")
    claimed = await mem.queue_candidate("ana", "Ana plays go")
    await mem.review.claim(claimed, reviewer="other")
    arrived_later = [
        (await mem.propose("ana", f"Ana collects stamp series {n}", "mcp-agent")).candidate_id for n in range(50)
    ]

    result = await mem.review.bulk_approve(
        [seen[0], seen[1], update, retraction, decided, claimed, seen[2], seen[0], 10**9],
        reviewer="rev",
    )

    assert isinstance(result, BulkResult)
    assert [k.candidate_id for k in result.approved] == seen
    reasons = dict(result.skipped)
    assert [cid for cid, _ in result.skipped] == [update, retraction, decided, claimed, seen[0], 10**9]
    assert f"fact {fact.id}" in reasons[update] and "supersede or keep both" in reasons[update]
    assert "retract" in reasons[retraction]
    assert "already approved by other" in reasons[decided]
    assert "being reviewed by other" in reasons[claimed]
    assert reasons[seen[0]] == "listed twice" and reasons[10**9] == "not found"
    for cid in (update, retraction, claimed, *arrived_later):
        assert (await mem.review.get(cid)).status == "pending"  # nobody saw them: still pending
    assert (await mem.get_knowledge("ana", fact.id)).status == "active"


# -- chains of pending candidates ----------------------------------------------------------------------


async def test_a_chained_update_waits_for_its_first_link(mem: Memory) -> None:
    lisbon = await mem.queue_candidate("ana", "Ana lives in Lisbon")
    porto = await mem.queue_candidate("ana", "Ana lives in Porto", kind="update", supersedes_candidate_id=lisbon)
    before = await snapshot(mem)
    with pytest.raises(ChainOrderError, match=f"decide candidate {lisbon} first") as err:
        await mem.review.confirm_supersession(porto, reviewer="rev")
    assert err.value.pending_id == lisbon
    assert await snapshot(mem) == before

    mark = await last_audit_id(mem)
    fact = await mem.review.approve(lisbon, reviewer="rev", note="checked the transcript")
    relinked = await mem.review.get(porto)
    assert (relinked.status, relinked.kind, relinked.supersedes_id, relinked.supersedes_candidate_id) == (
        "pending",
        "update",
        fact.id,
        None,
    )
    rows = await audit_rows_since(mem, mark)
    # the re-point is audited inside the same decision, before the decision's own candidate row
    assert [(r[2], r[4], r[5]) for r in rows] == [
        ("create", "knowledge", fact.id),
        ("chain_repoint", "candidate", porto),
        ("approve", "candidate", lisbon),
    ]
    # positive control: now the update confirms, and it ends the fact its first link became
    new = await mem.review.confirm_supersession(porto, reviewer="rev")
    assert (await mem.get_knowledge("ana", fact.id)).superseded_by == new.id


async def test_rejecting_the_first_link_makes_the_chain_new_and_undo_restores_it(mem: Memory) -> None:
    lisbon = await mem.queue_candidate("ana", "Ana lives in Lisbon")
    porto = await mem.queue_candidate("ana", "Ana lives in Porto", kind="update", supersedes_candidate_id=lisbon)
    before = await snapshot(mem)
    mark = await last_audit_id(mem)
    await mem.review.reject(lisbon, reviewer="rev", reason="never said", note="see msg 3")
    cut = await mem.review.get(porto)
    assert (cut.kind, cut.supersedes_id, cut.supersedes_candidate_id, cut.status) == ("new", None, None, "pending")
    rows = await audit_rows_since(mem, mark)
    assert [r[2] for r in rows] == ["create", "chain_unlink", "reject"]

    await mem.review.undo(lisbon, reviewer="rev")
    after = await snapshot(mem)
    for table in sorted(set(after) - {"audit_log"}):  # the audit log only grows
        assert after[table] == before[table], table


async def test_undo_of_an_approval_restores_the_chain_it_re_pointed(mem: Memory) -> None:
    lisbon = await mem.queue_candidate("ana", "Ana lives in Lisbon")
    porto = await mem.queue_candidate("ana", "Ana lives in Porto", kind="update", supersedes_candidate_id=lisbon)
    before = await snapshot(mem)
    await mem.review.approve(lisbon, reviewer="rev")
    restored = await mem.review.undo(lisbon, reviewer="rev")
    assert restored.status == "pending"
    after = await snapshot(mem)
    for table in sorted(set(after) - {"audit_log"}):  # the audit log only grows
        assert after[table] == before[table], table
    # once the re-pointed candidate has been decided, undo of the first link is refused (it would
    # rewrite later history), and changes nothing
    fact = await mem.review.approve(lisbon, reviewer="rev")
    await mem.review.confirm_supersession(porto, reviewer="rev")
    frozen = await snapshot(mem)
    with pytest.raises(Exception, match=f"candidate {porto}|fact {fact.id}"):
        await mem.review.undo(lisbon, reviewer="rev")
    assert await snapshot(mem) == frozen


# -- retarget and supersede ----------------------------------------------------------------------------


async def test_retarget_makes_a_new_candidate_an_update_and_back(mem: Memory) -> None:
    lisbon = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")
    bobs = await mem.add_knowledge("bob", "Bob lives in Lisbon", actor="support")
    retired = await mem.add_knowledge("ana", "Ana lived in Braga", actor="support")
    await mem.retract("ana", retired.id, actor="support", reason="wrong", tombstone=False)
    cid = await mem.queue_candidate("ana", "Ana lives in Porto")
    before = await snapshot(mem)
    with pytest.raises(NotFoundError):
        await mem.review.retarget(cid, "rev", supersedes_id=bobs.id)  # another user's fact: unknown
    with pytest.raises(StaleSupersessionError):
        await mem.review.retarget(cid, "rev", supersedes_id=retired.id)
    with pytest.raises(UserInputError, match="replaces nothing"):
        await mem.review.retarget(cid, "rev", supersedes_id=None)
    assert await snapshot(mem) == before

    mark = await last_audit_id(mem)
    updated = await mem.review.retarget(cid, "rev", supersedes_id=lisbon.id, note="same home, moved")
    assert (updated.kind, updated.supersedes_id, updated.status) == ("update", lisbon.id, "pending")
    history = [e for e in await mem.history("ana") if e.id > mark]
    assert [(e.action, e.entity_id, e.note) for e in history] == [("retarget", cid, "same home, moved")]
    with pytest.raises(DecisionRequiredError):
        await mem.review.approve(cid, reviewer="rev")

    # Unlinking it would let a plain approve leave both homes active with nobody choosing that (I4):
    # refused, nothing changed; keeping both is its own decision, audited as such.
    before = await snapshot(mem)
    with pytest.raises(UserInputError, match="keep both"):
        await mem.review.retarget(cid, "rev", supersedes_id=None)
    assert await snapshot(mem) == before
    kept = await mem.review.keep_both(cid, reviewer="rev")
    assert {k.id for k in await mem.knowledge("ana")} >= {lisbon.id, kept.id}
    assert [e.action for e in await mem.history("ana") if e.entity == "candidate" and e.entity_id == cid][-1] == (
        "keep_both"
    )


async def test_retarget_cuts_a_chain_link_to_a_pending_candidate(mem: Memory) -> None:
    """The positive control of the refusal above: a link to a PENDING candidate (a chain) may be cut;
    I5 re-points the candidate if the other one, once approved, is a fact it replaces."""
    first = await mem.queue_candidate("ana", "Ana plays the oboe")
    second = await mem.queue_candidate("ana", "Ana plays the flute", kind="update", supersedes_candidate_id=first)
    back = await mem.review.retarget(second, "rev", supersedes_id=None)
    assert (back.kind, back.supersedes_id, back.supersedes_candidate_id) == ("new", None, None)
    assert (await mem.review.approve(second, reviewer="rev")).statement == "Ana plays the flute"


async def test_supersede_marks_one_fact_superseded_by_another_and_closes_its_valid_time(mem: Memory) -> None:
    lisbon = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support", valid_at=day(2020))
    porto = await mem.add_knowledge("ana", "Ana lives in Porto", actor="support", valid_at=day(2026))
    bobs = await mem.add_knowledge("bob", "Bob lives in Faro", actor="support")
    before = await snapshot(mem)
    for args, error in (
        ((lisbon.id, lisbon.id), UserInputError),
        ((lisbon.id, bobs.id), NotFoundError),
        ((bobs.id, lisbon.id), NotFoundError),
    ):
        with pytest.raises(error):
            await mem.supersede("ana", *args, actor="support", reason="moved")
    assert await snapshot(mem) == before

    ended = await mem.supersede("ana", lisbon.id, porto.id, actor="support", reason="moved", note="per ticket 7")
    assert (ended.status, ended.end_reason, ended.superseded_by, ended.invalid_at) == (
        "superseded",
        "superseded",
        porto.id,
        day(2026),
    )
    [event] = [e for e in await mem.history("ana", lisbon.id) if e.action == "supersede"]
    assert (event.reason, event.note) == ("moved", "per ticket 7")
    with pytest.raises(StaleSupersessionError):  # only an active fact can be superseded
        await mem.supersede("ana", lisbon.id, porto.id, actor="support", reason="again")


# -- correct never makes a duplicate -------------------------------------------------------------------


async def test_correct_refuses_the_text_of_another_active_fact(mem: Memory) -> None:
    """Issue 9: correcting a fact to another active fact's text left two identical active facts."""
    await mem.add_knowledge("ana", "Ana lives in Porto", actor="support")
    wrong = await mem.add_knowledge("ana", "Ana lives in Lisboa", actor="support")
    before = await snapshot(mem)
    with pytest.raises(DuplicateFactError, match="Ana lives in Porto"):
        await mem.correct("ana", wrong.id, "ana lives in porto.", actor="support", reason="typo")
    assert await snapshot(mem) == before
    # positive controls: a different statement is fine, and so is re-dating a fact with its own text
    fixed = await mem.correct("ana", wrong.id, "Ana lives in Lisbon", actor="support", reason="typo")
    redated = await mem.correct(
        "ana", fixed.id, "Ana lives in Lisbon", actor="support", reason="date", valid_at=day(2021)
    )
    assert (redated.statement, redated.valid_at) == ("Ana lives in Lisbon", day(2021))


# -- limits and notes at every decision door ------------------------------------------------------------


async def test_size_limits_apply_at_every_decision_door(new_target: Callable[[str], str]) -> None:
    config = MemoryConfig(max_statement_chars=40, max_reason_chars=20)
    async with open_memory(new_target("limits"), Clock(), config=config) as mem:
        old = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")
        update = await mem.queue_candidate("ana", "Ana lives in Porto", kind="update", supersedes_id=old.id)
        plain = await mem.queue_candidate("ana", "Ana likes jazz")
        long_text, long_reason = "Ana " + "x" * 60, "r" * 21
        before = await snapshot(mem)
        for attempt in (
            mem.review.approve(plain, "rev", statement=long_text),
            mem.review.confirm_supersession(update, "rev", statement=long_text),
            mem.review.keep_both(update, "rev", statement=long_text),
            mem.correct("ana", old.id, long_text, actor="support", reason="why"),
            mem.add_knowledge("ana", long_text, actor="support"),
            mem.review.reject(plain, "rev", reason=long_reason),
            mem.review.approve(plain, "rev", note=long_reason),
            mem.retract("ana", old.id, actor="support", reason=long_reason),
            mem.supersede("ana", old.id, old.id + 1, actor="support", reason=long_reason),
        ):
            with pytest.raises(UserInputError, match=r"max_statement_chars|max_reason_chars"):
                await attempt
        assert await snapshot(mem) == before
        # positive control: within the limits the same doors open
        assert (await mem.review.approve(plain, "rev", statement="Ana likes cool jazz", note="ok")).status == "active"
        assert (await mem.review.keep_both(update, "rev", statement="Ana lives in Porto too")).status == "active"


async def test_a_note_on_every_decision_is_in_history_and_erasure_redacts_it(mem: Memory, clock: Clock) -> None:
    old = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")
    c1 = await mem.queue_candidate("ana", "Ana lives in Porto", kind="update", supersedes_id=old.id)
    c2 = await mem.queue_candidate("ana", "Ana likes jazz")
    c3 = await mem.queue_candidate("ana", "Ana likes opera")
    new = await mem.review.confirm_supersession(c1, "rev", note="moved in May")
    await mem.review.reject(c2, "rev", reason="sarcasm", note="tone was ironic")
    await mem.review.bulk_approve([c3], "rev", note="batch one")
    await mem.review.undo(c3, "rev", note="approved too fast")
    notes = {(e.action, e.entity_id): e.note for e in await mem.history("ana")}
    assert notes[("confirm_supersession", c1)] == "moved in May"
    assert notes[("supersede", old.id)] == "moved in May" and notes[("create", new.id)] == "moved in May"
    assert notes[("reject", c2)] == "tone was ironic"
    assert notes[("approve", c3)] == "batch one" and notes[("undo", c3)] == "approved too fast"
    # the fact's own history carries the note too (what the Knowledge screen shows)
    assert {e.note for e in await mem.history("ana", new.id)} >= {"moved in May"}
    # control: a decision without a note stores None
    c4 = await mem.queue_candidate("ana", "Ana likes fado")
    await mem.review.approve(c4, "rev")
    assert [e.note for e in await mem.history("ana") if e.entity_id == c4 and e.action == "approve"] == [None]

    await erase_user(mem, "ana", actor="dpo", compact=False)
    async with sql(mem) as conn:
        left = await (
            await conn.execute("SELECT count(*) FROM audit_log WHERE user_id = 'ana' AND note IS NOT NULL")
        ).fetchone()
    assert left[0] == 0

"""Valid time closed on supersession, and the two questions a store with two times can answer:
"what was true at T" (`at_time`) and "what did we believe at T" (`known_at`). The Lisbon → Porto
example of issue 9 and the README, as a test; the rule over random histories is in
test_valid_time_model.py."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engine import Memory, UserInputError
from tests.engine_helpers import Clock, open_memory, snapshot, vec_row
from tests.tui_seed import ScriptedExtractor

MEMDESK = Path(sys.executable).parent / "memdesk"
QUESTION = "where does she live"


def day(y: int, m: int = 1, d: int = 1) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


async def homes(mem: Memory, **when: datetime) -> dict[str, str]:
    result = await mem.retrieve(QUESTION, user_id="ana", top_k=20, **when)
    return {i.knowledge.statement: i.knowledge.status for i in result.items}


async def lisbon_then_porto(mem: Memory, clock: Clock) -> tuple[int, int, datetime]:
    """Lisbon from 2024-01-01 (recorded in 2025); Porto from 2026-01-01, confirmed 2026-05-02.
    Returns the two fact ids and a moment between the recording and the confirmation."""
    clock.now = day(2025, 2, 1)
    lisbon = await mem.add_knowledge("ana", "She lives in Lisbon", actor="support", valid_at=day(2024))
    clock.now = day(2026, 5, 1)
    cid = await mem.queue_candidate(
        "ana", "She lives in Porto", kind="update", supersedes_id=lisbon.id, valid_at=day(2026)
    )
    clock.now = day(2026, 5, 2)
    porto = await mem.review.confirm_supersession(cid, reviewer="rev")
    return lisbon.id, porto.id, day(2026, 3, 1)


async def test_lisbon_to_porto(new_target: Callable[[str], str]) -> None:
    """Issue 9: after Porto (from 2026-01-01) replaced Lisbon, Lisbon still read `always → now`,
    `--as-of 2025-06-01` returned no home at all, and `--known-at` labelled Lisbon superseded at a
    moment when it was active."""
    clock = Clock()
    async with open_memory(new_target("vt"), clock) as mem:
        lisbon_id, _, between = await lisbon_then_porto(mem, clock)
        lisbon = await mem.get_knowledge("ana", lisbon_id)
        assert (lisbon.valid_at, lisbon.invalid_at, lisbon.status) == (day(2024), day(2026), "superseded")
        assert lisbon.interval_text() == "2024-01-01 → 2026-01-01"
        vec = await vec_row(mem, lisbon_id)
        assert vec is not None and vec[4] == int(day(2026).timestamp() * 1_000_000)  # valid_to in the index too

        # valid time: the world at T, read from facts still believed true for their period
        assert await homes(mem, at_time=day(2025, 6, 1)) == {"She lives in Lisbon": "superseded"}
        assert await homes(mem, at_time=day(2026, 6, 1)) == {"She lives in Porto": "active"}
        assert await homes(mem) == {"She lives in Porto": "active"}  # current belief
        # belief time: what the store held at T, each fact with its status as of T
        assert await homes(mem, known_at=between) == {"She lives in Lisbon": "active"}
        believed = await mem.retrieve(QUESTION, user_id="ana", top_k=5, known_at=between, at_time=day(2026, 6, 1))
        [item] = believed.items
        assert (item.knowledge.statement, item.knowledge.invalid_at) == ("She lives in Lisbon", None)  # open then
        assert "[superseded]" not in believed.to_prompt() and "believed on 2026-03-01" in believed.to_prompt()
        assert await homes(mem, known_at=day(2026, 5, 3)) == {"She lives in Porto": "active"}


async def test_corrected_and_retracted_facts_are_never_read_as_true_for_their_period(
    new_target: Callable[[str], str],
) -> None:
    clock = Clock(day(2025))
    async with open_memory(new_target("wrong"), clock) as mem:
        typo = await mem.add_knowledge("ana", "She lives in Lisbom", actor="support", valid_at=day(2020))
        clock.advance(days=1)
        fixed = await mem.correct("ana", typo.id, "She lives in Lisbon", actor="support", reason="typo")
        joke = await mem.add_knowledge("ana", "She lives in a castle", actor="support", valid_at=day(2020))
        await mem.retract("ana", joke.id, actor="support", reason="a joke")
        at = day(2023)
        assert await homes(mem, at_time=at) == {"She lives in Lisbon": "active"}
        assert [k.id for k in await mem.knowledge("ana", at_time=at)] == [fixed.id]
        # control: include_expired lifts the belief filter, so the wrong ones are there to exclude
        every = await mem.retrieve(QUESTION, user_id="ana", top_k=10, at_time=at, include_expired=True)
        assert {i.knowledge.id for i in every.items} == {typo.id, fixed.id, joke.id}


async def test_a_change_without_a_start_starts_when_the_message_said_it(new_target: Callable[[str], str]) -> None:
    clock = Clock(day(2026, 1, 5))
    async with Memory(new_target("said"), extractor=ScriptedExtractor(), clock=clock) as mem:
        await mem.add_exchange("ana", "FACT: Ana lives in Lisbon", "Nice.", at=day(2026, 1, 5))
        clock.now = day(2026, 1, 6)
        await mem.process("ana")
        [first] = await mem.review.pending("ana")
        lisbon = await mem.review.approve(first.id, reviewer="rev")
        said = datetime(2026, 5, 2, 10, 30, tzinfo=UTC)
        await mem.add_exchange("ana", "UPDATE Ana lives in Lisbon => Ana lives in Porto", "Big move!", at=said)
        await mem.add_exchange("ana", "FACT: Ana keeps bees", "Lovely.", at=said + timedelta(minutes=5))
        clock.now = day(2026, 5, 9)
        await mem.process("ana")
        [update] = [c for c in await mem.review.pending("ana") if c.kind == "update"]
        porto = await mem.review.confirm_supersession(update.id, reviewer="rev")
        # the message holding the evidence, not the episode's last message nor the decision time
        assert porto.valid_at == said
        assert (await mem.get_knowledge("ana", lisbon.id)).invalid_at == said


async def test_a_start_at_or_before_the_old_start_is_refused_and_one_after_its_end_leaves_it(
    new_target: Callable[[str], str],
) -> None:
    async with open_memory(new_target("early"), Clock(day(2026, 6))) as mem:
        old = await mem.add_knowledge("ana", "Ana works at SAP", actor="s", valid_at=day(2025), invalid_at=day(2027))
        c1 = await mem.queue_candidate(
            "ana", "Ana works at Zalando", kind="update", supersedes_id=old.id, valid_at=day(2024)
        )
        # the old interval cannot be closed before it begins: both would read as true at a later
        # as-of, so the supersession is refused and nothing changes (issue 26)
        before = await snapshot(mem)
        with pytest.raises(UserInputError, match="must start after"):
            await mem.review.confirm_supersession(c1, reviewer="rev")
        assert await snapshot(mem) == before
        assert (await mem.get_knowledge("ana", old.id)).status == "active"
        old2 = await mem.add_knowledge("ana", "Ana works at Bosch", actor="s", valid_at=day(2025), invalid_at=day(2026))
        c2 = await mem.queue_candidate(
            "ana", "Ana works at Siemens", kind="update", supersedes_id=old2.id, valid_at=day(2026, 3)
        )
        await mem.review.confirm_supersession(c2, reviewer="rev")
        assert (await mem.get_knowledge("ana", old2.id)).invalid_at == day(2026)  # not lengthened
        # control: a start inside the interval closes it there
        old3 = await mem.add_knowledge("ana", "Ana works at Nokia", actor="s", valid_at=day(2025), invalid_at=day(2027))
        c3 = await mem.queue_candidate(
            "ana", "Ana works at Ericsson", kind="update", supersedes_id=old3.id, valid_at=day(2026)
        )
        await mem.review.confirm_supersession(c3, reviewer="rev")
        assert (await mem.get_knowledge("ana", old3.id)).invalid_at == day(2026)
        # undo reopens it exactly
        await mem.review.undo(c3, reviewer="rev")
        back = await mem.get_knowledge("ana", old3.id)
        assert (back.status, back.invalid_at, back.valid_closed, back.prior_invalid_at) == (
            "active",
            day(2027),
            False,
            None,
        )


@pytest.mark.parametrize("flag", ["--as-of", "--known-at"])
async def test_cli_search_says_which_time_it_answers(
    new_target: Callable[[str], str],
    flag: str,
) -> None:
    clock = Clock()
    db = new_target("cli")
    async with open_memory(db, clock) as mem:
        await lisbon_then_porto(mem, clock)
    when = "2025-06-01" if flag == "--as-of" else "2026-03-01"
    done = subprocess.run(
        [str(MEMDESK), "search", str(db), "--user", "ana", flag, when, *QUESTION.split()],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert "She lives in Lisbon" in done.stdout and "Porto" not in done.stdout
    if flag == "--as-of":
        assert "as of 2025-06-01, as the store believes now" in done.stdout and "[superseded]" in done.stdout
    else:
        assert "believed on 2026-03-01" in done.stdout and "[superseded]" not in done.stdout

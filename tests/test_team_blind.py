"""Blind means blind (issue 17, item 7): while an approval waits in a reviewer's blind second review,
`Memory.history`, `knowledge` and `versions` read with `viewer=` that reviewer name neither who
decided it nor why; the approver themself, a read with no viewer, and the reviewer after their
verdict see it all (the positive controls). On both backends."""

from __future__ import annotations

from collections.abc import Callable

from engine import Memory, MemoryConfig
from engine.blind import HIDDEN
from tests.engine_helpers import Clock, open_memory

CONFIG = MemoryConfig(second_review_rate=1.0)  # every approval is in the sample


async def _superseded_by_ana(mem: Memory, clock: Clock) -> tuple[int, int, int]:
    """Lisbon added by support; Porto queued and approved by ana as its supersession, with a reason
    and a note. Returns (candidate id, new fact id, old fact id)."""
    old = await mem.add_knowledge("u1", "User lives in Lisbon", actor="support")
    clock.advance(seconds=30)
    cid = await mem.queue_candidate("u1", "User lives in Porto", kind="update", supersedes_id=old.id, actor="agent")
    clock.advance(seconds=30)
    new = await mem.review.confirm_supersession(cid, "ana", reason="moved in March", note="call log 12")
    return cid, new.id, old.id


def _by_ana(events: list[object]) -> list[object]:
    return [e for e in events if getattr(e, "actor", None) == "ana"]


async def test_the_second_reviewer_reads_no_first_decision_until_their_verdict(
    new_target: Callable[[str], str],
) -> None:
    clock = Clock()
    async with open_memory(new_target("m"), clock, config=CONFIG) as mem:
        cid, kid, old_id = await _superseded_by_ana(mem, clock)
        other = await mem.add_knowledge("u1", "User keeps bees", actor="support")
        assert [b.candidate_id for b in await mem.team.second_review_queue("bob")] == [cid]

        # bob, who must second-review it: no "ana", no reason, no note, anywhere he can read
        for events in (await mem.history("u1", viewer="bob"), await mem.history("u1", kid, viewer="bob")):
            assert _by_ana(events) == []
            hidden = [e for e in events if e.actor == HIDDEN]
            assert hidden  # the rows are there (what happened), their who and why are not
            assert all(e.reason is None and e.note is None and e.before is None and e.after is None for e in hidden)
            assert all("moved in March" not in repr(e) and "call log" not in repr(e) for e in events)
        assert {e.entity_id for e in await mem.history("u1", kid, viewer="bob") if e.actor == HIDDEN} >= {kid, old_id}
        facts = {k.id: k for k in await mem.knowledge("u1", include_expired=True, viewer="bob")}
        assert facts[kid].created_by == HIDDEN
        assert facts[other.id].created_by == "support"  # what bob need not review stays as it is
        assert facts[old_id].created_by == "support"
        assert [k.created_by for k in await mem.versions("u1", kid, viewer="bob")] == ["support", HIDDEN]
        assert (await mem.team.blind_spots("bob", "u1")).spots[0].candidate_id == cid

        # positive controls: the approver, a read with no reviewer, and another user's facts
        for viewer in ("ana", None):
            events = await mem.history("u1", kid, viewer=viewer)
            assert any(e.actor == "ana" and e.reason == "moved in March" for e in events)
            assert {k.id: k for k in await mem.knowledge("u1", viewer=viewer)}[kid].created_by == "ana"
        assert not await mem.team.blind_spots("bob", "u2")

        # after bob's verdict, the first decision is his to read
        await mem.team.second_review(cid, "bob", approve=True)
        events = await mem.history("u1", kid, viewer="bob")
        assert any(e.actor == "ana" and e.reason == "moved in March" and e.note == "call log 12" for e in events)
        assert {k.id: k for k in await mem.knowledge("u1", viewer="bob")}[kid].created_by == "ana"
        assert not await mem.team.blind_spots("bob")


async def test_a_reviewer_sees_their_own_decisions_and_any_not_waiting_for_them(
    new_target: Callable[[str], str],
) -> None:
    """The rule is per item: with the sample off, nothing is waiting and nothing is hidden."""
    clock = Clock()
    async with open_memory(new_target("m"), clock, config=MemoryConfig(second_review_rate=0.0)) as mem:
        _, kid, _ = await _superseded_by_ana(mem, clock)
        assert not await mem.team.blind_spots("bob")
        events = await mem.history("u1", kid, viewer="bob")
        assert any(e.actor == "ana" and e.reason == "moved in March" for e in events)
        assert {k.id: k for k in await mem.knowledge("u1", viewer="bob")}[kid].created_by == "ana"

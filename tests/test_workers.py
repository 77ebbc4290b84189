"""The worker policy's read tickets (review_app/workers.py): a read asked for later makes the earlier
ticket of its group stale, and only of its group."""

from __future__ import annotations

from review_app.workers import Reads


def test_a_newer_read_makes_the_older_ticket_stale_in_its_group_only() -> None:
    reads = Reads()
    first = reads.ask("list")
    other = reads.ask("progress")
    assert first() and other()
    second = reads.ask("list")
    assert not first() and second()
    assert other()  # control: another group's read is untouched


def test_since_goes_stale_at_the_next_read() -> None:
    reads = Reads()
    look = reads.since("list")
    assert look()  # no read of the group yet: nothing made it moot
    reads.ask("list")
    assert not look()
    later = reads.since("list")
    assert later()

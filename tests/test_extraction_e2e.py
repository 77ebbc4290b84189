"""The write path end to end with the default Memory(): the offline extractor, the hashing embedder,
real retrieval of existing facts, the gates and the review decisions. (test_pipeline.py covers the
gates with a scripted extractor; here the claims come from real sentences.)"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from engine import Episode, Extraction, Knowledge, Memory
from engine.data import conversations_path, load_exchanges, load_expected
from engine.extraction.offline import OfflineExtractor
from engine.ingest import parse_file

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
LATER = T0 + timedelta(days=3)  # far past the 30-minute gap: a new episode
NewTarget = Callable[[str], str]  # the new_target fixture (tests/conftest.py)


def fixed_clock() -> datetime:
    return T0 + timedelta(days=30)


def memory(new_target: NewTarget, extractor: object = None) -> Memory:
    return Memory(new_target("m"), extractor=extractor, clock=fixed_clock)


async def pending(mem: Memory, user_id: str | None = None) -> list[str]:
    return [c.statement for c in await mem.review.pending(user_id=user_id)]


async def approve_all(mem: Memory, user_id: str | None = None) -> list[Knowledge]:
    return [await mem.review.approve(c.id, reviewer="rev") for c in await mem.review.pending(user_id=user_id)]


async def test_nothing_extracted_is_retrievable_before_approval(new_target: NewTarget) -> None:
    async with memory(new_target) as mem:
        await mem.add_exchange("ana", "I live in Lisbon and I have a dog named Rex.", "Nice!", at=T0)
        report = await mem.process()
        assert report.queued == 2
        assert (await mem.retrieve("where does the user live", user_id="ana")).items == []
        assert await mem.knowledge("ana") == []
        await approve_all(mem)
        found = [i.knowledge.statement for i in (await mem.retrieve("Lisbon", user_id="ana")).items]
        assert "User lives in Lisbon" in found


async def test_repeat_in_a_later_episode_is_predicted_while_a_new_fact_is_queued(new_target: NewTarget) -> None:
    async with memory(new_target) as mem:
        await mem.add_exchange("ana", "I live in Lisbon.", "Noted.", at=T0)
        await mem.process()
        [lisbon] = await approve_all(mem)
        await mem.add_exchange("ana", "I'm living in Lisbon, so the trams are handy.", "They are.", at=LATER)
        await mem.add_exchange("ana", "I'm allergic to peanuts.", "Noted.", at=LATER + timedelta(minutes=2))
        report = await mem.process()
        assert (report.episodes, report.claims, report.predicted, report.queued) == (1, 2, 1, 1)
        assert await pending(mem) == ["User is allergic to peanuts"]
        ctx = await mem.review.context((await mem.review.pending())[0].id)
        assert ctx.mode == "predict" and "User lives in Lisbon" in ctx.prediction
        assert lisbon.statement == "User lives in Lisbon"


async def test_update_supersedes_the_right_fact_of_the_right_user(new_target: NewTarget) -> None:
    async with memory(new_target) as mem:
        await mem.add_exchange("ana", "I live in Lisbon.", None, at=T0)
        await mem.add_exchange("ben", "I live in Lisbon.", None, at=T0)
        await mem.process()
        facts = {k.user_id: k for k in await approve_all(mem)}
        await mem.add_exchange("ana", "I moved to Porto this month.", "Congrats!", at=LATER)
        await mem.process()
        [cand] = await mem.review.pending()
        assert (cand.user_id, cand.kind, cand.supersedes_id) == ("ana", "update", facts["ana"].id)
        assert cand.valid_at == datetime(2026, 3, 1, tzinfo=UTC)
        await mem.review.confirm_supersession(cand.id, reviewer="rev")
        assert [k.statement for k in await mem.knowledge("ana")] == ["User lives in Porto"]
        # Must not: ben's fact with the same slot and value is untouched.
        assert [k.statement for k in await mem.knowledge("ben")] == ["User lives in Lisbon"]


async def test_contradiction_proposes_ending_the_old_fact(new_target: NewTarget) -> None:
    async with memory(new_target) as mem:
        await mem.add_exchange("ben", "I play tennis on weekends.", None, at=T0)
        await mem.process()
        [tennis] = await approve_all(mem)
        await mem.add_exchange("ben", "I don't play tennis anymore, my knee hurts.", "Sorry!", at=LATER)
        await mem.process()
        [cand] = await mem.review.pending()
        assert (cand.statement, cand.kind, cand.supersedes_id) == (
            "User no longer plays tennis",
            "contradiction",
            tennis.id,
        )


async def test_same_fact_twice_in_one_batch_yields_one_candidate(new_target: NewTarget) -> None:
    async with memory(new_target) as mem:
        await mem.add_exchange("ana", "I have a dog named Rex.", "Cute!", at=T0)
        await mem.add_exchange("ana", "I have a dog named Rex, he is old.", "Aww.", at=T0 + timedelta(minutes=3))
        report = await mem.process()
        assert (report.claims, report.duplicates, report.queued) == (2, 1, 1)
        assert await pending(mem) == ["User has a dog named Rex"]


async def test_rejected_value_is_not_queued_again_for_that_user_but_is_for_another(new_target: NewTarget) -> None:
    async with memory(new_target) as mem:
        await mem.add_exchange("ana", "I work as a nurse.", None, at=T0)
        await mem.process()
        [cand] = await mem.review.pending()
        await mem.review.reject(cand.id, reviewer="rev", reason="joke")
        await mem.add_exchange("ana", "I work as a nurse.", None, at=LATER)
        await mem.add_exchange("ben", "I work as a nurse.", None, at=LATER)
        report = await mem.process()
        assert report.tombstoned == 1
        assert [(c.user_id, c.statement) for c in await mem.review.pending()] == [("ben", "User works as a nurse")]


async def test_superseded_fact_stated_again_is_queued_again(new_target: NewTarget) -> None:
    async with memory(new_target) as mem:
        await mem.add_exchange("ana", "I live in Lisbon.", None, at=T0)
        await mem.process()
        [lisbon] = await approve_all(mem)
        await mem.add_exchange("ana", "I moved to Porto.", None, at=LATER)
        await mem.process()
        [move] = await mem.review.pending()
        porto = await mem.review.confirm_supersession(move.id, reviewer="rev")
        await mem.add_exchange("ana", "I moved back, I live in Lisbon.", None, at=LATER + timedelta(days=5))
        # Positive control in the same episode: the active value is predicted, not queued.
        await mem.add_exchange(
            "ana", "Well, I'm from Lisbon but I live in Porto.", None, at=LATER + timedelta(days=5, minutes=1)
        )
        report = await mem.process()
        cands = await mem.review.pending()
        assert [(c.statement, c.kind, c.supersedes_id) for c in cands if c.statement.endswith("lives in Lisbon")] == [
            ("User lives in Lisbon", "update", porto.id)
        ]
        assert report.predicted == 1 and lisbon.id != porto.id


async def test_assistant_stated_facts_and_questions_are_never_queued(new_target: NewTarget) -> None:
    async with memory(new_target) as mem:
        await mem.add_exchange("dev", "Is Toronto colder than Montreal?", "Since you live in Vancouver, yes.", at=T0)
        await mem.add_exchange(
            "dev",
            "Do I work at Shopify?",
            "You work at Shopify. I have a dog named Byte, ha.",
            at=T0 + timedelta(minutes=1),
        )
        await mem.add_exchange(
            "dev", "I drive a Honda Civic.", "You live in Ottawa, right?", at=T0 + timedelta(minutes=2)
        )  # positive control
        report = await mem.process()
        assert await pending(mem) == ["User drives a Honda Civic"]
        assert report.claims == 1


async def test_hedged_claim_is_counted_below_confidence_not_queued(new_target: NewTarget) -> None:
    async with memory(new_target) as mem:
        await mem.add_exchange("ben", "I think I might move to Munich.", None, at=T0)
        await mem.add_exchange("ben", "I moved to Hamburg.", None, at=T0 + timedelta(minutes=1))  # positive control
        report = await mem.process()
        assert (report.below_confidence, report.queued) == (1, 1)
        assert await pending(mem) == ["User lives in Hamburg"]


async def test_interval_the_extractor_inverts_is_counted_invalid_and_not_queued(new_target: NewTarget) -> None:
    async with memory(new_target) as mem:
        await mem.add_exchange("chloe", "I worked at Oakfield School from 2022 until 2020.", None, at=T0)
        await mem.add_exchange(
            "chloe", "I worked at Riverside Academy from 2020 until 2022.", None, at=T0 + timedelta(minutes=1)
        )  # positive control
        report = await mem.process()
        assert (report.invalid, report.queued) == (1, 1)
        [cand] = await mem.review.pending()
        assert cand.statement == "User worked at Riverside Academy"
        assert (cand.valid_at, cand.invalid_at) == (datetime(2020, 1, 1, tzinfo=UTC), datetime(2022, 1, 1, tzinfo=UTC))


async def test_backfilled_message_with_an_older_timestamp_is_processed(new_target: NewTarget) -> None:
    async with memory(new_target) as mem:
        await mem.add_exchange("eli", "I'm learning Italian.", None, at=T0)
        await mem.process()
        await mem.add_exchange("eli", "I'm allergic to shellfish.", None, at=T0 - timedelta(days=40))
        report = await mem.process()
        assert (report.messages, report.queued) == (1, 1)
        assert set(await pending(mem)) == {"User is learning Italian", "User is allergic to shellfish"}


class FlakyOffline:
    """The offline extractor behind an endpoint that fails the first call."""

    name = "offline"

    def __init__(self) -> None:
        self.inner = OfflineExtractor()
        self.failures = 1

    async def extract(self, episode: Episode, existing: list[Knowledge]) -> Extraction:
        if self.failures:
            self.failures -= 1
            raise ConnectionError("extractor unavailable")
        return await self.inner.extract(episode, existing)


async def test_failed_run_leaves_the_episode_retryable_and_the_retry_succeeds(new_target: NewTarget) -> None:
    async with memory(new_target, FlakyOffline()) as mem:
        await mem.add_exchange("ana", "I live in Lisbon.", None, at=T0)
        first = await mem.process()
        assert (first.failed, first.queued) == (1, 0) and await pending(mem) == []
        assert (await mem.stats()).extraction.episodes.failed == 1
        retry = await mem.process()
        assert (retry.failed, retry.queued) == (0, 1)
        assert await pending(mem) == ["User lives in Lisbon"]


def test_bundled_set_loads_and_is_ingestible() -> None:
    exchanges = load_exchanges()
    expected = load_expected()
    assert len(exchanges) >= 110
    assert {e[0] for e in exchanges} == set(expected)
    assert all(e[3].tzinfo is not None for e in exchanges)
    assert [e[3] for e in exchanges] == sorted(e[3] for e in exchanges)
    plan = parse_file(conversations_path())
    assert len(plan.exchanges) == len(exchanges) and plan.skipped == []


async def test_bundled_set_end_to_end_never_queues_assistant_facts(new_target: NewTarget) -> None:
    async with memory(new_target) as mem:
        await mem.add_exchanges(load_exchanges())
        report = await mem.process()
        assert report.failed == 0 and report.unsupported == 0 and report.queued > 40
        cands = await mem.review.pending(limit=500)
        statements = {(c.user_id, c.statement) for c in cands}
        # Must not: facts only the assistant stated (dev never said Vancouver; nobody lives in Paris).
        assert ("dev", "User lives in Vancouver") not in statements
        assert not any("Paris" in s or "capital" in s for _, s in statements)
        # Positive control: what dev did say is queued.
        assert ("dev", "User lives in Toronto") in statements


async def test_prediction_pane_reads_as_prose_and_marks_facts_superseded_since(new_target: NewTarget) -> None:
    async with memory(new_target) as mem:
        await mem.add_exchange("ana", "I live in Lisbon.", None, at=T0)
        await mem.process()
        [lisbon] = await approve_all(mem)
        await mem.add_exchange("ana", "I moved to Porto. My favourite book is Dune.", None, at=LATER)
        await mem.process()
        move, book = await mem.review.pending()
        ctx = await mem.review.context(book.id)
        # Prose, no internal slot keys; the fact is listed as it stands (still active: no mark).
        assert "- User lives in Lisbon." in ctx.prediction and "(superseded" not in ctx.prediction
        assert "their favourite book" in ctx.prediction
        assert not any(key in ctx.prediction for key in ("home:", "favourite:", "nothing known about:"))
        porto = await mem.review.confirm_supersession(move.id, reviewer="rev")
        ctx = await mem.review.context(book.id)
        assert f"- User lives in Lisbon. (superseded by #{porto.id})" in ctx.prediction.splitlines()
        assert [k.described() for k in ctx.existing] == [f"User lives in Lisbon (superseded by #{porto.id})"]
        assert lisbon.described() == "User lives in Lisbon"  # the active version read before: no note

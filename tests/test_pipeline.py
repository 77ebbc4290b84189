"""The write path's gates and bookkeeping, driven by a scripted extractor so that each gate can be
hit on purpose (the offline extractor's own behaviour is tested in test_offline_extractor.py and
end to end in test_extraction_e2e.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from engine import CoveredClaim, Episode, Extraction, GapItem, Knowledge, Memory, MemoryConfig
from tests.engine_helpers import sql

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


class ScriptedExtractor:
    """Returns what `script` computes from the episode; records what it was shown."""

    name = "scripted"

    def __init__(self, script: Callable[[Episode, list[Knowledge]], Extraction]) -> None:
        self.script = script
        self.calls: list[tuple[Episode, list[Knowledge]]] = []
        self.fail_next = 0

    async def extract(self, episode: Episode, existing: list[Knowledge]) -> Extraction:
        self.calls.append((episode, existing))
        if self.fail_next:
            self.fail_next -= 1
            raise RuntimeError("model endpoint unavailable")
        return self.script(episode, existing)


def claims_from_user(episode: Episode, existing: list[Knowledge]) -> Extraction:
    """Every user line 'FACT: x' is a claim 'x'; covered when an existing fact says exactly x."""
    known = {k.statement: k for k in existing}
    items, covered = [], []
    for m in episode.messages:
        if m.role == "user" and m.content.startswith("FACT: "):
            text = m.content[6:]
            if text in known:
                covered.append(CoveredClaim(text, str(known[text].id)))
            else:
                items.append(GapItem(text, confidence=0.9, evidence=text))
    return Extraction(prediction="; ".join(known) if existing else "", items=items, covered=covered)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
async def mem(new_target):
    clock = Clock()
    m = Memory(new_target("m"), extractor=ScriptedExtractor(claims_from_user), clock=clock)
    async with m:
        yield m


async def test_nothing_is_retrievable_before_approval(mem: Memory) -> None:
    await mem.add_exchange("ana", "FACT: Ana keeps bees", "ok", at=T0)
    report = await mem.process()
    assert report.queued == 1
    assert (await mem.retrieve("Ana keeps bees", user_id="ana")).items == []
    assert await mem.knowledge("ana") == []
    [cand] = await mem.review.pending()
    await mem.review.approve(cand.id, reviewer="rev")
    assert [i.knowledge.statement for i in (await mem.retrieve("Ana keeps bees", user_id="ana")).items] == [
        "Ana keeps bees"
    ]


async def test_repeat_in_later_episode_is_predicted_while_new_fact_is_queued(mem: Memory) -> None:
    await mem.add_exchange("ana", "FACT: Ana keeps bees", "ok", at=T0)
    await mem.process()
    [cand] = await mem.review.pending()
    fact = await mem.review.approve(cand.id, reviewer="rev")
    later = T0 + timedelta(hours=3)
    await mem.add_exchange("ana", "FACT: Ana keeps bees", "ok", at=later)
    await mem.add_exchange("ana", "FACT: Ana plays the cello", "ok", at=later + timedelta(minutes=1))
    report = await mem.process()
    assert report.episodes == 1
    assert report.predicted == 1
    assert report.queued == 1
    assert [c.statement for c in await mem.review.pending()] == ["Ana plays the cello"]
    ctx = await mem.review.context((await mem.review.pending())[0].id)
    assert ctx.mode == "predict" and "Ana keeps bees" in ctx.prediction
    async with sql(mem) as conn:
        row = await (await conn.execute("SELECT covered FROM extraction_runs ORDER BY id DESC LIMIT 1")).fetchone()
    assert f'"predicted_by": "{fact.id}"' in row[0]  # the discarded claim is kept for discard regret


async def test_same_fact_twice_in_one_batch_yields_one_candidate(mem: Memory) -> None:
    await mem.add_exchange("ana", "FACT: Ana keeps bees", "ok", at=T0)
    await mem.add_exchange("ana", "FACT: ana keeps bees!", "ok", at=T0 + timedelta(hours=2))  # another episode
    report = await mem.process()
    assert report.episodes == 2 and report.queued == 1 and report.duplicates == 1
    assert len(await mem.review.pending()) == 1


async def test_rejected_value_not_queued_again_for_that_user_but_for_another(mem: Memory) -> None:
    await mem.add_exchange("ana", "FACT: Ana is the queen", "ok", at=T0)
    await mem.process()
    [cand] = await mem.review.pending()
    await mem.review.reject(cand.id, reviewer="rev", reason="a joke")
    await mem.add_exchange("ana", "FACT: Ana is the queen", "ok", at=T0 + timedelta(hours=2))
    await mem.add_exchange("bob", "FACT: Ana is the queen", "ok", at=T0 + timedelta(hours=2))
    report = await mem.process()
    assert report.tombstoned == 1 and report.queued == 1
    assert [(c.user_id, c.statement) for c in await mem.review.pending()] == [("bob", "Ana is the queen")]


async def test_superseded_fact_stated_again_is_queued_again(mem: Memory) -> None:
    old = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")
    await mem.correct("ana", old.id, "Ana lives in Porto", actor="support", reason="moved")
    # The old value is no longer believed: saying it again is news, not a duplicate.
    await mem.add_exchange("ana", "FACT: Ana lives in Lisbon", "ok", at=T0)
    # Positive control: the active value is a duplicate (or predicted).
    await mem.add_exchange("ana", "FACT: Ana lives in Porto", "ok", at=T0)
    report = await mem.process()
    assert [c.statement for c in await mem.review.pending()] == ["Ana lives in Lisbon"]
    assert report.predicted + report.duplicates == 1


async def test_inverted_interval_from_extractor_is_counted_invalid(new_target) -> None:
    def script(ep: Episode, existing: list[Knowledge]) -> Extraction:
        return Extraction(
            "",
            [
                GapItem("Ana lived in Rome", valid_at=T0, invalid_at=T0 - timedelta(days=1), evidence="Rome"),
                GapItem("Ana lived in Oslo", valid_at=T0, invalid_at=T0, evidence="Oslo"),
                GapItem("Ana lived in Bern", valid_at=T0 - timedelta(days=9), invalid_at=T0, evidence="Bern"),
            ],
        )

    async with Memory(new_target("m"), extractor=ScriptedExtractor(script)) as mem:
        await mem.add_exchange("ana", "Rome, Oslo, Bern", "ok", at=T0)
        report = await mem.process()
        assert report.invalid == 2 and report.queued == 1
        assert [c.statement for c in await mem.review.pending()] == ["Ana lived in Bern"]


async def test_gates_run_in_order_and_are_counted_on_the_run(new_target) -> None:
    def script(ep: Episode, existing: list[Knowledge]) -> Extraction:
        return Extraction(
            "",
            [
                GapItem("low", confidence=0.5, valid_at=T0, invalid_at=T0 - timedelta(days=1), evidence="x"),
                GapItem("inverted", valid_at=T0, invalid_at=T0 - timedelta(days=1), evidence="x"),
                GapItem("Ana hates jazz", evidence="x"),
                GapItem("Ana likes tea", evidence="Ana likes tea"),
                GapItem("Ana likes tea.", evidence="x"),
            ],
            covered=[CoveredClaim("Ana is Ana", None)],
        )

    async with Memory(new_target("m"), extractor=ScriptedExtractor(script)) as mem:
        cid = await mem.queue_candidate("ana", "Ana hates jazz")
        await mem.review.reject(cid, reviewer="rev", reason="wrong")
        await mem.add_exchange("ana", "Ana likes tea", "ok", at=T0)
        report = await mem.process()
        assert (
            report.claims,
            report.predicted,
            report.below_confidence,
            report.invalid,
            report.tombstoned,
            report.duplicates,
            report.queued,
        ) == (6, 1, 1, 1, 1, 1, 1)
        async with sql(mem) as conn:
            run = await (
                await conn.execute(
                    "SELECT claims, predicted, below_confidence, invalid, tombstoned, duplicates, queued, mode"
                    " FROM extraction_runs"
                )
            ).fetchone()
        assert tuple(run) == (6, 1, 1, 1, 1, 1, 1, "cold_start")


async def test_update_supersedes_only_a_shown_active_fact_of_the_same_user(new_target) -> None:
    handles: dict[str, str] = {}

    def script(ep: Episode, existing: list[Knowledge]) -> Extraction:
        mine = next(k for k in existing if "lives" in k.statement)
        return Extraction(
            "The user lives in Lisbon",
            [
                GapItem("Ana lives in Porto", kind="update", supersedes=str(mine.id), evidence="Porto"),
                GapItem("Ana works at Acme", kind="update", supersedes=handles["bob"], evidence="Acme"),
                GapItem("Ana has a cat", kind="update", supersedes="not-a-handle", evidence="cat"),
            ],
        )

    async with Memory(new_target("m"), extractor=ScriptedExtractor(script)) as mem:
        ana = await mem.add_knowledge("ana", "Ana lives in Lisbon", actor="support")
        bob = await mem.add_knowledge("bob", "Bob works at Initech", actor="support")
        handles["bob"] = str(bob.id)
        await mem.add_exchange("ana", "Ana lives in Porto now, works at Acme, has a cat", "ok", at=T0)
        report = await mem.process()
        assert report.supersedes_dropped == 2 and report.queued == 3
        by_text = {c.statement: c for c in await mem.review.pending()}
        assert by_text["Ana lives in Porto"].kind == "update"
        assert by_text["Ana lives in Porto"].supersedes_id == ana.id
        for other in ("Ana works at Acme", "Ana has a cat"):
            assert by_text[other].kind == "new" and by_text[other].supersedes_id is None


async def test_unsupported_evidence_is_flagged_and_confidence_lowered(new_target) -> None:
    def script(ep: Episode, existing: list[Knowledge]) -> Extraction:
        return Extraction(
            "",
            [
                GapItem("Ana owns a boat", confidence=0.9, evidence="I own a boat"),
                GapItem("Ana owns a plane", confidence=0.9, evidence="the assistant said planes are fun"),
            ],
        )

    async with Memory(new_target("m"), extractor=ScriptedExtractor(script)) as mem:
        await mem.add_exchange("ana", "Hi. I own a boat, by the way.", "Planes are fun too!", at=T0)
        report = await mem.process()
        assert report.queued == 2 and report.unsupported == 1
        by_text = {c.statement: c for c in await mem.review.pending()}
        assert not by_text["Ana owns a boat"].unsupported and by_text["Ana owns a boat"].confidence == 0.9
        assert by_text["Ana owns a plane"].unsupported and by_text["Ana owns a plane"].confidence < 0.9


async def test_backfilled_and_same_second_messages_are_processed(mem: Memory) -> None:
    await mem.add_exchange("ana", "FACT: Ana keeps bees", "ok", at=T0)
    await mem.process()
    await mem.add_exchange("ana", "FACT: Ana sails", "ok", at=T0)  # the same instant as a processed one
    await mem.add_exchange("ana", "FACT: Ana skis", "ok", at=T0 - timedelta(days=30))  # back-filled, older
    report = await mem.process()
    assert report.messages == 4 and report.queued == 2
    assert {c.statement for c in await mem.review.pending()} == {"Ana keeps bees", "Ana sails", "Ana skis"}


async def test_failed_run_leaves_episode_retryable_and_retry_succeeds(new_target) -> None:
    extractor = ScriptedExtractor(claims_from_user)
    extractor.fail_next = 1
    async with Memory(new_target("m"), extractor=extractor) as mem:
        await mem.add_exchange("ana", "FACT: Ana keeps bees", "ok", at=T0)
        report = await mem.process()
        assert report.failed == 1 and report.queued == 0 and "unavailable" in report.errors[0]
        stats = await mem.stats()
        assert stats.extraction.episodes.failed == 1 and stats.extraction.failed_runs == 1
        assert await mem.review.pending() == []
        retry = await mem.process()
        assert retry.failed == 0 and retry.queued == 1 and retry.messages == 0
        assert (await mem.stats()).to_dict()["extraction"]["episodes"] == {"open": 0, "processed": 1, "failed": 0}


async def test_episodes_split_at_gaps_and_size(new_target) -> None:
    config = MemoryConfig(episode_max_messages=4)
    async with Memory(new_target("m"), extractor=ScriptedExtractor(claims_from_user), config=config) as mem:
        for i in range(3):
            await mem.add_exchange("ana", f"FACT: f{i}", "ok", at=T0 + timedelta(minutes=i))
        await mem.add_exchange("ana", "FACT: later", "ok", at=T0 + timedelta(hours=1))
        report = await mem.process()
        assert report.episodes == 3  # 4 + 2 messages before the gap, 2 after it


async def test_extraction_sources_are_original_messages_not_the_narrative(mem: Memory) -> None:
    await mem.add_exchange("ana", "FACT: Ana keeps bees", "Lovely.", at=T0)
    await mem.process()
    extractor: ScriptedExtractor = mem.pipeline.extractor
    episode, _ = extractor.calls[0]
    assert [(m.role, m.content) for m in episode.messages] == [
        ("user", "FACT: Ana keeps bees"),
        ("assistant", "Lovely."),
    ]


async def test_two_concurrent_process_calls_never_process_the_same_messages(
    new_target: Callable[[str], str],
) -> None:
    path = new_target("m")
    a_ext, b_ext = ScriptedExtractor(claims_from_user), ScriptedExtractor(claims_from_user)
    async with Memory(path, extractor=a_ext) as a, Memory(path, extractor=b_ext) as b:
        for i in range(30):
            await a.add_exchange(f"u{i % 3}", f"FACT: fact {i}", "ok", at=T0 + timedelta(hours=i))
        ra, rb = await asyncio.gather(a.process(), b.process())
        assert ra.messages + rb.messages == 60
        assert ra.episodes + rb.episodes == 30
        seen = [ep.id for ep, _ in a_ext.calls] + [ep.id for ep, _ in b_ext.calls]
        assert len(seen) == len(set(seen)) == 30
        assert len(await a.review.pending(limit=100)) == 30


async def test_same_memory_concurrent_process_calls_are_serialised_per_user(mem: Memory) -> None:
    for i in range(5):
        await mem.add_exchange("ana", f"FACT: fact {i}", "ok", at=T0 + timedelta(hours=i))
    r1, r2 = await asyncio.gather(mem.process("ana"), mem.process("ana"))
    assert r1.queued + r2.queued == 5 and r1.episodes + r2.episodes == 5


async def test_extract_all_mode_skips_prediction(new_target) -> None:
    extractor = ScriptedExtractor(claims_from_user)
    async with Memory(new_target("m"), extractor=extractor, config=MemoryConfig(predict=False)) as mem:
        await mem.add_knowledge("ana", "Ana keeps bees", actor="support")
        await mem.add_exchange("ana", "FACT: Ana keeps bees", "ok", at=T0)
        report = await mem.process()
        assert extractor.calls[0][1] == []  # nothing shown to predict from
        assert report.predicted == 0 and report.duplicates == 1  # dedup still guards the active fact
        async with sql(mem) as conn:
            assert (await (await conn.execute("SELECT mode FROM extraction_runs")).fetchone())[0] == "extract_all"


async def test_background_mode_processes_at_threshold_and_close_waits(new_target) -> None:
    extractor = ScriptedExtractor(claims_from_user)
    path = new_target("m")
    mem = Memory(path, extractor=extractor, config=MemoryConfig(batch_threshold=4))
    await mem.open()
    await mem.add_exchange("ana", "FACT: one", "ok", at=T0)
    assert extractor.calls == []  # 2 messages buffered: below the threshold
    await mem.add_exchange("ana", "FACT: two", "ok", at=T0 + timedelta(minutes=1))
    await mem.close()  # waits for the background run the threshold started
    assert len(extractor.calls) == 1
    async with Memory(path) as again:
        assert len(await again.review.pending()) == 2


async def test_capture_rejects_bad_input_and_changes_nothing(mem: Memory) -> None:
    from engine import InvalidIntervalError, InvalidStatementError

    with pytest.raises(InvalidStatementError):
        await mem.add_exchange("", "hello", "hi")
    with pytest.raises(InvalidStatementError):
        await mem.add_exchange("ana", "   ", "hi")
    with pytest.raises(InvalidIntervalError):
        await mem.add_exchange("ana", "hello", "hi", at=datetime(2026, 1, 1))  # naive
    with pytest.raises(InvalidStatementError):
        await mem.pipeline.add_exchanges([("ana", "fine", "ok", T0), ("ana", "", "bad", T0)])
    async with sql(mem) as conn:
        assert (await (await conn.execute("SELECT count(*) FROM messages")).fetchone())[0] == 0

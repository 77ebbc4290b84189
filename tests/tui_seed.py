"""The seeded database every workstation test and snapshot uses.

Built only through the engine's public API with a stepped clock that stops before `T0`, so that
extraction runs, episodes, candidate contexts, tombstones and audit rows are all real. The app under
test then runs with `fixed_clock` (always `T0`), so ages and "now" are identical on every run and
machine. The extractor is scripted (like tests/test_pipeline.py): each user line says what it
should yield, which makes every kind of candidate reachable on purpose:

    FACT: <statement>                       a new claim, confidence 0.9, evidence = the statement
    UPDATE <old> => <new>                   an update superseding the shown fact whose text is <old>
    CONTRA <old> => <new>                   a contradiction of <old>
    LOW: <statement>                        confidence 0.72 (just above the 0.7 gate)
    UNSUPPORTED: <statement>                evidence quoted from nowhere in the messages (flagged,
                                            confidence 0.95 - 0.25 penalty)
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from engine import Episode, Extraction, GapItem, Knowledge, Memory, MemoryConfig

T0 = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
"""The fixed "now" of every workstation test: the seed writes everything before it."""

MARKUP_STATEMENT = "Ben wrote [b]bold[/b] [link=http://x]x[/link] and \x1b[31mred"
"""A statement that Rich would render as markup and a terminal as a colour escape if not shown literally."""


SeededDb = tuple[str, dict[str, int]]
"""(path of a private copy of the seeded database, ids by name): the `tui_db` fixture."""


def fixed_clock() -> datetime:
    return T0


class SteppedClock:
    """The seed's clock: set explicitly before each step so every created_at is known."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now


class ScriptedExtractor:
    """Turns the tagged user lines of an episode into gap items (see the module docstring)."""

    name = "scripted"

    async def extract(self, episode: Episode, existing: list[Knowledge]) -> Extraction:
        by_text = {k.statement: k for k in existing}
        items: list[GapItem] = []
        for message in episode.messages:
            if message.role != "user":
                continue
            line = message.content
            if line.startswith("FACT: "):
                items.append(GapItem(line[6:], confidence=0.9, evidence=line[6:]))
            elif line.startswith("LOW: "):
                items.append(GapItem(line[5:], confidence=0.72, evidence=line[5:]))
            elif line.startswith("UNSUPPORTED: "):
                items.append(GapItem(line[13:], confidence=0.95, evidence="she told me this at the conference"))
            elif line.startswith(("UPDATE ", "CONTRA ")):
                old, new = line[7:].split(" => ")
                kind = "update" if line.startswith("UPDATE") else "contradiction"
                target = by_text.get(old)
                items.append(
                    GapItem(
                        new, kind=kind, supersedes=str(target.id) if target else None, confidence=0.85, evidence=new
                    )
                )
        prediction = " ".join(f"{k.statement}." for k in existing) if existing else ""
        return Extraction(prediction=prediction, items=items)


async def _exchange(mem: Memory, clock: SteppedClock, user: str, lines: list[tuple[str, str]], at: datetime) -> None:
    clock.now = at
    for i, (said, answered) in enumerate(lines):
        await mem.add_exchange(user, said, answered, at=at + timedelta(minutes=i))


async def _pending_id(mem: Memory, user: str, statement: str) -> int:
    for cand in await mem.review.pending(user_id=user, limit=500):
        if cand.statement == statement:
            return cand.id
    raise AssertionError(f"seed: no pending candidate {statement!r} for {user}")


async def seed(path: str, *, drawn: bool = False) -> dict[str, int]:
    """Build the database at `path`; returns the ids of the interesting rows by name.

    Whether an approval goes to second review is drawn in secret when it is made (engine/review.py),
    so the seed fixes it: with `drawn` every approval is in the sample (rate 1); without, none is
    but the one the two-person rule always draws (Ben's peanut allergy, a health fact), which a
    second reviewer (`lead`) then upholds, so the default seed has no second review waiting."""
    clock = SteppedClock(T0 - timedelta(days=30))
    ids: dict[str, int] = {}
    config = MemoryConfig(second_review_rate=1.0 if drawn else 0.0)
    async with Memory(path, extractor=ScriptedExtractor(), clock=clock, config=config) as mem:
        # -- month-old history: cold-start extraction, approved by a curator --------------------
        day = T0 - timedelta(days=30)
        await _exchange(
            mem,
            clock,
            "u-ana",
            [
                ("FACT: Ana lives in Lisbon", "Lisbon is lovely."),
                ("FACT: Ana works as a nurse", "That is demanding work."),
                ("FACT: Ana is the queen of Spain", "Really?"),
            ],
            day,
        )
        await _exchange(
            mem,
            clock,
            "u-ben",
            [
                ("FACT: Ben is allergic to peanuts", "Noted, I will keep that in mind."),
                ("FACT: Ben drives a Volvo", "Safe choice."),
                ("FACT: Ben is 200 years old", "That seems unlikely."),
            ],
            day + timedelta(hours=1),
        )
        await _exchange(
            mem,
            clock,
            "u-cho",
            [
                ("FACT: Cho plays the cello", "Wonderful instrument."),
                ("FACT: Cho works at Initech", "How is it there?"),
            ],
            day + timedelta(hours=2),
        )
        clock.now = day + timedelta(hours=3)
        await mem.process()
        for user, statement, name in [
            ("u-ana", "Ana lives in Lisbon", "lisbon"),
            ("u-ana", "Ana works as a nurse", "nurse"),
            ("u-ben", "Ben is allergic to peanuts", "peanuts"),
            ("u-ben", "Ben drives a Volvo", "volvo"),
            ("u-cho", "Cho plays the cello", "cello"),
            ("u-cho", "Cho works at Initech", "initech"),
        ]:
            cid = await _pending_id(mem, user, statement)
            ids[name] = (await mem.review.approve(cid, reviewer="curator")).id
            if name == "peanuts" and not drawn:  # the two-person rule drew it: a second person agrees
                await mem.team.second_review(cid, "lead", approve=True)
        queen = await _pending_id(mem, "u-ana", "Ana is the queen of Spain")
        ids["queen_candidate"] = queen
        ids["queen_tombstone"] = (await mem.review.reject(queen, reviewer="curator", reason="a joke")).id  # type: ignore[union-attr]
        old = await _pending_id(mem, "u-ben", "Ben is 200 years old")
        ids["age_tombstone"] = (await mem.review.reject(old, reviewer="curator", reason="not plausible")).id  # type: ignore[union-attr]

        # -- a week later: support corrects, retracts, lifts a tombstone ------------------------
        clock.now = T0 - timedelta(days=20)
        porto = await mem.correct("u-ana", ids["lisbon"], "Ana lives in Porto", actor="support", reason="moved")
        ids["porto"] = porto.id
        await mem.retract("u-cho", ids["initech"], actor="support", reason="left the company", tombstone=True)
        await mem.lift_tombstone("u-ben", ids["age_tombstone"], actor="support", reason="it was a nickname")

        # -- a superseded chain through review: Volvo -> Tesla (confirmed) ------------------------
        await _exchange(
            mem,
            clock,
            "u-ben",
            [("UPDATE Ben drives a Volvo => Ben drives a Tesla", "Electric now!")],
            T0 - timedelta(days=15),
        )
        clock.now = T0 - timedelta(days=15) + timedelta(hours=1)
        await mem.process("u-ben")
        tesla = await _pending_id(mem, "u-ben", "Ben drives a Tesla")
        ids["tesla"] = (await mem.review.confirm_supersession(tesla, reviewer="curator")).id

        # -- the pending queue, oldest first ---------------------------------------------------
        await _exchange(
            mem,
            clock,
            "u-ana",
            [
                ("FACT: Ana keeps bees", "How many hives?"),
                ("UPDATE Ana lives in Porto => Ana lives in Madrid", "Big move!"),
            ],
            T0 - timedelta(days=3),
        )
        clock.now = T0 - timedelta(days=3) + timedelta(hours=1)
        await mem.process("u-ana")
        await _exchange(
            mem,
            clock,
            "u-ben",
            [
                ("CONTRA Ben is allergic to peanuts => Ben outgrew his peanut allergy", "Good news then."),
                ("FACT: " + MARKUP_STATEMENT, "Interesting formatting."),
            ],
            T0 - timedelta(days=2),
        )
        clock.now = T0 - timedelta(days=2) + timedelta(hours=1)
        await mem.process("u-ben")
        await _exchange(
            mem,
            clock,
            "u-cho",
            [
                ("UNSUPPORTED: Cho speaks Korean", "Nice."),
                ("LOW: Cho might move to Berlin", "Exciting."),
            ],
            T0 - timedelta(days=1),
        )
        clock.now = T0 - timedelta(days=1) + timedelta(hours=1)
        await mem.process("u-cho")
        clock.now = T0 - timedelta(hours=5)
        ids["proposed"] = await mem.queue_candidate(
            "u-cho", "Cho prefers tea over coffee", kind="proposed", confidence=1.0, actor="agent:mcp"
        )
        clock.now = T0 - timedelta(hours=2)
        nurse = await mem.get_knowledge("u-ana", ids["nurse"])
        ids["retraction"] = await mem.queue_candidate(
            "u-ana",
            nurse.statement,
            kind="retraction",
            supersedes_id=nurse.id,
            actor="agent:mcp",
            reason="the user asked to forget this",
        )
        for name, user, statement in [
            ("bees", "u-ana", "Ana keeps bees"),
            ("madrid", "u-ana", "Ana lives in Madrid"),
            ("contradiction", "u-ben", "Ben outgrew his peanut allergy"),
            ("markup", "u-ben", MARKUP_STATEMENT),
            ("unsupported", "u-cho", "Cho speaks Korean"),
            ("low", "u-cho", "Cho might move to Berlin"),
        ]:
            ids[name] = await _pending_id(mem, user, statement)
    return ids


def seed_sync(path: str, *, drawn: bool = False) -> dict[str, int]:
    """`seed` for synchronous callers (snapshot tests build their database before the app runs)."""
    return asyncio.run(seed(path, drawn=drawn))


if __name__ == "__main__":  # pragma: no cover - a manual helper: `python -m tests.tui_seed out.db`
    import sys

    print(seed_sync(sys.argv[1] if len(sys.argv) > 1 else "seed.db"))


CHAIN_DAY = T0 - timedelta(days=60)


async def seed_chain(path: str) -> dict[str, int]:
    """A user whose weeks of conversation were processed in ONE batch with the offline extractor:
    Lisbon, then Porto, then Faro, all pending, chained (each an update of the candidate before it),
    a nurse fact approved, and a repeated statement the prediction gate dropped (the discarded
    list). Returns the ids by name. The nurse approval is never drawn for second review (rate 0, as
    `seed` fixes it): drawn in secret at the default 10 %, it put "1 to second-review" in about one
    snapshot in ten."""
    clock = SteppedClock(CHAIN_DAY)
    async with Memory(path, clock=clock, config=MemoryConfig(second_review_rate=0.0)) as mem:
        await mem.add_exchange("u-ana", "I work as a nurse.", "Nice!", at=CHAIN_DAY)
        clock.now = CHAIN_DAY + timedelta(hours=1)
        await mem.process("u-ana")
        nurse = (await mem.review.pending("u-ana"))[0]
        fact = await mem.review.approve(nurse.id, "curator")
        for days, said in (
            (5, "I live in Lisbon."),
            (30, "I moved to Porto."),
            (45, "I moved to Faro."),
            (50, "I work as a nurse."),
        ):
            await mem.add_exchange("u-ana", said, "I see.", at=CHAIN_DAY + timedelta(days=days))
        clock.now = T0 - timedelta(hours=1)
        await mem.process("u-ana")
        ids = {"nurse_fact": fact.id}
        for cand in await mem.review.pending("u-ana"):
            ids[cand.statement.rsplit(" ", 1)[-1].lower()] = cand.id
        [dropped] = await mem.discarded("u-ana")
        ids["discarded"] = dropped.id
    return ids

"""The ablation the design bets on: predict–calibrate (predict=True) against extract-everything
(predict=False), over the bundled labelled conversations, with a simulated careful curator.

    uv run python benchmarks/ablation.py [--out benchmarks/results/ablation-DATE.json] [--no-write]
        [--conversations benchmarks/data/heldout-conversations.jsonl --expected benchmarks/data/heldout-expected.json]

Each arm replays the set session by session in time order (a session = one user's exchanges
without a 30-minute gap, i.e. one episode), calls `process(user)` after each, and then decides
every pending candidate as the labels say. The batch arm (`predict_batch`) instead ingests the
whole set, runs ONE `process()` and then decides the whole queue, oldest candidate first. A
candidate that matches a labelled fact (rapidfuzz ratio on `engine.text.value_key`, numbers
agreeing) is approved, through `confirm_supersession` when the label says it replaces a fact and
the candidate names that fact; everything else is rejected (a repeat of an already approved label
too: the queue should not have shown it). With `MEMDESK_BASE_URL` set, the same arms also run with
`OpenAIExtractor`.

An update the labels do not ask for is kept beside the old fact (`keep_both`), never silently.

Prints JSON: candidates per 100 exchanges, precision and recall of the queue against the labels,
duplicates caught, updates proposed correctly, the rate of claims discarded as predicted, and every
gate's count; writes it to benchmarks/results/ with the machine and the date.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from engine import Memory, MemoryConfig, ProcessReport
from engine.data import load_exchanges, load_expected
from engine.review import replaces
from engine.text import best_match, value_key

MATCH_THRESHOLD = 90.0
Exchange = tuple[str, str, str | None, datetime]


def sessions(exchanges: list[Exchange], gap: timedelta) -> list[list[Exchange]]:
    """One user's exchanges without a gap longer than `gap`, ordered by their first exchange."""
    by_user: dict[str, list[list[Exchange]]] = {}
    for ex in sorted(exchanges, key=lambda e: (e[3], e[0])):
        runs = by_user.setdefault(ex[0], [])
        if runs and ex[3] - runs[-1][-1][3] <= gap:
            runs[-1].append(ex)
        else:
            runs.append([ex])
    return sorted((run for runs in by_user.values() for run in runs), key=lambda r: (r[0][3], r[0][0]))


def best_label(statement: str, labels: list[dict[str, Any]]) -> int | None:
    """The label a candidate states, by the engine's own rule for "the same value" (a fuzzy ratio
    on value keys, numbers agreeing exactly: "is 34" is not "is 35")."""
    keys = [value_key(lab["statement"]) for lab in labels]
    hit = best_match(value_key(statement), keys, MATCH_THRESHOLD)
    return keys.index(hit[0]) if hit is not None else None


def same_statement(a: str, b: str) -> bool:
    return best_match(value_key(a), [value_key(b)], MATCH_THRESHOLD) is not None


@dataclass
class Tally:
    report: ProcessReport = field(default_factory=ProcessReport)
    approved: int = 0
    rejected: int = 0
    repeats_queued: int = 0
    matched: set[tuple[str, int]] = field(default_factory=set)
    updates_correct: int = 0
    updates_confirmed: int = 0
    updates_chained_unresolved: int = 0
    updates_wrong: int = 0
    updates_missed: int = 0
    valid_at_correct: int = 0
    valid_at_labelled_matched: int = 0
    seconds: float = 0.0


class Clock:
    """The engine's clock follows the replay, so candidate and fact times look like real use."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


async def curate(mem: Memory, user_id: str, labels: list[dict[str, Any]], tally: Tally) -> None:
    # Oldest first, each read again just before its decision: deciding a candidate can re-point
    # the later candidates chained to it (a batch queues "Lisbon" and then "Porto" replacing it).
    for cid in [c.id for c in await mem.review.pending(user_id=user_id, limit=5000)]:
        cand = await mem.review.get(cid, user_id)
        if cand.status != "pending":
            continue
        index = best_label(cand.statement, labels)
        if index is None:
            await mem.review.reject(cand.id, reviewer="curator", reason="not a fact the curator labelled")
            tally.rejected += 1
            continue
        if (user_id, index) in tally.matched:
            await mem.review.reject(cand.id, reviewer="curator", reason="repeat of an approved fact")
            tally.rejected += 1
            tally.repeats_queued += 1
            continue
        label = labels[index]
        old_statement = None
        still_chained = False
        if cand.supersedes_id is not None:
            old_statement = (await mem.get_knowledge(user_id, cand.supersedes_id)).statement
        elif (previous := getattr(cand, "supersedes_candidate_id", None)) is not None:
            # Proposed as a change of a candidate that was pending when it was queued; once that
            # one is approved the engine re-points this one at the new fact (issue 9). Until it
            # does, the curator can only keep both.
            old_statement = (await mem.review.get(previous, user_id)).statement
            still_chained = True
        wanted = label.get("supersedes")
        if wanted and old_statement is not None and same_statement(old_statement, wanted):
            tally.updates_correct += 1
            if still_chained:
                tally.updates_chained_unresolved += 1
                await mem.review.keep_both(cand.id, reviewer="curator")
            else:
                await mem.review.confirm_supersession(cand.id, reviewer="curator")
                tally.updates_confirmed += 1
        else:
            if wanted:
                tally.updates_missed += 1
            if old_statement is not None:
                tally.updates_wrong += 1
            if replaces(cand):  # a wrong or missing target: the curator keeps both, explicitly
                await mem.review.keep_both(cand.id, reviewer="curator")
            else:
                await mem.review.approve(cand.id, reviewer="curator")
        tally.approved += 1
        tally.matched.add((user_id, index))
        if label.get("valid_at"):
            tally.valid_at_labelled_matched += 1
            if cand.valid_at is not None and cand.valid_at.date().isoformat() == label["valid_at"][:10]:
                tally.valid_at_correct += 1


async def run_arm(
    make_extractor: Callable[[], Any],
    predict: bool,
    exchanges: list[Exchange],
    expected: dict[str, list[dict[str, Any]]],
    batch: bool = False,
) -> dict[str, Any]:
    """One arm. `batch=False` reviews after every session (an assistant in daily use); `batch=True`
    ingests the whole history, runs ONE `process()` and reviews the queue afterwards (importing a
    history, then reviewing): updates are proposed only if the pipeline predicts from the pending
    queue as well as from approved facts."""
    config = MemoryConfig(predict=predict)
    tally = Tally()
    replay = sessions(exchanges, config.episode_gap)
    clock = Clock(replay[0][0][3])
    with tempfile.TemporaryDirectory() as tmp:
        async with Memory(Path(tmp) / "ablation.db", extractor=make_extractor(), config=config, clock=clock) as mem:
            if batch:
                clock.now = replay[-1][-1][3] + timedelta(minutes=1)
                await mem.add_exchanges(exchanges)
                started = time.perf_counter()
                tally.report.add(await mem.process())
                tally.seconds += time.perf_counter() - started
                for user_id in sorted(expected):
                    await curate(mem, user_id, expected[user_id], tally)
            else:
                for session in replay:
                    user_id = session[0][0]
                    clock.now = session[-1][3] + timedelta(minutes=1)
                    await mem.add_exchanges(session)
                    started = time.perf_counter()
                    tally.report.add(await mem.process(user_id))
                    tally.seconds += time.perf_counter() - started
                    await curate(mem, user_id, expected.get(user_id, []), tally)
            # What the arm costs downstream: a replaced fact still believed is served to the agent.
            stale = 0
            for user_id, labels in expected.items():
                active = [k.statement for k in await mem.knowledge(user_id)]
                stale += sum(
                    1
                    for lab in labels
                    if lab.get("supersedes") and any(same_statement(a, lab["supersedes"]) for a in active)
                )
    r = tally.report
    labelled = sum(len(v) for v in expected.values())
    labelled_updates = sum(1 for v in expected.values() for lab in v if lab.get("supersedes"))
    return {
        "mode": ("predict" if predict else "extract_all") + ("_batch" if batch else ""),
        "exchanges": len(exchanges),
        "episodes": r.episodes,
        "claims": r.claims,
        "queued": r.queued,
        "candidates_per_100_exchanges": round(100 * r.queued / len(exchanges), 1),
        "approved": tally.approved,
        "rejected": tally.rejected,
        "precision": round(tally.approved / r.queued, 3) if r.queued else None,
        "recall": round(len(tally.matched) / labelled, 3) if labelled else None,
        "labelled_facts": labelled,
        "repeats_queued": tally.repeats_queued,
        "duplicates_caught": r.duplicates,
        "predicted_discard_rate": round(r.predicted / r.claims, 3) if r.claims else None,
        "updates": {
            "labelled": labelled_updates,
            "proposed_correctly": tally.updates_correct,
            "confirmed": tally.updates_confirmed,
            "proposed_but_still_chained_at_review": tally.updates_chained_unresolved,
            "missed": tally.updates_missed,
            "proposed_wrongly": tally.updates_wrong,
        },
        "replaced_facts_still_active": stale,
        "valid_at": {"labelled_and_matched": tally.valid_at_labelled_matched, "correct": tally.valid_at_correct},
        "gates": {
            "predicted": r.predicted,
            "below_confidence": r.below_confidence,
            "invalid": r.invalid,
            "tombstoned": r.tombstoned,
            "duplicates": r.duplicates,
            "supersedes_dropped": r.supersedes_dropped,
            "unsupported": r.unsupported,
        },
        "failed_episodes": r.failed,
        "process_seconds": round(tally.seconds, 3),
    }


def extractors() -> dict[str, Callable[[], Any]]:
    from engine.extraction.offline import OfflineExtractor

    out: dict[str, Callable[[], Any]] = {"offline": OfflineExtractor}
    if os.environ.get("MEMDESK_BASE_URL"):
        from engine.extraction import OpenAIExtractor

        out["openai"] = OpenAIExtractor  # reads MEMDESK_BASE_URL / MEMDESK_MODEL / OPENAI_API_KEY
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", type=Path, default=None, help="results file (default benchmarks/results/ablation-DATE.json)"
    )
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument(
        "--conversations",
        type=Path,
        default=None,
        help="another labelled set in the same format (default: the bundled one)",
    )
    parser.add_argument("--expected", type=Path, default=None, help="its labels (with --conversations)")
    args = parser.parse_args()
    if (args.conversations is None) != (args.expected is None):
        parser.error("--conversations and --expected go together")
    exchanges = load_exchanges(args.conversations)
    expected = load_expected(args.expected)
    today = datetime.now(UTC).date().isoformat()
    arms: dict[str, Any] = {}
    for name, make in extractors().items():
        for predict in (True, False):
            arm = await run_arm(make, predict, exchanges, expected)
            arms[f"{name}/{arm['mode']}"] = arm
        arm = await run_arm(make, True, exchanges, expected, batch=True)
        arms[f"{name}/{arm['mode']}"] = arm
    result = {
        "benchmark": "ablation",
        "date": today,
        "machine": {
            "cores": os.cpu_count(),
            "python": f"{platform.python_implementation()} {platform.python_version()}",
            "platform": f"{platform.system()} {platform.machine()}",
        },
        "dataset": {
            "file": str(args.conversations or "engine/data/conversations.jsonl"),
            "exchanges": len(exchanges),
            "users": len({e[0] for e in exchanges}),
            "labelled_facts": sum(len(v) for v in expected.values()),
        },
        "match_threshold": MATCH_THRESHOLD,
        "arms": arms,
    }
    text = json.dumps(result, indent=2, ensure_ascii=False)
    print(text)
    if not args.no_write:
        out = args.out or Path(__file__).parent / "results" / f"ablation-{today}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n", encoding="utf-8")
        print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    asyncio.run(main())

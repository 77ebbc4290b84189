"""Same, replaces or both: how the value model treats pairs of statements, on every way in.

    uv run python benchmarks/value_identity.py [--embedder wordllama|hashing] [--json]

Data: `benchmarks/data/value-identity.jsonl` (the main part: 45 pairs each of replaces, distinct and
same, worded the ways agents and LLM extractors write) and `value-identity-heldout.jsonl` (15 of
each, written with the main part and before any rule or threshold was tuned; never tuned on). A
pair is an OLD statement, already an active fact of a fresh user, and a NEW one arriving by:

- `propose`: an agent's proposal (MCP's write);
- `llm`: a scripted LLM extractor (an Extractor returning the NEW statement as a GapItem with no
  `supersedes` handle, as an OpenAI-compatible model that names no handle would) through `process`;
- `add`: trusted `add_knowledge` (no settle);
- `import`: `add_knowledge_many([old, new])`, one call.

Outcomes per path and kind:

- linked: the new statement is queued as an update of the old fact (propose, llm), or refused with
  SettleRequiredError naming it (add); an import never links (it states what is true);
- caught: refused or dropped as the same value as the old fact (duplicate_of, a duplicate
  discard, DuplicateFactError, an import's skip naming it);
- marked: stored with a mark naming the old fact (looks like, may replace);
- kept: stored (queued or added) and not linked to the old fact (marked or not).

Targets (issue 26): replaces linked or marked >= 90 %; distinct kept: all; same caught or marked
>= 90 %. Also printed: the cosine similarity of each free-text pair (old or new read as free text
by engine.claims) under the embedder, by kind: what the "may replace" threshold
(engine.gate.MAY_REPLACE_SIMILARITY) is chosen from, on the main part only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine import Memory
from engine.claims import read_claim
from engine.embedders import HashingEmbedder, default_embedder
from engine.errors import DuplicateFactError, SettleRequiredError, UserInputError
from engine.models import Episode, Extraction, GapItem, Knowledge

DATA = Path(__file__).resolve().parent / "data"
PATHS = ("propose", "llm", "add", "import")
KINDS = ("replaces", "distinct", "same")


@dataclass(frozen=True)
class Pair:
    kind: str
    old: str
    new: str
    old_valid: datetime | None = None
    old_invalid: datetime | None = None
    new_valid: datetime | None = None
    new_invalid: datetime | None = None


def _day(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text).replace(tzinfo=UTC) if text else None


def load(name: str) -> list[Pair]:
    out = []
    for line in (DATA / name).read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out.append(
                Pair(
                    row["kind"],
                    row["old"],
                    row["new"],
                    _day(row.get("old_valid")),
                    _day(row.get("old_invalid")),
                    _day(row.get("new_valid")),
                    _day(row.get("new_invalid")),
                )
            )
    return out


class ScriptedLLM:
    """An LLM extractor as an OpenAI-compatible model without handles answers: the given statement,
    kind `new`, no `supersedes`, its own valid times."""

    name = "scripted-llm"
    model: str | None = "scripted"
    prompt_version: str | None = "bench"

    def __init__(self) -> None:
        self.items: dict[str, GapItem] = {}

    async def extract(self, episode: Episode, existing: list[Knowledge]) -> Extraction:
        item = self.items.get(episode.user_id)
        return Extraction(prediction="", items=[item] if item is not None else [])


def _names(marks: Any, fact_id: int) -> bool:
    return any(m.target_id == fact_id for m in marks)


async def run_path(mem: Memory, llm: ScriptedLLM, path: str, uid: str, pair: Pair) -> str:
    """One pair on one path: 'linked' | 'caught' | 'marked' | 'kept' | 'lost' (refused or dropped
    for another reason) | 'error: ...'."""
    if path == "import":
        added = await mem.add_knowledge_many(
            uid,
            [_fact(pair.old, pair.old_valid, pair.old_invalid), _fact(pair.new, pair.new_valid, pair.new_invalid)],
            "bench",
        )
        if not added:
            return "lost"
        old_id = added[0].id
        if any(i == 1 and f"fact {old_id} " in why for i, why in added.skipped):
            return "caught"
        if len(added) < 2:
            return "lost"
        return "marked" if any(i == 1 and m.target_id == old_id for i, m in added.marked) else "kept"
    old = await mem.add_knowledge(uid, pair.old, "bench", valid_at=pair.old_valid, invalid_at=pair.old_invalid)
    if path == "add":
        try:
            new = await mem.add_knowledge(uid, pair.new, "bench", valid_at=pair.new_valid, invalid_at=pair.new_invalid)
        except SettleRequiredError as exc:
            return "linked" if exc.knowledge_id == old.id else "lost"
        except DuplicateFactError as exc:
            return "caught" if exc.knowledge_id == old.id else "lost"
        except UserInputError as exc:
            return f"error: {exc}"
        return "marked" if _names(new.marks, old.id) else "kept"
    if path == "propose":
        out = await mem.propose(uid, pair.new, "agent")
        if out.duplicate_of is not None:
            return "caught" if out.duplicate_of == ("knowledge", old.id) else "lost"
        assert out.candidate_id is not None
        cand = await mem.review.get(out.candidate_id)
    else:
        llm.items[uid] = GapItem(
            statement=pair.new,
            kind="new",
            confidence=0.9,
            valid_at=pair.new_valid,
            invalid_at=pair.new_invalid,
            evidence=pair.new,
        )
        await mem.add_exchange(uid, pair.new, "Noted.")
        await mem.process(uid)
        pending = await mem.review.pending(uid)
        if not pending:
            dropped = await mem.discarded(uid)
            hit = [d for d in dropped if d.gate in ("duplicate", "predicted") and d.matched_id == old.id]
            return "caught" if hit else "lost"
        cand = pending[0]
    if cand.supersedes_id == old.id:
        return "linked"
    return "marked" if _names(cand.marks, old.id) else "kept"


def _fact(statement: str, start: datetime | None, end: datetime | None) -> Any:
    from engine.knowledge import NewFact

    return NewFact(statement, start, end)


def success(kind: str, outcome: str) -> bool:
    if kind == "replaces":
        return outcome in ("linked", "marked")
    if kind == "distinct":
        return outcome in ("kept", "marked")
    return outcome in ("caught", "marked")


async def measure(pairs: list[Pair], embedder_name: str) -> dict[str, Any]:
    embedder = HashingEmbedder() if embedder_name == "hashing" else default_embedder()
    llm = ScriptedLLM()
    table: dict[str, dict[str, Counter[str]]] = {p: {k: Counter() for k in KINDS} for p in PATHS}
    failures: list[dict[str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with Memory(Path(tmp) / "vi.db", embedder=embedder, extractor=llm) as mem:
            for path in PATHS:
                for n, pair in enumerate(pairs):
                    uid = f"{path}-{n}"
                    outcome = await run_path(mem, llm, path, uid, pair)
                    table[path][pair.kind][outcome] += 1
                    if not success(pair.kind, outcome):
                        failures.append(
                            {"path": path, "kind": pair.kind, "old": pair.old, "new": pair.new, "got": outcome}
                        )
    summary = {
        path: {
            kind: {
                **dict(table[path][kind]),
                "ok": sum(v for o, v in table[path][kind].items() if success(kind, o)),
                "of": sum(table[path][kind].values()),
            }
            for kind in KINDS
        }
        for path in PATHS
    }
    return {"summary": summary, "failures": failures}


def similarities(pairs: list[Pair], embedder_name: str) -> dict[str, list[float]]:
    """Cosine similarity of each pair with a free-text side, by kind (what the threshold reads)."""
    embedder = HashingEmbedder() if embedder_name == "hashing" else default_embedder()
    free = [p for p in pairs if read_claim(p.old).slot is None or read_claim(p.new).slot is None]
    if not free:
        return {}
    vectors = asyncio.run(embedder.embed([t for p in free for t in (p.old, p.new)]))
    out: dict[str, list[float]] = {k: [] for k in KINDS}
    for i, pair in enumerate(free):
        a, b = vectors[2 * i], vectors[2 * i + 1]
        dot = sum(x * y for x, y in zip(a, b, strict=True))
        norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)) or 1.0
        out[pair.kind].append(round(dot / norm, 3))
    return {k: sorted(v) for k, v in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embedder", choices=["wordllama", "hashing"], default="wordllama")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--failures", action="store_true", help="list every pair that missed its target")
    args = parser.parse_args()
    result: dict[str, Any] = {"embedder": args.embedder}
    for part, name in (("main", "value-identity.jsonl"), ("heldout", "value-identity-heldout.jsonl")):
        pairs = load(name)
        result[part] = asyncio.run(measure(pairs, args.embedder))
        result[part]["free_text_similarity"] = similarities(pairs, args.embedder)
    if args.json:
        print(json.dumps(result, indent=1))
        return
    for part in ("main", "heldout"):
        print(f"== {part} ({args.embedder})")
        for path in PATHS:
            cells = []
            for kind in KINDS:
                row = result[part]["summary"][path][kind]
                detail = " ".join(f"{o}={v}" for o, v in sorted(row.items()) if o not in ("ok", "of"))
                cells.append(f"{kind} {row['ok']}/{row['of']} ({detail})")
            print(f"  {path:8} " + " | ".join(cells))
        print("  free-text similarity by kind:", result[part]["free_text_similarity"])
        if args.failures:
            for f in result[part]["failures"]:
                print(f"    MISS {f['path']:8} {f['kind']:9} {f['old']!r} -> {f['new']!r}: {f['got']}")


if __name__ == "__main__":
    main()

"""Paraphrase retrieval: does `Memory.retrieve` find a fact from a question that shares no key word
with it? (issue 12: "Do they eat meat?" -> "User is vegan").

    uv run python benchmarks/paraphrase.py              # both embedders, the configured weights, and the grid
    uv run python benchmarks/paraphrase.py --no-grid --no-save

The set (benchmarks/data/paraphrase.jsonl): one user, 30 facts, 64 natural questions. Each line is
one fact with its questions and one `keyword` (the word someone who remembers the fact would type).
The script refuses the set if a question shares a content word with its own fact (casefolded,
with plural/-ing/-ed endings stripped), so the figures measure paraphrase, not word overlap.

For each embedder (HashingEmbedder, WordLlamaEmbedder) it builds a fresh store with the 30 facts
and asks every question through the real `Memory.retrieve` (both arms and the fusion), top_k 5:
hit@1 is the share of questions whose fact is ranked first, hit@5 in the top five. Two controls,
because a fusion that wins on paraphrases must not lose what the lexical arm is for:
- keywords: each fact's keyword alone ("Biscuit", "1988") in the same store;
- identifiers: a second user with 300 generated facts that differ mostly by a note number ("User
  likes jazz (note 17)"), asked "note 17" or "likes jazz note 17": a number is where an averaged
  word embedding is weakest and BM25 strongest.

The grid varies the text (BM25) arm's weight against the vector arm's (`MemoryConfig.vector_weight`
/ `text_weight`, reciprocal rank fusion with k = 60) and reports each setting. Also timed: one
query embedded on its own (the retrieve path), median and p95 over 2,000 calls.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engine import HashingEmbedder, Memory, MemoryConfig, WordLlamaEmbedder
from engine.embedders import Embedder

DATA = Path(__file__).parent / "data" / "paraphrase.jsonl"
UNRELATED = Path(__file__).parent / "data" / "unrelated-questions.txt"
"""Questions about nothing the user's 30 facts say (issue 19.9: "Portuguese" returned five facts)."""
FLOORS: list[float | None] = [None, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5]
RESULTS = Path(__file__).parent / "results"
USER = "reader"
GRID = [(1.0, 0.0), (1.0, 0.25), (1.0, 0.5), (1.0, 0.75), (1.0, 1.0), (0.75, 1.0), (0.5, 1.0), (0.25, 1.0)]
ID_USER = "ledger"
ID_TOPICS = ["lives in", "works at", "likes", "is allergic to", "plays", "studies", "owns", "visited", "speaks"]
ID_OBJECTS = ["Lisbon", "Porto", "Berlin", "a bakery", "jazz", "chess", "peanuts", "Japanese", "the violin", "a dog"]


def identifier_facts(n: int = 300) -> list[str]:
    """Deterministic: topic and object cycle at coprime periods, so every pair recurs with many numbers."""
    return [f"User {ID_TOPICS[i % 9]} {ID_OBJECTS[i % 10]} (note {i})" for i in range(n)]


def identifier_queries(facts: list[str]) -> list[tuple[str, int]]:
    plain = [(f"note {i}", i) for i in range(0, len(facts), 5)]
    mixed = [(f"{facts[i].removeprefix('User ').split(' (')[0]} note {i}", i) for i in range(1, len(facts), 10)]
    return plain + mixed


# Words that carry no topic: pronouns, auxiliaries, question words, and "user" (in every statement).
STOP = frozenset(
    (
        "a",
        "an",
        "the",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "am",
        "do",
        "does",
        "did",
        "of",
        "to",
        "in",
        "on",
        "at",
        "for",
        "and",
        "or",
        "with",
        "by",
        "as",
        "it",
        "its",
        "this",
        "that",
        "they",
        "them",
        "their",
        "what",
        "which",
        "who",
        "whom",
        "how",
        "where",
        "when",
        "why",
        "any",
        "i",
        "should",
        "know",
        "about",
        "would",
        "could",
        "can",
        "have",
        "has",
        "there",
        "user",
        "s",
        "into",
        "up",
        "out",
        "all",
    )
)
_WORD = re.compile(r"[\w-]+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class Fact:
    id: str
    statement: str
    keyword: str
    questions: list[str]


def stem(word: str) -> str:
    word = word.casefold().removesuffix("'s")
    for suffix in ("ing", "ed", "es", "s", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def content(text: str) -> set[str]:
    return {stem(w) for w in _WORD.findall(text.replace("'s", "")) if w.casefold() not in STOP}


def load(path: Path = DATA) -> list[Fact]:
    facts = [Fact(**json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for fact in facts:
        for question in fact.questions:
            shared = content(question) & content(fact.statement)
            if shared:
                raise SystemExit(f"{path}: {question!r} shares {sorted(shared)} with {fact.statement!r}")
    return facts


async def measure(embedder: Embedder, facts: list[Fact], weights: list[tuple[float, float]]) -> list[dict[str, Any]]:
    """hit@1 / hit@5 on the questions and on the keyword queries, for each (vector, text) weight."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        async with Memory(Path(tmp) / "paraphrase.db", embedder=embedder) as mem:
            made = await mem.add_knowledge_many(USER, [f.statement for f in facts], actor="benchmark")
            ids = {f.id: k.id for f, k in zip(facts, made, strict=True)}
            numbered = identifier_facts()
            ledger = await mem.add_knowledge_many(ID_USER, numbered, actor="benchmark")
            for i, k in enumerate(ledger):
                ids[f"note:{i}"] = k.id
            for vector_weight, text_weight in weights:
                mem.config.vector_weight, mem.config.text_weight = vector_weight, text_weight
                row: dict[str, Any] = {"vector_weight": vector_weight, "text_weight": text_weight}
                for label, user, queries in (
                    ("questions", USER, [(q, f.id) for f in facts for q in f.questions]),
                    ("keywords", USER, [(f.keyword, f.id) for f in facts]),
                    ("identifiers", ID_USER, [(q, f"note:{i}") for q, i in identifier_queries(numbered)]),
                ):
                    hit1 = hit5 = 0
                    misses = []
                    for query, fid in queries:
                        ranked = [i.knowledge.id for i in (await mem.retrieve(query, user_id=user, top_k=5)).items]
                        hit1 += ranked[:1] == [ids[fid]]
                        hit5 += ids[fid] in ranked
                        if ranked[:1] != [ids[fid]]:
                            misses.append(query)
                    n = len(queries)
                    row[label] = {"n": n, "hit@1": round(hit1 / n, 3), "hit@5": round(hit5 / n, 3)}
                    if label == "questions":
                        row["missed_at_1"] = misses
                out.append(row)
    return out


async def measure_floors(embedder: Embedder, facts: list[Fact], floors: list[float | None]) -> list[dict[str, Any]]:
    """For each relevance floor (`MemoryConfig.relevance_floor`): hit@5 on the paraphrase questions
    and on the keywords, and the share of unrelated questions answered with nothing. A floor is
    worth setting only where the first two stay as they are and the third rises."""
    unrelated = [q for q in UNRELATED.read_text(encoding="utf-8").splitlines() if q.strip()]
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        async with Memory(Path(tmp) / "floors.db", embedder=embedder) as mem:
            made = await mem.add_knowledge_many(USER, [f.statement for f in facts], actor="benchmark")
            ids = {f.id: k.id for f, k in zip(facts, made, strict=True)}
            for floor in floors:
                mem.config.relevance_floor = floor
                row: dict[str, Any] = {"relevance_floor": floor}
                for label, queries in (
                    ("questions", [(q, f.id) for f in facts for q in f.questions]),
                    ("keywords", [(f.keyword, f.id) for f in facts]),
                ):
                    hits = 0
                    for query, fid in queries:
                        ranked = [i.knowledge.id for i in (await mem.retrieve(query, user_id=USER, top_k=5)).items]
                        hits += ids[fid] in ranked
                    row[label] = {"n": len(queries), "hit@5": round(hits / len(queries), 3)}
                empty = [q for q in unrelated if not (await mem.retrieve(q, user_id=USER, top_k=5)).items]
                row["unrelated"] = {"n": len(unrelated), "answered_empty": round(len(empty) / len(unrelated), 3)}
                out.append(row)
            mem.config.relevance_floor = None
    return out


async def query_embed_us(embedder: Embedder, facts: list[Fact], calls: int = 2000) -> dict[str, float]:
    questions = [q for f in facts for q in f.questions]
    await embedder.embed(questions[:1])  # load once
    times = []
    for i in range(calls):
        start = time.perf_counter()
        await embedder.embed([questions[i % len(questions)]])
        times.append((time.perf_counter() - start) * 1e6)
    times.sort()
    return {"median_us": round(statistics.median(times), 1), "p95_us": round(times[int(0.95 * len(times))], 1)}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-grid", action="store_true", help="Only the configured weights.")
    parser.add_argument("--no-save", action="store_true", help="Print only; do not write results/.")
    args = parser.parse_args()
    facts = load()
    config = MemoryConfig()
    configured = (config.vector_weight, config.text_weight)
    weights = [configured] + ([w for w in GRID if w != configured] if not args.no_grid else [])
    report: dict[str, Any] = {
        "benchmark": "paraphrase",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load": os.getloadavg()},
        "facts": len(facts),
        "questions": sum(len(f.questions) for f in facts),
        "configured_weights": {"vector": configured[0], "text": configured[1]},
        "embedders": {},
    }
    for name, embedder in (("hashing", HashingEmbedder()), ("wordllama", WordLlamaEmbedder())):
        report["embedders"][name] = {
            "query_embedding": await query_embed_us(embedder, facts),
            "fusion": await measure(embedder, facts, weights),
            "relevance_floor": await measure_floors(embedder, facts, FLOORS),
        }
        for row in report["embedders"][name]["relevance_floor"]:
            print(
                f"{name:9} floor {row['relevance_floor']!s:>4}: paraphrase hit@5 {row['questions']['hit@5']:.3f}, "
                f"keyword hit@5 {row['keywords']['hit@5']:.3f}, unrelated answered empty "
                f"{row['unrelated']['answered_empty']:.3f}",
                file=sys.stderr,
            )
    print(json.dumps(report, indent=2, ensure_ascii=False))
    if not args.no_save:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / f"paraphrase-{datetime.now(UTC).date()}.json").write_text(
            json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )


if __name__ == "__main__":
    asyncio.run(main())

"""Retrieval latency at scale, bulk build rate and approve latency (issue 2's benchmark).

    uv run python benchmarks/retrieval.py                      # the full run: 100,000 + 20,000 facts
    uv run python benchmarks/retrieval.py --facts 5000 --users 50 --large-facts 2000 --superseded 200
    uv run python benchmarks/retrieval.py --start-pgserver     # the same on a throwaway PostgreSQL
    uv run python benchmarks/retrieval.py --db postgresql://bench@localhost/memdesk_bench   # yours

Either backend: by default a SQLite file in a temporary directory; `--db PATH` keeps the file
(PATH must not exist yet); `--db postgresql://...` builds in that database, which must be EMPTY
(no memdesk rows: the benchmark's figures would mean nothing on top of other data, and it never
deletes anything); `--start-pgserver` starts a PostgreSQL 16 with pgvector from the `pgserver`
wheel (a dev dependency) in a temporary directory, builds there, and removes it at the end.

Builds a store of `--facts` active facts spread over `--users` ordinary
users plus one large user with `--large-facts` facts of which `--superseded` were corrected
(each correction leaves a superseded version behind), all embedded with the default embedder
(WordLlama; `MEMDESK_EMBEDDER=hashing` for the lexical HashingEmbedder). Then it times `retrieve`
for ordinary users and for the large user, plain and with `at_time` / `known_at`, and `approve` on
candidates queued in the full store. Every result list
is checked to hold exactly min(top_k, matching facts) items, where "matching" is counted
independently with plain SQL over the fact table (the same SQL on both backends). Prints JSON and writes it to
benchmarks/results/retrieval-<date>.json (use --no-save to skip).

After the build the store is settled (`Store.settle()`: VACUUM ANALYZE on PostgreSQL, as its
documentation asks after populating a database and as `memdesk migrate` does; nothing on SQLite);
`--no-settle` times it as the build left it.

The clock is a fake one that advances one second per engine call, so belief times (`known_at`)
are spread over the build and a `known_at` in the middle of the corrections is meaningful.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from engine import Memory, NewFact
from engine.errors import DuplicateFactError
from engine.storage import is_postgres_url, masked

RESULTS = Path(__file__).parent / "results"
T0 = datetime(2024, 1, 1, tzinfo=UTC)
LARGE_USER = "large-user"

TOPICS = ["lives in", "works at", "likes", "is allergic to", "plays", "studies", "owns", "visited", "speaks"]
OBJECTS = [
    "Lisbon",
    "Porto",
    "Berlin",
    "Oslo",
    "Kyoto",
    "Quito",
    "a bakery",
    "a hospital",
    "jazz",
    "chess",
    "tennis",
    "peanuts",
    "shellfish",
    "Portuguese",
    "Japanese",
    "a red bicycle",
    "a sailing boat",
    "the violin",
    "astronomy",
    "medieval history",
    "a cat named Miso",
    "a dog named Rex",
    "Iceland",
    "Patagonia",
]
# Questions an agent would ask, sharing words with the facts so that the BM25 arm does real work
# (a common word such as "lives" or "Lisbon" matches thousands of facts across all users).
QUERIES = [
    "where does the user live, Lisbon or Porto?",
    "is the user allergic to peanuts or shellfish",
    "does the user play chess or tennis",
    "which languages: speaks Portuguese or Japanese",
    "works at a hospital or a bakery",
    "owns a dog named Rex",
    "visited Iceland",
    "studies astronomy",
    "likes jazz",
    "plays the violin",
    "medieval history",
    "a red bicycle",
]
# Per backend: SQLite's from issue 2 (large user from issue 11); PostgreSQL's floors from issue 11
# (server on the same 2-core host).
TARGETS = {
    "sqlite": {"ordinary_p95_ms": 10.0, "large_p95_ms": 30.0, "approve_median_ms": 5.0, "build_facts_per_s": 2000.0},
    "postgres": {"ordinary_p95_ms": 10.0, "large_p95_ms": 50.0, "approve_median_ms": 10.0, "build_facts_per_s": 2000.0},
}


class StepClock:
    """One second per call: every engine write gets a distinct, increasing belief time."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def statement(rng: random.Random, who: str, n: int) -> str:
    """Phrased like the extractors phrase facts ("User lives in Lisbon"), so "user" is in every
    statement of every user, and the questions below contain it too: the worst case for BM25."""
    del who
    return f"User {rng.choice(TOPICS)} {rng.choice(OBJECTS)} (note {n})"


def interval(rng: random.Random) -> tuple[datetime | None, datetime | None]:
    """A third of the facts are open-ended, the rest hold for one to four years since 2015."""
    if rng.random() < 1 / 3:
        return None, None
    start = datetime(2015, 1, 1, tzinfo=UTC) + timedelta(days=rng.randrange(0, 3000))
    return start, start + timedelta(days=rng.randrange(365, 1500))


@dataclass
class Timings:
    samples_ms: list[float]

    def summary(self) -> dict[str, float]:
        ordered = sorted(self.samples_ms)
        return {
            "n": len(ordered),
            "p50_ms": round(statistics.median(ordered), 3),
            "p95_ms": round(ordered[max(0, round(0.95 * len(ordered)) - 1)], 3),
            "max_ms": round(ordered[-1], 3),
        }


async def timed(calls: list[Callable[[], Awaitable[object]]]) -> tuple[Timings, list[object]]:
    samples, results = [], []
    for call in calls:
        t = time.perf_counter()
        results.append(await call())
        samples.append((time.perf_counter() - t) * 1000)
    return Timings(samples), results


async def matching_count(mem: Memory, user: str, at_us: int | None, known_us: int | None) -> int:
    """Facts `retrieve` may return, counted with plain SQL over the fact table (no index, no engine
    code; portable SQL, so the same count on either backend)."""
    sql = "SELECT count(*) FROM knowledge WHERE user_id = ?"
    args: list[object] = [user]
    if known_us is not None:
        sql += " AND created_at <= ? AND (expired_at IS NULL OR expired_at > ?)"
        args += [known_us, known_us]
    elif at_us is not None:  # the valid-time rule: still believed true for its period
        sql += " AND (status = 'active' OR (status = 'superseded' AND end_reason IN ('superseded', 'contradicted')))"
    else:
        sql += " AND status = 'active'"
    if at_us is not None:
        end = "CASE WHEN valid_closed = 1 THEN prior_invalid_at ELSE invalid_at END" if known_us else "invalid_at"
        sql += f" AND (valid_at IS NULL OR valid_at <= ?) AND ({end} IS NULL OR {end} > ?)"
        args += [at_us, at_us]
    return int(await scalar(mem, sql, args))


async def scalar(mem: Memory, sql: str, args: list[object] | tuple[object, ...] = ()) -> Any:
    """The first column of the first row of a read-only query on the benchmark's store."""
    async with mem.store.reading() as tx:
        row = await (await tx.conn.execute(sql, tuple(args))).fetchone()
    assert row is not None
    return row[0]


def us(value: datetime) -> int:
    return int((value - datetime(1970, 1, 1, tzinfo=UTC)) / timedelta(microseconds=1))


async def build(mem: Memory, args: argparse.Namespace, rng: random.Random) -> dict[str, object]:
    per_user, extra = divmod(args.facts, args.users)
    t = time.perf_counter()
    for u in range(args.users):
        who = f"user{u:05d}"
        facts = [NewFact(statement(rng, who, n), *interval(rng)) for n in range(per_user + (u < extra))]
        await mem.add_knowledge_many(who, facts, actor="bench")
    large = [NewFact(statement(rng, LARGE_USER, n), *interval(rng)) for n in range(args.large_facts)]
    added = await mem.add_knowledge_many(LARGE_USER, large, actor="bench")
    bulk_s = time.perf_counter() - t

    # Corrections: each supersedes an active fact of the large user; the chain grows when a new
    # version is picked again, so some facts have many versions.
    t = time.perf_counter()
    # A drawn statement whose claim another active fact already makes ("User plays peanuts (note 143)"
    # and "(note 10000143)": the claim model reads the note as a time tail, not as the value) is
    # refused by the gate (I2), as it would be for a support agent; another is drawn, and the
    # refusals are counted.
    active = [k.id for k in added]
    refused = 0
    n = 0
    while n < args.superseded:
        i = rng.randrange(len(active))
        try:
            new = await mem.correct(
                LARGE_USER,
                active[i],
                statement(rng, LARGE_USER, 10_000_000 + n + refused),
                actor="bench",
                reason="benchmark",
            )
        except DuplicateFactError:
            refused += 1
            continue
        active[i] = new.id
        n += 1
    correct_s = time.perf_counter() - t
    # What an operator does after a bulk load, and what `memdesk migrate` does: `Store.settle()`
    # (PostgreSQL: VACUUM ANALYZE; SQLite: nothing). Timed apart from the build; --no-settle times
    # the store as the build left it.
    t = time.perf_counter()
    settled = None if args.no_settle else await mem.store.settle()
    settle_s = time.perf_counter() - t
    total = args.facts + args.large_facts + args.superseded
    return {
        "settled": settled,
        "corrections_refused_as_duplicates": refused,
        "settle_seconds": round(settle_s, 2),
        "facts_total": total,
        "bulk_facts": args.facts + args.large_facts,
        "bulk_facts_per_s": round((args.facts + args.large_facts) / bulk_s, 1),
        "corrections": args.superseded,
        "corrections_per_s": round(args.superseded / correct_s, 1) if args.superseded else None,
        "build_seconds": round(bulk_s + correct_s, 2),
        "build_facts_per_s": round(total / (bulk_s + correct_s), 1),
    }


@asynccontextmanager
async def bench_target(args: argparse.Namespace) -> AsyncIterator[str]:
    """Where the benchmark builds its store: a throwaway pgserver, the --db given, or a file in a
    temporary directory."""
    with tempfile.TemporaryDirectory() as tmp:
        if args.start_pgserver:
            url, stop = await start_pgserver(Path(tmp) / "pg")
            try:
                yield url
            finally:
                stop()
        elif args.db:
            yield args.db
        else:
            yield str(Path(tmp) / "retrieval.db")


async def start_pgserver(where: Path) -> tuple[str, Callable[[], None]]:
    """A PostgreSQL 16 with pgvector from the pgserver wheel, data in `where` (deleted when
    stopped), and an empty database `memdesk_bench` with the vector extension; (its URL, stop)."""
    import warnings

    with warnings.catch_warnings():  # platformdirs: "XDG_RUNTIME_DIR is not set"
        warnings.simplefilter("ignore")
        import pgserver  # type: ignore[import-untyped]
    import asyncpg

    where.mkdir(parents=True)
    server = pgserver.get_server(where, cleanup_mode="delete")
    admin = server.get_uri()
    parts = urlsplit(admin)
    url = urlunsplit((parts.scheme, parts.netloc, "/memdesk_bench", parts.query, parts.fragment))
    conn = await asyncpg.connect(admin)
    try:
        await conn.execute("CREATE DATABASE memdesk_bench")
    finally:
        await conn.close()
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    finally:
        await conn.close()
    return url, server.cleanup


def refuse_unusable(target: str) -> None:
    """A --db path must not exist; a --db URL must hold no memdesk rows (checked after opening)."""
    if not is_postgres_url(target) and Path(target).exists():
        raise SystemExit(f"{target} exists: --db PATH builds a new store, give a path that does not exist")


async def store_size_mb(mem: Memory, target: str) -> float:
    if mem.store.backend == "postgres":
        return round(int(await scalar(mem, "SELECT pg_database_size(current_database())")) / 1e6, 1)
    return round(
        sum(Path(f"{target}{suffix}").stat().st_size for suffix in ("", "-wal") if Path(f"{target}{suffix}").exists())
        / 1e6,
        1,
    )


async def server_versions(mem: Memory) -> dict[str, object]:
    if mem.store.backend == "postgres":
        return {
            "postgres": await scalar(mem, "SELECT current_setting('server_version')"),
            "pgvector": await scalar(mem, "SELECT extversion FROM pg_extension WHERE extname = 'vector'"),
        }
    return {"sqlite": await scalar(mem, "SELECT sqlite_version()")}


async def run(args: argparse.Namespace) -> dict[str, object]:
    rng = random.Random(args.seed)
    clock = StepClock()
    async with bench_target(args) as target:
        refuse_unusable(target)
        async with Memory(target, clock=clock) as mem:
            if not await mem.store.is_empty():
                raise SystemExit(
                    f"{masked(target)} already holds memdesk rows: the benchmark needs an EMPTY database"
                    " (create one, e.g. `createdb memdesk_bench`, or use --start-pgserver)"
                )
            backend = mem.store.backend
            built = await build(mem, args, rng)
            built["db_file_mb" if backend == "sqlite" else "db_size_mb"] = await store_size_mb(mem, target)
            versions = await server_versions(mem)
            build_end = clock.now
            mid_corrections = build_end - timedelta(seconds=max(1, args.superseded // 2))
            at_time = datetime(2019, 6, 1, tzinfo=UTC)
            shapes: dict[str, dict[str, datetime | None]] = {
                "plain": {"at_time": None, "known_at": None},
                "at_time": {"at_time": at_time, "known_at": None},
                "known_at": {"at_time": None, "known_at": mid_corrections},
                "at_time+known_at": {"at_time": at_time, "known_at": mid_corrections},
            }
            ordinary = [f"user{rng.randrange(args.users):05d}" for _ in range(args.queries)]
            report: dict[str, object] = {}
            short: list[str] = []
            checked = 0
            for group, users in (("ordinary", ordinary), ("large", [LARGE_USER] * args.queries)):
                for shape, when in shapes.items():
                    queries = [(u, rng.choice(QUERIES)) for u in users]
                    calls = [
                        (lambda u=u, q=q, w=when: mem.retrieve(q, user_id=u, top_k=args.top_k, **w))  # type: ignore[misc]
                        for u, q in queries
                    ]
                    await calls[0]()  # warm the page cache for this shape
                    timing, results = await timed(calls)
                    report[f"{group}/{shape}"] = timing.summary()
                    expected_by_user: dict[str, int] = {}
                    for (u, q), res in zip(queries, results, strict=True):
                        if u not in expected_by_user:
                            expected_by_user[u] = min(
                                args.top_k,
                                await matching_count(
                                    mem,
                                    u,
                                    us(when["at_time"]) if when["at_time"] else None,
                                    us(when["known_at"]) if when["known_at"] else None,
                                ),
                            )
                        got = len(res.items)  # type: ignore[attr-defined]
                        checked += 1
                        if got != expected_by_user[u]:
                            short.append(f"{group}/{shape} {u} {q!r}: {got} != {expected_by_user[u]}")

            # approve latency on candidates queued in the full store
            cids = [
                await mem.queue_candidate(f"user{rng.randrange(args.users):05d}", f"approve bench fact {n}")
                for n in range(args.approvals)
            ]
            approve_timing, _ = await timed([(lambda c=c: mem.review.approve(c, reviewer="bench")) for c in cids])
    targets = TARGETS[backend]
    return {
        "benchmark": "retrieval",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "cores": os.cpu_count(),
            "load_avg_at_end": [round(x, 2) for x in os.getloadavg()],
            "python": f"{platform.python_implementation()} {platform.python_version()}",
            "backend": backend,
            **versions,
            "platform": platform.platform(),
        },
        "params": {k: masked(v) if k == "db" and v else v for k, v in vars(args).items() if k != "no_save"},
        "build": built,
        "retrieve": report,
        "approve": Timings(approve_timing.samples_ms).summary(),
        "result_size_check": {"checked": checked, "wrong": len(short), "examples": short[:5]},
        "targets": targets,
        "targets_met": {
            "ordinary_p95_ms": max(v["p95_ms"] for k, v in report.items() if k.startswith("ordinary/"))  # type: ignore[index]
            <= targets["ordinary_p95_ms"],
            "large_p95_ms": max(v["p95_ms"] for k, v in report.items() if k.startswith("large/"))  # type: ignore[index]
            <= targets["large_p95_ms"],
            "approve_median_ms": approve_timing.summary()["p50_ms"] <= targets["approve_median_ms"],
            "build_facts_per_s": float(built["build_facts_per_s"]) >= targets["build_facts_per_s"],  # type: ignore[arg-type]
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--facts", type=int, default=100_000, help="active facts of the ordinary users")
    parser.add_argument("--users", type=int, default=1_000, help="ordinary users")
    parser.add_argument("--large-facts", type=int, default=20_000, help="facts of the one large user")
    parser.add_argument("--superseded", type=int, default=2_000, help="corrections of the large user's facts")
    parser.add_argument("--queries", type=int, default=200, help="retrieve calls per user group and query shape")
    parser.add_argument("--approvals", type=int, default=200)
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--db",
        help="a path that does not exist yet, or the postgresql:// URL of an EMPTY database"
        " (default: a SQLite file in a temporary directory)",
    )
    parser.add_argument(
        "--start-pgserver",
        action="store_true",
        help="build in a throwaway PostgreSQL (pgserver wheel) started in a temporary directory",
    )
    parser.add_argument("--no-save", action="store_true", help="print only; do not write benchmarks/results/")
    parser.add_argument(
        "--no-settle",
        action="store_true",
        help="time the store as the build left it (no Store.settle(): no VACUUM ANALYZE)",
    )
    args = parser.parse_args()
    if args.db and args.start_pgserver:
        parser.error("--db and --start-pgserver exclude each other")
    result = asyncio.run(run(args))
    text = json.dumps(result, indent=2)
    print(text)
    if not args.no_save:
        RESULTS.mkdir(exist_ok=True)
        backend = str(result["machine"]["backend"])  # type: ignore[index]
        suffix = "" if backend == "sqlite" else f"-{backend}"
        out = RESULTS / f"retrieval{suffix}-{datetime.now(UTC).date().isoformat()}.json"
        out.write_text(text + "\n")
        print(f"written to {out}")


if __name__ == "__main__":
    main()

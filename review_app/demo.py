"""Building the demo database behind `memdesk demo`.

A demo queue must look like a real one a week into production, not like a first day: most of a
user's history already reviewed, and the newest conversations waiting, among them updates that
would supersede an approved fact. An empty knowledge base cannot produce that: with nothing
approved, every extraction takes the cold-start path and nothing can be predicted or superseded.

So the bundled conversations are replayed in time order, session by session (a session is one
user's run of exchanges without a gap longer than the engine's episode gap). The first half of
each user's sessions is the *history*: ingested, processed with the offline extractor, and its
candidates decided at once by a seeded curator, "demo-curator", through the normal review API (so
every decision is audited exactly like a person's). Later sessions then predict from those facts,
and what the prediction misses — a move, a new job, a retracted allergy — arrives as pending
update candidates that name the fact they would supersede. The rest of the sessions are processed
and left pending for whoever opens the workstation.

Nothing here imports the workstation: `memdesk demo --no-open` builds the database only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from engine import Memory, MemoryConfig
from engine.data import load_exchanges

CURATOR = "demo-curator"
# An extracted candidate whose quoted evidence is not in the user's messages: the seeded curator
# rejects it (which also writes a tombstone), as a careful reviewer would.
UNSUPPORTED_REASON = "evidence not found in the user's messages"

Exchange = tuple[str, str, str | None, datetime]
Progress = Callable[[int, int], None]


@dataclass(slots=True)
class Session:
    user_id: str
    exchanges: list[Exchange] = field(default_factory=list)

    @property
    def start(self) -> datetime:
        return self.exchanges[0][3]


def sessions(exchanges: list[Exchange], config: MemoryConfig) -> list[Session]:
    """Each user's exchanges cut at the episode gap, all sessions in time order (ties: file order)."""
    open_by_user: dict[str, Session] = {}
    out: list[Session] = []
    for exchange in sorted(exchanges, key=lambda e: e[3]):
        user_id, at = exchange[0], exchange[3]
        current = open_by_user.get(user_id)
        if current is None or at - current.exchanges[-1][3] > config.episode_gap:
            current = Session(user_id)
            open_by_user[user_id] = current
            out.append(current)
        current.exchanges.append(exchange)
    return out


def history_split(all_sessions: list[Session]) -> set[int]:
    """Indices (into `all_sessions`) of the history: the first half of each user's sessions,
    rounded down, so every user with two sessions or more has some of both."""
    per_user: dict[str, list[int]] = {}
    for i, s in enumerate(all_sessions):
        per_user.setdefault(s.user_id, []).append(i)
    return {i for indices in per_user.values() for i in indices[: len(indices) // 2]}


async def build_demo(db_path: str, progress: Progress | None = None) -> dict[str, int]:
    """Build the demo database at `db_path` (which should not exist yet) and return what it holds:
    users, exchanges, sessions, approved and rejected (by the seeded curator), pending,
    pending_updates (pending candidates that would supersede a fact), facts, superseded_facts and
    tombstones. `progress(done, total)` counts exchanges as their session is processed."""
    mem = Memory(db_path)
    all_sessions = sessions(load_exchanges(), mem.config)
    history = history_split(all_sessions)
    total = sum(len(s.exchanges) for s in all_sessions)
    done = 0
    approved = rejected = 0
    async with mem:
        for i, session in enumerate(all_sessions):
            await mem.add_exchanges(session.exchanges)
            await mem.process(session.user_id)
            if i in history:
                a, r = await _curate(mem, session.user_id)
                approved += a
                rejected += r
            done += len(session.exchanges)
            if progress is not None:
                progress(done, total)
        stats = await mem.stats()
        users = await mem.users()
        pending = await mem.review.pending(limit=10_000)
        tombstones = await mem.tombstones(None)
    return {
        "users": len(users),
        "exchanges": total,
        "sessions": len(all_sessions),
        "approved": approved,
        "rejected": rejected,
        "pending": len(pending),
        "pending_updates": sum(1 for c in pending if c.supersedes_id is not None),
        "facts": stats.knowledge.active,
        "superseded_facts": stats.knowledge.superseded,
        "tombstones": len(tombstones),
    }


async def _curate(mem: Memory, user_id: str) -> tuple[int, int]:
    """Decide every pending candidate of the user as the seeded curator: confirm a supersession,
    reject a candidate whose evidence the messages do not hold, approve the rest."""
    approved = rejected = 0
    for listed in await mem.review.pending(user_id, limit=10_000):
        cand = await mem.review.get(listed.id)  # re-read: deciding an earlier link re-points a chain
        if cand.unsupported:
            await mem.review.reject(cand.id, reviewer=CURATOR, reason=UNSUPPORTED_REASON)
            rejected += 1
        elif cand.supersedes_id is not None or cand.supersedes_candidate_id is not None:
            await mem.review.confirm_supersession(cand.id, reviewer=CURATOR)
            approved += 1
        elif cand.kind in ("update", "contradiction"):
            await mem.review.keep_both(cand.id, reviewer=CURATOR)
            approved += 1
        else:
            await mem.review.approve(cand.id, reviewer=CURATOR)
            approved += 1
    return approved, rejected

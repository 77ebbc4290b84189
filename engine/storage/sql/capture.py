"""`CaptureOps`: what comes in and how it is processed: `messages`, `episodes` (with the leases a
worker holds on them), `extraction_runs`, and `discarded` (what a gate dropped, kept so a curator
can queue it anyway). engine/extraction/pipeline.py writes them (engine/ingest.py only plans what
it captures); captured messages are audited as entity `message`, episodes, runs and discarded
statements as `episode`, `extraction_run` and `discarded`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ...errors import NotFoundError
from ...models import (
    Discarded,
    Episode,
    Message,
)
from ...timeutil import from_us
from .core import TxCore, fetchall, returned_id
from .records import (
    DISCARDED_COLS,
    discarded_from_row,
)

_DISCARDED_INSERT_FIELDS = (
    "user_id",
    "episode_id",
    "run_id",
    "statement",
    "evidence",
    "gate",
    "kind",
    "confidence",
    "valid_at",
    "invalid_at",
    "matched_entity",
    "matched_id",
    "matched_statement",
    "created_at",
)


_RUN_FIELDS: dict[str, Any] = {
    "id": None,
    "episode_id": None,
    "user_id": None,
    "extractor": None,
    "model": None,
    "prompt_version": None,
    "mode": None,
    "prediction": "",
    "existing_ids": "[]",
    "covered": "[]",
    "claims": 0,
    "predicted": 0,
    "below_confidence": 0,
    "invalid": 0,
    "tombstoned": 0,
    "duplicates": 0,
    "supersedes_dropped": 0,
    "unsupported": 0,
    "queued": 0,
    "dates_dropped": 0,
    "started_at": None,
    "finished_at": None,
    "duration_ms": None,
    "error": None,
    "calibration": None,
}


class CaptureOps(TxCore, Protocol):
    """Messages, episodes, leases, extraction runs, discarded statements."""

    async def insert_messages(self, rows: Sequence[tuple[str, str, str, int]]) -> list[int]:
        """(user_id, role, content, at) rows, in order; returns their ids."""
        ids = []
        for row in rows:
            cur = await self.conn.execute(
                "INSERT INTO messages(user_id, role, content, at) VALUES (?, ?, ?, ?) RETURNING id", row
            )
            ids.append(await returned_id(cur))
        return ids

    async def unprocessed_count(self, user_id: str) -> int:
        row = await (
            await self.conn.execute(
                "SELECT count(*) FROM messages WHERE user_id = ? AND episode_id IS NULL", (user_id,)
            )
        ).fetchone()
        return int(row[0])

    async def users_with_work(self) -> list[str]:
        rows = await (
            await self.conn.execute(
                "SELECT DISTINCT user_id FROM messages WHERE episode_id IS NULL"
                " UNION SELECT DISTINCT user_id FROM episodes WHERE status IN ('open', 'failed') ORDER BY 1"
            )
        ).fetchall()
        return [r[0] for r in rows]

    async def unprocessed_messages(self, user_id: str) -> list[tuple[int, str, str, int]]:
        """Messages not yet in an episode, by time then arrival: tracked per message, so a message
        back-filled with an older time or sharing a second with a processed one is still picked up."""
        rows = await (
            await self.conn.execute(
                "SELECT id, role, content, at FROM messages WHERE user_id = ? AND episode_id IS NULL ORDER BY at, id",
                (user_id,),
            )
        ).fetchall()
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    async def create_episodes(
        self,
        user_id: str,
        episodes: Sequence[tuple[str, str, Sequence[int], int, int]],
        created_at: int,
    ) -> list[int] | None:
        """Create (title, narrative, message ids, start_at, end_at) episodes of one user and move their
        messages into them, one executemany per table; ids from `id_source`. None when another process
        took any of the messages first (the caller rolls back)."""
        if not episodes:
            return []
        source = self.id_source("episodes")
        await source.reserve(len(episodes))
        ids = [source.take() for _ in episodes]
        await self.conn.executemany(
            "INSERT INTO episodes(id, user_id, title, narrative, start_at, end_at, status, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, 'open', ?)",
            [
                (eid, user_id, title, narrative, start, end, created_at)
                for eid, (title, narrative, _, start, end) in zip(ids, episodes, strict=True)
            ],
        )
        cur = await self.conn.executemany(
            "UPDATE messages SET episode_id = ? WHERE id = ? AND episode_id IS NULL AND user_id = ?",
            [
                (eid, mid, user_id)
                for eid, (_, _, message_ids, _, _) in zip(ids, episodes, strict=True)
                for mid in message_ids
            ],
        )
        return ids if cur.rowcount == sum(len(e[2]) for e in episodes) else None

    async def claim_episodes(self, user_id: str, token: str, now: int, until: int) -> list[int]:
        """Lease every open or failed episode of the user not leased by someone else."""
        rows = await (
            await self.conn.execute(
                "SELECT id FROM episodes WHERE user_id = ? AND status IN ('open', 'failed')"
                " AND (claimed_until IS NULL OR claimed_until <= ? OR claimed_by = ?) ORDER BY start_at, id",
                (user_id, now, token),
            )
        ).fetchall()
        ids = [r[0] for r in rows]
        if ids:
            await self.conn.execute(
                f"UPDATE episodes SET claimed_by = ?, claimed_until = ? WHERE id IN ({','.join('?' * len(ids))})",
                (token, until, *ids),
            )
        return ids

    async def leases_elsewhere(self, user_id: str, token: str, now: int) -> tuple[int, int | None]:
        """(episodes with work that another worker's unexpired lease holds, when the last lease ends)."""
        row = await (
            await self.conn.execute(
                "SELECT count(*), max(claimed_until) FROM episodes WHERE user_id = ? AND status IN ('open', 'failed')"
                " AND claimed_until > ? AND claimed_by != ?",
                (user_id, now, token),
            )
        ).fetchone()
        return int(row[0]), (int(row[1]) if row[1] is not None else None)

    async def renew_leases(self, token: str, until: int) -> int:
        """Extend every lease this worker still holds (its episodes not yet finished)."""
        cur = await self.conn.execute(
            "UPDATE episodes SET claimed_until = ? WHERE claimed_by = ? AND status IN ('open', 'failed')",
            (until, token),
        )
        return cur.rowcount

    async def insert_runs_many(self, runs: Sequence[dict[str, Any]]) -> None:
        """Finished extraction runs with the ids the caller handed out (`id_source`, under the write
        lock), in one executemany; a field a run lacks takes the column's default."""
        if runs:
            names = list(_RUN_FIELDS)
            await self.conn.executemany(
                f"INSERT INTO extraction_runs({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                [tuple(run.get(n, default) for n, default in _RUN_FIELDS.items()) for run in runs],
            )

    async def held_episodes(self, episode_ids: Sequence[int], token: str) -> set[int]:
        """Which of these episodes this worker still holds the lease on (inside a write transaction,
        nobody can take one away before it commits)."""
        if not episode_ids:
            return set()
        rows = await fetchall(
            self.conn,
            f"SELECT id FROM episodes WHERE claimed_by = ? AND id IN ({','.join('?' * len(episode_ids))})",
            (token, *episode_ids),
        )
        return {int(r[0]) for r in rows}

    async def finish_episodes_many(self, rows: Sequence[tuple[str, str | None, int]]) -> None:
        """(status, error, episode id): processed or failed, attempt counted, lease released."""
        if rows:
            await self.conn.executemany(
                "UPDATE episodes SET status = ?, error = ?, attempts = attempts + 1, claimed_by = NULL,"
                " claimed_until = NULL WHERE id = ?",
                rows,
            )

    async def user_episode_ids(self, user_id: str, limit: int) -> list[int]:
        """The ids of the user's newest `limit` episodes, oldest first (the Messages view)."""
        rows = await (
            await self.conn.execute(
                "SELECT id FROM episodes WHERE user_id = ? ORDER BY start_at DESC, id DESC LIMIT ?",
                (user_id, int(limit)),
            )
        ).fetchall()
        return [r[0] for r in reversed(list(rows))]

    async def episode_with_messages(self, episode_id: int) -> Episode | None:
        return (await self.episodes_with_messages([episode_id])).get(episode_id)

    async def episodes_with_messages(self, episode_ids: Sequence[int]) -> dict[int, Episode]:
        """Episodes with their messages in conversation order, in two queries however many."""
        if not episode_ids:
            return {}
        marks = ",".join("?" * len(episode_ids))
        rows = await (
            await self.conn.execute(
                "SELECT id, user_id, title, narrative, start_at, end_at, status, error FROM episodes"
                f" WHERE id IN ({marks})",
                list(episode_ids),
            )
        ).fetchall()
        out = {
            row[0]: Episode(
                id=row[0],
                user_id=row[1],
                title=row[2],
                narrative=row[3],
                messages=[],
                start_at=from_us(row[4]),
                end_at=from_us(row[5]),
                status=row[6],
                error=row[7],
            )
            for row in rows
        }
        msgs = await (
            await self.conn.execute(
                f"SELECT id, user_id, role, content, at, episode_id FROM messages WHERE episode_id IN ({marks})"
                " ORDER BY episode_id, at, id",
                list(episode_ids),
            )
        ).fetchall()
        for m in msgs:
            out[m[5]].messages.append(Message(role=m[2], content=m[3], at=from_us(m[4]), id=m[0], user_id=m[1]))
        return out

    async def user_messages(self, user_id: str) -> list[tuple[int, str, str, int]]:
        """(id, role, content, at) of every message of the user, in conversation order (export)."""
        rows = await (
            await self.conn.execute(
                "SELECT id, role, content, at FROM messages WHERE user_id = ? ORDER BY at, id", (user_id,)
            )
        ).fetchall()
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    async def insert_discarded_many(self, rows: Sequence[dict[str, Any]]) -> None:
        """What the gates of one run dropped (dicts keyed by the column names), in one executemany."""
        if rows:
            await self.conn.executemany(
                f"INSERT INTO discarded({', '.join(_DISCARDED_INSERT_FIELDS)})"
                f" VALUES ({', '.join('?' * len(_DISCARDED_INSERT_FIELDS))})",
                [tuple(row.get(f, "" if f == "evidence" else None) for f in _DISCARDED_INSERT_FIELDS) for row in rows],
            )

    async def list_discarded(self, user_id: str | None, *, limit: int, offset: int = 0) -> list[Discarded]:
        """Newest first: a curator looks at what was dropped lately."""
        where, args = ("WHERE user_id = ?", [user_id]) if user_id is not None else ("", [])
        rows = await (
            await self.conn.execute(
                f"SELECT {DISCARDED_COLS} FROM discarded {where} ORDER BY id DESC LIMIT ? OFFSET ?",
                (*args, int(limit), int(offset)),
            )
        ).fetchall()
        return [discarded_from_row(r) for r in rows]

    async def get_discarded(self, discarded_id: int) -> Discarded:
        row = await (
            await self.conn.execute(f"SELECT {DISCARDED_COLS} FROM discarded WHERE id = ?", (discarded_id,))
        ).fetchone()
        if row is None:
            raise NotFoundError(f"no discarded statement {discarded_id}")
        return discarded_from_row(row)

    async def mark_discarded_queued(self, discarded_id: int, candidate_id: int, by: str, at: int) -> bool:
        """False when it was queued already (the guard that makes "queue anyway" happen once)."""
        cur = await self.conn.execute(
            "UPDATE discarded SET queued_candidate_id = ?, queued_by = ?, queued_at = ?"
            " WHERE id = ? AND queued_candidate_id IS NULL",
            (candidate_id, by, at, discarded_id),
        )
        return cur.rowcount == 1

"""`PolicyOps`: the statements behind engine/policies.py, as methods of the transaction.

A policy is one `meta` row (`policy:NAME` -> its settings as JSON), so a copy (`memdesk migrate`)
and an export carry it like the rest of the store's settings. What a policy judged is an audit row
on the candidate (action `policy_verdict`, actor `policy:NAME`): append-only, per user (erasure
redacts it with the user's other rows), and read back here beside the human decision on the same
candidate.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol

from .conn import SqlConn
from .core import fetchall
from .records import CANDIDATE_COLS, CANDIDATE_FROM, OVERTURNED, candidate_from_row

POLICY_KEY = "policy:"
"""The meta key prefix of a policy's settings."""

SAMPLED = "policy_sampled"
UNSAMPLED = "policy_unsampled"
"""The audit action of an approval's secret draw (`actor` = the approver: a policy, or a person
since the two-person rule; the strings keep their first name so stored rows still read): whether
the draw sent it to second review. Fail closed: a policy's approval with no `policy_unsampled` row
is in the sample. A `policy_sampled` row by the engine itself (`memdesk`: an agent put under watch,
engine/watch.py) draws any approval made before it into the sample."""

DRAWER = "memdesk"
"""The actor of a draw the engine makes on its own (engine.gate.SYSTEM_ACTOR's value)."""

HASH_MULTIPLIER = 2_654_435_761  # Knuth's multiplicative hash: consecutive ids spread over 2**32
HASH_SPACE = 4_294_967_296
LEGACY_SAMPLE_SQL = f"((c.id * {HASH_MULTIPLIER}) % {HASH_SPACE}) < ?"
"""The id-hash sample of a person's approval made before people's draws were stored (no draw row
at all): the same test as engine.team.sample_point(id) < rate. Every approval since has its draw."""

SAMPLE_SQL = (
    "(EXISTS (SELECT 1 FROM audit_log ps WHERE ps.entity = 'candidate' AND ps.entity_id = c.id"
    f" AND ps.action = '{SAMPLED}' AND ps.at >= c.decided_at AND (ps.actor = c.decided_by OR ps.actor = '{DRAWER}'))"
    " OR (NOT EXISTS (SELECT 1 FROM audit_log ps WHERE ps.entity = 'candidate' AND ps.entity_id = c.id"
    f" AND ps.action IN ('{SAMPLED}', '{UNSAMPLED}') AND ps.actor = c.decided_by AND ps.at >= c.decided_at)"
    f" AND (c.decided_by LIKE 'policy:%' OR {LEGACY_SAMPLE_SQL})))"
)
"""An approval (candidate `c`) is in the second-review sample: a draw made at or after it put it
there (its approver's own secret draw, a scope's alert, an agent's watch); or no draw of its
approver was stored for it, and then a policy's counts as sampled (fail closed) and a person's
made before draws were stored falls back to the id hash. One `?`: the legacy hash's bound."""

POLICY_SAMPLE_SQL = SAMPLE_SQL
"""The old name (a policy's approvals are read by the same test)."""


class PolicyOps(Protocol):
    """Mixed into SqlTx; `conn` is the transaction's connection (see SqlTx)."""

    conn: SqlConn

    async def policy_settings(self) -> list[str]:
        """Every policy's settings (JSON), by name."""
        rows = await (
            await self.conn.execute("SELECT value FROM meta WHERE key LIKE ? ORDER BY key", (POLICY_KEY + "%",))
        ).fetchall()
        return [str(r[0]) for r in rows]

    async def newest_candidate_id(self) -> int:
        row = await (await self.conn.execute("SELECT coalesce(max(id), 0) FROM candidates")).fetchone()
        return int(row[0])

    async def pending_after(self, after_id: int, limit: int) -> list[Any]:
        """Pending candidates with an id above `after_id`, by id: a cursor over the queue that
        deciding does not shift."""
        rows = await (
            await self.conn.execute(
                f"SELECT {CANDIDATE_COLS} FROM {CANDIDATE_FROM} WHERE c.status = 'pending' AND c.id > ?"
                " ORDER BY c.id LIMIT ?",
                (after_id, int(limit)),
            )
        ).fetchall()
        return [candidate_from_row(r) for r in rows]

    async def judged_by(self, actor: str, candidate_ids: list[int]) -> set[int]:
        """Which of these candidates already carry a verdict of `actor`."""
        if not candidate_ids:
            return set()
        marks = ", ".join("?" * len(candidate_ids))
        rows = await (
            await self.conn.execute(
                "SELECT DISTINCT entity_id FROM audit_log WHERE entity = 'candidate' AND action = 'policy_verdict'"
                f" AND actor = ? AND entity_id IN ({marks})",
                (actor, *candidate_ids),
            )
        ).fetchall()
        return {int(r[0]) for r in rows}

    async def verdicts_with_outcomes(self, actor: str) -> list[tuple[str, str, str, str, str | None, str | None]]:
        """(verdict JSON, the candidate's kind, statement, status, decision, decided_by) for every
        candidate `actor` judged, its latest verdict only."""
        rows = await (
            await self.conn.execute(
                "SELECT a.after, c.kind, c.statement, c.status, c.decision, c.decided_by FROM audit_log a"
                " JOIN candidates c ON c.id = a.entity_id"
                " WHERE a.entity = 'candidate' AND a.action = 'policy_verdict' AND a.actor = ?"
                " AND a.id = (SELECT max(b.id) FROM audit_log b WHERE b.entity = 'candidate'"
                " AND b.action = 'policy_verdict' AND b.actor = a.actor AND b.entity_id = a.entity_id)"
                " ORDER BY a.id",
                (actor,),
            )
        ).fetchall()
        return [(str(r[0]), str(r[1]), str(r[2]), str(r[3]), r[4], r[5]) for r in rows]

    async def rule_evidence(self, candidate_ids: Sequence[int]) -> dict[int, tuple[str, int]]:
        """{candidate id: (its rule, the people's decisions on that rule its run calibrated on)}
        for those of `candidate_ids` an extractor run named a rule for (the offline extractor's),
        from the counts the run recorded (`extraction_runs.calibration`)."""
        if not candidate_ids:
            return {}
        rows = await fetchall(
            self.conn,
            "SELECT c.id, c.rule, r.calibration FROM candidates c JOIN extraction_runs r ON r.id = c.run_id"
            f" WHERE c.id IN ({', '.join('?' * len(candidate_ids))}) AND c.rule IS NOT NULL",
            list(candidate_ids),
        )
        out: dict[int, tuple[str, int]] = {}
        for cid, rule, raw in rows:
            counts = json.loads(raw).get(rule, (0, 0)) if raw else (0, 0)
            out[int(cid)] = (str(rule), int(sum(counts)))
        return out

    async def decisions_since(self, actor: str, since_us: int) -> int:
        """How many candidates `actor` decided since `since_us` (a policy's daily allowance)."""
        row = await (
            await self.conn.execute(
                "SELECT count(*) FROM candidates WHERE decided_by = ? AND decided_at >= ?", (actor, since_us)
            )
        ).fetchone()
        return int(row[0])

    async def second_review_outcomes(self, first_reviewer: str) -> tuple[int, int]:
        """(second reviews of `first_reviewer`'s approvals, how many overturned them)."""
        row = await (
            await self.conn.execute(
                "SELECT count(*), coalesce(sum(CASE WHEN verdict = 'overturn' THEN 1 ELSE 0 END), 0)"
                " FROM second_reviews WHERE first_reviewer = ?",
                (first_reviewer,),
            )
        ).fetchone()
        return int(row[0]), int(row[1])

    # -- scopes (engine/policies.py: records per policy, slot or rule, and source) ---------------

    async def scope_shadow_counts(self, actor: str, scope: str | None, since_us: int) -> dict[str, tuple[int, int]]:
        """{scope: (people's decisions on candidates `actor` would approve, how many approved as they
        were)} from its verdicts recorded at or after `since_us` (one scope, or every scope)."""
        extra, args = ("AND a.note = ?", [scope]) if scope is not None else ("AND a.note IS NOT NULL", [])
        rows = await fetchall(
            self.conn,
            "SELECT a.note, count(*), coalesce(sum(CASE WHEN c.status = 'approved' AND c.decision = 'approve'"
            f" AND NOT {OVERTURNED} THEN 1 ELSE 0 END), 0) FROM audit_log a JOIN candidates c ON c.id = a.entity_id"
            " WHERE a.entity = 'candidate' AND a.action = 'policy_verdict' AND a.actor = ? AND a.at >= ?"
            f" {extra} AND c.status != 'pending' AND c.decided_by IS NOT NULL AND c.decided_by NOT LIKE 'policy:%'"
            " GROUP BY a.note",
            [actor, int(since_us), *args],
        )
        return {str(r[0]): (int(r[1]), int(r[2])) for r in rows}

    async def second_review_stamp(self, actor: str) -> tuple[int, int]:
        """(how many second reviews of `actor`'s approvals, the newest one's id): a cheap test of
        whether anything new was second-reviewed."""
        row = await (
            await self.conn.execute(
                "SELECT count(*), coalesce(max(id), 0) FROM second_reviews WHERE first_reviewer = ?", (actor,)
            )
        ).fetchone()
        return int(row[0]), int(row[1])

    async def scope_second_reviews(self, actor: str) -> list[tuple[str, str, int, int, int]]:
        """(scope, verdict, approved at, reviewed at, candidate id) of every second review of
        `actor`'s approvals, by review."""
        rows = await fetchall(
            self.conn,
            "SELECT a.note, s.verdict, a.at, s.decided_at, s.candidate_id FROM second_reviews s"
            " JOIN audit_log a ON a.entity = 'candidate' AND a.entity_id = s.candidate_id"
            f" AND a.action IN ('{SAMPLED}', '{UNSAMPLED}') AND a.actor = s.first_reviewer"
            " AND a.id = (SELECT min(b.id) FROM audit_log b WHERE b.entity = 'candidate'"
            f" AND b.entity_id = s.candidate_id AND b.action IN ('{SAMPLED}', '{UNSAMPLED}')"
            " AND b.actor = s.first_reviewer)"
            " WHERE s.first_reviewer = ? ORDER BY s.decided_at, s.id",
            [actor],
        )
        return [(str(r[0]), str(r[1]), int(r[2]), int(r[3]), int(r[4])) for r in rows]

    async def scope_approvals_since(self, actor: str, scope: str, after_us: int) -> list[int]:
        """Candidates `actor` approved in `scope` after `after_us` that are still its approvals
        with an active fact and that no second reviewer upheld (what a suspension returns)."""
        rows = await fetchall(
            self.conn,
            "SELECT DISTINCT c.id FROM audit_log a JOIN candidates c ON c.id = a.entity_id"
            " JOIN knowledge k ON k.id = c.knowledge_id"
            f" WHERE a.entity = 'candidate' AND a.action IN ('{SAMPLED}', '{UNSAMPLED}') AND a.actor = ?"
            " AND a.note = ? AND a.at > ? AND c.status = 'approved' AND c.decided_by = a.actor"
            " AND k.status = 'active' AND NOT EXISTS (SELECT 1 FROM second_reviews s WHERE s.candidate_id = c.id"
            " AND s.verdict = 'agree') ORDER BY c.id",
            [actor, scope, int(after_us)],
        )
        return [int(r[0]) for r in rows]

    async def policy_scope_events(self) -> list[tuple[str, str, int]]:
        """(action, after JSON, at) of every scope event (suspension, resumption), oldest first."""
        rows = await fetchall(
            self.conn,
            "SELECT action, after, at FROM audit_log WHERE entity = 'policy_scope' ORDER BY id",
            [],
        )
        return [(str(r[0]), str(r[1]), int(r[2])) for r in rows]

    async def policy_sampled(self, candidate_id: int, actor: str, threshold: int = 0) -> bool:
        """Whether `actor`'s approval of this candidate is in the second-review sample (SAMPLE_SQL;
        `threshold` is the legacy id hash's bound, for a person's approval with no stored draw)."""
        rows = await fetchall(
            self.conn,
            f"SELECT 1 FROM candidates c WHERE c.id = ? AND c.decided_by = ? AND {SAMPLE_SQL}",
            [candidate_id, actor, int(threshold)],
        )
        return bool(rows)

    async def unsampled_scope_approvals(self, actor: str, scope: str, limit: int) -> list[tuple[int, str]]:
        """(candidate id, user_id) of `actor`'s newest approvals in `scope` that its draw left out
        of the sample, still active and not second-reviewed: what a scope's alert draws again."""
        rows = await fetchall(
            self.conn,
            "SELECT c.id, c.user_id FROM audit_log a JOIN candidates c ON c.id = a.entity_id"
            " JOIN knowledge k ON k.id = c.knowledge_id"
            f" WHERE a.entity = 'candidate' AND a.action = '{UNSAMPLED}' AND a.actor = ? AND a.note = ?"
            " AND c.status = 'approved' AND c.decided_by = a.actor AND k.status = 'active'"
            " AND NOT EXISTS (SELECT 1 FROM audit_log b WHERE b.entity = 'candidate' AND b.entity_id = c.id"
            f" AND b.action = '{SAMPLED}' AND b.actor = a.actor)"
            " AND NOT EXISTS (SELECT 1 FROM second_reviews s WHERE s.candidate_id = c.id)"
            " ORDER BY a.id DESC LIMIT ?",
            [actor, scope, int(limit)],
        )
        return [(int(r[0]), str(r[1])) for r in rows]

    async def oldest_pending(self) -> tuple[int, int | None]:
        """(pending candidates, when the oldest was queued)."""
        row = await (
            await self.conn.execute("SELECT count(*), min(created_at) FROM candidates WHERE status = 'pending'")
        ).fetchone()
        return int(row[0]), None if row[1] is None else int(row[1])

    async def pending_among(self, candidate_ids: Sequence[int]) -> int:
        """How many of these candidates are pending now."""
        if not candidate_ids:
            return 0
        marks = ", ".join("?" * len(candidate_ids))
        row = await (
            await self.conn.execute(
                f"SELECT count(*) FROM candidates WHERE status = 'pending' AND id IN ({marks})", tuple(candidate_ids)
            )
        ).fetchone()
        return int(row[0])

    # -- the agent watch (engine/watch.py) -----------------------------------------------------------

    async def watch_events(self) -> list[tuple[str, str, int]]:
        """(action, after JSON, at) of every agent-watch event (a watch, a lift), oldest first."""
        rows = await fetchall(
            self.conn,
            "SELECT action, after, at FROM audit_log WHERE entity = 'agent_watch' ORDER BY id",
            [],
        )
        return [(str(r[0]), str(r[1]), int(r[2])) for r in rows]

    async def agent_decided(self, agent: str, since_us: int) -> list[tuple[Any, bool]]:
        """(candidate, overturned on second review) of every proposal of `agent` (a row no
        extraction run made, `created_by` = the agent) that people decided since `since_us`:
        approved or rejected by a person, or approved by anyone and overturned since."""
        rows = await fetchall(
            self.conn,
            f"SELECT {CANDIDATE_COLS}, (SELECT count(*) FROM second_reviews s WHERE s.candidate_id = c.id"
            " AND s.verdict = 'overturn') FROM " + CANDIDATE_FROM + " WHERE c.run_id IS NULL AND c.created_by = ?"
            " AND c.status IN ('approved', 'rejected') AND c.decided_at >= ? ORDER BY c.decided_at, c.id",
            [agent, int(since_us)],
        )
        return [(candidate_from_row(r[:-1]), int(r[-1]) > 0) for r in rows]

    async def agent_unreviewed_approvals(self, agent: str, since_us: int) -> list[tuple[int, str]]:
        """(candidate id, user_id) of the proposals of `agent` approved since `since_us` (by a
        person or a policy) whose fact is still active and that nobody second-reviewed: what a
        watch draws into the second review."""
        rows = await fetchall(
            self.conn,
            "SELECT c.id, c.user_id FROM candidates c JOIN knowledge k ON k.id = c.knowledge_id"
            " WHERE c.run_id IS NULL AND c.created_by = ? AND c.status = 'approved' AND c.decided_at >= ?"
            " AND c.decision IN ('approve', 'edit_approve', 'confirm_supersession', 'keep_both')"
            " AND k.status = 'active' AND NOT EXISTS (SELECT 1 FROM second_reviews s WHERE s.candidate_id = c.id"
            " AND s.knowledge_id = c.knowledge_id) ORDER BY c.id",
            [agent, int(since_us)],
        )
        return [(int(r[0]), str(r[1])) for r in rows]

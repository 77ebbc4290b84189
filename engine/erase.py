"""The right to erasure: remove one user from the database file, not just from its answers.

Three steps, because deleting rows is not enough for the text to leave the FILE:
  1. one transaction deletes every row of the user (messages, episodes, extraction runs,
     candidates, facts, their FTS and vector rows, tombstones), redacts the text of the user's
     audit rows through the single UPDATE the audit trigger allows (before/after/reason cleared,
     redacted_at set, actions and times kept), merges the FTS index ('optimize') so the deleted
     terms leave its segments, and writes the erasure's own audit row (counts only, no text);
  2. VACUUM rewrites the file from live rows only (PRAGMA secure_delete already zeroes freed
     pages; VACUUM also drops free pages and the FTS segments' old pages);
  3. a TRUNCATE checkpoint empties the write-ahead log, which still holds the old pages.
Steps 2 and 3 cannot undo step 1; if another process keeps the database open, the checkpoint may
not be able to truncate the log, and the report says so (`wal_truncated=False`) so the operator can
run it again once the other process is closed.

The user id itself stays on the redacted audit rows: the audit log records that things happened
to "someone with this id", and the trigger refuses to change who. An erasure request for a user
with nothing left to erase is refused (NotFoundError) rather than recorded as an empty erasure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import InvalidStatementError, NotFoundError
from .storage.sql.core import USER_TABLES
from .timeutil import to_us

if TYPE_CHECKING:
    from .context import EngineContext


@dataclass(slots=True)
class ErasureReport:
    user_id: str
    messages: int
    episodes: int
    extraction_runs: int
    candidates: int
    knowledge: int
    tombstones: int
    audit_redacted: int
    audit_id: int
    wal_truncated: bool


async def erase_user(mem: EngineContext, user_id: str, actor: str, *, compact: bool = True) -> ErasureReport:
    """Erase every trace of `user_id` but the (redacted) audit rows; audited as `erase` by `actor`.

    `compact=False` skips VACUUM and the checkpoint (the rows are gone, but their old pages may
    linger in the WAL until the next checkpoint): only for callers that compact themselves."""
    if not user_id or not user_id.strip():
        raise InvalidStatementError("erasure needs a user_id")
    if not actor or not actor.strip():
        raise InvalidStatementError("erasure needs an actor (who carried it out)")
    now_us: int = to_us(mem.now())
    async with mem.store.transaction() as tx:
        counts = await tx.user_row_counts(user_id)
        if not any(counts.values()):
            raise NotFoundError(f"no data for user {user_id!r}: nothing to erase")
        await tx.erase_user_rows(user_id, redacted_at=now_us)
        summary = {table: counts[table] for table in USER_TABLES}
        summary["audit_redacted"] = counts["audit_log"]
        audit_id = await tx.audit(
            at=now_us,
            actor=actor.strip(),
            action="erase",
            user_id=user_id,
            entity="user",
            entity_id=None,
            after=summary,
        )
    truncated = await compact_file(mem) if compact else False
    return ErasureReport(
        user_id=user_id,
        messages=counts["messages"],
        episodes=counts["episodes"],
        extraction_runs=counts["extraction_runs"],
        candidates=counts["candidates"],
        knowledge=counts["knowledge"],
        tombstones=counts["tombstones"],
        audit_redacted=counts["audit_log"],
        audit_id=audit_id,
        wal_truncated=truncated,
    )


async def compact_file(mem: EngineContext) -> bool:
    """Rewrite the store so no deleted text lingers (SQLite: VACUUM and a TRUNCATE checkpoint of
    the write-ahead log; PostgreSQL: VACUUM of the tables an erasure touches); True when done."""
    return await mem.store.compact()

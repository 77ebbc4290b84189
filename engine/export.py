"""Everything the store holds about one user, as JSON: the right of access, and a support view.

Facts come with every version (active, superseded, retracted), their valid-time interval, their
belief-time bounds, why belief ended, and each fact's audit history; then the user's candidates
(pending and decided), tombstones (live and lifted) and the whole audit trail. Raw messages are
included only when asked (`include_messages`): they are the bulk of the data and usually not what a
support engineer needs, but a data-subject access request does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import NotFoundError
from .models import AuditEvent, Knowledge, to_jsonable
from .storage.sql.core import USER_TABLES
from .timeutil import from_us

if TYPE_CHECKING:
    from .context import EngineContext

EXPORT_FORMAT = "memdesk-export/1"


def _event(e: AuditEvent) -> dict[str, Any]:
    return to_jsonable(e)


def _fact(k: Knowledge, history: list[AuditEvent]) -> dict[str, Any]:
    out: dict[str, Any] = to_jsonable(k)
    out["interval"] = k.interval_text()
    out["history"] = [_event(e) for e in history]
    return out


async def export_user(mem: EngineContext, user_id: str, *, include_messages: bool = False) -> dict[str, Any]:
    """The user's data as one JSON-ready dict; NotFoundError when the store holds nothing of them."""
    async with mem.store.reading() as tx:
        counts = await tx.user_row_counts(user_id)
        if not any(counts.values()):
            raise NotFoundError(f"no data for user {user_id!r}")
        facts = await tx.list_knowledge(user_id, include_expired=True)
        candidates = await tx.user_candidates(user_id)
        stones = await tx.list_tombstones(user_id, include_lifted=True)
        events = await tx.audit_events(user_id, limit=None)
        messages = await tx.user_messages(user_id) if include_messages else None
    by_fact: dict[int, list[AuditEvent]] = {}
    for e in events:
        if e.entity == "knowledge" and e.entity_id is not None:
            by_fact.setdefault(e.entity_id, []).append(e)
    out: dict[str, Any] = {
        "format": EXPORT_FORMAT,
        "user_id": user_id,
        "exported_at": mem.now().isoformat(),
        "counts": {**{t: counts[t] for t in USER_TABLES}, "audit_log": len(events)},
        "facts": [_fact(k, by_fact.get(k.id, [])) for k in facts],
        "candidates": [to_jsonable(c) for c in candidates],
        "tombstones": [to_jsonable(t) for t in stones],
        "audit": [_event(e) for e in events],
    }
    if messages is not None:
        out["messages"] = [
            {"id": mid, "role": role, "content": content, "at": from_us(at).isoformat()}
            for mid, role, content, at in messages
        ]
    return out

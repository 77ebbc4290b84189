"""The agent watch: an agent whose sensitive proposals people reject is watched, and while it is,
people decide and a second person checks everything it sends.

Why: the two-person rule (engine/sensitive.py) catches a sensitive proposal one person slipped
on, but not a harmless-looking wrong one ("User is not vegan") from the same agent, and a hostile
agent sends both. An agent that has shown bad faith where it counts should lose the benefit of
the doubt everywhere, at once and retroactively.

- **The test** (`consider`, run in the transaction of every person's rejection of a sensitive
  proposal and every overturn of one on second review): over the agent's proposals people decided
  in the last WINDOW_DAYS, the sensitive ones (derived from the text, engine.sensitive) rejected or
  overturned number at least MIN_REJECTED and the rejected share's Wilson 95 % lower bound passes
  BOUND. Two of two (lower bound 0.34) or two of three (0.21) start a watch; an honest agent that
  people reject at the slip rate (about 1 %) does not, even over hundreds of sensitive proposals
  (2 of 50: 0.011). Why not relative to the fleet: the fleet may be one agent, or all hostile.
- **A watch** (an audit row, entity `agent_watch`, which the agents' database role cannot read):
  every fact the agent's proposals became since the window's start, by a person or a policy, that
  nobody second-reviewed goes to second review (a `policy_sampled` row by `memdesk`, each audited);
  every later approval of its proposals is drawn for second review (engine/review.py); no review
  policy approves its proposals (refused where every approval passes, ReviewService._accept).
- **Lifting** needs `force=True` and a reason (an owner's decision, audited): the evidence that
  started a watch does not expire by itself, and fresh good behaviour is what the watch measures.

`digest` and the workstation header list the watched agents beside suspended scopes.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Final

from .context import EngineContext
from .errors import UserInputError
from .gate import SYSTEM_ACTOR
from .limits import check_reason
from .models import Candidate, Mark
from .sampling import wilson_lower
from .sensitive import sensitive_reason
from .storage.sql.policies import SAMPLED
from .timeutil import from_us, to_us

if TYPE_CHECKING:
    from .storage.rooms import Rooms, WatchTx

WATCH_ENTITY: Final = "agent_watch"
WATCH: Final = "agent_watch_start"
LIFT: Final = "agent_watch_lift"
WINDOW_DAYS: Final = 30
MIN_REJECTED: Final = 2
BOUND: Final = 0.2
_DAY_US: Final = 86_400_000_000


@dataclass(frozen=True, slots=True)
class Watch:
    """One agent under watch."""

    agent: str
    at: datetime
    since: datetime  # the window's start: its approvals since then were drawn for second review
    reason: str
    drawn: tuple[int, ...]  # candidates drawn into the second review when it started


def agent_of(cand: Candidate) -> str | None:
    """The agent whose proposal `cand` is: a row no extraction run made, by its `created_by`
    (the same provenance the policies read: engine.policies.source_of)."""
    if cand.run_id is not None or not cand.created_by:
        return None
    return cand.created_by


@lru_cache(maxsize=65_536)
def _sensitive(statement: str, evidence: str | None, marks: tuple[Mark, ...]) -> str | None:
    return sensitive_reason(statement, evidence, marks)


def is_sensitive(cand: Candidate) -> str | None:
    """Why `cand` is sensitive (cached on its text: the watch's test reads an agent's window)."""
    return _sensitive(cand.statement, cand.evidence, tuple(cand.marks or ()))


async def watches(tx: WatchTx) -> dict[str, Watch]:
    """The agents under watch now, by name."""
    out: dict[str, Watch] = {}
    for action, raw, at in await tx.watch_events():
        data = json.loads(raw)
        agent = str(data.get("agent", ""))
        if action == WATCH:
            out[agent] = Watch(
                agent=agent,
                at=from_us(at),
                since=from_us(int(data.get("since", 0))),
                reason=str(data.get("reason", "")),
                drawn=tuple(int(i) for i in data.get("drawn", ())),
            )
        elif action == LIFT:
            out.pop(agent, None)
    return out


async def consider(tx: WatchTx, cand: Candidate, now_us: int) -> Watch | None:
    """After a person rejected (or overturned) `cand`: start watching its agent when the test
    passes (module docstring), in the caller's transaction. Returns the new watch, if any."""
    agent = agent_of(cand)
    if agent is None or is_sensitive(cand) is None:
        return None
    if agent in await watches(tx):
        return None
    since = now_us - WINDOW_DAYS * _DAY_US
    rejected = decided = 0
    for other, overturned in await tx.agent_decided(agent, since):
        if is_sensitive(other) is None:
            continue
        if other.decided_by is not None and other.decided_by.startswith("policy:") and not overturned:
            continue  # a policy's approval is no person's decision (and policies approve none of these)
        decided += 1
        rejected += other.status == "rejected" or overturned
    lower = wilson_lower(rejected, decided)
    if rejected < MIN_REJECTED or lower is None or lower <= BOUND:
        return None
    reason = (
        f"people rejected {rejected} of its {decided} sensitive proposals decided in the last {WINDOW_DAYS} days"
        f" (lower bound {lower:.2f} > {BOUND})"
    )
    drawn = await tx.agent_unreviewed_approvals(agent, since)
    for cid, user_id in drawn:
        await tx.audit(
            at=now_us,
            actor=SYSTEM_ACTOR,
            action=SAMPLED,
            user_id=user_id,
            entity="candidate",
            entity_id=cid,
            reason=f"drawn for second review: agent {agent} is under watch",
        )
    ids = [cid for cid, _ in drawn]
    await tx.audit(
        at=now_us,
        actor=SYSTEM_ACTOR,
        action=WATCH,
        user_id="",
        entity=WATCH_ENTITY,
        entity_id=None,
        after={"agent": agent, "since": since, "reason": reason, "drawn": ids},
        reason=reason,
    )
    return Watch(agent=agent, at=from_us(now_us), since=from_us(since), reason=reason, drawn=tuple(ids))


class WatchService:
    """`Memory.watch`: the agents under watch, and an owner's lift."""

    def __init__(self, ctx: EngineContext) -> None:
        self._ctx = ctx

    @property
    def _store(self) -> Rooms[WatchTx]:
        return self._ctx.store

    async def all(self) -> list[Watch]:
        async with self._store.reading() as tx:
            return sorted((await watches(tx)).values(), key=lambda w: (w.at, w.agent))

    async def lift(self, agent: str, actor: str, *, force: bool = False, reason: str | None = None) -> Watch:
        """End the watch on `agent`: an owner's decision, `force=True` and a reason, audited. What
        the watch drew into the second review stays there."""
        why = (reason or "").strip()
        if not force or not why:
            raise UserInputError(
                f"lifting the watch on {agent} needs --force and a reason: people rejected its sensitive"
                " proposals, and nothing clears that by itself"
            )
        check_reason(why, self._ctx.config)
        now_us: int = to_us(self._ctx.now())
        async with self._store.transaction() as tx:
            current = (await watches(tx)).get(agent)
            if current is None:
                raise UserInputError(f"agent {agent!r} is not under watch")
            await tx.audit(
                at=now_us,
                actor=actor,
                action=LIFT,
                user_id="",
                entity=WATCH_ENTITY,
                entity_id=None,
                before=asdict(current) | {"at": current.at.isoformat(), "since": current.since.isoformat()},
                after={"agent": agent, "reason": why},
                reason=why,
            )
        return current


__all__ = ["BOUND", "MIN_REJECTED", "WINDOW_DAYS", "Watch", "WatchService", "agent_of", "consider", "watches"]

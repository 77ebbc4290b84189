"""The support desk: what a support agent does to one user's facts outside the review queue.

- `add`: a fact the extractor missed (the one way in, `Memory.add_knowledge`);
- `correct`: a fact replaced by a new statement, with a reason; the world changed (the old one
  ends `superseded`, as-of dates before now still read it) or, with `--never-true`, it never held
  (the old one ends `corrected`, and no as-of question reads it again);
- `retract`: belief in a fact ended, with a reason; `--tombstone` also keeps its value from coming
  back through extraction;
- `history`: a user's or a fact's versions and audit rows: who, when, what and why.

Each prints one line a person reads, or with --json what a script reads. Every change names its
actor (--actor, $MEMDESK_REVIEWER, else the OS user) and lands in the audit log under it. A fact id
is always read together with --user: an id of another user is "not found", as in the engine.
"""

from __future__ import annotations

from typing import Any

import click

from engine.errors import InvalidIntervalError, SettleRequiredError
from engine.text import reveal

from .common import (
    BadInput,
    actor_option,
    db_argument,
    echo,
    fact_id_argument,
    json_option,
    json_text,
    no_user,
    parse_date,
    run_engine,
    user_option,
    when,
)

_reason_option = click.option("--reason", required=True, help="Why (recorded in the audit log; shown in history).")


def _fact_json(k: Any) -> dict[str, Any]:
    from engine.models import to_jsonable

    return {**to_jsonable(k), "label": k.label}


async def _known_user(mem: Any, user: str, db: str) -> None:
    if user not in await mem.users():
        raise no_user(user, db)


@click.command()
@db_argument()
@click.argument("statement")
@user_option("Whose fact it is.")
@click.option("--valid-from", help="When it became true (ISO 8601; no zone = UTC); default: always.")
@click.option(
    "--settle",
    type=click.Choice(["supersede", "correct", "keep-both"]),
    help="When the fact would replace an active one: the world changed (supersede), the old one was never"
    " true (correct), or both hold (keep-both).",
)
@click.option("--reason", help="Why (recorded in the audit log); needed with --settle correct.")
@actor_option("who adds this fact?", "Who adds the fact (recorded in the audit log).")
@json_option("the fact")
def add(
    db: str,
    statement: str,
    user: str,
    valid_from: str | None,
    settle: str | None,
    reason: str | None,
    actor: str,
    as_json: bool,
) -> None:
    """Add STATEMENT as an approved fact of USER: a fact the extractor missed (a support agent heard
    it on the phone, a curator read it in a message).

    It goes through the engine's one way in (`add_knowledge`): a tombstoned value, a duplicate of an
    active fact or an invalid statement is refused with a message (exit 2) and nothing is written.
    A fact about something USER already has a fact for ("lives in Porto" while "lives in Lisbon" is
    active) is refused until --settle says how it relates. The fact is audited under --actor, and
    a correction (--settle correct) with its --reason.
    """
    if settle == "correct" and not (reason or "").strip():
        raise BadInput("--settle correct says the old fact was never true: give --reason (it is audited)")
    valid_at = parse_date(valid_from, "--valid-from")

    async def go() -> Any:
        from engine import Memory

        async with Memory(db) as mem:
            how: Any = settle.replace("-", "_") if settle else None
            try:
                return await mem.add_knowledge(
                    user, statement, actor=actor, valid_at=valid_at, settle=how, reason=reason
                )
            except SettleRequiredError as exc:
                raise BadInput(f"{exc}; pass --settle supersede, correct or keep-both") from None

    fact = run_engine(go())
    if as_json:
        echo(json_text(_fact_json(fact)))
        return
    echo(
        f"Added fact #{fact.id} for {fact.user_id}: {reveal(fact.statement)} "
        f"(valid {fact.interval_text()}; by {actor})."
    )
    for mark in fact.marks:  # what the gate noticed and let through (engine.gate): for a person to check
        echo(f"  note: {reveal(mark.note)}")


@click.command()
@db_argument()
@user_option("Whose fact it is (an id of another user is not found).")
@fact_id_argument()
@click.argument("statement")
@_reason_option
@click.option(
    "--never-true",
    is_flag=True,
    help="The old statement never held: it ends `corrected` and no as-of date reads it again. Without it"
    " the world changed: it ends `superseded` now, and earlier dates still read it.",
)
@click.option(
    "--valid-from",
    help="When the new statement became true (ISO 8601); default: now, or the old start with --never-true.",
)
@actor_option("who makes this correction?", "Who corrects the fact (recorded in the audit log).")
@json_option("the old and the new version")
def correct(
    db: str,
    user: str,
    fact_id: int,
    statement: str,
    reason: str,
    never_true: bool,
    valid_from: str | None,
    actor: str,
    as_json: bool,
) -> None:
    """Replace USER's active fact FACT_ID by STATEMENT, with a --reason.

    The old version stays, as history (`memdesk history`), labelled superseded or, with
    --never-true, corrected. Refused with exit 2 when the new statement is empty, a duplicate of
    another active fact or a tombstoned value; exit 1 when the fact is no longer active.
    """
    from engine.models import KEEP

    valid_at = parse_date(valid_from, "--valid-from")

    async def go() -> tuple[Any, Any]:
        from engine import Memory

        async with Memory(db) as mem:
            await _known_user(mem, user, db)
            try:
                new = await mem.correct(
                    user,
                    fact_id,
                    statement,
                    actor,
                    reason,
                    valid_at=KEEP if valid_at is None else valid_at,
                    never_true=never_true,
                )
            except InvalidIntervalError as exc:
                old = await mem.get_knowledge(user, fact_id)
                if never_true or old.invalid_at is None:
                    raise
                raise BadInput(
                    f"fact #{fact_id} held only until {old.invalid_at.date().isoformat()}, so the world cannot have"
                    f" changed {'now' if valid_at is None else 'then'}: give --valid-from before that date, or"
                    f" --never-true if it never held ({exc})"
                ) from None
            return await mem.get_knowledge(user, fact_id), new

    old, new = run_engine(go())
    if as_json:
        echo(json_text({"old": _fact_json(old), "new": _fact_json(new)}))
        return
    how = (
        "it never held: no as-of date reads it again"
        if never_true
        else f"the world changed: dates before {new.interval_text().split(' → ')[0]} still read it"
    )
    echo(
        f"Fact #{old.id} of {user} {old.label} by #{new.id}: {new.statement} (valid {new.interval_text()}; "
        f"by {actor}). #{old.id} is kept as history; {how}."
    )


@click.command()
@db_argument()
@user_option("Whose fact it is (an id of another user is not found).")
@fact_id_argument()
@_reason_option
@click.option(
    "--tombstone",
    is_flag=True,
    help="Also tombstone the value, so that extraction never brings it back (lifted in the workstation).",
)
@actor_option("who retracts this fact?", "Who retracts the fact (recorded in the audit log).")
@json_option("the retracted fact")
def retract(db: str, user: str, fact_id: int, reason: str, tombstone: bool, actor: str, as_json: bool) -> None:
    """End belief in USER's active fact FACT_ID, with a --reason: it was wrong, or must go.

    The fact stays as history, labelled retracted; it is no longer retrieved. Exit 1 when it is
    no longer active; exit 2 when it is not USER's or the reason is empty."""

    async def go() -> Any:
        from engine import Memory

        async with Memory(db) as mem:
            await _known_user(mem, user, db)
            return await mem.retract(user, fact_id, actor, reason, tombstone=tombstone)

    fact = run_engine(go())
    if as_json:
        echo(json_text({**_fact_json(fact), "tombstoned": tombstone}))
        return
    stone = "; its value is tombstoned" if tombstone else "; extraction may propose it again (--tombstone stops that)"
    echo(f"Retracted fact #{fact.id} of {user}: {fact.statement} (by {actor}){stone}.")


@click.command()
@db_argument()
@user_option("Whose history.")
@fact_id_argument(required=False)
@json_option("the versions and the audit rows")
def history(db: str, user: str, fact_id: int | None, as_json: bool) -> None:
    """USER's audit history, or with FACT_ID that fact's versions (oldest first) and every audit
    row on any of them: when, who, what and why."""

    async def go() -> tuple[list[Any], list[Any]]:
        from engine import Memory

        async with Memory(db) as mem:
            await _known_user(mem, user, db)
            versions = await mem.versions(user, fact_id) if fact_id is not None else []
            return versions, await mem.history(user, fact_id)

    versions, events = run_engine(go())
    if as_json:
        from engine.models import to_jsonable

        echo(
            json_text(
                {
                    "user_id": user,
                    "fact_id": fact_id,
                    "versions": [_fact_json(k) for k in versions],
                    "events": [to_jsonable(e) for e in events],
                }
            )
        )
        return
    if fact_id is not None:
        echo(f"Versions of fact #{fact_id} of {user}, oldest first:")
        for k in versions:
            echo(
                f"  #{k.id} [{k.label}] {k.statement} (valid {k.interval_text()}; "
                f"added {when(k.created_at)} by {k.created_by})"
            )
    echo(
        f"Audit history of {'fact #' + str(fact_id) if fact_id is not None else user}:" if events else "No audit rows."
    )
    for e in events:
        target = f"{e.entity} #{e.entity_id}" if e.entity_id is not None else e.entity
        why = f": {e.reason}" if e.reason else ""
        note = f" (note: {e.note})" if e.note else ""
        echo(f"  {when(e.at)}  {e.actor}  {e.action} {target}{why}{note}")

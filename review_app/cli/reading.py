"""The commands that read a store and change nothing: `search`, `stats` and `digest`.

`search` is what an agent's operator runs most; it loads the engine and its embedder and nothing
of the workstation (tests/test_cli_package.py)."""

from __future__ import annotations

from typing import Any

import click

from engine.text import reveal

from .common import (
    db_argument,
    echo,
    json_option,
    json_text,
    no_user,
    parse_date,
    print_mapping,
    run_engine,
    sla_option,
    user_option,
    when,
)


@click.command()
@db_argument()
@click.argument("query", nargs=-1, required=True)
@user_option("Whose facts (search never crosses users).")
@click.option("--top-k", type=click.IntRange(1, 1000), default=10, show_default=True)
@click.option("--as-of", help="Only facts valid at this date (ISO 8601; no zone = UTC).")
@click.option("--known-at", help="What the store believed at this date (ISO 8601).")
@click.option(
    "--include-expired", is_flag=True, help="Also ended facts, each labelled corrected, retracted or superseded."
)
@json_option("the results")
def search(
    db: str,
    query: tuple[str, ...],
    user: str,
    top_k: int,
    as_of: str | None,
    known_at: str | None,
    include_expired: bool,
    as_json: bool,
) -> None:
    """Retrieve USER's approved facts for QUERY, as the prompt block an agent would get.

    A user the store knows but who has no matching approved fact gets the empty answer (exit 0).
    A user the store holds nothing of is exit 2: at the command line that is almost always a typo,
    and whoever can run this command can read the whole file anyway. (Agents never get that
    distinction: the MCP server is bound to one user.)
    """
    at_time = parse_date(as_of, "--as-of")
    known = parse_date(known_at, "--known-at")
    text = " ".join(query)

    async def go() -> Any:
        from engine import Memory

        async with Memory(db) as mem:
            if user not in await mem.users():
                raise no_user(user, db)
            return await mem.retrieve(
                text, user_id=user, top_k=top_k, at_time=at_time, known_at=known, include_expired=include_expired
            )

    result = run_engine(go())
    if not as_json:
        echo(result.to_prompt())
        return
    from engine.models import to_jsonable

    echo(
        json_text(
            {
                "query": result.query,
                "user_id": result.user_id,
                "at_time": to_jsonable(result.at_time),
                "known_at": to_jsonable(result.known_at),
                "include_expired": result.include_expired,
                "items": [
                    {
                        **to_jsonable(i.knowledge),
                        "label": i.knowledge.label,
                        "score": i.score,
                        "vector_rank": i.vector_rank,
                        "text_rank": i.text_rank,
                    }
                    for i in result.items
                ],
            }
        )
    )


@click.command()
@db_argument()
@user_option("Only this user's figures.", required=False)
@click.option(
    "--discarded",
    "discarded_limit",
    type=click.IntRange(0, 100_000),
    default=20,
    show_default=True,
    help="List this many of the statements the gates dropped most recently.",
)
@json_option("the figures")
def stats(db: str, user: str | None, discarded_limit: int, as_json: bool) -> None:
    """Extraction rate, discards by gate (and the dropped statements), review outcomes and queue size.

    With --user, a user the store holds nothing of is exit 2, as for `search` and `export`."""

    async def go() -> dict[str, Any]:
        from engine import Memory

        async with Memory(db) as mem:
            if user is not None and user not in await mem.users():
                raise no_user(user, db)
            return (await mem.stats(user, discarded_limit)).to_dict()

    data = run_engine(go())
    if as_json:
        echo(json_text(data))
    else:
        print_mapping(data)


@click.command()
@db_argument()
@sla_option()
@click.option(
    "--limit", type=click.IntRange(0, 10_000), default=20, show_default=True, help="List this many oldest items."
)
@json_option("the digest")
def digest(db: str, sla_hours: float, limit: int, as_json: bool) -> None:
    """What waits in the review queue and for how long: the pending count by kind, the oldest item,
    how many are past the SLA, and the oldest items. Exit 1 when anything is past the SLA (so cron
    or CI can alert on it), 0 otherwise, 2 on bad input."""

    async def go() -> dict[str, Any]:
        from engine import Memory, MemoryConfig
        from engine.models import to_jsonable

        config = MemoryConfig(review_sla_hours=sla_hours)
        async with Memory(db, config=config) as mem:
            figures = await mem.stats(None, 0)
            now = mem.now()
            oldest = await mem.review.pending(limit=limit) if limit else []
            alarms = await mem.policies.alarms(config.review_sla_hours)
        queue = figures.queue
        return {
            "policies": to_jsonable(alarms)
            | {
                "alarm": alarms.alarm,
                "second_review_past_sla": alarms.second_review_past_sla,
                "header": alarms.header(),
            },
            "pending": queue.pending,
            "pending_by_kind": queue.pending_by_kind,
            **to_jsonable(queue.age),
            "oldest": [
                {
                    "id": c.id,
                    "user_id": c.user_id,
                    "kind": c.kind,
                    "waiting_hours": round((now - c.created_at).total_seconds() / 3600, 1),
                    "statement": c.statement,
                    "marks": [m.note for m in c.marks],
                }
                for c in oldest
            ],
        }

    data = run_engine(go())
    if as_json:
        echo(json_text(data))
    else:
        echo(
            f"{data['pending']} pending; {data['past_sla']} past the SLA of {data['sla_hours']:g} h; "
            + (
                "nothing waits."
                if data["oldest_pending_hours"] is None
                else f"the oldest has waited {data['oldest_pending_hours']:g} h"
                f" (since {when(data['oldest_pending_at'])})."
            )
        )
        if data["pending_by_kind"]:
            echo("By kind: " + ", ".join(f"{kind} {n}" for kind, n in sorted(data["pending_by_kind"].items())) + ".")
        for item in data["oldest"]:
            echo(
                f"  {item['waiting_hours']:>8g} h  #{item['id']} {item['user_id']} [{item['kind']}]"
                f" {reveal(item['statement'])}" + "".join(f"  [{reveal(note)}]" for note in item["marks"])
            )
    policies = data["policies"]
    if not as_json:
        from .policy_cli import alarm_lines

        for line in alarm_lines(policies):
            echo(line)
    if data["past_sla"] or policies["alarm"]:
        raise SystemExit(1)

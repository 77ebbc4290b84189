"""`memdesk policy ...`: review policies from the command line (engine/policies.py says what they
are and why they start in shadow). A group of its own, registered on `memdesk` by cli.py; it uses
cli.py's printing and exit-code conventions (exit 2: bad input or not enough evidence, nothing
changed; exit 1: the work could not be done)."""

from __future__ import annotations

import collections
import dataclasses
import re
from typing import Any

import click

from engine import Memory
from engine.models import to_jsonable
from engine.policies import Policy, PolicyReport, PolicyRun

from .cli import BadInput, _json, _os_user, _run, echo, existing_db
from .common import when


@click.group()
def policy() -> None:
    """Review policies: approve routine candidates without a person, once measured safe.

    A policy starts in shadow mode (it records what it would decide and decides nothing); `report`
    compares that with people's decisions; `enable` is refused until the precision's 95 % lower
    bound reaches the policy's target. Special-category candidates always go to a person."""


def _actor_option(command: Any) -> Any:
    return click.option(
        "--actor",
        envvar="MEMDESK_REVIEWER",
        default=_os_user,
        show_default="$MEMDESK_REVIEWER or OS user",
        help="Who makes the change (recorded in the audit log).",
    )(command)


def _actor(actor: str) -> str:
    if not actor.strip():
        raise BadInput("who makes this change? pass --actor NAME or set MEMDESK_REVIEWER")
    return actor.strip()


def _describe(p: Policy) -> str:
    parts = [f"slots {','.join(p.slots) or '(none: it approves nothing)'}"]
    parts.append(f"agents {','.join(p.agents)}" if p.agents else "no agent's proposals")
    if p.extractor:
        parts.append(f"extractor {p.extractor}")
    if p.min_confidence is not None:
        parts.append(f"confidence >= {p.min_confidence}")
    if p.max_per_day is not None:
        parts.append(f"at most {p.max_per_day} a day")
    parts.append(
        f"samples {p.sample_rate:.0%} for second review, target {p.target}, tolerance {p.tolerance}"
        f" over the last {p.window}"
    )
    if p.forced:
        parts.append("FORCED (enabled without the evidence)")
    return f"{p.name} [{p.mode}]: " + "; ".join(parts)


def _names(text: str | None) -> tuple[str, ...]:
    return tuple(x.strip() for x in (text or "").split(",") if x.strip())


@policy.command("add")
@click.argument("db")
@click.argument("name")
@click.option("--slots", required=True, help="Comma-separated claim slots it may decide (home,employer,...).")
@click.option("--agents", help="Comma-separated agents whose proposals it may decide (none by default).")
@click.option("--extractor", help="Only extractors' candidates of this extractor (offline, openai, ...).")
@click.option("--min-confidence", type=click.FloatRange(0, 1), help="Extractors' candidates at or above this.")
@click.option("--max-per-day", type=click.IntRange(1), help="At most this many decisions a day (UTC).")
@click.option(
    "--sample-rate",
    type=click.FloatRange(0, 1),
    default=0.1,
    show_default=True,
    help="Share of its approvals drawn (in secret) for the blind second review.",
)
@click.option(
    "--target",
    type=click.FloatRange(0, 1),
    default=0.95,
    show_default=True,
    help="Precision lower bound (Wilson, 95 %) a scope's record must reach to decide.",
)
@click.option(
    "--tolerance",
    type=click.FloatRange(0, 1),
    default=0.05,
    show_default=True,
    help="Overturn-rate lower bound, over a scope's recent second reviews, that suspends the scope.",
)
@click.option(
    "--window", type=click.IntRange(5, 1000), default=30, show_default=True, help="Second reviews the test reads."
)
@_actor_option
def policy_add(
    db: str,
    name: str,
    slots: str,
    agents: str | None,
    extractor: str | None,
    min_confidence: float | None,
    max_per_day: int | None,
    sample_rate: float,
    target: float,
    tolerance: float,
    window: int,
    actor: str,
) -> None:
    """Create policy NAME in shadow mode: it records verdicts and decides nothing. It approves only
    candidates whose claim is in one of --slots, unmarked, with no special or unsure category and no
    credential-like phrase; over agents' proposals, only from --agents."""
    existing_db(db)
    who = _actor(actor)

    async def go() -> Policy:
        async with Memory(db) as mem:
            return await mem.policies.add(
                name,
                who,
                slots=_names(slots),
                agents=_names(agents),
                extractor=extractor,
                min_confidence=min_confidence,
                max_per_day=max_per_day,
                sample_rate=sample_rate,
                target=target,
                tolerance=tolerance,
                window=window,
            )

    echo("Added " + _describe(_run(go())) + ". It decides nothing until `memdesk policy enable`.")


@policy.command("list")
@click.argument("db")
@click.option("--json", "as_json", is_flag=True, help="Print the policies as JSON.")
def policy_list(db: str, as_json: bool) -> None:
    """Every policy of DB with its mode and settings."""
    existing_db(db)

    async def go() -> list[Policy]:
        async with Memory(db) as mem:
            return await mem.policies.all()

    found = _run(go())
    if as_json:
        echo(_json([dataclasses.asdict(p) for p in found]))
    elif not found:
        echo("No policy: every candidate waits for a person.")
    for p in [] if as_json else found:
        echo(_describe(p))


def _report_lines(r: PolicyReport) -> list[str]:
    def pct(x: float | None) -> str:
        return "-" if x is None else f"{x:.1%}"

    lines = [
        f"policy {r.name} [{r.mode}{', forced' if r.forced else ''}]: slots {','.join(r.slots) or '(none)'};"
        f" agents {','.join(r.agents) or '(none)'}",
        f"  judged {r.judged} candidates; would approve {r.would_approve}; its own approvals {r.policy_approvals};"
        f" second-reviewed {r.second_reviewed}, not upheld {r.overturned}",
    ]
    why_none = r.nothing_approvable
    if why_none:
        lines.append(f"  it approves nothing now: {why_none}")
    if r.scopes:
        lines.append(
            f"  scopes (each needs {r.min_decisions} people's decisions at a precision lower bound of {r.target:.1%};"
            f" suspended past an overturn lower bound of {r.tolerance:.1%}):"
        )
    for s in r.scopes:
        lines.append(
            f"    {s.scope:<40} {s.state:<9} people {s.confirmed}/{s.decided} (lower {pct(s.precision_lower)});"
            f" recent 2nd reviews {s.overturned}/{s.reviewed} not upheld (lower {pct(s.overturn_lower)})"
            + (f"; returned {len(s.returned)} to the queue" if s.state == "suspended" else "")
        )
    if r.refusals:
        lines.append("  why it would not approve the rest (most common first):")
        lines += [f"    {n:>6}  {why}" for why, n in list(r.refusals.items())[:8]]
    lines.append("  ready to enable" if r.ready else "  not ready to enable: no scope has the evidence")
    return lines


@policy.command("report")
@click.argument("db")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def policy_report(db: str, name: str, as_json: bool) -> None:
    """How policy NAME's verdicts compare with people's decisions on the same candidates."""
    existing_db(db)

    async def go() -> PolicyReport:
        async with Memory(db) as mem:
            return await mem.policies.report(name)

    report = _run(go())
    if as_json:
        data = dataclasses.asdict(report) | {"ready": report.ready, "nothing_approvable": report.nothing_approvable}
        echo(_json(data))
        return
    for line in _report_lines(report):
        echo(line)


@policy.command("enable")
@click.argument("db")
@click.argument("name")
@click.option("--force", is_flag=True, help="Enable without the evidence (needs --reason; audited as forced).")
@click.option("--reason", help="Why, with --force.")
@_actor_option
def policy_enable(db: str, name: str, force: bool, reason: str | None, actor: str) -> None:
    """Enable policy NAME; refused (exit 2) until its shadow record meets its target."""
    existing_db(db)
    who = _actor(actor)

    async def go() -> PolicyReport:
        async with Memory(db) as mem:
            return await mem.policies.enable(name, who, force=force, reason=reason)

    report = _run(go())
    how = "forced, without the evidence" if force else "on its record"
    live = [s.scope for s in report.scopes if s.state == "live"]
    where = (
        "every scope not suspended" if force else "the scopes whose record proves them: " + (", ".join(live) or "none")
    )
    echo(f"Enabled policy {name} ({how}): it now approves what it matches as candidates are queued, in {where}.")
    for s in report.scopes:
        if s.state == "suspended":
            echo(f"  still suspended: {s.scope} (its fresh record is {s.confirmed}/{s.decided}; --force to lift)")


@policy.command("disable")
@click.argument("db")
@click.argument("name")
@click.option("--reason", help="Why (recorded in the audit log).")
@_actor_option
def policy_disable(db: str, name: str, reason: str | None, actor: str) -> None:
    """Disable policy NAME: it decides nothing more (its record stays)."""
    existing_db(db)
    who = _actor(actor)

    async def go() -> Policy:
        async with Memory(db) as mem:
            return await mem.policies.disable(name, who, reason)

    echo(f"Disabled policy {_run(go()).name}.")


@policy.command("run")
@click.argument("db")
@click.argument("name")
def policy_run(db: str, name: str) -> None:
    """Apply policy NAME to what is pending now (shadow: verdicts only; enabled: its approvals)."""
    existing_db(db)

    async def go() -> PolicyRun:
        async with Memory(db) as mem:
            return await mem.policies.run(name)

    run = _run(go())
    echo(
        f"Policy {name}: judged {run.judged} pending candidates: approved {len(run.approved)}, left"
        f" {len(run.left)} to people."
    )
    # why the rest waits for people, every reason (they add up to the number left)
    for why, n in collections.Counter(re.sub(r"#\d+", "#N", why) for _, why in run.left).most_common():
        echo(f"  {n:>5}  {why}")
    for scope in run.suspended:
        echo(f"Scope {scope} was suspended: second reviewers overturned too many of its approvals.")
    if run.returned:
        echo(f"  {len(run.returned)} of its approvals went back to the queue: #{', #'.join(map(str, run.returned))}")


def alarm_lines(policies: dict[str, Any]) -> list[str]:
    """`memdesk digest`'s lines on the policies' safety loop (from PolicyAlarms as JSON): the
    second-review backlog and its age, each suspended scope with what it returned, and each agent
    under watch."""
    lines = []
    backlog, hours = policies["second_review_backlog"], policies["second_review_hours"]
    if backlog:
        late = " PAST THE SLA" if policies["second_review_past_sla"] else ""
        lines.append(f"{backlog} approval(s) wait for second review; the oldest for {hours:g} h{late}.")
    else:
        lines.append("No approval waits for second review.")
    for s in policies["suspended"]:
        lines.append(
            f"Suspended: policy {s['policy']} scope {s['scope']} since {when(s['at'])}: returned {len(s['returned'])}"
            f" approval(s) to the queue ({s['still_pending']} still pending)"
            + (f"; could not return {len(s['kept'])}" if s["kept"] else "")
            + f". {s['reason']}"
        )
    for w in policies.get("watched", ()):
        lines.append(
            f"Under watch: agent {w['agent']} since {when(w['at'])}: people decide its proposals and a second person"
            f" checks each approval; {len(w['drawn'])} earlier approval(s) drawn to second review. {w['reason']}"
        )
    return lines


@policy.command("watched")
@click.argument("db")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def policy_watched(db: str, as_json: bool) -> None:
    """The agents under watch (engine/watch.py): people rejected their sensitive proposals, so
    people decide all they send, a second person checks each approval, and no policy approves."""
    existing_db(db)

    async def go() -> list[Any]:
        async with Memory(db) as mem:
            return await mem.watch.all()

    watched = _run(go())
    if as_json:
        echo(_json([to_jsonable(w) for w in watched]))  # times in ISO 8601, as digest --json writes them
        return
    if not watched:
        echo("No agent is under watch.")
    for w in watched:
        echo(f"{w.agent}: under watch since {when(w.at)}; {len(w.drawn)} approval(s) drawn. {w.reason}")


@policy.command("unwatch")
@click.argument("db")
@click.argument("agent")
@click.option("--force", is_flag=True, help="Required: lifting a watch is an owner's decision.")
@click.option("--reason", help="Why (required; recorded in the audit log).")
@_actor_option
def policy_unwatch(db: str, agent: str, force: bool, reason: str | None, actor: str) -> None:
    """Lift the watch on AGENT: needs --force and --reason (exit 2 without, nothing changed)."""
    existing_db(db)
    who = _actor(actor)

    async def go() -> Any:
        async with Memory(db) as mem:
            return await mem.watch.lift(agent, who, force=force, reason=reason)

    lifted = _run(go())
    echo(f"Lifted the watch on {lifted.agent} (under watch since {when(lifted.at)}).")

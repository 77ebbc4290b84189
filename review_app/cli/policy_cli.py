"""`memdesk policy ...`: review policies from the command line (engine/policies.py says what they
are and why they start in shadow). A group of its own, registered on `memdesk` by cli.py; it uses
cli.py's printing and exit-code conventions (exit 2: bad input or not enough evidence, nothing
changed; exit 1: the work could not be done)."""

from __future__ import annotations

import collections
import dataclasses
from typing import Any

import click

from engine import CANDIDATE_KINDS, Memory
from engine.policies import Policy, PolicyReport, PolicyRun

from .cli import BadInput, _json, _os_user, _run, echo, existing_db


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
    parts = [f"kinds {','.join(p.kinds)}"]
    if p.extractor:
        parts.append(f"extractor {p.extractor}")
    if p.min_confidence is not None:
        parts.append(f"confidence >= {p.min_confidence}")
    if p.min_evidence:
        parts.append(f"on rules people decided {p.min_evidence}+ times")
    if p.max_per_day is not None:
        parts.append(f"at most {p.max_per_day} a day")
    parts.append(f"samples {p.sample_rate:.0%} for second review, target {p.target}, tolerance {p.tolerance}")
    return f"{p.name} [{p.mode}]: " + "; ".join(parts)


@policy.command("add")
@click.argument("db")
@click.argument("name")
@click.option("--extractor", help="Only candidates of this extractor (offline, openai, ...).")
@click.option(
    "--kinds",
    default="new",
    show_default=True,
    help=f"Comma-separated kinds it decides ({', '.join(CANDIDATE_KINDS)}).",
)
@click.option("--min-confidence", type=click.FloatRange(0, 1), help="Only candidates at or above this confidence.")
@click.option(
    "--min-evidence",
    type=click.IntRange(0),
    default=10,
    show_default=True,
    help="Only offline candidates whose rule's confidence rests on this many people's decisions (0: any).",
)
@click.option("--max-per-day", type=click.IntRange(1), help="At most this many decisions a day (UTC).")
@click.option(
    "--sample-rate",
    type=click.FloatRange(0, 1),
    default=0.1,
    show_default=True,
    help="Share of its approvals sent to the blind second review.",
)
@click.option(
    "--target",
    type=click.FloatRange(0, 1),
    default=0.95,
    show_default=True,
    help="Precision lower bound (Wilson, 95 %) required to enable it.",
)
@click.option(
    "--tolerance",
    type=click.FloatRange(0, 1),
    default=0.05,
    show_default=True,
    help="Overturn-rate lower bound on second review that suspends it.",
)
@_actor_option
def policy_add(
    db: str,
    name: str,
    extractor: str | None,
    kinds: str,
    min_confidence: float | None,
    min_evidence: int,
    max_per_day: int | None,
    sample_rate: float,
    target: float,
    tolerance: float,
    actor: str,
) -> None:
    """Create policy NAME in shadow mode: it records verdicts and decides nothing."""
    existing_db(db)
    who = _actor(actor)

    async def go() -> Policy:
        async with Memory(db) as mem:
            return await mem.policies.add(
                name,
                who,
                extractor=extractor,
                kinds=tuple(k.strip() for k in kinds.split(",") if k.strip()),
                min_confidence=min_confidence,
                min_evidence=min_evidence,
                max_per_day=max_per_day,
                sample_rate=sample_rate,
                target=target,
                tolerance=tolerance,
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

    return [
        f"policy {r.name} [{r.mode}]",
        f"  judged {r.judged} candidates; would approve {r.would_approve}",
        f"  decided by people: {r.decided}; agreement {pct(r.agreement)}",
        f"  of what it would approve, people decided {r.approvals_decided} and approved {r.approvals_confirmed}"
        f" as they were: precision {pct(r.precision)}, 95 % lower bound {pct(r.precision_lower)}"
        f" (target {r.target:.1%}, at least {r.min_decisions} decisions)",
        f"  its own approvals: {r.policy_approvals}; second-reviewed {r.second_reviewed}, overturned"
        f" {r.overturned} (lower bound {pct(r.overturn_lower)}, tolerance {r.tolerance:.1%})",
        "  ready to enable" if r.ready else "  not ready to enable",
    ]


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
        data = dataclasses.asdict(report) | {"agreement": report.agreement, "precision": report.precision}
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
    how = "forced, without the evidence" if not report.ready else "on its record"
    echo(f"Enabled policy {name} ({how}): it now approves what it matches as candidates are queued.")


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
        f"Policy {name}: judged {run.judged} new candidates, approved {len(run.approved)}, left {len(run.left)}"
        " to people."
    )
    # why the rest waits for people, most common first (the reasons name rules, kinds and limits)
    for why, n in collections.Counter(why for _, why in run.left).most_common(5):
        echo(f"  {n:>5}  {why}")
    for name_ in run.suspended:
        echo(f"Policy {name_} was suspended: second reviewers overturned too many of its approvals.")

"""Rules about the user's work: where, as what, since and until when, and "I'm a nurse"."""

from __future__ import annotations

import re

from ..offline_rules import _ARTICLE, _FAN_VALUE, IDENTITY_NOUNS, Claim, _job_value, _object_ok, _self_job, _trim
from .registry import Reader, Rule, V, ex, pattern

R_WORK_HOME = pattern(r"^I (?:work|am working) from home\b")
R_WORK_AT = pattern(r"^I (?:work|am working|have worked|have been working) (?:at|for) (?P<v>.+?)(?: as (?P<job>.+))?$")
R_WORK_AS = pattern(r"^I (?:work|am working|have worked|have been working) as (?P<v>.+?)(?: (?:at|for) (?P<emp>.+))?$")
R_WORKED = pattern(rf"^I (?:worked|used to work) (?:at|for) {V}")
R_BECAME = pattern(r"^I (?:became|got a job as|started working as|am working as) (?P<v>an? .+)")
R_PROMOTED = pattern(rf"^I (?:got|was|have been) promoted to {V}")
R_JOINED = pattern(rf"^I (?:joined|started (?:a new job |working )?at|got a (?:new )?job at) {V}")
R_QUIT = pattern(rf"^I (?:quit|left) (?:my job at )?{V}")
R_AM_A = pattern(r"^I (?:am|have been) (?P<v>an? .+)")

# What "I quit ..." names that is not an employer ("I quit smoking" is a habit ended, read elsewhere).
_QUIT_NOT_EMPLOYERS = ("my job", "it", "that", "work", "smoking", "my firm", "my company")


def _work_home(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    return [Claim("", "works from", "home")]


def _work_at(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    out: list[Claim] = []
    v = _trim(m.group("v"))
    if v:
        out.append(Claim("", "works at", v))
    if m.group("job") and (job := _job_value(m.group("job"))):
        out.append(Claim("", "works as", job))
    return out


def _work_as(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    out: list[Claim] = []
    job = _job_value(m.group("v"))
    if job:
        out.append(Claim("", "works as", job))
    if m.group("emp") and (emp := _trim(m.group("emp"))):
        out.append(Claim("", "works at", emp))
    return out


def _worked(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    v = _trim(m.group("v"))
    return [Claim("", "worked at", v)] if v else []


def _became(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    job = _job_value(m.group("v"))
    return [Claim("", "works as", job)] if job else []


def _promoted(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    v = _trim(m.group("v"))
    return [Claim("", "is", v)] if v else []


def _joined(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    v = _trim(m.group("v"))
    return [Claim("", "works at", v)] if v else []


def _quit(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    v = _trim(m.group("v"))
    if v and v.casefold() not in _QUIT_NOT_EMPLOYERS:
        return [Claim("", "works at", v, negated=True)]
    return []


def _am_a(m: re.Match[str], clause: str, read: Reader) -> list[Claim] | None:
    raw = re.sub(r"^(an?) (?:total|real|bit of an?|complete|proper|keen)\s+", r"\1 ", m.group("v"), flags=re.IGNORECASE)
    ident = _trim(raw)
    if _ARTICLE.sub("", ident.casefold()) in IDENTITY_NOUNS:
        return [Claim("", "is", ident)]
    if fan := _FAN_VALUE.match(ident.casefold()):
        return [Claim("", "is", ident)] if _object_ok(fan.group(1)) else []
    return _self_job(m.group("v"))


RULES = (
    Rule(
        "work_home",
        R_WORK_HOME,
        _work_home,
        (ex("I work from home", "User works from home"),),
        why_here="before work_at: 'from home' is not an employer",
    ),
    Rule(
        "work_at",
        R_WORK_AT,
        _work_at,
        (
            ex("I work at Google", "User works at Google"),
            ex("I work for Arup as an engineer", "User works at Arup", "User works as an engineer"),
        ),
    ),
    Rule(
        "work_as",
        R_WORK_AS,
        _work_as,
        (
            ex("I work as a nurse", "User works as a nurse"),
            ex("I work as a nurse at St Mary's", "User works as a nurse", "User works at St Mary's"),
        ),
    ),
    Rule("worked", R_WORKED, _worked, (ex("I used to work at IBM", "User worked at IBM"),)),
    Rule("became", R_BECAME, _became, (ex("I became a teacher", "User works as a teacher"),)),
    Rule("promoted", R_PROMOTED, _promoted, (ex("I got promoted to team lead", "User is team lead"),)),
    Rule("joined", R_JOINED, _joined, (ex("I joined Etihad", "User works at Etihad"),)),
    Rule(
        "quit",
        R_QUIT,
        _quit,
        (ex("I quit Emirates", "User no longer works at Emirates"), ex("I quit my job")),
        why_here="before have and the habit rules: 'I quit smoking' stops here and says nothing of work",
    ),
    Rule(
        "am_a",
        R_AM_A,
        _am_a,
        (
            ex("I am a nurse", "User works as a nurse"),
            ex("I am a night owl", "User is a night owl"),
            ex("I am a big fan of jazz", "User is a big fan of jazz"),
        ),
        why_here="after the diet, allergy and name rules, which read 'I am a ...' more narrowly",
    ),
)

"""Special categories of personal data (GDPR article 9, plus criminal records, article 10).

A candidate about one of these carries `category` (a column of `candidates`). The reviewer sees it
as a badge and can filter on it, and no review policy may ever approve such a candidate: that rule
is `is_special(cand.category)`, one line in a policy's verdict.

Where the label comes from: the LLM extractor's own `category` when the model gives one of
CATEGORIES, else these offline rules, applied to the statement at insert (the storage layer calls
`category_of` for every candidate, whatever path queued it: extraction, a curator, an agent).
The rules are deliberately wide (a false badge costs a reviewer a glance; a missed one lets a
policy approve a health fact unseen), and match whole words so "pharmacist" is not "pharma"-health
and "party" alone is not politics.
"""

from __future__ import annotations

import re
from typing import Final

CATEGORIES: Final = (
    "health",
    "religion",
    "sexual_orientation",
    "ethnic_origin",
    "political_opinion",
    "trade_union",
    "genetic_biometric",
    "criminal_record",
)
"""Every value `category` may hold (None: no special category)."""

ANY_SPECIAL: Final = "any"
"""The queue filter value meaning "any special category" (`category IS NOT NULL`)."""

_RULES: Final[tuple[tuple[str, re.Pattern[str]], ...]] = tuple(
    (name, re.compile(r"(?i)\b(?:" + pattern + r")\b"))
    for name, pattern in (
        (
            "health",
            r"allerg\w*|diabet\w*|asthma\w*|cancer|tumou?r|depress\w*|anxiety|adhd|autis\w*|epilep\w*|"
            r"migraines?|arthritis|hiv|aids|pregnan\w*|miscarriage|disabilit\w*|disabled|wheelchair|"
            r"therap(?:y|ist)|psychiatr\w*|antidepressants?|insulin|medication|prescri\w*|chemo\w*|"
            r"surgery|diagnos\w*|illness|disease|disorder|bipolar|schizophreni\w*|ptsd|celiac|coeliac|"
            r"lactose intolerant|intoleran\w*|blood pressure|heart condition|rehab|sober|alcoholi\w*|"
            r"addict\w*|eating disorder|anorexi\w*|bulimi\w*|chronic \w+",
        ),
        (
            "religion",
            r"christian\w*|catholic\w*|protestant\w*|muslim\w*|islam\w*|jewish|judaism|jew|hindu\w*|"
            r"buddhis\w*|sikh\w*|atheis\w*|agnostic|church|mosque|synagogue|ramadan|kosher|halal|"
            r"pray\w*|religio\w*|faith|mormon\w*|jehovah'?s witness|evangelical|orthodox|baptist|quaker",
        ),
        (
            "sexual_orientation",
            r"gay|lesbian|bisexual|queer|homosexual|heterosexual|asexual|pansexual|transgender|"
            r"non-binary|nonbinary|sexual orientation|sex life|same-sex|came out",
        ),
        (
            "ethnic_origin",
            r"ethnic\w*|racial\w*|asian|hispanic|latin[oax]|caucasian|arab|indigenous|aboriginal|"
            r"romani|mixed race|african american|black british",
        ),
        (
            "political_opinion",
            r"vote[sd]? for|voting for|democrat\w*|republican\w*|labour|tory|tories|conservatives?|"
            r"socialis\w*|communis\w*|libertarian|green party|left-wing|right-wing|politic\w*|"
            r"activis\w*|protests?",
        ),
        ("trade_union", r"trade union|union member\w*|unionis\w*|union rep\w*|labor union|shop steward"),
        (
            "genetic_biometric",
            r"dna|genetic\w*|genome|23andme|brca\d?|fingerprints?|face ?id|facial recognition|"
            r"retina\w*|iris scan|biometric\w*|voiceprint",
        ),
        (
            "criminal_record",
            r"convict\w*|criminal record|arrest\w*|prison|jail\w*|parole|probation|felon\w*|"
            r"sentenced|offen[cs]e|charged with|court case|dui|dwi",
        ),
    )
)


def offline_category(statement: str) -> str | None:
    """The first special category whose rule matches the statement, or None."""
    for name, rule in _RULES:
        if rule.search(statement):
            return name
    return None


def normalised(label: object) -> str | None:
    """A model's label as one of CATEGORIES, or None (an unknown label is not trusted)."""
    if not isinstance(label, str):
        return None
    text = label.strip().lower().replace(" ", "_").replace("-", "_")
    return text if text in CATEGORIES else None


def category_of(statement: str, label: object = None) -> str | None:
    """The category stored on a candidate: the model's label when it is one of CATEGORIES, else
    the offline rules on the statement."""
    return normalised(label) or offline_category(statement)


def is_special(category: str | None) -> bool:
    """True for a special-category candidate: no policy may approve it (it always reaches a person)."""
    return category is not None

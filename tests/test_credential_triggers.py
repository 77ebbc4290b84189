"""The detectors' prefilters skip work, never a secret.

`engine/credentials/detect.py` reads a text with each family of detectors (structured numbers and
keys, vendor key shapes, secrets said in words) only when that family's trigger finds what every
one of its patterns needs (`detect.families`). That is sound only if every text a family finds
something in passes its trigger: checked here over every sentence of the detector benchmark's
corpora (dev and held-out, secrets and harmless controls), each also in upper case and as its
value key (what the storage guard sees in the `key` column), and over hand-written cases of each
family, which are positive controls: each IS that family's finding.
"""

from __future__ import annotations

import importlib.util
import random
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine.credentials.detect as detect
import engine.credentials.prose as prose
import engine.credentials.structured as structured
import engine.credentials.vendor as vendor
from engine.credentials import findings, redact_text
from engine.credentials.view import view_of
from engine.gate import looks_like, marks_note, may_replace, near_tombstone
from engine.models import MARK_NOTE
from engine.text import value_key

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "benchmarks" / "data" / "detectors"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("detectors_benchmark", ROOT / "benchmarks" / "detectors.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sentences() -> list[str]:
    bench = _bench()
    rng = random.Random("trigger-test")
    out: list[str] = []
    for path in sorted(CORPUS.glob("credentials_*.tsv")):
        for row in bench.load(path):
            out.append(re.sub(r"\{(\w+)\}", lambda m: bench.fake(m.group(1), rng), row[-1]))
    return out


HAND = {
    "prose": [
        "my wifi is Quokka2291",
        "the WLAN-Schlüssel lautet sonne-mond-77",
        "sort code 12-34-56",
        "User's account number is 12 34 56 78",
        "numéro de compte: 1234 5678 90",
        "número de cuenta 1234-5678-90",
        "ana@example.com:Hunter22",
        "the login for the drive is admin / Quokka!2291",
        "I use 'Summer2023!' as my password",
        "G-123456 is your Google verification code",
        "card verification value 123",
        "the safe combination is 12-34-56",
        "changed my PIN to 4410",
        "api_key=ab12cd34ef56gh78",
        "Türcode ist 4471",
        "código de acceso: 8842",
    ],
    "vendor": [
        "the bot token is 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1",
        "key 0123456789abcdef0123456789abcdef-us12",
        "SKabcdefabcdefabcdefabcdefabcdefab",
        "https://bob:Quokka2291@db.example.com/x",
        "Authorization: Basic dXNlcjpwYXNz",
        "xoxb-1234567890-abc",
        "sk_live_abcdefghij1",
    ],
    "structured": [
        "JG 10 37 59 A",
        "RSSMRA85T10A562S",
        "XK7PA-QQMAB-BCDEF-FGHJ2-KLMNP",
        "NO93 8601 1117 947",
        "4111 1111 1111 1111",
    ],
}


def _structured_ids(text: str) -> Iterable[tuple[int, int, str]]:
    """The structured family but for seed phrases, which have their own rule (any long text)."""
    return [f for f in structured.find(text) if f[2] != "seed phrase"]


FAMILIES: dict[str, tuple[Callable[[str], Iterable[tuple[int, int, str]]], Callable[..., object], int]] = {
    # name: (what the family finds, the detector `families` must name, real findings at least)
    "prose": (prose.find, prose.find, 150),
    "vendor": (vendor.find, vendor.find, 60),
    "structured": (_structured_ids, structured.find, 60),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_each_hand_case_is_its_familys_finding_and_triggers_it(family: str) -> None:
    finds, detector, _ = FAMILIES[family]
    for text in HAND[family]:
        assert list(finds(view_of(text).text)), text
        assert detector in detect.families(text), text
        assert findings(text), text


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_no_text_a_family_finds_something_in_skips_that_family(family: str) -> None:
    finds, detector, least = FAMILIES[family]
    texts = _sentences() + [t for cases in HAND.values() for t in cases]
    assert len(texts) > 400
    found = 0
    for base in texts:
        for text in (base, base.upper(), value_key(base)):
            if list(finds(view_of(text).text)):
                found += 1
                assert detector in detect.families(text), text
    assert found > least  # the property was tested on many real findings, not on none


def test_a_dated_statement_reaches_no_detector_and_a_card_in_it_still_does() -> None:
    """What the split buys: "since 2015 (note 70)" reaches no family (no number's shape, no stem, no
    long token); the same text with a card number reaches the structured one, and with a run of
    seven digits the structured family reads it again (control)."""
    dated = "User collects magnets from Iceland since 2015 (note 7)"
    assert detect.families(dated) == ()
    assert findings(dated) == []
    card = dated + ", card 4111 1111 1111 1111"
    assert structured.find in detect.families(card)
    assert [f.kind for f in findings(card)] == ["card number"]
    assert detect.families(dated.replace("note 7", "note 70")) == ()
    assert detect.families(dated.replace("note 7", "note 7012345")) == (structured.find,)


def test_bank_details_written_with_separators_are_found() -> None:
    """Before the bank words joined the triggers, "12 34 56 78" (no three digits in a row) with
    "account number" reached no detector at all."""
    assert findings("User's account number is 12 34 56 78")
    assert findings("User's account number is private") == []  # control: the words alone
    assert findings("User's account is 12 years old") == []


_LOOKAROUND = re.compile(r"\(\?<?[!=][^()]*\)")
# Every pattern of the structured family that reads a number, as the detector writes it: a text
# holding any match of one (its checksum aside) must reach the family.
NUMBER_PATTERNS = {
    "card grouped": structured._CARD_GROUPED.pattern,
    "card run": structured._CARD_RUN.pattern,
    "IBAN": structured._IBAN_START.pattern + structured._IBAN_BODY.pattern,
    "SSN": structured._SSN.pattern,
    "CPF": structured._CPF.pattern,
    "DNI / NIE": structured._DNI.pattern,
    "NIR": structured._NIR.pattern,
    "codice fiscale": structured._CODICE.pattern,
    "NINO": structured._NINO.pattern,
    "value after an ID keyword": r"[A-Za-z]{0,2}[\d][\d .\-]{6,20}[\dA-Za-z]",
}


def _ascii_digits(pattern: str) -> str:
    """`pattern` with each \\d read as 0-9 (inside a class) or [0-9] (outside one)."""
    out, in_class, i = [], False, 0
    while i < len(pattern):
        pair = pattern[i : i + 2]
        if pair == r"\d":
            out.append("0-9" if in_class else "[0-9]")
            i += 2
            continue
        if pattern[i] == "\\":
            out.append(pair)
            i += 2
            continue
        in_class = (in_class or pattern[i] == "[") and not (in_class and pattern[i] == "]")
        out.append(pattern[i])
        i += 1
    return "".join(out)


@pytest.mark.parametrize("name", sorted(NUMBER_PATTERNS))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_number_shape_of_the_structured_family_triggers_it(name: str, data: st.DataObject) -> None:
    """Drawn from the detector's own pattern (lookarounds dropped; ASCII digits, as texts are typed)
    and set inside a sentence whose other words carry no stem: the number alone must trigger."""
    core = _ascii_digits(_LOOKAROUND.sub("", NUMBER_PATTERNS[name]))
    number = data.draw(st.from_regex(core, fullmatch=True))
    before = data.draw(st.sampled_from(["User wrote ", "it is ", "", "Noted: ", "Iceland "]))
    text = f"{before}{number} (note 7)"
    assert re.search(core, view_of(text).text)
    assert structured.find in detect.families(text), text
    assert structured.find in detect.families(text.upper()), text


def test_fact_ids_and_dates_do_not_reach_the_structured_family_and_a_number_still_does() -> None:
    """The number shape, not a digit count: an import's audit note naming six-digit fact ids and a
    dated statement reach no family; the same note with a seven-digit run does (control)."""
    note = "looks like fact #103925: User plays the viola since 2012 (note 57); may replace fact #103926: x"
    assert structured.find not in detect.families(note)
    assert structured.find in detect.families(note.replace("#103925", "#1039251"))
    assert structured.find in detect.families("User's NI number is 12 34 56 7")


_ID = st.integers(min_value=-(10**11) + 1, max_value=10**11 - 1)
_REFERENCES = [
    lambda i: f"looks like fact #{i}",
    lambda i: f"may replace fact #{i}",
    lambda i: f"says the same as fact #{i} (the same claim)",
    lambda i: f"the judge reads it as the same as fact #{i}",
    lambda i: f"near a rejected value, tombstone #{i}",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(range(len(_REFERENCES))), _ID), min_size=1, max_size=6))
def test_an_audit_note_of_marks_holds_nothing_any_detector_finds(parts: list[tuple[int, int]]) -> None:
    """The guard passes a MARK_NOTE unread: sound only because no detector, asked directly (not
    through its trigger), finds anything in one."""
    note = "; ".join(_REFERENCES[k](i) for k, i in parts)
    assert MARK_NOTE.fullmatch(note)
    view = view_of(note).text
    for find in (structured.find, vendor.find, prose.find):
        assert list(find(view)) == [], (find, note)
    assert redact_text(note) == (note, ())


def test_what_the_engine_writes_is_a_mark_note_and_a_card_after_a_hash_is_not() -> None:
    """Positive control: the gate's marks, whatever their statements hold, make a note the fast
    path recognises; a number a card could be (13 digits or more) is no id of a note, and is read."""
    secret = "User's card is 4111 1111 1111 1111"
    marks = (looks_like("knowledge", 12, secret), may_replace(34, secret, "why"), near_tombstone(5, secret))
    note = marks_note(marks)
    assert note == "looks like fact #12; may replace fact #34; near a rejected value, tombstone #5"
    assert MARK_NOTE.fullmatch(note)
    forged = "looks like fact #4111111111111111"
    assert MARK_NOTE.fullmatch(forged) is None
    assert redact_text(forged)[1] == (("card number", 1),)

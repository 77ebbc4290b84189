"""The detectors' prefilters skip work, never a secret.

`engine/credentials/detect.py` reads a text with the prose detector only when `_PROSE_TRIGGER`
finds a stem in it, and with the vendor detector only when `_VENDOR_TRIGGER` finds a long token
run or a URL or basic-auth marker. That is sound only if every text the detector finds something
in matches its trigger: checked here over every sentence of the detector benchmark's corpora (dev and
held-out, secrets and harmless controls), each also in upper case and as its value key (what the
storage guard sees in the `key` column), and over hand-written cases per prose family.
"""

from __future__ import annotations

import importlib.util
import random
import re
from pathlib import Path
from types import ModuleType

import pytest

import engine.credentials.detect as detect
import engine.credentials.prose as prose
import engine.credentials.structured as structured
import engine.credentials.vendor as vendor
from engine.credentials import findings
from engine.credentials.view import view_of
from engine.text import canonical, value_key

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


HAND = [
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
]


def _probe(text: str) -> str:
    return text.lower() if text.isascii() else canonical(text)


@pytest.mark.parametrize("text", HAND)
def test_each_prose_family_is_found_and_triggers(text: str) -> None:
    """Positive control: each hand case IS a prose finding, so the next test's property is not
    vacuous for these families."""
    assert list(prose.find(view_of(text).text)), text
    assert detect._PROSE_TRIGGER.search(_probe(text)) is not None
    assert findings(text), text


def test_no_text_the_prose_detector_reads_lacks_a_trigger_stem() -> None:
    texts = _sentences() + HAND
    assert len(texts) > 400
    found = 0
    for base in texts:
        for text in (base, base.upper(), value_key(base)):
            if list(prose.find(view_of(text).text)):
                found += 1
                assert detect._PROSE_TRIGGER.search(_probe(text)) is not None, text
    assert found > 150  # the property was tested on many real prose findings, not on none


def test_a_dated_statement_skips_prose_but_not_the_structured_detectors() -> None:
    """What the split buys: "since 2015" reaches the detectors by its digits; a card number in such
    a text is still found (structured), and the same text without one finds nothing."""
    assert detect._PROSE_TRIGGER.search("User collects magnets from Iceland since 2015") is None
    assert detect._VENDOR_TRIGGER.search("User collects magnets from Iceland since 2015") is None
    assert findings("User collects magnets from Iceland since 2015") == []
    card = "User collects magnets from Iceland since 2015, card 4111 1111 1111 1111"
    assert [f.kind for f in findings(card)]


def test_bank_details_written_with_separators_are_found() -> None:
    """Before the bank words joined the trigger, "12 34 56 78" (no three digits in a row) with
    "account number" reached no detector at all."""
    assert findings("User's account number is 12 34 56 78")
    assert findings("User's account number is private") == []  # control: the words alone
    assert findings("User's account is 12 years old") == []


VENDOR_HAND = [
    "the bot token is 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1",
    "key 0123456789abcdef0123456789abcdef-us12",
    "SKabcdefabcdefabcdefabcdefabcdefab",
    "https://bob:Quokka2291@db.example.com/x",
    "Authorization: Basic dXNlcjpwYXNz",
    "xoxb-1234567890-abc",
    "sk_live_abcdefghij1",
]


@pytest.mark.parametrize("text", VENDOR_HAND)
def test_each_vendor_shape_is_found_and_triggers(text: str) -> None:
    assert list(vendor.find(view_of(text).text)) or findings(text), text
    assert detect._VENDOR_TRIGGER.search(_probe(text)) is not None
    assert findings(text), text


def test_no_text_the_vendor_detector_reads_lacks_its_trigger() -> None:
    texts = _sentences() + HAND + VENDOR_HAND
    found = 0
    for base in texts:
        for text in (base, base.upper(), value_key(base)):
            if list(vendor.find(view_of(text).text)):
                found += 1
                assert detect._VENDOR_TRIGGER.search(_probe(text)) is not None, text
    assert found > 60


def _structured_runs(probe: str) -> bool:
    return (
        sum(map(str.isdecimal, probe)) >= detect._ENOUGH_DIGITS
        or detect._TRIGGER.search(probe) is not None
        or detect._PRODUCT_SHAPE.search(probe) is not None
    )


STRUCTURED_HAND = [
    "JG 10 37 59 A",
    "RSSMRA85T10A562S",
    "XK7PA-QQMAB-BCDEF-FGHJ2-KLMNP",
    "NO93 8601 1117 947",
    "4111 1111 1111 1111",
]


@pytest.mark.parametrize("text", STRUCTURED_HAND)
def test_each_structured_shape_is_found_and_triggers(text: str) -> None:
    assert list(structured.find(view_of(text).text)), text
    assert _structured_runs(_probe(text))
    assert findings(text), text


def test_no_text_the_structured_detector_reads_lacks_its_trigger() -> None:
    """Seed phrases aside (their own rule: any text of twelve words)."""
    texts = _sentences() + HAND + VENDOR_HAND + STRUCTURED_HAND
    found = 0
    for base in texts:
        for text in (base, base.upper(), value_key(base)):
            kinds = {kind for _, _, kind in structured.find(view_of(text).text)} - {"seed phrase"}
            if kinds:
                found += 1
                assert _structured_runs(_probe(text)), text
    assert found > 60


def test_a_short_number_with_a_three_digit_run_is_not_read_for_ids() -> None:
    """The six-digit rule's control: "note 120" alone reaches no detector, while six digits do."""
    assert not _structured_runs("user has 120 plants")
    assert _structured_runs("user's number is 123456")

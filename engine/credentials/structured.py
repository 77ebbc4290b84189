"""Secrets with a structure that checks itself: private-key blocks, passwords in connection
strings, payment card numbers, IBANs, national identity numbers, wallet seed phrases.

Checksums come from python-stdnum (Luhn for cards, ISO 7064 mod 97 for IBANs, each country's own
rule for identity numbers), so a 16-digit order number is kept unless it is Luhn-valid with a
card issuer's prefix. Numbers whose format alone is ambiguous (9 or 11 bare digits) are taken only
after a keyword that names them ("SSN", "CPF", "BSN", ...).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import cache
from importlib import resources

from stdnum import iban, luhn
from stdnum.br import cpf
from stdnum.es import dni, nie
from stdnum.fr import nir
from stdnum.it import codicefiscale
from stdnum.us import ssn

_PRIVATE_KEY = re.compile(
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)
_PUTTY_KEY = re.compile(r"PuTTY-User-Key-File-\d:.*?(?:Private-MAC: \S+|\Z)", re.DOTALL)
# scheme://user:PASSWORD@host: only the password goes, so the host and user stay readable.
_URL_PASSWORD = re.compile(r"(?i)\b[a-z][a-z0-9+.\-]{1,24}://[^\s:/@]*:([^\s@/]+)@[\w.\-\[\]]")

# Grouped by spaces, dashes or dots ("4111.1111.1111.1111" was stored whole until a developer's
# import held one), the same separator throughout.
_CARD_GROUPED = re.compile(r"(?<![\d.,])(?:\d{4}([ \-.])\d{4}\1\d{4}\1\d{1,7}|\d{4}([ \-.])\d{6}\2\d{4,5})(?![\d])")
_CARD_RUN = re.compile(r"(?<![\d.,/\-])\d{13,19}(?![\d]|[.,]\d)")
_ISSUER = re.compile(r"^(?:4|5[1-5]|2[2-7]|3[47]|3[0689]|6[0-9]|50)")
_CARD_WORD = re.compile(
    r"(?i)\b(?:card|cc|visa|master ?card|amex|american express|discover|debit|credit|carte|cb|tarjeta|"
    r"karte|kreditkarte|cart[aã]o|pan)\b"
)

_IBAN_START = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?=[ A-Za-z0-9]{11})")
_IBAN_BODY = re.compile(r"[A-Za-z0-9 ]{11,42}")

_SSN = re.compile(r"(?<![\d\-])\d{3}-\d{2}-\d{4}(?![\d\-])")
_CPF = re.compile(r"(?<![\d.])\d{3}\.\d{3}\.\d{3}-\d{2}(?!\d)")
_DNI = re.compile(r"(?<![A-Za-z0-9])(?:\d{8}-?[A-Za-z]|[XYZxyz]-?\d{7}-?[A-Za-z])(?![A-Za-z0-9])")
_NIR = re.compile(r"(?<![\d ])[12] ?\d{2} ?\d{2} ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3} ?\d{2}(?![\d])")
_CODICE = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{6}\d{2}[A-Za-z]\d{2}[A-Za-z]\d{3}[A-Za-z](?![A-Za-z0-9])")
_NINO = re.compile(
    r"(?<![A-Za-z0-9])(?!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]"
    r" ?\d{2} ?\d{2} ?\d{2} ?[A-D](?![A-Za-z0-9])"
)
# A keyword naming an identity number, then (after a few non-digit characters) the number.
_ID_KEYWORD_SOURCE = (
    r"\b(?:ssn|social[ \-]security(?: number| no\.?| #)?|(?:my|his|her|their|your) social|"
    r"sin|social insurance number|bsn|burgerservicenummer|"
    r"national insurance(?: number| no\.?)?|ni number|nino|nir|num[eé]ro de s[eé]curit[eé] sociale|"
    r"s[eé]cu(?:rit[eé] sociale)?|steuer-?id|steuer-?identifikationsnummer|steuernummer|idnr|"
    r"sozialversicherungsnummer|personalausweis(?:nummer)?|nif|cpf|dni|nie|nss|codice fiscale|"
    r"n[uú]mero de (?:contribuinte|identidade|seguridad social|seguran[cç]a social)|"
    r"tax id|itin|personnummer|pesel|identity number)\b"
    r"[^\d\n]{0,30}?([A-Za-z]{0,2}[\d][\d .\-]{6,20}[\dA-Za-z])(?![\dA-Za-z])"
)
_ID_KEYWORD = re.compile("(?i)" + _ID_KEYWORD_SOURCE)
# The same on an ASCII text's lower-case copy (same offsets): a case-blind alternation is slow in `re`.
_ID_KEYWORD_LOWER = re.compile(_ID_KEYWORD_SOURCE)

# A licence or product key: four or more dash-joined groups of 4-5 letters and digits (XK7P-99QM-...).
_PRODUCT_KEY = re.compile(
    r"(?<![A-Za-z0-9\-])(?=[A-Z0-9\-]*\d)(?=[A-Z0-9\-]*[A-Z])[A-Z0-9]{4,5}(?:-[A-Z0-9]{4,5}){3,7}(?![A-Za-z0-9\-])"
)
_SEED_KEYWORD = re.compile(
    r"(?i)\b(?:seed(?: phrase| words)?|recovery (?:phrase|words|seed)|mnemonic|secret recovery phrase|"
    r"wallet (?:words|phrase)|backup phrase|phrase de r[eé]cup[eé]ration|wiederherstellungsphrase|"
    r"frase (?:semilla|de recupera[cç][aã]o|de recuperaci[oó]n))\b"
)
_WORD = re.compile(r"[A-Za-z]+")
_SEED_GAP = re.compile(r"[\s,;\-]*(?:\d{1,2}[.):]?[\s,;\-]*)?")


@cache
def _bip39() -> frozenset[str]:
    raw = resources.files("mnemonic").joinpath("wordlist/english.txt").read_text(encoding="utf-8")
    return frozenset(raw.split())


def _cards(text: str) -> Iterator[tuple[int, int, str]]:
    for m in _CARD_GROUPED.finditer(text):
        digits = re.sub(r"\D", "", m.group(0))
        if 13 <= len(digits) <= 19 and _ISSUER.match(digits) and luhn.is_valid(digits):
            yield m.start(), m.end(), "card number"
    for m in _CARD_RUN.finditer(text):
        digits = m.group(0)
        if not (_ISSUER.match(digits) and luhn.is_valid(digits)):
            continue
        if len(digits) in (15, 16) or _CARD_WORD.search(text[max(0, m.start() - 50) : m.start()]):
            yield m.start(), m.end(), "card number"


def _ibans(text: str) -> Iterator[tuple[int, int, str]]:
    for m in _IBAN_START.finditer(text):
        body = _IBAN_BODY.match(text, m.start())
        if body is None:
            continue
        chunk = body.group(0).rstrip()
        # The longest prefix that is a valid IBAN: the run may carry on into the next words.
        for end in range(len(chunk), 14, -1):
            if chunk[end - 1] == " " or (end < len(chunk) and chunk[end].isalnum()):
                continue
            candidate = chunk[:end]
            if iban.is_valid(candidate.replace(" ", "")):
                yield m.start(), m.start() + end, "IBAN"
                break


def _checked(
    pattern: re.Pattern[str], valid: Callable[[str], bool], kind: str, text: str
) -> Iterator[tuple[int, int, str]]:
    for m in pattern.finditer(text):
        if valid(m.group(0)):
            yield m.start(), m.end(), kind


def seed_phrases(text: str) -> Iterator[tuple[int, int, str]]:
    """Wallet seed phrases alone (what a text with no other trigger is still searched for)."""
    return _seed(text)


_SEED_MIN = 6
"""The fewest words a seed phrase is taken at (a labelled one; an unlabelled one needs twelve)."""


def _seed(text: str) -> Iterator[tuple[int, int, str]]:
    words = _bip39()
    # a run is at least six lower-case list words in a row (with gaps the walk below checks): most
    # texts have no such row, and finding that is a fraction of walking the words with their gaps
    longest = streak = 0
    for w in _WORD.findall(text):  # the longest run of list words, gaps not yet checked: a bound
        streak = streak + 1 if w in words else 0
        longest = max(longest, streak)
    if longest < _SEED_MIN:
        return
    run: list[re.Match[str]] = []
    keyword_ends = [m.end() for m in _SEED_KEYWORD.finditer(text)]

    def flush() -> Iterator[tuple[int, int, str]]:
        if not run:
            return
        labelled = any(0 <= run[0].start() - end <= 40 for end in keyword_ends)
        if len(run) >= 12 or (labelled and len(run) >= _SEED_MIN):
            yield run[0].start(), run[-1].end(), "seed phrase"

    last_end = 0
    for m in _WORD.finditer(text):
        word = m.group(0)
        joined = bool(run) and _SEED_GAP.fullmatch(text[last_end : m.start()]) is not None
        if word.lower() in words and word.islower() and (joined or not run):
            run.append(m)
        else:
            yield from flush()
            run = [m] if word.lower() in words and word.islower() else []
        last_end = m.end()
    yield from flush()


def _keyword_ids(text: str) -> Iterator[tuple[int, int, str]]:
    matches = _ID_KEYWORD_LOWER.finditer(text.lower()) if text.isascii() else _ID_KEYWORD.finditer(text)
    for m in matches:
        value = text[m.start(1) : m.end(1)]
        if sum(ch.isdigit() for ch in value) >= 6:
            yield m.start(1), m.end(1), "national identity number"


def find(text: str) -> Iterator[tuple[int, int, str]]:
    for m in _PRODUCT_KEY.finditer(text):
        yield m.start(), m.end(), "secret key"
    for m in _PRIVATE_KEY.finditer(text):
        yield m.start(), m.end(), "private key"
    for m in _PUTTY_KEY.finditer(text):
        yield m.start(), m.end(), "private key"
    for m in _URL_PASSWORD.finditer(text):
        yield m.start(1), m.end(1), "password in connection string"
    if any(ch.isdigit() for ch in text):
        yield from _cards(text)
        yield from _ibans(text)
        yield from _checked(_SSN, ssn.is_valid, "national identity number", text)
        yield from _checked(_CPF, cpf.is_valid, "national identity number", text)
        yield from _checked(_DNI, lambda v: dni.is_valid(v) or nie.is_valid(v), "national identity number", text)
        yield from _checked(_NIR, nir.is_valid, "national identity number", text)
        yield from _checked(_CODICE, codicefiscale.is_valid, "national identity number", text)
        yield from _checked(_NINO, lambda v: True, "national identity number", text)
        yield from _keyword_ids(text)
    yield from _seed(text)

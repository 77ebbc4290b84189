"""Secrets said in words: a keyword that names a secret, a link ("is", ":", "est", "ist", "es",
"é", ...), then the value, in English, French, German, Spanish and Portuguese.

Caught whatever the value's entropy (a 4-digit PIN or `hunter2` has none to speak of): the keyword
carries the meaning. What keeps ordinary talk ("my password is too long", "the secret to good bread
is patience", "the zip code is 90210") is the value's shape, per family:

- passwords: a quoted value is always taken (inside the quotes); an unquoted one is taken unless
  its first word is a function word or a word that describes a password ("weak", "expired", "on",
  "the same"); words after it are taken while they read like a passphrase (lower-case words, no
  function word, up to the clause's end).
- PINs and codes (door, gate, alarm, one-time, verification, backup, CVV): digits (3 to 12, with
  `#`, `*`, `-` or spaces), or a short code holding a digit; several backup codes in a row are all
  taken. "Code" alone counts unless a word before it makes it an ordinary code (zip, area, error,
  dress, promo, ...).
- API secrets (`api_key=`, "the token is ..."): a value of 8+ characters mixing letters and
  digits, or 16+ of any key characters.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from importlib import resources

_QUOTED = (
    r"(?:\"(?P<q1>[^\"\n]{1,100})\"|''(?P<q2>[^'\n]{1,100})''|'(?P<q3>[^'\n]{1,100})'|«\s?(?P<q4>[^»\n]{1,100}?)\s?»"
    r"|„(?P<q5>[^\"'“”\n]{1,100})(?:''|\"|“|”)|`(?P<q6>[^`\n]{1,100})`)"
)
_LINK = (
    r"(?:\s*(?::|=|-+>|→)\s*|\s+(?:(?:(?:is|was|has\s+been|have\s+been|got)\s+)?(?:changed|set|updated|reset)\s+to|is(?:\s+now)?"
    r"|was|are|were|will\s+be|=|est|sont|c'est|ist|sind|lautet|lauten|war|es|son|era|ser[aá]|[ée]|s[ãa]o|fica"
    r"|sigue\s+siendo)"
    r"(?:\s*:)?\s+|['’]s\s+)(?:(?:still|now|currently|actually|just|always)\s+)?"
)
_FILL_WORD = r"(?!(?:is|was|est|ist|es|é|era|lautet|and|et|und|y|but)\b)[^\W\d][\w'\-]*"
_FILL = r"(?P<fill>(?:\s+" + _FILL_WORD + r"){0,5}?)"

_PASSWORD_KW = (
    r"pass(?:word|words|wd|phrase|code)?|pwd|pw|mot\s+de\s+passe|mdp|passwort|kennwort|contrase[ñn]a|clave|"
    r"senha|palavra[\s\-]passe|wi-?fi\s+key|wlan-?schl[üu]ssel|network\s+key|netzwerkschl[üu]ssel|wi-?fi|wlan"
)
_CODE_KW = (
    r"pins?|pin\s+(?:code|number)|pin-?code|code\s+pin|pin-?nummer|geheimzahl|passcode|"
    r"(?:door|gate|alarm|entry|access|keypad|garage|building|lock|locker|safe|key\s*safe|lockbox|padlock|"
    r"security|verification|one[\s\-]time|otp|2fa|mfa|auth(?:entication)?|login|sign[\s\-]in|backup|recovery|"
    r"unlock|phone|bike\s+lock|wifi|wi-fi)\s+codes?|otp|totp|cvv2?|cvc2?|csc|card\s+verification\s+(?:value|code)|"
    r"(?:safe|lock)\s+combination|combination|(?:safe|lock|locker|padlock|bike\s+lock)\s+combo|digicode|code\s+(?:secret|confidentiel|d'acc[eè]s|d'entr[ée]e|"
    r"de\s+la\s+porte|du\s+portail|de\s+l'alarme|wifi|de\s+s[ée]curit[ée]|de\s+v[ée]rification)|"
    r"t[üu]rcode|zugangscode|alarmcode|sicherheitscode|best[äa]tigungscode|einmalcode|"
    r"c[óo]digo(?:\s+(?:de|do|da|del)\s+(?:acceso|acesso|la\s+puerta|port[ãa]o|alarma|alarme|seguridad|"
    r"seguran[çc]a|verificaci[óo]n|verifica[çc][ãa]o))?|"
    r"code|keypad"
)
_API_KW = (
    r"api[\s_\-]?(?:key|secret|token)|apikey|access[\s_\-]?(?:key(?:[\s_\-]?id)?|token)|secret[\s_\-]?(?:key|access[\s_\-]?key)|"
    r"client[\s_\-]?secret|auth[\s_\-]?token|refresh[\s_\-]?token|bearer[\s_\-]?token|session[\s_\-]?token|"
    r"secret|token|private[\s_\-]?key|signing[\s_\-]?(?:key|secret)|webhook[\s_\-]?secret|app[\s_\-]?password|"
    r"license[\s_\-]?key|licence[\s_\-]?key|product[\s_\-]?key|key|cl[ée]\s+(?:api|secr[eè]te)|schl[üu]ssel"
)
# A word just before "code" that makes it an ordinary code.
_ORDINARY_CODE = re.compile(
    r"(?i)\b(?:zip|postal|post|area|country|dialling|dialing|error|status|exit|return|dress|source|promo|promotional|"
    r"discount|coupon|voucher|referral|tracking|bar|qr|morse|iso|tax|sort|swift|bic|product|flight|airport|"
    r"colou?r|language|currency|station|course|class|booking|reservation|confirmation|gift|invite|invitation|"
    r"postcode|cheat|genetic|building's|legal|penal|civil|highway|criminal|machine|program|python|java|the\s+old|"
    r"my\s+own|sample|example|html|css|fiscal|da\s+vinci|bro|honor|honour|ethics|conduct|time|shortcut|"
    r"access\s+to\s+the|station|secret)\s*$"
)

_PASSWORD = re.compile(
    r"(?i)(?<![A-Za-z0-9])(?P<kw>" + _PASSWORD_KW + r")(?![\w\-])" + _FILL + _LINK + r"(?P<rest>.*)", re.S
)
_PASSWORD_BARE = re.compile(
    r"(?i)(?<![\w\-])(?P<kw>password|passwort|mot\s+de\s+passe|senha|contrase[ñn]a|kennwort|pwd)\s+(?P<rest>.*)", re.S
)
_CODE = re.compile(
    r"(?i)(?<![\w\-])(?P<kw>" + _CODE_KW + r")(?![\w\-])" + _FILL + r"(?P<link>" + _LINK + r")(?P<rest>.*)", re.S
)
_CODE_BARE = re.compile(
    r"(?i)(?<![\w\-])(?P<kw>" + _CODE_KW + r")(?![\w\-])(?P<fill>)(?P<link>\s+|\s*#\s*)(?P<rest>.*)", re.S
)
_API = re.compile(r"(?i)(?<![A-Za-z0-9\-])(?P<kw>" + _API_KW + r")(?![\w\-])" + _FILL + _LINK + r"(?P<rest>.*)", re.S)

# Verb first: "set the router password to X", "changed my PIN to 4410".
_SET_TO = re.compile(
    r"(?i)\b(?:set|sets|setting|changed?|changes|changing|reset|resets|resetting|updated?|updates|updating)\s+"
    r"(?:the\s+|my\s+|our\s+|his\s+|her\s+|their\s+|your\s+)?(?:[\w\-]+\s+){0,2}?"
    r"(?P<kw>password|passcode|passphrase|pin|code|mot\s+de\s+passe|passwort|kennwort|contrase[ñn]a|senha)\s+"
    r"(?:back\s+)?to\s+(?P<rest>.*)",
    re.S,
)
_MIXED_WORD = re.compile(r"\s*(?=[^\s,;]*\d)(?=[^\s,;]*[A-Za-z])[^\s,;]{6,}(?:[\s,;.!?]|$)")
# "the login for the drive is admin / Quokka!2291", "ana@example.com:Hunter22": the second of a pair.
_LOGIN_PAIR = re.compile(
    r"(?i)\b(?:login|log-in|credentials|creds|username and password|user and pass(?:word)?|identifiants|zugangsdaten|"
    r"credenciales|credenciais)\b(?:\s+(?:for|to|of|de|du|für|para|do|da)\s+(?:[\w'\-]+\s+){0,3}?)?"
    r"\s*(?:is|are|:|=|est|sont|ist|sind|es|son|é|são)?\s*(?P<user>[^\s/:,]+)\s*(?:/|:|,|\|)\s*(?P<value>\S+)"
)
_EMAIL_PAIR = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+:(?P<value>[^\s@:/]{4,})")
_PASSWORD_WORD = re.compile(r"(?i)" + _PASSWORD_KW)
_MIXED = re.compile(r"\s*(?=\S*\d)(?=\S*[A-Za-z])\S{4,}")
# "I use 'Summer2023!' as my password": the value first.
_AS_MY = re.compile(
    r"(?i)\b(?:use|uses|used|using|set|chose|picked|made)\s+(?P<value>"
    + r"\S+"
    + r")\s+as\s+(?:my|the|our|a|his|her|their)\s+"
    r"(?:[\w\-]+\s+)?(?P<kw>password|passcode|passphrase|pin|code)\b"
)
# "G-123456 is your Google verification code": the code first.
_CODE_FIRST = re.compile(
    r"(?i)(?<![\w\-])(?P<value>(?:[A-Z]-)?\d{4,8})\s+is\s+your\s+(?:[\w\-]+\s+){0,3}?"
    r"(?:verification|security|login|sign-in|one-time|confirmation|access|authentication|2fa|otp)?\s*(?:code|pin|otp)\b"
)
# Bank details: an account number, a sort code, a routing number, after their name.
_BANK = re.compile(
    r"(?i)\b(?:(?:account|acct|a/c)\s+(?:number|no\.?|#)|sort\s+code|routing\s+(?:number|no\.?)|aba\s+number|"
    r"kontonummer|bankleitzahl|blz|num[ée]ro\s+de\s+compte|n[úu]mero\s+de\s+(?:cuenta|conta)|bsb)"
    r"(?P<gap>[^\d\n]{0,20}?)(?P<value>\d[\d \-]{4,20}\d)(?![\d])"
)
_QUOTE_AT = re.compile(r"\s*" + _QUOTED)
_TOKEN = re.compile(r"\S+")
_TRAIL = re.compile(r"[.,;:!?)\]}]+$")
# What a span leaves out at its end: sentence punctuation, but not "!" or "?" (a password may end
# with one, and removing a spoken "!" with it costs nothing).
_SPAN_TRAIL = re.compile(r"[.,;:)\]}]+$")
_CODE_VALUE = re.compile(r"[#*]?(?:\d[\d\s\-#*]{1,16}\d|\d{3,})[#*]?(?![\w])")
_ALNUM_CODE = re.compile(r"(?=[A-Za-z0-9\-]*\d)(?=[A-Za-z0-9\-]*[A-Za-z])[A-Za-z0-9\-]{4,12}(?![\w])")
_CODE_SEP = re.compile(r"\s*(?:,|;|/|and|et|und|y|e|\s)\s*")
_API_VALUE = re.compile(
    r"(?=[A-Za-z0-9_\-./+=:~]*\d)(?=[A-Za-z0-9_\-./+=:~]*[A-Za-z])[A-Za-z0-9_\-./+=:~]{8,}|[A-Za-z0-9_\-./+=~]{16,}"
)


# Word lists kept as data (engine/credentials/data): function words that begin talk ABOUT a
# password ("my password is the same"), and words that describe one ("weak", "printed", "demasiado").
def _words(name: str) -> frozenset[str]:
    raw = resources.files(__package__).joinpath(f"data/{name}.txt").read_text(encoding="utf-8")
    return frozenset(w for line in raw.splitlines() if (w := line.strip()) and not w.startswith("#"))


_FUNCTION = _words("function_words")
_DESCRIBE = _words("describing_words")
_STOP_RUN = _FUNCTION | frozenset({"please", "thanks", "ok", "okay", "lol", "btw", "don't", "dont", "right"})


def _quoted(rest: str, offset: int) -> tuple[int, int] | None:
    m = _QUOTE_AT.match(rest)
    if m is None:
        return None
    for name in ("q1", "q2", "q3", "q4", "q5", "q6"):
        if m.group(name) is not None:
            return offset + m.start(name), offset + m.end(name)
    return None


def _password_value(rest: str, offset: int) -> tuple[int, int] | None:
    """The span of a password at the start of `rest` (see the module docstring)."""
    quoted = _quoted(rest, offset)
    if quoted is not None:
        return quoted
    tokens: list[re.Match[str]] = []
    for m in _TOKEN.finditer(rest):
        if m.start() > 0 and tokens and "\n" in rest[tokens[-1].end() : m.start()]:
            break
        tokens.append(m)
        if len(tokens) >= 8:
            break
    if not tokens:
        return None
    first = tokens[0].group(0)
    core = _TRAIL.sub("", first) or first
    low = core.lower()
    words: list[re.Match[str]] = [tokens[0]]
    ends_clause = core != first
    if not ends_clause:
        for m in tokens[1:]:
            word = m.group(0)
            stripped = _TRAIL.sub("", word)
            if not stripped.isalpha() or not stripped.islower() or stripped in _STOP_RUN or stripped in _DESCRIBE:
                break
            words.append(m)
            if stripped != word:
                break
    # "the password is correct horse battery staple": a run of 4+ plain words is a passphrase even
    # when its first word describes passwords; a function word first never is.
    describes = low in _FUNCTION or low in _DESCRIBE or low.rstrip("'s") in _FUNCTION
    if describes and (len(words) < 4 or low in _FUNCTION):
        return None
    if len(core) < 3 and not any(ch.isdigit() for ch in core):
        return None
    last = words[-1]
    kept = _SPAN_TRAIL.sub("", last.group(0)) or last.group(0)
    end = last.start() + len(kept)
    return offset + tokens[0].start(), offset + end


def _code_value(rest: str, offset: int, linked: bool) -> tuple[int, int] | None:
    """The span of one or more codes at the start of `rest`."""
    quoted = _quoted(rest, offset)
    if quoted is not None and linked:
        return quoted
    at = len(rest) - len(rest.lstrip())
    start = at
    end = None
    while True:
        m = _CODE_VALUE.match(rest, at) or (_ALNUM_CODE.match(rest, at) if linked else None)
        if m is None:
            break
        end = m.end()
        sep = _CODE_SEP.match(rest, end)
        if sep is None or sep.end() == end:
            break
        at = sep.end()
    if end is None:
        return None
    return offset + start, offset + end


def _api_value(rest: str, offset: int, assigned: bool = False) -> tuple[int, int] | None:
    quoted = _quoted(rest, offset)
    if quoted is not None:
        s, e = quoted
        return quoted if e - s >= 6 else None
    lead = len(rest) - len(rest.lstrip())
    m = _API_VALUE.match(rest, lead)
    if m is None:
        return None
    # an assignment's value runs to the next space ("SECRET_KEY=django-insecure-8f!k2l")
    whole = _TOKEN.match(rest, lead) if assigned else None
    value = _SPAN_TRAIL.sub("", whole.group(0) if whole is not None else m.group(0))
    return offset + m.start(), offset + m.start() + len(value)


# Nouns that, right after a secret's name, make the name a modifier of another thing: "the password
# manager is Bitwarden", "the PIN pad is broken", "the code word is pineapple". Such a match is not a
# secret (a relative clause or a preposition, "the code they sent is", "the password for X is", is).
_COMPOUND = _words("compound_nouns")
_PLURAL_LINK = re.compile(r"(?i)^\s+(?:are|were|sont|sind|lauten|son|s[ãa]o)\b")


def _scan(pattern: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    """Every keyword match, each tried on its own (a match's `rest` runs to the text's end). A
    plural link ("are") counts only after a plural keyword with nothing between: "my backup codes
    are ...", never "password managers are useful"."""
    pos = 0
    while True:
        m = pattern.search(text, pos)
        if m is None:
            return
        fill = m.groupdict().get("fill") or ""
        link = text[m.end("kw") + len(fill) : m.start("rest")]
        if fill.strip() and fill.split()[0].lower() in _COMPOUND:
            pos = m.end("kw")
            continue
        if not _PLURAL_LINK.match(link) or (not fill.strip() and m.group("kw").lower().endswith("s")):
            yield m
        pos = m.end("kw")


def find(text: str) -> Iterator[tuple[int, int, str]]:
    for m in _scan(_PASSWORD, text):
        kw = m.group("kw").lower()
        rest = m.group("rest")
        link = text[m.end("fill") : m.start("rest")]
        if kw in ("pass", "pw") and not re.search(r"[:=]", link) and not _MIXED.match(rest):
            continue  # "pass" alone is a password in "pass: x" / "pass=x", or before a value like "sunshine99"
        if kw.replace("-", "") in ("wifi", "wlan") and not (_QUOTE_AT.match(rest) or _MIXED_WORD.match(rest)):
            continue  # "the wifi is X": only a quoted value or one word mixing letters and digits
        if kw == "pass" and re.search(
            r"(?i)(?:boarding|bus|day|season|ski|hall|backstage|press|free|gym)\s+$", text[: m.start()]
        ):
            continue
        span = _password_value(rest, m.start("rest"))
        if span is not None:
            yield span[0], span[1], "password"
    for m in (*_LOGIN_PAIR.finditer(text), *_EMAIL_PAIR.finditer(text)):
        value = _SPAN_TRAIL.sub("", m.group("value"))
        said = m.group("value").rstrip().endswith(":") or _PASSWORD_WORD.fullmatch(value) is not None
        if len(value) >= 4 and not said and value.lower() not in _FUNCTION and value.lower() not in _DESCRIBE:
            yield m.start("value"), m.start("value") + len(value), "password"
    for m in _AS_MY.finditer(text):
        value = m.group("value")
        word = m.group("kw").lower()
        kind = "password" if word.startswith("pass") else "PIN" if word == "pin" else "access code"
        quoted = _quoted(value, m.start("value"))
        if quoted is not None:
            yield quoted[0], quoted[1], kind
        elif len(_SPAN_TRAIL.sub("", value)) >= 4 and (any(ch.isdigit() for ch in value) or not value.isalpha()):
            yield m.start("value"), m.start("value") + len(_SPAN_TRAIL.sub("", value)), kind
    for m in _CODE_FIRST.finditer(text):
        yield m.start("value"), m.end("value"), "one-time code"
    for m in _BANK.finditer(text):
        yield m.start("value"), m.end("value"), "bank account number"
    for m in _SET_TO.finditer(text):
        if m.group("kw").lower() in ("pin", "code", "passcode"):
            span = _code_value(m.group("rest"), m.start("rest"), True)
            kind = "PIN" if m.group("kw").lower() == "pin" else "access code"
        else:
            span, kind = _password_value(m.group("rest"), m.start("rest")), "password"
        if span is not None:
            yield span[0], span[1], kind
    for m in _scan(_PASSWORD_BARE, text):
        # "password hunter2" without a link: only a value with a digit or a symbol, not a word.
        token = _TOKEN.match(m.group("rest"))
        if token is None:
            continue
        core = _TRAIL.sub("", token.group(0))
        if len(core) >= 4 and any(ch.isdigit() for ch in core) and any(ch.isalpha() for ch in core):
            start = m.start("rest") + token.start()
            yield start, start + len(core), "password"
    for m in (*_scan(_CODE, text), *_scan(_CODE_BARE, text)):
        kw = m.group("kw")
        low = kw.lower()
        bare_code = low == "code" or (low.startswith(("código", "codigo")) and " " not in low)
        if bare_code and _ORDINARY_CODE.search(text[: m.start()]):
            continue
        if (
            low in ("pin", "pins")
            and kw.islower()
            and not m.group("link").strip()
            and not re.search(r"(?i)\b(?:my|your|his|her|our|the|bank|card|phone|sim)\s+$", text[: m.start()])
        ):
            continue  # "pin 2024 goals": a lower-case pin with no link is not a PIN
        linked = m.re is _CODE
        span = _code_value(m.group("rest"), m.start("rest"), linked)
        if span is not None:
            yield span[0], span[1], _code_kind(low)
    for m in _scan(_API, text):
        link = text[m.end("fill") : m.start("rest")]
        span = _api_value(m.group("rest"), m.start("rest"), assigned=bool(re.search(r"[:=]", link)))
        if span is not None:
            yield span[0], span[1], "secret key"


def _code_kind(keyword: str) -> str:
    if keyword.startswith(("pin", "code pin", "geheimzahl")):
        return "PIN"
    if any(w in keyword for w in ("cvv", "cvc", "csc", "verification value", "card verification")):
        return "CVV"
    if any(w in keyword for w in ("otp", "one", "2fa", "mfa", "auth", "login", "sign", "verif", "einmal", "best")):
        return "one-time code"
    if any(w in keyword for w in ("backup", "recovery")):
        return "backup code"
    return "access code"

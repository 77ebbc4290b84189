"""Keys recognised by their shape alone: published vendor prefixes, JWTs, bearer tokens.

Two sources, both applied to the canonical view: the patterns below (written from each vendor's
documented format, a little wider than the exact lengths so a key pasted from an older or newer
generation is still caught), and detect-secrets' own plugins, which are imported on the first call
only (the package costs half a second of `import engine`). A pattern never needs a keyword: these
prefixes do not occur in ordinary talk.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache

_B = r"(?<![A-Za-z0-9_\-])"  # no key character just before
_E = r"(?![A-Za-z0-9_\-])"  # nor just after

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern))
    for kind, pattern in (
        ("Anthropic API key", _B + r"sk-ant-(?:[a-z]+\d*-)?[A-Za-z0-9_\-]{16,}" + _E),
        (
            "OpenAI API key",
            _B + r"sk-(?!ant-)(?:proj-|svcacct-|admin-|None-)?(?=[A-Za-z0-9_\-]*\d)[A-Za-z0-9_\-]{16,}" + _E,
        ),
        ("Stripe secret key", _B + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}" + _E),
        ("Stripe webhook secret", _B + r"whsec_[A-Za-z0-9]{16,}" + _E),
        ("Google API key", _B + r"AIza[0-9A-Za-z_\-]{30,40}" + _E),
        (
            "Google OAuth token",
            _B + r"(?:ya29\.[0-9A-Za-z_\-]{20,}|GOCSPX-[0-9A-Za-z_\-]{16,}|1//0[0-9A-Za-z_\-]{30,})",
        ),
        ("Slack token", _B + r"xox[abposre]-[0-9A-Za-z\-]{10,}" + _E),
        ("Slack token", _B + r"xapp-\d-[0-9A-Za-z\-]{10,}" + _E),
        ("Slack webhook", r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9_/]+"),
        ("Discord webhook", r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]+"),
        ("GitHub token", _B + r"gh[pousr]_[A-Za-z0-9]{20,}" + _E),
        ("GitHub token", _B + r"github_pat_[A-Za-z0-9_]{20,}" + _E),
        ("GitLab token", _B + r"gl(?:pat|dt|ft|rt|soat|cbt|imt|ptt)-[A-Za-z0-9_\-]{16,}" + _E),
        ("AWS access key", _B + r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}" + _E),
        ("SendGrid API key", _B + r"SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}" + _E),
        ("Twilio key", _B + r"(?:SK|AC)[0-9a-fA-F]{32}" + _E),
        ("npm token", _B + r"npm_[A-Za-z0-9]{30,}" + _E),
        ("PyPI token", _B + r"pypi-AgE[A-Za-z0-9_\-]{30,}" + _E),
        ("Hugging Face token", _B + r"hf_[A-Za-z0-9]{30,}" + _E),
        ("Shopify token", _B + r"shp(?:at|ss|ca|pa)_[A-Fa-f0-9]{32}" + _E),
        ("DigitalOcean token", _B + r"do[por]_v1_[a-f0-9]{64}" + _E),
        ("Square token", _B + r"sq0(?:atp|csp|idp)-[0-9A-Za-z_\-]{20,}" + _E),
        ("Mailgun key", _B + r"key-[0-9a-f]{32}" + _E),
        ("Mailchimp key", _B + r"[0-9a-f]{32}-us\d{1,2}" + _E),
        ("Telegram bot token", _B + r"\d{8,10}:AA[0-9A-Za-z_\-]{33}" + _E),
        ("Azure storage key", r"AccountKey=[A-Za-z0-9+/=]{60,}"),
        ("Heroku API key", r"(?i)heroku[\w ]{0,20}?[:= ]+[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"),
        ("JWT", _B + r"eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*"),
        ("bearer token", r"(?i)(?<=\bbearer )[A-Za-z0-9._~+/\-]{12,}=*"),
        ("basic-auth credentials", r"(?i)(?<=authorization: basic )[A-Za-z0-9+/]{8,}=*"),
    )
)
_AWS_ACCESS = re.compile(r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}")
# An AWS secret key is 40 base64 characters with no prefix: taken when the text also holds an
# access key id, or "aws"/"secret" is said within a few words before it.
_AWS_SECRET = re.compile(
    r"(?<![A-Za-z0-9/+])(?=[A-Za-z0-9/+]*[0-9/+])(?=[A-Za-z0-9/+]*[a-z])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])"
)
_AWS_CONTEXT = re.compile(r"(?i)(?<![A-Za-z0-9])(?:aws|amazon|secret|s3|iam)(?![A-Za-z0-9])")


@cache
def _plugins() -> tuple[tuple[str, tuple[re.Pattern[str], ...], bool], ...]:
    """detect-secrets' plugins that fit conversation text: (kind, regexes, secret is group 1).
    Imported here, on first use, not at `import engine`."""
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.basic_auth import BasicAuthDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector

    out: list[tuple[str, tuple[re.Pattern[str], ...], bool]] = [
        ("AWS access key", tuple(AWSKeyDetector().denylist[:1]), False),
        ("AWS secret key", tuple(AWSKeyDetector().denylist[1:]), True),
        ("password in URL", tuple(BasicAuthDetector().denylist), True),
    ]
    for kind, plugin in (
        ("Discord bot token", DiscordBotTokenDetector()),
        ("GitHub token", GitHubTokenDetector()),
        ("GitLab token", GitLabTokenDetector()),
        ("OpenAI API key", OpenAIDetector()),
        ("PyPI token", PypiTokenDetector()),
        ("SendGrid API key", SendGridDetector()),
        ("Slack token", SlackDetector()),
        ("Square token", SquareOAuthDetector()),
        ("Stripe secret key", StripeDetector()),
        ("Telegram bot token", TelegramBotTokenDetector()),
    ):
        out.append((kind, tuple(plugin.denylist), False))
    # The JWT plugin's pattern also matches "eyJ" inside ordinary base64; keep only what verifies.
    jwt = JwtTokenDetector()
    out.append(("JWT", tuple(jwt.denylist), False))
    return tuple(out)


def _jwt_ok(token: str) -> bool:
    from detect_secrets.plugins.jwt import JwtTokenDetector

    return bool(JwtTokenDetector.is_formally_valid(token))


def find(text: str) -> Iterator[tuple[int, int, str]]:
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            yield m.start(), m.end(), kind
    for kind, regexes, grouped in _plugins():
        for regex in regexes:
            for m in regex.finditer(text):
                if grouped and m.groups():
                    if m.group(1):
                        yield m.start(1), m.end(1), kind
                elif kind != "JWT" or (len(m.group(0)) >= 24 and _jwt_ok(m.group(0))):
                    yield m.start(), m.end(), kind
    if _AWS_ACCESS.search(text) or _AWS_CONTEXT.search(text):
        for m in _AWS_SECRET.finditer(text):
            before = text[max(0, m.start() - 60) : m.start()]
            if _AWS_ACCESS.search(text) or _AWS_CONTEXT.search(before):
                yield m.start(), m.end(), "AWS secret key"

"""Detectors measured: credentials (engine.credentials) and special categories (engine.categories).

    uv run python benchmarks/detectors.py                    # the corpora in benchmarks/data/detectors
    uv run python benchmarks/detectors.py --corpus DIR       # another corpus in the same format
    uv run python benchmarks/detectors.py --show-misses      # and list every miss / false positive

Corpora are TSV files (`#` lines are comments), one split per file suffix (`_dev`, `_heldout`, or
any other name a foreign corpus uses):

- `credentials_<split>.tsv`: `KIND<TAB>sentence`; `{placeholder}`s are filled with fake secrets of
  that shape, generated from a fixed seed (so the same corpus always reads the same); `\\n` is a
  newline. Caught = `redact` found something AND no placeholder's value is left in its output.
- `credentials_controls_<split>.tsv`: `-<TAB>sentence`; a false positive = `redact` found anything.
- `categories_<split>.tsv`: `CATEGORY<TAB>statement[<TAB>known fact]`; caught = `is_special`
  (unsure counts, as the review policies count it); "exact" = the category named is the one listed.
- `categories_controls_<split>.tsv`: `-<TAB>statement[<TAB>known fact]`; a false positive =
  `is_special` (unsure included).

The `_heldout` parts were written before any rule was tuned on the `_dev` parts; both are reported
separately. Prints JSON (and a table on stderr); writes `results/detectors-<date>.json` unless
`--no-save`.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import re
import string
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stdnum import luhn
from stdnum.us import ssn as us_ssn

from engine.categories import category_of, is_special
from engine.credentials import redact

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "data" / "detectors"
ALNUM = string.ascii_letters + string.digits
KEYCH = ALNUM + "_-"
B64 = ALNUM + "+/"
IBANS = {
    "iban_de": "DE89 3704 0044 0532 0130 00",
    "iban_fr": "FR14 2004 1010 0505 0001 3M02 606",
    "iban_gb": "GB29 NWBK 6016 1331 9268 19",
    "iban_es": "ES9121000418450200051332",
    "iban_pt": "PT50 0002 0123 1234 5678 9015 4",
    "iban_nl": "NL91ABNA0417164300",
}


def _s(rng: random.Random, chars: str, n: int) -> str:
    while True:
        out = "".join(rng.choice(chars) for _ in range(n))
        if any(c.isdigit() for c in out) and any(c.isalpha() for c in out):
            return out


def _card(rng: random.Random, prefix: str, length: int) -> str:
    body = prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix) - 1))
    return body + luhn.calc_check_digit(body)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _bip39(rng: random.Random, n: int) -> list[str]:
    from importlib import resources

    words = resources.files("mnemonic").joinpath("wordlist/english.txt").read_text(encoding="utf-8").split()
    return [rng.choice(words) for _ in range(n)]


def fake(name: str, rng: random.Random) -> str:
    """A fake secret of the shape `name` says (deterministic for a given rng state)."""
    if name in IBANS:
        return IBANS[name]
    match name:
        case "openai":
            return "sk-" + _s(rng, ALNUM, 48)
        case "openai_proj":
            return "sk-proj-" + _s(rng, KEYCH, 56)
        case "anthropic":
            return "sk-ant-api03-" + _s(rng, KEYCH, 86) + "AA"
        case "stripe":
            return "sk_live_" + _s(rng, ALNUM, 24)
        case "stripe_rk":
            return "rk_live_" + _s(rng, ALNUM, 24)
        case "google":
            return "AIza" + _s(rng, KEYCH, 35)
        case "slack":
            return f"xoxb-{rng.randrange(10**11, 10**12)}-{rng.randrange(10**12, 10**13)}-{_s(rng, ALNUM, 24)}"
        case "slack_user":
            return f"xoxp-{rng.randrange(10**11, 10**12)}-{rng.randrange(10**11, 10**12)}-{_s(rng, ALNUM, 32)}"
        case "slack_webhook":
            upper = string.ascii_uppercase + string.digits
            return f"https://hooks.slack.com/services/T{_s(rng, upper, 8)}/B{_s(rng, upper, 10)}/{_s(rng, ALNUM, 24)}"
        case "github":
            return "ghp_" + _s(rng, ALNUM, 36)
        case "github_pat":
            return "github_pat_" + _s(rng, ALNUM, 22) + "_" + _s(rng, ALNUM, 59)
        case "gitlab":
            return "glpat-" + _s(rng, KEYCH, 20)
        case "aws_id":
            return "AKIA" + _s(rng, string.ascii_uppercase + string.digits, 16)
        case "aws_secret":
            return _s(rng, B64, 40)
        case "sendgrid":
            return "SG." + _s(rng, KEYCH, 22) + "." + _s(rng, KEYCH, 43)
        case "twilio":
            return "SK" + "".join(rng.choice("0123456789abcdef") for _ in range(32))
        case "npm":
            return "npm_" + _s(rng, ALNUM, 36)
        case "hf":
            return "hf_" + _s(rng, ALNUM, 34)
        case "jwt":
            head = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
            body = _b64url(json.dumps({"sub": str(rng.randrange(10**9)), "iat": 1700000000}).encode())
            return f"{head}.{body}.{_b64url(rng.randbytes(32))}"
        case "bearer":
            return _s(rng, ALNUM + "._-", 40)
        case "pem" | "pem_openssh":
            label = "RSA PRIVATE KEY" if name == "pem" else "OPENSSH PRIVATE KEY"
            body = "\n".join(base64.b64encode(rng.randbytes(48)).decode() for _ in range(4))
            return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"
        case "card":
            return _card(rng, rng.choice(["4", "51", "52", "53", "54", "55"]), 16)
        case "card_spaced" | "card_dashed":
            digits = _card(rng, "4", 16)
            sep = " " if name == "card_spaced" else "-"
            return sep.join(digits[i : i + 4] for i in range(0, 16, 4))
        case "amex":
            digits = _card(rng, rng.choice(["34", "37"]), 15)
            return f"{digits[:4]} {digits[4:10]} {digits[10:]}"
        case "ssn":
            while True:
                value = f"{rng.randrange(1, 900):03d}-{rng.randrange(1, 100):02d}-{rng.randrange(1, 10000):04d}"
                if us_ssn.is_valid(value):
                    return value
        case "seed12" | "seed24":
            return " ".join(_bip39(rng, 12 if name == "seed12" else 24))
        case "seed12_numbered":
            return " ".join(f"{i}. {w}" for i, w in enumerate(_bip39(rng, 12), 1))
    raise KeyError(f"unknown placeholder {{{name}}}")


def _unescape(text: str) -> str:
    """`\\n` and `\\uXXXX` as the characters they name (invisible ones stay visible in the file)."""
    text = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text)
    return text.replace("\\n", "\n")


def load(path: Path) -> list[list[str]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        rows.append([_unescape(part) for part in line.split("\t")])
    return rows


def splits(corpus: Path, stem: str) -> dict[str, Path]:
    out = {}
    for path in sorted(corpus.glob(f"{stem}_*.tsv")):
        split = path.stem[len(stem) + 1 :]
        if stem == "credentials" and split.startswith("controls"):
            continue
        if stem == "categories" and split.startswith("controls"):
            continue
        out[split] = path
    return out


def credentials(corpus: Path, show: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for split, path in splits(corpus, "credentials").items():
        rng = random.Random(f"detectors-{split}")
        per: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
        misses = []
        for kind, text in load(path):
            values: list[str] = []

            def fill(m: re.Match[str], values: list[str] = values, rng: random.Random = rng) -> str:
                value = fake(m.group(1), rng)
                values.append(value)
                return value

            sentence = re.sub(r"\{(\w+)\}", fill, text)
            red = redact(sentence)
            caught = red.found and not any(v in red.text for v in values)
            per[kind][0] += 1
            per[kind][1] += int(caught)
            per[kind][2] += int(caught and kind in red.kinds)
            if not caught:
                misses.append(f"{kind}: {sentence!r} -> {red.text!r}")
        total, caught_n = sum(v[0] for v in per.values()), sum(v[1] for v in per.values())
        out[split] = {
            "sentences": total,
            "recall": round(caught_n / total, 4) if total else None,
            "kind_named": round(sum(v[2] for v in per.values()) / total, 4) if total else None,
            "per_kind": {k: {"n": v[0], "recall": round(v[1] / v[0], 3)} for k, v in sorted(per.items())},
        }
        if show:
            out[split]["misses"] = misses
        controls = corpus / f"credentials_controls_{split}.tsv"
        if controls.exists():
            rows = load(controls)
            fps = [row[1] for row in rows if redact(row[1]).found]
            out[split]["controls"] = len(rows)
            out[split]["false_positive_rate"] = round(len(fps) / len(rows), 4) if rows else None
            if show:
                out[split]["false_positives"] = [f"{t!r} -> {redact(t).text!r}" for t in fps]
    return out


def categories(corpus: Path, show: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for split, path in splits(corpus, "categories").items():
        per: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
        misses = []
        for row in load(path):
            category, statement = row[0], row[1]
            context = row[2:] or None
            got = category_of(statement, None, context)
            per[category][0] += 1
            per[category][1] += int(is_special(got))
            per[category][2] += int(got == category)
            if not is_special(got) or (show and got != category):
                misses.append(f"{category}: {statement!r} -> {got}")
        total = sum(v[0] for v in per.values())
        out[split] = {
            "statements": total,
            "recall": round(sum(v[1] for v in per.values()) / total, 4) if total else None,
            "exact_category": round(sum(v[2] for v in per.values()) / total, 4) if total else None,
            "per_category": {
                k: {"n": v[0], "recall": round(v[1] / v[0], 3), "exact": round(v[2] / v[0], 3)}
                for k, v in sorted(per.items())
            },
        }
        if show:
            out[split]["misses"] = misses
        controls = corpus / f"categories_controls_{split}.tsv"
        if controls.exists():
            rows = load(controls)
            flagged = [(row[1], category_of(row[1], None, row[2:] or None)) for row in rows]
            fps = [(t, c) for t, c in flagged if is_special(c)]
            out[split]["controls"] = len(rows)
            out[split]["false_positive_rate"] = round(len(fps) / len(rows), 4) if rows else None
            if show:
                out[split]["false_positives"] = [f"{t!r} -> {c}" for t, c in fps]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--show-misses", action="store_true")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    started = time.perf_counter()
    result = {
        "corpus": str(args.corpus),
        "credentials": credentials(args.corpus, args.show_misses),
        "categories": categories(args.corpus, args.show_misses),
    }
    result["seconds"] = round(time.perf_counter() - started, 2)
    for what, key in (("credentials", "per_kind"), ("categories", "per_category")):
        for split, fig in result[what].items():
            print(
                f"{what:12} {split:8} recall {fig['recall']}  false positives {fig.get('false_positive_rate')}"
                f"  (n={fig.get('sentences') or fig.get('statements')}, controls={fig.get('controls')})",
                file=sys.stderr,
            )
            for kind, k in fig[key].items():
                print(f"    {kind:32} n={k['n']:3}  recall {k['recall']}", file=sys.stderr)
    print(json.dumps(result, indent=2, ensure_ascii=False))
    if not args.no_save:
        out = HERE / "results" / f"detectors-{datetime.now(UTC):%Y-%m-%d}.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

"""The word lists of the offline rules, kept as data: one `<name>.txt` a list, one entry a line,
`#` starting a comment line. A reviewer adds a language, an allergen or a car make by editing a
text file, and the diff shows the word, not a Python set literal.

The lists are read once, when `engine.extraction.offline_rules` is imported. This package sits
below the rules (it imports nothing of the engine), so the rules registry and the pattern table
can both read it without an import circle.
"""

from __future__ import annotations

from importlib.resources import files


def words(name: str) -> set[str]:
    """The entries of `<name>.txt`, stripped, comments and blank lines left out. A missing list is a
    packaging error and fails at import, loudly, rather than leaving a rule with no words."""
    text = files(__package__).joinpath(f"{name}.txt").read_text(encoding="utf-8")
    out: set[str] = set()
    for line in text.splitlines():
        entry = line.strip()
        if entry and not entry.startswith("#"):
            out.add(entry)
    return out

"""Decisions as typed values: `KEEP` is the one member of `UnsetType` (httpx's pattern), so the
decision methods say `valid_at: datetime | None | UnsetType = KEEP` and mypy refuses a caller that
passes anything else, where `Any = KEEP` let everything through."""

from __future__ import annotations

from pathlib import Path

from mypy import api

from engine import KEEP
from engine.models import UnsetType

ROOT = Path(__file__).resolve().parents[1]

CALLER = """
from datetime import UTC, datetime
from engine import KEEP, Memory

async def decide(mem: Memory) -> None:
    await mem.review.approve(1, "ana", valid_at=datetime(2025, 1, 1, tzinfo=UTC))
    await mem.review.keep_both(2, "ana", valid_at=None, invalid_at=KEEP)
    await mem.review.confirm_supersession(3, "ana", valid_at=KEEP)
    await mem.review.approve(4, "ana", valid_at="2025-01-01")  # line 9: refused
"""


def test_keep_is_the_one_unset_value() -> None:
    assert isinstance(KEEP, UnsetType) and list(UnsetType) == [KEEP]
    assert repr(KEEP) == "KEEP"


def test_mypy_checks_what_a_caller_passes_as_a_time(tmp_path: Path) -> None:
    """One run (mypy is slow to start): a datetime, None and KEEP pass (the controls); a string
    is refused, on its line and no other."""
    caller = tmp_path / "caller.py"
    caller.write_text(CALLER)
    out, err, status = api.run(
        [str(caller), "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp_path / "cache")]
    )
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert status == 1, out + err
    assert len(errors) == 1 and errors[0].startswith(f"{caller}:9:"), out
    assert 'Argument "valid_at"' in errors[0] and "UnsetType" in errors[0]

"""The two small pieces of arithmetic the safety loop shares (review, policies, the agent watch):
the secret draw and the Wilson lower bound. Kept apart so the floors below the policies
(engine/review.py, engine/watch.py) use the same ones."""

from __future__ import annotations

import math
import secrets

_Z95 = 1.959963984540054


def draw_sample(rate: float) -> bool:
    """The secret draw: True with probability `rate`, from the OS's random source, so nobody who
    sees ids, times or the code can predict which approvals a person will check."""
    return secrets.randbelow(1_000_000) < round(rate * 1_000_000)


def wilson_lower(successes: int, n: int, z: float = _Z95) -> float | None:
    """The Wilson score interval's lower bound for a proportion: a cautious estimate that stays low
    while n is small (5 of 5 is 0.57 at 95 %, not 1.0). None for n = 0."""
    if n <= 0:
        return None
    p = successes / n
    centre = p + z * z / (2 * n)
    margin = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - margin) / (1 + z * z / n))


__all__ = ["draw_sample", "wilson_lower"]

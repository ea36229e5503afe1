"""The checks every layer shares: one wording for a bad value, wherever it comes from.

A setting, a lesson's parameter, a load plan and a model's input all fail the same way: a
ValueError that names the parameter, its bounds or choices, and the value given.
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def whole(name: str, value: object, low: int, high: int | None = None) -> int:
    """`value` if it is a whole number from `low` to `high` (no upper bound when None), else ValueError."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        bound = f"from {low} to {high}" if high is not None else f"of at least {low}"
        raise ValueError(f"{name} must be a whole number {bound}, got {value!r}")
    return value


def positive(name: str, value: object, unit: str = "") -> float:
    """`value` if it is a finite number above 0, else ValueError."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be more than 0{unit}, got {value!r}")
    return value


def choice(name: str, value: object, choices: Iterable[str]) -> str:
    """`value` if it is one of `choices`, else ValueError listing them."""
    choices = list(choices)
    if value not in choices:
        raise ValueError(f"unknown {name} {value!r}; choose one of: {', '.join(choices)}")
    return value


def strings(name: str, value: object, what: str = "strings") -> list[str]:
    """`value` if it is a list of strings (`what` says which, in the message), else ValueError."""
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise ValueError(f"{name} must be a list of {what}, got {value!r}")
    return value

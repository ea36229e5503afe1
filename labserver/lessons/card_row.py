"""A row of the decision card (lesson 99, course/card.py), as the lesson that shows it declares it.

A `Row` is a situation, the pattern to write, its ceiling as the model prices it, what a developer
notices, and `measure`: the figure that shows it, read from the runs on disk (one row per run,
`load_runs`) as a `Measured`, "not measured yet" where they are missing. The helpers choose a
lesson's valid runs and compare two patterns at the same setting.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

SETTING = ("users", "tasks", "io_ms", "cpu_n", "workers", "threads")  # two patterns compare at the same setting
NOT_YET = "not measured yet"


@dataclass(frozen=True)
class Measured:
    ratio: float  # NaN: no runs on disk show it
    text: str  # the ratio in words, e.g. "2.9× (async / def at 120 users)"


def runs_of(runs: pd.DataFrame, prefix: str, pattern: str | tuple[str, ...], abandoned: bool = False) -> pd.DataFrame:
    """The valid runs of lesson `prefix` and `pattern`(s): closed loops, none that expected failures (`abandoned`:
    only those, every request of which timed out by design, as lesson 13's)."""
    if runs.empty or "lesson" not in runs or "pattern" not in runs:
        return runs.iloc[0:0]
    keep = runs["lesson"].fillna("").astype(str).str.startswith(prefix)
    keep &= runs["pattern"].isin([pattern] if isinstance(pattern, str) else pattern)
    if "valid" in runs:
        keep &= runs["valid"].fillna(False).astype(bool)
    if "failures" in runs:  # a valid run with failures expected them (lesson 05's timeouts): its rps counts give-ups
        keep &= (runs["failures"].fillna(0) > 0) if abandoned else (runs["failures"].fillna(0) == 0)
    if "rate" in runs:  # an open loop's rps is the rate it was sent
        keep &= runs["rate"].isna()
    return runs[keep]


def side_by_side(runs: pd.DataFrame, patterns: tuple[str, ...]) -> pd.DataFrame:
    """Median rps of each of `patterns` at every setting all of them were run at, one row per setting."""
    keys = [k for k in SETTING if k in runs]
    if runs.empty or not keys:
        return pd.DataFrame(columns=[*keys, *patterns])
    wide = runs.pivot_table(index=keys, columns="pattern", values="rps", aggfunc="median")
    if any(p not in wide for p in patterns):
        return pd.DataFrame(columns=[*keys, *patterns])
    return wide[list(patterns)].dropna().reset_index()


def span(values: pd.Series) -> str:
    low, high = values.min(), values.max()
    return f"{low:g}" if low == high else f"{low:g}–{high:g}"


def bound(runs: pd.DataFrame, prefix: str, pattern: str, slots: str, label: str) -> Measured:
    """Median rps / (`slots` / (tasks × io)) of `pattern`'s runs with at least as many users as slots.

    `slots` is "threads" (workers × threads: a thread pool's) or "workers" (one per blocked loop);
    `label` names the pattern as a learner reads it.
    """
    rows = runs_of(runs, prefix, pattern)
    if rows.empty or "io_ms" not in rows:
        return Measured(math.nan, NOT_YET)
    count = rows["workers"] * (rows["threads"] if slots == "threads" else 1)
    rows = rows[(rows["users"] >= count) & (rows["io_ms"] > 0)]
    if rows.empty:
        return Measured(math.nan, NOT_YET)
    ceiling = count[rows.index] / (rows["tasks"] * rows["io_ms"] / 1000)
    ratio = float((rows["rps"] / ceiling).median())
    what = "threads / io" if slots == "threads" else "workers / io"
    return Measured(ratio, f"{ratio:.2f} of {what} ({label} at {span(rows['users'])} users)")


@dataclass(frozen=True)
class Row:
    situation: str
    write: str
    ceiling: str  # as the model prices it (theory.model.predict)
    notice: str  # what a developer sees in production when this is the limit
    shows: str  # the measured ratio that shows it
    lessons: tuple[str, ...]
    measure: Callable[[pd.DataFrame], Measured]
    moves: str = ""  # why its figure moves between batches, where it moves past ±MOVES of its middle

"""Lesson 02, sequential awaits against gather: its plan and parameter checks, its parameters for each profile.

Its rows of the decision card (course/card.py): `INDEPENDENT_WAITS`.
"""

from __future__ import annotations

import math

import pandas as pd

from labserver import checks
from labserver.harness.load.checks import check_sweep
from labserver.lessons.card_row import NOT_YET, Measured, Row, runs_of, side_by_side
from labserver.lessons.lesson import Lesson

LESSON = Lesson(
    "02_sequential_vs_gather",
    profiles={
        "quick": {},
        "live": {"duration_s": 3},
        "full": {"users": [100, 250], "io_ms": 200, "duration_s": 15},
        "smoke": {"users": [20], "io_ms": 100, "duration_s": 2},
    },
)


def plan(
    *,
    patterns: list[str],
    users: list[int] | int,
    tasks: int,
    io_ms: int,
    workers: int,
    threads: int,
    duration_s: int,
) -> list[int]:
    """Lesson 02: every endpoint at every users value, on the server's workers and threads; `users` as a list."""
    users = checks.parameter("users", users, list[int])
    check_sweep(patterns, users, workers=workers, threads=threads, tasks=tasks, io_ms=io_ms, duration_s=duration_s)
    return users


def gather_over_sequential(runs: pd.DataFrame) -> Measured:
    """Lesson 02: gather / sequential throughput at the same setting (the model: tasks ×)."""
    wide = side_by_side(runs_of(runs, "02", ("gather", "sequential")), ("gather", "sequential"))
    if wide.empty:
        return Measured(math.nan, NOT_YET)
    top = wide.loc[wide["users"].idxmax()]
    ratio = float(top["gather"] / top["sequential"])
    return Measured(ratio, f"{ratio:.1f}× (gather / sequential, {top['tasks']:g} waits, {top['users']:g} users)")


# Its rows of the decision card (course/card.py), each with the figure that shows it
INDEPENDENT_WAITS = Row(
    "Independent waits in one request",
    "`await asyncio.gather(...)`",
    "tasks × sequential's: users / io instead of users / (tasks × io)",
    "a request takes the sum of its waits instead of the longest",
    "gather / sequential",
    ("02",),
    gather_over_sequential,
)

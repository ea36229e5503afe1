"""Lesson 01, async against sync: its plan and parameter checks, and its parameters for each run profile.

Its rows of the decision card (course/card.py): `AWAITABLE_IO`, `BLOCKING_LIBRARY`.
"""

from __future__ import annotations

import math

import pandas as pd

from labserver import checks
from labserver.harness.load.checks import check_sweep
from labserver.lessons.card_row import NOT_YET, Measured, Row, bound, runs_of, side_by_side
from labserver.lessons.lesson import Lesson

LESSON = Lesson(
    "01_async_vs_sync",
    profiles={
        "quick": {},
        "live": {"users": [10, 120], "duration_s": 3},
        "full": {"users": [10, 20, 40, 80, 160, 320], "duration_s": 15},
        "smoke": {"users": [5, 30], "threads": 10, "duration_s": 2},
    },
)


def plan(
    *,
    patterns: list[str],
    users: list[int] | int,
    io_ms: int,
    threads: int,
    duration_s: int,
) -> list[int]:
    """Lesson 01: every run of the sweep, with users both below the thread pool and at 3× it; `users` as a list."""
    users = checks.parameter("users", users, list[int])
    check_sweep(patterns, users, threads=threads, io_ms=io_ms, duration_s=duration_s)
    if min(users) >= threads or max(users) < 3 * threads:  # the claims compare the two sides of the pool
        raise ValueError(
            f"users needs a value below threads ({threads}) and one of at least 3 × threads ({3 * threads}), "
            f"got {users}"
        )
    return users


def async_over_def(runs: pd.DataFrame) -> Measured:
    """Lesson 01: async / def throughput at 3× the thread pool or more, the smallest (its claim 2)."""
    wide = side_by_side(runs_of(runs, "01", ("sequential", "threadpool")), ("sequential", "threadpool"))
    wide = wide[wide["users"] >= 3 * wide["workers"] * wide["threads"]] if len(wide) else wide
    if wide.empty:
        return Measured(math.nan, NOT_YET)
    ratios = wide["sequential"] / wide["threadpool"]
    low = wide.loc[ratios.idxmin()]
    return Measured(float(ratios.min()), f"{ratios.min():.1f}× (async / def at {low['users']:g} users)")


def def_at_threads(runs: pd.DataFrame) -> Measured:
    """Lesson 01: the `def` endpoint's throughput over threads / io, where the users outnumber the threads."""
    return bound(runs, "01", "threadpool", "threads", "def")


# Its rows of the decision card (course/card.py), each with the figure that shows it
AWAITABLE_IO = Row(
    "Awaitable I/O: an async driver, `asyncio.sleep`, `httpx.AsyncClient`",
    "`async def` + `await`",
    "users / (io + cpu), until the worker's core runs out: 1 / cpu per worker",
    "p95 stays near io as users grow, until one core per worker is busy",
    "async / def at ≥ 3× the thread pool",
    ("01",),
    async_over_def,
)

BLOCKING_LIBRARY = Row(
    "A blocking library: requests, a sync database driver",
    "a plain `def` (FastAPI runs it in its thread pool)",
    "threads / io per worker: 40 / io (a database driver: connections / hold where the pool is the smaller)",
    "req/s flat at 40 / io while p95 grows with the users: requests wait for a thread",
    "def / (threads / io)",
    ("01",),
    def_at_threads,
)

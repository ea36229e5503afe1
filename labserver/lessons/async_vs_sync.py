"""Lesson 01, async against sync: its plan and parameter checks, and its parameters for each run profile."""

from __future__ import annotations

from labserver import checks
from labserver.harness.load.checks import check_sweep
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

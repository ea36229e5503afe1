"""Lesson 02, sequential awaits against gather: its plan and parameter checks, its parameters for each profile."""

from __future__ import annotations

from labserver import checks
from labserver.harness.load.checks import check_sweep
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

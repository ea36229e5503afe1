"""Lesson 05, the blocking call: its plan and parameter checks, and its parameters for each run profile."""

from __future__ import annotations

from typing import NamedTuple

from labserver import checks
from labserver.harness.load.checks import check_sweep
from labserver.lessons.lesson import Lesson

LESSON = Lesson(
    "05_blocking",
    profiles={
        "quick": {},
        "live": {"users": [50], "timeout_run_s": 3},
        "full": {"users": [5, 50, 100], "duration_s": 15, "timeout_run_s": 30},
        "smoke": {"users": [2, 5], "duration_s": 2, "timeout_s": 0.3, "timeout_run_s": 3},
    },
)


BLOCKING_CONTRAST = (
    "mixed",
    "wrapped",
    "offload",
    "tothread",
    "sequential",
)  # lesson 05 runs these at its largest users only


class Blocking(NamedTuple):
    users: list[int]
    top: int  # the largest users value, where the contrast runs
    plan: list[tuple[str, int]]  # (pattern, users): blocking at every users value, the contrast at the top
    service_s: float  # how long one request holds a blocked loop
    cap: float  # the blocked workers' req/s, workers / service_s
    # the plans of (pattern, users), each on a fresh server: a blocked worker still owes the requests its users
    # abandoned when its run ended, so blocking runs end their plan, the largest on its own, as the mixed case
    plans: list[list[tuple[str, int]]]


def plan(
    *,
    users: list[int] | int,
    io_ms: int,
    tasks: int,
    workers: int,
    threads: int,
    duration_s: int,
    timeout_s: float,
    timeout_run_s: int,
) -> Blocking:
    """Lesson 05: every endpoint at every users value, the timeout run at the largest, and its timeout."""
    users = checks.parameter("users", users, list[int])
    check_sweep(
        ["blocking", *BLOCKING_CONTRAST],
        users,
        workers=workers,
        threads=threads,
        tasks=tasks,
        io_ms=io_ms,
        duration_s=duration_s,
    )
    top = max(users)
    check_sweep(["blocking"], [top], workers=workers, tasks=tasks, io_ms=io_ms, duration_s=timeout_run_s)
    checks.positive("timeout_s", timeout_s, " s")
    plan = [("blocking", u) for u in sorted(users)] + [(p, top) for p in BLOCKING_CONTRAST]
    service_s = tasks * io_ms / 1000
    shared = [(p, top) for p in ("sequential", "wrapped", "offload", "tothread")] + [
        ("blocking", u) for u in sorted(users) if u < top
    ]
    plans = [shared, [("blocking", top)], [("mixed", top)]]
    return Blocking(users, top, plan, service_s, workers / service_s, plans)

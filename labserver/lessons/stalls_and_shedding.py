"""Lesson 09, stalls and shedding: its plan and parameter checks, and its parameters for each run profile."""

from __future__ import annotations

from labserver import checks
from labserver.demo.settings import Settings
from labserver.harness import sizing
from labserver.harness.load import check_arrivals, check_load
from labserver.lessons.lesson import Lesson
from labserver.theory.workload import Workload

LESSON = Lesson(
    "09_stalls_and_shedding",
    profiles={
        "quick": {},
        "live": {"duration_s": 5},
        "full": {"duration_s": 15},
        "smoke": {"duration_s": 2, "stall_every_s": 1.0},
    },
    chart="omission.png",
)


def plan(
    *,
    stall_users: int,
    stall_io_ms: int,
    stall_ms: int,
    stall_every_s: float,
    io_ms: int,
    threads: int,
    shed_rho: float,
    queue_limit: int,
    limit_concurrency: int,
    duration_s: int,
) -> float:
    """Lesson 09: the stalling server's closed loop and stalls, the shedding servers (a queue bound on the thread
    pool, and uvicorn's `--limit-concurrency`) and their rate; S's guess."""
    checks.whole("duration_s", duration_s, 1, 600)
    checks.positive("stall_every_s", stall_every_s)
    check_load(Workload("sequential", stall_users, io_ms=stall_io_ms, duration_s=duration_s))
    check_load(Workload("blocking", 1, io_ms=stall_ms, duration_s=duration_s))
    sizing.above_capacity("shed_rho", shed_rho)
    Settings(threads=threads, queue_limit=queue_limit).check()
    checks.whole("limit_concurrency", limit_concurrency, 2, 10_000)  # its own connection counts: 1 would shed all
    check_load(Workload("threadpool", 1, io_ms=io_ms, duration_s=duration_s))
    guess_s = io_ms / 1000  # S before it is measured: the wait alone
    check_arrivals(shed_rho * threads / guess_s, "arrivals", 1)
    return guess_s

"""Lesson 08, overload: its plan and parameter checks, and its parameters for each run profile."""

from __future__ import annotations

from typing import NamedTuple

from labserver import checks
from labserver.demo.settings import Settings
from labserver.harness import sizing
from labserver.harness.load import check_arrivals, check_load
from labserver.lessons.lesson import Lesson
from labserver.theory.workload import Workload

# 08 and 09 share one calibration per kernel (harness/calibrate.py); `full` sweeps ρ finer and overloads for longer.
LESSON = Lesson(
    "08_overload",
    profiles={
        "quick": {},
        "live": {"rhos": [0.6, 0.9], "overload_s": 10, "drain_s": 3, "duration_s": 5},
        "full": {"rhos": [0.2, 0.4, 0.6, 0.7, 0.8, 0.9, 0.95], "overload_s": 20, "drain_s": 6, "duration_s": 15},
        "smoke": {"rhos": [0.6], "overload_s": 4, "drain_s": 2, "duration_s": 2},
    },
    chart="overload.png",
)


class Overload(NamedTuple):
    rhos: list[float]
    guess_s: float  # S before it is measured: the wait alone


def plan(
    *, io_ms: int, threads: int, rhos: object, overload: float, overload_s: int, drain_s: int, duration_s: int
) -> Overload:
    """Lesson 08: ρs below 1, an overload above it, run lengths, the server and its open loops."""
    rhos = checks.parameter("rhos", rhos, list[float])
    if not all(0 < rho < 1 for rho in rhos):
        raise ValueError(f"rhos are utilisations below capacity, each above 0 and below 1, got {rhos}")
    sizing.above_capacity("overload", overload)
    for name, value in {"overload_s": overload_s, "drain_s": drain_s, "duration_s": duration_s}.items():
        checks.whole(name, value, 1, 600)
    if drain_s >= overload_s:
        raise ValueError(f"drain_s must be shorter than overload_s ({overload_s}), got {drain_s}")
    Settings(threads=threads).check()
    check_load(Workload("threadpool", 1, io_ms=io_ms, duration_s=duration_s))
    guess_s = io_ms / 1000
    for rho in [*rhos, overload]:
        check_arrivals(rho * threads / guess_s, "arrivals", 1)
    return Overload(rhos, guess_s)

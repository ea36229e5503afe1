"""Run profiles: the parameters each lesson gets in `quick`, `live`, `full` and `smoke` runs.

A lesson's own parameters cell holds its quick values, which is what a learner runs; `live`
is for an instructor in front of a class, every run cell done in about 20 s (`make live`
writes the lessons with these values in); `full` comes closer to the articles' scale;
`smoke` is the tiny run the tests use.
"""

from __future__ import annotations

from typing import Literal, get_args

from labserver.checks import choice

PROFILES: dict[str, dict[str, dict]] = {
    "98_the_instrument": {
        "quick": {},
        "live": {"users": [100, 800], "requests_users": [100], "duration_s": 3},
        "full": {"users": [50, 100, 200, 400, 800], "duration_s": 15},
        "smoke": {"users": [5, 10], "requests_users": [10], "ceiling_users": 20, "duration_s": 2},
    },
    "01_async_vs_sync": {
        "quick": {},
        "live": {"users": [10, 120], "duration_s": 3},
        "full": {"users": [10, 20, 40, 80, 160, 320], "duration_s": 15},
        "smoke": {"users": [5, 30], "threads": 10, "duration_s": 2},
    },
    "02_sequential_vs_gather": {
        "quick": {},
        "live": {"duration_s": 3},
        "full": {"users": [100, 250], "io_ms": 200, "duration_s": 15},
        "smoke": {"users": [20], "io_ms": 100, "duration_s": 2},
    },
    "03_cpu_bound": {
        "quick": {},
        "live": {"rounds": 1, "sweep_cpu_n": [18], "duration_s": 2},
        "full": {"rounds": 4, "sweep_cpu_n": [15, 17, 19, 20], "duration_s": 10},
        "smoke": {"rounds": 1, "sweep_cpu_n": [15], "duration_s": 2},
    },
    "05_blocking": {
        "quick": {},
        "live": {"users": [50], "timeout_run_s": 3},
        "full": {"users": [5, 50, 100], "duration_s": 15, "timeout_run_s": 30},
        "smoke": {"users": [2, 5], "duration_s": 2, "timeout_s": 0.3, "timeout_run_s": 3},
    },
    "04_workers": {
        "quick": {},
        "live": {"rounds": 1, "duration_s": 2},
        "full": {"workers": [1, 2, 3, 4], "users": 40, "io_users": 200, "rounds": 3, "duration_s": 10},
        "smoke": {"workers": [1, 2], "io_users": 20, "rounds": 1, "duration_s": 2},
    },
    # 06 counts requests, not seconds: `max_run_s` bounds each run's expected length instead.
    "06_client_side": {
        "quick": {},
        "live": {},  # its quick run cell takes about 20 s already
        "full": {"counts": [100, 1000], "concurrency": [10, 40, 100, 1000], "max_run_s": 60.0},
        "smoke": {"counts": [20, 40], "concurrency": [4], "io_ms": 20, "max_run_s": 1.0},
    },
    # 07 builds its data once per scale: `full` is the size in Carlos Pena's k6 load test (a few minutes,
    # about 2 GB, the first time).
    "07_database": {
        "quick": {},
        "live": {"sweep_cpu_n": [15, 26], "duration_s": 2, "pinned": False, "sweep_rounds": 1},
        "full": {"scale": 1.0, "seed_users": 2000, "sweep_cpu_n": [15, 20, 25, 30], "duration_s": 10},
        "smoke": {
            "scale": 0.001,
            "slow_users": 30,
            "slow_io_ms": 50,
            "seed_users": 20,
            "sweep_users": 4,
            "sweep_cpu_n": [10, 15],
            "duration_s": 2,
            "pinned_rounds": 1,
            "sweep_rounds": 1,
        },
    },
    # 08 and 09 share one calibration per kernel (harness/calibrate.py); `full` sweeps ρ finer and overloads for longer.
    "08_overload": {
        "quick": {},
        "live": {"rhos": [0.6, 0.9], "overload_s": 10, "drain_s": 3, "duration_s": 5},
        "full": {"rhos": [0.2, 0.4, 0.6, 0.7, 0.8, 0.9, 0.95], "overload_s": 20, "drain_s": 6, "duration_s": 15},
        "smoke": {"rhos": [0.6], "overload_s": 4, "drain_s": 2, "duration_s": 2},
    },
    "09_stalls_and_shedding": {
        "quick": {},
        "live": {"duration_s": 5},
        "full": {"duration_s": 15},
        "smoke": {"duration_s": 2, "stall_every_s": 1.0},
    },
    # 10 needs a free-threaded Python (`make python-ft`); without one its runs are the GIL build's alone.
    "10_without_the_gil": {
        "quick": {},
        "live": {"rounds": 1, "duration_s": 2},
        "full": {"rounds": 3, "duration_s": 10},
        "smoke": {"users": 4, "threads": [1, 4], "rounds": 1, "duration_s": 2},
    },
    "11_app_threads": {
        "quick": {},
        "live": {"duration_s": 2},
        "full": {"users": 200, "more_threads": 160, "duration_s": 10},
        "smoke": {"users": 60, "more_threads": 50, "io_ms": 50, "chunk_ms": 20, "duration_s": 2},
    },
    "12_calling_services": {
        "quick": {},
        "live": {"duration_s": 2},
        "full": {"users": 100, "duration_s": 10},
        "smoke": {"users": 10, "io_ms": 50, "duration_s": 2},
    },
    "13_clients_that_leave": {
        "quick": {},
        "live": {"duration_s": 8},  # few requests a second, each ending at the timeout: 8 s is the least
        "full": {"users": 3, "duration_s": 20},
        "smoke": {"tasks": 4, "io_ms": 50, "cpu_n": 15, "timeout_s": 0.1, "duration_s": 2},
    },
    "14_one_slow_route": {
        "quick": {},
        "live": {"duration_s": 6},
        "full": {"duration_s": 20},
        "smoke": {"io_ms": 20, "cpu_n": 20, "probe_every_ms": 20, "duration_s": 2},
    },
    "15_your_own_app": {
        "quick": {},
        "live": {"users": [8, 64], "duration_s": 2},
        "full": {"users": [1, 256], "duration_s": 10},
        "smoke": {"routes": ["GET /report"], "users": [2, 4], "duration_s": 2},
    },
    # 99 only reads the runs on disk: nothing to size.
    "99_summary": {"quick": {}, "live": {}, "full": {}, "smoke": {}},
}

Profile = Literal["quick", "live", "full", "smoke"]
NAMES: tuple[Profile, ...] = get_args(Profile)


def parameters(lesson: str, profile: Profile) -> dict:
    """The parameters to give `lesson` in `profile` (empty: the notebook's own defaults)."""
    choice("profile", profile, NAMES)
    return dict(PROFILES.get(lesson, {}).get(profile, {}))

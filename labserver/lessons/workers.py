"""Lesson 04, workers: its plan and parameter checks, and its parameters for each run profile."""

from __future__ import annotations

from typing import NamedTuple

from labserver import checks
from labserver.demo import cpus
from labserver.harness.load import sizing
from labserver.harness.load.checks import check_sweep
from labserver.harness.plans.plan import mirrored
from labserver.lessons.lesson import Lesson
from labserver.theory import cores as core_model

LESSON = Lesson(
    "04_workers",
    profiles={
        "quick": {},
        "live": {"rounds": 1, "duration_s": 2},
        "full": {"workers": [1, 2, 3, 4], "users": 40, "io_users": 200, "rounds": 3, "duration_s": 10},
        "smoke": {"workers": [1, 2], "io_users": 20, "rounds": 1, "duration_s": 2},
    },
)


class Workers(NamedTuple):
    workers: list[int]  # the worker counts to compare; the parameter's [] sized to the cores
    users: int  # users of the CPU-bound runs; the parameter's 0 sized to the cores
    plan: sizing.Plan  # the I/O-bound run at each count, then the CPU-bound ones in mirrored order; servers by count


def plan(
    *,
    pattern: str,
    workers: list[int] | int,
    users: int,
    cpu_n: int,
    io_users: int,
    io_ms: int,
    rounds: int,
    duration_s: int,
    cores: float | None = None,
) -> Workers:
    """Lesson 04: the CPU-bound and I/O-bound runs at each worker count (sized to `cores`), the rounds, and the plan."""
    cores = cpus.cores() if cores is None else cores
    workers = sizing.worker_counts(checks.parameter("workers", workers, list[int]), cores)
    users = sizing.cpu_users(checks.parameter("users", users, int), cores)
    for w in workers:
        check_sweep([pattern], [users], workers=w, cpu_n=cpu_n, duration_s=duration_s)
        check_sweep([pattern], [io_users], workers=w, io_ms=io_ms, duration_s=duration_s)
    core_model.check_workers(workers)
    checks.whole("rounds", rounds, 1, 5)
    io_runs = [
        dict(pattern=pattern, users=io_users, io_ms=io_ms, server=w, tags={"workload": "I/O-bound"}) for w in workers
    ]
    cpu_runs = [
        dict(pattern=pattern, users=users, cpu_n=cpu_n, server=w, tags={"workload": "CPU-bound"})
        for _, w in mirrored(workers, rounds)  # 1, 2, 3, 3, 2, 1: each count measured early and late
    ]
    servers = {w: {"workers": w, "procs": 0} for w in workers}
    plan = sizing.fit(sizing.Plan(io_runs + cpu_runs, servers, duration_s), cores)
    return Workers(workers, users, plan)

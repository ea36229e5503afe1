"""Lesson 04, workers: its plan and parameter checks, and its parameters for each run profile.

Its rows of the decision card (course/card.py): `CPU_BOUND`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from labserver import checks
from labserver.demo import cpus
from labserver.harness.load import sizing
from labserver.harness.load.checks import check_sweep
from labserver.harness.plans.plan import Run, mirrored
from labserver.lessons.card_row import NOT_YET, Measured, Row, runs_of, side_by_side, span
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


@dataclass(frozen=True)
class Workers:
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
        Run(pattern=pattern, users=io_users, io_ms=io_ms, server=w, tags={"workload": "I/O-bound"}) for w in workers
    ]
    cpu_runs = [
        Run(pattern=pattern, users=users, cpu_n=cpu_n, server=w, tags={"workload": "CPU-bound"})
        for _, w in mirrored(workers, rounds)  # 1, 2, 3, 3, 2, 1: each count measured early and late
    ]
    servers = {w: {"workers": w, "procs": 0} for w in workers}
    plan = sizing.fit(sizing.Plan(io_runs + cpu_runs, servers, duration_s), cores)
    return Workers(workers, users, plan)


def pool_and_workers(runs: pd.DataFrame) -> Measured:
    """Lesson 03: process pool / one-core patterns on fib alone; lesson 04: as many workers as cores / one."""
    parts, ratio = [], math.nan
    one_core = ("threadpool", "sequential")
    wide = side_by_side(runs_of(runs, "03", ("processpool", *one_core)), ("processpool", *one_core))
    wide = wide[(wide["io_ms"] == 0) & (wide["cpu_n"] > 0)] if len(wide) else wide
    if len(wide):
        ratio = float((wide["processpool"] / wide[list(one_core)].mean(axis=1)).median())
        parts.append(f"{ratio:.1f}× (process pool / `def` and `async def`, fib({span(wide['cpu_n'])}))")
    gain = workers_gain(runs_of(runs, "04", "sequential"))
    if gain is not None:
        ratio = gain[1] if math.isnan(ratio) else ratio
        parts.append(f"{gain[1]:.1f}× ({gain[0]} workers / 1)")
    return Measured(ratio, "; ".join(parts) or NOT_YET)


def workers_gain(rows: pd.DataFrame) -> tuple[int, float] | None:
    """(cores, CPU-bound rps of `cores` workers / one worker's), or None without both or with one core."""
    if rows.empty or "usable_cores" not in rows:
        return None
    rows = rows[(rows["cpu_n"] > 0) & (rows["io_ms"] == 0)]
    rps = rows.groupby("workers")["rps"].median()
    usable = rows["usable_cores"].dropna()
    cores = int(usable.min()) if len(usable) else 0
    at = max((w for w in rps.index if w <= cores), default=0)
    if at < 2 or 1 not in rps.index:
        return None
    return int(at), float(rps[at] / rps[1])


# Its rows of the decision card (course/card.py), each with the figure that shows it
CPU_BOUND = Row(
    "CPU-bound work",
    "a process pool (`loop.run_in_executor(pool, f, ...)`), or `--workers` up to the usable cores",
    "cores / cpu: one core per pool process or worker, up to the usable cores",
    "the server process at 100% of one core, the others idle; event-loop lag with async def",
    "process pool / `def` and `async def`; as many workers as cores / one",
    ("03", "04"),
    pool_and_workers,
)

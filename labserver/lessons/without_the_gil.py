"""Lesson 10, without the GIL: its plan and parameter checks, and its parameters for each run profile.

Its rows of the decision card (course/card.py): `FREE_THREADED`, `INTERPRETER_POOL`.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from labserver import checks
from labserver.demo import cpus
from labserver.demo.settings import Settings
from labserver.harness.load import sizing
from labserver.harness.load.checks import check_sweep
from labserver.harness.plans.plan import Run, mirrored
from labserver.harness.servers import interpreters
from labserver.lessons.card_row import NOT_YET, Measured, Row, runs_of, span
from labserver.lessons.lesson import Lesson

# 10 needs a free-threaded Python (`make python-ft`); without one its runs are the GIL build's alone.
LESSON = Lesson(
    "10_without_the_gil",
    profiles={
        "quick": {},
        "live": {"rounds": 1, "duration_s": 2},
        "full": {"rounds": 3, "duration_s": 10},
        "smoke": {"users": 4, "threads": [1, 4], "rounds": 1, "duration_s": 2},
    },
    chart="builds.png",
)


ONE_CORE_USERS = sizing.cpu_users(0, 1)  # users of a run held to one core, on any machine


@dataclass(frozen=True)
class WithoutTheGil:
    users: int  # users of the fib runs on many cores; the parameter's 0 sized to the cores
    one_core_users: int  # users of a run held to one core (a GIL, or async def's one thread): 20 on any machine
    threads: list[int]  # thread-pool sizes of the threads run; the parameter's [] sized to the cores
    free_threaded: Path | None  # the python of a free-threaded build's server environment; None: none here
    missing: str  # why there is none ("" where there is): the lesson says so and its claims skip
    builds: tuple[str, str, str]  # labels: the lab's GIL build, the free-threaded build with its GIL, without
    plans: dict[str, sizing.Plan]  # "fib", "threads" and "fib + sleep": each a Locust process of its own


def plan(
    *,
    users: int,
    cpu_n: int,
    io_ms: int,
    threads: list[int] | int,
    rounds: int,
    duration_s: int,
    cores: float | None = None,
) -> WithoutTheGil:
    """Lesson 10: the fib, threads and fib + sleep runs sized to `cores`, and the free-threaded Python, if any.

    A run held to one core (a GIL, or async def's one thread) gets as many users on 64 cores as
    on 2; the thread pool without a GIL, and the process pools, get enough for every core.
    """
    cores = cpus.cores() if cores is None else cores
    given = checks.parameter("users", users, int)
    users = sizing.cpu_users(given, cores)
    one = given or ONE_CORE_USERS
    threads = checks.parameter("threads", threads, list[int]) or sorted({1, math.ceil(cores), users})
    for t in threads:
        Settings(threads=t).check()
    for io in (0, io_ms):  # fib, then fib + sleep
        check_sweep(
            ["threadpool", "sequential", "processpool", "interpreterpool"],
            [1, one, users],
            cpu_n=cpu_n,
            io_ms=io,
            duration_s=duration_s,
        )
    checks.whole("rounds", rounds, 1, 5)
    try:
        python, missing = interpreters.free_threaded_server(), ""
    except interpreters.NoFreeThreadedPython as e:
        python, missing = None, str(e).split(" Tried:")[0]  # where it looked: interpreters.find_free_threaded()
    version = interpreters.probe(python).label if python else "free-threaded"
    builds = (f"{sys.version.split()[0]}, GIL build", f"{version}, GIL on", f"{version}, GIL off")
    plans = _without_the_gil_plans(
        builds,
        python,
        users=users,
        one=one,
        cpu_n=cpu_n,
        io_ms=io_ms,
        threads=threads,
        rounds=rounds,
        duration_s=duration_s,
    )
    plans = {name: sizing.fit(plan, cores) for name, plan in plans.items()}
    return WithoutTheGil(users, one, threads, python, missing, builds, plans)


def _without_the_gil_plans(builds, python, *, users, one, cpu_n, io_ms, threads, rounds, duration_s):
    """Lesson 10's three plans: each build on fib, threads without a GIL, the free-threaded builds on fib + sleep."""
    gil_build, gil_on, gil_off = builds
    top = max(threads)
    servers = {gil_build: {"threads": top}}
    if python:
        servers |= {
            gil_on: {"python": python, "gil": True, "threads": top},
            gil_off: {"python": python, "gil": False, "threads": top},
        }
    each = {  # each build's patterns, and the users of each: one core's worth where one core is all it can use
        gil_build: [("threadpool", 1), ("threadpool", one), ("processpool", users)],
        gil_on: [("threadpool", 1), ("threadpool", one), ("sequential", one)],
        gil_off: [("threadpool", 1), ("threadpool", users), ("sequential", one), ("processpool", users)],
    }
    # The interpreter pool runs once on each free-threaded build, after the rounds: its claims compare each
    # run with its own prediction, and on many cores its runs need Locust processes of their own.
    once = [(b, "interpreterpool", users) for b in (gil_on, gil_off) if b in servers]
    fib = [
        Run(
            pattern=p,
            users=u,
            cpu_n=cpu_n,
            server=b,
            tags={"build": b, "round": r, "part": "fib", "load": "alone" if u == 1 else "busy"},
        )
        for r, b, p, u in [(r, b, p, u) for r, b in mirrored(list(servers), rounds) for p, u in each[b]]
        + [(0, b, p, u) for b, p, u in once]
    ]
    # the most threads first: one thread's long queue would drain into the next run, and the last has none after it
    sized = {t: {"python": python, "gil": False, "threads": t} for t in sorted(threads, reverse=True)} if python else {}
    by_threads = [
        Run(pattern="threadpool", users=users, cpu_n=cpu_n, server=t, tags={"build": gil_off, "part": "threads"})
        for t in sized
    ]
    slept = [
        Run(
            pattern="threadpool",
            users=one,
            cpu_n=cpu_n,
            io_ms=io_ms,
            server=b,
            tags={"build": b, "part": "fib + sleep"},
        )
        for b in (gil_on, gil_off)
        if b in servers
    ]
    mixed = {b: kw for b, kw in servers.items() if b != gil_build}
    return {
        "fib": sizing.Plan(fib, servers, duration_s),
        "threads": sizing.Plan(by_threads, sized, duration_s),
        "fib + sleep": sizing.Plan(slept, mixed, duration_s),
    }


def free_threads(runs: pd.DataFrame) -> Measured:
    """Lesson 10: the thread pool on fib without the GIL over the same build with it, its busy runs; beside it,
    what a reader compares with: the usual build's thread pool and its process pool, where measured.

    Busy runs are tagged `load` "busy"; runs saved before the tag are those at the lesson's most users.
    """
    rows = runs_of(runs, "10", ("threadpool", "processpool"))
    if rows.empty or "build" not in rows or "part" not in rows:
        return Measured(math.nan, NOT_YET)
    rows = rows[rows["part"] == "fib"]  # the threads run's small pools are no baseline
    if "load" in rows and rows["load"].notna().any():
        rows = rows[rows["load"] == "busy"]
    else:
        rows = rows[rows["users"] == rows["users"].max()]
    build = rows["build"].fillna("").astype(str)
    threads = rows["pattern"] == "threadpool"

    def rps(pattern_rows: pd.Series, label: str) -> float:
        chosen = rows.loc[pattern_rows & build.str.endswith(label), "rps"]
        return float(chosen.mean()) if not chosen.empty else math.nan

    off, on = rps(threads, "GIL off"), rps(threads, "GIL on")
    if math.isnan(off) or math.isnan(on):
        return Measured(math.nan, NOT_YET)
    ratio = off / on
    text = f"{ratio:.1f}× the same build with its GIL"
    usual, pool = rps(threads, "GIL build"), rps(~threads, "GIL build")
    if not math.isnan(usual):
        text += f"; {off / usual:.1f}× the usual build's thread pool"
    if not math.isnan(pool):
        text += f", {off / pool:.1f}× its process pool"
    return Measured(ratio, f"{text} (fib({span(rows['cpu_n'])}))")


def interpreter_pool(runs: pd.DataFrame) -> Measured:
    """Lesson 10: the interpreter pool with the GIL on over the same build's thread pool, their busy runs on fib."""
    rows = runs_of(runs, "10", ("interpreterpool", "threadpool"))
    if rows.empty or "build" not in rows or "load" not in rows:
        return Measured(math.nan, NOT_YET)
    rows = rows[(rows["part"] == "fib") & (rows["load"] == "busy") & rows["build"].astype(str).str.endswith("GIL on")]
    rps = rows.groupby("pattern")["rps"].mean()
    if not {"interpreterpool", "threadpool"} <= set(rps.index):
        return Measured(math.nan, NOT_YET)
    ratio = float(rps["interpreterpool"] / rps["threadpool"])
    busy = rows.loc[rows["pattern"] == "interpreterpool", "server_cpu"].mean()
    return Measured(ratio, f"{ratio:.2f}× the same build's thread pool with its GIL, {busy:.2f} cores busy")


# Its rows of the decision card (course/card.py), each with the figure that shows it
FREE_THREADED = Row(
    "CPU-bound work on a free-threaded Python (3.13t, 3.14t)",
    "a plain `def` (the thread pool); state shared between requests behind a lock",
    "min(threads, users, cores) / cpu, cpu priced on the free-threaded build",
    "one process over 100% CPU; updates lost without a lock",
    "thread pool without the GIL / with it, same build; and / the usual build's thread and process pools",
    ("10",),
    free_threads,
    "each build's CPU per request moves with the machine between runs, the free-threaded build's most: the "
    "model's speed-up is min(threads, users, cores)",
)

INTERPRETER_POOL = Row(
    "CPU-bound work in one process, with the GIL: Python 3.14, or 3.13 with the interpreters-pep-734 backport",
    "an interpreter pool: `loop.run_in_executor(pool, f, ...)` on an `InterpreterPoolExecutor` made in the "
    "lifespan, `f` importable",
    "min(procs, cores) / cpu, as a process pool",
    "one process over 100% CPU with its GIL on; an extension that cannot load in a sub-interpreter fails",
    "interpreter pool / the same build's thread pool, both with the GIL on",
    ("10",),
    interpreter_pool,
)

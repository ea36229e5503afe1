"""Lesson 11, an app's threads: its plan, its parameters for each run profile, and its readings.

Its readings: each part's measured ratio beside the model's, and the threads borrowed.
The lesson shows the runs, the charts and the claims; the arithmetic between them lives here,
under test (tests/course/test_app_threads.py).

Its rows of the decision card (course/card.py): `BLOCKING_DEPENDENCY`.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from typing import cast

import pandas as pd

from labserver import checks
from labserver.charts.telemetry import per_tick
from labserver.demo import cpus
from labserver.demo.settings import THREADS_DEFAULT
from labserver.harness.load import sizing
from labserver.harness.load.checks import check_sweep
from labserver.harness.plans.plan import Run
from labserver.harness.rows import telemetry
from labserver.labels import pattern_label
from labserver.lessons.card_row import NOT_YET, Measured, Row, runs_of, span
from labserver.lessons.lesson import Lesson
from labserver.theory import model
from labserver.theory.workload import Workload

LESSON = Lesson(
    "11_app_threads",
    profiles={
        "quick": {},
        "live": {"duration_s": 2},
        "full": {"users": 200, "more_threads": 160, "duration_s": 10},
        "smoke": {"users": 60, "more_threads": 50, "io_ms": 50, "chunk_ms": 20, "duration_s": 2},
    },
)


@dataclass(frozen=True)
class AppThreads:
    threads: list[int]  # the thread limits of part 1: AnyIO's default, then `more_threads`
    plan: sizing.Plan  # every run, tagged by its part; servers by thread limit, and by pool for part 5


def plan(
    *,
    users: int,
    io_ms: int,
    more_threads: int,
    chunks: int,
    chunk_ms: int,
    connections: int,
    duration_s: int,
    cores: float | None = None,
) -> AppThreads:
    """Lesson 11: the thread limit raised, a `def` dependency against an `async def` one, streams from a plain
    generator against an async one, a `def` background task against an `async def` one, and a session from a
    pool of fewer connections than threads, borrowed in the endpoint and in a `yield` dependency; every run
    past the default thread pool."""
    cores = cpus.cores() if cores is None else cores
    checks.whole("users", users, 1, 2000)
    default = THREADS_DEFAULT
    if not default < more_threads:
        raise ValueError(f"more_threads must be above the default {default}, got {more_threads}")
    if users <= more_threads:
        raise ValueError(f"users must be above more_threads ({more_threads}), so that the threads bound, got {users}")
    if not 1 <= connections < default:
        raise ValueError(f"connections must be from 1 to {default - 1}, fewer than the threads, got {connections}")
    servers: dict = {t: {"threads": t, "procs": 0} for t in (default, more_threads)}
    servers["pool"] = {"threads": default, "procs": 0, "db_pool": connections}  # part 5: fewer connections than threads
    parts = [
        ("the thread limit", "threadpool", dict(io_ms=io_ms), (default, more_threads)),
        ("a dependency", "syncdep", dict(io_ms=io_ms), (default,)),
        ("a dependency", "asyncdep", dict(io_ms=io_ms), (default,)),
        ("a stream", "streamsync", dict(tasks=chunks, io_ms=chunk_ms), (default,)),
        ("a stream", "streamasync", dict(tasks=chunks, io_ms=chunk_ms), (default,)),
        # The async task first: a `def` task's run leaves tasks queued for threads after its window, which would
        # borrow the pool from the run after it. Both run three times as long: in a `def` task's first round its
        # tasks only begin to queue, and the replies come faster than they will once the queue holds them.
        ("a background task", "bgasync", dict(io_ms=io_ms, duration_s=3 * duration_s), (default,)),
        ("a background task", "bgsync", dict(io_ms=io_ms, duration_s=3 * duration_s), (default,)),
        # Last, the session from a dependency: its run stalls, and its users and its server stay stuck.
        ("a pooled session", "pooledinside", dict(io_ms=io_ms), ("pool",)),
        ("a pooled session", "pooled", dict(io_ms=io_ms), ("pool",)),
    ]
    runs: list[Run] = []
    for part, pattern, work, limits in parts:
        for t in limits:
            lasts_s, tasks = work.get("duration_s", duration_s), work.get("tasks")
            check_sweep(
                [pattern], [users], threads=servers[t]["threads"], tasks=tasks, io_ms=work["io_ms"], duration_s=lasts_s
            )
            pool = {"db_pool": servers[t]["db_pool"]} if "db_pool" in servers[t] else {}  # part 5's pool, in its rows
            runs.append(cast(Run, dict(pattern=pattern, users=users, server=t, tags={"part": part, **pool}, **work)))
    plan = sizing.fit(sizing.Plan(runs, servers, duration_s), cores)
    return AppThreads([default, more_threads], plan)


def predicted(plan: sizing.Plan, cores: float) -> pd.DataFrame:
    """The model's throughput and latency for each planned run, in its order, with its part and thread limit."""
    rows = []
    for run in plan.runs:
        settings = plan.settings(run["server"], cores)
        workload = Workload.of(run)
        p = model.predict(workload, settings, cores=cores)
        rows.append(
            {
                "part": run["tags"]["part"],
                "pattern": run["pattern"],
                "threads": settings.threads,
                "connections": settings.db_pool if workload.traits.connection else None,
                "users": run["users"],
                "predicted_rps": round(p.rps, 1),
                "predicted_ms": round(p.latency_ms, 1),
                "bottleneck": p.bottleneck,
            }
        )
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Ratio:
    """One run's req/s over another's: as measured, and as each run's own prediction has it."""

    measured: float
    predicted: float


def ratio(runs: pd.DataFrame, top: dict, bottom: dict) -> Ratio:
    """The mean req/s of the runs matching `top` (column: value) over those matching `bottom`."""

    def mean(match: dict) -> pd.Series:
        chosen = runs
        for column, value in match.items():
            chosen = chosen[chosen[column] == value]
        return chosen[["rps", "predicted_rps"]].mean()

    a, b = mean(top), mean(bottom)
    return Ratio(float(a["rps"] / b["rps"]), float(a["predicted_rps"] / b["predicted_rps"]))


def borrowed(runs: pd.DataFrame, pattern: str) -> float:
    """The median number of pool threads `pattern`'s first run kept borrowed, from the server's telemetry."""
    run_id = runs.loc[runs["pattern"] == pattern, "run_id"].iloc[0]
    samples = telemetry.load(run_id)
    return float(per_tick(samples)["threads_busy"].median()) if len(samples) else float("nan")


# Short names for a chart's axis: six runs side by side.
SHORT = {
    "syncdep": "def dependency",
    "asyncdep": "async def dependency",
    "streamsync": "plain generator",
    "streamasync": "async generator",
    "bgsync": "def task",
    "bgasync": "async def task",
    "pooled": "session from a dependency",
    "pooledinside": "session in the endpoint",
}


def named(runs: pd.DataFrame) -> pd.DataFrame:
    """`runs` with an `endpoint` column for a chart: what each run varies, short, and its thread limit in part 1."""
    limit = runs["part"] == "the thread limit"
    label = runs["pattern"].map(lambda p: SHORT.get(p, pattern_label(p)))
    label = label.where(~limit, "def, " + runs["threads"].astype(int).astype(str) + " threads")
    return runs.assign(endpoint=label.map(lambda text: textwrap.fill(text, 12)))


def stalled(runs: pd.DataFrame) -> float:
    """The replies after the first round of the session from a dependency, per connection: below 1, it stalled."""
    run = runs[runs["pattern"] == "pooled"].iloc[0]
    return float(run["requests"]) / float(run["db_pool"])


def blocking_dependency(runs: pd.DataFrame) -> Measured:
    """Lesson 11: an `async def` endpoint with a plain `def` dependency that blocks, over threads / io; and the
    same with an `async def` dependency, over it."""
    rows = runs_of(runs, "11", ("syncdep", "asyncdep"))
    if rows.empty or not {"syncdep", "asyncdep"} <= set(rows["pattern"]):
        return Measured(math.nan, NOT_YET)
    sync = rows[rows["pattern"] == "syncdep"]
    ratio = float((sync["rps"] / (sync["workers"] * sync["threads"] / (sync["tasks"] * sync["io_ms"] / 1000))).median())
    gain = float(rows.loc[rows["pattern"] == "asyncdep", "rps"].median() / sync["rps"].median())
    users = span(rows["users"])
    return Measured(
        ratio, f"{ratio:.2f} of threads / io with a `def` dependency; an `async def` one {gain:.1f}× ({users} users)"
    )


# Its rows of the decision card (course/card.py), each with the figure that shows it
BLOCKING_DEPENDENCY = Row(
    "A dependency or a streamed response that waits on a blocking library",
    "`async def` dependencies and async generators over an async library; a plain `def` one holds a thread",
    "threads / the seconds each holds its thread, for every plain `def` that waits, endpoint or not; raise the "
    "40 in the lifespan",
    "all 40 thread tokens borrowed, requests waiting for a thread, the CPU idle",
    "`def` dependency under `async def` / (threads / io); `async def` dependency / `def` one",
    ("11",),
    blocking_dependency,
)

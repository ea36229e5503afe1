"""Lesson 07, database I/O: its plan and parameter checks, and its parameters for each run profile.

Its rows of the decision card (course/card.py): `DATABASE_POOL`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from labserver import checks
from labserver.lessons.card_row import NOT_YET, Measured, Row, runs_of, span
from labserver.lessons.lesson import Lesson
from labserver.postgres import runs as database_runs

# 07 builds its data once per scale: `full` is the size in Carlos Pena's k6 load test (a few minutes,
# about 2 GB, the first time).
LESSON = Lesson(
    "07_database",
    profiles={
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
    chart="bounds.png",
)


@dataclass(frozen=True)
class Database:
    sweep_cpu_n: list[int]
    plan: list[database_runs.Part]  # the three parts: (endpoints, users, io_ms per query, fib depth or depths)


def plan(
    *,
    selects: list[str],
    simulations: list[str],
    scale: float,
    threads: int,
    db_pool: int,
    slow_io_ms: int,
    slow_users: int,
    seed_users: int,
    sweep_users: int,
    sweep_cpu_n: list[int] | int,
    pinned_rounds: int,
    sweep_rounds: int,
    duration_s: int,
) -> Database:
    """Lesson 07: the server and its pools, the data's scale, the three parts' runs, and the rounds."""
    sweep_cpu_n = checks.parameter("sweep_cpu_n", sweep_cpu_n, list[int])
    plan: list[database_runs.Part] = [
        (selects, slow_users, slow_io_ms, 0),
        (selects, seed_users, 0, 0),
        (simulations, sweep_users, 0, sweep_cpu_n),
    ]
    # part 2 runs 2 s longer than the others: its thousand users connect at once
    database_runs.check(plan, duration_s + 2, scale=scale, threads=threads, db_pool=db_pool)
    checks.whole("pinned_rounds", pinned_rounds, 1, 9)
    checks.whole("sweep_rounds", sweep_rounds, 1, 9)
    return Database(sweep_cpu_n, plan)


def database_pool(runs: pd.DataFrame) -> Measured:
    """Lesson 07: a sync driver's req/s over its pool's connections / hold time, where the pool is the scarcer slot."""
    rows = runs_of(runs, "07", "sync_select")
    if rows.empty or not {"db_pool", "db_hold_ms"} <= set(rows):
        return Measured(math.nan, NOT_YET)
    rows = rows[(rows["db_pool"] < rows["threads"]) & (rows["users"] > rows["db_pool"]) & (rows["io_ms"] > 0)]
    if rows.empty:
        return Measured(math.nan, NOT_YET)
    ratio = float((rows["rps"] / (rows["db_pool"] / (rows["db_hold_ms"] / 1000))).median())
    pool, threads = span(rows["db_pool"]), span(rows["threads"])
    return Measured(ratio, f"{ratio:.2f} of connections / hold ({pool} connections, {threads} threads)")


# Its rows of the decision card (course/card.py), each with the figure that shows it
DATABASE_POOL = Row(
    "A database: a connection pool in the app",
    "the async driver in `async def` (its CPU per request was the lower in lesson 07's part 2; on one core a sync "
    "driver's falls, which can narrow the gap or turn the order); a sync one in a plain `def` that takes its "
    "connection in the endpoint (a session that connects at its first query, as SQLAlchemy's does; a `def` `yield` "
    "dependency that connects before its `yield` can stall); a pool sized by Little's law, workers × pool under the "
    "server's `max_connections`, and the thread limit lowered to the pool: with some pools, many threads left to "
    "wait for a connection cost the worker's core (lesson 15, exercise 4)",
    "connections / hold time (Little's law); a `def` min(threads / S, connections / hold), S its time alone; "
    "with fast queries, 1 / cpu per worker",
    "requests wait for a connection with the database idle, or the pool's timeout errors",
    "sync driver / (connections / hold), the pool scarcer than the threads",
    ("07", "11"),
    database_pool,
)

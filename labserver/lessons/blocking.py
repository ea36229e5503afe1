"""Lesson 05, the blocking call: its plan and parameter checks, and its parameters for each run profile.

Its rows of the decision card (course/card.py): `HANDED_TO_A_THREAD`, `NEVER_BLOCK_THE_LOOP`.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from labserver import checks
from labserver.harness.load.checks import check_sweep
from labserver.lessons.card_row import Measured, Row, bound
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


@dataclass(frozen=True)
class Blocking:
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


def offload_at_threads(runs: pd.DataFrame) -> Measured:
    """Lesson 05: `async def` handing its blocking call to a thread, over threads / io."""
    return bound(runs, "05", "offload", "threads", "offload")


def blocked_loop(runs: pd.DataFrame) -> Measured:
    """Lesson 05: `time.sleep` in `async def`, its throughput over workers / io at every number of users."""
    return bound(runs, "05", "blocking", "workers", "time.sleep in async def")


# Its rows of the decision card (course/card.py), each with the figure that shows it
HANDED_TO_A_THREAD = Row(
    "A blocking call inside `async def` that you cannot change",
    "hand it to a thread: `await run_in_threadpool(f, ...)` or `await asyncio.to_thread(f, ...)`",
    "threads / io with `run_in_threadpool` (AnyIO's 40); `asyncio.to_thread`: its executor's min(32, CPUs + 4)"
    " (the machine's CPUs before 3.13)",
    "run_in_threadpool: all 40 tokens borrowed; to_thread: its executor's threads all busy",
    "offload / (threads / io)",
    ("05",),
    offload_at_threads,
)

NEVER_BLOCK_THE_LOOP = Row(
    "Never: `time.sleep` (or any blocking call) in `async def`",
    "never; a plain `def`, or hand the call to a thread",
    "workers / io: 1 / io per worker, whatever the users",
    "req/s flat at 1 / io per worker whatever the users; event-loop lag of the order of users × io, not io",
    "time.sleep in async def / (workers / io)",
    ("05",),
    blocked_loop,
)

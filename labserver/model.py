"""Theory beside every measurement: throughput and latency predicted for each pattern.

A closed loop of `users` with no think time against a server with C concurrent slots and
service time S gives X = min(users / S, C / S, CPU capacity / CPU per request) (the
bottleneck law), and each user then waits R = users / X (Little's law).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from functools import cache

import pandas as pd

from labserver.work import fib

ASYNC = ("sequential", "gather", "processpool")


@dataclass(frozen=True)
class Prediction:
    rps: float
    latency_ms: float
    bottleneck: str  # what sets the throughput: users, threads, event loop, cores, ...


@cache
def cpu_ms(cpu_n: int, repeat: int = 3) -> float:
    """Measured time of one fib(cpu_n) on this machine, in ms (best of `repeat`)."""
    if cpu_n <= 1:
        return 0.0
    best = math.inf
    for _ in range(repeat):
        started = time.perf_counter()
        fib(cpu_n)
        best = min(best, time.perf_counter() - started)
    return best * 1000


def predict(
    pattern: str,
    users: int,
    tasks: int = 1,
    io_ms: float = 0.0,
    cpu_n: int = 0,
    threads: int = 40,
    workers: int = 1,
    procs: int | None = None,
    cores: int | None = None,
    cpu_ms_per_task: float | None = None,
) -> Prediction:
    """Predicted throughput (req/s) and mean latency (ms) of `pattern` under `users` closed-loop users.

    CPU work is priced by `cpu_ms_per_task` if given, otherwise by timing fib(cpu_n) here.
    """
    cores = cores or os.cpu_count() or 1
    procs = cores if procs is None else procs
    cpu = (cpu_ms(cpu_n) if cpu_ms_per_task is None else cpu_ms_per_task) / 1000  # s per sub-task
    io = io_ms / 1000
    service = (io + tasks * cpu) if pattern == "gather" else tasks * (io + cpu)  # one request alone, in s
    if pattern in ("mixed", "wrapped"):
        service += tasks * io  # seed 001's mixed endpoints: an awaited and a blocking io_ms per sub-task
    if service <= 0:
        return Prediction(math.nan, math.nan, "no work to model")

    limits = {"users": users / service}
    cpu_per_request = tasks * cpu
    if pattern in ("threadpool", "wrapped"):
        limits["threads"] = workers * threads / service
    if pattern == "blocking":
        limits["event loop"] = workers / service  # the loop is held for the whole request
    if pattern == "mixed":
        limits["event loop"] = workers / (tasks * (io + cpu))  # held for the blocking half only
    if cpu_per_request > 0:
        if pattern == "processpool":
            limits["cores"] = min(workers * procs, cores) / cpu_per_request
        else:
            # CPU runs under the GIL of its worker: one core per worker at most
            limits["GIL (one core per worker)" if workers < cores else "cores"] = min(workers, cores) / cpu_per_request
    bottleneck = min(limits, key=limits.get)
    rps = limits[bottleneck]
    return Prediction(rps=rps, latency_ms=users / rps * 1000, bottleneck=bottleneck)


def predict_frame(patterns: list[str], users: list[int], **kw) -> pd.DataFrame:
    """The prediction for every pattern × users, as a table to show before measuring."""
    rows = []
    for pattern in patterns:
        for u in users:
            p = predict(pattern, u, **kw)
            rows.append({"pattern": pattern, "users": u, "predicted_rps": p.rps, "predicted_ms": p.latency_ms,
                         "bottleneck": p.bottleneck})  # fmt: skip
    return pd.DataFrame(rows)

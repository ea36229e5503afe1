"""Repeatability: lesson 01's headline ratio measured three times on one server, and its spread."""

from __future__ import annotations

import statistics

from labserver.course.bench.measure import IO_MS, quiet_run, ready_s
from labserver.harness.servers.launcher import LabServer

USERS = 80  # lesson 01's claim: at 2× the 40-thread pool, async serves ≥ 2× the requests of `def`
TIMES = 3


def spread(values: list[float]) -> float:
    """(largest − smallest) / median: 0.05 means the values lie within 5% of their middle."""
    return (max(values) - min(values)) / statistics.median(values) if values else float("nan")


def repeatability(duration_s: int, ready: list[float], runs: list[dict]) -> dict:
    """Lesson 01's headline, async / sync throughput at USERS users, TIMES times on one server."""
    values = []
    with LabServer() as server:
        ready.append(ready_s(server))
        for _ in range(TIMES):
            pair = {p: quiet_run(server, p, USERS, duration_s, io_ms=IO_MS) for p in ("sequential", "threadpool")}
            runs += pair.values()
            values.append(pair["sequential"]["rps"] / pair["threadpool"]["rps"])
            print(f"  repeatability: {values[-1]:.3f}", flush=True)
    return {
        "what": f"lesson 01: async / sync throughput at {USERS} users, {IO_MS} ms I/O (claim ≥ 2)",
        "values": values,
        "spread": spread(values),
    }

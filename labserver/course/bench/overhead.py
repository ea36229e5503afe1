"""The harness's own time: a server's start, Locust's first request, and a run's time outside its window."""

from __future__ import annotations

import statistics

from labserver.course.bench.measure import ready_s
from labserver.harness.servers.launcher import LabServer

BARE_STARTS = 3  # so that the median is not one server's luck


def overhead(ready: list[float], runs: list[dict]) -> dict:
    """Medians of: server start to /health, Locust start to its first request, a run outside its window."""
    for _ in range(BARE_STARTS):
        with LabServer() as server:
            ready.append(ready_s(server))
    return {
        "server_ready": _median(ready),
        "locust_first_request": _median(r["locust_first_request_s"] for r in runs),
        "per_run": _median(r["run_s"] - r["window_s"] for r in runs),
    }


def _median(values) -> float:
    values = list(values)
    return statistics.median(values) if values else float("nan")

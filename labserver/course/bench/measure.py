"""One bench run, measured once the machine is quiet: the run's row plus what the bench adds to it."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from labserver.harness.load.run import run_load
from labserver.harness.plans.plan import LoadOptions
from labserver.harness.processes.machine import wait_until_quiet
from labserver.harness.rows import records
from labserver.harness.servers.launcher import LabServer

if TYPE_CHECKING:
    from typing_extensions import Unpack

IO_MS = 100  # every part's endpoint: /sequential, one 100 ms await
# On a shared machine: wait for others' work to stop before a run, and measure again a run during
# which other programs still kept more than this many cores busy.
OTHER_CPU_MAX = 0.25
ATTEMPTS = 3
QUIET_WAIT_S = 60.0


def first_request_delay(per_user: list[list], spawned_at: float) -> float:
    """Seconds from starting Locust (`spawned_at`) to the first request it sent (a reply's end minus its latency)."""
    sent = [r.sent for user in per_user for r in user]
    return min(sent) - spawned_at if sent else float("nan")


def locust_rps(path: Path) -> float:
    """Locust's own throughput from its --json-file: requests over first-to-last reply, warm-up included."""
    try:
        stats = json.loads(path.read_text())[0]
    except (OSError, ValueError, IndexError):
        return float("nan")
    span = stats["last_request_timestamp"] - stats["start_time"]
    return (stats["num_requests"] - 1) / span if span > 0 else float("nan")


def ready_s(server: LabServer) -> float:
    """How long `server`'s start took, to its first answer on /health (a started server always has it)."""
    assert server.ready_s is not None, "start the server first"
    return server.ready_s


def quiet() -> float:
    """Wait (up to QUIET_WAIT_S) until other programs keep at most OTHER_CPU_MAX cores busy; the seconds waited."""
    return wait_until_quiet(OTHER_CPU_MAX, timeout_s=QUIET_WAIT_S)


def measured_run(
    server: LabServer, pattern: str, users: int, duration_s: int, *, io_ms: int = 0, **load: Unpack[LoadOptions]
) -> dict:
    """One run_load; the run's row (machine and other CPU included) plus what the bench adds."""
    spawned_at, started = time.time(), time.perf_counter()
    options: LoadOptions = {**load, "lesson": "bench", "progress": False}  # the bench's runs, with no view
    result = run_load(server, pattern, users, io_ms=io_ms, duration_s=duration_s, **options)
    row = dict(result.row)
    row["run_s"] = time.perf_counter() - started
    row["locust_first_request_s"] = first_request_delay(records.read(result.path), spawned_at)
    row["locust_rps"] = locust_rps(result.path / "locust.json")
    return row


def quiet_run(
    server: LabServer, pattern: str, users: int, duration_s: int, *, io_ms: int = 0, **load: Unpack[LoadOptions]
) -> dict:
    """`measured_run` once the machine is quiet, again (up to ATTEMPTS) if other programs still took CPU meanwhile."""
    return quietly(lambda: measured_run(server, pattern, users, duration_s, io_ms=io_ms, **load))


def quietly(measure: Callable[[], dict], other_cpu_max: float = OTHER_CPU_MAX) -> dict:
    """`measure()`'s row once the machine is quiet; again (up to ATTEMPTS) while others took CPU: the quietest try.

    A run during which other programs kept more than `other_cpu_max` cores busy is measured again.
    """
    tries = []
    for _ in range(ATTEMPTS):
        waited = quiet()
        tries.append({**measure(), "waited_s": waited})
        if tries[-1]["other_cpu"] <= other_cpu_max:  # NaN is not quiet either
            break
    best = min(tries, key=lambda r: r["other_cpu"] if r["other_cpu"] == r["other_cpu"] else math.inf)
    return {**best, "attempts": len(tries)}

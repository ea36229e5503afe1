"""The harness's fidelity: the ideal async endpoint measured beside predicted, from one user alone to 400."""

from __future__ import annotations

import pandas as pd

from labserver.course.bench.measure import IO_MS, quiet_run, ready_s
from labserver.harness.servers.launcher import LabServer
from labserver.theory import model

USERS = (50, 100, 200, 400)
COLUMNS = [
    "users",
    "processes",
    "predicted_rps",
    "measured_rps",
    "locust_rps",
    "ratio",
    "predicted_cpu_rps",
    "ratio_cpu",
    "locust_cpu",
    "server_cpu",
    "other_cpu",
    "machine_cpu",
    "server_ms",
    "locust_ms",
    "server_ms_model",
    "p50_ms",
    "mean_ms",
    "window_s",
    "run_s",
    "locust_first_request_s",
    "attempts",
    "waited_s",
    "valid",
    "problems",
]


def harness(duration_s: int, ready: list[float]) -> tuple[list[dict], dict]:
    """One user alone, then the ideal async endpoint at each of USERS, with one and two Locust processes; one server."""
    rows = []
    with LabServer() as server:
        ready.append(ready_s(server))
        alone = _alone(quiet_run(server, "sequential", 1, duration_s, io_ms=IO_MS))
        for processes in (1, 2):
            for users in USERS:
                rows.append(quiet_run(server, "sequential", users, duration_s, io_ms=IO_MS, processes=processes))
                print(
                    f"  harness: {processes} Locust process(es), {users} users: {rows[-1]['rps']:.0f} req/s", flush=True
                )
    return _with_models(pd.DataFrame(rows)), alone


def _alone(one: dict) -> dict:
    print(f"  harness: 1 user alone: {one['rps']:.2f} req/s, {one['ratio']:.3f} of Little's law", flush=True)
    return {
        "rps": one["rps"],
        "mean_ms": one["mean_ms"],
        "p50_ms": one["p50_ms"],
        "ratio": one["ratio"],
        "what": f"one user alone, {IO_MS} ms I/O: measured / Little's law with no queue at all",
    }


def _with_models(frame: pd.DataFrame) -> list[dict]:
    """The runs beside both predictions: Little's law, and the curve with the server's own CPU per request."""
    server_ms = model.server_cpu_ms(frame)  # measured in the busiest run
    curve = model.with_server_cpu(frame, server_ms)
    out = frame.assign(
        measured_rps=frame["rps"],
        predicted_cpu_rps=curve["predicted_rps"],
        ratio_cpu=curve["ratio"],
        server_ms=frame["server_cpu"] / frame["rps"] * 1000,
        locust_ms=frame["locust_cpu"] / frame["rps"] * 1000,
        server_ms_model=server_ms,
        valid=frame["valid"].astype(bool),
    )
    return out[COLUMNS].to_dict("records")

"""The server's own telemetry (sampled every 100 ms per worker) must not move the measurement."""

from __future__ import annotations

from typing import Any

import pandas as pd

from labserver.course.bench.measure import IO_MS, quiet, ready_s
from labserver.harness.load.run import run_plan
from labserver.harness.plans.plan import Run, mirrored
from labserver.harness.servers.launcher import LabServer, running

# the event loop at its busiest in the lab, and a full thread pool with a queue
PLAN = (("sequential", 200), ("threadpool", 80))


def telemetry_cost(duration_s: int, ready: list[float]) -> dict:
    """PLAN on a server that samples its telemetry and on one that does not: measured / predicted of each run.

    Both servers run at once and take turns in one Locust plan, in mirrored order (on, off, …,
    off, on), so that the machine's drift falls on both alike; each ratio is the mean of its two.
    """
    with running([LabServer(), LabServer(telemetry=False)]) as (on, off):
        ready += [ready_s(on), ready_s(off)]
        turns = [(mode, server, p, u) for p, u in PLAN for mode, server in (("on", on), ("off", off))]
        plan = [
            Run(pattern=p, users=u, io_ms=IO_MS, server=server, tags={"telemetry": mode})
            for _, (mode, server, p, u) in mirrored(turns, 2)
        ]
        quiet()
        rows = [r.row for r in run_plan(on, plan, duration_s=duration_s, lesson="bench", progress=False)]
    frame = pd.DataFrame(rows).groupby(["pattern", "users", "telemetry"], sort=False)["ratio"].mean()
    runs = [f"{p} × {u}" for p, u in PLAN]
    out: dict[str, Any] = {
        "what": f"{', '.join(runs)} users, {IO_MS} ms I/O, {duration_s} s each, twice, telemetry on and off",
        "runs": runs,
        "on_ratios": [float(frame[p, u, "on"]) for p, u in PLAN],
        "off_ratios": [float(frame[p, u, "off"]) for p, u in PLAN],
        "valid": all(bool(r["valid"]) for r in rows),
    }
    shifts = [a - b for a, b in zip(out["on_ratios"], out["off_ratios"], strict=True)]
    out["largest_shift"] = max(shifts, key=abs)
    for mode in ("on", "off"):
        print(f"  telemetry {mode}: measured/predicted {', '.join(f'{x:.3f}' for x in out[f'{mode}_ratios'])}")
    return out

"""What a notebook's live view costs the busiest run: its throughput with a frame a second, against none.

The same run, alone in its plan, with the view off and on in mirrored rounds (off, on | on, off
| …), so that the machine's drift falls on both alike; each round gives one ratio, on / off,
and its cost, 1 − that ratio: the share of throughput the view took. The view is the
notebook's (charts/live.py), drawing every frame without showing it; Locust streams its records
for it (--live-file) only when it is on, so "off" is a plan with no view at all.
"""

from __future__ import annotations

import functools
import math
import statistics
from typing import Literal

from labserver.course.bench.measure import IO_MS, quietly, ready_s
from labserver.harness.load.run import run_plan
from labserver.harness.plans.plan import Run, mirrored
from labserver.harness.servers.launcher import LabServer

USERS = 400  # the bench's busy run: about 4,000 req/s offered, which fills both cores of a small machine
ROUNDS = 8  # off, on | on, off | …: a round's noise is larger than the cost it measures, their median is not
# The cost measured is a fraction of a percent: a run during which others kept more than this many
# cores busy is measured again (the view's own drawing counts there too, about 0.01).
OTHER_CPU_MAX = 0.06
Mode = Literal["off", "on"]  # the view off (a plan with no view at all) or drawing every frame
MODES: tuple[Mode, ...] = ("off", "on")  # each round's order before it is mirrored


def live_view(duration_s: int, ready: list[float]) -> dict:
    """ROUNDS mirrored rounds of the busy run with the view off and on: each round's cost, and each frame's CPU."""
    from labserver.charts import live  # the course may draw; imported only when this part runs

    render_s: list[float] = []

    def measure(server: LabServer, mode: Mode) -> dict:
        view = live.View(show=False) if mode == "on" else None  # one a plan, as a notebook cell has
        run = Run(pattern="sequential", users=USERS, io_ms=IO_MS)
        (done,) = run_plan(server, [run], duration_s=duration_s, lesson="bench", progress=False, watch=view)
        render_s.extend(view.render_s[1:] if view else [])  # a View's first frame draws everything, fonts included
        print(f"  live view {mode}: {done.row['rps']:.0f} req/s, measured/predicted {done.row['ratio']:.3f}")
        return done.row

    rows = []
    with LabServer() as server:
        ready.append(ready_s(server))
        for r, mode in mirrored(list(MODES), ROUNDS):
            row = quietly(functools.partial(measure, server, mode), OTHER_CPU_MAX)
            rows.append({**row, "round": r, "mode": mode})
    frames = [s * 1000 for s in render_s]
    return {
        "what": f"/sequential, {IO_MS} ms I/O, {USERS} users, {duration_s} s each, {ROUNDS} mirrored rounds",
        **rounds(rows),
        "frames": len(frames),
        "frame_ms": statistics.median(frames) if frames else math.nan,
        "frame_ms_max": max(frames, default=math.nan),
    }


def rounds(rows: list[dict]) -> dict:
    """Each round's throughput off and on and its cost (1 − on / off); their median and range; the runs' own figures."""
    per_round = []
    for r in sorted({row["round"] for row in rows}):
        off, on = ({row["mode"]: row for row in rows if row["round"] == r}[m] for m in MODES)
        per_round.append(
            {"round": r + 1, "off_rps": off["rps"], "on_rps": on["rps"], "cost": 1 - on["rps"] / off["rps"]}
        )
    costs = [p["cost"] for p in per_round]
    out: dict = {
        "rounds": per_round,
        "cost": statistics.median(costs) if costs else math.nan,
        "cost_min": min(costs, default=math.nan),
        "cost_max": max(costs, default=math.nan),
    }
    for mode in MODES:
        mine = [row for row in rows if row["mode"] == mode]
        out[f"{mode}_ratios"] = [row["ratio"] for row in mine]
        out[f"{mode}_locust_ms"] = statistics.mean(row["locust_ms"] for row in mine) if mine else math.nan
        out[f"{mode}_other_cpu"] = statistics.mean(row["other_cpu"] for row in mine) if mine else math.nan
        out[f"{mode}_valid"] = all(bool(row["valid"]) for row in mine)
    return out

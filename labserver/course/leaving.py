"""Lesson 13's readings: what a request costs the server after its client gave up, beside the model.

A closed-loop user whose timeout is shorter than the work sends a request, gives up at the
timeout and sends the next: users / timeout requests a second, each abandoned. The server
spends on each what its endpoint runs before it stops: every sub-task where nothing checks,
and, where the endpoint checks between sub-tasks (`watchful`), those begun before the client
left and one more, whose end finds the connection closed.
"""

from __future__ import annotations

import math

import pandas as pd

from labserver.course import sizing
from labserver.theory import model


def gone(users: int, timeout_s: float) -> model.Prediction:
    """A closed loop whose every request ends at the client's timeout: users / timeout requests a second."""
    return model.Prediction(rps=users / timeout_s, latency_ms=timeout_s * 1000, bottleneck="the client's timeout")


def sub_tasks_run(pattern: str, tasks: int, io_ms: int, fib_ms: float, timeout_s: float) -> int:
    """The sub-tasks of io_ms + fib a request runs when its client leaves at `timeout_s`: all of them, unless the
    endpoint checks after each (`watchful`), which stops at the first check after the client left."""
    if pattern != "watchful":
        return tasks
    return min(tasks, math.floor(timeout_s * 1000 / (io_ms + fib_ms)) + 1)


def predicted(plan: sizing.Plan, fib_ms: float) -> pd.DataFrame:
    """Each planned run: its requests a second, the sub-tasks each runs, and the server's CPU per request (fib's)."""
    timeout_s = plan.load["timeout_s"]
    rows = []
    for run in plan.runs:
        ran = sub_tasks_run(run["pattern"], run["tasks"], run["io_ms"], fib_ms, timeout_s)
        rows.append(
            {
                "pattern": run["pattern"],
                "users": run["users"],
                "timeout_s": timeout_s,
                "work_alone_s": round(run["tasks"] * (run["io_ms"] + fib_ms) / 1000, 3),
                "predicted_rps": round(gone(run["users"], timeout_s).rps, 1),
                "sub_tasks_run": ran,
                "predicted_cpu_ms": round(ran * fib_ms, 1),
            }
        )
    return pd.DataFrame(rows)


def beside(runs: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """The measured runs with each one's predicted sub-tasks and CPU per request (`predicted`'s) beside them."""
    return runs.merge(table[["pattern", "sub_tasks_run", "predicted_cpu_ms"]], on="pattern", how="left")


def cpu_ratio(runs: pd.DataFrame) -> float:
    """The server CPU per abandoned request of `watchful` over `sequential`'s."""
    cost = runs.set_index("pattern")["server_ms"]
    return float(cost["watchful"] / cost["sequential"])

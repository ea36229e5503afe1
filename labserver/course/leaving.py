"""Lesson 13's readings: what a request costs the server after its client gave up, beside the model.

A closed-loop user whose timeout is shorter than the work sends a request, gives up at the
timeout and sends the next: users / timeout requests a second, each abandoned. The server
spends on each what its endpoint runs before it stops: every sub-task where nothing checks,
and, where the endpoint checks after each sub-task (`watchful`), those begun before the client
left, the last of which ends, finds the connection closed and stops the rest. What a request
costs besides its fib (a new connection after each timeout, the framework) is measured by a run
without fib, and taken off the others. The sub-tasks a request ran are read by Little's law, not
from its CPU (a fib's CPU in the server reads up to a third above the notebook's timing): the
requests the server held in flight, on average over the run, divided by the rate they came give
each one's time in the server, which is so many sub-tasks of io + fib.
"""

from __future__ import annotations

import math

import pandas as pd

from labserver.course import sizing
from labserver.demo import hung
from labserver.harness import telemetry
from labserver.theory import model


def gone(users: int, timeout_s: float) -> model.Prediction:
    """A closed loop whose every request ends at the client's timeout: users / timeout requests a second."""
    return model.Prediction(rps=users / timeout_s, latency_ms=timeout_s * 1000, bottleneck="the client's timeout")


def answered(io_ms: int) -> model.Prediction:
    """An open loop whose every request is answered 504 once its hung call is given up on, GIVE_UP_AFTER × io_ms
    after it was sent: none served (an open loop's rate counts the answers of 200)."""
    return model.Prediction(rps=0.0, latency_ms=io_ms * hung.GIVE_UP_AFTER, bottleneck="a 504 to every request")


def sub_tasks_run(pattern: str, tasks: int, io_ms: int, fib_ms: float, timeout_s: float) -> int:
    """The sub-tasks of io_ms + fib a request runs when its client leaves at `timeout_s`: all of them, unless the
    endpoint checks after each (`watchful`): then those begun before the client left."""
    if pattern != "watchful":
        return tasks
    return min(tasks, math.floor(timeout_s * 1000 / (io_ms + fib_ms)) + 1)


def predicted(plan: sizing.Plan, fib_ms: float) -> pd.DataFrame:
    """Each planned run: its requests a second, the sub-tasks each runs (a run without fib runs them too), and their
    fib CPU per request."""
    timeout_s = plan.load["timeout_s"]
    rows = []
    for run in plan.runs:
        fib = fib_ms if run["cpu_n"] else 0.0
        ran = sub_tasks_run(run["pattern"], run["tasks"], run["io_ms"], fib, timeout_s)
        rows.append(
            {
                "pattern": run["pattern"],
                "cpu_n": run["cpu_n"],
                "users": run["users"],
                "timeout_s": timeout_s,
                "predicted_rps": round(gone(run["users"], timeout_s).rps, 1),
                "sub_tasks_run": ran,
                "predicted_fib_ms": round(ran * fib, 1),
            }
        )
    return pd.DataFrame(rows)


def beside(runs: pd.DataFrame, table: pd.DataFrame, fib_ms: float) -> pd.DataFrame:
    """The runs with, beside each, its predicted sub-tasks and fib CPU; its measured fib CPU per request (the
    server's CPU per request less that of the run without fib); its time in the server (`in_server_ms`) and the
    sub-tasks of io + `fib_ms` that time holds (`sub_tasks_seen`)."""
    out = runs.merge(table[["pattern", "cpu_n", "sub_tasks_run", "predicted_fib_ms"]], on=["pattern", "cpu_n"])
    own = out.loc[out["cpu_n"] == 0, "server_ms"].iloc[0]
    out["fib_ms"] = out["server_ms"] - own
    out["in_server_ms"] = [in_server_ms(run) for _, run in out.iterrows()]
    out["sub_tasks_seen"] = out["in_server_ms"] / (out["io_ms"] + fib_ms * (out["cpu_n"] > 0))
    return out


def in_server_ms(run: pd.Series) -> float:
    """A request's mean time in the server, by Little's law: the requests in flight, on average over the run's
    telemetry (each worker's samples, summed), over the rate they came (failures included); NaN without it."""
    samples = telemetry.load(run["run_id"])
    if samples.empty or not run["rps"]:
        return math.nan
    return float(samples.groupby("pid")["in_flight"].mean().sum() / run["rps"] * 1000)


def work(runs: pd.DataFrame) -> pd.DataFrame:
    """The two endpoints' runs, with fib, by pattern."""
    return runs[runs["cpu_n"] > 0].set_index("pattern")


def cpu_ratio(runs: pd.DataFrame) -> float:
    """The fib CPU per abandoned request of `watchful` over `sequential`'s (`beside`'s `fib_ms`)."""
    cost = work(runs)["fib_ms"]
    return float(cost["watchful"] / cost["sequential"])


def ran_after(pattern: str, tasks: int) -> int:
    """The sub-tasks a request runs after its answer when one of its `tasks` calls times out: every other one
    under `gather`, which cancels nothing; none under a TaskGroup, which cancels them before it raises."""
    return tasks - 1 if pattern == "gathertimeout" else 0


def left_behind(failing: pd.DataFrame) -> pd.DataFrame:
    """Part 2's runs whose call times out: each one's fib CPU per request (the server's less that of the run without
    fib), the sub-tasks it ran after its answer (that over one sub-task's fib, plain `gather`'s fib CPU over its
    sub-tasks: fib as these runs run it, `one_fib_ms`) and those predicted."""
    own = failing.loc[failing["cpu_n"] == 0, "server_ms"].iloc[0]
    fib_ms = failing["server_ms"] - own
    every = failing[failing["pattern"] == "gather"].iloc[0]
    one = (every["server_ms"] - own) / every["tasks"]
    out = failing[(failing["cpu_n"] > 0) & (failing["pattern"] != "gather")].copy()
    out["fib_ms"] = fib_ms[out.index]
    out["one_fib_ms"] = one
    out["ran_after"] = out["fib_ms"] / one
    out["predicted_ran_after"] = [ran_after(p, t) for p, t in zip(out["pattern"], out["tasks"], strict=True)]
    return out

"""Lesson 13, clients that leave: its plan, its parameters for each run profile, and its readings.

Its readings: what a request costs the server after its client gave up, beside the model.

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

Its rows of the decision card (course/card.py): `CLIENTS_THAT_LEAVE`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from labserver import checks
from labserver.demo import cpus, hung
from labserver.demo.settings import THREADS_DEFAULT
from labserver.harness.load import sizing
from labserver.harness.load.checks import check_arrivals, check_load, check_sweep
from labserver.harness.plans.plan import Run
from labserver.harness.rows import telemetry
from labserver.lessons.card_row import NOT_YET, Measured, Row, runs_of, span
from labserver.lessons.lesson import Lesson
from labserver.theory import model, timing
from labserver.theory.workload import Workload

LESSON = Lesson(
    "13_clients_that_leave",
    profiles={
        "quick": {},
        "live": {"duration_s": 8},  # few requests a second, each ending at the timeout: 8 s is the least
        "full": {"users": 3, "duration_s": 20},
        "smoke": {"tasks": 4, "io_ms": 50, "cpu_n": 15, "timeout_s": 0.1, "duration_s": 2},
    },
)


@dataclass(frozen=True)
class ClientsThatLeave:
    fib_ms: float  # one sub-task's CPU, timed here
    plan: sizing.Plan  # both endpoints, and the request without its fib; each request abandoned at the timeout
    failing: sizing.Plan  # part 2, open loops: gather and a TaskGroup whose call times out, plain gather, no fib


def plan(
    *,
    users: int,
    tasks: int,
    io_ms: int,
    cpu_n: int,
    timeout_s: float,
    rate: float,
    duration_s: int,
    cores: float | None = None,
) -> ClientsThatLeave:
    """Lesson 13: `sequential` and `watchful` at `users` users whose timeout is shorter than the work alone, so
    that every request is abandoned, then `sequential` without its fib (what a request costs the server besides
    it); each run's prediction is users / timeout. Part 2: `gathertimeout` and `taskgroup` at `rate` arrivals a
    second, each request's `tasks` sub-tasks at once, one of them a call that times out; then plain `gather`, and
    `gathertimeout` without fib."""
    cores = cpus.cores() if cores is None else cores
    patterns = ["sequential", "watchful"]
    check_sweep(patterns, [users], tasks=tasks, io_ms=io_ms, cpu_n=cpu_n, duration_s=duration_s)
    checks.positive("timeout_s", timeout_s, " s")
    checks.whole("tasks", tasks, 2)  # part 2: a call that times out, and at least one sub-task beside it
    fib_ms = timing.cpu_time_ms(cpu_n)  # the server's CPU is metered as CPU time: fib's is timed the same way
    alone_s = tasks * io_ms / 1000
    if timeout_s >= alone_s:
        raise ValueError(
            f"timeout_s must be under the waits alone, tasks × io_ms = {alone_s:.2f} s, so that every request is "
            f"abandoned, got {timeout_s}"
        )
    servers = {"app": {"threads": THREADS_DEFAULT, "procs": 0}}
    abandoned = gone(users, timeout_s)
    parts = [*((p, cpu_n, "work") for p in patterns), ("sequential", 0, "no fib")]
    runs = [
        Run(
            pattern=p,
            users=users,
            tasks=tasks,
            io_ms=io_ms,
            cpu_n=n,
            server="app",
            predicted=abandoned,
            tags={"part": part},
        )
        for p, n, part in parts
    ]
    load = {"timeout_s": timeout_s, "expect_failures": True}  # every request times out, by design
    plan = sizing.fit(sizing.Plan(runs, servers, duration_s, load=load), cores)
    return ClientsThatLeave(fib_ms, plan, _failing(rate, tasks, io_ms, cpu_n, duration_s, servers=servers, cores=cores))


def _failing(rate: float, tasks: int, io_ms: int, cpu_n: int, duration_s: int, *, servers: dict, cores: float):
    """Lesson 13's part 2, open loops of `rate` a second: gather and a TaskGroup whose call times out (every
    request answered 504, by design), plain `gather` (fib as these runs run it), and gather without fib (what a
    request costs besides its fib)."""
    check_arrivals(rate, "arrivals", 1)
    fails = answered(io_ms)
    # plain gather right before gathertimeout: a fib's CPU drifts between runs, less between neighbours
    parts = [
        ("gather", cpu_n, None, "every call answers"),
        ("gathertimeout", cpu_n, fails, "a call fails"),
        ("taskgroup", cpu_n, fails, "a call fails"),
        ("gathertimeout", 0, fails, "no fib"),
    ]
    runs = [
        Run(
            pattern=p,
            rate=rate,
            tasks=tasks,
            io_ms=io_ms,
            cpu_n=n,
            drain_s=1,
            server="app",
            predicted=given,
            tags={"part": part},
        )
        for p, n, given, part in parts
    ]
    for run in runs:
        check_load(Workload.of({**run, "duration_s": duration_s}), user_class="arrivals")
    load = {"user_class": "arrivals", "expect_failures": True}  # a 504 to every request but plain gather's, by design
    return sizing.fit(sizing.Plan(runs, servers, duration_s, load=load), cores)


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


def abandoned(runs: pd.DataFrame) -> Measured:
    """Lesson 13: the fib CPU per abandoned request of an endpoint that checks for its client, over one that does
    not; each less the CPU of a request without fib, where measured."""
    rows = runs_of(runs, "13", ("sequential", "watchful"), abandoned=True)
    if rows.empty or "server_ms" not in rows or not {"sequential", "watchful"} <= set(rows["pattern"]):
        return Measured(math.nan, NOT_YET)
    fib = rows[rows["cpu_n"] > 0]
    cost = fib.groupby("pattern")["server_ms"].median()
    own = rows.loc[rows["cpu_n"] == 0, "server_ms"].median() if (rows["cpu_n"] == 0).any() else 0.0
    ratio = float((cost["watchful"] - own) / (cost["sequential"] - own))
    steps = span(fib["tasks"])
    return Measured(ratio, f"{ratio:.2f} of the fib CPU per abandoned request, checking between {steps} steps")


# Its rows of the decision card (course/card.py), each with the figure that shows it
CLIENTS_THAT_LEAVE = Row(
    "Clients that give up (a timeout, a closed tab) on long work",
    "`async def` work in steps, with `if await request.is_disconnected(): stop` between them",
    "users / timeout requests a second, each costing the steps begun before its client left, the last included",
    "the server's CPU busy while its clients see timeouts; the same work run again for each retry",
    "checking / not checking, server CPU per abandoned request",
    ("13",),
    abandoned,
)

"""Lesson 12, calling other services: its plan, its parameters for each run profile, and its readings.

Its readings: what a new httpx client costs, timed here, each run beside the model, and a call's CPU.

A new `httpx.AsyncClient` builds an SSL context and loads the certificates it trusts, even for
a plain http:// call: the notebook times that here, as the model times fib, and prices the
`callnew` endpoint with it. This table prices the fan-out's calls at nothing; the prediction the
harness makes before each run prices them from requests on the server (harness/load/pricing.py), the
unbounded fan-out's with its calls in flight (`waits_kept`).

Its rows of the decision card (course/card.py): `FAN_OUT`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import httpx
import pandas as pd

from labserver.demo import cpus
from labserver.demo.settings import THREADS_DEFAULT
from labserver.harness.load import sizing
from labserver.harness.load.checks import check_sweep
from labserver.harness.plans.plan import Run
from labserver.harness.processes.procs import free_port
from labserver.lessons.card_row import NOT_YET, Measured, Row, runs_of, span
from labserver.lessons.lesson import Lesson
from labserver.theory import capacity, model
from labserver.theory.workload import Workload, traits_of

LESSON = Lesson(
    "12_calling_services",
    profiles={
        "quick": {},
        "live": {"duration_s": 2},
        "full": {"users": 100, "duration_s": 10},
        "smoke": {"users": 10, "io_ms": 50, "duration_s": 2},
    },
)


UNBOUNDED_FAN_OUT_LONGER = 3  # lesson 12's unbounded fan-out runs this many times duration_s


@dataclass(frozen=True)
class CallingServices:
    plan: sizing.Plan  # the runs on the app server; the other service starts beside it, on its own port


def plan(*, users: int, io_ms: int, calls: int, duration_s: int, cores: float | None = None) -> CallingServices:
    """Lesson 12: an endpoint that calls another service (the lab's own server, on a port chosen now) with a new
    httpx client per request, and with one client reused; then `calls` calls a request, one after another, all
    at once, and all at once under the fan-out's semaphore."""
    cores = cpus.cores() if cores is None else cores
    patterns = ["callreused", "callnew"]
    check_sweep(patterns, [users], io_ms=io_ms, duration_s=duration_s)
    # The bounded fan-out first: the client keeps its connections open between runs (2 s), and each run should
    # find no more of them than its own calls hold.
    fanout = ["callreused", "fanoutbounded", "fanout"]
    # ... and the unbounded one on a server of its own: priced with its calls in flight before any run starts
    # (measurement.waits_kept), it leaves the client it used making every later call dearer for a while
    check_sweep(fanout, [users], tasks=calls, io_ms=io_ms, duration_s=duration_s)
    port = free_port()
    servers: dict[str, dict] = {
        "service": {"threads": THREADS_DEFAULT, "procs": 0, "port": port},  # its /sequential waits io_ms
        "app": {"threads": THREADS_DEFAULT, "procs": 0, "upstream": f"http://127.0.0.1:{port}"},
    }
    servers["unbounded"] = dict(servers["app"])
    runs = [Run(pattern=p, users=users, io_ms=io_ms, server="app", tags={"part": "a client"}) for p in patterns]
    # A new client's CPU runs on the one event loop: a round of `users` requests lasts users × that CPU, and its
    # replies come in bursts. The run holds five rounds after a second of warm-up (the foresight cannot price it).
    round_s = users * client_ms() / 1000
    runs[1]["duration_s"] = max(duration_s, math.ceil(1 + 5 * round_s))
    runs += [
        Run(pattern=p, users=users, io_ms=io_ms, tasks=calls, server="app", tags={"part": "a fan-out"}) for p in fanout
    ]
    runs[-1]["server"] = "unbounded"
    # Unbounded, the pool's CPU can fill the loop, and each request waits for it several io (the foresight cannot
    # price that): the run is three times as long, so that its rate rests on several replies from each user.
    runs[-1]["duration_s"] = UNBOUNDED_FAN_OUT_LONGER * duration_s
    return CallingServices(sizing.fit(sizing.Plan(runs, servers, duration_s), cores))


def client_ms(repeat: int = 5) -> float:
    """The CPU of making one `httpx.AsyncClient` here, in ms: the best of `repeat`. Made and dropped unused:
    it opens no connection, and a notebook's running event loop could not await its `aclose`."""
    best = math.inf
    for _ in range(repeat):
        started = time.process_time()
        httpx.AsyncClient()
        best = min(best, time.process_time() - started)
    return best * 1000


def predicted(plan: sizing.Plan, cores: float, new_client_ms: float) -> pd.DataFrame:
    """The model for each planned run (`model_rps`), before any: `callnew` pays a new client's CPU on the event loop,
    `callreused` none, and no call's CPU is priced."""
    rows = []
    for run in plan.runs:
        workload = Workload.of(run)
        price = new_client_ms if run["pattern"] == "callnew" else 0.0
        p = model.predict(workload, plan.settings(run["server"], cores), cores=cores, cpu_ms_per_task=price)
        rows.append(
            {
                "part": run["tags"]["part"],
                "pattern": run["pattern"],
                "users": run["users"],
                "calls": workload.tasks,
                "io_ms": run["io_ms"],
                "client_cpu_ms": price,
                "model_rps": round(p.rps, 1),
                "bottleneck": p.bottleneck,
            }
        )
    return pd.DataFrame(rows)


def with_model(runs: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """`runs` with `model_rps` beside each: the lesson's model before any run (`predicted`), by part and pattern."""
    return runs.merge(table[["part", "pattern", "model_rps"]], on=["part", "pattern"], how="left")


def in_step(run: pd.Series) -> float:
    """The model's rate for a run whose users move in step on one event loop: users / (wait + users × its CPU per
    request), the CPU as the run measured it (`server_ms`); the wait is io where the calls overlap (a fan-out),
    tasks × io where they go one after another."""
    return capacity.in_step_rps(int(run["users"]), _wait_s(run), run["server_ms"] / 1000, 1.0)


def _wait_s(run: pd.Series) -> float:
    calls = 1 if traits_of(str(run["pattern"])).overlaps else run["tasks"]
    return calls * run["io_ms"] / 1000


def part(runs: pd.DataFrame, name: str) -> pd.DataFrame:
    """The runs of one part of the lesson: "a client" or "a fan-out"."""
    return runs[runs["part"] == name]


def extra_cpu_ms(runs: pd.DataFrame) -> float:
    """The server CPU per request `callnew` spent over `callreused`'s, one call each, in ms: what a new client cost."""
    cost = runs[runs["tasks"] == 1].set_index("pattern")["server_ms"]
    return float(cost["callnew"] - cost["callreused"])


def per_call_ms(runs: pd.DataFrame) -> pd.Series:
    """The server CPU of each call to the other service in the fan-out's runs, in ms, by pattern."""
    fan = part(runs, "a fan-out").set_index("pattern")
    return fan["server_ms"] / fan["tasks"]


def out_of_step(run: pd.Series) -> float:
    """How far a run's rate went from its users' in-step rate toward its CPU bound 1 / c: 0 at the first, 1 at the
    second (one event loop, c its CPU per request as measured)."""
    low, high = in_step(run), 1000 / run["server_ms"]
    return float((run["rps"] - low) / (high - low)) if high > low else float("nan")


def fan_out(runs: pd.DataFrame) -> Measured:
    """Lesson 12: the bounded fan-out's req/s over the unbounded one's, and their server CPU per call."""
    rows = runs_of(runs, "12", ("fanout", "fanoutbounded"))
    if rows.empty or "server_ms" not in rows or not {"fanout", "fanoutbounded"} <= set(rows["pattern"]):
        return Measured(math.nan, NOT_YET)
    median = rows.groupby("pattern")[["rps", "server_ms"]].median()
    ratio = float(median.loc["fanoutbounded", "rps"] / median.loc["fanout", "rps"])
    cpu = median.loc["fanout", "server_ms"] / median.loc["fanoutbounded", "server_ms"]  # the same calls a request
    calls = f"{span(rows['users'])} users × {span(rows['tasks'])} calls"
    return Measured(
        ratio,
        f"bounded {ratio:.1f}× the unbounded fan-out's req/s; unbounded, a call cost {cpu:.1f}× the CPU ({calls})",
    )


# Its rows of the decision card (course/card.py), each with the figure that shows it
FAN_OUT = Row(
    "Several calls to other services in one request (a fan-out)",
    "`asyncio.gather` over the one reused client, each call through an `asyncio.Semaphore` below the "
    "client's connection limit and within what the other service takes; an `asyncio.TaskGroup` instead where one "
    "failed call ends the answer (it cancels the rest)",
    "min(users / io, bound / (calls × io)); unbounded, httpx's CPU per call grows with the calls in flight in its "
    "pool, until its core",
    "the other service flooded with users × calls at once; the worker near a core while it only waits",
    "bounded / unbounded fan-out, req/s, and their CPU per call",
    ("12",),
    fan_out,
    "the unbounded fan-out's CPU per call grows with the connections its pool holds, which moves from run to "
    "run (lesson 12, Deeper)",
)

"""An app of one's own, measured: each route priced at one user, its ceiling predicted and its bound named before
any load, then a sweep of users that checks the prediction.

The lab's own parts do all of it: the launcher starts the app (AppServer, wrapped as wrap.py says),
the pricing measures one request's time alone S and its CPU on the event loop and in the thread
pool (prices.py, through harness/load/pricing.py), the model predicts every run from those prices
(theory/model.py), reading each route as the demo pattern with the same traits (patterns.py),
advice.py names what moves each ceiling, and `run_plan` measures each run with Locust, its folder
under data/runs/ like a lesson's. Each route's `Verdict` (verdict.py) holds what was priced,
predicted and measured; the tables here set it beside the resources its runs' telemetry saw
saturated (resources.py).

The sweep doubles the users from 1 up to `users`, one run at a time, and stops once a run gains
less than a tenth on the one before (the throughput flattened) or its p95 passes P95_STOP × S.
"""

from __future__ import annotations

import dataclasses
import math
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from labserver import config, protocol
from labserver.demo.settings import THREADS_DEFAULT
from labserver.demo.traits import Where
from labserver.harness.load import measurement
from labserver.harness.load import run as load
from labserver.harness.plans.plan import Stage
from labserver.harness.servers.launcher import LabServer
from labserver.yourapp.advice import advice, predict
from labserver.yourapp.patterns import DEPENDENCY, HELD
from labserver.yourapp.prices import first_prices, price, stages
from labserver.yourapp.resources import Resource, agrees, loop_share, named, saturation, seen, words, worker_share
from labserver.yourapp.verdict import Priced, Verdict
from labserver.yourapp.wrap import PREFIX

FLAT = 1.10  # a run that serves less than this times the one before: the throughput has flattened
P95_STOP = 10  # ... or whose p95 passes this many times S: the users queue far past the knee


class AppServer(LabServer):
    """uvicorn serving an app of one's own (`module:attribute`, imported from `folder`) in the lab's layer."""

    app = "labserver.yourapp.wrap:create_app"
    health_path = f"{PREFIX}/health"
    info_path = f"{PREFIX}/info"

    def __init__(
        self,
        target: str,
        *,
        folder: Path,
        env: dict[str, str] | None = None,
        workers: int = 1,
        threads: int | None = None,
    ):
        super().__init__(workers=workers, threads=THREADS_DEFAULT if threads is None else threads, procs=0)
        self.target = target
        self.folder = folder
        self.env = dict(env or {})
        self.threads = threads  # None: the app's own limit, read once it runs

    def app_env(self) -> dict[str, str]:
        given = {config.YOUR_APP_THREADS.name: config.YOUR_APP_THREADS.text(self.threads)}
        return {**self.env, **given, config.YOUR_APP.name: self.target, config.YOUR_APP_DIR.name: str(self.folder)}

    def start(self) -> AppServer:
        """The app started, and its settings holding the thread limit it runs with: the model prices that one."""
        super().start()
        self.settings = dataclasses.replace(self.settings, threads=int(self.info()["threads"]))
        return self

    def endpoint(self, route: protocol.Route) -> dict[str, Any]:
        """What wrap.endpoint_of says of `route`: where its endpoint runs, and its name."""
        query = urllib.parse.urlencode({"method": route["method"], "path": route["path"]})
        return self.get(f"{PREFIX}/route?{query}")


def users_steps(most: int, least: int = 1) -> list[int]:
    """`least`, twice it, four times it, ... up to `most`, which is always the last."""
    steps = [least * 2**i for i in range(int(math.log2(most / least)) + 1) if least * 2**i < most]
    return [*steps, most]


def predict_all(server: AppServer, routes: list[protocol.Route], users: int, duration_s: int) -> list[Priced]:
    """Every route priced at one user on `server`, and the model's throughput and bound at `users`, before any
    load."""
    # Each route is priced in two rounds, all routes in each: a slow moment of a few seconds can cover two pricings
    # in a row, but seldom both rounds (a server alone priced again at once)
    staged = [stages(server, route, duration_s) for route in routes]
    for route, (_, stage, many) in zip(routes, staged, strict=True):
        first_prices(route, stage, many)
    priced = []
    for route, each_staged in zip(routes, staged, strict=True):
        verdict, stage = price(server, route, each_staged)
        verdict.predicted_rps, verdict.bound = predict(stage, users)
        verdict.card = card_row(verdict.runs_on, verdict.bound)
        each = Priced(verdict, stage)
        told = advice(each, users)
        verdict.change, verdict.change_rps, verdict.change_settings = told.change, told.rps, told.settings
        priced.append(each)
    return priced


def sweep(
    stage: Stage,
    verdict: Verdict,
    most: int,
    *,
    least: int = 1,
    lesson: str | None = None,
    progress: bool | None = None,
    say: Callable[[str], None] = print,
) -> None:
    """Runs of `stage` at `least`, twice as many, ... users up to `most`, one Locust plan each, until the
    throughput flattens or the p95 passes P95_STOP × S; each run's row (users, predicted before, measured, the
    saturation its telemetry saw) into `verdict.runs`."""
    tags = {"route": verdict.route}
    for users in users_steps(most, least):
        run = stage.as_run(users, tags)
        [result] = load.run_plan(
            stage.server, [run], duration_s=stage.workload.duration_s, progress=progress, lesson=lesson
        )
        row = result.row
        verdict.runs.append(
            {
                "users": users,
                "predicted_rps": row["predicted_before_rps"],
                "bound": row["before_bottleneck"],
                "rps": row["rps"],
                "p95_ms": row["p95_ms"],
                "ratio": row["ratio_before"],
                "valid": bool(row["valid"]),
                "problems": row["problems"],
                "run": str(result.path),
                # what the run measured per request where its work ran, beside what one user priced
                "worker_ms": row["worker_ms"],
                "pool_ms": row["pool_ms"],
                "others_ms": row["others_ms"],
                "locust_ms": row["locust_ms"],
                "workers": int(row["workers"]),
                **saturation(result, row),
            }
        )
        say(_line(verdict.runs[-1]))
        before = verdict.runs[-2]["rps"] if len(verdict.runs) > 1 else math.nan
        if row["rps"] < FLAT * before:
            verdict.stopped = f"flattened at {users} users: {row['rps']:,.0f} req/s, {before:,.0f} before"
            return
        if row["p95_ms"] > P95_STOP * verdict.service_ms:
            verdict.stopped = f"p95 {row['p95_ms']:,.0f} ms at {users} users, past {P95_STOP} × S"
            return
    verdict.stopped = f"reached {most} users (--users)"


def _line(run: dict[str, Any]) -> str:
    mark = "" if run["valid"] else f"  INVALID: {run['problems']}"
    return (
        f"  {run['users']:>5} users  predicted {run['predicted_rps']:>9,.1f} req/s  measured {run['rps']:>9,.1f}"
        f"  ({run['ratio']:.2f})  p95 {run['p95_ms']:>8,.1f} ms  {words(run['bound'])}{mark}\n"
        f"{'':14}loop busy or held {loop_share(run):.2f}  threads borrowed {run['threads_busy_mean']:.1f} on average,"
        f" {run['threads_busy_max']:.0f} at most  server {run['server_cores']:.2f} cores"
    )


# The README decision card's rows a route of one's own can fall under, by what the model reads it as: each row's
# situation, as course/card.py titles it (its rows that link to this command are these)
CARD = {
    "awaited": "Awaitable I/O: an async driver, `asyncio.sleep`, `httpx.AsyncClient`",
    "blocking": "A blocking library: requests, a sync database driver",
    DEPENDENCY: "A dependency or a streamed response that waits on a blocking library",
    HELD: "Never: `time.sleep` (or any blocking call) in `async def`",
    "computes": "CPU-bound work",
}
COMPUTES = (Resource.LOOP, Resource.WORKER, Resource.CORES)  # bounds that are a CPU: the route computes


def card_row(runs_on: str, bound: str) -> str:
    """The decision card's row a route falls under: a blocking call held in `async def` or a `def` dependency by
    what it runs on, else a route bound by a CPU computes, else by where it waits: awaited, or in a thread."""
    if runs_on in (HELD, DEPENDENCY):
        return CARD[runs_on]
    if named(bound) in COMPUTES:
        return CARD["computes"]
    return CARD["blocking"] if runs_on == Where.THREAD_POOL else CARD["awaited"]


def table(verdicts: list[Verdict]) -> pd.DataFrame:
    """Every run of every route, one row each: its users, the prediction made before it, what it measured and the
    saturation its telemetry saw (the columns plots.throughput draws)."""
    rows = [{"route": v.route, **run, "bound": words(run["bound"])} for v in verdicts for run in v.runs]
    return pd.DataFrame(rows).rename(columns={"predicted_rps": "predicted_before_rps", "ratio": "ratio_before"})


def busiest(verdicts: list[Verdict], threads: int, cores: float) -> pd.DataFrame:
    """Each route's last run (its busiest): the bound the model named before it, each resource's share of its
    capacity that the telemetry saw used, what it saw saturated, and whether the two agree."""
    rows = []
    for v in verdicts:
        last = v.runs[-1]
        rows.append(
            {
                "route": v.route,
                "users": last["users"],
                "named": words(last["bound"]),
                "threads": last["threads_busy_mean"] / threads,
                "loop": loop_share(last),
                "worker": worker_share(last, cores),
                "cores": last["server_cores"] / cores,
                "seen saturated": ", ".join(sorted(seen(last, threads, cores))),
                "agree": agrees(v, threads, cores),
            }
        )
    return pd.DataFrame(rows)


def scalability(verdicts: list[Verdict], threads: int, cores: float) -> pd.DataFrame:
    """The Universal Scalability Law fitted to each route's sweep (theory/usl.py) beside the model: each one's
    figure at the busiest run's users, and which the data support there. The model's, where the resource it named is
    the one the telemetry saw full and it lies within 15% of the run; the law's, where it lies nearer the run and
    the model does not hold there (its resource not seen full, or the run more than 15% off); neither, else. The
    law's peak is shown only within the sweep's users."""
    rows = []
    for v in verdicts:
        fit, last = v.law(), v.runs[-1]
        law, ours = fit.rps(last["users"]), last["predicted_rps"]
        off = {name: abs(figure / last["rps"] - 1) for name, figure in (("law", law), ("model", ours))}
        if agrees(v, threads, cores) and off["model"] <= 0.15:
            # where the users bind, agreeing means no resource was seen full
            seen_full = "nothing full" if named(last["bound"]) is Resource.USERS else "seen full"
            supported = f"the model: {words(last['bound'])}, {seen_full}"
        elif math.isfinite(off["law"]) and off["law"] < off["model"]:
            supported = "the law"
        else:
            supported = "neither"
        rows.append(
            {
                "route": v.route,
                "σ (contention)": fit.sigma,
                "κ (coherency)": fit.kappa,
                # past the sweep's users, the law's peak is a curve drawn where nothing was measured: left blank
                "peak users N*": fit.peak_users if fit.peak_users <= last["users"] else math.nan,
                "the law's most (req/s)": fit.peak_rps if fit.peak_users <= last["users"] else math.nan,
                "users": last["users"],
                "measured (req/s)": last["rps"],
                "the law (req/s)": law,
                "the model (req/s)": ours,
                "the data support": supported,
            }
        )
    return pd.DataFrame(rows)


def changes(priced: list[Priced]) -> str:
    """What moves each route's ceiling, a line per route, in full."""
    return "\n".join(f"{each.verdict.route}: {each.verdict.change}" for each in priced)


def predictions(priced: list[Priced], users: int) -> pd.DataFrame:
    """Each route as priced at one user, and the model's throughput and bound at `users`, before any load."""
    return pd.DataFrame(
        [
            {
                "route": v.route,
                "endpoint": v.endpoint,
                "runs on": v.runs_on,
                "S alone (ms)": v.service_ms,
                "CPU on the loop (ms)": v.loop_ms,
                "CPU in threads (ms)": v.threads_ms,
                f"CPU, {measurement.HOT_MOST} in flight (ms)": v.busy_cpu_ms,
                "def dependencies": v.def_dependencies,
                "a thread held (ms)": v.thread_hold_ms,  # measured for an async def's def dependencies alone
                f"predicted at {users} users (req/s)": v.predicted_rps,
                "bound": words(v.bound),
                "the decision card's row": v.card,
            }
            for v in (each.verdict for each in priced)
        ]
    ).round(2)


def apply(priced: Priced, users: int, *, lesson: str | None = None) -> dict[str, Any] | None:
    """The change `advice` proposed for a route, made where it is a setting (the thread limit, the workers): the app
    started again with it, and one run at `users` beside the figure advised for it before any load: None where the
    change is one of code, or the route has no valid run. `users`: the sweep's most, so that each of several
    workers holds many of the users' connections (a few of them can all land on one worker)."""
    v, stage = priced.verdict, priced.stage
    if not v.change_settings or not any(r["valid"] for r in v.runs):
        return None
    old = stage.server
    assert isinstance(old, AppServer), "a change is made to an app of one's own"
    workers = v.change_settings.get("workers", old.settings.workers)
    threads = v.change_settings.get("threads", old.threads)
    with AppServer(old.target, folder=old.folder, env=old.env, workers=workers, threads=threads) as server:
        change = ", ".join(f"{k} {n}" for k, n in v.change_settings.items())
        run = stage.as_run(users, {"route": v.route, "change": change})
        [result] = load.run_plan(server, [run], duration_s=stage.workload.duration_s, progress=False, lesson=lesson)
    row = result.row
    return {
        "route": v.route,
        "change": run["tags"]["change"],
        "users": users,
        "advised before any load (req/s)": v.change_rps,  # from one user's prices, as `advice` printed it
        "measured (req/s)": row["rps"],
        "measured / advised": row["rps"] / v.change_rps if v.change_rps else math.nan,
        # the worker's loop waits for a CPU beside its threads and Locust, more so near a full core: the model's
        # queueing does not price that wait, and the run can read under the advice
        "each worker's core busy": row["server_cpu"] / workers,
        "its loop waited for a CPU": row.get("worker_waited", math.nan),
        "valid": bool(row["valid"]),
    }

"""An app of one's own, measured: each route priced at one user, its ceiling predicted and its bound named before
any load, then a sweep of users that checks the prediction.

The lab's own parts do all of it: the launcher starts the app (AppServer, wrapped as wrap.py says),
the pricing measures one request's time alone S and its CPU on the event loop and in the thread
pool (harness/load/pricing.py), the model predicts every run from those prices (theory/model.py), and
`run_plan` measures each run with Locust, its folder under data/runs/ like a lesson's. The model
reads a route as one of the demo's patterns with the same traits: an `async def` endpoint as
`sequential` (it computes on the event loop, and its waits hold nothing), a `def` one as
`threadpool` (it holds one of the pool's threads for the whole request). The time a request spends
not computing, S less its CPU, stands for the pattern's `io_ms`.

The sweep doubles the users from 1 up to `users`, one run at a time, and stops once a run gains
less than a tenth on the one before (the throughput flattened) or its p95 passes P95_STOP × S.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import pandas as pd

from labserver import config, protocol
from labserver.demo.settings import THREADS_DEFAULT
from labserver.harness.load import pricing
from labserver.harness.load import run as load
from labserver.harness.plans.plan import Options, Stage
from labserver.harness.rows import telemetry
from labserver.harness.servers.launcher import LabServer
from labserver.theory import usl
from labserver.theory.cores import SATURATED
from labserver.theory.demand import OneUser
from labserver.theory.model import Bottleneck
from labserver.theory.workload import Workload
from labserver.yourapp.wrap import PREFIX

FLAT = 1.10  # a run that serves less than this times the one before: the throughput has flattened
P95_STOP = 10  # ... or whose p95 passes this many times S: the users queue far past the knee
# How the model reads a route, by where its endpoint runs: the demo pattern with the same traits
HELD = "event loop, held while it waits"  # an `async def` route whose wait blocks: a sync call inside it
# an `async def` route with a plain `def` dependency: FastAPI runs the dependency in the thread pool, and its
# thread is held while it waits; the model reads the whole request as holding one (at most what it holds)
DEPENDENCY = "event loop, its def dependency in the thread pool"
STAND_IN = {"event loop": "sequential", "thread pool": "threadpool", HELD: "blocking", DEPENDENCY: "threadpool"}
# Requests priced back to back (pricing.HOT_USERS of them) that took this many times S or more took turns: where
# the route's CPU is under half of S, what they took turns for is its wait, which holds the loop
IN_TURN = 1.5
# an `async def`'s `def` dependencies that hold a thread for this share of S or more are read as holding it for all of
# S (as a `def` endpoint holds one); under it, for a moment that binds nothing
HOLDS_THREAD = 0.5


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


@dataclass
class Verdict:
    """One route: its prices, the model's ceiling and bound before any load, and what the sweep measured."""

    route: str
    endpoint: str | None
    runs_on: str  # "event loop", "thread pool", HELD or DEPENDENCY (as the model reads it)
    def_dependencies: int  # of its dependencies, those FastAPI runs in the thread pool
    service_ms: float  # S, one request alone
    loop_ms: float  # the server's CPU per request on the event loop
    threads_ms: float  # ... in the pool's threads
    predicted_rps: float  # at the sweep's most users, before any load
    bound: str  # what the model says binds it there
    change: str = ""  # what moves the ceiling (advice)
    change_rps: float = math.nan  # ... and the model's throughput once it is made
    change_settings: dict[str, int] = field(default_factory=dict)  # ... the server's settings it changes
    card: str = ""  # the README decision card's row it falls under: that row's situation (CARD)
    runs: list[dict[str, Any]] = field(default_factory=list)  # each run: users, predicted and measured
    stopped: str = ""  # why the sweep stopped
    # the server's CPU per request with pricing.HOT_MOST requests in flight: what a run of as many users or more is
    # priced with (loop_ms and threads_ms: with pricing.HOT_USERS)
    busy_cpu_ms: float = math.nan
    # how long a request held a thread, for an `async def` with `def` dependencies (NaN: not measured): where it is
    # under HOLDS_THREAD of S, the route is read as the event loop's, its threads free between requests
    thread_hold_ms: float = math.nan

    @property
    def measured_rps(self) -> float:
        """The most any valid run served (NaN: none was valid)."""
        served = [r["rps"] for r in self.runs if r["valid"]]
        return max(served) if served else math.nan

    def ceiling(self) -> float:
        """The lower of the predicted and the measured ceilings: what `--at-least` holds the route to."""
        return min(self.predicted_rps, self.measured_rps) if self.runs else self.predicted_rps

    def law(self) -> usl.Fit:
        """The Universal Scalability Law fitted to the sweep's valid runs (usl.NO_FIT under four)."""
        valid = [r for r in self.runs if r["valid"]]
        return usl.fit([r["users"] for r in valid], [r["rps"] for r in valid])

    def as_dict(self) -> dict[str, Any]:
        law = self.law()
        fitted = {"sigma": law.sigma, "kappa": law.kappa, "peak_users": law.peak_users, "peak_rps": law.peak_rps}
        return {**dataclasses.asdict(self), "measured_rps": self.measured_rps, "usl": fitted}


def stand_in(runs_on: str | None) -> str:
    """The demo pattern the model reads a route as; an app that is not Starlette's is read as `async def`."""
    return STAND_IN.get(runs_on or "event loop", "sequential")


def io_ms(one: OneUser) -> int:
    """The part of S that is neither the server's CPU nor the client's: what the route waits for, as the model's
    `io_ms`. The client's is the load generator's in a run, which the model adds to each round trip: a reply of a
    megabyte costs a client a few ms to read, which S holds too."""
    return max(0, round(one.service_ms - one.worker_ms - one.pool_ms - one.client_ms))


def users_steps(most: int, least: int = 1) -> list[int]:
    """`least`, twice it, four times it, ... up to `most`, which is always the last."""
    steps = [least * 2**i for i in range(int(math.log2(most / least)) + 1) if least * 2**i < most]
    return [*steps, most]


def holds_loop(one: OneUser) -> bool:
    """Whether an `async def` route holds the event loop while it waits (a blocking call inside it): its requests
    priced back to back took turns, though its CPU is under half of S."""
    return one.busy_ms >= IN_TURN * one.service_ms and one.worker_ms < one.service_ms / 2


def stages(server: AppServer, route: protocol.Route, duration_s: int) -> tuple[dict, Stage, Stage]:
    """Where `route`'s endpoint runs (the app's answer), and the stages that price it on `server`: one user, and as
    a run of many users prices it, with as many requests in flight (pricing.hot_users)."""
    where = server.endpoint(route)
    runs_on = where["runs_on"] if where.get("found") else "event loop"
    stage = Stage(server, Workload(pattern=stand_in(runs_on), users=1, duration_s=duration_s), route=route)
    many = dataclasses.replace(stage, workload=dataclasses.replace(stage.workload, users=pricing.HOT_MOST))
    return where, stage, many


@contextlib.contextmanager
def _answers(route: protocol.Route) -> Iterator[None]:
    try:
        yield
    except TimeoutError:
        raise pricing.PricingError(
            f"{route['label']} gave no answer within {pricing.REQUEST_TIMEOUT_S:.0f} s, so it cannot be priced: "
            "does it wait for something that is not running?"
        ) from None


def first_prices(route: protocol.Route, stage: Stage, many: Stage) -> None:
    """`route`'s first round of prices, on its `stages`, the load generator's on it included where its replies are
    big. Its first requests pay what it builds once (validators, caches, lazy imports): priced and left out, else the
    first route priced on a new server reads up to half dearer than it runs."""
    with _answers(route):
        pricing.measure(stage)
        pricing.one_user(stage)
        pricing.one_user(many)
    pricing.price_generator(many)


def price(server: AppServer, route: protocol.Route, staged: tuple[dict, Stage, Stage]) -> tuple[Verdict, Stage]:
    """`route` priced at one user on `server` (its `stages`), and the stage the model and the sweep read it as: the
    lesser of this pricing and the first round's (first_prices), since a moment's disturbance can make one read half
    dearer; the load generator's on it likewise."""
    where, stage, many = staged
    runs_on = where["runs_on"] if where.get("found") else "event loop"
    with _answers(route):
        one = pricing.again(stage)
        busy = pricing.again(many)
    pricing.price_generator(many, again=True)
    hold_ms = math.nan
    if runs_on == "event loop" and holds_loop(one):
        runs_on = HELD
    elif runs_on == "event loop" and where.get("def_dependencies", 0):
        # a def dependency holds a thread while it runs: for its request's wait (read as a `def`), or for a moment
        hold_ms = thread_hold_ms(server, stage)
        runs_on = runs_on if hold_ms < HOLDS_THREAD * one.service_ms else DEPENDENCY  # NaN: as a `def`
    workload = dataclasses.replace(stage.workload, pattern=stand_in(runs_on), io_ms=io_ms(one))
    stage = dataclasses.replace(stage, workload=workload)
    verdict = Verdict(
        route=route["label"],
        endpoint=where.get("endpoint"),
        runs_on=runs_on,
        def_dependencies=int(where.get("def_dependencies", 0)),
        service_ms=one.service_ms,
        loop_ms=one.loop_ms,
        threads_ms=one.threads_ms,
        predicted_rps=math.nan,
        bound="",
        busy_cpu_ms=busy.worker_ms + busy.pool_ms,
        thread_hold_ms=hold_ms,
    )
    return verdict, stage


def thread_hold_ms(server: AppServer, stage: Stage) -> float:
    """How long one request of `stage`'s route holds a thread of the pool (its `def` dependencies' calls, and any
    other use), in ms: the layer's count of thread-seconds (wrap.CountedLimiter) over lone requests. NaN with several
    workers, whose counts /info does not sum."""
    if server.settings.workers != 1:
        return math.nan
    before = server.info()
    sent = pricing.alone(stage)
    after = server.info()
    if "thread_held_s" not in before or not sent:
        return math.nan
    return (after["thread_held_s"] - before["thread_held_s"]) / sent * 1000


def predict(stage: Stage, users: int) -> tuple[float, str]:
    """The model's throughput at `users` and what binds it, from the one-user prices alone: the prediction each run
    of the sweep is given before it starts (pricing.foresee, the load generator priced where it decides it)."""
    at = dataclasses.replace(stage, workload=dataclasses.replace(stage.workload, users=users))
    p = pricing.foresee(at, Options()).prediction
    return p.rps, p.bottleneck


@dataclass(frozen=True)
class Advice:
    """What moves a route's ceiling, and what the model predicts once it is done (NaN: no figure to give)."""

    change: str
    rps: float
    settings: dict[str, int] = field(default_factory=dict)  # the server's settings it changes (none: a code change)


def advice(priced: Priced, users: int) -> Advice:
    """The change that moves the ceiling of the route the model read as `priced`, by the resource that binds it at
    `users`, with the model's throughput once it is made, from the same one-user prices."""
    v, stage = priced.verdict, priced.stage
    settings, work, cores = stage.server.settings, stage.workload, stage.server.cores()
    resource = named(v.bound)

    def then(workload: Workload = work, at_users: int = users, **changed: Any) -> float:
        # priced as a run on the changed server is priced before it starts: the cores the machine shares with the
        # load generator included, and the generator measured where it decides the figure
        at = dataclasses.replace(stage, workload=dataclasses.replace(workload, users=at_users))
        return pricing.foresee(at, Options(), settings=dataclasses.replace(settings, **changed)).prediction.rps

    if v.runs_on == HELD:
        rps = then(dataclasses.replace(work, pattern=STAND_IN["thread pool"]))
        return Advice("await an async call instead of the blocking one, or make the endpoint a plain `def` "
                      f"(FastAPI then runs it in a thread): as a `def`, {rps:,.0f} req/s", rps)  # fmt: skip
    if resource is Resource.THREADS:
        more = 2 * settings.threads
        rps = then(threads=more)
        change = (
            f"where threads, not a connection pool, are the scarcer slot (lesson 11): raise the thread limit to "
            f"{more} (`total_tokens` in the lifespan; here `--threads {more}`), or await an async driver in "
            f"`async def`: with {more} threads, {rps:,.0f} req/s"
        )
        return Advice(change, rps, {"threads": more})
    if resource in (Resource.LOOP, Resource.WORKER) and math.floor(cores) > settings.workers:
        workers = math.floor(cores)
        rps = then(workers=workers)
        # the CPU may be the endpoint's own work, which a process pool can take, or FastAPI checking and serialising
        # a big reply after it returns, which no pool can take: the lab cannot tell them apart, so it names both
        change = (
            f"run {workers} workers (`--workers {workers}`, one a core), or take the CPU off the loop: the endpoint's "
            "own computing to a process pool, but FastAPI's checking and serialising of a big reply only by making it "
            f"smaller or caching it: with {workers} workers, {rps:,.0f} req/s"
        )
        return Advice(change, rps, {"workers": workers})
    if resource is Resource.USERS:
        more = 2 * users
        rps = then(at_users=more)
        bound = predict(dataclasses.replace(stage, workload=dataclasses.replace(work, users=more)), more)[1]
        change = f"no change needed: the users bind it; at {more} users, {rps:,.0f} req/s, bound by {words(bound)}"
        return Advice(change, rps)
    return Advice("less CPU per request, or more cores: every core this server may use is busy", math.nan)


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


@dataclass(frozen=True)
class Priced:
    """A route as priced before any load: its verdict so far, and the stage the model and the sweep read it as."""

    verdict: Verdict
    stage: Stage


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
        run = {**dataclasses.asdict(stage.workload), "users": users, "route": stage.route, "tags": tags}
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


def saturation(result: Any, row: dict[str, Any]) -> dict[str, float]:
    """What the run's telemetry says of each resource the model can name: the share of the window the workers'
    event loops ran (`worker_loop`, near 1: the loop is busy) and were held by a blocking call (where the sampler
    waited half a wait or more past its tick), the pool's threads borrowed on average and at most (near the thread
    limit: the threads bind), and the cores the server kept busy."""
    samples = telemetry.load(result)
    threads = samples["threads_busy"] if len(samples) else pd.Series(dtype=float)
    lag = samples["loop_lag_ms"] if len(samples) else pd.Series(dtype=float)
    wait_ms, lag_max = float(row.get("io_ms", math.nan)), float(lag.max()) if len(lag) else math.nan
    # a loop held through whole waits (its sampler kept waiting half a wait or more) is in use for each request's
    # wait: the utilisation law, U = X × the wait
    held = wait_ms >= HELD_WAIT_MS and lag_max >= wait_ms / 2
    return {
        "loop_busy": float(row.get("worker_loop", math.nan)),
        "loop_held": row["rps"] * wait_ms / 1000 / int(row.get("workers", 1)) if held else 0.0,
        "loop_lag_max_ms": lag_max,
        "threads_busy_mean": float(threads.mean()) if len(threads) else math.nan,
        "threads_busy_max": float(threads.max()) if len(threads) else math.nan,
        "server_cores": float(row.get("server_cpu", math.nan)),
    }


def _line(run: dict[str, Any]) -> str:
    mark = "" if run["valid"] else f"  INVALID: {run['problems']}"
    return (
        f"  {run['users']:>5} users  predicted {run['predicted_rps']:>9,.1f} req/s  measured {run['rps']:>9,.1f}"
        f"  ({run['ratio']:.2f})  p95 {run['p95_ms']:>8,.1f} ms  {words(run['bound'])}{mark}\n"
        f"{'':14}loop busy or held {loop_share(run):.2f}  threads borrowed {run['threads_busy_mean']:.1f} on average,"
        f" {run['threads_busy_max']:.0f} at most  server {run['server_cores']:.2f} cores"
    )


class Resource(StrEnum):
    """What binds a route, as its telemetry can show it saturated."""

    USERS = "the users"  # nothing saturated: each user waits on its own request
    THREADS = "the thread pool"  # every token borrowed
    LOOP = "the event loop"  # each worker's loop thread busy, or held by a blocking call, all the time
    WORKER = "each worker's core"  # each worker's one GIL: its loop and its threads keep one core busy
    CORES = "the cores"  # the server's processes keep the usable cores busy


HELD_WAIT_MS = 10  # a wait this long or longer, held on the loop, shows in its sampler's lag (every 100 ms)
# The model's bounds by the resource they name: the rest (a pool of connections, calls in flight) the telemetry
# of an app of one's own cannot see
NAMED = {
    Bottleneck.USERS: Resource.USERS,
    Bottleneck.THREADS: Resource.THREADS,
    Bottleneck.EVENT_LOOP: Resource.LOOP,
    Bottleneck.GIL: Resource.WORKER,
    Bottleneck.IN_STEP: Resource.WORKER,
    Bottleneck.WORKER_CPU: Resource.WORKER,
    Bottleneck.CORES: Resource.CORES,
    Bottleneck.MACHINE: Resource.CORES,
}


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
    return CARD["blocking"] if runs_on == "thread pool" else CARD["awaited"]


def named(bound: str) -> Resource | None:
    """The resource a bound the model named is (None: one the telemetry cannot see)."""
    return NAMED.get(Bottleneck(bound)) if bound in set(Bottleneck) else None


def words(bound: str) -> str:
    """A bound as this lesson and the command name it: the resource (each worker's core, not the GIL's words)."""
    return str(named(bound) or bound)


def loop_share(run: dict[str, Any]) -> float:
    """The share of its time a worker's event loop was in use: computing, or held by a blocking call."""
    return max(run["loop_busy"], run.get("loop_held", 0.0))


def worker_share(run: dict[str, Any], cores: float) -> float:
    """The share of its one core each worker kept busy: the server's cores over its workers, where they fit the
    cores (past them, the cores are what is full)."""
    return run["server_cores"] / min(int(run.get("workers", 1)), cores)


def seen(run: dict[str, Any], threads: int, cores: float) -> set[Resource]:
    """The resources a run's telemetry saw saturated (SATURATED of their capacity or more); none: the users bind."""
    full = {
        Resource.THREADS: run["threads_busy_mean"] >= SATURATED * threads,
        Resource.LOOP: loop_share(run) >= SATURATED,
        Resource.WORKER: worker_share(run, cores) >= SATURATED,
        Resource.CORES: run["server_cores"] >= SATURATED * cores,
    }
    return {r for r, yes in full.items() if yes} or {Resource.USERS}


def agrees(verdict: Verdict, threads: int, cores: float) -> bool:
    """Whether the bound the model named before the route's last run is a resource its telemetry saw saturated."""
    last = verdict.runs[-1]
    return named(last["bound"]) in seen(last, threads, cores)


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


def mix(priced: list[Priced], shares: dict[str, float], users: int) -> pd.DataFrame:
    """A mix of the routes (each one's share of the requests) priced by the operational laws, before any load: each
    resource's demand D per request of the mix (seconds of it, the shares' mean of each route's), its capacity, the
    most the mix can serve with it, X = capacity / D, and its use U = X × D at the mix's throughput, the least of
    those and of the users' N / S (Little's law). The bottleneck is the resource of the least X: the largest D for
    its capacity."""
    server = priced[0].stage.server
    settings, cores = server.settings, server.cores()
    demand = dict.fromkeys([Resource.THREADS, Resource.LOOP, Resource.WORKER, Resource.CORES], 0.0)
    service_s = 0.0
    for each in priced:
        share = shares.get(each.verdict.route, 0.0)
        v, one = each.verdict, pricing.one_user(each.stage)
        service_s += share * v.service_ms / 1000
        if stand_in(v.runs_on) == STAND_IN["thread pool"]:  # a thread held for all of S (a `def`, or its dependency)
            demand[Resource.THREADS] += share * v.service_ms / 1000
        if v.runs_on == HELD:  # the loop held for all of S
            demand[Resource.LOOP] += share * v.service_ms / 1000
        demand[Resource.WORKER] += share * one.worker_ms / 1000
        demand[Resource.CORES] += share * (one.worker_ms + one.pool_ms) / 1000
    capacity = {
        Resource.THREADS: settings.threads * settings.workers,
        Resource.LOOP: settings.workers,
        Resource.WORKER: min(settings.workers, cores),
        Resource.CORES: cores,
    }
    most = {r: capacity[r] / d if d > 0 else math.inf for r, d in demand.items()}
    most[Resource.USERS] = users / service_s if service_s > 0 else math.inf
    x = min(most.values())
    rows = [
        {
            "resource": str(r),
            "D per request (ms)": demand.get(r, service_s) * 1000,
            "capacity": capacity.get(r, users),
            "most req/s": most[r],
            f"U at {x:,.0f} req/s": x * demand[r] / capacity[r] if r in demand else x * service_s / users,
            "binds": most[r] == x,
        }
        for r in (Resource.USERS, *demand)
    ]
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
                f"CPU, {pricing.HOT_MOST} in flight (ms)": v.busy_cpu_ms,
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
        run = {**dataclasses.asdict(stage.workload), "users": users, "route": stage.route}
        run["tags"] = {"route": v.route, "change": ", ".join(f"{k} {n}" for k, n in v.change_settings.items())}
        [result] = load.run_plan(server, [run], duration_s=stage.workload.duration_s, progress=False, lesson=lesson)
    row = result.row
    return {
        "route": v.route,
        "change": run["tags"]["change"],
        "users": users,
        "advised before any load (req/s)": v.change_rps,  # from one user's prices, as `advice` printed it
        "measured (req/s)": row["rps"],
        "measured / advised": row["rps"] / v.change_rps if v.change_rps else math.nan,
        "valid": bool(row["valid"]),
    }

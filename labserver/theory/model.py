"""Theory beside every measurement: throughput and latency predicted for each pattern.

A closed loop of `users` with no think time against a server with C concurrent slots and
service time S gives X = min(users / S, C / S, CPU capacity / CPU per request) (the
bottleneck law), and each user then waits R = users / X (Little's law). Near the knee, where
the two bounds meet, requests also queue for the CPU: `closed_loop` (mean-value analysis) gives
the curve between the bounds, for a server whose own CPU per request has been measured.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from functools import cache
from typing import Any

import pandas as pd

from labserver.demo import cpus
from labserver.demo.settings import Settings
from labserver.demo.traits import Hold, Where
from labserver.demo.work import digest, fib
from labserver.theory.bottlenecks import Bottleneck
from labserver.theory.capacity import Price, call_s, executor_threads, in_step_rps, worker_cores
from labserver.theory.demand import Demand
from labserver.theory.timing import best_ms
from labserver.theory.workload import Workload, traits_of


@dataclass(frozen=True)
class Prediction:
    rps: float
    latency_ms: float
    bottleneck: str  # what sets the throughput: a Bottleneck, or words with figures in them

    def __post_init__(self) -> None:
        # Plain text from here on: a row, a table or a repr shows the words, never `Bottleneck.GIL`.
        object.__setattr__(self, "bottleneck", str(self.bottleneck))


@cache
def cpu_ms(cpu_n: int, repeat: int = 3) -> float:
    """Measured time of one fib(cpu_n) on this machine, in ms (best of `repeat`)."""
    return best_ms(fib, cpu_n, repeat) if cpu_n > 1 else 0.0


@cache
def digest_ms(mib: int, repeat: int = 3) -> float:
    """Measured time of one SHA-256 over `mib` MiB on this machine, in ms (best of `repeat`): `hashed`'s work."""
    return best_ms(digest, mib, repeat) if mib > 0 else 0.0


def work_ms(pattern: str, cpu_n: int, fib_ms: Callable[[int], float] | None = None) -> float:
    """One sub-task's CPU work of `pattern` in ms: a digest of cpu_n MiB, timed here, where the work is C that
    releases the GIL (`hashed`); fib(cpu_n) elsewhere, priced by `fib_ms` (default: timed here)."""
    return digest_ms(cpu_n) if traits_of(pattern).computes is Where.RELEASED else (fib_ms or cpu_ms)(cpu_n)


def predict(
    workload: Workload,
    settings: Settings | None = None,
    *,
    cores: float | None = None,
    cpu_ms_per_task: float | None = None,
    server_ms: float = 0.0,
    queueing: bool = False,
    demand: Demand | None = None,
) -> Prediction:
    """Predicted throughput (req/s) and mean latency (ms) of `workload`'s closed-loop users on a server of `settings`.

    `settings` None: the server's defaults, with a pool as large as the `cores` (default: the CPUs
    this process may use, `cpus.cores()`), as a default server's pool has a process per core.
    CPU work is priced by `cpu_ms_per_task` if given, otherwise by timing the pattern's work here (`work_ms`).
    `server_ms` is the CPU the server itself spends on each request besides the pattern's work
    (uvicorn and FastAPI: parsing, routing, validation, the reply), as measured on this machine
    (server CPU / req/s of a run; lesson 00, `make bench`): it runs on the worker's event loop
    under its GIL, so one worker serves at most 1000 / server_ms requests per second.
    `queueing=True` bends the curve below both bounds near the knee, where requests wait for
    that CPU (mean-value analysis, `closed_loop`), instead of taking the smaller bound.

    `demand` (theory.demand: CPU per request measured where it ran, in the run being predicted)
    replaces both prices: the workers' CPU per request stands for fib's and the server's own, the
    pool's for the pool's, and the machine's whole CPU per request, Locust's and a database's
    included, bounds what the cores this process may use can serve.
    """
    cores = cores or cpus.cores()
    settings = settings or Settings(procs=math.ceil(cores))
    price = _price(workload, demand, cpu_ms_per_task, server_ms)
    service = _service_s(workload, price)
    if service <= 0:
        return Prediction(math.nan, math.nan, Bottleneck.NO_WORK)
    limits = _limits(workload, settings, cores, price, service)
    bottleneck = min(limits, key=limits.__getitem__)
    rps = limits[bottleneck]
    if queueing and price.in_worker_s > 0:
        # a worker that gets a share of its core takes that much longer over its CPU per request
        _, parallel, share = worker_cores(workload, settings, cores, price)
        slower = price.in_worker_s / share
        stations = [(slower, parallel), (price.generator_s, price.generators)]
        # The generator's CPU is not part of the server's service time: it adds to each user's round trip.
        rps = min(rps, closed_loop(workload.users, service - price.in_worker_s, stations))
    latency_ms = workload.users / rps * 1000 if rps > 0 else math.inf  # a pool of no processes serves nothing
    return Prediction(rps=rps, latency_ms=latency_ms, bottleneck=bottleneck)


def _price(workload: Workload, demand: Demand | None, cpu_ms_per_task: float | None, server_ms: float) -> Price:
    """What `predict` prices a request with: the run's measured demand where it is known, else fib's time here."""
    w = workload
    pooled = w.traits.computes is Where.PROCESS_POOL  # fib runs outside the worker
    if demand is None or not demand.known:
        task_s = (work_ms(w.pattern, w.cpu_n) if cpu_ms_per_task is None else cpu_ms_per_task) / 1000  # per sub-task
        own_s = server_ms / 1000  # s of the server's own CPU per request
        in_worker = own_s + (0.0 if pooled else w.tasks * task_s)
        return Price(task_s, own_s, 0.0, in_worker, demand=demand)
    # The measured CPU per request holds every sub-task's fib and the server's own work.
    worker_s = demand.worker_ms / 1000  # s of CPU in the worker per request
    generator_s = demand.generator_ms / 1000 if demand.generator_ms > 0 else 0.0
    return Price(
        task_s=(demand.pool_ms if pooled else 0.0) / 1000 / w.tasks,
        own_s=0.0,
        worker_s=worker_s,  # the pool's CPU is in `task_s`; the worker's is measured as a whole
        in_worker_s=worker_s,
        generator_s=generator_s,
        generators=demand.generators if generator_s else 1,
        machine_s=demand.machine_ms / 1000 if demand.machine_ms > 0 else 0.0,
        demand=demand,
    )


def _service_s(workload: Workload, price: Price) -> float:
    """How long one request alone takes, in s: its waits and its CPU."""
    w, t, io = workload, workload.traits, workload.io_ms / 1000
    service = (io + w.tasks * price.task_s) if t.overlaps else w.tasks * (io + price.task_s)
    if len(t.waits) > 1:
        # seed 001's mixed endpoints: an awaited and a blocking io_ms per sub-task, one after the other
        service += w.tasks * (len(t.waits) - 1) * io
    return service + price.own_s + price.worker_s


def _limits(
    workload: Workload, settings: Settings, cores: float, price: Price, service: float
) -> dict[Bottleneck, float]:
    """Each bound on the throughput (req/s), by what sets it: the users, the server's slots, its CPU."""
    w, s, t, io = workload, settings, workload.traits, workload.io_ms / 1000
    limits = {Bottleneck.USERS: w.users / service}
    cpu_per_request = w.tasks * price.task_s
    if t.holds(Hold.THREAD):  # a waiting request holds a pool thread
        limits[Bottleneck.THREADS] = s.workers * s.threads / service
    if t.holds(Hold.EXECUTOR):  # ... or a thread of its loop's default executor, whatever the thread limit
        limits[Bottleneck.EXECUTOR] = s.workers * executor_threads() / service
    if t.connection:  # and a pooled connection, for as long
        limits[Bottleneck.CONNECTION_POOL] = s.workers * s.db_pool / service
    if t.calls and io > 0:  # each call to the other service holds one of the worker's `calls` while it runs
        limits[Bottleneck.CALLS] = s.workers * t.calls / (w.tasks * call_s(w, price))
    held = t.holds(Hold.LOOP)
    if held and held == len(t.waits):
        limits[Bottleneck.EVENT_LOOP] = s.workers / service  # the loop is held for the whole request
    elif held and held * io + price.task_s > 0:  # held for the blocking waits and fib only; no hold, no bound
        limits[Bottleneck.EVENT_LOOP] = s.workers / (w.tasks * (held * io + price.task_s))
    if t.computes is Where.PROCESS_POOL and cpu_per_request > 0:
        limits[Bottleneck.CORES] = min(s.workers * s.procs, cores) / cpu_per_request
    # CPU that runs in the worker, under its GIL (the pool computes outside it): one core per worker at most
    in_worker = price.in_worker_s
    if in_worker > 0:
        bound, parallel, share = worker_cores(w, s, cores, price)
        limits[bound] = min(limits.get(bound, math.inf), parallel * share / in_worker)
    if in_step(w.pattern, w.users, io, in_worker / w.tasks, s.workers * s.threads):
        # The GIL shares one core among the computing threads in turns of the switch interval
        # (processor sharing), so requests that compute together finish together; the worker's
        # loop, itself waiting its turn, then answers them in one burst, and their users come back
        # together. The users move in step, and the core sits idle through every io wait they share.
        # Without a GIL the scheduler shares the cores among more threads than cores in its own time
        # slices, with the same result on min(users, threads, cores) cores (lesson 10).
        # C code that lets go of the GIL (`hashed`) is shared among the threads in time slices too.
        gil = s.gil and w.traits.computes is Where.THREAD_POOL
        shared = min(s.workers, cores) if gil else min(w.users, s.workers * s.threads, cores)
        step = Bottleneck.IN_STEP if gil else Bottleneck.SLICED
        limits[step] = in_step_rps(w.users, w.tasks * io, in_worker, shared)
    elif t.loop_in_step and io > 0 and in_worker > 0:
        # A round: the loop computes every user's CPU one after another, then their calls wait io together with
        # nothing for the loop to do, and their replies start the next round together (lesson 12's new client)
        limits[Bottleneck.LOOP_IN_STEP] = in_step_rps(w.users, w.tasks * io, in_worker, min(s.workers, cores))
    if price.generator_s:
        # The load generator is a station too: Locust runs all its users on one core per process,
        # so it sends at most processes / (its CPU per request), and near that its users queue for it.
        limits[Bottleneck.GENERATOR] = price.generators / price.generator_s
    if price.machine_s:
        # Every request also costs Locust, a database and the rest CPU, on the same cores.
        limits[Bottleneck.MACHINE] = cores / price.machine_s
    return limits


def in_step(pattern: str, users: int, io_s: float, compute_s: float, threads: int) -> bool:
    """Whether the thread pool's users move in step: each computes for a turn of the GIL or more between waits.

    A computation shorter than the switch interval (5 ms) finishes within its turn, so the threads
    compute one after the other and their waits stay spread; a longer one is cut into turns
    shared with every other computing thread, and they all end together: the replies come back
    in one burst a round (lesson 03's fib + sleep). Users beyond the threads queue instead, which
    this does not price, nor a sub-task that waits more than once (`wrapped`): the round is priced
    with one wait of io_s each.
    """
    t = traits_of(pattern)
    if t.computes not in (Where.THREAD_POOL, Where.RELEASED) or len(t.waits) != 1:
        return False
    return io_s > 0 and compute_s >= sys.getswitchinterval() and users <= threads


Station = tuple[float, float]  # a CPU every request visits: (seconds of CPU per visit, cores that serve it)


def closed_loop(users: int, think_s: float, stations: Sequence[Station]) -> float:
    """Throughput (req/s) of `users` closed-loop users, each `think_s` away between visits to the
    `stations` (CPUs) every request visits once: exact mean-value analysis (Reiser and Lavenberg,
    1980), with Seidmann's approximation for a station of several cores.

    Few users give Little's law, users / (think_s + the demands); many give the bottleneck law,
    cores / demand of the busiest station; in between, requests queue for the CPUs and
    throughput bends below both. Two stations near their limit at once (the server's worker and
    the load generator, each on its own core) bend it further than either would alone.
    """
    if users <= 0:
        return 0.0
    busy = [(d, c) for d, c in stations if d > 0]
    if not busy:
        return users / think_s if think_s > 0 else math.nan
    # Seidmann: a station of c cores is one core c times as fast, plus a pure delay for the rest of a visit
    per_core = [d / c for d, c in busy]
    think = think_s + sum(d * (c - 1) / c for d, c in busy)
    queues = [0.0] * len(busy)
    rps = 0.0
    for n in range(1, users + 1):  # add one user at a time: each finds the queues the others left
        residence = [d * (1 + q) for d, q in zip(per_core, queues, strict=True)]
        rps = n / (think + sum(residence))
        queues = [rps * r for r in residence]
    return rps


SERVER = ("threads", "workers", "procs", "gil")  # what the model reads of a server's Settings


def predict_for(pattern: str, **given) -> Prediction:
    """`predict` from a short call's keywords, as a lesson's table or an article's setting writes them.

    The workload's (`users`, `tasks`, `io_ms`, `cpu_n`), the server's (`threads`, `workers`,
    `procs`; without `procs`, a pool as large as the cores, as `predict` takes it) and `predict`'s own.
    """
    names = {f.name for f in fields(Workload)}
    workload = Workload.of({"pattern": pattern, **{k: v for k, v in given.items() if k in names}})
    rest = {k: v for k, v in given.items() if k not in names and k not in SERVER}
    return predict(workload, _settings(given, rest.get("cores")), **rest)


def _settings(given: Mapping[str, Any], cores: float | None) -> Settings:
    """The server's Settings named in `given` (a short call's keywords, a row on disk); the rest its defaults."""
    server = {k: given[k] for k in SERVER if k in given}
    if "gil" in server:  # a run saved before the column existed reads NaN there: it ran with its GIL
        server["gil"] = server["gil"] is not False and server["gil"] != 0
    return Settings(**{"procs": math.ceil(cores or cpus.cores()), **server})


def predict_frame(patterns: list[str], users: list[int], **kw) -> pd.DataFrame:
    """The prediction for every pattern × users, as a table to show before measuring (`kw`: see `predict_for`)."""
    return predict_plan([(pattern, u) for pattern in patterns for u in users], **kw)


def predict_plan(plan: Sequence[tuple[str, int]], **kw) -> pd.DataFrame:
    """The prediction for each (pattern, users) of `plan`, in its order, as a table (`kw`: see `predict_for`)."""
    rows = []
    for pattern, u in plan:
        p = predict_for(pattern, users=u, **kw)
        rows.append(
            {
                "pattern": pattern,
                "users": u,
                "predicted_rps": p.rps,
                "predicted_ms": p.latency_ms,
                "bottleneck": p.bottleneck,
            }
        )
    return pd.DataFrame(rows)


def server_cpu_ms(frame: pd.DataFrame) -> float:
    """The server's own CPU per request on this machine, in ms, near its ceiling: that of `frame`'s busiest run.

    Each run measures it (the server's CPU seconds over the requests it served), and it falls as
    the load rises: with few requests in flight every one wakes the event loop on its own, with
    many one wake-up serves several. The ceiling 1 / D is reached where the worker is busiest, so
    that run's D sets it; a light run's D would put the ceiling far below what one worker serves.
    """
    measured = frame.dropna(subset=["server_cpu", "rps"])
    measured = measured[measured["rps"] > 0]
    if measured.empty:
        return math.nan
    busiest = measured.loc[measured["server_cpu"].idxmax()]
    return float(busiest["server_cpu"] / busiest["rps"] * 1000)


def with_little(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame`'s runs with `little_rps`: Little's law alone, users / S, the server's CPU left out."""
    # cpu_ms_per_task=0: the endpoints this is for do no fib; the CPU is what Little's law leaves out
    little = [predict(*_run(row), cpu_ms_per_task=0.0).rps for row in frame.to_dict("records")]
    return frame.assign(little_rps=little)


def with_server_cpu(frame: pd.DataFrame, server_ms: float) -> pd.DataFrame:
    """`frame`'s runs predicted again with `server_ms` of server CPU per request, queueing included.

    The first prediction moves to `little_rps`; `predicted_rps`, `predicted_ms`, `bottleneck`
    and `ratio` then hold the new one.
    """
    out = frame.copy()
    new = [predict(*_run(row), server_ms=server_ms, queueing=True) for row in frame.to_dict("records")]
    out["little_rps"] = frame["predicted_rps"]
    out["predicted_rps"] = [p.rps for p in new]
    out["predicted_ms"] = [p.latency_ms for p in new]
    out["bottleneck"] = [p.bottleneck for p in new]
    out["ratio"] = out["rps"] / out["predicted_rps"]
    return out


def predict_against(patterns: list[str], rps: dict[str, float], users: int, **kw) -> pd.DataFrame:
    """The model's prediction for `users` beside req/s measured elsewhere (an article's table), and their ratio.

    `rps` maps each pattern to its measured req/s; `kw` is the rest of that setting, as `predict_for` takes it.
    """
    out = predict_frame(patterns, [users], **kw)
    out["rps"] = out["pattern"].map(rps)
    out["ratio"] = out["rps"] / out["predicted_rps"]
    return out


def _run(row: Mapping[str, Any]) -> tuple[Workload, Settings]:
    """The workload a run's row records, and its server's settings."""
    return Workload.of(row), _settings(row, None)


def furthest(ratios: pd.Series, target: float = 1.0) -> float:
    """The value of `ratios` furthest from `target`, either way: the worst fit among measured / predicted."""
    return float(ratios.iloc[(ratios - target).abs().argmax()])

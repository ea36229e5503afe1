"""Theory for lesson 07 (Carlos Pena's k6 load test): which pool bounds each database endpoint, where CPU takes over.

A sync endpoint holds a thread for its whole request and a connection while it queries, so
it serves at most min(threads, connections) requests at once; an async endpoint holds no
thread, only connections. With service time S (one request alone), Little's law and the
bottleneck law give X = min(users, slots) / S, and the worker's one core caps it at
1 / (CPU seconds per request): CPU that lone requests measure (`cpu_per_request`).

Under load a request holds its connection longer than alone: between the database's replies it
waits its turn on the worker's event loop or GIL. A run that measured that hold (`hold_ms`, per
use of a connection) has the connection pool priced with it: X = connections / hold.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from labserver.checks import choice
from labserver.demo import cpus
from labserver.demo.routes import SHOP as ENDPOINTS
from labserver.demo.settings import DB_POOL_DEFAULT, THREADS_DEFAULT
from labserver.theory.bottlenecks import Bottleneck
from labserver.theory.capacity import loop_kept
from labserver.theory.model import Prediction

QUERIES = {"select": 1, "simulation": 2}  # connections one request holds at once
CONVERGED = 0.15  # async / sync within this of 1: the two versions serve alike


def driver(endpoint: str) -> str:
    """`sync` or `async`."""
    return endpoint.split("_", 1)[0]


def kind(endpoint: str) -> str:
    """`select` or `simulation`."""
    return endpoint.split("_", 1)[1]


def limits(
    endpoint: str,
    users: int,
    service_ms: float,
    *,
    threads: int = THREADS_DEFAULT,
    db_pool: int = DB_POOL_DEFAULT,
    workers: int = 1,
    cpu_ms_per_request: float = 0.0,
    cores: float | None = None,
    machine_ms: float = 0.0,
    hold_ms: float = math.nan,
    waited: float = math.nan,
) -> dict[str, float]:
    """Each bound on a database endpoint's throughput (req/s), by name: what `predict` takes the least of.

    `service_ms` is one request's time alone (database wait and CPU included); `cpu_ms_per_request`
    is the worker's CPU for one request (0: not CPU-bound); `machine_ms` the whole machine's CPU
    per request, PostgreSQL's and Locust's included (0: not measured), which the usable cores bound.
    `hold_ms` is a connection's time per use measured under load; NaN prices the connection pool
    with the lone request's hold, its time alone less its CPU. `waited` is the share of the run an
    async worker's loop was ready with no CPU free (capacity.loop_kept: its core is its less that;
    NaN: not measured); a sync endpoint's threads compute while the loop waits, so not theirs.
    """
    choice("database endpoint", endpoint, ENDPOINTS)
    cores = cores or cpus.cores()
    s = service_ms / 1000
    cpu = cpu_ms_per_request / 1000
    bounds: dict[str, float] = {Bottleneck.USERS: users / s}
    # A connection is held for the request's queries, not its CPU post-processing.
    hold = hold_ms / 1000 if math.isfinite(hold_ms) else max(s - cpu, 1e-6)
    bounds[Bottleneck.CONNECTION_POOL] = workers * db_pool / QUERIES[kind(endpoint)] / hold
    if driver(endpoint) == "sync":
        bounds[Bottleneck.THREAD_POOL] = workers * threads / s
    if cpu > 0:
        kept = loop_kept(waited, workers, cores) if driver(endpoint) == "async" else 1.0
        bounds[Bottleneck.GIL] = min(workers, cores) * kept / cpu  # each worker runs Python under its GIL
    if machine_ms > 0:
        bounds[Bottleneck.MACHINE_AND_DATABASE] = cores / (machine_ms / 1000)
    return bounds


def predict(endpoint: str, users: int, service_ms: float, hold_ms: float = math.nan, **settings) -> Prediction:
    """Predicted throughput and mean latency of a database endpoint under `users` closed-loop users (see limits).

    The lone request's figures say which bound holds. If it is the connection pool and the run
    measured its connections' hold (`hold_ms`), the pool is priced with that. Not otherwise: on a
    saturated core the hold grows by the wait for that core, and all of the connections then look
    busy because the core is; the core is still what bounds the run.
    """
    bounds = limits(endpoint, users, service_ms, **settings)
    pool = Bottleneck.CONNECTION_POOL
    if min(bounds, key=bounds.__getitem__) == pool and math.isfinite(hold_ms):
        bounds[pool] = limits(endpoint, users, service_ms, hold_ms=hold_ms, **settings)[pool]
    bottleneck = min(bounds, key=bounds.__getitem__)
    rps = bounds[bottleneck]
    return Prediction(rps=rps, latency_ms=users / rps * 1000, bottleneck=bottleneck)


def fib_share(frame: pd.DataFrame) -> pd.Series:
    """fib's share of each request's CPU in a depth sweep, from the server's own CPU per request.

    CPU per request is `server_cpu / rps`; at the shallowest depth it is (nearly) all the rest of
    the request, so at depth n fib's share is 1 - cpu(shallowest) / cpu(n), per pattern. No fib
    timing from another process enters it: a shared machine's speed drifts between processes.
    """
    cpu = frame["server_cpu"] / frame["rps"]
    shallowest = frame["cpu_n"] == frame.groupby("pattern")["cpu_n"].transform("min")
    rest = cpu[shallowest].groupby(frame["pattern"][shallowest]).mean()
    return 1 - frame["pattern"].map(rest) / cpu


def converges_at(ratios: dict[int, float], tolerance: float = CONVERGED) -> int | None:
    """The shallowest depth from which async / sync stays within `tolerance` of 1 at every deeper depth."""
    found = None
    for depth in sorted(ratios, reverse=True):
        if abs(ratios[depth] - 1) > tolerance:
            break
        found = depth
    return found


def edge_kept(ratios: Mapping[int, float]) -> float:
    """What is left at the deepest depth of the async edge at the shallowest: (async / sync − 1) deep over shallow.

    0: the edge is gone at the deepest depth; 1: fib took none of it; NaN where async had no edge
    to lose at the shallowest depth (async / sync ≤ 1 there).
    """
    shallow, deep = min(ratios), max(ratios)
    edge = ratios[shallow] - 1
    return (ratios[deep] - 1) / edge if edge > 0 else math.nan


def pool_headroom(bounds: Mapping[str, float], rps: float) -> float:
    """The smaller of a sync endpoint's two pool bounds (see `limits`) over its measured req/s.

    Far above 1, neither the thread pool nor the connection pool is what holds it back.
    """
    return min(bounds[Bottleneck.THREAD_POOL], bounds[Bottleneck.CONNECTION_POOL]) / rps


def async_over_sync(pairs: Mapping[int, tuple[float, float]]) -> pd.Series:
    """async / sync throughput by depth, from (sync, async) req/s pairs such as Carlos Pena's FIB sweep."""
    return pd.Series({depth: async_rps / sync_rps for depth, (sync_rps, async_rps) in pairs.items()})

"""The resources that bind a route of one's own, as its telemetry can show them saturated (`Resource`): the bound
the model names read as one of them, what a run's telemetry saw of each (`saturation`, `seen`) and whether the two
agree, and a mix of the routes priced by the operational laws before any load (`mix`).
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Any

import pandas as pd

from labserver.demo.traits import Where
from labserver.harness.load import pricing
from labserver.harness.rows import telemetry
from labserver.theory.bottlenecks import Bottleneck
from labserver.theory.cores import SATURATED
from labserver.yourapp.patterns import HELD, STAND_IN, stand_in
from labserver.yourapp.verdict import Priced, Verdict


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
        # a thread held for all of S (a `def`, or its dependency)
        if stand_in(v.runs_on) == STAND_IN[Where.THREAD_POOL]:
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

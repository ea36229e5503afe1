"""Theory for lesson 06: how fast a Python client can send n requests, and what stops it.

n requests, `concurrency` of them in flight, finish in ceil(n / in flight) waves of S, the
time one request takes alone — Little's law for a batch — where "in flight" is also capped
by the server (40 threads for a plain `def` endpoint). Unless the client's own CPU runs out
first: one Python process gets one core at most (the GIL), so a client that spends c ms of
CPU per request cannot send more than 1000 / c per second.

S is `io_ms` plus a round trip (`requests` opens a new connection for every call), and c
depends on the library: both are measured in the runs that kept the client calm (the loop
always does), as `model.cpu_ms` measures fib, and priced into the runs that follow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from labserver.checks import choice, whole
from labserver.demo.patterns import check_pattern
from labserver.demo.settings import Settings
from labserver.demo.work import check_bounds
from labserver.theory.model import Prediction

LIBRARY = {"loop": "requests", "threadpool": "requests", "aiohttp": "aiohttp"}
REQUESTS_MAX = 10_000
CONCURRENCY_MAX = 1_000
CALM = 0.5  # a client below this share of a core is not slowed by its own CPU: its runs price the rest


@dataclass(frozen=True)
class Cost:
    """What one request costs with a client library here, measured in calm runs (medians)."""

    client_ms: float  # client CPU per request
    service_ms: float  # one request's time, its I/O wait and round trip included (S)


def check_run(client: str, pattern: str, requests: int, concurrency: int, io_ms: int) -> None:
    """Raise ValueError saying what to change, before any process starts."""
    choice("client", client, LIBRARY)
    check_pattern(pattern)
    whole("requests", requests, 1, REQUESTS_MAX)
    whole("concurrency", concurrency, 1, CONCURRENCY_MAX)
    problems = check_bounds(1, io_ms, 0)
    if problems:
        raise ValueError("; ".join(msg for _, msg in problems))


def slots(pattern: str, threads: int = 40, workers: int = 1) -> float:
    """Requests the server holds at once on `pattern`: its thread pool, or (event loop) no limit."""
    return {"threadpool": threads * workers, "blocking": workers}.get(pattern, math.inf)


def predict_client(
    client: str, requests: int, concurrency: int, io_ms: float, server_slots: float = math.inf, cost: Cost | None = None
) -> Prediction:
    """Predicted req/s (requests / wall time) of `requests` GETs of `io_ms` each, `concurrency` in flight.

    Without `cost`, S is the I/O wait alone and the client's CPU is free: the pure concurrency model.
    """
    wanted = 1 if client == "loop" else min(concurrency, requests)
    in_flight = min(wanted, server_slots)
    service_s = (cost.service_ms if cost else io_ms) / 1000
    if service_s <= 0:
        return Prediction(math.nan, math.nan, "no work to model")
    if client == "loop":
        name = "one request at a time"
    elif server_slots < wanted:
        name = f"server threads ({server_slots:.0f})"
    else:
        name = f"client concurrency ({wanted})"
    limits = {name: requests / (math.ceil(requests / in_flight) * service_s)}
    if cost and cost.client_ms > 0:
        limits["client CPU (one core)"] = 1000 / cost.client_ms
    bottleneck = min(limits, key=limits.get)
    rps = limits[bottleneck]
    return Prediction(rps=rps, latency_ms=wanted / rps * 1000, bottleneck=bottleneck)


def client_costs(frame: pd.DataFrame) -> dict[str, Cost]:
    """Each library's Cost, from its valid runs whose client used less than `CALM` of a core."""
    calm = frame[(frame["client_cpu"] < CALM) & frame["valid"].astype(bool)]
    medians = calm.groupby("library")[["client_ms", "mean_ms"]].median()
    return {library: Cost(float(m.client_ms), float(m.mean_ms)) for library, m in medians.iterrows()}


def plan(
    clients: list[str],
    patterns: list[str],
    counts: list[int],
    concurrency: list[int],
    io_ms: int,
    max_run_s: float,
    threads: int = 40,
) -> pd.DataFrame:
    """Every run of the lesson and its expected length; `run` is false for runs longer than `max_run_s`,
    except at the smallest count, so that every client is measured at least once."""
    if not clients or not patterns or not counts or not concurrency:
        raise ValueError("give at least one client, pattern, request count and concurrency")
    if isinstance(max_run_s, bool) or not isinstance(max_run_s, int | float) or not max_run_s > 0:
        raise ValueError(f"max_run_s must be a number of seconds above 0, got {max_run_s!r}")
    Settings(threads=threads).check()
    rows = []
    for pattern in patterns:
        for client in clients:
            for k in [1] if client == "loop" else concurrency:
                for n in counts:
                    check_run(client, pattern, n, k, io_ms)
                    wall_s = n / predict_client(client, n, k, io_ms, slots(pattern, threads)).rps
                    rows.append(
                        {
                            "pattern": pattern,
                            "client": client,
                            "users": k,
                            "requests": n,
                            "expected_s": wall_s,
                            "run": wall_s <= max_run_s or n == min(counts),
                        }
                    )
    return pd.DataFrame(rows)


def speedups(frame: pd.DataFrame) -> pd.DataFrame:
    """Each run's rps over the loop's on the same endpoint, beside the speedup the model predicts."""
    loops = frame[frame["client"] == "loop"].groupby("pattern")[["rps", "predicted_rps"]].median().add_suffix("_loop")
    out = frame[frame["client"] != "loop"].join(loops, on="pattern")
    out["speedup"] = out["rps"] / out["rps_loop"]
    out["predicted_speedup"] = out["predicted_rps"] / out["predicted_rps_loop"]
    out["speedup_ratio"] = out["speedup"] / out["predicted_speedup"]
    return out[
        [
            "pattern",
            "client",
            "users",
            "requests",
            "rps",
            "speedup",
            "predicted_speedup",
            "speedup_ratio",
            "client_cpu",
            "bottleneck",
        ]
    ].reset_index(drop=True)


def pick(frame: pd.DataFrame, column: str, **where) -> float:
    """The median of `column` over the runs matching `where` (NaN when none match): safe on partial data."""
    rows = frame
    for key, value in where.items():
        rows = rows[rows[key] == value]
    return float(rows[column].median()) if len(rows) else math.nan


@dataclass(frozen=True)
class Findings:
    """The figures lesson 06's titles and claims quote: medians over the matching runs, NaN where none ran."""

    low: int  # the fewest requests in flight: the client has CPU to spare
    high: int  # the most requests in flight
    big: int  # the most requests sent
    calm: pd.DataFrame  # `speedups` of the runs with `low` in flight
    loop_ratio: float  # the loop's measured / predicted
    pool_rps: float  # the requests thread pool, `high` threads, `big` requests, both endpoints: req/s
    pool_cpu: float  # ... and its client CPU, in cores
    pool_async: float  # ... on the async endpoint alone: req/s
    aio: dict[str, float]  # aiohttp, `high` in flight, `big` requests: req/s per endpoint (pattern)
    aio_model: dict[str, float]  # ... and the model's
    requests_ms: float  # client CPU per request with requests, in ms
    aiohttp_ms: float  # ... and with aiohttp

    @property
    def model_gap(self) -> float:
        """How many times the requests the model expects aiohttp to get from the async endpoint over the sync one."""
        return self.aio_model["sequential"] / self.aio_model["threadpool"]


def findings(frame: pd.DataFrame, patterns: list[str], concurrency: list[int], counts: list[int]) -> Findings:
    """Lesson 06's figures from its runs: the calm runs' speedups, the loop, and both libraries at the top load."""
    low, high, big = min(concurrency), max(concurrency), max(counts)
    speed = speedups(frame)
    top = {"users": high, "requests": big}  # the most in flight, the most requests sent
    return Findings(
        low=low,
        high=high,
        big=big,
        calm=speed[speed["users"] == low],
        loop_ratio=pick(frame, "ratio", client="loop"),
        pool_rps=pick(frame, "rps", client="threadpool", **top),
        pool_cpu=pick(frame, "client_cpu", client="threadpool", **top),
        pool_async=pick(frame, "rps", client="threadpool", pattern="sequential", **top),
        aio={p: pick(frame, "rps", client="aiohttp", pattern=p, **top) for p in patterns},
        aio_model={p: pick(frame, "predicted_rps", client="aiohttp", pattern=p, **top) for p in patterns},
        requests_ms=pick(frame, "client_ms", library="requests"),
        aiohttp_ms=pick(frame, "client_ms", library="aiohttp"),
    )

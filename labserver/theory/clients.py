"""Theory for lesson 06: how fast a Python client can send n requests, and what stops it.

n requests, `concurrency` of them in flight, finish in ceil(n / in flight) waves of S, the
time one request takes alone — Little's law for a batch — where "in flight" is also capped
by the server (40 threads for a plain `def` endpoint). That is the pure concurrency model,
priced with `io_ms` alone, which the lesson shows before it runs.

After a run, the model is priced with the CPU that run measured, as every other lesson's is:
c, the client's CPU per request (one Python process gets one core at most, the GIL), and s,
the server's. A request alone then takes S = io + c + s, or what a lone request took if that
is longer (the wake-ups in its path are no CPU: see `Cost.alone_ms`). A batch lasts at least
the longest of these times:
- its waves of S, plus (k − 1) × max(c, s) for the first k requests to get through one at a
  time, at the pace of the slower side (the spread every later wave inherits; none if it
  outlasts a request, when no wave forms; a `requests` thread pool, the slower side, spreads
  only its last wave's requests);
- the client's CPU for all n requests on its one core, plus the last one's wait (a burst
  sends faster than it can be answered, not faster than its core allows);
- n over the steady rate of `in flight` users queueing for the two CPUs (mean-value analysis,
  `model.closed_loop`);
- both sides' CPU for all n requests on the CPUs the process may use, which binds only where it
  may use one.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import pandas as pd

from labserver.checks import choice
from labserver.demo import cpus
from labserver.demo.settings import THREADS_DEFAULT, Settings
from labserver.demo.traits import Hold, Where
from labserver.theory.batch import LIBRARY, Batch, Client, Cost, check_run
from labserver.theory.bottlenecks import Bottleneck
from labserver.theory.model import Prediction, closed_loop
from labserver.theory.workload import traits_of

# The client's core names a batch's bound only where the model keeps it this busy over the batch's wall
CLIENT_BUSY = 0.5


def client_core_s(requests: int, threads: int, send_s: float, read_s: float, wait_s: float) -> float:
    """When one core that sends `requests` and reads every reply is done: `threads` of them in flight at most.

    Each request costs the core `send_s`, then, `wait_s` later (the server's part), `read_s` to
    read its reply; a thread whose reply is read sends again at once. The core takes whatever is
    ready first, in turn (the GIL, handed to the thread that asked first). A burst sends first and
    reads later, so the replies of the requests before the last are read while the last one
    waits: the batch ends sooner than all its CPU and then one wait. Lesson 06 prices a burst of
    `requests` threads so; docs/evidence.md sets this and all the CPU then one wait beside its runs.
    """
    ready = [(0.0, i, True) for i in range(min(threads, requests))]  # (since when, order, a send?)
    heapq.heapify(ready)
    now, sent, order = 0.0, len(ready), len(ready)
    while ready:
        since, _, sending = heapq.heappop(ready)
        now = max(now, since)
        if sending:
            now += send_s
            heapq.heappush(ready, (now + wait_s, order, False))
        else:
            now += read_s
            if sent < requests:
                heapq.heappush(ready, (now, order, True))
                sent += 1
        order += 1
    return now


def slots(pattern: str, threads: int = THREADS_DEFAULT, workers: int = 1) -> float:
    """Requests the server holds at once on `pattern`: its threads, its event loops, or no limit.

    A plain `def` with one wait a sub-task (`threadpool`) holds a thread a request, and one whose
    every wait blocks the loop (`blocking`) a worker. Lesson 06 prices a request as one wait and
    its CPU (`Batch`): one that waits twice (`wrapped`), or waits in a thread and computes on the
    loop (`offload`), is not capped here.
    """
    t = traits_of(pattern)
    if t.computes in (Where.THREAD_POOL, Where.RELEASED) and t.waits == (Hold.THREAD,):
        return threads * workers
    if t.waits and t.holds(Hold.LOOP) == len(t.waits):  # every wait holds its worker's one loop
        return workers
    return math.inf


def predict_client(
    client: Client,
    *,
    requests: int,
    concurrency: int,
    io_ms: float,
    server_slots: float = math.inf,
    cost: Cost | None = None,
    cores: float | None = None,
) -> Prediction:
    """Predicted req/s (requests / wall time) of `requests` GETs of `io_ms` each, `concurrency` in flight.

    Without `cost` (or with one not measured), S is the I/O wait alone and the client's CPU is
    free: the pure concurrency model. With it, the batch's wall time is the longest of its
    waves, its client's CPU on one core, its steady closed loop (see the module's docstring), and
    both sides' CPU on the `cores` this process may use (default: `cpus.cores()`), which they share.
    """
    batch = Batch.of(client, requests, concurrency, io_ms, server_slots, cost)
    if batch.one <= 0:
        return Prediction(math.nan, math.nan, Bottleneck.NO_WORK)
    if client == "loop":
        name: str = Bottleneck.ONE_AT_A_TIME
    elif server_slots < batch.wanted:
        name = f"server threads ({server_slots:.0f})"
    else:
        name = f"client concurrency ({batch.wanted})"
    walls = {name: math.ceil(requests / batch.in_flight) * batch.one + batch.spread_s}
    if batch.c > 0 and cost is not None:  # measured: `batch.c` is its client's CPU
        walls = _cpu_walls(walls, name, batch, cost, cpus.cores() if cores is None else cores)
    bottleneck = max(walls, key=walls.__getitem__)
    rps = requests / walls[bottleneck]
    if bottleneck == Bottleneck.CLIENT_CPU and requests * batch.c < CLIENT_BUSY * walls[bottleneck]:
        # the client core's play-out holds every wait too: a core idle most of it binds nothing, the waits do
        bottleneck = name
    return Prediction(rps=rps, latency_ms=batch.wanted / rps * 1000, bottleneck=bottleneck)


def _cpu_walls(walls: dict[str, float], name: str, batch: Batch, cost: Cost, cores: float) -> dict[str, float]:
    """`walls` and the batch's CPU bounds beside them: the client's core, the steady closed loop, the machine's."""
    walls = dict(walls)
    b = batch
    if 0 < cost.send_share <= 1:
        # its one core sends and reads every request, the last reply read while the last waits
        sent = b.c * cost.send_share
        walls[Bottleneck.CLIENT_CPU] = client_core_s(b.requests, b.wanted, sent, b.c - sent, b.one - b.c)
    else:  # every request's client CPU on its one core, then the last reply
        walls[Bottleneck.CLIENT_CPU] = b.requests * b.c + b.io
    # queueing for both CPUs; between visits, the rest of a lone request's time (io, at least)
    steady = closed_loop(int(b.in_flight), b.one - b.c - b.s, [(b.c, 1), (b.s, 1)])
    # named after the smaller of its two asymptotes: the users' round trips, or the busier CPU
    cpu = Bottleneck.CLIENT_CPU if b.c >= b.s else Bottleneck.SERVER_CPU
    loop = name if b.in_flight / b.one < 1 / max(b.c, b.s) else cpu
    walls[loop] = max(walls.get(loop, 0.0), b.requests / steady)
    # Client and server on the same cores: where the process may use one CPU, they take turns on
    # it, and every request costs c + s of it. On two or more, each side has a core of its own
    # (isolate.apart pins them apart), and its own CPU bounds it: no shared bound is set.
    if cores < 2:
        walls[Bottleneck.MACHINE] = b.requests * (b.c + b.s) / cores + b.io
    return walls


def plan(
    clients: list[str],
    patterns: list[str],
    counts: list[int],
    concurrency: list[int],
    *,
    io_ms: int,
    max_run_s: float,
    threads: int = THREADS_DEFAULT,
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
        for name in clients:
            client = choice("client", name, LIBRARY)
            for k in [1] if client == "loop" else concurrency:
                for n in counts:
                    check_run(client, pattern, n, k, io_ms)
                    expected = predict_client(
                        client, requests=n, concurrency=k, io_ms=io_ms, server_slots=slots(pattern, threads)
                    )
                    wall_s = n / expected.rps
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
    # The speedup the lesson predicts is the pure concurrency model's (k in flight: k times the loop)
    loops = frame[frame["client"] == "loop"].groupby("pattern")[["rps", "concurrency_rps"]].median().add_suffix("_loop")
    out = frame[frame["client"] != "loop"].join(loops, on="pattern")
    out["speedup"] = out["rps"] / out["rps_loop"]
    out["predicted_speedup"] = out["concurrency_rps"] / out["concurrency_rps_loop"]
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
    loop_ratio: float  # the loop's measured / the pure concurrency model's (1 / io per second)
    # The requests thread pool, `high` threads, `big` requests, on the async endpoint: the server caps
    # nothing there, so the client's core is the limit. (On the sync endpoint the server's threads
    # cap it at threads / S, which on a fast host sits below the client's 1 / c.)
    pool_cpu: float  # its client CPU, in cores
    pool_async: float  # its req/s
    pool_async_model: float  # ... and the model's, priced with that run's CPU
    aio: dict[str, float]  # aiohttp, `high` in flight, `big` requests: req/s per endpoint (pattern)
    aio_model: dict[str, float]  # ... and the model's
    requests_ms: float  # client CPU per request with requests (its thread pool), in ms, at the top load
    aiohttp_ms: float  # ... and with aiohttp

    @property
    def calm_speedup(self) -> float:
        """The runs with `low` in flight: their speedup over the loop, the median."""
        return float(self.calm["speedup"].median())

    @property
    def calm_model_speedup(self) -> float:
        """... the waves' model's (k in flight: k times the loop), the median."""
        return float(self.calm["predicted_speedup"].median())

    @property
    def calm_ratio(self) -> float:
        """... and their speedup / the model's, the median."""
        return float(self.calm["speedup_ratio"].median())

    @property
    def calm_spread(self) -> tuple[float, float]:
        """... and the smallest and the largest of those runs' ratios."""
        return float(self.calm["speedup_ratio"].min()), float(self.calm["speedup_ratio"].max())

    @property
    def library_ratio(self) -> float:
        """How many times the requests aiohttp got from the async endpoint over the thread pool: measured."""
        return self.aio["sequential"] / self.pool_async

    @property
    def library_gap(self) -> float:
        """How many times the requests the model expects aiohttp to get from the async endpoint over the thread pool."""
        return self.aio_model["sequential"] / self.pool_async_model

    @property
    def endpoint_ratio(self) -> float:
        """How many times the requests aiohttp got from the async endpoint over the sync one: measured."""
        return self.aio["sequential"] / self.aio["threadpool"]

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
        loop_ratio=pick(frame.assign(pure=frame["rps"] / frame["concurrency_rps"]), "pure", client="loop"),
        pool_cpu=pick(frame, "client_cpu", client="threadpool", pattern="sequential", **top),
        pool_async=pick(frame, "rps", client="threadpool", pattern="sequential", **top),
        pool_async_model=pick(frame, "predicted_rps", client="threadpool", pattern="sequential", **top),
        aio={p: pick(frame, "rps", client="aiohttp", pattern=p, **top) for p in patterns},
        aio_model={p: pick(frame, "predicted_rps", client="aiohttp", pattern=p, **top) for p in patterns},
        # both at the same load: a client's CPU per request falls as more requests share its wake-ups
        requests_ms=pick(frame, "client_ms", client="threadpool", pattern="sequential", **top),
        aiohttp_ms=pick(frame, "client_ms", client="aiohttp", pattern="sequential", **top),
    )


def by_endpoint(frame: pd.DataFrame, users: int) -> pd.DataFrame:
    """The runs with `users` in flight, per endpoint and client: median req/s, server CPU per request and in cores."""
    at = frame[frame["users"] == users]
    return at.groupby(["pattern", "client"])[["rps", "server_ms", "server_cpu"]].median()


@dataclass(frozen=True)
class Reuse:
    """`requests.get` in a thread pool (client `threadpool`) beside a `requests.Session` per thread (`session`)."""

    get_ms: float  # client CPU per request, requests.get
    session_ms: float  # ... and a Session
    get_rps: float
    session_rps: float
    gain: float  # the Session's req/s over requests.get's
    model_gain: float  # ... and the model's, each priced with its own run's client CPU


def reuse(frame: pd.DataFrame) -> Reuse:
    """Read the two runs of `frame`, one per client, at the same load (medians where more ran: `pick`)."""
    get_rps, session_rps = pick(frame, "rps", client="threadpool"), pick(frame, "rps", client="session")
    get_model, session_model = (pick(frame, "predicted_rps", client=c) for c in ("threadpool", "session"))
    return Reuse(
        get_ms=pick(frame, "client_ms", client="threadpool"),
        session_ms=pick(frame, "client_ms", client="session"),
        get_rps=get_rps,
        session_rps=session_rps,
        gain=session_rps / get_rps if get_rps else math.nan,  # a run that served nothing: a claim on it fails
        model_gain=session_model / get_model if get_model else math.nan,
    )

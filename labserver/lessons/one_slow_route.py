"""Lesson 14, one slow route: its plan, its parameters for each run profile, and its readings.

Its readings: how long a cheap request waits while another route of its worker computes.

A cheap request that comes at a random moment finds the worker's CPU work where that work
runs. On the event loop, one heavy request's CPU S at a time, X of them a second, keep the loop
busy a share ρ = X × mean S. The cheap request waits the rest of the S in progress, if any: a
wait over w with chance X × mean(max(S − w, 0)), and a mean wait of X × mean(S²) / 2. When
every S is the same these are ρ S / 2 and, at the 95th percentile, S (1 − 0.05 / ρ) (none when
ρ ≤ 0.05); a run's S differ (a fib now and then runs slower), and the longer ones weigh more,
since a random moment falls in them more often. Each heavy request's S is read as its own time
less the median time of the same request without fib: its fib as the busy server runs it, the
cheap requests' own CPU left out. In a thread, the loop's thread has to win the GIL back
for each turn of the loop while the other thread computes, and waits up to the interpreter's
switch interval for it (5 ms): a few of those, whatever S is. In a process of its own, on a core
of its own, the work takes nothing from the loop. Each wait is the cheap request's round trip
less its median with nothing else running (the run without fib).

Its probes: a cheap request now and then while a plan measures: how long a route that does nothing waits.

A server's routes share its worker: its event loop, its GIL. A request that does no work
of its own still waits for them while another route's requests compute. Sent at random
moments (gaps drawn from an exponential distribution, so that the requests sample the
server's time evenly, whatever it is doing), each probe is timed from the client, on a
connection of its own and a thread of its own, as a health check or a page's small request would be. Each keeps its
send time, so that a run can take the probes sent inside its measurement window.

Its rows of the decision card (course/card.py): `BESIDE_QUICK_ROUTES`.
"""

from __future__ import annotations

import contextlib
import math
import random
import sys
import threading
import time
import urllib.request
from collections.abc import Hashable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from labserver import checks
from labserver.checks import positive
from labserver.demo import cpus
from labserver.demo.patterns import TRAITS
from labserver.demo.settings import THREADS_DEFAULT
from labserver.demo.traits import Where
from labserver.harness.load import sizing
from labserver.harness.load.checks import check_sweep
from labserver.harness.plans.plan import Run
from labserver.harness.rows import records, results
from labserver.harness.servers.server import Server
from labserver.lessons.card_row import NOT_YET, Measured, Row, runs_of
from labserver.lessons.lesson import Lesson
from labserver.paths import runs_dir
from labserver.theory import timing

LESSON = Lesson(
    "14_one_slow_route",
    profiles={
        "quick": {},
        "live": {"duration_s": 6},
        "full": {"duration_s": 20},
        "smoke": {"io_ms": 20, "cpu_n": 20, "probe_every_ms": 20, "duration_s": 2},
    },
)


@dataclass(frozen=True)
class OneSlowRoute:
    fib_ms: float  # one heavy request's CPU, timed here
    plan: sizing.Plan  # the heavy route without its fib, then its fib on the loop, in a thread, in a process
    probes: Probes  # the cheap requests, sent while the plan runs (its `beside`)


def plan(
    *, users: int, io_ms: int, cpu_n: int, probe_every_ms: int, duration_s: int, cores: float | None = None
) -> OneSlowRoute:
    """Lesson 14: a heavy route (io_ms, then fib(cpu_n)) at `users` users, without its fib, then with it on the event
    loop (`sequential`), in the thread pool (`threadpool`) and in a process pool (`processpool`), while a cheap
    route is probed about every `probe_every_ms` on the same worker."""
    cores = cpus.cores() if cores is None else cores
    patterns = ["sequential", "threadpool", "processpool"]
    check_sweep(patterns, [users], tasks=1, io_ms=io_ms, cpu_n=cpu_n, duration_s=duration_s)
    checks.whole("probe_every_ms", probe_every_ms, 1, 10_000)
    fib_ms = timing.cpu_time_ms(cpu_n)
    servers = {"app": {"threads": THREADS_DEFAULT, "procs": 1}}  # one pool process: one core, as one user needs
    runs = [
        Run(pattern=p, users=users, tasks=1, io_ms=io_ms, cpu_n=n, server="app")
        for p, n in [("sequential", 0), *((p, cpu_n) for p in patterns)]
    ]
    plan = sizing.fit(sizing.Plan(runs, servers, duration_s), cores)
    return OneSlowRoute(fib_ms, plan, Probes(every_s=probe_every_ms / 1000))


TAIL = 0.95  # the percentile a lesson reads: p95
SWITCH_MS = sys.getswitchinterval() * 1000  # CPython's default, as the server's interpreter has it (5 ms)
WHERE = {w: w.value for w in (Where.LOOP, Where.THREAD_POOL, Where.PROCESS_POOL)}  # the places the lesson compares


def where(pattern: str, cpu_n: int) -> str:
    """Where a run's CPU work runs: "event loop", "thread pool", "process pool", or "none" (no fib)."""
    return WHERE[TRAITS[pattern].computes] if cpu_n else "none"


def loop_wait_ms(rate: float, cpu_ms: ArrayLike, q: float = TAIL) -> float:
    """The `q` percentile of a random arrival's wait for a loop that runs `rate` CPU works a second, one at a time,
    each as long as one of `cpu_ms` (as likely): the w at which X × mean(max(S − w, 0)) falls to 1 − q."""
    rate, cpu = _busy_at_most_all(rate, cpu_ms)
    tail = 1 - q
    if rate * cpu.mean() <= tail:
        return 0.0
    low, high = 0.0, float(cpu.max())
    for _ in range(60):  # the chance falls as w grows: halve the interval until it is far under a µs
        w = (low + high) / 2
        low, high = (w, high) if rate * np.maximum(cpu - w, 0).mean() > tail else (low, w)
    return (low + high) / 2 * 1000


def loop_mean_wait_ms(rate: float, cpu_ms: ArrayLike) -> float:
    """The mean wait of a random arrival for a loop that runs `rate` CPU works a second, one at a time, each as long
    as one of `cpu_ms`: X × mean(S²) / 2."""
    rate, cpu = _busy_at_most_all(rate, cpu_ms)
    return rate * float((cpu**2).mean()) / 2 * 1000


def _busy_at_most_all(rate: float, cpu_ms: ArrayLike) -> tuple[float, np.ndarray]:
    """The rate and the CPU works in s, the rate cut to one loop's worth: a loop is busy at most all the time."""
    cpu = np.asarray(cpu_ms, dtype=float) / 1000
    return min(rate, 1 / cpu.mean()), cpu


def heavy_ms(run: pd.Series) -> np.ndarray:
    """The times (ms) of a run's requests sent and answered in its window, as their users measured them."""
    t0, t1 = results.window(run)
    per_user = records.read(runs_dir() / run["run_id"])
    return np.array([r.ms for user in per_user for r in user if r.ok and r.sent >= t0 and r.end <= t1])


KEPT = ["where", "cheap_n", "cheap_p50_ms", "cheap_p95_ms", "cheap_mean_ms", "wait_p95_ms", "fib_run_ms", "busy"]


def cheap(runs: pd.DataFrame, probes: Probes, keep: bool = True) -> pd.DataFrame:
    """The runs with the cheap requests sent in each one's window: how many, their median and p95 round trip,
    each one's `wait_p95_ms` and `wait_mean_ms` (less the run without fib's median), where its fib ran, its
    fib's time in the server (`fib_run_ms`: the mean of its requests' times less the run without fib's median)
    and how busy that kept the worker (`busy`: its requests a second × fib_run_ms); the loop's predicted p95 and
    mean wait, from its rate and each of its requests' fib. `keep`: each run's KEPT columns are kept
    in its folder (results.attach), where the decision card reads them."""
    rows = []
    for _, run in runs.iterrows():
        ms = probes.within(*results.window(run))["ms"]
        rows.append(
            {
                "cheap_n": len(ms),
                "cheap_p50_ms": ms.median(),
                "cheap_p95_ms": ms.quantile(TAIL),
                "cheap_mean_ms": ms.mean(),
            }
        )
    out = pd.concat([runs.reset_index(drop=True), pd.DataFrame(rows)], axis=1)
    out["where"] = [where(p, n) for p, n in zip(out["pattern"], out["cpu_n"], strict=True)]
    quiet = out[out["where"] == "none"].iloc[0]
    out["wait_p95_ms"] = out["cheap_p95_ms"] - quiet["cheap_p50_ms"]
    out["wait_mean_ms"] = out["cheap_mean_ms"] - quiet["cheap_p50_ms"]
    fibs = [heavy_ms(run) - quiet["p50_ms"] for _, run in out.iterrows()]
    out["fib_run_ms"] = [f.mean() if len(f) else np.nan for f in fibs]
    out["busy"] = out["rps"] * out["fib_run_ms"] / 1000
    out["predicted_wait_p95_ms"] = [_predicted(r, f) for (_, r), f in zip(out.iterrows(), fibs, strict=True)]
    out["predicted_wait_mean_ms"] = [
        loop_mean_wait_ms(r["rps"], f) if r["where"] == Where.LOOP else np.nan
        for (_, r), f in zip(out.iterrows(), fibs, strict=True)
    ]
    if keep:
        for _, run in out.iterrows():
            results.attach(run["run_id"], {k: _plain(run[k]) for k in KEPT})
    return out


def _plain(value):
    """A numpy scalar as the Python number JSON writes (a str stays one)."""
    return value.item() if hasattr(value, "item") else value


def _predicted(run: pd.Series, fibs_ms: np.ndarray) -> float:
    """A run's predicted p95 wait: the loop's from its rate and its fibs; none without fib; a thread's and a
    process's are bounded (at least a switch interval a turn; under one), not predicted: NaN."""
    if run["where"] == Where.LOOP:
        return loop_wait_ms(run["rps"], fibs_ms)
    if run["where"] in (Where.THREAD_POOL, Where.PROCESS_POOL):
        return float("nan")
    return 0.0


def foreseen(fib_ms: float, users: int, io_ms: int) -> pd.DataFrame:
    """Before the runs: with fib on the loop, how busy `users` closed-loop users keep it and the cheap
    route's p95 wait that gives (each user's request: io_ms, then fib on the loop)."""
    rate = users / (io_ms + fib_ms) * 1000
    busy = min(1.0, rate * fib_ms / 1000)
    return pd.DataFrame(
        [
            {"where": Where.LOOP.value, "fib_ms": round(fib_ms, 1), "busy": round(busy, 2),
             "foreseen_wait_p95_ms": round(loop_wait_ms(rate, [fib_ms]), 1)},
            {"where": Where.THREAD_POOL.value, "fib_ms": round(fib_ms, 1), "busy": round(busy, 2),
             "foreseen_wait_p95_ms": f"a few × {SWITCH_MS:.0f}"},
            {"where": Where.PROCESS_POOL.value, "fib_ms": round(fib_ms, 1), "busy": round(busy, 2),
             "foreseen_wait_p95_ms": f"< {SWITCH_MS:.0f}"},
        ]
    )  # fmt: skip


# An `async def` endpoint with nothing to do: one await of no time, no CPU of its own
CHEAP_PATH = "/sequential?tasks=1&io_ms=0&cpu_n=0"
TIMEOUT_S = 30  # a probe waits at most this long: far past any wait a lesson sets up
SENDERS = 16  # probes in flight at once, at most: a few wait out one busy spell together


class Probes:
    """Cheap requests sent at random to one server, about one every `every_s`, timed from here.

    `sending(servers)` sends them while its block runs (Plan.measure's `beside`); `frame()`
    holds each: `sent` (epoch s), `ms` (its round trip), `ok`.
    """

    def __init__(self, every_s: float, path: str = CHEAP_PATH, seed: int | None = None) -> None:
        self.every_s = positive("every_s", every_s, " s")
        self.path = path
        self.rng = random.Random(seed)
        self.sent: list[tuple[float, float, bool]] = []

    @contextlib.contextmanager
    def sending(self, servers: Mapping[Hashable, Server]) -> Iterator[Probes]:
        """Probe the plan's one server while the block runs; stop, and wait for the last probe, when it ends."""
        if len(servers) != 1:
            raise ValueError(f"probes go to one server; this plan starts {len(servers)}")
        (server,) = servers.values()
        url = f"{server.url}{self.path}"
        stop = threading.Event()

        def probe(sent: float) -> None:
            began = time.perf_counter()
            ok = True
            try:
                urllib.request.urlopen(url, timeout=TIMEOUT_S).read()
            except OSError:  # a probe that failed says so in its row; the run's own checks say why
                ok = False
            self.sent.append((sent, (time.perf_counter() - began) * 1000, ok))

        def probe_now_and_then(senders: ThreadPoolExecutor) -> None:
            # Sends keep to a clock of their own, not to the last reply: a probe that waited out a busy
            # spell would otherwise put the next one after it, where the server is more often free.
            due = time.monotonic()
            while True:
                due += self.rng.expovariate(1 / self.every_s)
                if stop.wait(max(0.0, due - time.monotonic())):
                    return
                senders.submit(probe, time.time())

        with ThreadPoolExecutor(max_workers=SENDERS, thread_name_prefix="probe") as senders:
            thread = threading.Thread(target=probe_now_and_then, args=(senders,), name="probes", daemon=True)
            thread.start()
            try:
                yield self
            finally:
                stop.set()
                thread.join()

    def frame(self) -> pd.DataFrame:
        """Every probe so far: `sent` (epoch s), `ms` (round trip), `ok`."""
        return pd.DataFrame(self.sent, columns=["sent", "ms", "ok"])

    def within(self, start: float, end: float) -> pd.DataFrame:
        """The probes sent from `start` up to `end` (epoch s): those of one run's window (RunResult.window)."""
        frame = self.frame()
        return frame[(frame["sent"] >= start) & (frame["sent"] < end)]


def slow_route(runs: pd.DataFrame) -> Measured:
    """Lesson 14: a cheap route's p95 round trip while another route computes on the event loop, over its p95 while
    the work is in a process pool; the thread pool's beside them."""
    rows = runs_of(runs, "14", ("sequential", "threadpool", "processpool"))
    places = tuple(w.value for w in (Where.LOOP, Where.THREAD_POOL, Where.PROCESS_POOL))
    if rows.empty or "cheap_p95_ms" not in rows or not set(places) <= set(rows["where"].dropna()):
        return Measured(math.nan, NOT_YET)
    p95 = rows.groupby("where")["cheap_p95_ms"].median()
    loop, thread, process = (p95[w] for w in places)
    ratio = float(loop / process)
    return Measured(
        ratio, f"a cheap request's p95 round trip: {loop:.0f} ms beside fib on the loop, {thread:.0f} in a thread, "
        f"{process:.1f} in a process ({ratio:.0f}×)"
    )  # fmt: skip


# Its rows of the decision card (course/card.py), each with the figure that shows it
BESIDE_QUICK_ROUTES = Row(
    "A route that computes in Python, beside routes that should stay quick (a health check, small pages)",
    "its work in a process pool; in a plain `def` if a few GIL turns of 5 ms for the others are acceptable",
    "on the loop, a cheap request waits the rest of the CPU in progress: at p95 cpu × (1 − 0.05 / ρ), ρ the "
    "loop's busy share, with one heavy request at a time (more queue back to back); in a thread, a few switch "
    "intervals",
    "health checks and small requests slow (timeouts at the load balancer) only while the heavy route runs",
    "a cheap route's p95, the work on the event loop / in a process pool",
    ("14",),
    slow_route,
)

"""Lesson 09, stalls and shedding: its plan and parameter checks, and its parameters for each run profile.

Its readings: stalls on purpose: the server's event loop held for `stall_ms` every `every_s` seconds.

One request to the `blocking` pattern (time.sleep inside an `async def`) holds its worker's
event loop for its whole `io_ms`: every other request of that worker waits it out. Sent on a
timer while a measurement runs, it makes a server that is fast but stalls now and then, the
case in which a closed loop's latency misleads (coordinated omission).

Each stall is kept as it happened (sent, answered), so that a run can say what share of its own
measurement window the loop was held, a stall cut by an edge counting in part. A window of whole
periods of the stall clock holds `stall_ms` / `every_s` of stall wherever it starts (15% with a stall of
0.3 s every 2 s); a run's window (first to last counted reply) is a little shorter, so its share
lands a few points either side, by where its ends fall among the stalls.

`omission` measures one such server three ways (a calm closed loop, then a closed loop and an open
loop with stalls) and sets their latencies side by side.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pandas as pd

from labserver import checks
from labserver.checks import positive, whole
from labserver.demo.settings import Settings
from labserver.demo.work import IO_MS_MAX
from labserver.harness.load import sizing
from labserver.harness.load.checks import check_arrivals, check_load
from labserver.harness.load.run import run_plan
from labserver.harness.plans.plan import Run
from labserver.harness.rows import arrivals, records
from labserver.harness.rows.results import RunResult
from labserver.harness.servers.server import Server
from labserver.lessons.lesson import Lesson
from labserver.theory.demand import Demand
from labserver.theory.model import Prediction
from labserver.theory.workload import Workload

LESSON = Lesson(
    "09_stalls_and_shedding",
    profiles={
        "quick": {},
        "live": {"duration_s": 5},
        "full": {"duration_s": 15},
        "smoke": {"duration_s": 2, "stall_every_s": 1.0},
    },
    chart="omission.png",
)


def plan(
    *,
    stall_users: int,
    stall_io_ms: int,
    stall_ms: int,
    stall_every_s: float,
    io_ms: int,
    threads: int,
    shed_rho: float,
    queue_limit: int,
    limit_concurrency: int,
    duration_s: int,
) -> float:
    """Lesson 09: the stalling server's closed loop and stalls, the shedding servers (a queue bound on the thread
    pool, and uvicorn's `--limit-concurrency`) and their rate; S's guess."""
    checks.whole("duration_s", duration_s, 1, 600)
    checks.positive("stall_every_s", stall_every_s)
    check_load(Workload("sequential", stall_users, io_ms=stall_io_ms, duration_s=duration_s))
    check_load(Workload("blocking", 1, io_ms=stall_ms, duration_s=duration_s))
    sizing.above_capacity("shed_rho", shed_rho)
    Settings(threads=threads, queue_limit=queue_limit).check()
    checks.whole("limit_concurrency", limit_concurrency, 2, 10_000)  # its own connection counts: 1 would shed all
    check_load(Workload("threadpool", 1, io_ms=io_ms, duration_s=duration_s))
    guess_s = io_ms / 1000  # S before it is measured: the wait alone
    check_arrivals(shed_rho * threads / guess_s, "arrivals", 1)
    return guess_s


class Stalls:
    """The stalls sent so far, each (sent, answered) in epoch seconds: the loop was held in between."""

    def __init__(self) -> None:
        self.held: list[tuple[float, float]] = []

    def share(self, t0: float, t1: float) -> float:
        """The share of t0..t1 the loop was held by a stall (the stalls' time inside it, over its length)."""
        if t1 <= t0:
            return math.nan
        inside = sum(max(0.0, min(end, t1) - max(start, t0)) for start, end in self.held)
        return inside / (t1 - t0)

    def carried(self, t0: float, t1: float, rate: float, drain_rps: float = math.inf) -> float:
        """The share of an open loop's arrivals in t0..t1 (at `rate` a second) answered on the other side of its edges.

        A stall holds every request that comes while it lasts; once it ends, the server answers
        them at `drain_rps` (its own pace, 1 / its CPU per request) while new ones keep coming
        at `rate`, so the backlog clears (b − a) rate / (drain_rps − rate) after a stall (a, b)
        ends. An edge inside a stall or its catch-up leaves that many arrivals unanswered there:
        (edge − a) rate less drain_rps (edge − b) answered since it ended. Those at t1 are answered
        after the window, those at t0 inside it: the net share out, over the window's arrivals.
        """
        if t1 <= t0 or not rate > 0:
            return math.nan
        ratio = drain_rps / rate

        def unanswered(edge: float) -> float:  # seconds' worth of arrivals still held at `edge`
            since = [(edge - a, edge - b) for a, b in self.held if a < edge]
            return sum(held if after <= 0 else max(0.0, held - ratio * after) for held, after in since)

        return (unanswered(t1) - unanswered(t0)) / (t1 - t0)


def predict_held(calm_rps: float, log: Stalls, planned_share: float) -> Callable[[Demand], Prediction]:
    """The prediction of a closed loop whose server stalls (`log`), from its rate without stalls.

    Each stall stops every user for its length, so the loop serves `calm_rps` less the share of its
    measurement window the stalls held the loop; before the run (no window yet: a live view's
    estimate), less `planned_share`.
    """

    def predict(cost: Demand) -> Prediction:
        share = log.share(*cost.window) if cost.window else planned_share
        return Prediction(calm_rps * (1 - share), math.nan, "users, with the loop held")

    return predict


def predict_served(rate: float, log: Stalls) -> Callable[[Demand], Prediction]:
    """The served rate of an open loop at `rate` whose server stalls (`log`): each request is answered,
    the stalls only delay some, but those still held at the window's end are answered after it,
    and those held from before its start inside it (Stalls.carried, over the run's window, the
    backlog answered at one worker's pace: 1 / its CPU per request in the run)."""

    def predict(cost: Demand) -> Prediction:
        drain_rps = 1000 / cost.worker_ms if cost.known else math.inf
        out = log.carried(*cost.window, rate, drain_rps) if cost.window else 0.0
        return Prediction(rate * (1 - out), math.nan, "arrivals (open loop)")

    return predict


@contextlib.contextmanager
def stalls(server: Server, every_s: float, stall_ms: int) -> Iterator[Stalls]:
    """While the block runs, stall `server`'s loop for `stall_ms` every `every_s` s (the first after `every_s`).

    The stalls keep to the clock (at every_s, 2 every_s, ... from the start), not to the end of the
    one before, so that one every `every_s` is what the server gets. Yields the Stalls as they come.
    """
    positive("every_s", every_s)
    whole("stall_ms", stall_ms, 1, IO_MS_MAX)
    stop = threading.Event()
    url = f"{server.url}/blocking?io_ms={stall_ms}"
    log = Stalls()
    started = time.monotonic()

    def stall_now_and_then() -> None:
        due = started + every_s
        while not stop.wait(max(0.0, due - time.monotonic())):
            sent = time.time()
            with contextlib.suppress(OSError):  # a stall that failed is one stall fewer, not an error
                urllib.request.urlopen(url, timeout=stall_ms / 1000 + 30).read()
                log.held.append((sent, time.time()))
            due += every_s
            while due <= time.monotonic():  # a stall longer than every_s: the slots it covered are skipped
                due += every_s

    thread = threading.Thread(target=stall_now_and_then, name="stalls", daemon=True)
    thread.start()
    try:
        yield log
    finally:
        stop.set()
        thread.join(timeout=stall_ms / 1000 + 31)


def planned_share(stall_ms: int, every_s: float) -> float:
    """The share of the time stalls of `stall_ms` every `every_s` s hold the loop, on average."""
    return stall_ms / 1000 / positive("every_s", every_s)


@dataclass(frozen=True)
class Omission:
    """One stalling server measured three ways: a calm closed loop, then a closed and an open loop with stalls."""

    calm: RunResult  # the closed loop without stalls: its rate, and the gap its users keep between sends
    closed: RunResult
    opened: RunResult  # at the closed loop's rate
    held: float  # the share of the closed loop's window the stalls held the loop
    planned: float  # that share on average: stall_ms / every_s
    table: pd.DataFrame  # p50, p95 and p99 of each way (arrivals.omission), a row per way
    counts: dict[str, int]  # the closed loop's replies, recorded and corrected

    def p99_ms(self, way: str) -> float:
        """The p99 of one way (arrivals.WAYS): "recorded", "corrected" (the closed loop's) or "open"."""
        return float(self.table.loc[arrivals.WAYS[way], "p99_ms"])

    def __str__(self) -> str:
        added = self.counts["corrected"] - self.counts["recorded"]
        return (
            f"the loop was held {self.held:.1%} of the closed loop's window (planned {self.planned:.0%})\n"
            f"{self.counts['recorded']:,} replies recorded; the correction adds {added:,}"
        )


def omission(
    server: Server, *, users: int, io_ms: int, every_s: float, stall_ms: int, duration_s: int, lesson: str | None = None
) -> Omission:
    """Run the `sequential` endpoint on `server` calm, then stalled, by a closed loop and by an open one at its rate."""
    calm_run = Run(pattern="sequential", users=users, io_ms=io_ms)
    calm = run_plan(server, [calm_run], duration_s=duration_s, lesson=lesson)[0]
    planned = planned_share(stall_ms, every_s)
    with stalls(server, every_s, stall_ms) as held_loop:
        # the calm rate less the share of the run's window the stalls held the loop (3 stalls or 4, by where it starts)
        predicted = predict_held(calm.row["rps"], held_loop, planned)
        held_run = Run(pattern="sequential", users=users, io_ms=io_ms, predicted=predicted)
        closed = run_plan(server, [held_run], duration_s=duration_s, lesson=lesson)[0]
    rate = round(closed.row["rps"], 1)
    with stalls(server, every_s, stall_ms) as open_loop_stalls:
        # every arrival is answered, less those a stall holds past the window's end (more, from before its start)
        served = predict_served(rate, open_loop_stalls)
        open_run = Run(pattern="sequential", rate=rate, io_ms=io_ms, drain_s=1, predicted=served)
        opened = run_plan(server, [open_run], duration_s=duration_s + 1, lesson=lesson)[0]
    interval_ms = calm.row["p50_ms"]  # the gap a closed-loop user keeps between sends when nothing stalls
    table, counts = arrivals.omission(
        records.read(closed.path), closed.window[0], interval_ms, records.read(opened.path)
    )
    held = held_loop.share(*closed.window)
    return Omission(calm, closed, opened, held, planned, table, counts)

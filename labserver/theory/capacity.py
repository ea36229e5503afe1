"""What a worker serves requests with, as `predict`'s bounds count it: one request's CPU in seconds (`Price`),
the cores the worker's own CPU runs on and the share of its core it keeps (`worker_cores`, `kept`, `loop_kept`),
the threads of an event loop's default executor, how long a call to another service holds its slot (`call_s`),
and the throughput of users that move in step (`in_step_rps`).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from labserver.demo.settings import Settings
from labserver.demo.traits import Where
from labserver.theory.bottlenecks import Bottleneck
from labserver.theory.demand import Demand
from labserver.theory.workload import Workload, traits_of


@dataclass(frozen=True)
class Price:
    """One request's CPU in seconds, as `predict` prices it: timed and given, or measured in the run."""

    task_s: float  # a sub-task's CPU outside what the worker is measured to spend: fib's, or the pool's
    own_s: float  # the server's own (uvicorn, FastAPI), where the worker's CPU is not measured
    worker_s: float  # the worker's, all told, as measured (0: not measured)
    in_worker_s: float  # what runs in the worker, under its GIL
    generator_s: float = 0.0  # the load generator's, as measured (0: not measured)
    generators: int = 1  # Locust processes, each on one core
    machine_s: float = 0.0  # the whole machine's, as measured (0: not measured)
    demand: Demand | None = None  # as given: how much of its core each worker kept (`kept`)


def call_s(w: Workload, price: Price) -> float:
    """How long a call to another service holds its slot (s): io_ms; or, where one request was timed alone before the
    run, what its calls took then: its time less its CPU in the worker, a call's share where they run one by one."""
    io = w.io_ms / 1000
    alone = price.demand.alone_ms if price.demand is not None else math.nan
    if not math.isfinite(alone):
        return io
    waited = alone / 1000 - price.in_worker_s
    return max(io, waited if w.traits.overlaps else waited / w.tasks)


def executor_threads() -> int:
    """The threads of an event loop's default executor (`asyncio.to_thread`'s), as concurrent.futures sizes it:
    min(32, CPUs + 4), the CPUs this process may run on (Python 3.13+) or the machine's (3.11, 3.12)."""
    count = getattr(os, "process_cpu_count", os.cpu_count)()
    return min(32, (count or 1) + 4)


def worker_cores(w: Workload, s: Settings, cores: float, price: Price) -> tuple[Bottleneck, float, float]:
    """What bounds the workers' own CPU: its name, the cores it may run on, and the share of them it kept.

    Under a GIL, one core per worker, less what others took while it waited (`kept`). Without one
    (a free-threaded Python, lesson 10), a thread pool's threads compute on as many cores as there
    are threads, while an event loop is still one thread; so do threads in C code that lets go of
    the GIL (`hashed`). An interpreter pool's interpreters each have a GIL: one core each.
    """
    computes = w.traits.computes
    works = w.cpu_n > 0 or price.task_s > 0  # no work: only the server's own, on the loop, under its GIL
    if (computes is Where.RELEASED and works) or (not s.gil and computes is Where.THREAD_POOL):
        return Bottleneck.CORES, min(s.workers * s.threads, cores), 1.0
    if computes is Where.INTERPRETER_POOL and works:  # fib on the pool's interpreters, a GIL each
        return Bottleneck.CORES, min(s.workers * s.procs, cores), 1.0
    share = kept(w.pattern, s.workers, cores, price.demand)
    if s.workers >= cores:
        return Bottleneck.CORES, min(s.workers, cores), share
    return (Bottleneck.GIL if s.gil else Bottleneck.WORKER_CPU), min(s.workers, cores), share


def kept(pattern: str, workers: int, cores: float, demand: Demand | None) -> float:
    """The share of its core a worker got to use: 1 less the time its loop was ready with no CPU free.

    One core per worker is the bound where each worker has a core to itself. On a machine shared
    with the load generator, the scheduler sometimes runs a Locust process on the worker's core
    while the worker has work: its loop then waits in the run queue, and its time on the CPU plus
    that wait fill the window (lesson 00's busiest run; docs/evidence.md). Each run measures
    that wait (`worker_waited`, Linux); a worker that idles for lack of work is not excused by it.

    Only where the loop's thread does the worker's work: a thread pool's threads compute while the
    loop waits, and where workers outnumber the cores, their waits for each other are the bound.
    """
    if demand is None or traits_of(pattern).computes in (Where.THREAD_POOL, Where.RELEASED, Where.INTERPRETER_POOL):
        return 1.0
    return loop_kept(demand.worker_waited, workers, cores)


def loop_kept(waited: float, workers: int, cores: float) -> float:
    """1 − `waited` (a worker's loop's share of the window ready with no CPU free; NaN: not measured),
    where each worker has a core of its own; 1 where the workers outnumber the cores (see `kept`)."""
    if workers >= cores or not math.isfinite(waited):
        return 1.0
    return 1.0 - min(max(waited, 0.0), 1.0)


def in_step_rps(users: int, wait_s: float, cpu_s: float, cores: float) -> float:
    """Throughput (req/s) of `users` that move in step: a round is every user's CPU shared on `cores`, then one
    wait that no CPU overlaps, so users / (wait_s + users × cpu_s / cores).

    The thread pool's users under the GIL (`in_step`), and lesson 12's new client per request on
    the event loop, whose users' replies come back in bursts.
    """
    return users / (wait_s + users * cpu_s / cores)

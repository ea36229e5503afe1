"""Where the CPU went in a run's window: the row's CPU columns, and the run's demand measured from them.

Locust's, the server's and the machine's meters are read over the window a run's CPU and its prediction are taken
over (`Span`): the server's CPU is split into the workers that answered its requests (their pids come with every
reply) and the rest of its tree (the process pools), and the machine's rest is Locust, the notebook and others.
Each part is also given per request; the workers' loops, kernel time and context switches are read where their
meter keeps them, and a run in whose window others took DISTURBED cores or more is marked disturbed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

from labserver.demo import cpus
from labserver.harness.plans.plan import Meters, Stage
from labserver.harness.processes.meters import ServerMeter
from labserver.harness.rows import measure
from labserver.theory import demand
from labserver.theory.demand import Demand

# A run is marked disturbed when other programs, or the host's steal, took this many cores in its window
DISTURBED = 0.1

Window: TypeAlias = tuple[float, float]  # (start, end), epoch s
Held: TypeAlias = Callable[[Window], float]  # a window's mean hold of a pooled database connection, ms


@dataclass(frozen=True)
class Span:
    """The figures after the warm-up, the window the CPU and the prediction are taken over, and the requests
    each worker answered after the warm-up (by pid)."""

    measured: measure.Measured
    window: Window
    served: dict[int, int]


@dataclass(frozen=True)
class _Cpu:
    """Where the CPU went in a window: the row's CPU columns, the run's demand, and Locust's busiest process's share."""

    columns: dict[str, Any]
    cost: Demand
    busiest: float


def window_cpu(
    meters: Meters, stage: Stage, span: Span, server_cores: float | None, processes: int, held: Held | None
) -> _Cpu:
    """Where the CPU went in the span's window: the row's CPU columns, the run's demand, Locust's busiest process."""
    window, served, rps = span.window, span.served, span.measured.rps
    server_meter, machine_meter = meters.of(stage.server), meters.machine
    locust_cores, busiest = meters.locust.usage(*window)
    server_cpu, _ = server_meter.usage(*window)
    machine_cores = machine_meter.usage(*window)
    # What the lab may use, not the machine's count; for a server on another machine, its own,
    # which nothing of this machine's (Locust, the notebook, others) competes for.
    apart = server_cores is not None
    worker_cores, workers = _workers(server_meter, window, served, rps)
    cost = demand.measured(
        worker_cores,
        server_cpu - worker_cores,
        0.0 if apart else machine_cores - server_cpu,
        rps,
        generator_cores=locust_cores,
        generators=processes,
        db_hold_ms=held(window) if held is not None else math.nan,
        worker_waited=workers["worker_waited"],
        window=window,
    )
    disturbed = machine_meter.disturbed_cores(*window) if not apart else math.nan
    priced = stage.before.one_user if stage.before is not None else None
    # the cores' speed in the window against the pricing's: a fixed piece of Python's CPU time, there over here
    speed = (priced.probe_ms if priced is not None else math.nan) / machine_meter.probe_ms(*window)
    use = {
        "usable_cores": server_cores if server_cores is not None else cpus.cores(),
        "locust_cpu": locust_cores,
        "server_cpu": server_cpu,
        "machine_cpu": machine_cores,  # every process on the machine, these two included
        # the rest: the notebook, a database, others' work (a server on another machine is not in machine_cpu)
        "other_cpu": machine_cores - locust_cores - (0.0 if apart else server_cpu),
        # CPU per request, in ms: what each part paid for one request in this run
        "server_ms": demand.per_request_ms(server_cpu, rps),
        "locust_ms": demand.per_request_ms(locust_cores, rps),
        "worker_ms": cost.worker_ms,
        **workers,
        "pool_ms": cost.pool_ms,
        "others_ms": cost.others_ms,
        # a pooled database connection's time per use in the window, which prices the connection pool
        "db_hold_ms": cost.db_hold_ms,
        "workers_seen": len(served),
        "worker_requests": served,
        "throttled_s": machine_meter.throttled_s(*window),
        "paused_ms": machine_meter.paused_ms(*window),
        "stolen_cpu": machine_meter.stolen_cores(*window),  # cores the host took for others (steal time)
        # what neither the lab's processes nor interrupts used: others' programs and the host's steal
        "disturbed_cpu": disturbed,
        "core_speed": speed,
        "disturbed": is_disturbed(disturbed),
    }
    return _Cpu(use, cost, busiest)


def is_disturbed(others_cores: float) -> bool:
    """Whether others (other programs, the host's steal) took DISTURBED cores or more in a run's window (NaN: not
    measured, so not disturbed)."""
    return others_cores >= DISTURBED  # NaN compares False


def _workers(meter: ServerMeter, window: Window, served: dict[int, int], rps: float) -> tuple[float, dict[str, float]]:
    """The cores the workers that answered kept busy, and how their loops and threads spent the window."""
    # Where the server's CPU went: the workers that answered (their pids come with every reply),
    # and the rest of its tree (the process pools); the rest of the machine is Locust and others.
    per_process = meter.per_process(*window)
    cores = sum(c for pid, c in per_process.items() if pid in served) if served and per_process else math.nan
    # How long the workers' loops were ready with no CPU free (Linux; a remote server's meter has none)
    waits = _served(meter, "waited", window, served)
    # ... and how long they ran: a loop that does neither while requests queue waits for the GIL (lesson 07)
    loops = _served(meter, "loop", window, served)
    # What the workers' CPU went to besides running Python: the kernel's share of it, and their threads'
    # context switches per request (lesson 07: a sync worker's threads handing the GIL across cores)
    kernel, switches = (_served(meter, counter, window, served) for counter in ("kernel", "switches"))
    return cores, {
        "worker_waited": sum(waits) / len(waits) if waits else math.nan,
        "worker_loop": sum(loops) / len(loops) if loops else math.nan,
        "worker_kernel": sum(kernel) / cores if kernel and cores else math.nan,
        "worker_switches": sum(switches) / rps if switches and rps else math.nan,
    }


def _served(meter: ServerMeter, counter: str, window: Window, served: dict[int, int]) -> list[float]:
    """How fast `counter` (CpuMeter.counters) grew in each worker that served a request in `window`:
    [] for a meter without it (a remote server's) or where the OS keeps none."""
    if not hasattr(meter, "per_second"):
        return []
    return [v for pid, v in meter.per_second(counter, *window).items() if pid in served]

"""The cores' speed: the CPU time of a fixed piece of Python, timed on each core in turn. A virtual machine's host
can slow its cores by up to a half for seconds at a time (their clock, or their other hardware thread given to another
guest) without any steal time, and a run priced on fast cores and run on slow ones misses its before-prediction for a
cause no counter of this machine records; `MachineMeter` (machine.py) probes one core a sample.
"""

from __future__ import annotations

import math
import os
import time

# The probe's work: fib(PROBE_N), about a tenth of a ms, twice on each core, the lesser kept (the first can pay for a
# core's wake-up); a few each second cost well under a thousandth of a core
PROBE_N = 15
PROBES_AT_LEAST = 4  # a window's speed is the median of this many probes or more


def _fib(n: int) -> int:
    return n if n < 2 else _fib(n - 1) + _fib(n - 2)


def probe_ms(cpu: int | None = None) -> float:
    """The CPU time of the probe's work on this thread, in ms: on `cpu` (this thread moved there for it, then put
    back), or wherever it runs. The thread's own CPU clock leaves out the time other processes held the core."""
    pinned = cpu is not None and hasattr(os, "sched_setaffinity")
    allowed = os.sched_getaffinity(0) if pinned else set()
    if cpu is not None and pinned:
        os.sched_setaffinity(0, {cpu})  # this thread only, on Linux
    try:
        best = math.inf
        for _ in range(2):
            started = time.thread_time_ns()
            _fib(PROBE_N)
            best = min(best, time.thread_time_ns() - started)
        return best / 1e6
    finally:
        if pinned:
            os.sched_setaffinity(0, allowed)


def probe_each() -> list[float]:
    """`probe_ms` on each CPU this thread may use, in turn (once, where the OS cannot pin a thread)."""
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    return [probe_ms(cpu) for cpu in allowed] if allowed else [probe_ms()]


def median(values: list[float]) -> float:
    """The middle of `values` (NaN for none)."""
    ordered = sorted(v for v in values if math.isfinite(v))
    if not ordered:
        return math.nan
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2

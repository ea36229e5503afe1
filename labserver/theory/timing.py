"""Timings of CPU work in this process: the best of several (`best_ms`), the one least disturbed by the rest of
the machine, and the CPU time of one fib as the server's meters count CPU, in rounds apart (`cpu_time_ms`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from labserver.demo.work import fib


def best_ms(
    work: Callable[[int], object], size: int, repeat: int, clock: Callable[[], float] = time.perf_counter
) -> float:
    """The best of `repeat` timings of `work(size)` here, in ms: the least disturbed by the rest of the machine."""
    best = math.inf
    for _ in range(repeat):
        started = clock()
        work(size)
        best = min(best, clock() - started)
    return best * 1000


# A slow moment of a virtual machine's host reads one fib's CPU time up to half as much again for a few tenths of a
# second: timings in rounds this far apart keep one outside it
FIB_ROUNDS = 3
FIB_APART_S = 0.25


def cpu_time_ms(cpu_n: int, repeat: int = 5, sleep: Callable[[float], None] = time.sleep) -> float:
    """The CPU time of one fib(cpu_n) in this process, in ms, as the server's meters count CPU: unlike `cpu_ms`'s
    wall-clock time, the other processes on the machine do not lengthen it. The best of FIB_ROUNDS rounds of
    `repeat`, FIB_APART_S apart, so that one slow moment does not read every timing high."""
    if cpu_n <= 1:
        return 0.0
    best = math.inf
    for i in range(FIB_ROUNDS):
        if i:
            sleep(FIB_APART_S)
        best = min(best, best_ms(fib, cpu_n, repeat, time.process_time))
    return best

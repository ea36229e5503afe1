"""What Linux's scheduler keeps of a process's threads (/proc): the seconds its main thread ran on a CPU and waited
for one while ready, and each thread's context switches; NaN or {} where the OS does not say.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import TypeVar


def waited_seconds(pid: int) -> float:
    """Seconds the main thread of `pid` has spent ready to run, waiting for a CPU (NaN where the OS does not say).

    It is time the thread loses to whatever holds the cores, apart from the time it has nothing to
    do: a worker with requests queued that keeps less than its whole core busy has waited for the
    rest while other processes (Locust's) ran on it (lesson 00's busiest run; docs/evidence.md).
    """
    return main_thread_seconds(pid)[1]


def main_thread_seconds(pid: int) -> tuple[float, float]:
    """Seconds the main thread of `pid` has run on a CPU, and waited for one while ready (NaN, NaN where
    the OS does not say): Linux's scheduler keeps both (/proc/<pid>/schedstat, in ns).

    A uvicorn worker's main thread is its event loop, so the two and the time left (asleep) say
    what held a worker back where its threads share the GIL (lesson 07): a loop that neither runs
    nor waits for a CPU while requests queue is asleep, on the GIL's lock or waiting for a request.
    """
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            on_cpu, waited = f.read().split()[:2]
        return int(on_cpu) / 1e9, int(waited) / 1e9
    except (OSError, ValueError):
        return math.nan, math.nan


def thread_switches(pid: int) -> dict[int, int]:
    """Context switches of each thread of `pid` so far, voluntary and not ({} where the OS does not say).

    Each is a thread leaving a CPU: blocking (a socket, a lock, the GIL) or preempted. Linux keeps
    them per thread (/proc/<pid>/task/<tid>/status); a process's own status has its main thread's
    alone, and a sync endpoint's work runs on its thread pool's threads.
    """
    return per_thread(pid, "status", _switches)


def _switches(status: str) -> int:
    """A thread's voluntary_ctxt_switches and nonvoluntary_ctxt_switches, from its /proc status, added."""
    return sum(int(line.split()[1]) for line in status.splitlines() if "ctxt_switches:" in line)


N = TypeVar("N", int, float)


def per_thread(pid: int, name: str, parse: Callable[[str], N]) -> dict[int, N]:
    """Each thread of `pid`'s /proc/<pid>/task/<tid>/`name`, as `parse` reads it ({} where the OS keeps none)."""
    found: dict[int, N] = {}
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/{name}") as f:
                found[int(tid)] = parse(f.read())
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended between listing and reading
    return found

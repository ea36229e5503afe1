"""Each thread's CPU time in a process tree, to the ns, and a reading's split by where it ran.

Linux's scheduler counts each process's CPU clock (its ended threads included) and each live thread's
/proc/<pid>/task/<tid>/schedstat in ns, which sets a worker's event loop (its main thread) apart from its other
threads: a few requests of a fraction of a ms each are priced where the clock ticks of psutil's times (10 ms) would
read 0. Elsewhere psutil's per-thread times stand in. Two readings, before and after some requests, give the
workers' loops, their other threads and the rest of the tree (`split`).
"""

from __future__ import annotations

import sys
import time

import psutil

from labserver.harness.processes import procs
from labserver.harness.processes.scheduler import per_thread

Threads = dict[tuple[int, int], float]  # (pid, tid) -> seconds that thread has run on a CPU
WHOLE = 0  # the tid of a process's whole count in Threads: no thread has id 0
_CPUCLOCK_SCHED = 2  # Linux's process CPU clock that counts in ns, as the scheduler does


def split(before: Threads, after: Threads, workers: set[int | None]) -> tuple[float, float, float]:
    """CPU seconds between two readings: the workers' main threads (their loops), their other threads, the rest.

    A process's whole count (its WHOLE entry) holds the threads that ended between the readings too: an
    endpoint's own executor, made and shut down within one request, leaves no thread to read at the end."""
    loop = threads = rest = 0.0
    for pid in {pid for pid, _ in after}:
        mine = {tid: s - before.get((p, tid), 0.0) for (p, tid), s in after.items() if p == pid}
        # a thread or process started since has all of its own
        whole = mine.pop(WHOLE, None)
        spent = max(0.0, whole if whole is not None else sum(mine.values()))
        if pid not in workers:
            rest += spent
        else:
            main = max(0.0, mine.get(pid, 0.0))
            loop += main
            threads += max(0.0, spent - main)
    return loop, threads, rest


def tree_threads(root: int) -> Threads:
    """Seconds each thread of the process tree under `root` has run on a CPU, and each process's whole (WHOLE)."""
    found: Threads = {}
    for p in procs.tree(root):
        found |= _linux_threads(p.pid) if sys.platform == "linux" else _psutil_threads(p)
        whole = _process_seconds(p.pid)
        if whole is not None:
            found[(p.pid, WHOLE)] = whole
    return found


def _process_seconds(pid: int) -> float | None:
    """Seconds `pid` has run on a CPU, its ended threads' included, to the ns: its CPU-time clock (clock_getcpuclockid
    in C, which Python's time module lacks: the clock id is the pid's complement, shifted, with the scheduler's
    flag, as glibc builds it). None where the OS keeps no such clock or will not show it."""
    if sys.platform != "linux":
        return None
    try:
        return time.clock_gettime((~pid << 3) | _CPUCLOCK_SCHED)
    except OSError:
        return None


def _linux_threads(pid: int) -> Threads:
    """Seconds each thread of `pid` has run on a CPU: the scheduler's count, in ns (its schedstat's first field)."""
    on_cpu = per_thread(pid, "schedstat", lambda text: int(text.split()[0]) / 1e9)
    return {(pid, tid): seconds for tid, seconds in on_cpu.items()}


def _psutil_threads(p: psutil.Process) -> Threads:
    try:
        return {(p.pid, t.id): t.user_time + t.system_time for t in p.threads()}
    except psutil.Error:
        return {}

"""How many cores a pattern can keep busy, and how many it did: the GIL in numbers.

A worker process runs Python under one GIL, so its threads and its event loop share one
core between them; only a process pool, or more `--workers`, adds cores. Each run's
`server_cpu` (cores used by the whole server tree, pool children included) divided by
what the pattern can use says whether the CPU was the bottleneck. Introduced in lesson
03_cpu_bound, used again in 04_workers.
"""

from __future__ import annotations

import os

import pandas as pd

# A process (or a server) using this share of the CPU it may use has no more to give: it is CPU-bound.
# A load generator or client that busy measures itself, not the server.
SATURATED = 0.9
CPU_LIMITS = ("cores", "GIL")  # model.predict's names for a CPU bottleneck start with these


def usable(pattern: str, workers: int = 1, procs: int = 0, cores: int | None = None) -> int:
    """Cores `pattern` can keep busy at once: one per worker (its GIL), or the process pool's, up to the machine's."""
    cores = cores or os.cpu_count() or 1
    if pattern == "processpool" and procs > 0:
        return min(workers * procs, cores)
    return min(workers, cores)


def usage(frame: pd.DataFrame, cores: int | None = None) -> pd.DataFrame:
    """Per run: cores used, cores usable, the share used (`busy`), and CPU time per request in ms.

    `cpu_ms_per_request` is what the server spent on each request, fib and HTTP together,
    at the machine's speed during that run: compare it with model.cpu_ms(cpu_n).
    """
    out = frame.copy()
    out["usable_cores"] = [usable(r.pattern, r.workers, r.procs, cores) for r in frame.itertuples()]
    out["busy"] = out["server_cpu"] / out["usable_cores"]
    out["cpu_ms_per_request"] = out["server_cpu"] / out["rps"] * 1000
    return out


def cpu_bound(frame: pd.DataFrame, at: float = SATURATED, cores: int | None = None) -> pd.Series:
    """Whether each run kept the cores its pattern can use busy (measured, from `server_cpu`)."""
    return usage(frame, cores)["busy"] >= at


def predicted_cpu_bound(frame: pd.DataFrame) -> pd.Series:
    """Whether the model named a CPU limit (cores, or one core per worker's GIL) as each run's bottleneck."""
    return frame["bottleneck"].str.startswith(CPU_LIMITS)


def ceiling_rps(frame: pd.DataFrame, cores: int | None = None) -> pd.Series:
    """The rate at which each run's server would run out of CPU, from what each request cost it.

    usable cores / CPU seconds per request: for an I/O-bound run, how far it is from the CPU's limit.
    """
    u = usage(frame, cores)
    return u["usable_cores"] / (u["cpu_ms_per_request"] / 1000)


def thread_cost(cpu_n: int, threads: int, calls: int | None = None) -> float:
    """CPU of fib(cpu_n) computed on `threads` threads at once over its CPU on one thread (1.0: turns are free).

    Threads that all compute take turns on the GIL every `sys.getswitchinterval()` (5 ms); each
    turn wakes another thread, often on another core, whose cache is cold for the work. Both are
    timed in this process, alternately (one, many, many, one), so that a drift in the machine's
    speed falls on both alike. `calls` fib calls per timing (default: `threads`).
    """
    import threading
    import time

    from labserver.demo.work import fib

    calls = calls or threads

    def cpu_per_call(n_threads: int) -> float:
        left = list(range(calls))

        def work() -> None:
            while True:
                try:
                    left.pop()  # atomic under the GIL: each call is done once
                except IndexError:
                    return
                fib(cpu_n)

        workers = [threading.Thread(target=work) for _ in range(n_threads)]
        started = time.process_time()  # the whole process: every thread's CPU
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        return (time.process_time() - started) / calls

    one, many = cpu_per_call(1), cpu_per_call(threads)
    many += cpu_per_call(threads)
    one += cpu_per_call(1)
    return many / one

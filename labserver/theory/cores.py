"""How many cores a pattern can keep busy, and how many it did: the GIL in numbers.

A worker process runs Python under one GIL, so its threads and its event loop share one
core between them; only a process pool, or more `--workers`, adds cores. Each run's
`server_cpu` (cores used by the whole server tree, pool children included) divided by
what the pattern can use says whether the CPU was the bottleneck. Introduced in lesson
03_cpu_bound (with where, in a sweep of fib's depth, the CPU takes over from the I/O), used
again in 04_workers.
"""

from __future__ import annotations

import math
import sys
from typing import Literal

import pandas as pd

from labserver.demo import cpus
from labserver.demo.traits import POOLS, Where
from labserver.theory import bottlenecks, model
from labserver.theory.workload import traits_of

# A process (or a server) using this share of the CPU it may use has no more to give: it is CPU-bound.
# A load generator or client that busy measures itself, not the server.
SATURATED = 0.9
PHI = (1 + 5**0.5) / 2  # fib(n) costs about PHI × fib(n - 1): it makes fib(n - 1) + fib(n - 2) calls
# Lesson 03's words for where each pattern computes its requests, in the order it names them.
WHERE = {
    "threadpool": ("thread pool", "{users} requests in {users} pool threads together"),
    "sequential": ("async", "{users} requests on one event loop"),
    "processpool": ("pool", "{users} requests, a worker and its {procs} processes"),
    "hashed": ("hashlib", "{users} requests in {users} pool threads together"),
}


def usable(
    pattern: str, workers: int = 1, procs: int = 0, cores: float | None = None, *, threads: int = 1, gil: bool = True
) -> float:
    """Cores `pattern` can keep busy at once: one per worker (its GIL), or the process pool's, up to the machine's.

    Without a GIL (lesson 10), or in C code that lets go of it (`hashed`), a thread pool's threads each
    compute on a core of their own. The
    machine's cores may be a fraction (a cgroup quota of 1.5 CPUs), and so may the result.
    """
    cores = cores or cpus.cores()
    computes = traits_of(pattern).computes
    if computes in POOLS and procs > 0:
        return min(workers * procs, cores)
    if computes is Where.RELEASED or (computes is Where.THREAD_POOL and not gil):
        return min(workers * threads, cores)
    return min(workers, cores)


def usage(frame: pd.DataFrame, cores: int | None = None) -> pd.DataFrame:
    """Per run: cores used, cores usable, the share used (`busy`), and CPU time per request in ms.

    `cpu_ms_per_request` is what the server spent on each request, fib and HTTP together,
    at the machine's speed during that run: compare it with model.cpu_ms(cpu_n).
    """
    out = frame.copy()
    out["usable_cores"] = [
        usable(r["pattern"], r["workers"], r["procs"], cores, threads=r.get("threads", 1), gil=_gil(r.get("gil")))
        for r in frame.to_dict("records")
    ]
    out["busy"] = out["server_cpu"] / out["usable_cores"]
    out["left_cores"] = _left(frame, out["usable_cores"])
    out["busy_of_left"] = out["server_cpu"] / out["left_cores"]
    # the harness computes it once per run (`server_ms`); frames made by hand may lack it
    by_hand = "server_ms" not in frame
    out["cpu_ms_per_request"] = frame["server_cpu"] / frame["rps"] * 1000 if by_hand else frame["server_ms"]
    return out


def _gil(value) -> bool:
    """A row's `gil`: runs saved before the column existed, or beside rows that have it (NaN), ran with one."""
    return value is not False and value != 0


How = Literal["mean", "min"]  # how a group of runs' shares are summed up: their mean, or the least


def share_busy(frame: pd.DataFrame, by: str = "pattern", how: How = "mean", cores: int | None = None) -> pd.Series:
    """The share of its usable cores each `by` group of runs kept busy: their mean, or with how="min" the least."""
    return usage(frame, cores).groupby(by)["busy"].agg(how)


def share_of_left(
    frame: pd.DataFrame, by: str | list[str] = "pattern", how: How = "mean", cores: int | None = None
) -> pd.Series:
    """The share of the cores left to it that each `by` group of runs kept busy: the mean, or with how="min" the least.

    What is left is the model's own accounting: the cores the pattern can use, and no more than
    the machine's usable cores less what Locust and every other process took meanwhile
    (`machine_cpu` − `server_cpu`). A server that kept all of that busy had no more to take: a
    fixed share of all its cores would ask it for the generator's share too. A run that did not
    measure the machine's CPU is held to its usable cores alone.
    """
    keys = [by] if isinstance(by, str) else by
    return usage(frame, cores)["busy_of_left"].groupby([frame[k] for k in keys]).agg(how)


def _left(frame: pd.DataFrame, usable_cores: pd.Series) -> pd.Series:
    """The cores left to each run's pattern (share_of_left): its usable cores, and no more than the machine's less
    what every other process took meanwhile; its usable cores alone where the machine's CPU was not measured."""
    if "machine_cpu" not in frame or "usable_cores" not in frame:
        return usable_cores
    others = (frame["machine_cpu"] - frame["server_cpu"]).clip(lower=0)
    left = pd.concat([usable_cores, frame["usable_cores"] - others], axis=1).min(axis=1)
    return left.where(others.notna(), usable_cores)


def cost_ratio(frame: pd.DataFrame, by: str, base, other) -> float:
    """Mean CPU per request of the runs whose `by` is in `base` over that of those whose `by` is in `other`.

    Below 1 where `other`'s requests cost more: on a machine whose cores compute slower when all
    of them are busy (a laptop's turbo, a VM's shared host), the runs that use every core pay
    that. `base` and `other` are a value of `by` or a list of them.
    """
    cost = usage(frame).groupby(by)["cpu_ms_per_request"].mean()
    base, other = (key if isinstance(key, list) else [key] for key in (base, other))
    return float(cost.loc[base].mean() / cost.loc[other].mean())


def cpu_bound(frame: pd.DataFrame, at: float = SATURATED, cores: int | None = None) -> pd.Series:
    """Whether each run kept the cores its pattern can use busy (measured, from `server_cpu`)."""
    return usage(frame, cores)["busy"] >= at


def predicted_cpu_bound(frame: pd.DataFrame) -> pd.Series:
    """Whether the model named a CPU limit (cores, or one core per worker's GIL) as each run's bottleneck before
    the run (`before_bottleneck`): priced with the run's own CPU, it would read the run back."""
    return frame["before_bottleneck"].isin(bottlenecks.CORE_BOUND)


def ceiling_rps(frame: pd.DataFrame, cores: int | None = None) -> pd.Series:
    """The rate at which each run's server would run out of CPU, from what each request cost it.

    usable cores / CPU seconds per request: for an I/O-bound run, how far it is from the CPU's limit.
    """
    u = usage(frame, cores)
    return u["usable_cores"] / (u["cpu_ms_per_request"] / 1000)


def in_words(runs: pd.DataFrame, cores: float, cpu_n: int, fib_ms: float) -> str:
    """Lesson 03's GIL in words: per pattern, its users, the cores its server kept busy and the CPU each request cost.

    Means over each pattern's `runs` (its rounds); `fib_ms` is fib(cpu_n) timed in the notebook
    (model.cpu_ms), to set beside what the server paid for each request.
    """
    mean = usage(runs).groupby("pattern")[["users", "procs", "server_cpu", "cpu_ms_per_request"]].mean()
    named = {p: said for p, said in WHERE.items() if p in mean.index}
    said = {p: named[p][1].format(users=int(mean.loc[p, "users"]), procs=int(mean.loc[p, "procs"])) for p in named}
    lines = [
        f"{label + ':':<12} {said[p]} kept {mean.loc[p, 'server_cpu']:.2f} cores "
        f"busy, {mean.loc[p, 'cpu_ms_per_request']:.1f} ms of CPU per request"
        for p, (label, _) in named.items()
    ]
    lines.append(
        f"fib({cpu_n}) alone, timed in this notebook: {fib_ms:.1f} ms; "
        f"the GIL is handed over every {sys.getswitchinterval() * 1000:.0f} ms"
    )
    if any(traits_of(p).computes is Where.RELEASED for p in named):
        lines.append(f"SHA-256 of {cpu_n} MiB alone, timed in this notebook: {model.digest_ms(cpu_n):.1f} ms")
    return "\n".join(lines)


def crossing_ms(io_ms: float, users: int) -> float:
    """The CPU per request, in ms, at which one core's cap 1 / cpu meets Little's law's users / (io + cpu).

    users × cpu = io + cpu there; a single user never keeps the core busy while it waits (inf).
    """
    return io_ms / (users - 1) if users > 1 else math.inf


def takeover(curve: pd.DataFrame, at: float = SATURATED, cores: int | None = None) -> tuple[int, int] | None:
    """In a sweep of cpu_n, the deepest fib measured I/O-bound and the shallowest measured CPU-bound.

    None when the sweep has runs on one side only: it did not cross from I/O to CPU.
    """
    bound = cpu_bound(curve, at, cores)
    io_side, cpu_side = curve.loc[~bound, "cpu_n"], curve.loc[bound, "cpu_n"]
    if io_side.empty or cpu_side.empty:
        return None
    return int(io_side.max()), int(cpu_side.min())


def check_workers(workers: list[int]) -> list[int]:
    """`workers` if the counts to compare are distinct, increasing and start at 1 (the baseline), else ValueError."""
    if sorted(set(workers)) != list(workers) or 1 not in workers:
        raise ValueError(f"workers must be increasing, distinct and start at 1, got {workers!r}")
    return workers


def around(workers: list[int], cores: int) -> tuple[int, int | None]:
    """The most workers that still get a core each, and the first count that does not (None when every count does).

    `workers` must hold 1 (check_workers): one worker always gets a core.
    """
    return max(w for w in workers if w <= cores), next((w for w in workers if w > cores), None)


def predict_workers(pattern: str, workers: list[int], workloads: dict[str, dict]) -> pd.DataFrame:
    """The model's req/s and bottleneck for `pattern` at each worker count, on each named workload.

    A workload is model.predict_for's keywords, `users` included, e.g. {"users": 20, "cpu_n": 25}.
    """
    rows = []
    for w in workers:
        for name, load in workloads.items():
            p = model.predict_for(pattern, workers=w, **load)
            rows.append((w, name, load["users"], p.rps, p.bottleneck))
    return pd.DataFrame(rows, columns=["workers", "workload", "users", "predicted_rps", "bottleneck"])


def headroom(run: pd.Series, ceiling: float, cores: float) -> str:
    """How far an I/O-bound run was from its server's CPU ceiling, and the CPU Locust would need to drive it there.

    `ceiling` is the run's ceiling_rps; Locust's CPU is taken to grow in proportion to the rate it drives.
    """
    workers = int(run.workers)  # a row of floats alone keeps 1 as 1.0
    return (
        f"I/O-bound, {workers} worker{'s' if workers != 1 else ''}: {run.rps:.0f} req/s cost its loop "
        f"{run.server_cpu:.2f} cores ({run.server_ms:.2f} ms per request): that loop would run out of CPU "
        f"near {ceiling:,.0f} req/s, {ceiling / run.rps:.1f}× this rate.\n"
        f"Locust used {run.locust_cpu:.2f} cores to send those {run.rps:.0f} req/s; at {ceiling:,.0f} "
        f"it would need about {run.locust_cpu * ceiling / run.rps:.1f}, on a machine with {cores}."
    )


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

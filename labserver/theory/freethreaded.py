"""Lesson 10's arithmetic: a free-threaded Python's thread pool beside the same build with its GIL.

Each run's own prediction (`predicted_rps`) already prices the CPU that run measured, so a build
that computes slower per request (the free-threaded one, whose interpreter skips some of the
GIL build's speed-ups) is predicted slower too. These functions compare the builds, tagged
`build` in each row, on what they measured and on what the model said of them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from labserver.demo.traits import POOLS, Where
from labserver.theory import cores
from labserver.theory.demand import UNMEASURED
from labserver.theory.model import predict_for
from labserver.theory.workload import traits_of

Builds = tuple[str, str, str]  # labels: the lab's own GIL build, the free-threaded build with its GIL, without


def mean_rps(runs: pd.DataFrame, build: str, pattern: str = "threadpool", users: int | None = None) -> pd.Series:
    """Mean measured and predicted req/s of `build`'s runs of `pattern` (at `users`, if given); NaN if it has none."""
    if runs.empty:  # a plan with no runs (no free-threaded Python here) measures an empty frame
        return pd.Series({"rps": math.nan, "predicted_rps": math.nan})
    chosen = runs[(runs["build"] == build) & (runs["pattern"] == pattern)]
    if users is not None:
        chosen = chosen[chosen["users"] == users]
    if chosen.empty:
        return pd.Series({"rps": math.nan, "predicted_rps": math.nan})
    return chosen[["rps", "predicted_rps"]].mean()


def speedup(
    runs: pd.DataFrame, build: str, baseline: str, users: int | None = None, pattern: str = "threadpool"
) -> pd.Series:
    """`build` over `baseline` (each at `users`, if given): measured (`rps`) and predicted (`predicted_rps`) ratios.

    Each build's runs may have users of their own: one held to one core by its GIL needs no more
    users than keep that core busy, and its prediction is its own.
    """
    return mean_rps(runs, build, pattern, users) / mean_rps(runs, baseline, pattern, users)


def cpu_per_request(runs: pd.DataFrame, users: int = 1, pattern: str = "threadpool") -> pd.Series:
    """Each build's server CPU per request, in ms, at `users` (one user: one request at a time, no contention)."""
    chosen = runs[(runs["pattern"] == pattern) & (runs["users"] == users)]
    return chosen.groupby("build", sort=False)["server_ms"].mean()


def near_model(runs: pd.DataFrame, tolerance: float = 0.1) -> float:
    """The share of `runs`' valid runs whose throughput lies within ±`tolerance` of their prediction priced with
    their own CPU (a run whose window measured none is left out)."""
    unmeasured = runs.get("priced_by", pd.Series("", index=runs.index)).eq(UNMEASURED)
    valid = runs[runs["valid"].astype(bool) & ~unmeasured]
    if valid.empty:
        return math.nan
    return float(((valid["rps"] / valid["predicted_rps"] - 1).abs() <= tolerance).mean())


def in_words(runs: pd.DataFrame, builds: tuple[str, ...], cores: float, pattern: str = "threadpool") -> str:
    """Per build, the cores `pattern` kept busy on fib at the users of its busy runs (`load` "busy"), and its CPU
    per request alone."""
    alone = cpu_per_request(runs, pattern=pattern)
    lines = []
    for build in builds:
        chosen = runs[(runs["build"] == build) & (runs["pattern"] == pattern) & (runs["load"] == "busy")]
        if chosen.empty:
            continue
        lines.append(
            f"{build + ':':<20} {chosen['users'].iloc[0]} users in the thread pool kept "
            f"{chosen['server_cpu'].mean():.2f} of {cores:g} cores busy, {chosen['rps'].mean():.0f} req/s; "
            f"alone, a request cost {alone.get(build, math.nan):.1f} ms"
        )
    return "\n".join(lines)


def predict_builds(
    builds: Mapping[str, bool],
    *,
    users: int,
    one_core_users: int,
    cpu_n: int,
    threads: int,
    procs: int,
    task_ms: float | None = None,
) -> pd.DataFrame:
    """The model on fib before measuring: the thread pool, async def and the interpreter pool (of `procs`) on each
    of `builds` (label: has a GIL).

    A run that can use more than one core (the thread pool without a GIL, a pool) gets `users`; one
    held to one core gets `one_core_users`, as the lesson's runs do. `task_ms` prices fib on the builds'
    own interpreter (default: timed on this one, which may compute it faster).
    """
    rows = []
    for build, gil in builds.items():
        for pattern in ("threadpool", "sequential", "interpreterpool"):
            computes = traits_of(pattern).computes
            many = computes in POOLS or (computes is Where.THREAD_POOL and not gil)  # more than one core
            n = users if many else one_core_users
            usable = cores.usable(pattern, procs=procs, threads=threads, gil=gil)
            guess = predict_for(
                pattern, users=n, cpu_n=cpu_n, threads=threads, procs=procs, gil=gil, cpu_ms_per_task=task_ms
            )
            rows.append(
                {
                    "build": build,
                    "pattern": pattern,
                    "users": n,
                    "usable_cores": usable,
                    "predicted_rps": guess.rps,
                    "bottleneck": guess.bottleneck,
                }
            )
    return pd.DataFrame(rows).round(1)


def headline(busy: pd.DataFrame, builds: Builds) -> str:
    """The fib chart's finding: the thread pool without the GIL over the same build with it, and over the usual one."""
    gil_build, gil_on, gil_off = builds
    if not (busy["build"] == gil_off).any():
        return "No free-threaded Python here: the GIL build alone"
    speed = speedup(busy, gil_off, gil_on)
    return (
        f"Without the GIL the thread pool served {speed['rps']:.1f}× its GIL-on rate (predicted "
        f"{speed['predicted_rps']:.1f}×), {speedup(busy, gil_off, gil_build)['rps']:.1f}× the usual build's"
    )


def why_not(missing: str, usable_cores: float) -> str:
    """Why lesson 10's claims cannot be checked here ("" where they can): no free-threaded Python, or one core."""
    return missing or (f"needs 2 usable CPUs, this process may use {usable_cores:g}" if usable_cores < 2 else "")


@dataclass(frozen=True)
class Findings:
    """What lesson 10's claims read of its runs; NaN where a build has no runs of that kind."""

    fib: pd.Series  # the busy thread pool on fib, GIL off / GIL on: measured `rps`, predicted `predicted_rps`
    sleep: pd.Series  # the same on fib + sleep
    off_share: float  # fib: share of the cores left to it (after Locust and the rest) the thread pool kept, GIL off
    gil_cores: float  # fib: cores the thread pool kept busy with a GIL, the more of the two builds
    async_cores: float  # fib: cores async def kept busy, the more of GIL on and GIL off
    pool_share: float  # fib: share of the cores left to it the process pool kept, the less of two builds
    interpreters_share: float  # fib: share of the cores left to it the interpreter pool kept, GIL on
    # fib, GIL off: the thread pool over the interpreter pool, measured `rps` and predicted `predicted_rps`
    threads_over_interpreters: pd.Series
    near_model: float  # share of all the valid runs within ±10% of their prediction
    runs: pd.DataFrame  # every run of the lesson


def findings(fib: pd.DataFrame, by_threads: pd.DataFrame, slept: pd.DataFrame, builds: Builds) -> Findings:
    """Lesson 10's claims' values from its three plans' runs: fib, the thread pool's sizes, and fib + sleep."""
    gil_build, gil_on, gil_off = builds
    busy = fib[fib["load"] == "busy"]
    share = cores.share_of_left(busy, by=["build", "pattern"], how="min")  # of what Locust and the rest left
    used = busy.groupby(["build", "pattern"])["server_cpu"].max()
    every = pd.concat([fib, by_threads, slept], ignore_index=True)
    return Findings(
        fib=speedup(busy, gil_off, gil_on),
        sleep=speedup(slept, gil_off, gil_on),
        off_share=_of(share, gil_off, "threadpool"),
        gil_cores=max(_of(used, gil_on, "threadpool"), _of(used, gil_build, "threadpool")),
        async_cores=max(_of(used, gil_on, "sequential"), _of(used, gil_off, "sequential")),
        pool_share=min(_of(share, gil_build, "processpool"), _of(share, gil_off, "processpool")),
        interpreters_share=_of(share, gil_on, "interpreterpool"),
        threads_over_interpreters=mean_rps(busy, gil_off) / mean_rps(busy, gil_off, "interpreterpool"),
        near_model=near_model(every),
        runs=every,
    )


def _of(values: pd.Series, build: str, pattern: str) -> float:
    """`values` of `build` and `pattern` (a series indexed by both), NaN where that build ran no such runs."""
    return float(values.get((build, pattern), math.nan))

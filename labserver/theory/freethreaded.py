"""Lesson 10's arithmetic: a free-threaded Python's thread pool beside the same build with its GIL.

Each run's own prediction (`predicted_rps`) already prices the CPU that run measured, so a build
that computes slower per request (the free-threaded one, whose interpreter skips some of the
GIL build's speed-ups) is predicted slower too. These functions compare the builds, tagged
`build` in each row, on what they measured and on what the model said of them.
"""

from __future__ import annotations

import math

import pandas as pd


def mean_rps(runs: pd.DataFrame, build: str, pattern: str = "threadpool", users: int | None = None) -> pd.Series:
    """Mean measured and predicted req/s of `build`'s runs of `pattern` (at `users`, if given); NaN if it has none."""
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
    """The share of `runs`' valid runs whose throughput lies within ±`tolerance` of their prediction."""
    valid = runs[runs["valid"].astype(bool)]
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

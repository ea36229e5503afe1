"""Lesson 00's second prediction: one worker's ceiling 1 / D, and the knee where Little's law meets it.

Every run is predicted with the CPU it measured (theory.demand: the curve between the two
bounds); `model.with_little` adds Little's law alone beside it. This module picks the runs a
lesson checks against that curve, and says in numbers how the run nearest the knee fared.
"""

from __future__ import annotations

import math

import pandas as pd

from labserver.theory.bottlenecks import SERVER_OR_GENERATOR_CPU

# What lesson 00's table shows: each run against both predictions, and where its CPU went.
COLUMNS = [
    "client",
    "users",
    "rps",
    "little_rps",
    "predicted_rps",
    "ratio",
    "bottleneck",
    "server_ms",
    "locust_ms",
    "server_cpu",
    "locust_cpu",
    "valid",
]


def reachable(frame: pd.DataFrame, up_to_rps: float) -> pd.DataFrame:
    """The runs Little's law alone puts at `up_to_rps` or less: those the curve must hold for, below the knee."""
    return frame[frame["little_rps"] <= up_to_rps]


def knee(frame: pd.DataFrame) -> pd.Series | None:
    """The run Little's law puts highest, the nearest to the ceiling (None when `frame` has no run)."""
    return frame.loc[frame["little_rps"].idxmax()] if len(frame) else None


def findings(server_ms: float, reachable: pd.DataFrame) -> str:
    """One worker's ceiling 1 / D, then how busy the worker was at the knee and how much of each bound it served."""
    lines = [
        f"server: {server_ms:.2f} ms of CPU per request when busiest → one worker serves at most "
        f"{1000 / server_ms:,.0f} req/s"
    ]
    run = knee(reachable)
    if run is not None:
        lines.append(
            f"at {run.users:.0f} users the worker was {run.server_cpu:.0%} busy "
            f"({run.server_ms:.2f} ms per request) and "
            f"served {run.rps:,.0f} req/s: {run.rps / run.little_rps:.0%} of Little's law, {run.ratio:.0%} of the curve"
        )
    return "\n".join(lines)


def table(frame: pd.DataFrame) -> pd.DataFrame:
    """Lesson 00's runs: measured, both predictions, and each side's CPU per request and in cores."""
    return frame[COLUMNS].round(3)


def miss_gap(run: pd.Series) -> float:
    """How much further Little's law misses `run` than the CPU-priced model does: above 0 where the model explains
    it better. Each miss is |ln(measured / predicted)|, the same for a run at twice its prediction as at half."""
    return abs(math.log(run.rps / run.little_rps)) - abs(math.log(run.ratio))


def cpu_bound(run: pd.Series) -> float:
    """1.0 where the model priced with `run`'s own CPU names a CPU bound (the worker's, the machine's, Locust's)."""
    return float(run.bottleneck in SERVER_OR_GENERATOR_CPU)


def _processes(run: pd.Series) -> int:
    """The Locust processes that sent `run`'s load (1 where the run does not say)."""
    given = run.get("processes", 1)
    return max(1, int(given)) if pd.notna(given) else 1


def busiest_in_words(run: pd.Series) -> str:
    """The busiest run against both predictions, and each side's CPU (Locust's per process where it ran several),
    for the claims' detail."""
    processes = _processes(run)
    locust = f"Locust {run.locust_cpu / processes:.2f}" + (f" in each of {processes}" if processes > 1 else "")
    return (
        f"{run.rps:,.0f} req/s, {run.users:.0f} users: measured / Little's law {run.rps / run.little_rps:.2f}, "
        f"/ the model {run.ratio:.2f}; worker {run.server_cpu:.2f}, {locust}"
    )


def cpu_in_words(run: pd.Series) -> str:
    """Where `run`'s CPU went: the worker's share of a core (and its wait for one, Linux only), and Locust's, per
    process where it ran several."""
    waited = run.get("worker_waited")
    wait = f" and waits {waited:.0%} for one" if pd.notna(waited) else ""
    processes = _processes(run)
    locust = f"Locust {run.locust_cpu / processes:.0%}" + (f" in each of {processes}" if processes > 1 else "")
    return f"At {run.rps:,.0f} req/s the worker uses {run.server_cpu:.0%} of a core{wait}, {locust}"


def generator_cost(frame: pd.DataFrame, heavy: str, light: str) -> float:
    """How many times the CPU per request of client `heavy` the load generator spent, over `light`'s: the median over
    the user counts both ran, each at equal users (a client's CPU per request falls as its load rises)."""
    per_users = frame.pivot_table(index="users", columns="client", values="locust_ms", aggfunc="median")
    both = per_users[[heavy, light]].dropna()
    return float((both[heavy] / both[light]).median())

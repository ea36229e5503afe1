"""Lesson 00's second prediction: one worker's ceiling 1 / D, and the knee where Little's law meets it.

Every run is predicted with the CPU it measured (theory.demand: the curve between the two
bounds); `model.with_little` adds Little's law alone beside it. This module picks the runs a
lesson checks against that curve, and says in numbers how the run nearest the knee fared.
"""

from __future__ import annotations

import pandas as pd

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

"""Lesson 11's readings of its runs: each part's measured ratio beside the model's, and the threads borrowed.

The lesson shows the runs, the charts and the claims; the arithmetic between them lives here,
under test (tests/course/test_app_threads.py).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

import pandas as pd

from labserver.charts.telemetry import per_tick
from labserver.course import sizing
from labserver.harness import telemetry
from labserver.labels import pattern_label
from labserver.theory import model
from labserver.theory.workload import Workload


def predicted(plan: sizing.Plan, cores: float) -> pd.DataFrame:
    """The model's throughput and latency for each planned run, in its order, with its part and thread limit."""
    rows = []
    for run in plan.runs:
        settings = plan.settings(run["server"], cores)
        workload = Workload.of(run)
        p = model.predict(workload, settings, cores=cores)
        rows.append(
            {
                "part": run["tags"]["part"],
                "pattern": run["pattern"],
                "threads": settings.threads,
                "connections": settings.db_pool if workload.traits.connection else None,
                "users": run["users"],
                "predicted_rps": round(p.rps, 1),
                "predicted_ms": round(p.latency_ms, 1),
                "bottleneck": p.bottleneck,
            }
        )
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Ratio:
    """One run's req/s over another's: as measured, and as each run's own prediction has it."""

    measured: float
    predicted: float


def ratio(runs: pd.DataFrame, top: dict, bottom: dict) -> Ratio:
    """The mean req/s of the runs matching `top` (column: value) over those matching `bottom`."""

    def mean(match: dict) -> pd.Series:
        chosen = runs
        for column, value in match.items():
            chosen = chosen[chosen[column] == value]
        return chosen[["rps", "predicted_rps"]].mean()

    a, b = mean(top), mean(bottom)
    return Ratio(float(a["rps"] / b["rps"]), float(a["predicted_rps"] / b["predicted_rps"]))


def borrowed(runs: pd.DataFrame, pattern: str) -> float:
    """The median number of pool threads `pattern`'s first run kept borrowed, from the server's telemetry."""
    run_id = runs.loc[runs["pattern"] == pattern, "run_id"].iloc[0]
    samples = telemetry.load(run_id)
    return float(per_tick(samples)["threads_busy"].median()) if len(samples) else float("nan")


# Short names for a chart's axis: six runs side by side.
SHORT = {
    "syncdep": "def dependency",
    "asyncdep": "async def dependency",
    "streamsync": "plain generator",
    "streamasync": "async generator",
    "bgsync": "def task",
    "bgasync": "async def task",
    "pooled": "session from a dependency",
    "pooledinside": "session in the endpoint",
}


def named(runs: pd.DataFrame) -> pd.DataFrame:
    """`runs` with an `endpoint` column for a chart: what each run varies, short, and its thread limit in part 1."""
    limit = runs["part"] == "the thread limit"
    label = runs["pattern"].map(lambda p: SHORT.get(p, pattern_label(p)))
    label = label.where(~limit, "def, " + runs["threads"].astype(int).astype(str) + " threads")
    return runs.assign(endpoint=label.map(lambda text: textwrap.fill(text, 12)))


def stalled(runs: pd.DataFrame) -> float:
    """The replies after the first round of the session from a dependency, per connection: below 1, it stalled."""
    run = runs[runs["pattern"] == "pooled"].iloc[0]
    return float(run["requests"]) / float(run["db_pool"])

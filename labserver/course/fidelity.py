"""How well the model explains the runs: the share within ±10% of their prediction, per lesson, and the worst.

The course's targets: at least 95% of valid runs within ±10% of their prediction in every
lesson, and the I/O-bound runs within ±3%. Lesson 99 and `make bench` report these on the runs
of one batch (LAB_BATCH_ID, set by `make figures`) or, outside a batch, of the current commit.
"""

from __future__ import annotations

import pandas as pd

from labserver import config
from labserver.harness.results import environment
from labserver.theory.model import CPU_BOUND

TOLERANCE = 0.10
IO_TOLERANCE = 0.03
SHARE = 0.95


def current(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs of this batch (LAB_BATCH_ID) or, outside a batch, of the current commit: not older code's."""
    batch = config.BATCH_ID.read()
    if batch and "batch" in runs:
        return runs[runs["batch"] == batch]
    commit = environment()["git_commit"]
    if not commit or "git_commit" not in runs:
        return runs  # not a git checkout, or runs from before commits were recorded: nothing to tell apart
    return runs[runs["git_commit"] == commit]


def io_bound(runs: pd.DataFrame) -> pd.Series:
    """Runs whose prediction is set by waiting (users, threads, an event loop held), not by a CPU."""
    return ~runs["bottleneck"].isin(CPU_BOUND)


def table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per lesson: valid runs, the share within ±10% and, of the I/O-bound ones, within ±3%; the worst run."""
    columns = ["lesson", "runs", "within_10", "io_runs", "io_within_3", "worst_ratio", "worst_run"]
    if runs.empty or "ratio" not in runs:  # no runs on disk (lesson 99 run first) read back as a frame of no columns
        return pd.DataFrame(columns=columns)
    valid = runs[runs["valid"].astype(bool)].dropna(subset=["ratio"]).copy()
    valid["lesson"] = valid["lesson"].fillna("--").astype(str).str[:2]
    valid["off"] = (pd.to_numeric(valid["ratio"]) - 1).abs()
    valid["io"] = io_bound(valid)
    rows = []
    for lesson, group in valid.groupby("lesson"):
        worst = group.loc[group["off"].idxmax()]
        io = group[group["io"]]
        rows.append(
            {
                "lesson": lesson,
                "runs": len(group),
                "within_10": (group["off"] <= TOLERANCE).mean(),
                "io_runs": len(io),
                "io_within_3": (io["off"] <= IO_TOLERANCE).mean() if len(io) else float("nan"),
                "worst_ratio": worst["ratio"],
                "worst_run": describe(worst),
            }
        )
    return pd.DataFrame(rows, columns=columns)


def describe(run: pd.Series) -> str:
    """A run in one line: pattern and the parameters that set it."""
    parts = [str(run.get("pattern"))]
    parts += [f"{k}={run[k]}" for k in ("users", "tasks", "io_ms", "cpu_n", "workers") if k in run and pd.notna(run[k])]
    text = " ".join(parts) + f" ({run.get('bottleneck')})"
    if pd.notna(run.get("bunched")) and pd.notna(run.get("bunched_at_random")):
        # users in step wait for their bunch, which the model does not price (records.bunched)
        text += f"; {run['bunched']:.0%} of replies back to back, {run['bunched_at_random']:.0%} at random"
    return text

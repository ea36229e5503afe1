"""Cores in pictures: what the GIL lets each pattern keep busy, where the CPU takes over, what workers add.

The figures of lessons 03_cpu_bound and 04_workers (theory.cores has their numbers). Each
function takes the runs and a title the lesson wrote from its own data, and returns the Figure.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from labserver.charts.plots import LABEL_COLORS, named, throughput

# Lesson 03's two endpoints on one chart: fib alone, and fib followed by a sleep.
ENDPOINT_COLORS = ["#4c72b0", "#dd8452"]


def server_cpu(usage: pd.DataFrame, title: str, cores: float) -> plt.Figure:
    """Cores each run's server kept busy, per pattern, against one core (one GIL) and the machine's cores."""
    fig, ax = plt.subplots()
    sns.barplot(named(usage), x="pattern", y="server_cpu", hue="pattern", palette=LABEL_COLORS, ax=ax)
    ax.axhline(1, color="grey", ls=":", lw=1)
    ax.axhline(cores, color="grey", ls="--", lw=1)
    ax.annotate("one core", (-0.45, 1), xytext=(0, 3), textcoords="offset points", color="grey")
    ax.annotate(f"{cores} usable cores", (-0.45, cores), xytext=(0, 3), textcoords="offset points", color="grey")
    ax.set(title=title, ylabel="server CPU (cores)", ylim=(0, cores * 1.15))
    return fig


def endpoints(runs: pd.DataFrame, title: str, y: str = "rps", ylabel: str = "throughput (req/s)") -> plt.Figure:
    """Mean `y` (req/s by default) per pattern, one bar per `endpoint` (e.g. fib alone, fib + sleep) side by side."""
    fig, ax = plt.subplots()
    sns.barplot(named(runs), x="pattern", y=y, hue="endpoint", palette=ENDPOINT_COLORS, errorbar=None, ax=ax)
    ax.set(title=title, xlabel="pattern", ylabel=ylabel)
    # the legend in a band of its own above the bars, which may all reach the top (shares of the cores kept busy)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.2)
    sns.move_legend(ax, "upper center", ncols=2, title=None)
    return fig


def crossing(curve: pd.DataFrame, title: str, knee_n: float, model: pd.DataFrame | None = None) -> plt.Figure:
    """Throughput against fib's depth (cpu_n), measured and predicted, with the model's crossing at fib(knee_n).

    `model` (model.predict_frame's rows, a `cpu_n` column added) draws the model at every depth between the runs',
    so that its bend at the knee shows. No line is drawn when `knee_n` is nan (lessons.cpu_bound.knee_depth: the caps
    never cross).
    """
    fig = throughput(curve, title=title, x="cpu_n", curve=model)
    ax = fig.axes[0]
    for line in ax.lines:  # the model's line through every depth: named by depth, not by the axis's long label
        name = str(line.get_label())
        if " model, every " in name:
            line.set_label(name.split(" model, every ")[0] + " model, every fib depth")
    # lower left, where the runs below the knee sit high and the deep ones sit right: the knee's label stays clear
    ax.legend(fontsize="small", loc="lower left")
    if math.isfinite(knee_n):
        ax.axvline(knee_n, color="grey", ls=":", lw=1)
        ax.annotate(
            f"model: CPU takes over\nnear fib({knee_n:.1f})",
            (knee_n, 0.95),
            xytext=(4, -24),
            xycoords=("data", "axes fraction"),
            textcoords="offset points",
            color="grey",
        )
    return fig


def workers(runs: pd.DataFrame, title: str, cores: float) -> plt.Figure:
    """Req/s against uvicorn workers, one panel per `workload` (mean over its runs), beside the prediction made
    before them where the runs have one (plots.predicted_column), with the machine's cores marked."""
    model = {c: (c, "mean") for c in ("predicted_rps", "predicted_before_rps") if c in runs.columns}
    chart = runs.groupby(["workload", "workers"], as_index=False).agg(
        rps=("rps", "mean"), valid=("valid", "all"), **model
    )
    panels = sorted(chart["workload"].unique())  # "CPU-bound" before "I/O-bound"
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.5), squeeze=False)
    for ax, workload in zip(axes[0], panels, strict=True):
        throughput(chart[chart["workload"] == workload], title=workload, x="workers", hue="workload", ax=ax)
        ax.axvline(cores, color="grey", ls=":", lw=1)
        ax.annotate(
            f"{cores} cores",
            (cores, 1),
            xycoords=("data", "axes fraction"),
            xytext=(4, -14),
            textcoords="offset points",
            color="grey",
        )
        ax.set_xticks(sorted(runs["workers"].unique()))
    fig.suptitle(title, fontweight="bold")
    fig.tight_layout()
    return fig

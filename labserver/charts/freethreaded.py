"""Lesson 10 in pictures: the same endpoints on a free-threaded Python, with its GIL and without.

Each function takes the runs (a `build` column names the interpreter and its GIL) and a title
the lesson wrote from its own data, and returns the Figure.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from labserver.charts.plots import LABEL_COLORS, bars, named


def builds(runs: pd.DataFrame, title: str, cores: float) -> plt.Figure:
    """Left: each build's throughput, measured beside predicted. Right: the cores each pattern kept busy."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    bars(runs, title="throughput", x="build", ax=left)
    left.tick_params(axis="x", labelrotation=10)
    sns.barplot(named(runs), x="build", y="server_cpu", hue="pattern", palette=LABEL_COLORS, errorbar=None, ax=right)
    for level, text in ((1, "one core"), (cores, f"{cores:g} cores (the machine)")):
        right.axhline(level, color="grey", ls=":" if level == 1 else "--", lw=1)
        right.annotate(text, (-0.45, level), xytext=(0, 3), textcoords="offset points", color="grey")
    right.set(title="server CPU", xlabel="build", ylabel="server CPU (cores)", ylim=(0, cores * 1.2))
    right.tick_params(axis="x", labelrotation=10)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def threads(runs: pd.DataFrame, title: str) -> plt.Figure:
    """Throughput, measured beside predicted, against the thread pool's size."""
    fig = bars(runs.assign(threads=runs["threads"].astype(str)), title=title, x="threads")
    fig.axes[0].set(xlabel="threads in the pool")
    return fig

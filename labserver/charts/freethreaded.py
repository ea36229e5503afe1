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
    """One bar per pattern and build. Left: req/s measured (bar) and predicted (black tick). Right: server CPU."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    frame = named(runs)
    order = list(dict.fromkeys(frame["build"]))
    patterns = list(dict.fromkeys(frame["pattern"]))
    common = dict(x="build", hue="pattern", order=order, hue_order=patterns, palette=LABEL_COLORS, errorbar=None)
    sns.barplot(frame, y="rps", ax=left, legend=False, **common)
    predicted = frame.groupby(["pattern", "build"])["predicted_rps"].mean()
    for pattern, container in zip(patterns, left.containers, strict=True):
        for bar in container:  # seaborn leaves out the bars of a build that lacks the pattern
            x, width = bar.get_x(), bar.get_width()
            build = order[round(x + width / 2)]  # a bar sits within half a step of its category
            left.hlines(predicted[pattern, build], x, x + width, color="black", lw=2.5)
    left.plot([], [], color="black", lw=2.5, label="predicted")
    left.legend(loc="upper right", fontsize="small")
    left.set(title="throughput", xlabel="build", ylabel="throughput (req/s)")
    sns.barplot(frame, y="server_cpu", ax=right, **common)
    for level, text in ((1, "one core"), (cores, f"{cores:g} usable cores")):
        right.axhline(level, color="grey", ls=":" if level == 1 else "--", lw=1)
        right.annotate(text, (-0.45, level), xytext=(0, 3), textcoords="offset points", color="grey")
    right.set(title="server CPU", xlabel="build", ylabel="server CPU (cores)", ylim=(0, cores * 1.3))
    sns.move_legend(right, "upper left", bbox_to_anchor=(1.01, 1), title="endpoint", fontsize="small")
    for ax in (left, right):
        ax.tick_params(axis="x", labelrotation=10)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def threads(runs: pd.DataFrame, title: str) -> plt.Figure:
    """Throughput, measured beside predicted, against the thread pool's size, the fewest threads first (the runs go
    the other way: the most first)."""
    ordered = runs.sort_values("threads", kind="stable")
    fig = bars(ordered.assign(threads=ordered["threads"].astype(str)), title=title, x="threads")
    fig.axes[0].set(xlabel="threads in the pool")
    return fig

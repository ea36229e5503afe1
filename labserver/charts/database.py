"""Lesson 07's charts: what bounds each driver, and how the async edge fares as fib grows."""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import pandas as pd

from labserver.charts import plots
from labserver.harness.rows.results import compare
from labserver.theory.pools import CONVERGED


def held_by(bottleneck: Mapping[str, str]) -> str:
    """What the model says holds each driver back (by `sync` and `async`), in words for a title."""
    if bottleneck["sync"] == bottleneck["async"]:
        return f"both held by the {bottleneck['sync']}"
    return f"sync held by the {bottleneck['sync']}, async by the {bottleneck['async']}"


def bounds_chart(panels: Mapping[str, pd.DataFrame], title: str) -> plt.Figure:
    """Measured beside predicted req/s per driver, one panel per (panel title, runs), each pair over its bottleneck:
    the prediction made before each run and what bound it then, where the runs have one (else the explained one)."""
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.5), squeeze=False)
    for ax, (name, frame) in zip(axes[0], panels.items(), strict=True):
        model, _ = plots.predicted_column(frame)
        plots.bars(frame, title=name, x="driver", ax=ax)
        before = model == "predicted_before_rps" and "before_bottleneck" in frame
        bound = "before_bottleneck" if before else "bottleneck"
        for i, said in enumerate(frame[bound]):
            ax.annotate(said, (i, 0), xytext=(0, 4), textcoords="offset points", ha="center", fontsize="small")
    # one legend under the panels: inside them it covers the tallest bars, which sit in the corners
    handles, labels = axes[0][0].get_legend_handles_labels()
    for ax in axes[0]:
        if ax.get_legend():
            ax.get_legend().remove()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False)
    fig.suptitle(title, fontweight="bold")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


def slow_and_fast(slow: pd.DataFrame, fast: pd.DataFrame) -> plt.Figure:
    """bounds_chart of lesson 07's parts 1 and 2 (runs, one per driver), titled with async / sync in each."""

    def users(runs: pd.DataFrame) -> int:
        return int(runs["users"].iloc[0])

    def ratio(runs: pd.DataFrame) -> float:
        return float(compare(runs, "rps", "async", "sync", by="driver")["ratio"].iloc[0])

    panels = {
        f"{slow['io_ms'].iloc[0]:.0f} ms per query, {users(slow)} users": slow,
        f"fast SELECT, {users(fast)} users": fast,
    }
    title = (
        f"Slow queries: async serves {ratio(slow):.2f}× sync ({held_by(slow.set_index('driver')['bottleneck'])}); "
        f"fast ones at {users(fast)} users: {ratio(fast):.2f}×"
    )
    return bounds_chart(panels, title)


def fib_sweep_title(converged: int | None, author: str, published: tuple[int, int]) -> str:
    """The sweep's finding: from which depth the two versions converge, beside where `author`'s sweep did."""
    band = f"{CONVERGED:.0%}"
    where = f"stay within {band} from fib({converged}) on" if converged else f"are not within {band} at the deepest"
    low, high = published
    return f"async / sync by fib depth: the two {where} ({author}: not within {band} at FIB {low}, within at {high})"


def fib_sweep_chart(
    sweep: pd.DataFrame, ratios: pd.Series, published: pd.Series, published_label: str, title: str
) -> plt.Figure:
    """Throughput against fib depth per driver (log scale), and async / sync by depth beside a published sweep's.

    `ratios` and `published` are async / sync throughput indexed by depth; the grey band is
    where the two versions count as converged (pools.CONVERGED).
    """
    fig, (rps_ax, ratio_ax) = plt.subplots(1, 2, figsize=(11, 4.5))
    plots.throughput(sweep, title="throughput against fib depth (the first round)", x="cpu_n", hue="driver", ax=rps_ax)
    rps_ax.set_xlabel("CPU work per request: fib(cpu_n)")  # one fib a request here, after its queries
    rps_ax.set_yscale("log")  # fib(n) grows about 1.6× per step: a log axis shows every depth
    rps_ax.set_ylim(sweep["rps"].min() / 2, sweep[["rps", "predicted_rps"]].max().max() * 2)
    rps_ax.legend(fontsize="small", loc="lower left")  # the lines fall to the right: that corner is free
    ratio_ax.plot(ratios.index, ratios.values, "o-", label="this machine")
    ratio_ax.plot(published.index, published.values, "s--", color="grey", label=published_label)
    band = f"within {CONVERGED:.0%} of each other"
    ratio_ax.axhspan(1 - CONVERGED, 1 + CONVERGED, color="grey", alpha=0.15, label=band)
    ratio_ax.set(
        title="async / sync (the ends: median of the rounds)",
        xlabel="CPU work per request: fib(cpu_n)",
        ylabel="async / sync throughput",
    )
    ratio_ax.legend(fontsize="small")
    fig.suptitle(title, fontweight="bold")
    fig.tight_layout()
    return fig

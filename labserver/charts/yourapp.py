"""Lesson 15's saturation chart: for each route's busiest run, how full each resource the model can name was."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from labserver.charts import plots
from labserver.charts.plots import axes
from labserver.theory.cores import SATURATED


def throughput(runs: pd.DataFrame, title: str) -> plt.Figure:
    """plots.throughput of each route's sweep on log axes: the users double run after run, and the routes' ceilings
    lie a hundredfold apart, so that a route bound at 20 req/s is not drawn flat under one at 1,200; the legend
    beside the plot."""
    fig = plots.throughput(runs, title, hue="route")
    ax = fig.axes[0]
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    shown = pd.to_numeric(runs["rps"], errors="coerce")
    shown = shown[shown > 0]
    if len(shown):  # plots.throughput starts its axis at 0, which a log axis cannot show
        ax.set_ylim(shown.min() / 1.5, shown.max() * 1.5)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def saturation(frame: pd.DataFrame, title: str, ax=None) -> plt.Figure:
    """One group of bars per route (`route`): the share of the thread pool borrowed, of the event loop's time busy,
    of each worker's one core and of the usable cores the server kept busy (columns `threads`, `loop`, `worker`,
    `cores`, each 0 to 1), the bound the model named before the run (`named`) under the route's name, and a line at
    SATURATED."""
    fig, ax = axes(ax)
    shares = {
        "threads": "thread pool borrowed",
        "loop": "event loop busy or held",
        "worker": "each worker's core busy",
        "cores": "usable cores busy",
    }
    tidy = frame.assign(where=frame["route"] + "\nnamed:\n" + frame["named"]).melt(
        id_vars=["where"], value_vars=list(shares), var_name="resource", value_name="share"
    )
    tidy["resource"] = tidy["resource"].map(shares)
    sns.barplot(tidy, x="where", y="share", hue="resource", ax=ax, palette="colorblind")
    ax.axhline(SATURATED, color="grey", ls=":", lw=1, label=f"saturated ({SATURATED:.0%})")
    ax.set(title=title, xlabel="route, and the bound the model named before its busiest run", ylabel="share of it")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.set_figwidth(max(fig.get_figwidth(), 3.2 * len(frame)))  # room for each route's three-line name
    return fig

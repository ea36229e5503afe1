"""Lesson 06's charts: each client strategy's throughput beside its model, and the client's own CPU."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from labserver.charts.plots import COLORS, INVALID
from labserver.labels import client_label, pattern_label

# The share of a core at which lesson 06 reads a client as its own bottleneck (its claim 5's floor).
CLIENT_BOUND = 0.8

# A client thread pool is a thread pool, and aiohttp gathers: the same colours as those server patterns.
CLIENT_COLORS = {
    "loop": "#8c8c8c",
    "threadpool": COLORS["threadpool"],
    "session": COLORS["offload"],
    "aiohttp": COLORS["gather"],
}
# The CPU chart's marker per endpoint: the plain `def` endpoint a square, the `async def` one a circle.
ENDPOINT_MARKERS = {"threadpool": "s", "sequential": "o"}


def label(frame: pd.DataFrame) -> pd.Series:
    """A short name per run for chart axes: requests in flight and requests sent (the bar's colour is the client)."""
    return frame["users"].astype(str) + " in flight\n" + frame["requests"].astype(str) + " sent"


def throughput_chart(frame: pd.DataFrame, title: str) -> plt.Figure:
    """Measured req/s per run (bars, client CPU on top), the model (black) and pure concurrency (grey), per endpoint."""
    patterns = list(dict.fromkeys(frame["pattern"]))
    fig, axes = plt.subplots(
        1, len(patterns), figsize=(7.5 * len(patterns), 5.5), sharey=True, squeeze=False, layout="constrained"
    )
    for ax, pattern in zip(axes[0], patterns, strict=True):
        runs = frame[frame["pattern"] == pattern].reset_index(drop=True)
        x = range(len(runs))
        ax.bar(x, runs["rps"], color=[CLIENT_COLORS[c] for c in runs["client"]], alpha=0.85)
        ax.scatter(x, runs["predicted_rps"], marker="_", s=900, color="black", zorder=3, label="model (with CPU)")
        ax.scatter(x, runs["concurrency_rps"], marker="_", s=900, color="grey", zorder=3, label="concurrency only")
        for i, r in runs.iterrows():  # inside the bar's top, clear of the model's marks above it
            ax.annotate(f"{r.client_cpu:.2f}", (i, r.rps), xytext=(0, -3), textcoords="offset points", ha="center",
                        va="top", fontsize="x-small", color="white", fontweight="bold")  # fmt: skip
        ax.set_xticks(list(x), label(runs), fontsize="x-small")
        ax.set(
            yscale="log",
            title=f"/{pattern}: {pattern_label(pattern)}",
            xlabel="requests in flight, requests sent (in each bar: the client's CPU, in cores)",
        )
    clients = dict.fromkeys(frame["client"])
    swatches = [Patch(color=CLIENT_COLORS[c], alpha=0.85, label=client_label(c)) for c in clients]
    handles, _ = axes[0][0].get_legend_handles_labels()
    axes[0][0].set_ylabel("throughput (req/s, log scale)")
    fig.legend(handles=[*swatches, *handles], fontsize="small", loc="outside lower center", ncols=len(swatches) + 2)
    fig.suptitle(title, fontweight="bold")
    return fig


def cpu_chart(frame: pd.DataFrame, title: str) -> plt.Figure:
    """Client CPU against the rate it drove: where it reaches one core, the client measures itself.

    The colour is the client, the marker the endpoint: a client held by the server's threads sits apart
    from the same client held by its own core.
    """
    fig, ax = plt.subplots(layout="constrained")
    named: set[str] = set()
    for (client, pattern), runs in frame.groupby(["client", "pattern"], sort=False):
        name = "_" + client if client in named else client_label(client)  # each client named once ("_": unnamed)
        named.add(client)
        ax.scatter(runs["rps"], runs["client_cpu"], s=60, color=CLIENT_COLORS[client],
                   marker=ENDPOINT_MARKERS.get(pattern, "o"), label=name)  # fmt: skip
    line = ax.axhline(CLIENT_BOUND, color=INVALID, ls="--", lw=1, label=f"client-bound ({CLIENT_BOUND:.0%} of a core)")
    ax.set(xscale="log", title=title, xlabel="measured throughput (req/s), log scale", ylabel="client CPU (cores)")
    ax.set_ylim(0, max(1.1, float(frame["client_cpu"].max()) * 1.1))
    clients = [
        Line2D([], [], ls="", marker="o", color=CLIENT_COLORS[c], label=client_label(c))
        for c in dict.fromkeys(frame["client"])
    ]
    endpoints = [
        Line2D(
            [],
            [],
            ls="",
            marker=ENDPOINT_MARKERS.get(p, "o"),
            color="black",
            fillstyle="none",
            label=f"/{p}: {pattern_label(p)}",
        )
        for p in dict.fromkeys(frame["pattern"])  # hollow and black: no client's colour
    ]
    ax.legend(handles=[*clients, *endpoints, line], fontsize="small")
    return fig

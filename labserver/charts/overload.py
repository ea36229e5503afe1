"""Lesson 08's charts: latency over the run, latency against utilisation, and what a closed loop leaves out.

They take plain frames built by the lesson (harness/rows/arrivals.py gives the figures) and use
the course's one theme (plots.py).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from labserver.charts import plots

LOOPS = {"open loop": "#0173b2", "closed loop": "#de8f05", "model": "black", "replay": "#029e73"}


def over_time(
    series: dict[str, pd.DataFrame],
    title: str,
    model: pd.DataFrame | None = None,
    replay: pd.DataFrame | None = None,
    stat: str = "p95",
    ax=None,
) -> plt.Figure:
    """Each request's latency (dots) against when it was meant to leave (open) or left (closed), with a rolling
    `stat` ("p95" or "mean").

    `series` maps a label to a frame of `t_s` and `latency_ms`; `model`, if given, a frame of
    `t_s` and `latency_ms` drawn as a dashed line (the fluid model); `replay`, the same frame of
    each request as the queue replayed on the open loop's arrivals answers it, drawn as its
    rolling mean.
    """
    if stat not in ("p95", "mean"):
        raise ValueError(f'stat must be "p95" or "mean", not {stat!r}')
    fig, ax = plots.axes(ax)
    for label, frame in series.items():
        frame = frame.sort_values("t_s")
        color = LOOPS.get(label)
        ax.scatter(frame["t_s"], frame["latency_ms"], s=3, alpha=0.25, color=color)
        window = max(5, len(frame) // 40)
        rolling = frame["latency_ms"].rolling(window, center=True, min_periods=1)
        rolling = rolling.mean() if stat == "mean" else rolling.quantile(0.95)
        ax.plot(frame["t_s"], rolling, "-", color=color, label=f"{label}: rolling {stat} ({window} requests)")
    if model is not None:
        ax.plot(model["t_s"], model["latency_ms"], "--", color=LOOPS["model"], label="model: S + (ρ − 1) t")
    if replay is not None:
        # its mean, not a p95: the claim reads the means, and the replay's only spread is its schedule's
        replay = replay.sort_values("t_s")
        ax.plot(replay["t_s"], _rolling_mean(replay), "-", lw=1.5, color=LOOPS["replay"], zorder=5,
                label="the same queue replayed on the open loop's arrivals: mean")  # fmt: skip
    ax.set(title=title, xlabel="time in the run (s)", ylabel="latency (ms)")
    ax.set_ylim(bottom=0)
    # under the axes: inside, a long legend covers the rising lines wherever it sits
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.15), ncols=2)
    return fig


def shedding(accepted: pd.DataFrame, bound_ms: float, duration_s: float, title: str, ax=None) -> plt.Figure:
    """A shedding server's accepted requests over an open-loop run (`over_time`), under the bound S (1 + ⌈q / c⌉).

    `accepted` is a frame of `t_s` and `latency_ms` (arrivals.over_time); the bound, in ms, is drawn
    over the run's `duration_s`.
    """
    bound = pd.DataFrame({"t_s": [0, duration_s], "latency_ms": [bound_ms, bound_ms]})
    fig = over_time({"open loop": accepted}, title, model=bound, ax=ax)
    ax = ax or fig.axes[0]
    ax.lines[-1].set_label("the bound S (1 + ⌈q / c⌉)")  # the model's line, drawn last
    ax.legend(fontsize="small")
    return fig


def _rolling_mean(frame: pd.DataFrame) -> pd.Series:
    """Latency's mean over 1/40 of the requests (at least 5) around each, in the frame's order (sorted by `t_s`)."""
    return frame["latency_ms"].rolling(max(5, len(frame) // 40), center=True, min_periods=1).mean()


def against_rho(measured: pd.DataFrame, model: pd.DataFrame, title: str, ax=None) -> plt.Figure:
    """Mean and p95 latency against ρ: measured (dots) beside the queueing model (lines)."""
    fig, ax = plots.axes(ax)
    for column, marker, label in (("mean_ms", "o", "mean"), ("p95_ms", "s", "p95")):
        line = ax.plot(model["rho"], model[column], "-", label=f"{label}, model (M/D/c)")[0]
        ax.plot(measured["rho"], measured[column], marker, color=line.get_color(), ms=8, label=f"{label}, measured")
    ax.set(title=title, xlabel="utilisation ρ = rate × S / c", ylabel="latency (ms)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize="small")
    return fig


def omission(table: pd.DataFrame, title: str, ax=None) -> plt.Figure:
    """p50, p95 and p99 of each way of measuring the same stalling server, on a log scale.

    `table` has one row per way (its index the label) and columns `p50_ms`, `p95_ms`, `p99_ms`.
    """
    fig, ax = plots.axes(ax)
    columns = ["p50_ms", "p95_ms", "p99_ms"]
    x = np.arange(len(columns))
    width = 0.8 / max(1, len(table))
    for k, (label, row) in enumerate(table[columns].iterrows()):
        bars = ax.bar(x + k * width, row.values, width, label=label)
        ax.bar_label(bars, labels=[f"{v:,.0f}" for v in row.values], fontsize="x-small")
    ax.set_xticks(x + width * (len(table) - 1) / 2, [c.removesuffix("_ms") for c in columns])
    ax.set(title=title, ylabel="latency (ms, log scale)", yscale="log")
    ax.legend(fontsize="small")
    return fig

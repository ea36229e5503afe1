"""A run's server over time: requests in flight, the thread pool, the process pool, the event loop's lag.

One panel each, from the run's telemetry (harness.telemetry.load), on the clock of its
history.csv (seconds since the run started): the chart sits under `plots.history`'s throughput
over time, and given the run's history it draws that on top, in the same figure.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from labserver.charts import plots
from labserver.harness.rows import telemetry
from labserver.harness.rows.telemetry import COLUMNS, EVERY_S

# panel: (y label, [(column, line label, line style)], the colour of the pattern it belongs to)
PANELS = {
    "in_flight": ("requests", [("in_flight", "in flight", "-")], "sequential"),
    "threads": (
        "threads",
        [("threads_busy", "borrowed (running a def)", "-"), ("threads_waiting", "waiting for a thread", "--")],
        "threadpool",
    ),
    "pool": (
        "pool tasks",
        [("pool_running", "running", "-"), ("pool_queued", "queued", "--")],
        "processpool",
    ),
    "loop_lag": ("loop lag (ms)", [("loop_lag_ms", "event loop's timer late by", "-")], "blocking"),
}
COUNTS = ["in_flight", "threads_busy", "threads_waiting", "pool_running", "pool_queued"]


def per_tick(frame: pd.DataFrame) -> pd.DataFrame:
    """The server as a whole every 100 ms: its workers' counts added up, and the worst worker's loop lag.

    Each worker samples on its own schedule; a sample belongs to the nearest tick of `second`. A worker's
    schedule drifts (each wake comes a little late), so two of its samples can fall on one tick: they are
    averaged before the workers are added up, or one worker would count twice.
    """
    if frame.empty:
        return pd.DataFrame(columns=["second", *COUNTS, "loop_lag_ms"])
    tick = ((frame["second"] / EVERY_S).round() * EVERY_S).round(3).rename("second")
    counts = frame[COUNTS].apply(pd.to_numeric, errors="coerce")
    per_worker = counts.groupby([tick, frame["pid"]]).mean()
    summed = per_worker.groupby(level="second").sum(min_count=1)
    lag = frame["loop_lag_ms"].groupby(tick).max()
    return summed.join(lag).reset_index()


def over_time(
    frame: pd.DataFrame,
    title: str,
    history: pd.DataFrame | None = None,
    panels: tuple[str, ...] = tuple(PANELS),
    threads: int | None = None,
    procs: int | None = None,
) -> plt.Figure:
    """A run's telemetry, one panel per name in `panels` (in_flight, threads, pool, loop_lag), time shared.

    `history` (the run's RunResult.history) adds its requests finished per second on top.
    `threads` and `procs`, the server's sizes (per worker, times its workers), draw the limit
    the borrowed threads and the running pool tasks cannot pass.
    """
    unknown = set(panels) - set(PANELS)
    if unknown or not panels:
        raise ValueError(f"unknown panels {sorted(unknown)}; choose from {', '.join(PANELS)}")
    if frame.empty or not set(COLUMNS) <= set(frame.columns):
        raise ValueError(
            "this run has no telemetry: its server was started with telemetry=False, or before the lab sampled it"
        )
    ticks = per_tick(frame)
    rows = len(panels) + (history is not None)
    fig, grid = plt.subplots(rows, 1, sharex=True, figsize=(9, 1.0 + 1.5 * rows), squeeze=False)
    axes = list(grid[:, 0])
    if history is not None:
        top = axes.pop(0)
        plots.history({"requests finished": history}, title=title, ax=top)
        top.set(xlabel="", ylabel="req/s")
        _legend_outside(top)
    else:
        axes[0].set_title(title)
    limits = {"threads": (threads, "threads"), "pool": (procs, "pool processes")}
    for ax, name in zip(axes, panels, strict=True):
        ylabel, lines, pattern = PANELS[name]
        color = plots.COLORS[pattern]
        for column, label, style in lines:
            ax.plot(ticks["second"], ticks[column], style, color=color, lw=1.5, label=label)
        limit, what = limits.get(name, (None, ""))
        if limit:
            ax.axhline(limit, color="grey", ls=":", lw=1, label=f"{limit} {what}")
        highest = float(ticks[[column for column, _, _ in lines]].max().max())
        ax.set_ylabel(ylabel)
        ax.set_ylim(0, max(1.0, highest * 1.15, (limit or 0) * 1.15))  # 1.0 first: a NaN never wins
        _legend_outside(ax)
    axes[-1].set_xlabel("time since the run started (s)")
    fig.align_ylabels()
    fig.tight_layout()
    return fig


def loop_lag(run, what: str, request_ms: float, users: int = 0) -> plt.Figure | None:
    """A run's requests in flight and its loop's lag, titled with the lag's median in requests of `request_ms`.

    With `users`, the title counts the lag in turns of the loop instead: users × `request_ms`, every
    user's request once. `run` is a RunResult; `what` names it in the title. None where no sample fell
    inside the run's window: a turn of a blocked loop that outlasts the window never wakes the sampler in it.
    """
    inside = telemetry.load(run)
    if inside.empty:
        return None
    lag_ms = inside["loop_lag_ms"].median()
    late = f"{what}: the loop's {EVERY_S * 1000:.0f} ms timer fires {lag_ms:.0f} ms late"
    turn_ms = users * request_ms
    title = (
        f"{late}: {lag_ms / turn_ms:.1f} turns of {turn_ms:.0f} ms ({users} users × {request_ms:g} ms)"
        if users
        else f"{late}, {lag_ms / request_ms:.1f} × tasks × io"
    )
    fig = over_time(inside, title, history=run.history, panels=("in_flight", "loop_lag"))
    fig.axes[0].set_xlim(left=0)  # the run from its start: replies before it belong to the warm-up
    if not (pd.to_numeric(inside["in_flight"], errors="coerce").fillna(0) > 0).any():
        fig.axes[1].annotate(
            "0 at every sample: the sampler runs only between turns,\n"
            "while the next requests wait unread in their sockets",
            (0.02, 0.55),
            xycoords="axes fraction",
            color="grey",
            fontsize="small",
        )
    return fig


def _legend_outside(ax) -> None:
    # beside the panel, not on it: a flat line at the top of a panel (40 of 40 threads) is the finding
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)

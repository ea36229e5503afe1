"""The mental model in one picture: one worker, a few requests arriving together, served four ways.

Each way is a row of timelines (a lane per thread, request or await, time in ms): who waits,
and what the waiting holds (a thread of the pool, nothing, the whole event loop). The
timelines are drawn, not measured: `timelines` computes them, and the lessons then measure
what they predict (01 threads and the loop, 02 gather, 05 blocking).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.patches import Patch

from labserver.charts import plots
from labserver.checks import positive, whole

# The four ways, in the order drawn, with what each one shows.
WAYS = {
    "def + time.sleep": "each request holds a thread of the pool while it waits",
    "async def + await asyncio.sleep": "the loop is free while they wait",
    "async def + time.sleep": "the loop is held by one request at a time",
    "asyncio.gather": "one request making {awaits}, in turn or gathered",
}
# What a lane is doing, and its colour: the colour of the pattern it belongs to (plots.COLORS).
STATES = {
    "waiting, thread held": plots.COLORS["threadpool"],
    "waiting, loop free": plots.COLORS["gather"],
    "loop running (CPU)": "#333333",
    "loop free": "#e6e6e6",
    "loop blocked": plots.COLORS["blocking"],
    "queued for the loop": "#bdbdbd",
}
COLUMNS = ["way", "lane", "start_ms", "end_ms", "state", "note"]
LOOP = "event loop"
CPU_SHARE = 0.03  # the loop's slice of CPU at each end of the waits, as a share of io_ms: thin, but seen


def timelines(io_ms: float = 100, requests: int = 3) -> pd.DataFrame:
    """Each way's lanes, one row per bar: way, lane, start_ms, end_ms, state, and a note written on the bar.

    `requests` arrive together at 0 ms and each waits `io_ms` (in `asyncio.gather`'s way, one
    request makes `requests` awaits of `io_ms`). Only a wait is timed: the loop's slices of CPU
    are drawn inside the waits, too short to move when a request is done.
    """
    positive("io_ms", io_ms, " ms")
    whole("requests", requests, 1, 6)  # more lanes, and the blocked loop's notes, no longer read at a glance
    def_sleep, async_await, async_sleep, gather = WAYS
    rows = [
        *_free_loop(def_sleep, io_ms),
        *[(def_sleep, f"thread {k}: request {k}", 0, io_ms, "waiting, thread held", "") for k in _each(requests)],
        *_free_loop(async_await, io_ms),
        *[(async_await, f"request {k}", 0, io_ms, "waiting, loop free", "") for k in _each(requests)],
        *_blocked_loop(async_sleep, io_ms, requests),
        *[
            (gather, f"in turn: await {k}", (k - 1) * io_ms, k * io_ms, "waiting, loop free", "")
            for k in _each(requests)
        ],
        *[(gather, f"gathered: await {k}", 0, io_ms, "waiting, loop free", "") for k in _each(requests)],
    ]
    return pd.DataFrame(rows, columns=COLUMNS)


def _each(requests: int) -> range:
    return range(1, requests + 1)


def _free_loop(way: str, io_ms: float) -> list[tuple]:
    """The loop starts the requests, is free while they wait, and sends their replies."""
    cpu = io_ms * CPU_SHARE
    return [
        (way, LOOP, 0, cpu, "loop running (CPU)", ""),
        (way, LOOP, cpu, io_ms - cpu, "loop free", "free"),
        (way, LOOP, io_ms - cpu, io_ms, "loop running (CPU)", ""),
    ]


def _blocked_loop(way: str, io_ms: float, requests: int) -> list[tuple]:
    """The loop held by each request in turn, the others queued behind it."""
    rows = [(way, LOOP, (k - 1) * io_ms, k * io_ms, "loop blocked", f"request {k}") for k in _each(requests)]
    for k in _each(requests):
        if k > 1:
            rows.append((way, f"request {k}", 0, (k - 1) * io_ms, "queued for the loop", ""))
        rows.append((way, f"request {k}", (k - 1) * io_ms, k * io_ms, "loop blocked", ""))
    return rows


def four_ways(io_ms: float = 100, requests: int = 3) -> plt.Figure:
    """`timelines` drawn: one panel per way, a lane per row, time on a shared x axis, the last request's end marked."""
    frame = timelines(io_ms, requests)
    lanes = frame.groupby("way", sort=False)["lane"].nunique()
    fig, axes = plt.subplots(
        len(WAYS), 1, sharex=True, figsize=(9, 1.6 + 0.36 * lanes.sum() + 0.55 * len(WAYS)),
        height_ratios=list(lanes), layout="constrained",
    )  # fmt: skip
    for ax, (way, bars) in zip(axes, frame.groupby("way", sort=False), strict=True):
        _panel(ax, way, bars, requests)
    axes[-1].set_xlabel("time since the requests arrived (ms)")
    axes[-1].set_xlim(0, (requests + 0.9) * io_ms)  # room for the words beside the last one's end
    handles = [Patch(color=color, label=state) for state, color in STATES.items()]
    fig.legend(handles=handles, loc="outside lower center", ncol=3, fontsize="small", frameon=False)
    arriving = f"{requests} requests arriving together" if requests > 1 else "1 request"
    fig.suptitle(f"One worker, {arriving}, each waiting {io_ms:g} ms", fontweight="bold")
    return fig


def _panel(ax, way: str, bars: pd.DataFrame, requests: int) -> None:
    lanes = list(dict.fromkeys(bars["lane"]))
    for bar in bars.itertuples():
        y = lanes.index(bar.lane)
        ax.broken_barh([(bar.start_ms, bar.end_ms - bar.start_ms)], (y - 0.35, 0.7), color=STATES[bar.state])
        if bar.note:
            ax.text((bar.start_ms + bar.end_ms) / 2, y, bar.note, ha="center", va="center", fontsize="small")
    ax.set_yticks(range(len(lanes)), lanes, fontsize="small")
    ax.set_ylim(len(lanes) - 0.4, -0.6)  # the first lane on top
    ax.grid(axis="y", visible=False)
    turns = [lane for lane in lanes if lane.startswith("in turn")]
    if turns:  # gather's way: the request written two ways, one above the other
        ax.axhline(len(turns) - 0.5, color="grey", lw=1)
    awaits = f"{requests} awaits" if requests > 1 else "1 await"
    ax.set_title(f"{way}: {WAYS[way].format(awaits=awaits)}", loc="left", fontsize="medium")
    for end, beside, label in _ends(bars, lanes):
        ax.axvline(end, color="black", ls=":", lw=1)
        ax.annotate(label, (end, beside), xytext=(5, 0), textcoords="offset points", va="center", fontsize="small")


def _ends(bars: pd.DataFrame, lanes: list[str]) -> list[tuple[float, float, str]]:
    """Where a panel's last request is done (in gather's way, each version of it), beside which lanes, in words."""
    groups = {"": bars}
    if bars["lane"].str.startswith("in turn").any():
        groups = {f"{name}: ": bars[bars["lane"].str.startswith(name)] for name in ("in turn", "gathered")}
    ends = []
    for name, group in groups.items():
        rows = [lanes.index(lane) for lane in group["lane"].unique()]
        end = group["end_ms"].max()
        ends.append((end, sum(rows) / len(rows), f"{name or 'last request '}done at {end:g} ms"))
    return ends

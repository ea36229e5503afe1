"""The course's charts: one seaborn theme, measured beside predicted, titles that state the finding.

Every function takes the tidy frame of runs (see load.sweep) and a title written by the
lesson from its own data, and returns the matplotlib Figure. In a batch run (papermill,
LAB_FIGURES_DIR set) `save` also writes it as PNG.
"""

from __future__ import annotations

import os
import re
import secrets
import textwrap

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from labserver import config
from labserver.labels import pattern_label
from labserver.theory.cores import SATURATED

# One colour per pattern across every lesson, so "gather" is always the same green.
COLORS = dict(
    zip(
        ["sequential", "gather", "threadpool", "processpool", "blocking", "dependent", "mixed", "wrapped"],
        sns.color_palette("colorblind", 8),
        strict=True,
    )
)
COLORS["offload"] = sns.color_palette("colorblind", 10)[9]  # light blue: the ninth, yellow, fades on white
COLORS["tothread"] = sns.color_palette("dark", 10)[9]  # lesson 05: offload's light blue, deeper (another pool)
COLORS["hashed"] = sns.color_palette("dark", 10)[8]  # olive: the ninth again, dark enough to read on white
COLORS["interpreterpool"] = sns.color_palette("dark", 10)[3]  # dark red: the process pool's red, deeper
# lesson 11: what holds a thread in the thread pool's green, deeper; what holds nothing in async's blue, deeper
LESSON_11 = (("syncdep", "asyncdep"), ("streamsync", "streamasync"), ("bgsync", "bgasync"), ("pooled", "pooledinside"))
LESSON_12 = (("callnew", "callreused"),)
for held, free in LESSON_11 + LESSON_12:
    COLORS[held], COLORS[free] = sns.color_palette("dark", 10)[2], sns.color_palette("dark", 10)[0]
# lesson 12's fan-out: gather's orange, and a deeper one where a semaphore bounds it
COLORS["fanout"], COLORS["fanoutbounded"] = COLORS["gather"], sns.color_palette("dark", 10)[1]
COLORS["watchful"] = sns.color_palette("dark", 10)[0]  # lesson 13: sequential's blue, deeper
# lesson 13's part 2: gather's orange; with a timeout a lighter one, its fix (a TaskGroup) a deeper one
COLORS["gathertimeout"] = sns.color_palette("pastel", 10)[1]
COLORS["taskgroup"] = sns.color_palette("dark", 10)[1]
# lesson 07's database routes (demo/routes.SHOP): the sync driver, in a `def` endpoint, in the thread pool's green,
# the async one in async's blue; the simulation, CPU work after the queries, in deeper ones
ROUTE_COLORS = {
    "sync_select": COLORS["threadpool"],
    "async_select": COLORS["sequential"],
    "sync_simulation": sns.color_palette("dark", 10)[2],
    "async_simulation": sns.color_palette("dark", 10)[0],
}
INVALID = "#d62728"


def theme() -> None:
    sns.set_theme(style="whitegrid", context="notebook", rc={"figure.figsize": (8, 4.5), "axes.titleweight": "bold"})


theme()


def pattern_color(pattern: str):
    """A pattern's colour, or a database route's; grey for anything else."""
    return COLORS.get(pattern) or ROUTE_COLORS.get(pattern, "grey")


def _name(key, hue: str) -> str:
    """A legend's name for `key`, a value of column `hue`: a pattern as a learner reads it, others as they are."""
    return pattern_label(key) if hue == "pattern" else str(key)


def tick_label(pattern: str) -> str:
    """A pattern as a learner reads it, on two lines where it is long: eight fit side by side on an axis."""
    return textwrap.fill(pattern_label(pattern), 16)


def named(frame: pd.DataFrame, column: str = "pattern") -> pd.DataFrame:
    """A copy of `frame` to draw, its `column` of patterns as `tick_label`s: seaborn labels what it is given."""
    return frame.assign(**{column: frame[column].map(tick_label)})


# COLORS by tick_label, for a chart drawn from a `named` frame
LABEL_COLORS = {tick_label(pattern): color for pattern, color in COLORS.items()}


def _mark_invalid(ax, frame: pd.DataFrame, x: str, y: str) -> None:
    bad = frame[~frame["valid"].astype(bool)]
    if not bad.empty:
        ax.scatter(bad[x], bad[y], marker="X", s=140, color=INVALID, zorder=5, label="invalid run (see problems)")


LEGEND_ROOM = 1.35  # a throughput chart's top, as a multiple of its highest point: the legend's rows fit above it


def predicted_column(frame: pd.DataFrame) -> tuple[str, str]:
    """The model's throughput to draw, and its words: the prediction made before each run where the runs have one
    (harness/load/pricing.py), else the one priced after them."""
    before = frame.get("predicted_before_rps")
    if before is not None and pd.to_numeric(before, errors="coerce").notna().all():
        return "predicted_before_rps", "predicted before"
    return "predicted_rps", "predicted"


def throughput(
    frame: pd.DataFrame,
    title: str,
    x: str = "users",
    hue: str = "pattern",
    ax=None,
    *,
    curve: pd.DataFrame | None = None,
) -> plt.Figure:
    """Measured req/s (solid, dots) beside the prediction made before the runs (dashed), one colour per `hue`; and
    where `curve` is given (the model's `predicted_rps` at many `x`, model.predict_frame), the model's line through
    every `x` between the runs' (thin), where a bound takes over between two of them (the thread pool's, say)."""
    fig, ax = axes(ax)
    model, words = predicted_column(frame)
    for key, group in frame.sort_values(x).groupby(hue, sort=False):
        color = pattern_color(key) if hue == "pattern" else None
        name = _name(key, hue)
        line = ax.plot(group[x], group["rps"], "o-", color=color, label=f"{name} measured")[0]
        # a tick at each prediction: a run alone in its group (the busiest, say) has no line to draw, only its tick;
        # beside the model's line through every x, ticks only: a dashed line from run to run would read as a second
        # model where it only joins two points
        style = "_" if curve is not None else "_--"
        ax.plot(group[x], group[model], style, ms=12, color=line.get_color(), alpha=0.8, label=f"{name} {words}")
        if curve is not None:
            every = curve[curve[hue] == key].sort_values(x)
            ax.plot(every[x], every["predicted_rps"], "-", lw=1, color=line.get_color(), alpha=0.45,
                    label=f"{name} model, every {'user count' if x == 'users' else _label(x)}")  # fmt: skip
    _mark_invalid(ax, frame, x, "rps")
    ax.set(title=title, xlabel=_label(x), ylabel="throughput (req/s)")
    # room above the highest point for the legend, which would otherwise sit on a line that climbs to the corner
    shown = pd.to_numeric(pd.concat([frame["rps"], frame[model]]), errors="coerce").max()
    ax.set_ylim(0, shown * LEGEND_ROOM if pd.notna(shown) and shown > 0 else None)
    ax.legend(fontsize="small", ncol=2, loc="upper left")
    return fig


def latency(frame: pd.DataFrame, title: str, x: str = "users", hue: str = "pattern", ax=None) -> plt.Figure:
    """p50 (dotted) and p95 (solid) latency, with the model's mean latency (dashed)."""
    fig, ax = axes(ax)
    for key, group in frame.sort_values(x).groupby(hue, sort=False):
        color = pattern_color(key) if hue == "pattern" else None
        name = _name(key, hue)
        line = ax.plot(group[x], group["p95_ms"], "o-", color=color, label=f"{name} p95")[0]
        ax.plot(group[x], group["p50_ms"], ":", color=line.get_color(), label=f"{name} p50")
        ax.plot(
            group[x], group["predicted_ms"], "--", color=line.get_color(), alpha=0.6, label=f"{name} predicted mean"
        )
    _mark_invalid(ax, frame, x, "p95_ms")
    ax.set(title=title, xlabel=_label(x), ylabel="latency (ms)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize="small", ncol=2)
    return fig


def history(histories: dict[str, pd.DataFrame], title: str, ax=None) -> plt.Figure:
    """Requests finished per second over each run: a flat line is a steady state (a pattern shows as its label)."""
    fig, ax = axes(ax)
    for label, h in histories.items():
        ax.plot(h["second"], h["rps"], "o-", ms=3, label=pattern_label(label))
    ax.set(title=title, xlabel="time since the run started (s)", ylabel="requests finished (req/s)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize="small")
    return fig


CROWDED = 6  # pairs of bars past which a chart widens, so that their names do not run into each other
INCHES_PER_PAIR = 1.35


def bars(
    frame: pd.DataFrame,
    title: str,
    x: str = "pattern",
    ax=None,
    values: tuple[str, str] | None = None,
    ylabel: str = "throughput (req/s)",
    *,
    predicted: str = "predicted",
    mark: tuple[str, str] | None = None,
) -> plt.Figure:
    """Measured and predicted `values` (default: req/s, and the prediction made before each run where the runs have
    one) side by side, one pair of bars per `x`; `predicted` names the second of `values` in the legend (say, a
    model priced after the run with what it measured). `mark`: (a column of `frame`, its name in the legend), drawn
    as a black tick across each pair, say what the learner predicted against before any run."""
    fig, ax = axes(ax)
    model, words = predicted_column(frame) if values is None else (values[1], predicted)
    measured, modelled = values or ("rps", model)
    tidy = frame.melt(id_vars=[x], value_vars=[measured, modelled], var_name="what", value_name=ylabel)
    tidy["what"] = tidy["what"].map({measured: "measured", modelled: words})
    if x == "pattern":
        tidy = named(tidy)
    sns.barplot(tidy, x=x, y=ylabel, hue="what", ax=ax, palette=["#4c72b0", "#c4c4c4"])
    ax.set(title=title, xlabel=_label(x), ylabel=ylabel)
    if mark is not None:  # each pair sits at its x's place in the frame's order, as seaborn lays them out
        ticks = frame.drop_duplicates(x)[mark[0]].to_numpy()
        ax.scatter(range(len(ticks)), ticks, marker="_", s=900, linewidths=2, color="black", label=mark[1], zorder=3)
        ax.legend()
    for bar in ax.containers[0] if ax.containers else []:  # a measured bar of 0 (a run that stalled) says so
        if bar.get_height() == 0:
            ax.annotate("0", (bar.get_x() + bar.get_width() / 2, 0), ha="center", va="bottom", fontsize="small")
    pairs = tidy[x].nunique()
    if pairs > CROWDED and len(fig.axes) == 1:  # a chart of its own: room for each pair's two-line name
        fig.set_figwidth(max(fig.get_figwidth(), INCHES_PER_PAIR * pairs))
        ax.tick_params(axis="x", labelsize="small")
    return fig


def axes(ax):
    """A new figure and its axes, or the figure of the axes given (a chart drawn into a lesson's grid)."""
    if ax is None:
        fig, ax = plt.subplots()
        return fig, ax
    return ax.figure, ax


def _label(column: str) -> str:
    return {
        "pattern": "endpoint",
        "users": "concurrent users",
        "cpu_n": "CPU work per sub-task: fib(cpu_n)",
        "workers": "uvicorn workers",
        "tasks": "sub-tasks per request",
        "io_ms": "I/O wait per sub-task (ms)",
    }.get(column, column)


def save(fig: plt.Figure, lesson: str, name: str) -> None:
    """Write `fig` as PNG under $LAB_FIGURES_DIR/<lesson>/<name>.png when a batch asked for figures.

    It returns nothing on purpose: a lesson's chart cell ends with `plots.save(...)`, and Jupyter
    shows a cell's last value, so a returned path would print above every chart.
    """
    root = config.FIGURES_DIR.read()
    if not root:
        return
    path = root / lesson / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    # Two batches may save the same figure at once: each writes its own temporary file and
    # renames it into place in one step, so a reader only ever sees a whole PNG.
    tmp = path.with_name(f".{path.stem}-{os.getpid()}-{secrets.token_hex(4)}.png")
    try:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def per_process(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with `locust_cpu` per Locust process: the 90% a run is judged by holds for each process, not their
    sum (harness/rows/collect.py)."""
    if "processes" not in frame:
        return frame
    processes = pd.to_numeric(frame["processes"], errors="coerce").fillna(1).clip(lower=1)
    return frame.assign(locust_cpu=frame["locust_cpu"] / processes)


def generator_cpu(frame: pd.DataFrame, title: str, hue: str = "client", ax=None) -> plt.Figure:
    """The load generator's CPU against the rate it drove, per Locust process: where it nears one core, it measures
    itself."""
    fig, ax = axes(ax)
    frame = per_process(frame)
    sns.lineplot(frame, x="rps", y="locust_cpu", hue=hue, marker="o", ax=ax)
    ax.axhline(SATURATED, color=INVALID, ls="--", lw=1, label=f"saturated ({SATURATED:.0%} of a core)")
    ax.set(title=title, xlabel="measured throughput (req/s)", ylabel="Locust CPU, per process (cores)")
    ax.set_ylim(0, max(1.05, float(frame["locust_cpu"].max()) * 1.1))
    ax.legend(fontsize="small")
    return fig


def throughput_bounds(
    frame: pd.DataFrame, title: str, little: pd.DataFrame, ceiling_rps: float, hue: str = "client"
) -> plt.Figure:
    """`throughput`, with Little's law alone (grey) over `little`'s runs and one worker's ceiling 1 / D (dotted)."""
    fig = throughput(frame, title=title, hue=hue)
    ax = fig.axes[0]
    ax.plot(little["users"], little["little_rps"], color="grey", lw=1, label="Little's law alone")
    ax.axhline(ceiling_rps, color="black", ls=":", lw=1, label="one worker's ceiling, 1 / D")
    # room above the ceiling and every point drawn (a prediction made before a run can sit far above it), and the
    # legend beside the plot: the busiest runs sit at its top
    model, _ = predicted_column(frame)
    top = max(ceiling_rps, float(pd.to_numeric(pd.concat([frame["rps"], frame[model]]), errors="coerce").max()))
    ax.set_ylim(0, top * 1.15)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def process_cpu(frame: pd.DataFrame, title: str, ax=None) -> plt.Figure:
    """The server's and Locust's CPU against the rate they sustained, one line style per client: who runs out first.

    Where the runs measured how long the worker waited for a CPU (`worker_waited`), a third line
    adds it to the worker's busy time: a worker that line puts near 1 had work all the time.
    """
    fig, ax = axes(ax)
    frame = per_process(frame)
    names = {"server_cpu": "server (1 worker)", "locust_cpu": "Locust, per process"}
    if "worker_waited" in frame and frame["worker_waited"].notna().any():
        frame = frame.assign(server_ready=frame["server_cpu"] + frame["worker_waited"])
        names = {"server_ready": "server, busy or waiting for a CPU", **names}
    cpu = frame.melt(id_vars=["client", "rps"], value_vars=list(names), var_name="process", value_name="cores")
    cpu["process"] = cpu["process"].map(names)
    sns.lineplot(cpu, x="rps", y="cores", hue="process", style="client", marker="o", ax=ax)
    ax.axhline(SATURATED, color=INVALID, ls="--", lw=1, label=f"saturated ({SATURATED:.0%} of a core)")
    ax.set(title=title, xlabel="measured throughput (req/s)", ylabel="CPU (cores)")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the plot: the lines fill it
    return fig


def mark(fig: plt.Figure, x: float, label: str) -> plt.Figure:
    """A dotted grey line at `x` on `fig`'s chart, labelled at its foot: a limit such as the thread pool's size."""
    ax = fig.axes[0]
    ax.axvline(x, color="grey", ls=":", lw=1)
    ax.annotate(label, (x, 0), xytext=(4, 4), textcoords="offset points", color="grey")
    return fig


def ratio_bars(frame: pd.DataFrame, title: str, hue: str = "source", ax=None) -> plt.Figure:
    """measured / predicted req/s per pattern, one bar per `hue` (an article's table, ours); 1 is the model."""
    fig, ax = axes(ax)
    sns.barplot(named(frame), x="pattern", y="ratio", hue=hue, ax=ax, palette=["#c4c4c4", "#4c72b0"])
    ax.axhline(1, color="black", lw=1, ls="--")
    ax.set(title=title, xlabel="endpoint", ylabel="measured / predicted throughput", ylim=(0, 1.2))
    ax.legend(loc="lower right", fontsize="small")
    return fig


# The latencies `latency_bars` shows, and their names on the chart.
LATENCIES = {"p50_ms": "p50 measured", "p95_ms": "p95 measured", "predicted_ms": "mean predicted (users / rps)"}


def latency_bars(frame: pd.DataFrame, title: str, ax=None) -> plt.Figure:
    """Measured p50 and p95 beside the model's mean latency, one group of bars per pattern."""
    fig, ax = axes(ax)
    tidy = frame.rename(columns=LATENCIES).melt(
        id_vars=["pattern"], value_vars=list(LATENCIES.values()), var_name="what"
    )
    sns.barplot(named(tidy), x="pattern", y="value", hue="what", ax=ax, palette=["#4c72b0", "#dd8452", "#c4c4c4"])
    ax.set(title=title, xlabel="endpoint", ylabel="latency (ms)")
    ax.legend(title=None, fontsize="small")
    return fig

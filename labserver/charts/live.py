"""The live view of a measurement cell: each run's throughput and mean latency so far beside its prediction.

The harness hands a feed.Snapshot about once a second to the cell's `View`; the View draws
it as one PNG and replaces the cell's last frame with it through an IPython display handle
(JupyterLab, and papermill, whose executed copy keeps the last frame). No ipywidgets: a PNG
needs no state in the browser. The cell's one Figure is a plain matplotlib Figure outside
pyplot, so the notebook's inline backend never shows it a second time, and it is dropped
with the cell's View. labserver/__init__.py registers `for_this_cell` with the harness.
"""

from __future__ import annotations

import contextlib
import math
import time

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from labserver.charts import plots
from labserver.charts.png import Encoder
from labserver.harness.plans.feed import RunSoFar, Snapshot
from labserver.labels import pattern_label

SIZE = (9.0, 3.4)  # inches, at a screen's resolution: a frame is small to draw and to send
DPI = 80
PREDICTED = "black"
PROGRESS = "#4c72b0"
NICE = (1, 1.5, 2, 3, 4, 5, 6, 8, 10)  # y-axis tops: the axes change only when a bar outgrows them
# Past this many runs, a run's load and work under its bar overprint its neighbours': the ticks number the runs,
# and the colours name their patterns
MANY_RUNS = 12
LOAD = "users (or arrivals a second, for an open loop)"
NUMBERED = "runs, in the order they ran"


class Chart:
    """One Figure for a cell, redrawn for every frame: throughput and mean latency per run beside the prediction.

    Bars are the measured figures (the run in progress paler), black ticks the predictions, and a
    bar on top shows the current run's seconds. Text is most of what a frame costs to draw, so
    every text (the caption too) changes only when a run starts or a bar outgrows its axis: then
    the whole Figure is drawn, in the course's theme, and kept as a background; every other
    frame pastes that background back and draws the bars, ticks and progress on it
    (matplotlib's blitting), with no text and no theme to set: their styles are set already.
    The bars of the runs before the last come with a second background, drawn again only when
    they change, and the PNG compresses anew only the rows that changed (charts/png.py).
    """

    def __init__(self):
        with themed():
            self.fig = Figure(figsize=SIZE, dpi=DPI)
            self.canvas = FigureCanvasAgg(self.fig)
            top = self.fig.add_axes((0.085, 0.88, 0.895, 0.035))
            top.set_axis_off()
            top.set_xlim(0, 1)
            top.barh([0], [1.0], color="#e5e5e5")
            self.progress = top.barh([0], [0.0], color=PROGRESS, animated=True)[0]
            self.caption = top.set_title("", fontsize="medium", loc="left")
            grid = {"top": 0.74, "bottom": 0.17, "left": 0.085, "right": 0.98, "wspace": 0.2}
            self.axes = self.fig.subplots(1, 2, gridspec_kw=grid)
            for ax, label in zip(self.axes, ("throughput (req/s)", "mean latency (ms)"), strict=True):
                ax.set(ylabel=label, xlabel=LOAD)
                ax.yaxis.set_major_locator(MaxNLocator(4))
            self.bars: list[list] = [[], []]  # per axis, one Rectangle per run
            self.ticks = [self._marks(ax, "_", 400, PREDICTED, 3) for ax in self.axes]  # the predictions
            self.invalid = [self._marks(ax, "X", 70, plots.INVALID, 4) for ax in self.axes]
        self.layout: tuple | None = None  # what the background shows: runs' labels, patterns, caption, y-axis tops
        self.outgrown: tuple[bool, ...] = (False, False)  # whether a bar outgrew each axis in the last frame
        self.legend = None  # the patterns', over both charts
        self.background = None  # the Figure without its animated artists: text, axes, the runs' labels
        self.settled: tuple | None = None  # what the second background adds: the bars of the runs before the last
        self.settled_background = None
        self.encoder = Encoder()  # compresses anew only the rows a frame changed

    @staticmethod
    def _marks(ax, marker: str, size: float, color, zorder: int):
        return ax.scatter([], [], marker=marker, s=size, linewidths=2.5, color=color, zorder=zorder, animated=True)

    def png(self, runs: tuple[RunSoFar, ...], caption: str, progress: float) -> bytes:
        """The frame as PNG bytes."""
        measured = [[_shown(r.rps) for r in runs], [_shown(r.mean_ms) for r in runs]]
        predicted = [[r.predicted_rps for r in runs], [r.predicted_ms for r in runs]]
        wanted = tuple(
            _nice(max([*m, *(v for v in p if math.isfinite(v))])) for m, p in zip(measured, predicted, strict=True)
        )
        # a run's work under its load where the runs' works differ: runs of one pattern and load are told apart
        works = len({r.work for r in runs}) > 1
        ticks = tuple(f"{r.load}\n{r.work}" if works else r.load for r in runs)
        if len(runs) > MANY_RUNS:  # every `step`th numbered, as many as fit under the bars
            step = math.ceil(len(runs) / MANY_RUNS)
            ticks = tuple(str(i) if (i - 1) % step == 0 else "" for i in range(1, len(runs) + 1))
        text = (ticks, tuple(dict.fromkeys(r.pattern for r in runs)), caption)
        fresh = self.layout is None or text != self.layout[:3] or all(r.final for r in runs)
        layout = (*text, self._tops(wanted, fresh))
        changed = layout != self.layout
        with themed() if changed else contextlib.nullcontext():
            if changed:
                self._arrange(runs, layout)
            self.progress.set_width(min(max(progress, 0.0), 1.0))
            settled: list = []  # the bars of the runs before the last, in the second background
            animated: list = [self.progress]
            for k, ax in enumerate(self.axes):
                bars = self._bars(k, ax, runs, measured[k])
                settled += bars[:-1]
                animated.append(bars[-1])
                self.ticks[k].set_offsets(_points(range(len(runs)), predicted[k]))
                bad = [i for i, r in enumerate(runs) if not r.valid]
                self.invalid[k].set_offsets(_points(bad, [measured[k][i] for i in bad]))
                animated += [self.ticks[k], self.invalid[k]] if bad else [self.ticks[k]]
            if changed:
                self.canvas.draw()  # everything but the animated artists
                self.background = self.canvas.copy_from_bbox(self.fig.bbox)
                self.layout, self.settled = layout, None
            self._settle(settled, (*(tuple(m[:-1]) for m in measured), tuple(r.pattern for r in runs[:-1])))
            for artist in animated:
                self.fig.draw_artist(artist)
        return self.encoder.png(np.asarray(self.canvas.buffer_rgba()))

    def _settle(self, bars: list, settled: tuple) -> None:
        """Paste the background with the bars of the runs before the last, drawing them only when they changed.

        Those runs are over: their bars change for a frame or two after a run ends (its last
        replies come in), then stay. Bars do not overlap each other: drawn before the last run's
        bar and the ticks, as a whole drawing orders them, they give the same pixels. `settled` is
        what they show: their heights on each axis and their patterns (their colours).
        """
        if settled == self.settled:
            self.canvas.restore_region(self.settled_background)
            return
        self.canvas.restore_region(self.background)
        for bar in bars:
            self.fig.draw_artist(bar)
        self.settled_background = self.canvas.copy_from_bbox(self.fig.bbox)
        self.settled = settled

    def _tops(self, wanted: tuple, fresh: bool) -> tuple:
        """The y-axes' tops: `wanted` where the Figure is drawn anew anyway (a run starts, the last frame).

        Else the kept ones, each grown only once its bars outgrew it two frames in a row, and never
        shrunk: a run's first estimate may overshoot for a frame, and a change of axis costs a whole
        drawing inside the run's measurement window.
        """
        if fresh:
            self.outgrown = (False,) * len(wanted)
            return wanted
        assert self.layout is not None  # fresh while there is none
        kept = self.layout[3]
        tops = tuple(w if w > k and o else k for w, k, o in zip(wanted, kept, self.outgrown, strict=True))
        self.outgrown = tuple(w > k for w, k in zip(wanted, kept, strict=True))
        return tops

    def _arrange(self, runs: tuple[RunSoFar, ...], layout: tuple) -> None:
        labels, patterns, caption, tops = layout
        self.caption.set_text(caption)
        for ax, top in zip(self.axes, tops, strict=True):
            ax.set_xticks(range(len(runs)), labels, fontsize="x-small" if len(runs) > MANY_RUNS else "small")
            ax.set_xlabel(NUMBERED if len(runs) > MANY_RUNS else LOAD)
            ax.set_xlim(-0.6, max(len(runs), 4) - 0.4)
            ax.set_ylim(0, top)
        if layout[1] != (self.layout or (None, None))[1]:
            handles = [Patch(color=plots.pattern_color(p), label=p) for p in patterns]
            tick = Line2D([], [], color=PREDICTED, marker="_", ms=12, mew=2.5, ls="")
            if self.legend is not None:
                self.legend.remove()
            # one legend over both charts: the patterns' labels are too long for the left one's width
            self.legend = self.fig.legend(
                handles=[*handles, tick],
                labels=[*map(pattern_label, patterns), "predicted"],
                loc="lower left",
                bbox_to_anchor=(0.075, 0.745),
                ncol=4,
                fontsize="x-small",
                frameon=False,
                handlelength=1.2,
                columnspacing=1.0,
            )

    def _bars(self, k: int, ax, runs: tuple[RunSoFar, ...], heights: list[float]) -> list:
        bars = self.bars[k]
        while len(bars) < len(runs):
            bars.append(ax.bar(len(bars), 0.0, width=0.7, animated=True)[0])
        for i, (bar, run, height) in enumerate(zip(bars, runs, heights, strict=False)):
            bar.set_height(height)
            bar.set_facecolor(plots.pattern_color(run.pattern))
            bar.set_alpha(1.0 if run.final or i < len(runs) - 1 else 0.5)  # the run in progress: paler
        return bars[: len(runs)]


def _shown(value: float) -> float:
    return value if math.isfinite(value) else 0.0


def _nice(value: float) -> float:
    """The y-axis top for bars up to `value`: a round number at least 10% above it."""
    if not value > 0:
        return 1.0
    scale = 10 ** math.floor(math.log10(value * 1.1))
    return next(n * scale for n in NICE if n * scale >= value * 1.1)


def _points(x, y) -> np.ndarray:
    """(x, y) pairs for a scatter, the unknown ones left out."""
    pairs = [(a, b) for a, b in zip(x, y, strict=True) if math.isfinite(b)]
    return np.array(pairs, dtype=float).reshape(-1, 2)


def caption(snapshot: Snapshot, before: int = 0) -> str:
    """Where the plan is: run k of n, its pattern, users and seconds planned (or what it waits for)."""
    current = snapshot.runs[-1]
    k, n = before + snapshot.stage + 1, before + snapshot.stages
    if snapshot.done:
        return f"{k} run{'s' if k > 1 else ''} measured: bars as measured, ticks as predicted"
    if not snapshot.started and snapshot.waiting:
        return f"run {k} of {n}: {current.pattern}, {_load(current)}: waiting for Locust workers, {snapshot.waiting}"
    if not snapshot.started:
        return f"run {k} of {n}: {current.pattern}, {_load(current)}: Locust is starting"
    # the same all through the run (the bar above the charts shows its seconds): a frame draws no text
    return f"run {k} of {n}: {current.pattern}, {_load(current)}, {snapshot.planned_s:g} s"


def png(snapshot: Snapshot, before: tuple[RunSoFar, ...] = (), chart: Chart | None = None) -> bytes:
    """One frame as PNG bytes: the runs of plans measured before in this cell, then this plan's."""
    progress = 1.0 if snapshot.done else snapshot.elapsed_s / snapshot.planned_s if snapshot.planned_s else 0.0
    return (chart or Chart()).png(before + snapshot.runs, caption(snapshot, len(before)), progress)


@contextlib.contextmanager
def themed():
    """The course's one theme (plots.theme) while a frame is made; the notebook's own settings stay as they are."""
    with matplotlib.rc_context():
        plots.theme()
        yield


class View:
    """A cell's live chart; every plan the cell runs draws into it (run_plans, one plan per run with processes > 1).

    `show=False` draws without displaying (the bench times frames with it); `render_s` holds
    the CPU time each frame took to draw (this thread's: what the view takes from the machine).
    """

    def __init__(self, show: bool = True):
        self.show = show
        self.handle = None
        self.before: tuple[RunSoFar, ...] = ()  # the runs of this cell's plans that are over
        self.render_s: list[float] = []
        self.chart = Chart()  # kept for the cell: each frame redraws it

    def __call__(self, snapshot: Snapshot) -> None:
        started = time.thread_time()
        frame = png(snapshot, self.before, self.chart)
        self.render_s.append(time.thread_time() - started)
        if snapshot.done:
            self.before += snapshot.runs
        if self.show:
            from IPython.display import Image, display  # a shown View runs in a notebook only

            if self.handle is None:
                self.handle = display(Image(data=frame, format="png"), display_id=True)
            else:
                self.handle.update(Image(data=frame, format="png"))


_cell: dict = {}  # {execution count: View}: the running cell's view only


def for_this_cell() -> View:
    """The View of the notebook cell running now, made on its first plan."""
    from IPython import get_ipython  # called only in a notebook (harness/plans/notebook.py)

    shell = get_ipython()
    count = getattr(shell, "execution_count", None)
    if count not in _cell:
        _cell.clear()
        _cell[count] = View()
    return _cell[count]


def _load(run: RunSoFar) -> str:
    """A run's load in a caption: its users, or an open loop's arrivals."""
    return f"{run.rate:g} arrivals a second" if run.rate else f"{run.users} users"

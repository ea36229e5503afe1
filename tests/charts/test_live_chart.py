"""The live view's frames: PNG bytes drawn without a display, one Figure per cell, each frame replacing the last."""

import io
import math
import sys
import types
from dataclasses import replace

import numpy as np
import PIL.Image
import pytest
from matplotlib.text import Text

from labserver.charts import live
from labserver.harness.plans.feed import RunSoFar, Snapshot

PNG = b"\x89PNG\r\n\x1a\n"


def runs(n: int = 3) -> tuple[RunSoFar, ...]:
    done = tuple(RunSoFar("gather", 10 * (i + 1), 100.0 * (i + 1), 110.0, 98.0 * (i + 1), 105.0, 500) for i in range(n))
    return (*done[:-1], RunSoFar("threadpool", 80, math.nan, math.nan, 400.0, 200.0))  # the current run, no reply yet


def test_a_frame_is_png_bytes_drawn_without_a_display(monkeypatch):
    monkeypatch.setitem(sys.modules, "IPython", None)  # any import of IPython now fails
    frame = live.png(Snapshot(runs(), 2, 3, 1.5, 5))
    assert frame.startswith(PNG) and len(frame) > 1000
    view = live.View(show=False)  # the bench's: drawn, never shown
    view(Snapshot(runs(), 2, 3, 1.5, 5))
    assert view.handle is None and len(view.render_s) == 1


def test_a_frame_drawn_on_the_kept_background_equals_a_whole_drawing():
    view = live.View(show=False)
    snapshots = [
        Snapshot((*runs()[:-1], replace(runs()[-1], rps=300.0 + i, mean_ms=150.0)), 2, 3, i, 5) for i in range(4)
    ]
    for s in snapshots:
        frame = live.png(s, chart=view.chart)
    assert frame == live.png(snapshots[-1])  # a fresh Chart draws everything
    assert frame != live.png(snapshots[0])


def test_an_invalid_run_is_marked_in_a_frame_drawn_on_the_kept_background():
    chart = live.Chart()
    live.png(Snapshot(runs(), 2, 3, 1.5, 5), chart=chart)
    bad = (replace(runs()[0], valid=False), *runs()[1:])
    frame = live.png(Snapshot(bad, 2, 3, 2.5, 5), chart=chart)
    assert frame == live.png(Snapshot(bad, 2, 3, 2.5, 5))  # as a fresh Chart draws it
    assert frame != live.png(Snapshot(runs(), 2, 3, 2.5, 5))


def test_the_runs_before_the_last_are_drawn_again_only_when_their_bars_change(monkeypatch):
    chart = live.Chart()
    drawn = []
    draw_artist = chart.fig.draw_artist
    monkeypatch.setattr(chart.fig, "draw_artist", lambda a: drawn.append(a) or draw_artist(a))

    def frame(late: float, now: float) -> bytes:
        before = replace(runs()[1], rps=200.0 + late)  # the run just over: its last replies come in
        current = replace(runs()[-1], rps=300.0 + now, mean_ms=150.0)
        frame = live.png(Snapshot((runs()[0], before, current), 2, 3, 1 + now, 5), chart=chart)
        assert frame == live.png(Snapshot((runs()[0], before, current), 2, 3, 1 + now, 5))  # as a whole drawing
        return frame

    frame(0.0, 0.0)
    drawn.clear()
    frame(0.0, 1.0)  # the runs before are as they were: their bars come with the background
    assert len(drawn) == 1 + 2 * 2 and {a for a in drawn if a in chart.bars[0]} == {chart.bars[0][2]}
    drawn.clear()
    frame(5.0, 2.0)  # a late reply moved the run before's bar: those bars are drawn again, once
    assert {a for a in drawn if a in chart.bars[0]} == set(chart.bars[0])
    drawn.clear()
    frame(5.0, 3.0)
    assert {a for a in drawn if a in chart.bars[0]} == {chart.bars[0][2]}


def test_a_frame_is_the_canvas_s_pixels():
    chart = live.Chart()
    frame = live.png(Snapshot(runs(), 2, 3, 1.5, 5), chart=chart)
    image = PIL.Image.open(io.BytesIO(frame))
    assert image.mode == "RGBA" and image.size == chart.canvas.get_width_height()
    assert np.array_equal(np.asarray(image), np.asarray(chart.canvas.buffer_rgba()))


def test_a_frame_within_a_run_draws_no_text(monkeypatch):
    chart = live.Chart()
    live.png(Snapshot(runs(), 2, 3, 0.5, 5), chart=chart)  # the run's first frame: everything, text too
    drawn = []
    draw = Text.draw
    monkeypatch.setattr(Text, "draw", lambda self, renderer: drawn.append(self.get_text()) or draw(self, renderer))
    for i in range(1, 5):
        done = (*runs()[:-1], replace(runs()[-1], rps=300.0 + i, mean_ms=150.0, requests=100 * i))
        live.png(Snapshot(done, 2, 3, i, 5), chart=chart)
    assert drawn == []
    live.png(Snapshot(runs(4), 3, 4, 0.0, 5), chart=chart)  # the next run: its caption, its x tick
    assert "run 4 of 4: threadpool, 80 users, 5 s" in drawn


def test_within_a_run_the_axes_only_grow_and_the_last_frame_fits_the_runs(monkeypatch):
    chart = live.Chart()
    drawings = []
    draw = chart.canvas.draw
    monkeypatch.setattr(chart.canvas, "draw", lambda: drawings.append(chart.layout) or draw())
    current = RunSoFar("sequential", 400, math.nan, math.nan, 4000.0, 105.0)

    def frames(*estimates: float) -> None:
        for rps in estimates:
            live.png(Snapshot((replace(current, rps=rps, mean_ms=110.0),), 0, 1, 1, 5), chart=chart)

    frames(math.nan, 6100.0, 3900.0)  # the first estimate overshoots, for one frame
    assert len(drawings) == 1 and chart.axes[0].get_ylim()[1] == 5000
    frames(7000.0, 7100.0)  # a bar that outgrew its axis two frames in a row grows it
    assert len(drawings) == 2 and chart.axes[0].get_ylim()[1] == 8000
    frames(3950.0)  # and the axis never shrinks while the run measures
    assert len(drawings) == 2 and chart.axes[0].get_ylim()[1] == 8000
    done = replace(current, rps=3900.0, mean_ms=110.0, final=True)
    live.png(Snapshot((done,), 0, 1, 5, 5, done=True), chart=chart)
    assert chart.axes[0].get_ylim()[1] == 5000  # as a fresh chart of the saved run draws it


def test_frames_do_not_pile_up_artists():
    chart = live.Chart()
    for i in range(30):
        live.png(Snapshot(runs(), 2, 3, i / 10, 5), chart=chart)
    assert [len(ax.patches) for ax in chart.axes] == [3, 3]  # one bar per run, reused frame after frame
    assert [len(ax.collections) for ax in chart.axes] == [2, 2]  # the predictions' ticks and the invalid marks


def test_the_caption_says_where_the_plan_is():
    assert live.caption(Snapshot(runs(), 2, 3, 1.5, 5)) == "run 3 of 3: threadpool, 80 users, 5 s"
    assert live.caption(Snapshot(runs(), 2, 3, 4.5, 5)) == live.caption(Snapshot(runs(), 2, 3, 1.5, 5))
    assert "Locust is starting" in live.caption(Snapshot(runs(1), 0, 4, 0.0, 5, started=False))
    assert live.caption(Snapshot(runs(), 2, 3, 5, 5, done=True), before=2).startswith("5 runs measured")


def test_nice_tops_leave_room_above_the_bars():
    assert [live._nice(v) for v in (0.0, 0.9, 95.0, 1000.0, 4100.0)] == [1.0, 1.0, 150.0, 1500.0, 5000.0]


class FakeDisplay:
    def __init__(self):
        self.shown, self.updates = [], []

    def display(self, obj, display_id=False):
        assert display_id is True  # a handle, so that later frames replace this one
        self.shown.append(obj)
        return types.SimpleNamespace(update=self.updates.append)


@pytest.fixture
def kernel(monkeypatch):
    """A stand-in IPython: its display records what it shows; `count` is the running cell."""
    shown = FakeDisplay()
    shell = types.SimpleNamespace(execution_count=1, kernel=object())
    display = types.SimpleNamespace(Image=lambda data, format: data, display=shown.display)
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell, display=display))
    monkeypatch.setitem(sys.modules, "IPython.display", display)
    monkeypatch.setattr(live, "_cell", {})
    return shell, shown


def test_each_frame_replaces_the_last_and_a_cell_keeps_its_plans_in_one_chart(kernel):
    shell, shown = kernel
    view = live.for_this_cell()
    for i in range(3):
        view(Snapshot(runs(2), 1, 2, i, 5))
    view(Snapshot(runs(2), 1, 2, 5, 5, done=True))
    assert len(shown.shown) == 1 and len(shown.updates) == 3 and shown.updates[-1].startswith(PNG)
    again = live.for_this_cell()  # the cell's next plan (run_plans, or processes > 1)
    assert again is view and len(again.before) == 2
    again(Snapshot(runs(1), 0, 1, 1, 5))
    assert len(shown.shown) == 1 and len(shown.updates) == 4  # the same chart, with the plan before in it
    assert len(view.render_s) == 5 and all(s >= 0 for s in view.render_s)
    shell.execution_count = 2  # the next cell gets its own chart
    other = live.for_this_cell()
    assert other is not view and other.before == ()
    other(Snapshot(runs(1), 0, 1, 1, 5))
    assert len(shown.shown) == 2


def test_the_legend_names_each_pattern_as_a_learner_reads_it():
    chart = live.Chart()
    live.png(Snapshot(runs(), 2, 3, 1.5, 5), chart=chart)
    names = [t.get_text() for t in chart.legend.get_texts()]
    assert names == ["async def + gather", "def (thread pool)", "predicted"]
    live.png(Snapshot(runs(1), 0, 3, 1.5, 5), chart=chart)
    assert len(chart.fig.legends) == 1  # a new set of patterns replaces the legend


def test_runs_of_one_load_are_told_apart_by_their_work():
    chart = live.Chart()
    alike = tuple(RunSoFar("sequential", 2, 50.0, 40.0, 50.0, 40.0, 100, work=w) for w in ("fib(25)", "no work"))
    live.png(Snapshot(alike, 1, 2, 1.5, 5), chart=chart)
    assert [t.get_text() for t in chart.axes[0].get_xticklabels()] == ["2\nfib(25)", "2\nno work"]
    live.png(Snapshot(runs(), 2, 3, 1.5, 5), chart=chart)  # one work (none said): the loads alone
    assert [t.get_text() for t in chart.axes[0].get_xticklabels()] == ["10", "20", "80"]
    assert chart.axes[0].get_xlabel() == live.LOAD


def test_many_runs_are_numbered_and_the_axis_says_so():
    chart = live.Chart()
    many = tuple(
        RunSoFar("sequential", 20, 50.0, 40.0, 50.0, 40.0, 100, work=("fib(25)", "fib(25), 50 ms")[i % 2])
        for i in range(live.MANY_RUNS + 1)
    )
    live.png(Snapshot(many, live.MANY_RUNS, live.MANY_RUNS + 1, 1.5, 5), chart=chart)
    labels = [t.get_text() for t in chart.axes[1].get_xticklabels()]
    assert labels == [str(i) if i % 2 else "" for i in range(1, live.MANY_RUNS + 2)]  # 1, 3, 5 …: they fit
    assert chart.axes[1].get_xlabel() == live.NUMBERED
    live.png(Snapshot(many[:2], 1, 2, 1.5, 5), chart=chart)  # the next cell's few runs: loads again
    assert chart.axes[1].get_xlabel() == live.LOAD

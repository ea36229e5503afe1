"""A run's telemetry over time: one panel per gauge, the workers added up, under the run's throughput."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from labserver.charts import telemetry as chart
from labserver.charts.plots import COLORS
from labserver.harness.rows.telemetry import COLUMNS


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def frame(workers=(101, 202), seconds=20):
    """Each worker sampling every 100 ms, a few ms apart from the others; worker k borrows k + 1 threads."""
    rows = []
    for k, pid in enumerate(workers):
        for i in range(seconds):
            second = i / 10 + 0.003 * k
            rows.append(
                {
                    "second": second,
                    "t": 1000 + second,
                    "pid": pid,
                    "in_flight": 10 + k,
                    "threads_busy": k + 1,
                    "threads_waiting": 4,
                    "pool_running": 0,
                    "pool_queued": 0,
                    "loop_lag_ms": 2.0 + 30 * k,
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)  # the database's gauges empty, as in a server without one


def test_per_tick_adds_the_workers_up_and_keeps_the_worst_lag():
    ticks = chart.per_tick(frame())
    assert len(ticks) == 20
    assert ticks["threads_busy"].eq(3).all()  # 1 + 2
    assert ticks["threads_waiting"].eq(8).all()
    assert ticks["in_flight"].eq(21).all()
    assert ticks["loop_lag_ms"].eq(32.0).all()  # the worse worker's, not a sum
    assert ticks["second"].tolist() == pytest.approx([i / 10 for i in range(20)])


def test_two_samples_of_one_worker_on_one_tick_count_it_once():
    # a worker's wakes drift late: at 4.36 s and 4.4495 s both round to the 4.4 s tick
    drifted = frame(workers=(101,), seconds=2)
    drifted["second"] = [4.36, 4.4495]
    ticks = chart.per_tick(drifted)
    assert ticks["second"].tolist() == pytest.approx([4.4])
    assert ticks["threads_busy"].tolist() == [1] and ticks["in_flight"].tolist() == [10]  # not 2 and 20


def test_the_chart_draws_one_panel_per_gauge_under_the_throughput():
    history = pd.DataFrame({"second": [0, 1], "rps": [380.0, 400.0], "p95_ms": [200.0, 210.0], "failures": [0, 0]})
    fig = chart.over_time(frame(), title="40 threads borrowed, 40 requests waiting", history=history, threads=40)
    top, in_flight, threads, pool, lag = fig.axes
    assert top.get_title() == "40 threads borrowed, 40 requests waiting"
    assert list(top.lines[0].get_ydata()) == [380.0, 400.0]
    borrowed, waiting, limit = threads.lines
    assert list(borrowed.get_ydata()) == [3] * 20 and list(waiting.get_ydata()) == [8] * 20
    assert list(limit.get_ydata()) == [40, 40] and threads.get_ylim()[1] > 40  # the pool's size, in view
    assert borrowed.get_color() == pytest.approx(COLORS["threadpool"])
    assert lag.get_ylabel() == "loop lag (ms)" and max(lag.lines[0].get_ydata()) == 32.0
    assert lag.get_xlabel() == "time since the run started (s)"
    assert all(ax.get_shared_x_axes().joined(lag, ax) for ax in (top, in_flight, threads, pool))


def test_a_lesson_may_show_only_some_panels():
    fig = chart.over_time(frame(workers=(7,)), title="the loop", panels=("loop_lag",))
    (only,) = fig.axes
    assert only.get_title() == "the loop" and only.get_ylabel() == "loop lag (ms)"


def test_a_run_without_telemetry_or_an_unknown_panel_says_so():
    with pytest.raises(ValueError, match="no telemetry"):
        chart.over_time(pd.DataFrame(columns=COLUMNS), title="x")
    with pytest.raises(ValueError, match="unknown panels"):
        chart.over_time(frame(), title="x", panels=("gc",))


def test_loop_lag_titles_the_median_lag_in_requests_and_says_none_without_a_sample(monkeypatch):
    history = pd.DataFrame({"second": [0, 1], "rps": [10.0, 10.0], "p95_ms": [500.0, 500.0], "failures": [0, 0]})
    run = type("Run", (), {"history": history})()
    monkeypatch.setattr(chart.telemetry, "load", lambda _: frame(workers=(7,)))
    fig = chart.loop_lag(run, "blocking at 5 users", request_ms=0.5)
    assert fig is not None
    top, _, lag = fig.axes
    assert top.get_title() == "blocking at 5 users: the loop's 100 ms timer fires 2 ms late, 4.0 × tasks × io"
    assert lag.get_ylabel() == "loop lag (ms)"
    monkeypatch.setattr(chart.telemetry, "load", lambda _: pd.DataFrame(columns=COLUMNS))
    assert chart.loop_lag(run, "blocking at 5 users", request_ms=100) is None

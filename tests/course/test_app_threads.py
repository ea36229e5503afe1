"""Lesson 11's readings: the plan's predictions, the ratios its claims read, the threads borrowed, the chart's names."""

import pandas as pd
import pytest

from labserver.lessons import app_threads


@pytest.fixture
def plan():
    return app_threads.plan(
        users=100, io_ms=200, more_threads=80, chunks=4, chunk_ms=50, connections=20, duration_s=3, cores=2
    ).plan


def test_each_run_is_predicted_on_its_own_server(plan):
    table = app_threads.predicted(plan, cores=2)
    parts = ["the thread limit", "a dependency", "a stream", "a background task", "a pooled session"]
    assert list(table["part"]) == [part for part in parts for _ in range(2)]
    by = table.set_index(["pattern", "threads"])["predicted_rps"]
    assert by["threadpool", 40] == pytest.approx(40 / 0.2)  # threads / io
    assert by["threadpool", 80] == pytest.approx(80 / 0.2)
    assert by["syncdep", 40] == pytest.approx(40 / 0.2)  # the dependency's wait holds a thread
    assert by["asyncdep", 40] == pytest.approx(100 / 0.2)  # users / io
    assert by["streamsync", 40] == pytest.approx(40 / (4 * 0.05))  # threads / (chunks × chunk_ms)
    assert by["streamasync", 40] == pytest.approx(100 / (4 * 0.05))
    assert list(table["pattern"].iloc[6:8]) == ["bgasync", "bgsync"]  # the def task second: its queue outlives it
    assert by["bgsync", 40] == pytest.approx(40 / (2 * 0.2))  # the task borrows a thread for a second wait
    assert by["bgasync", 40] == pytest.approx(40 / 0.2)
    pooled = table[table["part"] == "a pooled session"]
    assert list(pooled["pattern"]) == ["pooledinside", "pooled"]  # the session from a dependency last: it stalls
    assert list(pooled["connections"]) == [20, 20]
    assert (
        list(pooled["predicted_rps"]) == [pytest.approx(20 / 0.2)] * 2
    )  # connections / io: the model misses the stall


def test_a_setting_that_cannot_show_the_threads_is_refused():
    with pytest.raises(ValueError, match="more_threads must be above the default 40"):
        app_threads.plan(
            users=100, io_ms=200, more_threads=40, chunks=4, chunk_ms=50, connections=20, duration_s=3, cores=2
        )
    with pytest.raises(ValueError, match=r"users must be above more_threads \(80\)"):
        app_threads.plan(
            users=80, io_ms=200, more_threads=80, chunks=4, chunk_ms=50, connections=20, duration_s=3, cores=2
        )


RUNS = pd.DataFrame(
    [
        dict(part="the thread limit", pattern="threadpool", threads=40, rps=198.0, predicted_rps=200.0, run_id="a"),
        dict(part="the thread limit", pattern="threadpool", threads=80, rps=390.0, predicted_rps=400.0, run_id="b"),
        dict(part="a dependency", pattern="syncdep", threads=40, rps=199.0, predicted_rps=200.0, run_id="c"),
    ]
)


def test_ratio_reads_measured_and_predicted_alike():
    got = app_threads.ratio(RUNS, {"threads": 80}, {"threads": 40, "pattern": "threadpool"})
    assert (got.measured, got.predicted) == (pytest.approx(390 / 198), pytest.approx(2.0))


def test_the_chart_names_the_limit_in_part_1_and_the_code_elsewhere():
    assert list(app_threads.named(RUNS)["endpoint"]) == ["def, 40\nthreads", "def, 80\nthreads", "def\ndependency"]


def test_borrowed_is_the_median_of_the_threads_a_run_kept(monkeypatch):
    samples = pd.DataFrame({"second": [0.1, 0.2, 0.3], "pid": 1, "threads_busy": [38, 40, 40], "loop_lag_ms": 0.1})
    for column in ("in_flight", "threads_waiting", "pool_running", "pool_queued"):
        samples[column] = 0
    monkeypatch.setattr(app_threads.telemetry, "load", lambda run_id: samples)
    assert app_threads.borrowed(RUNS, "syncdep") == 40
    monkeypatch.setattr(app_threads.telemetry, "load", lambda run_id: samples.iloc[0:0])
    assert pd.isna(app_threads.borrowed(RUNS, "syncdep"))

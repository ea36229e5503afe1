"""Lessons 03 and 04's charts: cores kept busy, fib with and without I/O, the CPU's takeover, workers."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from labserver.charts import cores as core_charts


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _fib_runs() -> pd.DataFrame:
    return pd.DataFrame(
        {"pattern": ["threadpool", "sequential", "processpool"] * 2, "rps": [50.0, 55.0, 100.0, 52.0, 54.0, 98.0],
         "server_cpu": [1.0, 0.98, 1.9, 0.99, 1.0, 1.95]}
    )  # fmt: skip


def test_server_cpu_marks_one_core_and_the_machine():
    fig = core_charts.server_cpu(_fib_runs(), title="the GIL", cores=2)
    ax = fig.axes[0]
    assert ax.get_title() == "the GIL"
    assert ax.get_ylabel() == "server CPU (cores)"
    assert ax.get_ylim() == pytest.approx((0, 2.3))
    assert [t.get_text() for t in ax.texts] == ["one core", "2 usable cores"]
    assert [round(p.get_height(), 3) for p in ax.patches[:3]] == [0.995, 0.99, 1.925]  # the mean per pattern
    ticks = [t.get_text().replace("\n", " ") for t in ax.get_xticklabels()]
    assert ticks == ["def (thread pool)", "async def + await", "async def + process pool"]


def test_endpoints_one_bar_per_pattern_and_endpoint():
    runs = pd.concat([_fib_runs().assign(endpoint="fib"), _fib_runs().assign(endpoint="fib + 50 ms sleep", rps=10.0)])
    fig = core_charts.endpoints(runs, title="I/O hides behind the CPU")
    ax = fig.axes[0]
    assert (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) == (
        "I/O hides behind the CPU",
        "pattern",
        "throughput (req/s)",
    )
    heights = [round(p.get_height(), 3) for p in ax.patches if p.get_height() > 0]
    assert heights == [51.0, 54.5, 99.0, 10.0, 10.0, 10.0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["fib", "fib + 50 ms sleep"]


def _curve() -> pd.DataFrame:
    return pd.DataFrame(
        {"pattern": "sequential", "cpu_n": [15, 18, 23, 25], "rps": [390.0, 380.0, 190.0, 80.0],
         "predicted_rps": [400.0, 395.0, 200.0, 78.0], "valid": True}
    )  # fmt: skip


def test_crossing_draws_the_model_knee():
    fig = core_charts.crossing(_curve(), title="the CPU takes over", knee_n=21.4)
    ax = fig.axes[0]
    assert ax.get_title() == "the CPU takes over"
    assert ax.get_xlabel().startswith("CPU work")
    knee = [line for line in ax.lines if line.get_linestyle() == ":"]
    assert [float(line.get_xdata()[0]) for line in knee] == [21.4]
    assert [t.get_text() for t in ax.texts] == ["model: CPU takes over\nnear fib(21.4)"]


def test_crossing_without_a_knee_draws_the_curve_alone():
    fig = core_charts.crossing(_curve(), title="no crossing", knee_n=math.nan)
    ax = fig.axes[0]
    assert not ax.texts
    assert len(ax.lines) == 2  # measured and predicted


def _worker_runs() -> pd.DataFrame:
    rows = [
        {"workload": "I/O-bound", "workers": w, "rps": 990.0, "predicted_rps": 1000.0, "valid": True} for w in (1, 2, 3)
    ]
    rows += [
        {"workload": "CPU-bound", "workers": w, "rps": r, "predicted_rps": p, "valid": w != 3}
        for w, r, p in [(1, 55.0, 60.0), (2, 105.0, 120.0), (3, 104.0, 120.0), (1, 57.0, 60.0)]
    ]
    return pd.DataFrame(rows)


def test_workers_one_panel_per_workload_with_the_cores_marked():
    fig = core_charts.workers(_worker_runs(), title="2 workers serve 1.9× one", cores=2)
    assert fig._suptitle.get_text() == "2 workers serve 1.9× one"
    assert [ax.get_title() for ax in fig.axes] == ["CPU-bound", "I/O-bound"]
    cpu = fig.axes[0]
    assert list(cpu.get_xticks()) == [1, 2, 3]
    assert cpu.get_xlabel() == "uvicorn workers"
    measured = cpu.lines[0]
    assert list(measured.get_ydata()) == pytest.approx([56.0, 105.0, 104.0])  # the mean of 1 worker's two runs
    assert [t.get_text() for t in cpu.texts] == ["2 cores"]
    assert any(line.get_linestyle() == ":" and line.get_xdata()[0] == 2 for line in cpu.lines)
    assert len(cpu.collections) == 1  # the 3-worker run is marked invalid


def test_workers_draws_the_prediction_made_before_the_runs_where_they_have_one():
    runs = _worker_runs().assign(predicted_before_rps=lambda f: f["predicted_rps"] * 0.9)
    cpu = core_charts.workers(runs, title="t", cores=2).axes[0]
    labels = cpu.get_legend_handles_labels()[1]
    assert any("predicted before" in label for label in labels)
    assert any(list(line.get_ydata()) == pytest.approx([54.0, 108.0, 108.0]) for line in cpu.lines)

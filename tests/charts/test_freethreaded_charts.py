"""Lesson 10's charts: each build's endpoints, measured beside predicted, and the cores they kept busy."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from labserver.charts import freethreaded as ft_charts

BUILDS = ["3.11, GIL build", "3.13t, GIL on", "3.13t, GIL off"]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _runs() -> pd.DataFrame:
    # The GIL build runs no `sequential` and the GIL-on build no process pool: bars are left out.
    rows = [
        (BUILDS[0], "threadpool", 130.0, 131.0, 1.0), (BUILDS[0], "processpool", 236.0, 240.0, 1.85),
        (BUILDS[1], "threadpool", 75.0, 76.0, 1.0), (BUILDS[1], "sequential", 72.0, 73.0, 1.0),
        (BUILDS[2], "threadpool", 158.0, 160.0, 1.87), (BUILDS[2], "sequential", 83.0, 82.0, 1.0),
        (BUILDS[2], "processpool", 136.0, 145.0, 1.8),
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=["build", "pattern", "rps", "predicted_rps", "server_cpu"])


def test_builds_draws_one_bar_per_pattern_each_with_its_own_prediction():
    fig = ft_charts.builds(_runs(), title="no GIL", cores=2)
    left = fig.axes[0]
    assert fig.get_suptitle() == "no GIL"
    measured = sorted(round(p.get_height()) for p in left.patches if p.get_height() > 0)
    assert measured == [72, 75, 83, 130, 136, 158, 236]
    pairs = {}  # measured bar → the prediction drawn across it
    for coll in left.collections:
        for (x0, y), (x1, _) in coll.get_segments():
            bar = next(p for p in left.patches if p.get_height() > 0 and p.get_x() == pytest.approx(x0))
            assert x1 == pytest.approx(x0 + bar.get_width())
            pairs[round(bar.get_height())] = round(float(y))
    assert pairs == {130: 131, 236: 240, 75: 76, 72: 73, 158: 160, 83: 82, 136: 145}
    assert [t.get_text() for t in left.get_legend().get_texts()] == ["predicted"]


def test_builds_marks_one_core_and_the_machine_and_names_the_endpoints():
    fig = ft_charts.builds(_runs(), title="no GIL", cores=2)
    right = fig.axes[1]
    assert [t.get_text() for t in right.texts] == ["one core", "2 usable cores"]
    assert right.get_ylabel() == "server CPU (cores)"
    names = [t.get_text().replace("\n", " ") for t in right.get_legend().get_texts()]
    assert names == ["def (thread pool)", "async def + process pool", "async def + await"]
    assert [t.get_text() for t in right.get_xticklabels()] == BUILDS


def test_threads_reads_from_the_fewest_threads_to_the_most():
    runs = pd.DataFrame(
        {"threads": [20, 2, 1], "pattern": "threadpool", "rps": [162.0, 154.0, 84.0], "predicted_rps": [160.0] * 3}
    )  # in the order they ran: the most threads first
    fig = ft_charts.threads(runs, "threads")
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["1", "2", "20"]

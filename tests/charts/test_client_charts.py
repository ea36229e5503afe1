"""Lesson 06's charts name each client by how it sends its requests, never by a word an endpoint also uses."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from labserver.charts import clients as client_charts


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _runs() -> pd.DataFrame:
    return pd.DataFrame(
        {"pattern": "threadpool", "client": ["loop", "threadpool", "aiohttp"], "users": [1, 10, 10],
         "requests": 100, "rps": [9.0, 80.0, 95.0], "predicted_rps": [10.0, 90.0, 99.0],
         "concurrency_rps": [10.0, 100.0, 100.0], "client_cpu": [0.05, 0.4, 0.2]}
    )  # fmt: skip


def test_the_cpu_chart_names_each_client_by_its_label():
    ax = client_charts.cpu_chart(_runs(), title="t").axes[0]
    names = ax.get_legend_handles_labels()[1]
    assert names[:3] == ["requests, one at a time", "requests in a client thread pool", "aiohttp"]


def test_the_throughput_chart_names_the_endpoint_and_the_clients():
    ax = client_charts.throughput_chart(_runs(), title="t").axes[0]
    assert ax.get_title() == "/threadpool: def (thread pool)"
    ticks = [t.get_text().replace("\n", " ") for t in ax.get_xticklabels()]
    assert ticks[1] == "10 in flight 100 sent"  # short: the bar's colour names the client, in the legend
    names = [n.get_text() for n in ax.figure.legends[0].get_texts()]
    assert names[:3] == ["requests, one at a time", "requests in a client thread pool", "aiohttp"]

"""Lesson 05's charts: answers per user, most answered first, and a timeout run's seconds, answered and timed out."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from labserver.charts.plots import COLORS
from labserver.charts.timeouts import answers_chart, timeouts_chart


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_answers_chart_ranks_the_users_most_answered_first():
    per_user = pd.DataFrame({"user": [0, 1, 2, 3], "answered": [0, 7, 2, 7], "failed": [1, 0, 0, 0]})
    fig = answers_chart(per_user, title="In 4 s the blocked worker answered 3 of 4 users")
    ax = fig.axes[0]
    assert [bar.get_height() for bar in ax.patches] == [7, 7, 2, 0]
    assert ax.patches[0].get_facecolor()[:3] == pytest.approx(COLORS["blocking"])
    assert ax.get_title() == "In 4 s the blocked worker answered 3 of 4 users"
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("Locust user (most answered first)", "requests answered in the run")
    assert per_user["answered"].tolist() == [0, 7, 2, 7]  # the caller's frame is left as it was


def test_timeouts_chart_stacks_the_timeouts_on_the_answers_below_the_cap():
    history = pd.DataFrame({"second": [0, 1, 2], "rps": [10, 12, 30], "failures": [0, 2, 20]})
    fig = timeouts_chart(history, cap=10.0, title="2 s timeout: 41% failed")
    ax = fig.axes[0]
    answered, timed_out = ax.containers
    assert [b.get_height() for b in answered] == [10, 10, 10]
    assert [b.get_height() for b in timed_out] == [0, 2, 20]
    assert [b.get_y() for b in timed_out] == [10, 10, 10]  # on top of the answers
    assert [b.get_x() + b.get_width() / 2 for b in answered] == pytest.approx([0.5, 1.5, 2.5])
    assert ax.lines[0].get_ydata()[0] == 10.0
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["the worker's cap: 10 req/s", "answered (measured)", "timed out (measured)"]
    assert ax.get_title() == "2 s timeout: 41% failed"
    assert ax.get_ylabel() == "requests ending per second"

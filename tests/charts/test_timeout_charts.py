"""Lesson 05's charts: answers per user, most answered first, and a timeout run's seconds, answered and timed out."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from labserver.charts.plots import COLORS
from labserver.charts.timeouts import (
    answers_chart,
    blocked_chart,
    fair_share_chart,
    timeout_run_chart,
    timeouts_chart,
)
from labserver.harness.rows.results import RunResult
from labserver.theory.timeouts import outlook


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


def test_blocked_chart_says_blocking_s_range_against_the_cap_and_async_s_factor():
    runs = pd.DataFrame(
        {"pattern": ["blocking", "blocking", "sequential"], "users": [5, 50, 50], "rps": [9.6, 9.9, 495.0],
         "predicted_rps": [10.0, 10.0, 500.0]}
    )  # fmt: skip
    fig = blocked_chart(runs, cap=10.0)
    ax = fig.axes[0]
    assert ax.get_title() == "blocking serves 9.6–9.9 req/s at 5–50 users (cap 10); async serves 50×"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["blocking · 5 users", "blocking · 50 users",
                                                            "sequential · 50 users"]  # fmt: skip
    assert "run" not in runs  # the caller's frame is left as it was


def test_fair_share_chart_counts_the_users_answered_beside_a_fair_queue_s():
    per_user = pd.DataFrame({"user": [0, 1, 2, 3], "answered": [0, 7, 2, 7], "failed": [0, 0, 0, 0]})
    fig = fair_share_chart(per_user, fair_users=4, duration_s=4)
    title = "In 4 s the blocked worker answered 3 of 4 users\n(a fair queue would have answered 4)"
    assert fig.axes[0].get_title() == title


def test_timeout_run_chart_sets_the_failures_beside_the_floor_and_the_fair_queue():
    history = pd.DataFrame({"second": [0, 1, 2], "rps": [10, 12, 30], "failures": [0, 2, 20]})
    run = RunResult({"failure_rate": 0.7}, history, Path("run"), {})
    expected = outlook(50, 0.1, timeout_s=2.0, duration_s=5)
    fig = timeout_run_chart(run, expected, cap=10.0)
    fair = f"{expected.fair.failure_rate:.0%}"
    assert fig.axes[0].get_title() == f"2 s timeout: 70% failed (floor 60%, fair queue {fair})"
    assert [b.get_height() for b in fig.axes[0].containers[1]] == [0, 2, 20]

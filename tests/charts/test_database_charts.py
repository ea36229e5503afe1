"""Lesson 07's charts: each driver's bound, and the fib sweep beside a published one."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from labserver.charts.database import bounds_chart, fib_sweep_chart, fib_sweep_title, held_by, slow_and_fast


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def runs(bottlenecks=("thread pool", "connection pool")) -> pd.DataFrame:
    return pd.DataFrame(
        {"driver": ["sync", "async"], "rps": [180.0, 190.0], "predicted_rps": [200.0, 200.0],
         "bottleneck": list(bottlenecks)}
    )  # fmt: skip


def sweep() -> pd.DataFrame:
    return pd.DataFrame(
        {"driver": ["sync", "async"] * 2, "cpu_n": [15, 15, 28, 28], "rps": [400.0, 600.0, 8.0, 9.0],
         "predicted_rps": [450.0, 650.0, 9.0, 9.5], "valid": [True] * 4}
    )  # fmt: skip


def test_held_by_says_one_bound_once_and_two_apart():
    assert held_by({"sync": "connection pool", "async": "connection pool"}) == "both held by the connection pool"
    assert (
        held_by(pd.Series({"sync": "thread pool", "async": "CPU"})) == "sync held by the thread pool, async by the CPU"
    )


def test_bounds_chart_has_a_panel_per_part_with_each_bottleneck_under_its_bars():
    fig = bounds_chart({"100 ms per query, 80 users": runs(), "fast SELECT, 1000 users": runs(("CPU", "CPU"))}, "T")
    left, right = fig.axes
    assert (left.get_title(), right.get_title()) == ("100 ms per query, 80 users", "fast SELECT, 1000 users")
    assert [t.get_text() for t in left.texts] == ["thread pool", "connection pool"]
    assert [t.get_text() for t in right.texts] == ["CPU", "CPU"]
    assert fig._suptitle.get_text() == "T"
    assert fig.get_size_inches() == pytest.approx((11, 4.5))


def test_fib_sweep_chart_puts_ours_beside_the_published_ratios():
    ratios = pd.Series({15: 1.5, 28: 1.125})
    published = pd.Series({15: 1.45, 30: 1.14})
    fig = fib_sweep_chart(sweep(), ratios, published, "seed 001 (k6, 32 VUs)", "the edge shrinks")
    rps_ax, ratio_ax = fig.axes
    assert rps_ax.get_yscale() == "log"
    assert rps_ax.get_ylim() == pytest.approx((4.0, 1300.0))  # half the slowest, twice the fastest or predicted
    labels = [t.get_text() for t in ratio_ax.get_legend().get_texts()]
    assert labels == ["this machine", "seed 001 (k6, 32 VUs)", "within 15% of each other"]
    assert list(ratio_ax.lines[1].get_xdata()) == [15, 30]
    band = ratio_ax.patches[0]  # where the two count as converged
    assert (band.get_y(), band.get_y() + band.get_height()) == pytest.approx((0.85, 1.15))
    assert ratio_ax.get_title() == "async / sync (the ends: median of the rounds)"  # claim 5 reads the same
    assert fig._suptitle.get_text() == "the edge shrinks"


def test_slow_and_fast_titles_each_part_by_its_users_and_async_over_sync():
    slow = runs(("connection pool", "connection pool")).assign(users=80, io_ms=100)
    fast = runs(("CPU", "CPU")).assign(users=1000, io_ms=0, rps=[500.0, 800.0])
    fig = slow_and_fast(slow, fast)
    assert [ax.get_title() for ax in fig.axes] == ["100 ms per query, 80 users", "fast SELECT, 1000 users"]
    assert fig._suptitle.get_text() == (
        "Slow queries: async serves 1.06× sync (both held by the connection pool); fast ones at 1000 users: 1.60×"
    )


def test_fib_sweep_title_says_where_the_two_converge_beside_the_article():
    assert fib_sweep_title(26, "Carlos Pena", (25, 30)) == (
        "async / sync by fib depth: the two stay within 15% from fib(26) on "
        "(Carlos Pena: not within 15% at FIB 25, within at 30)"
    )
    assert "the two are not within 15% at the deepest" in fib_sweep_title(None, "Carlos Pena", (25, 30))

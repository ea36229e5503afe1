"""Two patterns compared in one number: the ratio a lesson's chart title and claims read from its runs."""

import math

import pandas as pd
import pytest

from labserver.harness.rows import results

# async (sequential) against def (threadpool): a tie below 40 users, then async ahead by users / 40.
RUNS = pd.DataFrame({
    "pattern": ["sequential", "threadpool"] * 4, "users": [10, 10, 30, 30, 120, 120, 160, 160],
    "rps": [100.0, 98.0, 300.0, 310.0, 1200.0, 400.0, 1600.0, 400.0],
    "p95_ms": [100.0, 100.0, 100.0, 100.0, 100.0, 310.0, 100.0, 420.0],
})  # fmt: skip


def test_the_ratio_is_read_over_a_range_of_users():
    assert results.ratio(RUNS, "rps", "sequential", "threadpool") == pytest.approx(4.0)  # at the most users
    assert results.ratio(RUNS, "rps", "sequential", "threadpool", pick="min", at_least=120) == pytest.approx(3.0)
    assert results.ratio(RUNS, "p95_ms", "sequential", "threadpool", pick="max", at_least=120) == pytest.approx(
        100 / 310
    )
    # below 40 users: 100 / 98 and 300 / 310, and the second lies further from 1
    assert results.ratio(RUNS, "rps", "sequential", "threadpool", pick="furthest", under=40) == pytest.approx(300 / 310)


def test_a_ratio_over_no_runs_is_nan_so_a_claim_on_it_fails():
    assert math.isnan(results.ratio(RUNS, "rps", "sequential", "threadpool", pick="min", at_least=1000))


def test_the_miss_is_the_distance_of_the_furthest_ratio_from_one():
    assert results.miss(pd.Series([0.97, 1.02, 1.05])) == pytest.approx(0.05)
    assert results.miss(pd.Series([0.9, 1.05])) == pytest.approx(0.1)


def test_tagged_frames_keep_their_rows_and_name_where_each_came_from():
    fast, heavy = RUNS.iloc[:2], RUNS.iloc[2:3]
    both = results.tagged({"FastHttpUser": fast, "HttpUser": heavy}, "client")
    assert list(both["client"]) == ["FastHttpUser", "FastHttpUser", "HttpUser"]
    assert list(both.index) == [0, 1, 2]
    assert "client" not in fast  # the runs themselves are left as they were

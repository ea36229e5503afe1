"""Lesson 07's pool model: the helpers its notebook reads (headroom, seed ratios, convergence band)."""

import pandas as pd
import pytest

from labserver.theory import pools


def test_headroom_is_the_smaller_pool_bound_over_the_measured_rate():
    bounds = {"users": 1e6, "thread pool": 4000.0, "connection pool": 2000.0, "CPU (one core per worker)": 900.0}
    assert pools.pool_headroom(bounds, 400.0) == pytest.approx(5.0)  # the CPU bound is not a pool's


def test_headroom_of_the_model_s_own_bounds():
    bounds = pools.limits("sync_select", 1000, service_ms=2.0, threads=40, db_pool=20, cpu_ms_per_request=1.0)
    assert pools.pool_headroom(bounds, 100.0) == pytest.approx(min(40 / 0.002, 20 / 0.001) / 100)


def test_async_over_sync_by_depth_from_sync_async_pairs():
    ratios = pools.async_over_sync({15: (100.0, 150.0), 30: (8.0, 10.0)})
    assert isinstance(ratios, pd.Series)
    assert ratios.to_dict() == {15: pytest.approx(1.5), 30: pytest.approx(1.25)}


def test_convergence_uses_the_band_the_charts_draw():
    assert pools.CONVERGED == 0.15
    assert pools.converges_at({15: 1.5, 20: 1.3, 25: 1.14, 30: 1.05}) == 25
    assert pools.converges_at({15: 1.5, 30: 1.2}) is None

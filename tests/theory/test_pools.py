"""Lesson 07's pool model: the helpers its notebook reads (headroom, seed ratios, convergence band)."""

import math

import pandas as pd
import pytest

from labserver.theory import pools
from labserver.theory.bottlenecks import Bottleneck


def test_headroom_is_the_smaller_pool_bound_over_the_measured_rate():
    bounds = {"users": 1e6, "thread pool": 4000.0, "connection pool": 2000.0, "GIL (one core per worker)": 900.0}
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


def test_the_edge_kept_compares_the_deepest_depth_with_the_shallowest_whatever_the_order():
    assert pools.edge_kept({28: 1.2, 15: 2.0, 20: 1.8}) == pytest.approx(0.2)
    assert pools.edge_kept({15: 1.5, 28: 0.9}) == pytest.approx(-0.2)  # sync ahead at the deepest depth
    assert math.isnan(pools.edge_kept({15: 1.0, 28: 1.1}))  # no edge to lose at the shallowest


def test_the_connection_pool_is_priced_with_the_hold_measured_under_load():
    alone = pools.limits("async_select", 80, service_ms=101.5, db_pool=20, cpu_ms_per_request=1.0)
    assert alone[Bottleneck.CONNECTION_POOL] == pytest.approx(20 / 0.1005)  # the lone request's time less its CPU
    held = pools.limits("async_select", 80, service_ms=101.5, db_pool=20, cpu_ms_per_request=1.0, hold_ms=105.0)
    assert held[Bottleneck.CONNECTION_POOL] == pytest.approx(20 / 0.105)
    pool = Bottleneck.CONNECTION_POOL
    assert {k: v for k, v in held.items() if k != pool} == {k: v for k, v in alone.items() if k != pool}
    # two queries at once hold two connections, each for its own hold
    two = pools.limits("async_simulation", 80, service_ms=101.5, db_pool=20, hold_ms=105.0)
    assert two[Bottleneck.CONNECTION_POOL] == pytest.approx(10 / 0.105)


def test_the_measured_hold_prices_the_pool_only_where_the_pool_is_the_bound():
    p = pools.predict("sync_select", 80, service_ms=101.5, db_pool=20, cpu_ms_per_request=1.0, hold_ms=105.0)
    assert p.bottleneck == Bottleneck.CONNECTION_POOL and p.rps == pytest.approx(20 / 0.105)
    # a CPU-bound run's connections wait for the core: that wait is the core's, not the pool's bound
    cpu_bound = dict(service_ms=2.0, db_pool=20, cpu_ms_per_request=1.0)
    assert pools.predict("sync_select", 1000, hold_ms=19.0, **cpu_bound) == pools.predict(
        "sync_select", 1000, **cpu_bound
    )
    assert pools.predict("sync_select", 1000, hold_ms=19.0, **cpu_bound).bottleneck.startswith("GIL")


def test_an_async_worker_gets_its_core_less_its_wait_for_a_cpu():
    cpu_bound = dict(service_ms=1.3, cpu_ms_per_request=0.7, workers=1, cores=2)
    full = pools.limits("async_simulation", 32, **cpu_bound)["GIL (one core per worker)"]
    assert full == pytest.approx(1000 / 0.7)
    waited = pools.limits("async_simulation", 32, waited=0.06, **cpu_bound)["GIL (one core per worker)"]
    assert waited == pytest.approx(0.94 * 1000 / 0.7)
    # NaN: not measured; nothing taken off
    assert pools.limits("async_simulation", 32, waited=math.nan, **cpu_bound)["GIL (one core per worker)"] == full


def test_a_sync_worker_s_threads_compute_while_its_loop_waits():
    cpu_bound = dict(service_ms=1.3, cpu_ms_per_request=0.7, workers=1, cores=2)
    assert pools.limits("sync_simulation", 32, waited=0.06, **cpu_bound) == pools.limits(
        "sync_simulation", 32, **cpu_bound
    )


def test_workers_that_outnumber_the_cores_keep_the_whole_of_theirs():
    cpu_bound = dict(service_ms=1.3, cpu_ms_per_request=0.7, workers=2, cores=2)
    bound = pools.limits("async_select", 32, waited=0.06, **cpu_bound)["GIL (one core per worker)"]
    assert bound == pytest.approx(2 * 1000 / 0.7)

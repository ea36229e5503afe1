"""Cores each pattern can use, cores it used, and whether the CPU was the bottleneck."""

import pandas as pd
import pytest

from labserver.theory import cores


@pytest.mark.parametrize(
    ("pattern", "workers", "procs", "machine", "expected"),
    [
        ("threadpool", 1, 2, 8, 1),  # 40 threads, one GIL: one core
        ("sequential", 1, 2, 8, 1),  # one event loop: one core
        ("processpool", 1, 2, 8, 2),  # the pool's processes
        ("processpool", 1, 4, 2, 2),  # ... but never more than the machine has
        ("processpool", 1, 0, 8, 1),  # no pool: only the worker itself
        ("sequential", 3, 0, 8, 3),  # one core per worker
        ("sequential", 3, 0, 2, 2),  # past the core count, workers share the cores
    ],
)
def test_usable_cores(pattern, workers, procs, machine, expected):
    assert cores.usable(pattern, workers, procs, cores=machine) == expected


def _runs():
    return pd.DataFrame(
        [
            # fib on one core: 1.0 core busy at 50 req/s is 20 ms of CPU per request
            {"pattern": "threadpool", "workers": 1, "procs": 2, "rps": 50.0, "server_cpu": 1.0,
             "bottleneck": "GIL (one core per worker)"},
            {"pattern": "processpool", "workers": 1, "procs": 2, "rps": 100.0, "server_cpu": 1.9,
             "bottleneck": "cores"},
            # I/O-bound: 0.25 core at 500 req/s is 0.5 ms per request
            {"pattern": "sequential", "workers": 1, "procs": 0, "rps": 500.0, "server_cpu": 0.25,
             "bottleneck": "users"},
        ]
    )  # fmt: skip


def test_usage_shares_and_cost_per_request():
    u = cores.usage(_runs(), cores=2)
    assert list(u["usable_cores"]) == [1, 2, 1]
    assert list(u["busy"]) == pytest.approx([1.0, 0.95, 0.25])
    assert list(u["cpu_ms_per_request"]) == pytest.approx([20.0, 19.0, 0.5])


def test_cpu_bound_measured_and_predicted_agree_here():
    runs = _runs()
    assert list(cores.cpu_bound(runs, cores=2)) == [True, True, False]
    assert list(cores.predicted_cpu_bound(runs)) == [True, True, False]


def test_cpu_bound_threshold_is_a_share_of_what_the_pattern_can_use():
    one_core_of_two = pd.DataFrame(
        [{"pattern": "processpool", "workers": 1, "procs": 2, "rps": 50.0, "server_cpu": 1.0, "bottleneck": "cores"}]
    )
    assert not cores.cpu_bound(one_core_of_two, cores=2).iloc[0]  # a pool on two cores using one is not saturated


def test_ceiling_is_where_the_cpu_would_run_out():
    # 0.5 ms per request on one usable core: 2,000 req/s
    assert cores.ceiling_rps(_runs(), cores=2).iloc[2] == pytest.approx(2000)
    # a saturated run sits at its own ceiling
    assert cores.ceiling_rps(_runs(), cores=2).iloc[0] == pytest.approx(50)


def test_thread_cost_is_a_ratio_near_one_for_a_single_thread():
    # one thread against one thread: the same work, timed alternately; no absolute time is asserted
    assert 0.5 < cores.thread_cost(12, 1, calls=20) < 2.0

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
             "bottleneck": "GIL (one core per worker)", "before_bottleneck": "GIL (one core per worker)"},
            {"pattern": "processpool", "workers": 1, "procs": 2, "rps": 100.0, "server_cpu": 1.9,
             "bottleneck": "cores", "before_bottleneck": "cores"},
            # I/O-bound: 0.25 core at 500 req/s is 0.5 ms per request
            {"pattern": "sequential", "workers": 1, "procs": 0, "rps": 500.0, "server_cpu": 0.25,
             "bottleneck": "cores", "before_bottleneck": "users"},  # explained after as the cores: not read
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


def test_usage_takes_the_cost_per_request_the_harness_computed():
    # a run row from the harness carries `server_ms`: usage uses it rather than recomputing
    runs = _runs().assign(server_ms=[21.0, 19.5, 0.4])
    assert list(cores.usage(runs, cores=2)["cpu_ms_per_request"]) == [21.0, 19.5, 0.4]


def test_share_busy_per_group_mean_or_least():
    runs = pd.concat([_runs(), _runs().assign(server_cpu=[0.8, 1.5, 0.25])], ignore_index=True)
    mean = cores.share_busy(runs, cores=2)
    assert mean["threadpool"] == pytest.approx(0.9)  # (1.0 + 0.8) / 2 on one usable core
    assert mean["processpool"] == pytest.approx((0.95 + 0.75) / 2)
    least = cores.share_busy(runs, how="min", cores=2)
    assert least["processpool"] == pytest.approx(0.75)
    by_workers = cores.share_busy(runs, by="workers", how="min", cores=2)
    assert list(by_workers.index) == [1]


def test_in_words_names_each_pattern_with_its_cores_and_cost():
    runs = pd.DataFrame(
        [
            {"pattern": "threadpool", "users": 20, "workers": 1, "procs": 2, "rps": 50.0, "server_cpu": 1.0},
            {"pattern": "sequential", "users": 20, "workers": 1, "procs": 2, "rps": 40.0, "server_cpu": 1.0},
            {"pattern": "processpool", "users": 40, "workers": 1, "procs": 2, "rps": 100.0, "server_cpu": 2.0},
            {"pattern": "processpool", "users": 40, "workers": 1, "procs": 2, "rps": 100.0, "server_cpu": 1.8},
        ]
    )
    lines = cores.in_words(runs, cores=2, cpu_n=25, fib_ms=18.04).splitlines()
    assert (
        lines[0]
        == "thread pool: 20 requests in 20 pool threads together kept 1.00 cores busy, 20.0 ms of CPU per request"
    )
    assert lines[1] == "async:       20 requests on one event loop kept 1.00 cores busy, 25.0 ms of CPU per request"
    # the mean over the pool's two runs: 1.9 cores, 19 ms
    assert lines[2] == (
        "pool:        40 requests, a worker and its 2 processes kept 1.90 cores busy, 19.0 ms of CPU per request"
    )
    assert lines[3].startswith("fib(25) alone, timed in this notebook: 18.0 ms; the GIL is handed over every ")


@pytest.mark.parametrize(
    ("io_ms", "users", "expected"),
    [
        (50, 21, 2.5),  # 21 users × 2.5 ms = 50 ms + 2.5 ms: the two caps meet
        (50, 2, 50.0),
        (0, 20, 0.0),  # no I/O: the CPU is the limit from the start
        (50, 1, float("inf")),  # one user leaves the core idle while it waits, at any cost
    ],
)
def test_crossing_ms(io_ms, users, expected):
    assert cores.crossing_ms(io_ms, users) == expected


def _sweep(busy: list[float]) -> pd.DataFrame:
    # one async run per depth on one usable core: `busy` is its server_cpu
    return pd.DataFrame(
        [
            {"pattern": "sequential", "workers": 1, "procs": 2, "cpu_n": n, "rps": 100.0, "server_cpu": b}
            for n, b in zip([15, 18, 23, 25], busy, strict=True)
        ]
    )


def test_takeover_between_the_last_io_bound_depth_and_the_first_cpu_bound():
    assert cores.takeover(_sweep([0.3, 0.5, 0.95, 0.99]), cores=2) == (18, 23)
    assert cores.takeover(_sweep([0.3, 0.5, 0.6, 0.7]), cores=2) is None  # never CPU-bound
    assert cores.takeover(_sweep([0.95, 0.96, 0.97, 0.99]), cores=2) is None  # never I/O-bound


def test_check_workers():
    assert cores.check_workers([1, 2, 3]) == [1, 2, 3]
    for bad in ([2, 3], [1, 3, 2], [1, 1, 2]):
        with pytest.raises(ValueError, match="increasing, distinct and start at 1"):
            cores.check_workers(bad)


@pytest.mark.parametrize(
    ("workers", "machine", "expected"),
    [([1, 2, 3], 2, (2, 3)), ([1, 2], 2, (2, None)), ([1, 2, 4], 8, (4, None)), ([1, 4, 8], 2, (1, 4))],
)
def test_around_the_core_count(workers, machine, expected):
    assert cores.around(workers, machine) == expected


def test_predict_workers_one_row_per_count_and_workload():
    workloads = {
        "CPU-bound": dict(users=20, cpu_n=25, cpu_ms_per_task=10.0, cores=2),  # priced, not timed
        "I/O-bound": dict(users=100, io_ms=100, cores=2),
    }
    table = cores.predict_workers("sequential", [1, 2, 3], workloads)
    assert list(table.columns) == ["workers", "workload", "users", "predicted_rps", "bottleneck"]
    assert list(table["workload"]) == ["CPU-bound", "I/O-bound"] * 3
    cpu = table[table["workload"] == "CPU-bound"]
    assert list(cpu["predicted_rps"]) == pytest.approx([100, 200, 200])  # one core per worker, up to 2
    io = table[table["workload"] == "I/O-bound"]
    assert list(io["predicted_rps"]) == pytest.approx([1000] * 3)  # users / io, whatever the workers
    assert set(io["users"]) == {100}


def test_headroom_in_words():
    run = pd.Series({"workers": 1, "rps": 1000.0, "server_cpu": 0.25, "server_ms": 0.25, "locust_cpu": 0.5})
    first, second = cores.headroom(run, ceiling=4000.0, cores=2).splitlines()
    assert first == (
        "I/O-bound, 1 worker: 1000 req/s cost its loop 0.25 cores (0.25 ms per request): "
        "that loop would run out of CPU near 4,000 req/s, 4.0× this rate."
    )
    assert second == (
        "Locust used 0.50 cores to send those 1000 req/s; at 4,000 it would need about 2.0, on a machine with 2."
    )


def test_cost_ratio_sets_one_group_s_cpu_per_request_over_another_s():
    runs = pd.DataFrame(
        {
            "pattern": ["sequential", "threadpool", "processpool", "processpool"],
            "workers": [1, 1, 1, 1],
            "procs": [2, 2, 2, 2],
            "rps": [100.0, 100.0, 200.0, 200.0],
            "server_cpu": [1.0, 1.2, 2.0, 2.4],  # 10, 12, 10 and 12 ms per request
        }
    )
    # the one-core patterns' mean (11 ms) over the pool's mean (11 ms), and a group over another
    assert cores.cost_ratio(runs, "pattern", ["sequential", "threadpool"], "processpool") == pytest.approx(1.0)
    assert cores.cost_ratio(runs, "pattern", "sequential", "threadpool") == pytest.approx(10 / 12)

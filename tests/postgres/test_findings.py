"""What lesson 07 reads off its runs, from frames built by hand as run_parts gives them."""

import statistics
from types import SimpleNamespace

import pandas as pd
import pytest

from labserver.demo.settings import Settings
from labserver.postgres import findings, runs


def base():
    """Lone-request figures as `calibrate` gives them (ms)."""
    return pd.DataFrame(
        {"service_ms": [2.0, 1.5, 3.0, 2.5], "cpu_ms": [1.0, 0.5, 2.0, 1.5]},
        index=pd.Index(["sync_select", "async_select", "sync_simulation", "async_simulation"], name="pattern"),
    )


def test_holds_set_each_driver_s_hold_alone_beside_under_load():
    slow = pd.DataFrame(
        {"pattern": ["sync_select", "async_select"], "driver": ["sync", "async"], "rps": [190.0, 180.0],
         "predicted_before_rps": [198.0, 198.0], "predicted_rps": [199.0, 199.5], "db_hold_ms": [104.0, 110.0]}
    )  # fmt: skip
    table = findings.holds(slow, base(), io_ms=100)
    assert list(table.index) == ["sync", "async"]
    # time alone less its CPU, plus the pg_sleep
    assert table["hold alone: io_ms + S − CPU (ms)"].tolist() == [101.0, 101.0]
    assert table.at["sync", "hold under load, measured (ms)"] == 104.0
    assert table.at["sync", "predicted before"] == 198.0 and table.at["sync", "db_pool / hold under load"] == 199.0


def fast_runs():
    return pd.DataFrame(
        {"pattern": ["sync_select", "async_select"], "driver": ["sync", "async"], "users": [8, 8],
         "rps": [500.0, 800.0], "server_ms": [1.8, 1.1], "server_cpu": [0.95, 0.9]}
    )  # fmt: skip


def test_fast_reads_the_ratio_the_pools_headroom_and_the_cpu_per_request():
    server = SimpleNamespace(settings=Settings(workers=1, threads=4, db_pool=2, procs=0))
    fast = findings.fast(server, base(), fast_runs())
    assert fast.rps("sync") == 500.0 and fast.ratio == pytest.approx(1.6)
    # 4 threads / 2 ms = 2,000 req/s; 2 connections / (2 − 1) ms = 2,000 req/s
    assert fast.bounds == "thread pool 2,000 req/s, connection pool 2,000 req/s"
    assert fast.headroom == pytest.approx(4.0)
    assert fast.priced_cpu_ratio == pytest.approx(2.0)
    # calibrate's hold measured before the runs, where it has one: 2 connections / 4 ms = 500 req/s
    held = findings.fast(server, base().assign(hold_ms=[4.0, 3.0, 5.0, 4.0]), fast_runs())
    assert held.bounds == "thread pool 2,000 req/s, connection pool 500 req/s"
    assert held.headroom == pytest.approx(1.0)
    table = fast.cpu_table()
    assert list(table.columns) == [
        "CPU ms per request, priced: 8 users",
        "… under load, 8 users",
        "server CPU (cores)",
    ]
    assert table.loc["async"].tolist() == [0.5, 1.1, 0.9]
    # each run's own price before it is the fidelity table's, not this one's
    spread = findings.fast(server, base(), fast_runs().assign(one_user_cpu_ms=[1.2, 0.6])).cpu_table()
    assert spread.loc["sync"].tolist() == [1.0, 1.8, 0.95]


def sweep_runs(sync_rps=(300.0, 27.0), async_rps=(450.0, 30.0)):
    """Part 3 at two depths, 15 and 28: sync then async at each."""
    return pd.DataFrame(
        {"pattern": ["sync_simulation", "async_simulation"] * 2, "driver": ["sync", "async"] * 2,
         "cpu_n": [15, 15, 28, 28], "users": [4] * 4, "rps": [sync_rps[0], async_rps[0], sync_rps[1], async_rps[1]],
         "server_ms": [3.0, 2.0, 36.0, 33.0], "server_cpu": [0.9, 0.9, 0.97, 0.99]}
    )  # fmt: skip


@pytest.fixture
def sweep():
    frames = {"sweep": sweep_runs(), "sweep round 1": sweep_runs(sync_rps=(200.0, 20.0))}
    return findings.sweep(frames, base(), rounds=2)


def test_sweep_reads_the_edge_where_it_converges(sweep):
    assert (sweep.shallow, sweep.deep) == (15, 28)
    # the rounds repeat both ends: each depth's ratio is the median of its rounds, here two: their mean
    assert sweep.ratios.to_dict() == pytest.approx({15: (1.5 + 2.25) / 2, 28: (30 / 27 + 1.5) / 2})
    assert sweep.converged is None  # round 1 strays at 28 (1.5): the median is 1.31, past 15%
    assert sweep.overhead_ms == 2.0
    assert sweep.kept == pytest.approx([(30 / 27 - 1) / 0.5, 0.5 / 1.25])
    assert sweep.edge_kept == pytest.approx(statistics.median(sweep.kept))
    assert sweep.detail.startswith(
        "median of 2 rounds: 0.22, 0.40; ratios {15: 1.88, 28: 1.31}; within 15% from: nowhere"
    )


def test_one_round_that_converges_does_not_make_the_sweep_converge():
    frames = {"sweep": sweep_runs(async_rps=(450.0, 28.0)), "sweep round 1": sweep_runs(sync_rps=(300.0, 20.0))}
    read = findings.sweep(frames, base(), rounds=2)
    assert read.runs["rps"].tolist() == [300.0, 450.0, 27.0, 28.0]  # round 0 alone reads 1.04 at fib(28)
    assert read.converged is None  # its median with round 1's 1.5 is 1.27


def test_sweep_at_its_deepest_depth_sets_throughput_beside_cpu_per_request(sweep):
    assert sweep.rps_ratio == pytest.approx(30 / 27)
    assert sweep.cpu_ratio == pytest.approx(36 / 33)
    assert sweep.busy == {"sync": 0.97, "async": 0.99}
    # fib's share from the server's CPU per request, server_cpu / rps: 3 ms at fib(15) for sync
    assert sweep.at_deep["fib_share"].tolist() == pytest.approx(
        [1 - 3 / (0.97 / 27 * 1000), 1 - 2 / (0.99 / 30 * 1000)]
    )
    assert sweep.table().loc[28, ("rps", "sync")] == 27.0
    lines = sweep.explain().splitlines()
    assert lines[0].startswith("At fib(28): cores busy {'sync': 0.97, 'async': 0.99}; async / sync throughput 1.11")
    assert lines[1] == "async edge at fib(28) over the edge at fib(15), round by round: 0.22, 0.40; median 0.31"
    extra = sweep.extra_cpu(thread_cost=1.2, fib_ms=28.0).splitlines()
    assert extra[0] == "fib(28) on 4 threads at once costs 1.20× its CPU on one thread."
    assert extra[1].startswith("No convergence within 15%")  # gil.explain, for a sweep whose median strays


def test_a_thread_cost_under_one_is_said_to_be_the_cores_speed_not_a_saving(sweep):
    first = sweep.extra_cpu(thread_cost=0.74, fib_ms=28.0).splitlines()[0]
    said = "fib(28) on 4 threads at once costs 0.74× its CPU on one thread: under 1, the cores' speed moved"
    assert first.startswith(said)
    # a cost that prints as 1.00 is said as it prints, with nothing under 1 to explain
    even = sweep.extra_cpu(thread_cost=0.996, fib_ms=28.0).splitlines()[0]
    assert even.endswith("costs 1.00× its CPU on one thread.")


def test_measured_holds_every_run_the_lesson_made_the_extra_rounds_too():
    part = pd.DataFrame({"pattern": ["sync_select"], "valid": [True]})
    invalid = pd.DataFrame({"pattern": ["sync_simulation"], "valid": [False]})
    frames = {"fast": part, "sweep": part, "round 1, any": part, "sweep round 1": invalid}
    runs = findings.measured(part, frames)
    assert len(runs) == 5
    assert not runs["valid"].all()  # an invalid extra round reaches the claim that every run is valid


def test_runs_limits_is_what_fast_bounds_the_sync_select_by():
    server = SimpleNamespace(settings=Settings(workers=1, threads=4, db_pool=2, procs=0))
    fast = findings.fast(server, base(), fast_runs())
    assert fast.limits == runs.limits(server, "sync_select", 8, 0, 0, base(), held=True)

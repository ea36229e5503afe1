"""The columns of a Locust run's row: pinned by name, order and unit, and the only ones collect() writes.

A row written before and after a change to the harness must have the same columns: a change to
this list is a change to every reader of data/runs/ (the lessons, the summary, the bench).
"""

import json
import typing
from types import SimpleNamespace

import pytest

from labserver.demo.settings import Settings
from labserver.harness.plans.plan import Meters, Options, Stage
from labserver.harness.rows import collect, columns
from labserver.harness.rows.records import Record
from labserver.theory.workload import Workload

PINNED = {
    "run_id": "text",
    "lesson": "text",
    # parameters: the workload, the server's settings, Locust's options
    "pattern": "text",
    "users": "count",
    "tasks": "count",
    "io_ms": "ms",
    "cpu_n": "fib(n)",
    "workers": "count",
    "threads": "count",
    "procs": "count",
    "cpus": "text",
    "gil": "bool",
    "duration_s": "s",
    "spawn_rate": "users/s",
    "user_class": "text",
    "processes": "count",
    "timeout_s": "s",
    "rate": "req/s",
    "drain_s": "s",
    "master": "text",
    # figures
    "rps": "req/s",
    "p50_ms": "ms",
    "p95_ms": "ms",
    "p99_ms": "ms",
    "mean_ms": "ms",
    "requests": "count",
    "failures": "count",
    "failure_rate": "share",
    "predicted_rps": "req/s",
    "predicted_ms": "ms",
    "bottleneck": "text",
    "ratio": "ratio",
    "priced_by": "text",
    "predicted_before_rps": "req/s",
    "predicted_before_ms": "ms",
    "before_bottleneck": "text",
    "ratio_before": "ratio",
    "before_priced_by": "text",
    "one_user_ms": "ms",
    "one_user_cpu_ms": "ms/request",
    "one_user_loop_ms": "ms/request",
    "one_user_threads_ms": "ms/request",
    "one_user_pool_ms": "ms/request",
    "one_user_reply_kb": "KiB",
    "before_locust_ms": "ms/request",
    "one_user_s": "s",
    "before_miss": "text",
    "usable_cores": "cores",
    "locust_cpu": "cores",
    "server_cpu": "cores",
    "machine_cpu": "cores",
    "other_cpu": "cores",
    "server_ms": "ms/request",
    "locust_ms": "ms/request",
    "worker_ms": "ms/request",
    "worker_waited": "share",
    "worker_loop": "share",
    "worker_kernel": "share",
    "worker_switches": "per request",
    "pool_ms": "ms/request",
    "others_ms": "ms/request",
    "db_hold_ms": "ms",
    "bunched": "share",
    "bunched_at_random": "share",
    "generator_saturated": "bool",
    "window_s": "s",
    "window_start": "epoch s",
    "method": "text",
    "workers_seen": "count",
    "worker_requests": "count by pid",
    "status": "text",
    "valid": "bool",
    "problems": "text",
    "notes": "text",
    "throttled_s": "s",
    "paused_ms": "ms",
    "stolen_cpu": "cores",
    "disturbed_cpu": "cores",
    "core_speed": "ratio",
    "disturbed": "bool",
    "git_commit": "text",
    "batch": "text",
    "started_at": "ISO 8601",
    # an open loop's own
    "scheduled_rate": "req/s",
    "sent_rate": "req/s",
    "kept_up": "ratio",
    "served_rps": "req/s",
    "shed": "share",
    "intended_mean_ms": "ms",
    "intended_p95_ms": "ms",
    "intended_p99_ms": "ms",
    "p95_first_third_ms": "ms",
    "p95_middle_third_ms": "ms",
    "p95_last_third_ms": "ms",
    "mean_first_third_ms": "ms",
    "mean_last_third_ms": "ms",
}
OPEN_ONLY = {"rate", "drain_s"}  # parameters of an open loop alone
T0 = 1_700_000_000.0


def test_the_columns_their_order_and_units_are_pinned():
    assert [(c.name, c.unit) for c in columns.COLUMNS] == list(PINNED.items())


def test_every_column_says_what_it_means_in_a_known_unit():
    units = typing.get_args(columns.Unit)
    assert all(c.meaning and c.unit in units for c in columns.COLUMNS)
    assert len({c.name for c in columns.COLUMNS}) == len(columns.COLUMNS)
    assert all(c.source in typing.get_args(columns.Source) for c in columns.PARAMS)


def rows(tmp_path, workload: Workload, **options):
    """collect()'s row for two users' steady replies (an open loop's: each meant 1 ms before it left)."""
    per_user = [
        [Record(T0 + 0.01 * u + 0.1 * k + 0.05, 50.0, True, 7, 0, T0 + 0.01 * u + 0.1 * k - 0.001) for k in range(50)]
        for u in range(2)
    ]
    stage = Stage(SimpleNamespace(settings=Settings(procs=0)), workload, tags={"part": "x"})
    meant = (T0 + 1.0, T0 + 4.0) if workload.rate else None
    given = collect.StageInput(
        tmp_path, "run-1", stage, per_user, start=T0, started_at="2023-11-14T22:13:20+00:00", exit_code=0, meant=meant
    )
    result = collect.collect(given, Meters.unsampled(), Options(lesson="tests", spawn_rate=2, **options))
    return result.row


def test_a_closed_loop_s_row_holds_the_declared_columns_in_order(tmp_path):
    row = rows(tmp_path, Workload("sequential", 2, io_ms=50))
    closed = [name for name in PINNED if name not in {c.name for c in columns.OPEN_LOOP} | OPEN_ONLY | {"master"}]
    assert list(row) == [*closed[:17], "part", *closed[17:]]  # the lesson's tags follow the parameters
    json.dumps(row)  # as its manifest will hold it


def test_an_open_loop_s_row_adds_its_own_columns_last(tmp_path):
    row = rows(tmp_path, Workload("threadpool", 1, io_ms=50, rate=20.0, drain_s=1.0), master="127.0.0.1:5557")
    every = list(PINNED)
    assert list(row) == [*every[:20], "part", *every[20:]]
    assert row["rps"] == row["served_rps"]  # an open loop's throughput is what it served


def test_a_row_refuses_a_figure_undeclared_or_left_out():
    figures = {c.name: 0 for c in columns.FIGURES}
    head = {"run_id": "r", "lesson": None}
    assert list(columns.row(head, {}, figures)) == ["run_id", "lesson", *figures]
    with pytest.raises(ValueError, match="undeclared"):
        columns.row(head, {}, {**figures, "rps_new": 1.0})
    with pytest.raises(ValueError, match="left out"):
        columns.row(head, {}, {k: v for k, v in figures.items() if k != "p95_ms"})
    with pytest.raises(ValueError, match="left out"):  # an open loop's columns come all together
        columns.row(head, {}, {**figures, "shed": 0.0})


def test_a_run_s_parameters_come_from_its_workload_settings_and_options():
    sources = {
        "workload": Workload("gather", 3, tasks=2, io_ms=80),
        "server": Settings(workers=2, threads=8, procs=1, cpus=(0, 1)),
        "locust": Options(spawn_rate=3),
    }
    params = columns.params(sources, {"round": 1})
    assert params == dict(
        pattern="gather", users=3, tasks=2, io_ms=80, cpu_n=0, workers=2, threads=8, procs=1, cpus="0,1", gil=True,
        duration_s=5, spawn_rate=3, user_class="fast", processes=1, timeout_s=60.0, round=1,
    )  # fmt: skip


CLIENT_PINNED = {
    "run_id": "text",
    # parameters, as a client run's manifest holds them
    "lesson": "text",
    "pattern": "text",
    "client": "text",
    "library": "text",
    "users": "count",
    "requests": "count",
    "tasks": "count",
    "io_ms": "ms",
    "cpu_n": "fib(n)",
    "workers": "count",
    "threads": "count",
    # figures
    "rps": "req/s",
    "wall_s": "s",
    "p50_ms": "ms",
    "p95_ms": "ms",
    "mean_ms": "ms",
    "failures": "count",
    "predicted_rps": "req/s",
    "predicted_ms": "ms",
    "bottleneck": "text",
    "ratio": "ratio",
    "concurrency_rps": "req/s",
    "predicted_before_rps": "req/s",
    "predicted_before_ms": "ms",
    "before_bottleneck": "text",
    "ratio_before": "ratio",
    "before_priced_by": "text",
    "before_miss": "text",
    "client_cpu": "cores",
    "client_ms": "ms/request",
    "send_share": "share",
    "first_cpu_ms": "ms",
    "first_ms": "ms",
    "server_cpu": "cores",
    "server_ms": "ms/request",
    "alone_ms": "ms",
    "paused_ms": "ms",
    "stolen_cpu": "cores",
    "notes": "text",
    "client_saturated": "bool",
    "priced_by": "text",
    "status": "text",
    "valid": "bool",
    "problems": "text",
    "started_at": "ISO 8601",
    "git_commit": "text",
    "batch": "text",
}


def test_a_client_run_s_columns_their_order_and_units_are_pinned():
    assert [(c.name, c.unit) for c in columns.CLIENT] == list(CLIENT_PINNED.items())


def test_every_client_column_says_what_it_means_in_a_known_unit():
    units = typing.get_args(columns.Unit)
    assert all(c.meaning and c.unit in units for c in columns.CLIENT)
    assert len({c.name for c in columns.CLIENT}) == len(columns.CLIENT)


def test_a_client_row_holds_its_declared_columns_in_order_and_refuses_others():
    params = {c.name: 1 for c in columns.CLIENT_PARAMS}
    figures = {c.name: 2 for c in reversed(columns.CLIENT_FIGURES)}  # in any order: the row puts them in theirs
    row = columns.client_row("r", params, figures)
    assert list(row) == [c.name for c in columns.CLIENT] and row["run_id"] == "r" and row["batch"] == 2
    with pytest.raises(ValueError, match=r"figures .*undeclared"):
        columns.client_row("r", params, {**figures, "rps_new": 1.0})
    with pytest.raises(ValueError, match=r"figures .*left out"):
        columns.client_row("r", params, {k: v for k, v in figures.items() if k != "wall_s"})
    with pytest.raises(ValueError, match=r"parameters .*undeclared"):
        columns.client_row("r", {**params, "round": 1}, figures)
    with pytest.raises(ValueError, match=r"parameters .*left out"):
        columns.client_row("r", {k: v for k, v in params.items() if k != "lesson"}, figures)

"""Requests per worker, from the counts each run's row keeps (`records.counts`), as a table and as bars."""

import math

import matplotlib
import pandas as pd
import pytest

from labserver.charts import spread

matplotlib.use("Agg")


def _runs():
    # worker_requests as they come back from a manifest: JSON keys are strings
    return pd.DataFrame(
        [
            {"run_id": "a", "pattern": "sequential", "users": 20, "workers": 2,
             "worker_requests": {"11": 30, "22": 90}},
            {"run_id": "b", "pattern": "sequential", "users": 20, "workers": 1, "worker_requests": {5: 40}},
        ]
    )  # fmt: skip


def test_per_worker_ranks_the_busiest_first_with_shares():
    tidy = spread.per_worker(_runs())
    a = tidy[tidy["run_id"] == "a"]
    assert list(a["worker"]) == [1, 2]
    assert list(a["pid"]) == [22, 11]
    assert list(a["requests"]) == [90, 30]
    assert list(a["share"]) == pytest.approx([0.75, 0.25])
    assert tidy.groupby("run_id")["share"].sum().tolist() == pytest.approx([1.0, 1.0])


def test_per_worker_keeps_the_extra_columns_asked_for():
    tidy = spread.per_worker(_runs().assign(workload="CPU-bound"), extra=["workload"])
    assert set(tidy["workload"]) == {"CPU-bound"}


def test_per_worker_of_runs_without_counts_is_empty_but_shaped():
    tidy = spread.per_worker(pd.DataFrame([{"run_id": "x", "pattern": "gather", "users": 1, "workers": 1}]))
    assert tidy.empty
    assert "share" in tidy.columns


def test_busiest_share():
    assert spread.busiest_share({1: 50, 2: 50}) == pytest.approx(0.5)
    assert spread.busiest_share({1: 100}) == pytest.approx(1.0)
    assert math.isnan(spread.busiest_share({}))


def test_bars_draws_one_panel_per_value_and_one_bar_per_pid():
    tidy = spread.per_worker(pd.concat([_runs(), _runs().assign(pattern="threadpool")], ignore_index=True))
    fig = spread.bars(tidy, title="who served what")
    assert [ax.get_title() for ax in fig.axes] == ["async def + await", "def (thread pool)"]  # as a learner reads them
    assert fig.axes[0].get_ylabel().startswith("requests")
    heights = sorted(round(p.get_height()) for p in fig.axes[0].patches)
    assert heights == [30, 40, 90]  # pid 11 and 22 of the 2-worker run, pid 5 of the 1-worker run


def test_bars_sum_a_pid_over_repeated_runs():
    twice = spread.per_worker(pd.concat([_runs(), _runs().assign(run_id="c")], ignore_index=True))
    fig = spread.bars(twice, title="two rounds")
    assert sorted(round(p.get_height()) for p in fig.axes[0].patches) == [60, 80, 180]


@pytest.mark.slow
def test_a_real_run_names_the_worker_of_every_request():
    from labserver.harness.load.run import run_load
    from labserver.harness.processes import procs
    from labserver.harness.servers.launcher import LabServer

    with LabServer(workers=2, procs=0) as server:
        workers = {p.pid for p in procs.tree(server.proc.pid)}
        row = run_load(server, "sequential", users=10, io_ms=20, duration_s=2, lesson="tests-spread").row
    served = {int(pid): n for pid, n in row["worker_requests"].items()}
    assert sum(served.values()) == row["requests"]  # every request measured carries its worker's pid
    assert set(served) <= workers  # ... and it is one of this server's processes
    assert row["workers_seen"] == len(served) >= 1


def test_busiest_shares_per_run_with_more_than_one_worker():
    tidy = spread.per_worker(pd.concat([_runs(), _runs().assign(run_id=["c", "d"])], ignore_index=True))
    shares = spread.busiest_shares(tidy)
    assert list(shares.index) == ["a", "c"]  # b and d had one worker: nothing to spread
    assert list(shares) == pytest.approx([0.75, 0.75])


def _seen():
    return pd.DataFrame(
        [
            {"workload": "CPU-bound", "workers": 1, "workers_seen": 1, "rps": 50.0},
            {"workload": "CPU-bound", "workers": 2, "workers_seen": 2, "rps": 100.0},
            {"workload": "I/O-bound", "workers": 2, "workers_seen": 1, "rps": 980.4},
            {"workload": "I/O-bound", "workers": 3, "workers_seen": 2, "rps": 990.0},
        ]
    )


def test_all_served_counts_the_runs_up_to_the_cores():
    assert spread.all_served(_seen(), up_to=2) == pytest.approx(2 / 3)
    assert spread.all_served(_seen(), up_to=1) == 1.0
    assert math.isnan(spread.all_served(_seen().iloc[:0], up_to=2))


def test_left_idle_names_each_run_a_worker_sat_out():
    notes = spread.left_idle(_seen())
    assert notes == [
        "I/O-bound, 2 workers: only 1 served requests in one run (980 req/s): the kernel gave every connection to "
        "the others",
        "I/O-bound, 3 workers: only 2 served requests in one run (990 req/s): the kernel gave every connection to "
        "the others",
    ]
    assert spread.left_idle(_seen().iloc[:2]) == []

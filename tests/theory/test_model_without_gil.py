"""The model without a GIL (lesson 10): a thread pool computes on as many cores as it has threads; a loop on one."""

import math

import pandas as pd
import pytest

from labserver.demo.settings import Settings
from labserver.theory import model
from labserver.theory.bottlenecks import CORE_BOUND, Bottleneck
from labserver.theory.demand import Demand
from labserver.theory.model import predict, predict_for
from labserver.theory.workload import Workload

CPU_MS = 10.0  # fib's price per request: every case below computes 10 ms and waits for nothing


def _fib(pattern: str, users: int) -> Workload:
    return Workload(pattern, users=users, cpu_n=20)


@pytest.mark.parametrize(
    ("users", "threads", "cores", "bottleneck"),
    [
        (100, 40, 2, Bottleneck.CORES),  # 40 threads, 2 cores: the cores
        (100, 40, 16, Bottleneck.CORES),
        (100, 8, 16, Bottleneck.THREADS),  # fewer threads than cores: the threads
        (100, 2, 2, Bottleneck.THREADS),  # as many of each: the threads, named first
        (4, 40, 16, Bottleneck.USERS),  # fewer users than either
    ],
)
def test_a_thread_pool_without_the_gil_computes_on_its_threads_cores(users, threads, cores, bottleneck):
    p = predict(_fib("threadpool", users), Settings(gil=False, threads=threads, workers=1), cores=cores,
                cpu_ms_per_task=CPU_MS)  # fmt: skip
    assert p.rps == pytest.approx(min(users, threads, cores) / (CPU_MS / 1000))
    assert p.bottleneck == bottleneck
    # under the GIL the same pool computes on one core
    with_gil = predict(_fib("threadpool", users), Settings(gil=True, threads=threads, workers=1), cores=cores,
                       cpu_ms_per_task=CPU_MS)  # fmt: skip
    assert with_gil.rps == pytest.approx(min(users, 1) / (CPU_MS / 1000))
    assert with_gil.bottleneck == (Bottleneck.GIL if users > 1 else Bottleneck.USERS)


@pytest.mark.parametrize("cores", [2, 16])
def test_an_event_loop_without_the_gil_is_still_one_core_per_worker(cores):
    p = predict(_fib("sequential", 100), Settings(gil=False, workers=1), cores=cores, cpu_ms_per_task=CPU_MS)
    assert p.rps == pytest.approx(100)
    assert p.bottleneck == Bottleneck.WORKER_CPU == "CPU (one core per worker)"
    with_gil = predict(_fib("sequential", 100), Settings(gil=True, workers=1), cores=cores, cpu_ms_per_task=CPU_MS)
    assert (with_gil.rps, with_gil.bottleneck) == (pytest.approx(100), Bottleneck.GIL)


def test_workers_as_many_as_the_cores_are_the_cores_with_or_without_the_gil():
    for gil in (True, False):
        p = predict(_fib("sequential", 100), Settings(gil=gil, workers=2), cores=2, cpu_ms_per_task=CPU_MS)
        assert (p.rps, p.bottleneck) == (pytest.approx(200), Bottleneck.CORES)
    p = predict(_fib("sequential", 100), Settings(gil=False, workers=2), cores=16, cpu_ms_per_task=CPU_MS)
    assert (p.rps, p.bottleneck) == (pytest.approx(200), Bottleneck.WORKER_CPU)


def test_threads_without_the_gil_move_in_step_on_the_cores():
    # fib of 10 ms after 50 ms of sleep: under the GIL the 20 users compute together on one core, then
    # idle together; without it they do the same on the 2 cores, sharing them in the scheduler's slices
    in_step = predict_for("threadpool", users=20, io_ms=50, cpu_n=25, cpu_ms_per_task=CPU_MS, cores=2)
    assert (in_step.rps, in_step.bottleneck) == (pytest.approx(20 / (0.05 + 20 * 0.01)), Bottleneck.IN_STEP)
    free = predict_for("threadpool", users=20, io_ms=50, cpu_n=25, cpu_ms_per_task=CPU_MS, cores=2, gil=False)
    assert (free.rps, free.bottleneck) == (pytest.approx(20 / (0.05 + 20 * 0.01 / 2)), Bottleneck.SLICED)
    # no more users than cores: each thread computes on a core of its own, and Little's law holds
    few = predict_for("threadpool", users=8, io_ms=50, cpu_n=25, cpu_ms_per_task=CPU_MS, cores=16, gil=False)
    assert (few.rps, few.bottleneck) == (pytest.approx(8 / 0.06), Bottleneck.USERS)


def test_queueing_bends_toward_the_thread_pool_s_cores():
    many = {"users": 400, "cpu_n": 20, "cpu_ms_per_task": CPU_MS, "cores": 2, "queueing": True}
    assert predict_for("threadpool", **many, gil=False).rps == pytest.approx(200, rel=0.01)
    assert predict_for("threadpool", **many).rps == pytest.approx(100, rel=0.01)
    few = predict_for("threadpool", **{**many, "users": 2}, gil=False)
    assert few.rps < 200  # near the knee requests wait for a core: below both bounds


def test_a_measured_demand_without_the_gil_is_priced_on_the_pool_s_cores():
    p = predict(_fib("threadpool", 100), Settings(gil=False, threads=40), cores=2, demand=Demand(worker_ms=20.0))
    assert (p.rps, p.bottleneck) == (pytest.approx(100), Bottleneck.CORES)
    assert p.bottleneck in CORE_BOUND  # what cores.py counts as a CPU-bound run


def test_a_row_on_disk_and_a_short_call_predict_alike():
    run = {"pattern": "threadpool", "users": 100, "cpu_n": 20, "threads": 40, "workers": 1}
    short = predict_for("threadpool", users=100, cpu_n=20, threads=40, workers=1, cores=16, cpu_ms_per_task=CPU_MS,
                        gil=False)  # fmt: skip
    assert short.rps == pytest.approx(1600)
    # a frame of runs with and without the column (saved before it existed: NaN), as load_runs gives them
    rows = pd.DataFrame([{**run, "gil": False}, {**run, "gil": True}, run]).to_dict("records")
    assert math.isnan(rows[2]["gil"])
    predicted = [predict(*model._run(row), cores=16, cpu_ms_per_task=CPU_MS) for row in rows]
    assert predicted[0] == short
    assert [p.rps for p in predicted[1:]] == [pytest.approx(100)] * 2  # with the GIL, as every run before it

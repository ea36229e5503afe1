"""Lesson 10's arithmetic: the builds predicted before the runs, and what its claims read of the runs after."""

import math

import pandas as pd
import pytest

from labserver.demo import cpus
from labserver.theory import freethreaded
from labserver.theory.demand import UNMEASURED

BUILDS = ("3.12.3, GIL build", "3.13.5t, GIL on", "3.13.5t, GIL off")
GIL_BUILD, GIL_ON, GIL_OFF = BUILDS


@pytest.fixture(autouse=True)
def two_cores(monkeypatch):
    monkeypatch.setattr(cpus, "cores", lambda *_: 2.0)


def _run(build, pattern, rps, server_cpu, machine_cpu=None, *, load="busy", procs=0, gil=True, predicted=None):
    machine_cpu = server_cpu if machine_cpu is None else machine_cpu
    return dict(build=build, pattern=pattern, load=load, users=20, rps=rps, predicted_rps=predicted or rps,
                server_cpu=server_cpu, machine_cpu=machine_cpu, usable_cores=2.0, workers=1, procs=procs,
                threads=40, gil=gil, server_ms=server_cpu / rps * 1000, valid=True)  # fmt: skip


# Each build's busy runs on fib (and one run alone, which the claims leave out), on 2 cores.
FIB = pd.DataFrame([
    _run(GIL_BUILD, "threadpool", 100.0, 1.0),
    _run(GIL_BUILD, "processpool", 170.0, 1.7, 1.9, procs=2),  # Locust and the rest took 0.2: 1.7 of 1.8 left
    _run(GIL_ON, "threadpool", 80.0, 0.98, predicted=85.0),
    _run(GIL_ON, "threadpool", 10.0, 0.5, load="alone"),
    _run(GIL_ON, "sequential", 78.0, 1.0),
    _run(GIL_OFF, "threadpool", 160.0, 1.8, 1.95, gil=False, predicted=170.0),  # 1.8 of the 1.85 left
    _run(GIL_OFF, "sequential", 81.0, 1.02, gil=False),
    _run(GIL_OFF, "processpool", 150.0, 1.6, 1.9, procs=2, gil=False),  # 1.6 of 1.7
])  # fmt: skip
SLEPT = pd.DataFrame([_run(GIL_ON, "threadpool", 50.0, 0.6), _run(GIL_OFF, "threadpool", 90.0, 1.2, gil=False)])


def test_the_findings_are_what_each_claim_reads_of_the_runs():
    found = freethreaded.findings(FIB, pd.DataFrame(), SLEPT, BUILDS)
    assert found.fib["rps"] == pytest.approx(2.0)  # 160 / 80
    assert found.fib["predicted_rps"] == pytest.approx(2.0)  # 170 / 85
    assert found.sleep["rps"] == pytest.approx(1.8)
    assert found.off_share == pytest.approx(1.8 / 1.85)
    assert found.gil_cores == pytest.approx(1.0)  # the GIL build's 1.0 over GIL on's 0.98; the run alone left out
    assert found.async_cores == pytest.approx(1.02)
    assert found.pool_share == pytest.approx(1.6 / 1.7)  # the less of the two builds
    assert found.near_model == 1.0
    assert len(found.runs) == len(FIB) + len(SLEPT)


def test_without_a_free_threaded_python_the_findings_are_nan_not_an_error():
    found = freethreaded.findings(FIB[FIB["build"] == GIL_BUILD], pd.DataFrame(), pd.DataFrame(), BUILDS)
    assert math.isnan(found.fib["rps"]) and math.isnan(found.sleep["rps"]) and math.isnan(found.off_share)


def test_the_headline_says_the_speed_up_or_that_there_is_no_free_threaded_python():
    busy = FIB[FIB["load"] == "busy"]
    assert freethreaded.headline(busy, BUILDS) == (
        "Without the GIL the thread pool served 2.0× its GIL-on rate (predicted 2.0×), 1.6× the usual build's"
    )
    alone = busy[busy["build"] == GIL_BUILD]
    assert freethreaded.headline(alone, BUILDS) == "No free-threaded Python here: the GIL build alone"


def test_the_claims_say_why_they_cannot_be_checked():
    assert freethreaded.why_not("no free-threaded Python found", 2) == "no free-threaded Python found"
    assert freethreaded.why_not("", 1) == "needs 2 usable CPUs, this process may use 1"
    assert freethreaded.why_not("", 2) == ""


def test_the_thread_pool_without_a_gil_and_the_interpreter_pool_get_every_core_and_the_users_for_them():
    both = {GIL_ON: True, GIL_OFF: False}
    table = freethreaded.predict_builds(both, users=20, one_core_users=20, cpu_n=15, threads=40, procs=2)
    assert list(zip(table["build"], table["pattern"], strict=True)) == [
        (GIL_ON, "threadpool"), (GIL_ON, "sequential"), (GIL_ON, "interpreterpool"),
        (GIL_OFF, "threadpool"), (GIL_OFF, "sequential"), (GIL_OFF, "interpreterpool"),
    ]  # fmt: skip
    assert list(table["usable_cores"]) == [1.0, 1.0, 2.0, 2.0, 1.0, 2.0]
    rps = table.set_index(["build", "pattern"])["predicted_rps"]
    assert rps[GIL_OFF, "threadpool"] > 1.5 * rps[GIL_ON, "threadpool"]
    assert rps[GIL_ON, "interpreterpool"] > 1.5 * rps[GIL_ON, "threadpool"]  # a GIL each: the cores, GIL on
    sized = freethreaded.predict_builds({GIL_OFF: False}, users=40, one_core_users=20, cpu_n=15, threads=40, procs=2)
    assert list(sized["users"]) == [40, 20, 40]


def test_near_model_leaves_out_a_run_whose_window_measured_no_demand():
    runs = pd.DataFrame(
        {
            "valid": [True, True, True],
            "rps": [100.0, 100.0, 20.0],
            "predicted_rps": [100.0, 105.0, 100.0],
            "priced_by": ["measured demand", "measured demand", UNMEASURED],
        }
    )
    assert freethreaded.near_model(runs) == 1.0
    assert freethreaded.near_model(runs.drop(columns="priced_by")) == pytest.approx(2 / 3)

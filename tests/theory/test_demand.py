"""The model priced with the CPU a run measured where the work ran."""

import math
from dataclasses import replace

import pytest

from labserver.theory.bottlenecks import Bottleneck
from labserver.theory.demand import Demand, measured, per_request_ms
from labserver.theory.model import predict_for


def test_per_request_ms_is_cores_over_rate():
    assert per_request_ms(0.5, 100) == pytest.approx(5.0)
    assert math.isnan(per_request_ms(0.5, 0))
    assert math.isnan(per_request_ms(float("nan"), 100))


def test_measured_demand_never_goes_below_zero():
    # machine − server can read a little below zero (the meters sample at different moments)
    d = measured(1.0, 0.0, -0.02, 100)
    assert d.worker_ms == pytest.approx(10.0) and d.others_ms == 0.0 and d.pool_ms == 0.0
    assert d.machine_ms == pytest.approx(10.0)


def test_a_cpu_bound_worker_serves_one_over_its_measured_cpu():
    p = predict_for("sequential", users=20, cpu_n=25, cores=2, demand=Demand(worker_ms=12.5, others_ms=0.5))
    assert p.rps == pytest.approx(80.0)
    assert p.bottleneck.startswith("GIL")


def test_the_measured_demand_replaces_the_price_of_fib():
    # cpu_ms_per_task would say 1 ms; the run measured 10 ms per request in the worker
    p = predict_for("threadpool", users=40, cpu_n=25, cores=2, cpu_ms_per_task=1.0, demand=Demand(worker_ms=10.0))
    assert p.rps == pytest.approx(100.0)


def test_the_pool_is_bounded_by_the_machine_it_shares_with_locust():
    d = Demand(worker_ms=0.5, pool_ms=10.0, others_ms=1.5)  # 12 ms of the machine's CPU per request
    p = predict_for("processpool", users=20, cpu_n=25, procs=2, cores=2, demand=d)
    assert p.rps == pytest.approx(2 / 0.012)
    assert p.bottleneck.startswith("cores")


def test_io_runs_keep_little_s_law_with_their_cpu_in_the_service_time():
    p = predict_for("sequential", users=10, io_ms=100, cores=2, demand=Demand(worker_ms=0.5))
    assert p.rps == pytest.approx(10 / 0.1005)
    assert p.bottleneck == "users"


def test_an_unknown_demand_falls_back_to_the_priced_model():
    unknown = Demand(worker_ms=math.nan)
    assert predict_for("sequential", users=10, cpu_n=20, cpu_ms_per_task=2.0, cores=2, demand=unknown) == predict_for(
        "sequential", users=10, cpu_n=20, cpu_ms_per_task=2.0, cores=2
    )


def test_the_load_generator_is_a_station_of_one_core_per_locust_process():
    # HttpUser: 0.6 ms of Locust's CPU per request against 0.3 ms in the worker, 200 users, 100 ms of I/O
    d = Demand(worker_ms=0.3, others_ms=0.65, generator_ms=0.6)
    p = predict_for("sequential", users=200, io_ms=100, cores=2, demand=d, queueing=True)
    assert p.bottleneck == Bottleneck.GENERATOR
    assert p.rps < 1000 / 0.6  # its users queue for it near its limit
    two = predict_for("sequential", users=200, io_ms=100, cores=2, demand=replace(d, generators=2), queueing=True)
    assert two.rps > p.rps and two.bottleneck == "users"


def test_a_light_generator_leaves_little_s_law_nearly_alone():
    d = Demand(worker_ms=0.4, others_ms=0.4, generator_ms=0.35)
    p = predict_for("sequential", users=25, io_ms=100, cores=2, demand=d, queueing=True)
    assert p.bottleneck == "users"
    assert p.rps == pytest.approx(25 / 0.1004, rel=0.01)


def test_measured_demand_keeps_the_generators_share():
    d = measured(0.5, 0.0, 0.6, 1000, generator_cores=0.55, generators=2)
    assert d.generator_ms == pytest.approx(0.55) and d.generators == 2
    assert measured(0.5, 0.0, 0.6, 1000).generator_ms == 0.0  # not metered: no station


def test_a_run_s_demand_carries_the_connection_hold_it_measured():
    assert measured(0.3, 0.0, 0.1, 200, db_hold_ms=104.0).db_hold_ms == 104.0
    assert math.isnan(measured(0.3, 0.0, 0.1, 200).db_hold_ms)  # none: a server without a database
    assert Demand(worker_ms=1.0, db_hold_ms=104.0).machine_ms == 1.0  # a hold is no CPU

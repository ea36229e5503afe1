"""Lesson 12's readings: a new client's price timed here, the plan's predictions, and the extra CPU per request."""

import pandas as pd
import pytest

from labserver.lessons import calling_services as calling


def test_a_new_client_s_price_is_the_cheapest_of_its_tries(monkeypatch):
    # a CPU clock read before and after each try: 10 ms, then 3 ms, then 12 ms
    ticks = iter([0.0, 0.010, 1.0, 1.003, 2.0, 2.012])
    monkeypatch.setattr(calling.time, "process_time", lambda: next(ticks))
    assert calling.client_ms(repeat=3) == pytest.approx(3.0)


def test_only_the_new_client_pays_its_price_in_the_prediction():
    plan = calling.plan(users=50, io_ms=200, calls=4, duration_s=3, cores=2).plan
    table = calling.predicted(plan, cores=2, new_client_ms=20.0).set_index(["part", "pattern"]).loc["a client"]
    assert table.loc["callreused", "model_rps"] == pytest.approx(50 / 0.2)  # users / io
    # its users in step: a round is every user's client on the loop, then one io: 50 / (0.2 s + 50 × 20 ms)
    assert table.loc["callnew", "model_rps"] == pytest.approx(50 / (0.2 + 50 * 0.020), abs=0.05)  # to 0.1
    assert table.loc["callnew", "bottleneck"] == "one core (users in step on the event loop)"


def test_the_two_servers_the_plan_starts_call_one_another():
    servers = calling.plan(users=50, io_ms=200, calls=4, duration_s=3, cores=2).plan.servers
    assert servers["app"]["upstream"] == f"http://127.0.0.1:{servers['service']['port']}"


def test_extra_cpu_is_what_a_new_client_spent_over_a_reused_one():
    runs = pd.DataFrame(
        {"pattern": ["callreused", "callnew", "callreused"], "tasks": [1, 1, 4], "server_ms": [2.0, 22.5, 8.0]}
    )
    assert calling.extra_cpu_ms(runs) == pytest.approx(20.5)


def test_the_fan_out_is_predicted_from_the_calls_in_flight_before_its_cpu_is_known():
    plan = calling.plan(users=20, io_ms=200, calls=4, duration_s=3, cores=2).plan
    table = calling.predicted(plan, cores=2, new_client_ms=20.0).set_index(["part", "pattern"])
    fan = table.loc["a fan-out"]
    assert fan.loc["callreused", "model_rps"] == pytest.approx(20 / (4 * 0.2))  # users / (calls × io)
    assert fan.loc["fanout", "model_rps"] == pytest.approx(20 / 0.2)  # at once: users / io
    bounded = fan.loc["fanoutbounded"]
    assert bounded["model_rps"] == pytest.approx(40 / (4 * 0.2))  # the semaphore's 40 / (calls × io)
    assert bounded["bottleneck"] == "calls in flight"


def test_a_call_s_cpu_is_the_run_s_over_its_calls():
    runs = pd.DataFrame(
        {
            "part": ["a client", "a fan-out", "a fan-out"],
            "pattern": ["callreused", "fanout", "fanoutbounded"],
            "tasks": [1, 4, 4],
            "server_ms": [2.0, 56.0, 8.0],
        }
    )
    assert calling.per_call_ms(runs).to_dict() == {"fanout": 14.0, "fanoutbounded": 2.0}


def test_a_new_client_s_users_in_step_are_priced_round_by_round():
    run = pd.Series({"pattern": "callnew", "users": 20, "tasks": 1, "io_ms": 200, "server_ms": 21.9})
    assert calling.in_step(run) == pytest.approx(20 / (0.2 + 20 * 0.0219))  # 31.3 req/s, not 1 / c's 45.7


def test_a_fan_out_s_users_in_step_wait_one_io_a_round_however_many_calls():
    # the four calls overlap: a round is every user's CPU, then one wait of io, not four
    fan = pd.Series({"pattern": "fanout", "users": 20, "tasks": 4, "io_ms": 200, "server_ms": 16.0})
    assert calling.in_step(fan) == pytest.approx(20 / (0.2 + 20 * 0.016))
    assert calling.in_step(pd.Series({**fan, "pattern": "callreused"})) == pytest.approx(20 / (0.8 + 20 * 0.016))


def test_out_of_step_reads_how_far_a_run_went_from_in_step_toward_its_cpu_bound():
    run = pd.Series({"pattern": "callnew", "users": 20, "tasks": 1, "io_ms": 200, "server_ms": 25.0, "rps": 0.0})
    low, high = 20 / (0.2 + 20 * 0.025), 40.0
    assert calling.out_of_step(run.copy().replace({0.0: low})) == pytest.approx(0.0)
    assert calling.out_of_step(pd.Series({**run, "rps": high})) == pytest.approx(1.0)
    assert calling.out_of_step(pd.Series({**run, "rps": (low + high) / 2})) == pytest.approx(0.5)


def test_the_unbounded_fan_out_runs_longer_and_last_on_a_server_of_its_own():
    plan = calling.plan(users=20, io_ms=200, calls=4, duration_s=3, cores=2).plan
    assert plan.runs[-1]["pattern"] == "fanout"
    # its pricing, calls in flight, leaves its client dearer: no other run shares that client
    assert plan.runs[-1]["server"] == "unbounded" and {r["server"] for r in plan.runs[:-1]} == {"app"}
    assert plan.servers["unbounded"] == plan.servers["app"]  # the same settings, calling the same service
    assert plan.runs[-1]["duration_s"] == calling.UNBOUNDED_FAN_OUT_LONGER * 3
    assert plan.runs[-2]["pattern"] == "fanoutbounded" and plan.runs[-2].get("duration_s", 3) == 3


def test_each_run_gets_the_model_before_any_run_by_part_and_pattern():
    plan = calling.plan(users=20, io_ms=200, calls=4, duration_s=3, cores=2).plan
    table = calling.predicted(plan, cores=2, new_client_ms=20.0)
    runs = pd.DataFrame({"part": ["a fan-out", "a client"], "pattern": ["callreused"] * 2, "rps": [24.0, 99.0]})
    marked = calling.with_model(runs, table)
    assert marked["model_rps"].tolist() == [pytest.approx(20 / (4 * 0.2)), pytest.approx(20 / 0.2)]

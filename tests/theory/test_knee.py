"""Lesson 00's ceiling: the runs below the knee, the knee run, and the sentence that reports them."""

import math

import pandas as pd
import pytest

from labserver.theory import knee

# Little's law puts the first three runs at 250, 1,000 and 2,000 req/s; 800 users ask for 8,000.
RUNS = pd.DataFrame({
    "client": ["FastHttpUser"] * 4, "users": [25, 100, 200, 800], "rps": [248.0, 990.0, 1900.0, 3600.0],
    "little_rps": [250.0, 1000.0, 2000.0, 8000.0], "predicted_rps": [249.0, 995.0, 1950.0, 3700.0],
    "ratio": [0.996, 0.995, 0.974, 0.973], "server_ms": [0.45, 0.3, 0.25, 0.2], "locust_ms": [0.1] * 4,
    "server_cpu": [0.11, 0.3, 0.48, 0.72], "locust_cpu": [0.03, 0.1, 0.19, 0.36], "valid": [True] * 4,
    "problems": [""] * 4,
})  # fmt: skip


def test_reachable_keeps_the_runs_littles_law_puts_at_or_below_the_rate():
    assert list(knee.reachable(RUNS, 2000)["users"]) == [25, 100, 200]
    assert knee.reachable(RUNS, 100).empty


def test_the_knee_is_the_run_littles_law_puts_highest():
    assert knee.knee(knee.reachable(RUNS, 2000)).users == 200
    assert knee.knee(RUNS.iloc[0:0]) is None


def test_findings_give_the_ceiling_and_how_the_knee_run_fared():
    lines = knee.findings(0.2, knee.reachable(RUNS, 2000)).split("\n")
    assert lines == [
        "server: 0.20 ms of CPU per request when busiest → one worker serves at most 5,000 req/s",
        "at 200 users the worker was 48% busy (0.25 ms per request) and served 1,900 req/s: "
        "95% of Little's law, 97% of the curve",
    ]


def test_findings_without_a_run_below_the_knee_give_the_ceiling_alone():
    assert knee.findings(0.25, RUNS.iloc[0:0]) == (
        "server: 0.25 ms of CPU per request when busiest → one worker serves at most 4,000 req/s"
    )


def test_the_table_shows_both_predictions_and_each_sides_cpu_rounded():
    table = knee.table(RUNS.assign(ratio=[0.99612, 0.995, 0.974, 0.973], bottleneck="users"))
    assert list(table.columns) == knee.COLUMNS
    assert "problems" not in table
    assert table["ratio"].iloc[0] == 0.996


# The busiest run: Little's law asks 16,000 req/s, the worker serves 4,000, the CPU-priced model says 4,200.
BUSIEST = pd.Series({"users": 1600, "rps": 4000.0, "little_rps": 16000.0, "ratio": 4000 / 4200,
                     "bottleneck": "CPU (one core per worker)", "server_cpu": 0.93, "locust_cpu": 0.6,
                     "worker_waited": 0.05})  # fmt: skip


def test_the_model_that_prices_the_cpu_misses_the_busiest_run_by_less_than_littles_law():
    assert knee.miss_gap(BUSIEST) == pytest.approx(math.log(4) - math.log(4200 / 4000))
    alike = pd.concat([BUSIEST.drop("ratio"), pd.Series({"ratio": 0.25})])  # the model as far off as Little's law
    assert knee.miss_gap(alike) == pytest.approx(0.0)


def test_a_cpu_bound_is_the_workers_the_machines_or_locusts():
    assert knee.cpu_bound(BUSIEST) == 1.0
    assert knee.cpu_bound(pd.concat([BUSIEST.drop("bottleneck"), pd.Series({"bottleneck": "users"})])) == 0.0


def test_the_busiest_run_in_words():
    assert knee.busiest_in_words(BUSIEST) == (
        "4,000 req/s, 1600 users: measured / Little's law 0.25, / the model 0.95; worker 0.93, Locust 0.60"
    )
    assert knee.cpu_in_words(BUSIEST) == "At 4,000 req/s the worker uses 93% of a core and waits 5% for one, Locust 60%"
    unmeasured = BUSIEST.drop("worker_waited")  # off Linux the wait is not measured
    assert knee.cpu_in_words(unmeasured) == "At 4,000 req/s the worker uses 93% of a core, Locust 60%"
    two = pd.concat([BUSIEST, pd.Series({"processes": 2})])  # the sum of two Locust processes, 0.3 each
    assert knee.cpu_in_words(two).endswith("Locust 30% in each of 2")


def test_the_generators_cost_compares_the_two_clients_at_equal_users():
    # FastHttpUser's CPU per request falls with the load (0.3 at 50 users, 0.1 at 800): a median over all its runs
    # would set HttpUser's 50-user runs against its busiest; at equal users HttpUser costs 2× and 2.2×
    runs = pd.DataFrame({"client": ["HttpUser", "HttpUser", "FastHttpUser", "FastHttpUser", "FastHttpUser"],
                         "users": [50, 100, 50, 100, 800], "locust_ms": [0.6, 0.55, 0.3, 0.25, 0.1]})  # fmt: skip
    assert knee.generator_cost(runs, "HttpUser", "FastHttpUser") == pytest.approx((2.0 + 2.2) / 2)

"""Lesson 14's readings: a cheap request's wait beside fib on the loop, in a thread, in a process."""

import math

import numpy as np
import pandas as pd
import pytest

from labserver.lessons import one_slow_route as neighbours
from labserver.lessons.one_slow_route import Probes


@pytest.mark.parametrize(
    ("busy", "q", "wait"),
    [
        (0.5, 0.95, 90.0),  # 5% of all arrivals wait more: 10% of those that find it busy, the last tenth of fib
        (1.0, 0.95, 95.0),  # always busy: the residual's own 95th percentile
        (0.05, 0.95, 0.0),  # busy 5% of the time: the 95th percentile arrival finds it free
        (0.5, 0.5, 0.0),  # half of the arrivals find it free
    ],
)
def test_a_random_arrival_waits_the_rest_of_the_fib_it_finds(busy, q, wait):
    assert neighbours.loop_wait_ms(busy / 0.1, [100.0], q) == pytest.approx(wait)


def test_the_mean_wait_is_the_busy_share_of_half_a_fib():
    assert neighbours.loop_mean_wait_ms(4.0, [100.0]) == pytest.approx(20.0)
    assert neighbours.loop_mean_wait_ms(15.0, [100.0]) == pytest.approx(50.0)  # a loop is busy at most all the time


def test_a_longer_fib_now_and_then_weighs_as_often_as_a_random_moment_falls_in_it():
    # 5 a second, half of them 50 ms and half 150: busy 0.5, as 100 ms each, but a random moment falls in a
    # 150 three times as often as in a 50, and waits half of it: X × mean(S²) / 2 = 5 × 0.0125 / 2 s
    assert neighbours.loop_mean_wait_ms(5.0, [50.0, 150.0]) == pytest.approx(31.25)
    # a wait over w: 5 × mean(max(S − w, 0)) = 0.05 at w = 130 ms, the last 20 ms of the 150s (half of them)
    assert neighbours.loop_wait_ms(5.0, [50.0, 150.0]) == pytest.approx(130.0)
    assert neighbours.loop_wait_ms(5.0, [100.0, 100.0]) == pytest.approx(90.0)


def test_where_each_pattern_computes():
    assert [neighbours.where(p, 25) for p in ("sequential", "threadpool", "processpool")] == list(
        neighbours.WHERE.values()
    )
    assert neighbours.where("sequential", 0) == "none"


def _runs():
    return pd.DataFrame(
        {
            "pattern": ["sequential", "sequential", "threadpool", "processpool"],
            "cpu_n": [0, 29, 29, 29],
            "rps": [16.0, 5.0, 5.0, 5.0],
            "p50_ms": [62.0, 162.0, 165.0, 163.0],
            "window_start": [0.0, 10.0, 20.0, 30.0],
            "window_s": [10.0] * 4,
        }
    )


def test_each_run_takes_its_own_probes_and_the_loop_s_wait_is_predicted_from_its_busy_share(monkeypatch):
    fibs = {10.0: [159.0, 162.0, 165.0]}  # the loop's run: 100 ms of fib on average over the quiet median, 62
    monkeypatch.setattr(neighbours, "heavy_ms", lambda run: np.array(fibs.get(run["window_start"], [run["p50_ms"]])))
    probes = Probes(every_s=1.0)
    # 20 probes a run: the quiet run's all 2 ms; the loop's half at 2 ms, half at 2 + 0..95 ms; thread 7; process 2
    probes.sent = [(0.1 + i * 0.5, 2.0, True) for i in range(20)]
    probes.sent += [(10.1 + i * 0.5, 2.0 + (5.0 * i if i % 2 else 0.0), True) for i in range(20)]
    probes.sent += [(20.1 + i * 0.5, 7.0, True) for i in range(20)]
    probes.sent += [(30.1 + i * 0.5, 2.0, True) for i in range(20)]
    got = neighbours.cheap(_runs(), probes, keep=False).set_index("where")
    assert list(got["cheap_n"]) == [20] * 4
    loop = got.loc["event loop"]
    assert loop["fib_run_ms"] == pytest.approx(100.0)  # its mean less the run without fib's median
    assert loop["busy"] == pytest.approx(0.5)
    assert loop["predicted_wait_p95_ms"] == pytest.approx(90.0, abs=0.1)  # 97, 100 and 103 ms: about one 100
    assert loop["predicted_wait_mean_ms"] == pytest.approx(5 * (97**2 + 100**2 + 103**2) / 3 / 2 / 1000)
    assert loop["wait_mean_ms"] == pytest.approx(sum(5.0 * i for i in range(1, 20, 2)) / 20)
    assert got.loc["thread pool", "wait_p95_ms"] == pytest.approx(5.0)  # 7 ms less the quiet median
    assert math.isnan(got.loc["thread pool", "predicted_wait_p95_ms"])  # bounded, not predicted
    assert math.isnan(got.loc["process pool", "predicted_wait_p95_ms"])  # bounded: under one switch interval
    assert got.loc["none", "predicted_wait_p95_ms"] == 0.0


def test_the_plan_runs_the_route_without_fib_first_then_each_place():
    slow = neighbours.plan(users=1, io_ms=60, cpu_n=20, probe_every_ms=20, duration_s=8, cores=2)
    assert [(r["pattern"], r["cpu_n"]) for r in slow.plan.runs] == [
        ("sequential", 0),
        ("sequential", 20),
        ("threadpool", 20),
        ("processpool", 20),
    ]
    assert slow.plan.servers == {"app": {"threads": 40, "procs": 1}}
    assert slow.probes.every_s == pytest.approx(0.02)


def test_a_bad_probe_gap_fails_before_anything_starts():
    with pytest.raises(ValueError, match="probe_every_ms"):
        neighbours.plan(users=1, io_ms=60, cpu_n=20, probe_every_ms=0, duration_s=8, cores=2)


def test_each_run_keeps_its_cheap_route_readings_in_its_folder(monkeypatch):
    monkeypatch.setattr(neighbours, "heavy_ms", lambda run: np.array([run["p50_ms"]]))
    kept = {}
    monkeypatch.setattr(neighbours.results, "attach", lambda run_id, columns: kept.update({run_id: columns}))
    runs = _runs().assign(run_id=["quiet", "loop", "thread", "process"])
    probes = Probes(every_s=1.0)
    probes.sent = [(start + 0.5, 2.0, True) for start in (0.0, 10.0, 20.0, 30.0)]
    neighbours.cheap(runs, probes)
    assert list(kept) == ["quiet", "loop", "thread", "process"]
    assert set(kept["loop"]) == set(neighbours.KEPT)
    assert kept["loop"]["where"] == "event loop" and type(kept["loop"]["cheap_n"]) is int  # as JSON writes it

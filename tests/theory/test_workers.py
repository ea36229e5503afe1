"""Lesson 04's figures from its runs: the CPU-bound gain up to the cores and past them, I/O-bound's spread."""

import math

import pandas as pd
import pytest

from labserver.demo import cpus
from labserver.theory import workers


@pytest.fixture(autouse=True)
def two_cores(monkeypatch):
    monkeypatch.setattr(cpus, "cores", lambda *_: 2.0)


def _run(workload: str, w: int, rps: float, server_cpu: float, ratio: float = 1.0) -> dict:
    # Locust and the rest take 0.1 core beside the server, on a machine of 2 usable cores
    return {"pattern": "sequential", "workload": workload, "workers": w, "procs": 0, "rps": rps,
            "server_cpu": server_cpu, "machine_cpu": server_cpu + 0.1, "usable_cores": 2.0, "ratio": ratio,
            "ratio_before": ratio - 0.01}  # fmt: skip


def _runs(counts=(1, 2, 3)) -> pd.DataFrame:
    cpu = {1: [(45.0, 0.9), (55.0, 1.1)], 2: [(90.0, 1.98)], 3: [(88.0, 1.98)]}  # 20, 22 and 22.5 ms per request
    io = {1: (1000.0, 0.5, 0.99), 2: (990.0, 0.55, 0.98), 3: (1010.0, 0.6, 1.0)}
    rows = [_run("I/O-bound", w, *io[w]) for w in counts]
    rows += [_run("CPU-bound", w, rps, busy) for w in counts for rps, busy in cpu[w]]
    return pd.DataFrame(rows)


def test_findings_read_the_gain_at_the_cores_and_past_them():
    found = workers.findings(_runs(), [1, 2, 3], 2.0)
    assert (found.at_cores, found.beyond) == (2, 3)
    assert found.gain == pytest.approx(90 / 50)  # one worker's rounds averaged
    assert found.speed == pytest.approx(20 / 22)
    assert found.past == pytest.approx(88 / 90)
    assert found.past_speed == pytest.approx(22 / 22.5)
    assert found.past_at_equal_cpu == pytest.approx((88 / 90) / (22 / 22.5))
    assert len(found.cpu) == 4 and len(found.io) == 3


def test_findings_read_the_io_bound_runs():
    found = workers.findings(_runs(), [1, 2, 3], 2.0)
    assert found.io_spread == pytest.approx(1010 / 990)
    assert found.io_vs_model == pytest.approx(0.97)  # predicted before the runs, not explained after
    assert found.io_one["rps"] == 1000.0
    assert found.io_loop_busy == pytest.approx(0.5)
    assert found.io_ceiling == pytest.approx(1 / 0.0005)  # one core over 0.5 ms per request
    assert found.kept_busy == pytest.approx(0.9)  # the least busy CPU-bound run, of the core left to it


@pytest.mark.parametrize(("counts", "cores"), [((1, 2), 2.0), ((1, 2), 1.5)])
def test_no_past_the_cores_reading_without_a_count_past_every_core(counts, cores):
    found = workers.findings(_runs(counts), list(counts), cores)
    assert found.past is None and found.past_speed is None and found.past_at_equal_cpu is None
    assert math.isfinite(found.gain)

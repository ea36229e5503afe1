"""An overload read from its two runs' records: the thirds, the growth and the replayed queue."""

from pathlib import Path

import pandas as pd
import pytest

from labserver.harness.rows.records import Record
from labserver.harness.rows.results import RunResult
from labserver.lessons import overload


def _schedule(rate: float, seconds: float, latency_s) -> list[Record]:
    """Requests meant to leave every 1 / rate s from 0, each sent on time and answered `latency_s(t)` after."""
    return [Record(k / rate + latency_s(k / rate), latency_s(k / rate) * 1000, True, 7, 0, k / rate)
            for k in range(int(rate * seconds))]  # fmt: skip


def _run(name: str, **row) -> RunResult:
    return RunResult(row=row, history=pd.DataFrame(), path=Path(name), manifest={})


def test_read_sets_the_open_loops_growth_beside_the_replayed_queue(monkeypatch):
    # 120 arrivals a second on 10 slots of 0.1 s (capacity 100): ρ 1.2, the wait grows 0.2 s a second
    rising = [_schedule(120, 9, lambda t: 0.1 + 0.2 * t)]
    flat = [[Record(t + 0.12, 120.0, True) for t in (0.5, 3.5, 6.5)]]
    monkeypatch.setattr(overload.records, "read", {Path("open"): rising, Path("closed"): flat}.__getitem__)
    opened = _run("open", scheduled_rate=120.0)
    closed = _run("closed", window_start=0.0, window_s=9.0, rps=100.0)
    over = overload.read(opened, closed, 0.1, 10, sending_s=9.0, warmup_s=0.0)
    assert over.window == (0.0, 9.0) and over.opened == 0.0
    assert over.rho == pytest.approx(1.2)
    assert over.hold_s == pytest.approx(0.1)  # 10 threads / 100 req/s
    assert over.slope == pytest.approx(0.2, rel=0.01)
    assert over.replay_slope == pytest.approx(0.2, rel=0.05)  # the same queue on the same arrivals
    assert over.growth["closed loop, mean"] == pytest.approx(1.0)
    assert over.growth["open loop, mean"] > 2
    assert set(over.over_time) == {"open loop", "closed loop"}
    assert len(over.replay_over_time) == len(rising[0])
    assert "ρ − 1 = 0.200" in str(over)

"""The bench's live-view part: its cost per mirrored round, their median and range, and both targets in the report."""

from typing import get_args

import pytest

from labserver.course.bench import live_view
from labserver.course.bench.report import TARGETS, table, targets


def _row(r: int, mode: str, rps: float) -> dict:
    return {
        "round": r,
        "mode": mode,
        "rps": rps,
        "ratio": rps / 4000,
        "locust_ms": 0.2,
        "other_cpu": 0.03,
        "valid": True,
    }


def _rows(pairs: list[tuple[float, float]]) -> list[dict]:
    """Rows in mirrored order (off, on | on, off | …), from (off rps, on rps) per round."""
    rows = []
    for r, (off, on) in enumerate(pairs):
        pair = [_row(r, "off", off), _row(r, "on", on)]
        rows += pair if r % 2 == 0 else pair[::-1]
    return rows


def test_each_round_costs_one_minus_on_over_off_and_the_median_is_reported():
    out = live_view.rounds(_rows([(3000.0, 2985.0), (3100.0, 3100.0), (2900.0, 2871.0), (3000.0, 2994.0)]))
    assert [r["cost"] for r in out["rounds"]] == pytest.approx([0.005, 0.0, 0.01, 0.002])
    assert out["cost"] == pytest.approx(0.0035)  # the median of four: the middle two's mean
    assert (out["cost_min"], out["cost_max"]) == (pytest.approx(0.0), pytest.approx(0.01))
    assert out["off_ratios"] == [0.75, 0.775, 0.725, 0.75]  # in the order measured
    assert [r["round"] for r in out["rounds"]] == [1, 2, 3, 4]


def test_a_view_that_speeds_the_run_up_reads_as_a_negative_cost():
    out = live_view.rounds(_rows([(3000.0, 3030.0), (3000.0, 3015.0), (3000.0, 3000.0)]))
    assert out["cost"] == pytest.approx(-0.005) and out["cost_min"] == pytest.approx(-0.01)


def _live(cost: float, frame_ms: float = 12.0) -> dict:
    rows = _rows([(3000.0, 3000.0 * (1 - cost))] * 3)
    return {"live": {**live_view.rounds(rows), "frames": 12, "frame_ms": frame_ms, "frame_ms_max": frame_ms * 4}}


def test_a_cheap_view_meets_both_targets_and_a_dear_one_misses():
    (cost, frame) = targets(_live(0.002))
    assert "cost" in cost[0] and cost[1] == pytest.approx(0.2) and cost[3]  # in % of throughput
    assert "frame" in frame[0] and frame[1] == 12.0 and frame[3]
    (cost, frame) = targets(_live(TARGETS["live_cost_pct"] / 100 * 2, frame_ms=TARGETS["frame_ms"] + 1))
    assert not cost[3] and not frame[3]


def test_the_table_shows_each_round_its_median_and_range_and_the_frame_cost():
    costs = live_view.rounds(_rows([(3000.0, 2985.0), (3100.0, 3100.0), (2900.0, 2871.0)]))  # median 0.5%
    report = {"live": {**costs, "frames": 12, "frame_ms": 12.0, "frame_ms_max": 48.0}}
    text = table(report)
    (target,) = [line for line in text.splitlines() if "median cost (% of throughput)" in line]
    assert target.split()[-4:] == ["0.500", "(target", "≤", "0.5)"]
    assert "live view round 1: off   3000 req/s, on   2985 req/s, cost +0.50%" in text
    assert "live view: cost median +0.50%, range +0.00% to +1.00% of throughput over 3 rounds" in text
    assert "live view off  measured/predicted 0.750 0.775 0.725" in text
    assert "12 frames" in text and "median 12.0 ms" in text


def test_the_modes_measured_are_the_modes_typed():
    assert set(get_args(live_view.Mode)) == set(live_view.MODES)

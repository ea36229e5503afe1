"""The bench's arithmetic, on made-up runs whose answer is known (the bench itself measures: `make bench`)."""

import json
import math

import pandas as pd
import pytest

from labserver.course.bench.batch import lesson_walls, measuring_s, windows
from labserver.course.bench.measure import first_request_delay, locust_rps
from labserver.course.bench.repeatability import spread
from labserver.course.bench.report import plain, table, targets
from labserver.harness.rows.records import Record


def test_spread_is_the_range_over_the_median():
    assert spread([2.0, 2.1, 1.9]) == pytest.approx(0.1)
    assert spread([3.0, 3.0, 3.0]) == 0
    assert math.isnan(spread([]))


def test_first_request_is_a_reply_s_end_minus_its_latency():
    # two users; the earliest request left at 10.5 (ended 10.6 after 100 ms)
    per_user = [[Record(10.6, 100.0, True), Record(10.8, 100.0, True)], [Record(10.75, 200.0, True, 4242)]]
    assert first_request_delay(per_user, spawned_at=10.0) == pytest.approx(0.5)
    assert math.isnan(first_request_delay([[]], spawned_at=10.0))


def _runs(rows):
    return pd.DataFrame(rows, columns=["started_at", "window_s", "wall_s"])


def test_measuring_counts_only_the_runs_of_the_batch():
    runs = _runs([
        ("2026-01-01T00:00:00+00:00", 4.0, None),  # before the batch
        ("2026-01-01T00:01:00+00:00", 4.5, None),
        ("2026-01-01T00:01:07+00:00", None, 2.5),  # a client run (lesson 06): its whole wall time
        ("2026-01-01T00:09:00+00:00", 4.0, None),  # after it
    ])  # fmt: skip
    t0 = pd.Timestamp("2026-01-01T00:00:59.5+00:00").timestamp()  # started_at is rounded down to the second
    t1 = pd.Timestamp("2026-01-01T00:02:00+00:00").timestamp()
    assert measuring_s(runs, t0, t1) == (pytest.approx(7.0), 2)
    assert measuring_s(pd.DataFrame(), t0, t1) == (0.0, 0)


def _report(ratio=0.99, ready=0.8, wall=300.0, inside=240.0, values=(2.0, 2.02, 1.99)):
    harness = [
        {"users": 100, "processes": 1, "predicted_rps": 1000.0, "measured_rps": 1000 * ratio, "ratio": ratio,
         "predicted_cpu_rps": 990.0, "ratio_cpu": 1000 * ratio / 990, "server_ms": 0.5, "locust_ms": 0.4,
         "server_cpu": 0.5, "locust_cpu": 0.4, "other_cpu": 0.0, "valid": True},
        {"users": 400, "processes": 1, "predicted_rps": 4000.0, "measured_rps": 2000.0, "ratio": 0.5,
         "predicted_cpu_rps": 2000.0, "ratio_cpu": 1.0, "server_ms": 0.5, "locust_ms": 0.35,
         "server_cpu": 1.0, "locust_cpu": 0.7, "other_cpu": 0.1, "valid": True},
    ]  # fmt: skip
    return {
        "harness": harness,
        "overhead_s": {"server_ready": ready, "locust_first_request": 0.7, "per_run": 1.4},
        "batch": {"wall_s": wall, "measuring_s": inside},
        "repeatability": {"what": "x", "values": list(values), "spread": spread(list(values))},
    }


def test_targets_met():
    verdicts = targets(_report())
    assert [met for *_, met in verdicts] == [True] * 7
    # the harness target looks only at runs predicted at or below 2,000 req/s: 400 users' 0.5 is left out
    assert verdicts[0][1] == pytest.approx(0.99)


def test_targets_missed_each_for_its_own_reason():
    report = _report(ratio=0.9, ready=2.5, wall=400.0, inside=200.0, values=(2.0, 2.3, 1.9))
    missed = [what for what, _, _, met in targets(report) if not met]
    assert len(missed) == 5
    assert any("server ready" in m for m in missed)
    assert any("share inside" in m for m in missed)


def test_targets_skip_what_was_not_measured():
    assert targets({"harness": None, "batch": None}) == []


def test_table_lists_every_run_and_every_target():
    text = table(_report())
    assert text.count("\n") >= 2 + 7
    assert "MISS" not in text


def test_report_is_strict_json():
    report = plain({"a": [1.0, float("nan")], "b": {"c": float("nan")}, "d": (2, 3)})
    assert report == {"a": [1.0, None], "b": {"c": None}, "d": [2, 3]}
    json.loads(json.dumps(report, allow_nan=False))


def test_locust_rps_reads_its_json_file(tmp_path):
    path = tmp_path / "locust.json"
    path.write_text(json.dumps([{"num_requests": 101, "start_time": 10.0, "last_request_timestamp": 12.0}]))
    assert locust_rps(path) == pytest.approx(50)
    assert math.isnan(locust_rps(tmp_path / "missing.json"))


def test_numpy_scalars_become_plain_numbers():
    frame = pd.DataFrame({"users": [50], "ok": [True], "rps": [float("nan")]})
    row = plain(frame.assign(ok=frame["ok"].astype(bool)).to_dict("records")[0])
    assert json.loads(json.dumps(row, allow_nan=False)) == {"users": 50, "ok": True, "rps": None}


def test_windows_per_lesson():
    runs = pd.DataFrame({
        "started_at": ["2026-01-01T00:01:00+00:00"] * 3, "lesson": ["00_start_here", "00_start_here", None],
        "window_s": [4.0, 4.5, 1.0],
    })  # fmt: skip
    t = pd.Timestamp("2026-01-01T00:01:00+00:00").timestamp()
    per_lesson = windows(runs, t, t + 10)
    assert per_lesson.loc["00_start_here", "measuring_s"] == pytest.approx(8.5)
    assert per_lesson.loc["00_start_here", "runs"] == 2
    assert per_lesson.loc["(none)", "runs"] == 1


def test_lesson_walls_reads_papermill_s_durations(tmp_path):
    (tmp_path / "00_start_here.ipynb").write_text(json.dumps({"metadata": {"papermill": {"duration": 46.5}}}))
    (tmp_path / "01_broken.ipynb").write_text("{")
    assert lesson_walls(tmp_path, since=0) == {"00_start_here": 46.5}
    assert lesson_walls(tmp_path, since=4e9) == {}  # written before the batch started: not this batch's


def test_table_gives_the_one_user_ceiling_beside_the_runs():
    report = {**_report(), "alone": {"rps": 9.86, "mean_ms": 101.4, "p50_ms": 101.3, "ratio": 0.986, "what": "x"}}
    assert "one user alone: 9.86 req/s, mean 101.4 ms: 0.986 of Little's law" in table(report)
    assert "one user alone" not in table(_report())


def test_the_layer_is_held_to_its_median_round_and_its_time_per_request():
    layer = {
        "routes": [{"route": "GET /catalog", "users": 8, "cost": 0.004, "cost_min": -0.03, "cost_max": 0.04}],
        "median_rps": {"GET /catalog": 200.0},  # 5,000 µs a request
        "cost": 0.004,
        "per_request_us": 1.5,
    }
    verdicts = targets({"layer": layer})
    assert [(round(value, 3), met) for _, value, _, met in verdicts] == [(0.4, True), (0.03, True)]
    assert not targets({"layer": {**layer, "cost": 0.012}})[0][3]  # 1.2% of throughput: over the 1%
    assert "+0.40%" in table({"layer": layer}) and "+1.50 µs" in table({"layer": layer})

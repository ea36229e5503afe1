"""An open loop's figures: the schedule kept, the throughput served, latency from the intended time."""

import math
from types import SimpleNamespace

import pytest

from labserver.harness.plans.plan import Stage
from labserver.harness.rows import arrivals
from labserver.harness.rows.records import Record


def _schedule(rate: float, seconds: float, latency_s, late_s=lambda t: 0.0, ok=lambda t: True) -> list[Record]:
    """Requests meant to leave every 1 / rate s from 0, each sent `late_s(t)` late and answered `latency_s(t)` after."""
    out = []
    for k in range(int(rate * seconds)):
        t = k / rate
        sent = t + late_s(t)
        end = sent + latency_s(t)
        out.append(Record(end, (end - sent) * 1000, ok(t), 7, 0, t))
    return out


def test_a_kept_schedule_gives_its_rate_and_latency_from_the_schedule():
    a = arrivals.measure([_schedule(100, 9, lambda t: 0.05)], 0.0, 9.0)
    assert a.scheduled_rate == pytest.approx(100) and a.sent_rate == pytest.approx(100)
    assert a.kept_up == pytest.approx(1.0) and a.shed == 0.0
    assert a.served_rps == pytest.approx(100, rel=0.01)  # but the last 50 ms of replies, after the window
    assert a.p95_ms == pytest.approx(50.0) and a.p95_thirds_ms == pytest.approx((50.0, 50.0, 50.0))
    assert arrivals.problem(a) is None


def test_a_growing_backlog_shows_in_the_last_third_and_throughput_is_what_came_back_in_the_window():
    a = arrivals.measure([_schedule(100, 9, lambda t: 0.05 + 0.2 * t)], 0.0, 9.0)
    first, _, last = a.p95_thirds_ms
    assert last > 2 * first
    # replies come back ever later: those sent after ~7.5 s land after the window
    assert a.served_rps < 0.9 * a.scheduled_rate


def test_a_generator_that_falls_behind_invalidates_the_run_and_its_wait_is_counted():
    # from 6 s on, every send leaves later and later: the last third goes out short
    late = lambda t: max(0.0, t - 6.0) * 0.5  # noqa: E731
    a = arrivals.measure([_schedule(100, 9, lambda t: 0.01, late_s=late)], 0.0, 9.0)
    assert a.kept_up < 1 - arrivals.ON_TIME
    assert "fell behind" in arrivals.problem(a)
    assert a.p99_ms > 1000  # latency from the schedule includes the late send (Locust's own would not)


def test_shed_requests_are_counted_apart_from_the_latency_of_the_accepted():
    shed_every_third = lambda t: round(t * 100) % 3 != 0  # noqa: E731
    a = arrivals.measure([_schedule(300, 3, lambda t: 0.1, ok=shed_every_third)], 0.0, 3.0)
    assert a.shed == pytest.approx(1 / 3, abs=0.01) and a.served_rps == pytest.approx(200, rel=0.05)


def test_a_closed_loops_records_are_not_an_open_loops():
    a = arrivals.measure([[Record(1.0, 5.0, True)]], 0.0, 2.0)
    assert a.requests == 0 and math.isnan(a.p95_ms)
    assert arrivals.problem(a) == "no request was scheduled in the window"


def test_a_run_with_a_rate_needs_no_users():
    server = SimpleNamespace(url="http://127.0.0.1:1")
    stage = Stage.from_run({"pattern": "threadpool", "rate": 50.0, "io_ms": 100}, 5, server=server)
    assert stage.users == 1 and stage.workload.rate == 50.0 and stage.locust()["rate"] == 50.0
    with pytest.raises(ValueError, match="users or a rate"):
        Stage.from_run({"pattern": "threadpool"}, 5, server=server)


def test_the_correction_restores_the_requests_a_stalled_closed_loop_never_sent():
    # 10 ms replies, and one reply of 1 s: the user would have sent ~99 requests meanwhile
    latencies = [10.0] * 990 + [1000.0]
    out = arrivals.corrected_percentiles(latencies, interval_ms=10.0)
    assert out["recorded"][99] == pytest.approx(10.0, rel=0.01)  # the stall hides below the 99th
    assert out["counts"]["corrected"] == pytest.approx(990 + 100, abs=1)
    assert out["corrected"][99] > 500  # with the missing ones back, 1 in 11 waited for most of a second
    assert arrivals.corrected_percentiles([10.0] * 100, 10.0)["corrected"][99] == pytest.approx(10.0, rel=0.01)
    with pytest.raises(ValueError, match="interval_ms"):
        arrivals.corrected_percentiles(latencies, interval_ms=0)


def test_the_correction_adds_no_request_shorter_than_the_interval():
    # a reply 1.5 intervals long: the user missed no send (the next would have left 10 ms in, and waited 5): none
    # added, and no reply under the interval, so the corrected median stays the recorded one
    out = arrivals.corrected_percentiles([10.0] * 50 + [15.0] * 50, interval_ms=10.0)
    assert out["counts"]["corrected"] == 100
    assert out["corrected"][50] == pytest.approx(out["recorded"][50], rel=0.01)
    assert arrivals.corrected_percentiles([35.0], interval_ms=10.0)["counts"]["corrected"] == 3  # 35, 25 and 15


def test_by_third_reads_both_loops():
    open_loop = _schedule(100, 9, lambda t: 0.05 + 0.1 * t)
    closed = [[Record(t + 0.05, 50.0, True) for t in (0.5, 3.5, 6.5)]]
    first, _, last = arrivals.by_third([open_loop], 0.0, 9.0)
    assert last > first
    mean_first, _, mean_last = arrivals.by_third([open_loop], 0.0, 9.0, "mean")
    assert mean_first == pytest.approx(50 + 100 * 1.5, rel=0.01)
    assert mean_last == pytest.approx(50 + 100 * 7.5, rel=0.01)
    assert arrivals.by_third(closed, 0.0, 9.0) == pytest.approx((50.0, 50.0, 50.0))
    with pytest.raises(ValueError, match="statistic"):
        arrivals.by_third(closed, 0.0, 9.0, "p99")


def test_thirds_and_growth_read_an_overload_as_the_model_does():
    rising = _schedule(100, 9, lambda t: 0.1 + 0.2 * t)  # ρ − 1 = 0.2: 0.2 s more wait every second
    flat = [[Record(t + 0.12, 120.0, True) for t in (0.5, 3.5, 6.5)]]
    table = arrivals.thirds({"open loop": ([rising], (0.0, 9.0)), "closed loop": (flat, (0.0, 9.0))})
    assert list(table.columns) == ["open loop, mean", "open loop, p95", "closed loop, mean", "closed loop, p95"]
    assert list(table.index) == ["first third", "middle third", "last third"]
    first, last = table.loc["first third", "open loop, mean"], table.loc["last third", "open loop, mean"]
    assert arrivals.growth_s_per_s(first, last, (0.0, 9.0)) == pytest.approx(0.2, rel=0.01)
    assert table["closed loop, mean"].tolist() == pytest.approx([120.0] * 3)


def test_omission_sets_the_three_ways_side_by_side():
    closed = [[Record(1.0 + k * 0.01, 10.0, True) for k in range(990)] + [Record(20.0, 1000.0, True)]]
    opened = [_schedule(100, 10, lambda t: 0.01 if t % 5 > 0.5 else 0.5)]
    table, counts = arrivals.omission(closed, 0.0, 10.0, opened)
    assert list(table.columns) == ["p50_ms", "p95_ms", "p99_ms"]
    assert table.loc["closed loop, as recorded", "p99_ms"] == pytest.approx(10.0, rel=0.01)
    assert table.loc["closed loop, corrected (HdrHistogram)", "p99_ms"] > 500
    assert table.loc["open loop, from the intended time", "p99_ms"] > 400  # a tenth of its requests met a stall
    assert counts["corrected"] > counts["recorded"]


def test_over_time_counts_from_the_first_intended_send_unless_told():
    shifted = [[r._replace(end=r.end + 100, intended=r.intended + 100) for r in _schedule(10, 1, lambda t: 0.05)]]
    assert arrivals.over_time(shifted)["t_s"].tolist() == pytest.approx([k / 10 for k in range(10)])
    assert arrivals.over_time(shifted, 100.5)["t_s"].iloc[0] == pytest.approx(-0.5)
    assert arrivals.over_time([]).empty


def test_one_stall_moves_a_thirds_p95_but_not_its_mean_much():
    # every request waits 50 ms, but those meant to leave in a quarter second 1 s in wait 150 ms more
    stall = lambda t: 0.05 + (0.15 if 1.0 <= t < 1.25 else 0.0)  # noqa: E731
    a = arrivals.measure([_schedule(100, 9, stall)], 0.0, 9.0)
    (p95_first, _, p95_last), (mean_first, _, mean_last) = a.p95_thirds_ms, a.mean_thirds_ms
    assert p95_first == pytest.approx(200.0) and p95_last == pytest.approx(50.0)
    assert mean_first == pytest.approx(50.0 + 150.0 * 25 / 300, rel=0.02) and mean_last == pytest.approx(50.0)
    assert arrivals.row(a)["mean_first_third_ms"] == a.mean_thirds_ms[0]


def test_replayed_answers_the_same_arrivals_as_the_queue_would():
    measured = [_schedule(100, 9, lambda t: 0.05, ok=lambda t: t < 8)]  # 100 arrivals a second, every 10 ms
    calm = arrivals.replayed(measured, service_s=0.012, hold_s=0.008, slots=1)  # ρ = 0.8 on one slot
    assert [len(u) for u in calm] == [len(u) for u in measured]
    assert [r.intended for r in calm[0]] == [r.intended for r in measured[0]]
    assert [r.ok for r in calm[0]] == [r.ok for r in measured[0]]  # averaged over the same requests
    # below capacity no arrival waits: latency is the service S alone, counted from the intended time
    assert [r.from_intended_ms for r in calm[0]] == pytest.approx([12.0] * len(calm[0]))
    over = arrivals.replayed(measured, service_s=0.012, hold_s=0.015, slots=1)  # ρ = 1.5
    first, _, last = arrivals.by_third(over, 0.0, 9.0, "mean")
    # the wait grows 0.5 s a second; the last third counts only the answered (t < 8): centres 1.5 s and 7 s
    assert arrivals.growth_s_per_s(first, last, (0.0, 9.0)) == pytest.approx(0.5 * (7 - 1.5) / 6, rel=0.01)
    with pytest.raises(ValueError, match="open loop"):
        arrivals.replayed([[Record(1.0, 10.0, True)]], 0.01, 0.01, 1)

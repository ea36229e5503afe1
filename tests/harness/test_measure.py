"""Throughput and latency from per-request records, on synthetic runs whose answer is known."""

import math

import numpy as np
import pytest

from labserver.harness.rows.measure import measure, warmup_end
from labserver.harness.rows.records import Record


def steady(users: int, every_s: float, until_s: float, latency_ms: float = 50.0, offset_s: float = 0.0):
    """Each user finishes a request every `every_s` seconds, users staggered evenly."""
    per_user = []
    for u in range(users):
        t = offset_s + every_s * u / users
        records = []
        while t <= until_s:
            records.append(Record(t, latency_ms, True))
            t += every_s
        per_user.append(records)
    return per_user


def test_steady_flow_is_exact():
    # 4 users, one request each per 0.1 s: 40 req/s
    m = measure(steady(4, 0.1, 10.0), start=0.0, warmup_s=1.0)
    assert m.method == "per-user"
    assert m.rps == pytest.approx(40)
    assert m.failures == 0


def test_synchronized_bursts_are_exact():
    # 10 users whose requests all end together once a second (a 1 s wait behind a shared lock):
    # per-second counts jump between 0 and 10 depending on where a second boundary falls
    per_user = [[Record(float(t) + 0.999, 1000.0, True) for t in range(10)] for _ in range(10)]
    m = measure(per_user, start=0.0, warmup_s=1.0)
    assert m.method == "per-user"
    assert m.rps == pytest.approx(10)
    assert m.requests == 90


def test_users_at_different_paces_add_up():
    fast = steady(1, 0.05, 10.0)[0]  # 20 req/s
    slow = steady(1, 0.5, 10.0)[0]  # 2 req/s
    assert measure([fast, slow], start=0.0, warmup_s=1.0).rps == pytest.approx(22)


def test_warm_up_is_excluded():
    per_user = steady(2, 0.1, 10.0, latency_ms=20.0)
    # a slow first second: huge latencies and extra completions that must not count
    warm = [[Record(0.05 * i, 5000.0, False) for i in range(20)] for _ in per_user]
    mixed = [sorted(w + r) for w, r in zip(warm, per_user, strict=True)]
    m = measure(mixed, start=0.0, warmup_s=1.0, settle_requests=0)  # the fixed cut: the whole first second
    clean = measure(per_user, start=0.0, warmup_s=1.0, settle_requests=0)
    assert m == clean
    assert m.p95_ms == pytest.approx(20.0)
    assert m.failures == 0
    assert m.requests == sum(1 for user in per_user for r in user if r.end >= 1.0)


def test_latency_percentiles_and_failures():
    latencies = [10.0 * (i + 1) for i in range(100)]
    per_user = [[Record(1.0 + i * 0.01, ms, i % 10 != 0) for i, ms in enumerate(latencies)]]
    m = measure(per_user, start=0.0, warmup_s=1.0)
    expected = np.percentile(latencies, [50, 95, 99])
    assert (m.p50_ms, m.p95_ms, m.p99_ms) == pytest.approx(tuple(expected))
    assert m.mean_ms == pytest.approx(np.mean(latencies))
    assert m.failures == 10
    assert m.requests == 100


def test_count_fallback_when_a_user_finishes_fewer_than_two_requests():
    # one request per user after the warm-up (queued, slow requests): count over the window
    per_user = [[Record(2.0, 900.0, True)], [Record(3.0, 1900.0, True)], [Record(5.0, 3900.0, True)]]
    m = measure(per_user, start=0.0, warmup_s=1.0)
    assert m.method == "count"
    assert m.rps == pytest.approx(2 / (5.0 - 2.0))  # two intervals from the first reply to the last
    assert m.window_s == pytest.approx(3.0)


def test_counting_a_steady_one_by_one_flow_gives_its_rate_wherever_the_cut_falls():
    # 50 users answered one at a time every 100 ms (a blocked loop): each user's next reply is 5 s off
    for offset in (0.001, 0.05, 0.099):
        per_user = [[Record(offset + 0.1 * k, 100.0, True)] for k in range(1, 50)]
        m = measure(per_user, start=0.0, warmup_s=1.0)
        assert m.method == "count"
        assert m.rps == pytest.approx(10.0)


def test_one_reply_after_the_warm_up_is_no_rate():
    assert math.isnan(measure([[Record(2.0, 900.0, True)]], start=0.0, warmup_s=1.0).rps)


def test_a_user_with_nothing_after_the_warm_up_falls_back_to_counting():
    per_user = [*steady(2, 0.1, 5.0), [Record(0.5, 10.0, True)]]
    assert measure(per_user, start=0.0, warmup_s=1.0).method == "count"


@pytest.mark.parametrize(
    "per_user", [[], [[]], [[Record(0.5, 10.0, True)]]], ids=["no users", "no records", "all warm-up"]
)
def test_nothing_measured_is_nan(per_user):
    m = measure(per_user, start=0.0, warmup_s=1.0)
    assert math.isnan(m.rps)
    assert math.isnan(m.p95_ms)
    assert m.requests == 0
    assert m.method == "none"


def test_warm_up_ends_once_every_user_is_in_its_loop():
    # 10 users, 0.1 s cycles, staggered over the first cycle: all have two replies by 0.19 s
    per_user = steady(10, 0.1, 5.0)
    assert warmup_end(per_user, start=0.0, warmup_s=1.0) == pytest.approx(0.19)
    m = measure(per_user, start=0.0, warmup_s=1.0)
    assert m.window_start == pytest.approx(0.19)
    assert m.window_s > measure(per_user, start=0.0, warmup_s=1.0, settle_requests=0).window_s + 0.7
    assert m.rps == pytest.approx(100)


def test_slow_first_requests_stay_in_the_warm_up():
    # every user's first reply is slow (connections being opened); then 50 ms replies every 0.1 s
    per_user = [
        [Record(0.3 + 0.01 * u, 300.0, True)] + [Record(0.4 + 0.01 * u + 0.1 * i, 50.0, True) for i in range(40)]
        for u in range(5)
    ]
    m = measure(per_user, start=0.3, warmup_s=1.0)
    assert m.p99_ms == pytest.approx(50.0)
    assert m.rps == pytest.approx(50)


def test_a_user_that_has_not_settled_keeps_the_cap():
    per_user = [*steady(3, 0.1, 5.0), [Record(2.5, 2500.0, True)]]  # a queued user, one slow reply
    assert warmup_end(per_user, start=0.0, warmup_s=1.0) == 1.0
    assert warmup_end([], start=0.0, warmup_s=1.0) == 1.0


def test_the_cut_never_precedes_the_start():
    per_user = steady(2, 0.1, 3.0)  # replies from t=0, but the run's clock says it started at 0.5
    assert warmup_end(per_user, start=0.5, warmup_s=1.0) == 0.5


def test_users_already_in_their_loop_need_no_reply():
    per_user = steady(4, 0.1, 5.0)  # replies from 0.1 s on, staggered over the first cycle
    assert warmup_end(per_user, start=0.5, warmup_s=1.0, settle_requests=[0, 0, 0, 0]) == 0.5
    # one user joining needs its two replies; the others none
    joined = [[r._replace(end=r.end + 0.6) for r in per_user[0]], *per_user[1:]]
    assert warmup_end(joined, start=0.5, warmup_s=1.0, settle_requests=[2, 0, 0, 0]) == pytest.approx(0.7)
    with pytest.raises(ValueError, match="3 counts for 4 users"):
        warmup_end(per_user, start=0.5, settle_requests=[0, 0, 0])

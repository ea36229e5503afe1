"""The timeout model: a fair worker simulated request by request, and the floor no order can beat."""

import pandas as pd
import pytest

from labserver.theory.timeouts import (
    failure_floor,
    goodput,
    history,
    outlook,
    predict_timeouts,
    queue_s,
    simulate,
    starvation,
    users_answered,
)


def test_queue_is_users_times_service_over_workers():
    assert queue_s(50, 0.1) == pytest.approx(5.0)
    assert queue_s(50, 0.1, workers=2) == pytest.approx(2.5)


def test_floor_is_one_minus_timeout_over_queue():
    assert failure_floor(50, 0.1, 2.0) == pytest.approx(1 - 2 / 5)
    assert failure_floor(50, 0.1, 2.0, workers=2) == pytest.approx(1 - 2 / 2.5)


def test_no_floor_when_the_timeout_outlasts_the_queue():
    assert failure_floor(50, 0.1, 5.0) == 0.0
    assert failure_floor(10, 0.1, 60.0) == 0.0


def test_a_timeout_longer_than_the_queue_loses_nothing():
    outcomes = simulate(20, 0.1, timeout_s=5.0, duration_s=10.0)
    assert all(o.ok for o in outcomes)
    # one worker answers one request per service time, from the first to the last
    assert len(outcomes) == pytest.approx(10.0 / 0.1, abs=1)
    # after the first wave every request waits for the whole queue: 20 × 0.1 s
    later = [o.ended - o.sent for o in outcomes if o.sent > 2.0]
    assert later and all(lat == pytest.approx(2.0) for lat in later)


def test_first_wave_answers_what_fits_in_the_timeout():
    # 50 requests at once, 0.1 s each, 3 s timeout: 30 answered by 3 s, the other 20 give up at 3 s
    first = [o for o in simulate(50, 0.1, timeout_s=3.0, duration_s=3.5) if o.sent == 0.0]
    assert sum(o.ok for o in first) == 30
    assert [o.ended for o in first if not o.ok] == [pytest.approx(3.0)] * 20


def test_abandoned_requests_still_cost_the_worker():
    outcomes = simulate(50, 0.1, timeout_s=1.0, duration_s=20.0)
    failed = [o for o in outcomes if not o.ok]
    assert failed
    assert all(o.served > o.ended for o in failed)  # served after its client left


def test_a_fair_worker_drifts_towards_every_request_failing():
    short = predict_timeouts(50, 0.1, timeout_s=2.0, duration_s=5.0)
    long = predict_timeouts(50, 0.1, timeout_s=2.0, duration_s=60.0)
    assert short.failure_rate < long.failure_rate
    assert long.failure_rate > 0.95
    assert long.goodput_rps < 0.05 * (1 / 0.1)
    assert long.served_rps == pytest.approx(1 / 0.1, rel=0.01)  # busy all along, for nobody


@pytest.mark.parametrize(("users", "timeout_s", "workers"), [(50, 2.0, 1), (100, 3.0, 1), (40, 1.0, 2), (30, 2.5, 1)])
def test_a_fair_worker_never_beats_the_floor(users, timeout_s, workers):
    p = predict_timeouts(users, 0.1, timeout_s, duration_s=30.0, workers=workers)
    assert p.failure_rate >= failure_floor(users, 0.1, timeout_s, workers)


def test_counts_add_up():
    p = predict_timeouts(50, 0.1, timeout_s=3.0, duration_s=6.0, warmup_s=1.0)
    assert p.rps == pytest.approx(p.requests / 5.0)
    assert p.goodput_rps == pytest.approx((p.requests - p.failures) / 5.0)
    assert p.failure_rate == pytest.approx(p.failures / p.requests)


def test_history_counts_every_outcome_by_second():
    outcomes = simulate(20, 0.1, timeout_s=1.0, duration_s=6.0)
    h = history(outcomes)
    assert list(h.columns) == ["second", "answered", "rps", "failures"]
    assert h["rps"].sum() == len(outcomes)
    assert h["failures"].sum() == sum(not o.ok for o in outcomes)
    assert list(h["second"]) == list(range(len(h)))


def test_history_of_nothing_is_empty():
    assert history([]).empty


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [({"users": 0}, "users"), ({"users": 2.5}, "users"), ({"service_s": 0}, "service_s"),
     ({"timeout_s": -1}, "timeout_s"), ({"duration_s": 0}, "duration_s"), ({"workers": 0}, "workers")],
)  # fmt: skip
def test_bad_input_says_what_to_change(kwargs, word):
    args = {"users": 10, "service_s": 0.1, "timeout_s": 1.0, "duration_s": 5.0, "workers": 1, **kwargs}
    with pytest.raises(ValueError, match=word):
        simulate(**args)


def test_warmup_must_leave_a_window():
    with pytest.raises(ValueError, match="warmup_s"):
        predict_timeouts(10, 0.1, 1.0, duration_s=2.0, warmup_s=2.0)


def test_outlook_gathers_the_queue_the_floor_and_a_fair_queue_s_run():
    seen = outlook(50, 0.1, timeout_s=2.0, duration_s=5.0, workers=1)
    assert seen.queue_s == queue_s(50, 0.1)
    assert seen.timeout_s == 2.0
    assert seen.floor == failure_floor(50, 0.1, 2.0)
    assert seen.fair == predict_timeouts(50, 0.1, 2.0, 5.0)


def test_outlook_frame_is_one_row_in_the_lesson_s_words():
    seen = outlook(50, 0.1, timeout_s=2.0, duration_s=5.0, workers=2)
    frame = seen.frame()
    assert list(frame.columns) == ["queue_s", "timeout_s", "floor (any order)", "fair queue, this run"]
    assert frame.iloc[0].tolist() == [seen.queue_s, 2.0, seen.floor, seen.fair.failure_rate]


def test_outlook_checks_its_input():
    with pytest.raises(ValueError, match="timeout_s"):
        outlook(50, 0.1, timeout_s=0, duration_s=5.0)


def test_a_fair_queue_answers_every_user_whose_turn_comes_within_the_run():
    # one request per 0.25 s: 3.9 s reach 15 users, whoever waits behind them is never answered
    assert users_answered(50, 0.25, duration_s=3.9) == 15
    assert users_answered(50, 0.25, duration_s=3.9, workers=2) == 30
    assert users_answered(10, 0.25, duration_s=3.9) == 10  # the queue fits in the run: everyone


def test_goodput_leaves_the_timeouts_out():
    assert goodput({"requests": 120, "failures": 90, "window_s": 3.0}) == pytest.approx(10.0)
    assert goodput(pd.Series({"requests": 40, "failures": 0, "window_s": 4.0})) == pytest.approx(10.0)


def test_starvation_splits_the_failures_into_starved_users_give_ups_and_answers():
    row = {"requests": 60, "failures": 20, "window_s": 4.0, "rps": 15.0, "failure_rate": 1 / 3}
    split = starvation([0, 0, 0, 0, 7, 9], row, timeout_s=2.0, cap=10.0)
    assert (split.users, split.starved) == (6, 4)
    assert split.gave_up_rps == pytest.approx(2.0)  # four users, each giving up once per 2 s
    assert split.goodput_rps == pytest.approx(10.0)  # (60 − 20) / 4 s
    assert split.expected_failure_rate == pytest.approx(2 / 12)
    shown = split.frame()
    assert shown.loc[0, "users never answered"] == "4 of 6"
    assert shown.loc[0, "failure rate measured"] == pytest.approx(1 / 3)
    assert shown.loc[0, "Locust's rps, timeouts included"] == 15.0


def test_starvation_needs_a_timeout():
    with pytest.raises(ValueError, match="timeout_s"):
        starvation([0], {"requests": 1, "failures": 1, "window_s": 1.0, "rps": 1.0, "failure_rate": 1.0}, 0, 10.0)

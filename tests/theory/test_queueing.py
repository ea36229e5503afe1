"""Open-arrival queueing theory, against textbook values."""

import math

import pytest

from labserver.theory import queueing


def test_erlang_c_matches_the_textbook():
    # M/M/1: an arrival waits with probability ρ
    assert queueing.erlang_c(1, 0.7) == pytest.approx(0.7)
    # c = 2, a = 1 (ρ = 0.5): C = 1/3
    assert queueing.erlang_c(2, 1.0) == pytest.approx(1 / 3)
    # c = 40 at ρ = 0.5: waiting is rare; at ρ = 0.95 it is common
    assert queueing.erlang_c(40, 20.0) < 0.01
    assert queueing.erlang_c(40, 38.0) > 0.5
    assert queueing.erlang_c(3, 0.0) == 0.0 and queueing.erlang_c(3, 3.0) == 1.0


def test_md1_mean_wait_is_pollaczek_khinchine():
    # M/D/1: Wq = ρ S / (2 (1 − ρ))
    s, rho = 0.1, 0.8
    q = queueing.open_queue(rho / s, s, 1)
    assert q.mean_s == pytest.approx(s + rho * s / (2 * (1 - rho)))
    assert q.rho == pytest.approx(rho)


def test_mm1_mean_and_p95_are_exact():
    s, rho = 0.1, 0.5
    q = queueing.open_queue(rho / s, s, 1, deterministic=False)
    assert q.mean_s == pytest.approx(s / (1 - rho))  # M/M/1: W = S / (1 − ρ)
    # P(Wq > t) = ρ e^{−(μ − λ) t}: the 95th percentile of the wait
    assert q.p95_s == pytest.approx(s + math.log(rho / 0.05) / (1 / s - rho / s))


def test_latency_grows_with_utilisation_and_stays_near_the_service_time_when_light():
    s = 0.05
    light = queueing.open_queue(0.3 * 40 / s, s, 40)
    heavy = queueing.open_queue(0.95 * 40 / s, s, 40)
    assert light.mean_s == pytest.approx(s, rel=1e-3) and light.p95_s == pytest.approx(s)
    assert s < heavy.mean_s < heavy.p95_s


def test_overload_has_no_steady_state_and_its_backlog_grows_linearly():
    s, c = 0.05, 40  # 800 req/s of capacity
    assert math.isinf(queueing.open_queue(960, s, c).mean_s)
    assert queueing.backlog(960, s, c, 10) == pytest.approx(1600)
    assert queueing.backlog(400, s, c, 10) == 0.0
    # ρ = 1.2: a request arriving 10 s in waits (ρ − 1) × 10 s = 2 s beyond its own service
    assert queueing.overload_latency_s(960, s, c, 10) == pytest.approx(s + 2.0)


def test_shedding_tends_to_the_fluid_share_in_overload():
    s, c = 0.05, 40
    deep = queueing.shed_share(1200, s, c, limit=40)  # ρ = 1.5
    assert deep == pytest.approx(queueing.fluid_shed_share(1200, s, c), abs=0.02)
    assert queueing.fluid_shed_share(1200, s, c) == pytest.approx(1 / 3)
    assert queueing.shed_share(400, s, c, limit=40) < 1e-6  # ρ = 0.5: nobody is turned away
    # M/M/1/1 (one slot, no waiting room): Erlang's loss formula a / (1 + a)
    assert queueing.shed_share(1.0, 1.0, 1, limit=0) == pytest.approx(0.5)


def test_shedding_tabulates_m_m_c_k_the_fluid_limit_and_the_accepted_bound():
    shed = queueing.shedding(1.5, 0.1, 20, 20)  # 300 arrivals per second
    assert shed.shed == pytest.approx(queueing.shed_share(300, 0.1, 20, 20))
    assert shed.fluid == pytest.approx(1 / 3)
    assert shed.bound_ms == pytest.approx(200)  # its own service after one round of the 20 ahead
    assert queueing.accepted_bound_s(0.1, 20, 21) == pytest.approx(0.3)  # 21 ahead: two rounds
    assert list(shed.frame().columns) == [
        "ρ",
        "q (waiting)",
        "shed (M/M/c/K)",
        "shed (fluid limit)",
        "accepted latency bound (ms)",
    ]


def test_bad_inputs_say_what_to_change():
    with pytest.raises(ValueError, match="slots"):
        queueing.open_queue(10, 0.1, 0)
    with pytest.raises(ValueError, match="rate"):
        queueing.open_queue(-1, 0.1, 1)
    with pytest.raises(ValueError, match="limit"):
        queueing.shed_share(10, 0.1, 1, limit=-1)


def test_predict_open_serves_every_arrival_below_capacity_and_capacity_above():
    below = queueing.predict_open(100, 0.1, 20)  # ρ 0.5
    assert below.rps == 100 and below.latency_ms == pytest.approx(100, rel=0.01) and "ρ 0.50" in below.bottleneck
    above = queueing.predict_open(240, 0.1, 20)  # ρ 1.2
    assert above.rps == pytest.approx(200) and math.isinf(above.latency_ms) and "overloaded" in above.bottleneck
    shedding = queueing.predict_open(300, 0.1, 20, limit=20)  # ρ 1.5, K = 20
    assert shedding.rps == pytest.approx(300 * (1 - queueing.shed_share(300, 0.1, 20, 20)))
    assert shedding.latency_ms == pytest.approx(200)  # its own service after one round of the 20 ahead


def test_replay_serves_first_come_first_served_on_fixed_slots():
    # two slots held 1 s: the third arrival waits for the first slot, the fourth for the second
    assert queueing.replay([0.0, 0.0, 0.5, 0.6], 1.0, 2) == pytest.approx([0.0, 0.0, 0.5, 0.4])
    # order given is kept: the waits come back in the caller's order, not the sorted one
    assert queueing.replay([0.6, 0.0, 0.5, 0.0], 1.0, 2) == pytest.approx([0.4, 0.0, 0.5, 0.0])
    # below capacity, spaced arrivals never wait
    assert queueing.replay([k * 0.6 for k in range(10)], 1.0, 2) == [0.0] * 10
    with pytest.raises(ValueError, match="hold_s"):
        queueing.replay([0.0], 0.0, 2)


def test_replay_of_an_even_overload_is_the_fluid_model():
    s, c, rate = 0.1, 20, 240.0  # ρ = 1.2
    times = [k / rate for k in range(int(rate * 10))]
    waits = queueing.replay(times, s, c)
    # 9 s in, the wait is (ρ − 1) t, within one slot's turn
    i = int(rate * 9)
    assert waits[i] == pytest.approx(queueing.overload_latency_s(rate, s, c, times[i]) - s, abs=s / c * 2)


def test_replay_carries_a_schedules_chance_run():
    s, c = 0.1, 20
    even = [k / 240 for k in range(2400)]
    bunched = sorted(even + [5.0] * 40)  # 40 extra arrivals at once, 5 s in
    after = queueing.replay(bunched, s, c)[bunched.index(5.0) + 40 + 10]
    before = queueing.replay(even, s, c)[even.index(5.0) + 10]
    assert after - before == pytest.approx(40 * s / c, rel=0.05)  # 40 more ahead, each 1/capacity s


def test_the_wait_for_one_slot_is_pollaczek_khinchine_and_many_slots_wait_far_less():
    table = queueing.waits([0.5, 0.8, 0.9], [1, 20])
    # M/D/1: Wq = ρ S / (2 (1 − ρ)), 2 services at ρ = 0.8
    assert table["1 slot"].tolist() == pytest.approx([0.5, 2.0, 4.5])
    assert (table["20 slots"] < 0.2 * table["1 slot"]).all()
    assert table["20 slots"].loc[0.8] < 0.05  # twenty slots barely wait at 80% busy
    # one core shared in turns (processor sharing): a request takes S / (1 − ρ), a wait of ρ / (1 − ρ) services
    assert table["1 slot, shared in turns"].tolist() == pytest.approx([1.0, 4.0, 9.0])


def test_latencies_tabulate_open_queue_at_each_utilisation():
    table = queueing.latencies([0.5, 0.9], 0.1, 20)
    assert table["rate"].tolist() == pytest.approx([100.0, 180.0])  # ρ c / S
    q = queueing.open_queue(180.0, 0.1, 20)
    assert table.loc[1, ["mean_ms", "p95_ms"]].tolist() == pytest.approx([q.mean_s * 1000, q.p95_s * 1000])


def test_overload_line_draws_the_fluid_model_every_tenth_of_a_second():
    line = queueing.overload_line(12.0, 0.1, 1, 2)  # ρ 1.2: the wait grows 0.2 s a second
    assert list(line.columns) == ["t_s", "latency_ms"]
    assert line["t_s"].iloc[-1] == 2.0 and len(line) == 21
    assert line["latency_ms"].iloc[-1] == pytest.approx(100 + 0.2 * 2 * 1000)


def _sweep():
    import pandas as pd

    runs = pd.DataFrame(
        {"scheduled_rate": [3.0, 6.1, 8.0, 9.5], "intended_mean_ms": [100.0, 110.0, 150.0, 400.0],
         "intended_p95_ms": [100.0, 120.0, 300.0, 900.0]}
    )  # fmt: skip
    return queueing.against_model(runs, [0.3, 0.6, 0.8, 0.95], 0.1, 1)  # one slot of 0.1 s: capacity 10


def test_against_model_prices_each_run_at_the_rate_its_schedule_sent():
    sweep = _sweep()
    assert list(sweep["target_rho"]) == [0.3, 0.6, 0.8, 0.95]
    assert list(sweep["rho"]) == pytest.approx([0.3, 0.61, 0.8, 0.95])
    assert sweep["model_mean_ms"].iloc[2] == pytest.approx(queueing.open_queue(8.0, 0.1, 1).mean_s * 1000)
    assert sweep["model_p95_ms"].iloc[0] == pytest.approx(queueing.open_queue(3.0, 0.1, 1).p95_s * 1000)


def test_fit_reads_the_runs_up_to_a_rho_and_the_run_nearest_another():
    sweep = _sweep()
    fit = queueing.fit(sweep, up_to=0.8, near=0.6)
    assert list(fit.low["target_rho"]) == [0.3, 0.6, 0.8]  # 0.95 left out
    ratios = sweep["intended_mean_ms"].iloc[:3] / sweep["model_mean_ms"].iloc[:3]
    worst = ratios.iloc[(ratios - 1).abs().argmax()]
    assert fit.furthest == pytest.approx(worst) and fit.miss == pytest.approx(abs(worst - 1))
    assert fit.near["target_rho"] == 0.6
    assert list(fit.measured.columns) == ["rho", "mean_ms", "p95_ms"]
    assert fit.measured["p95_ms"].iloc[-1] == 900.0

"""Lesson 03's readings: the ratios its titles and claims quote, from runs built by hand."""

import math

import pandas as pd
import pytest

from labserver.lessons import cpu_bound

ONE_CORE = ["threadpool", "sequential"]


def _runs(
    rps: dict[str, list[float]], server_cpu: dict[str, float], cores: float = 2.0, before: dict | None = None
) -> pd.DataFrame:
    before = before or {}
    rows = [
        dict(pattern=p, round=r, rps=x, predicted_rps=x, predicted_before_rps=before.get(p, x),
             server_cpu=server_cpu[p], server_ms=server_cpu[p] / x * 1000,
             workers=1, procs=2, threads=40, usable_cores=cores, machine_cpu=server_cpu[p] + 0.2)
        for p, values in rps.items()
        for r, x in enumerate(values)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def test_fib_alone_reads_the_pool_over_the_one_core_patterns():
    runs = _runs(
        {"threadpool": [100, 100], "sequential": [110, 90], "processpool": [190, 190], "hashed": [150, 150]},
        {"threadpool": 1.0, "sequential": 1.0, "processpool": 1.8, "hashed": 1.8},
    )
    fib = cpu_bound.fib_alone(runs, ONE_CORE)
    assert fib.factor == pytest.approx(1.9)
    assert fib.async_vs_threads == pytest.approx(1.0)  # the median of 1.1 and 0.9
    assert fib.one_core_cpu == pytest.approx(1.0)
    # the pool's requests cost 1.8 / 190 s of CPU, the one-core patterns' 1 / 100 and 1 / 110, 1 / 90
    assert fib.speed == pytest.approx((1000 / 100 + (1000 / 110 + 1000 / 90) / 2) / 2 / (1800 / 190))
    # 2 cores less Locust's 0.2 left 1.8: the pool and the digest kept all of it busy
    assert fib.busy["processpool"] == pytest.approx(1.0) and fib.busy["hashed"] == pytest.approx(1.0)
    assert fib.busy["threadpool"] == pytest.approx(1.0)  # one usable core: all of it


def test_no_second_core_reads_nearer_one_core_each_than_a_second_core():
    runs = _runs(
        {"threadpool": [100, 100], "sequential": [80, 80], "processpool": [190, 190]},
        {"threadpool": 1.0, "sequential": 1.0, "processpool": 1.8},
        before={"threadpool": 100.0, "sequential": 110.0},
    )
    fib = cpu_bound.fib_alone(runs, ONE_CORE)
    assert fib.predicted_ratio == pytest.approx(1.1)  # printed beside the claim: async's CPU priced cheaper
    low, high = cpu_bound.ONE_GIL_BAND
    # a thread pool on two cores would read ½: the band starts halfway there from 1, on a log scale
    assert math.log(1 / low) == pytest.approx(math.log(2) / 2) and high == pytest.approx(1 / low)
    assert fib.async_vs_threads == pytest.approx(0.8) and low < 0.8  # 0.8 is nearer 1 than ½
    assert not low < 0.7 < high  # 0.7 is nearer a second core's ½ than 1


def test_with_sleep_reads_the_pool_and_the_threads_against_async_and_the_busy_shares():
    busy = {"threadpool": 1.0, "sequential": 1.0, "processpool": 1.8}
    mix = cpu_bound.with_sleep(
        _runs(
            {"threadpool": [80], "sequential": [100], "processpool": [200]},
            {**busy, "threadpool": 0.8},
            before={"threadpool": 64.0, "sequential": 100.0, "processpool": 180.0},
        )
    )
    assert mix.factor == pytest.approx(200 / 100)  # against async: the thread pool's in-step loss left out
    assert mix.predicted_factor == pytest.approx(180 / 100)  # the pool's dearer CPU priced before the runs
    assert mix.async_vs_threads == pytest.approx(1.25)
    assert mix.predicted_ratio == pytest.approx(100 / 64)  # as predicted before the runs
    assert mix.busy["threadpool"] == pytest.approx(0.8)  # its core idled while its users slept in step
    # where a ratio misses its prediction, each side against its own price says which one missed
    assert mix.of_before["threadpool"] == pytest.approx(80 / 64)
    assert mix.against_before("sequential", "threadpool") == "async 1.00 of its own, thread pool 1.25 of its own"


def test_sweep_names_where_the_cpu_took_over():
    curve = pd.DataFrame(
        dict(cpu_n=[15, 25], rps=[300.0, 100.0], predicted_rps=[310.0, 100.0], server_cpu=[0.3, 0.99],
             workers=1, procs=0, pattern="sequential", bottleneck=["users", "GIL (one core per worker)"],
             before_bottleneck=["users", "GIL (one core per worker)"],
             threads=40, usable_cores=2.0, machine_cpu=[0.4, 1.1])
    )  # fmt: skip
    read = cpu_bound.sweep(curve, io_ms=50, users=20)
    assert read.crossed == (15, 25)
    assert read.title == "The CPU takes over between fib(15) and fib(25)"
    assert read.knee_ms == pytest.approx(50 / 19)
    # the knee from fib alone, every depth priced from the deepest's timing, as the model's curve is
    assert read.knee_n == cpu_bound.knee_depth(50 / 19, range(15, 26))
    assert read.agree == 1.0
    assert "fib(15)" in read.costs and "fib(25)" in read.costs
    around = (math.floor(read.knee_n), math.ceil(read.knee_n))  # the timings its mark reads, printed beside it
    assert all(f"fib({n}) " in read.costs for n in around)


def test_fib_s_calls_grow_by_about_phi_a_level():
    assert [cpu_bound.calls(n) for n in range(6)] == [1, 1, 3, 5, 9, 15]
    assert cpu_bound.calls(25) / cpu_bound.calls(24) == pytest.approx((1 + 5**0.5) / 2, rel=1e-4)


def test_every_depth_is_priced_from_the_deepest_timing(monkeypatch):
    # fib(21) timed in a slow moment, 2.9x fib(20): the sweep's depths read fib(25)'s one timing, scaled by calls
    timed = {20: 1.05, 21: 3.05, 22: 2.75, 25: 11.82}
    monkeypatch.setattr(cpu_bound, "cpu_ms", timed.__getitem__)
    assert cpu_bound.fib_ms(25, 25) == 11.82
    assert cpu_bound.fib_ms(21, 25) == pytest.approx(11.82 * cpu_bound.calls(21) / cpu_bound.calls(25))
    knee = cpu_bound.knee_depth(2.63, range(20, 26))
    assert 21 < knee < 22  # where fib(25)'s timing puts 2.63 ms, not fib(21)'s slow one (20.9)
    low, high = cpu_bound.fib_ms(21, 25), cpu_bound.fib_ms(22, 25)
    assert knee == pytest.approx(21 + math.log(2.63 / low) / math.log(high / low))  # on a log scale between them
    assert math.isnan(cpu_bound.knee_depth(20.0, range(20, 26)))  # the deepest costs less: no crossing in range
    assert math.isnan(cpu_bound.knee_depth(0.5, range(20, 26)))  # the shallowest already costs more


def test_a_sweep_that_never_crossed_says_so():
    read = cpu_bound.Sweep(agree=1.0, crossed=None, knee_ms=math.inf, knee_n=math.nan, costs="")
    assert read.title == "The sweep did not cross from I/O to CPU"


def test_pena_s_figures_sit_beside_the_lesson_s_own(monkeypatch):
    # a planted sweep: his async / sync at FIB=25 and his async's fall from FIB=15 to 25, beside ours
    monkeypatch.setattr(cpu_bound.published, "PENA_SWEEP_RPS", {15: (300.0, 400.0), 25: (50.0, 80.0)})
    mix = cpu_bound.WithSleep(
        factor=1.0, predicted_factor=1.0, async_vs_threads=1.25, predicted_ratio=1.3, busy=pd.Series()
    )
    curve = pd.DataFrame({"cpu_n": [15, 20, 25], "rps": [900.0, 300.0, 90.0]})
    table = cpu_bound.beside_pena(None, mix, curve, cpu_n=20)  # type: ignore[arg-type]  # fib alone is not read
    assert table["article"].tolist() == [1.6, 0.2]  # 80 / 50, then 80 / 400
    assert table["ours"].tolist() == [1.25, pytest.approx(0.333)]  # fib(20) over fib(15): 300 / 900


def test_a_disturbed_round_leaves_the_means_where_the_pattern_has_a_quiet_one():
    runs = _runs(
        {"threadpool": [100, 100], "sequential": [100, 100], "processpool": [190, 120], "hashed": [150, 90]},
        {"threadpool": 1.0, "sequential": 1.0, "processpool": 1.8, "hashed": 1.8},
    )
    runs["disturbed"] = [False, False, False, False, False, True, False, True]
    fib = cpu_bound.fib_alone(runs, ONE_CORE)
    assert fib.factor == pytest.approx(1.9)  # the pool's quiet round alone: 190 / 100
    # hashed was disturbed in its second round only; a pattern disturbed in every round keeps its rounds
    assert fib.mean.loc["hashed", "rps"] == pytest.approx(150)
    assert fib.left_out == 2 and fib.over == " (2 disturbed runs left out)"  # the title says what it is read over
    runs["disturbed"] = runs["pattern"].eq("hashed")
    kept = cpu_bound.fib_alone(runs, ONE_CORE)
    assert kept.mean.loc["hashed", "rps"] == pytest.approx(120)
    assert kept.left_out == 0 and kept.over == ""  # every run kept: nothing to say


def test_spread_gives_how_far_runs_land_from_each_prediction():
    runs = _runs({"threadpool": [80, 120], "processpool": [150]}, {"threadpool": 1.0, "processpool": 1.8},
                 before={"threadpool": 100.0, "processpool": 200.0})  # fmt: skip
    line = cpu_bound.spread(runs, {"threadpool": 100.0, "processpool": 100.0})
    assert line == "runs / the Predict table: 0.80–1.50; runs / their price just before: 0.75–1.20"
    runs = pd.concat([runs, _runs({"hashed": [100]}, {"hashed": 1.8})])  # SHA-256, not fib: not in the CPU range
    cpu = cpu_bound.spread(runs, {"threadpool": 100.0, "processpool": 100.0, "hashed": 100.0}, fib_ms=9.0)
    assert cpu.splitlines()[1] == "server CPU a request, the fib runs: 8.3–12.5 ms; fib alone, timed here: 9.0 ms"


def test_the_model_s_ratios_price_both_patterns_with_one_fib_timing(monkeypatch):
    users = {"sequential": 20, "threadpool": 20, "processpool": 20}
    monkeypatch.setattr("labserver.theory.model.cpu_ms", lambda n, repeat=3: 10.0)
    # async holds its core: 1 / 10 ms; the thread pool's users in one burst: 20 / (50 + 20 × 10 ms)
    assert cpu_bound.model_ratio("sequential", "threadpool", users, 25, 50, 40) == pytest.approx(100 / 80)
    assert cpu_bound.model_ratio("processpool", "sequential", users, 25, 50, 40) == pytest.approx(2.0)  # 2 cores
    monkeypatch.setattr("labserver.theory.model.cpu_ms", lambda n, repeat=3: 1.0)
    # fib shorter than a GIL turn: no bursts, and both are bound by their users alike
    assert cpu_bound.model_ratio("sequential", "threadpool", users, 25, 50, 40) == pytest.approx(1.0)


def test_the_mix_model_gives_the_claims_their_ratios_and_the_most_idle(monkeypatch):
    users = {"sequential": 20, "threadpool": 20, "processpool": 20}
    monkeypatch.setattr("labserver.theory.model.cpu_ms", lambda n, repeat=3: 10.0)
    monkeypatch.setattr(cpu_bound, "cpu_ms", lambda n: 10.0)
    model = cpu_bound.mix_model(users, 25, 50, 40)
    assert model.pool_over == pytest.approx(2.0) and model.in_step == pytest.approx(1.25)
    assert model.most_idle == pytest.approx(50 / (50 + 20 * 10))
    mix = cpu_bound.WithSleep(
        factor=1.8, predicted_factor=2.6, async_vs_threads=1.3, predicted_ratio=1.1,
        busy=pd.Series({"threadpool": 0.9}), of_before=pd.Series({"processpool": 0.7, "sequential": 1.0}),
    )  # fmt: skip
    assert model.threads_detail(mix).startswith("served 1.30; the model in step 1.25, its core idle up to 20%: idle 10")
    assert model.pool_detail(mix).startswith("served 1.80, the model 2.00; each priced on its own: 2.60")


def test_hand_offs_set_the_thread_pool_s_cpu_over_async_s_for_each_endpoint():
    cpu = pd.DataFrame({"fib": [16.0, 14.0], "fib + 50 ms sleep": [18.0, 16.0]}, index=["threadpool", "sequential"])
    line = cpu_bound.hand_offs(cpu)
    assert line == "the thread pool's CPU a request over async's: fib 1.14×, fib + 50 ms sleep 1.12×"


def test_the_model_curve_prices_every_depth_from_the_deepest_timing(monkeypatch):
    monkeypatch.setattr(cpu_bound, "cpu_ms", {25: 12.0}.__getitem__)  # only the deepest is ever timed
    curve = cpu_bound.model_curve(users=20, io_ms=50, depths=range(15, 26))
    assert curve["cpu_n"].tolist() == list(range(15, 26))
    # shallow depths: the users bind (20 / (50 ms + fib)); the deepest: one core, 1 / fib(25)'s 12 ms
    assert curve["predicted_rps"].iloc[0] == pytest.approx(20 / (0.05 + cpu_bound.fib_ms(15, 25) / 1000), rel=0.05)
    assert curve["predicted_rps"].iloc[-1] == pytest.approx(1000 / 12.0, rel=0.05)

"""The model against Little's law and the bottleneck law, worked out by hand."""

import math

import pandas as pd
import pytest

from labserver.demo.patterns import PATTERNS
from labserver.demo.settings import THREADS_DEFAULT, Settings
from labserver.theory import model, timing
from labserver.theory.bottlenecks import CORE_BOUND, CPU_BOUND, MACHINE_BOUND, Bottleneck
from labserver.theory.model import (
    closed_loop,
    cpu_ms,
    furthest,
    predict,
    predict_against,
    predict_for,
    predict_frame,
    server_cpu_ms,
    with_little,
    with_server_cpu,
)
from labserver.theory.workload import Workload


def test_threadpool_is_capped_by_its_threads():
    # 40 threads, each holding a request for 0.1 s: 40 / 0.1 = 400 req/s, whatever the users
    p = predict_for("threadpool", users=100, io_ms=100, threads=40)
    assert p.rps == pytest.approx(400)
    assert p.bottleneck == "threads"
    assert p.latency_ms == pytest.approx(100 / 400 * 1000)  # Little's law: R = N / X


def test_threadpool_below_its_size_is_limited_by_the_users():
    p = predict_for("threadpool", users=10, io_ms=100, threads=40)
    assert p.rps == pytest.approx(100)
    assert p.bottleneck == "users"
    assert p.latency_ms == pytest.approx(100)


def test_threadpool_scales_with_workers():
    assert predict_for("threadpool", users=500, io_ms=100, threads=40, workers=2).rps == pytest.approx(800)


def test_seed_003_sync_baseline():
    # 2 workers × 40 threads, three 5 s sleeps per request: 80 / 15 s = 5.33 req/s
    p = predict_for("threadpool", users=500, tasks=3, io_ms=5000, threads=40, workers=2)
    assert p.rps == pytest.approx(80 / 15)


def test_gather_overlaps_its_tasks():
    p = predict_for("gather", users=50, tasks=3, io_ms=100)
    assert p.rps == pytest.approx(50 / 0.1)
    assert p.bottleneck == "users"


def test_sequential_pays_every_task():
    p = predict_for("sequential", users=50, tasks=3, io_ms=100)
    assert p.rps == pytest.approx(50 / 0.3)
    assert p.latency_ms == pytest.approx(300)


def test_gather_over_sequential_is_the_task_count():
    gather = predict_for("gather", users=100, tasks=4, io_ms=50).rps
    sequential = predict_for("sequential", users=100, tasks=4, io_ms=50).rps
    assert gather / sequential == pytest.approx(4)


def test_blocking_serves_one_request_per_worker_at_a_time():
    p = predict_for("blocking", users=100, io_ms=100, workers=2)
    assert p.rps == pytest.approx(2 / 0.1)
    assert p.bottleneck == "event loop"
    assert p.latency_ms == pytest.approx(100 / 20 * 1000)


def test_blocking_with_one_user_serves_that_user():
    assert predict_for("blocking", users=1, io_ms=100).rps == pytest.approx(10)


@pytest.mark.parametrize(("procs", "workers", "expected"), [(4, 1, 200), (1, 1, 100), (1, 2, 200), (8, 4, 200)])
def test_processpool_cpu_is_limited_by_cores(procs, workers, expected):
    # 10 ms of CPU per request; min(workers × procs, cores) of them at once on 2 cores
    p = predict_for("processpool", users=100, cpu_n=20, procs=procs, workers=workers, cores=2, cpu_ms_per_task=10)
    assert p.rps == pytest.approx(expected)
    assert p.bottleneck == "cores"


@pytest.mark.parametrize("pattern", ["threadpool", "sequential", "gather"])
def test_cpu_in_one_worker_runs_on_one_core(pattern):
    p = predict_for(pattern, users=100, cpu_n=20, workers=1, cores=2, cpu_ms_per_task=10)
    assert p.rps == pytest.approx(100)
    assert p.bottleneck == "GIL (one core per worker)"


def test_cpu_with_workers_up_to_the_cores():
    assert predict_for("threadpool", users=100, cpu_n=20, workers=2, cores=2, cpu_ms_per_task=10).rps == pytest.approx(
        200
    )
    p = predict_for("threadpool", users=100, cpu_n=20, workers=4, cores=2, cpu_ms_per_task=10)
    assert p.rps == pytest.approx(200)
    assert p.bottleneck == "cores"


def test_cpu_and_io_add_up_in_the_service_time():
    # sequential: 2 tasks × (50 ms wait + 10 ms CPU) = 120 ms per request; 6 users → 50 req/s
    p = predict_for("sequential", users=6, tasks=2, io_ms=50, cpu_n=20, cores=2, cpu_ms_per_task=10)
    assert p.rps == pytest.approx(6 / 0.12)


def test_no_work_has_no_prediction():
    p = predict_for("gather", users=10)
    assert math.isnan(p.rps)
    assert math.isnan(p.latency_ms)


def test_cpu_ms_is_free_below_two():
    assert cpu_ms(0) == 0.0
    assert cpu_ms(1) == 0.0
    assert cpu_ms(12) > 0


def test_predict_frame_has_one_row_per_pattern_and_users():
    frame = predict_frame(["threadpool", "sequential"], [10, 80], io_ms=100)
    assert list(frame.columns) == ["pattern", "users", "predicted_rps", "predicted_ms", "bottleneck"]
    assert len(frame) == 4
    row = frame[(frame.pattern == "threadpool") & (frame.users == 80)].iloc[0]
    assert row.predicted_rps == pytest.approx(400)


def test_predict_plan_keeps_the_plan_s_order_and_pairs():
    frame = model.predict_plan([("blocking", 5), ("blocking", 50), ("sequential", 50)], io_ms=100)
    assert list(zip(frame.pattern, frame.users, strict=True)) == [("blocking", 5), ("blocking", 50), ("sequential", 50)]
    assert list(frame.predicted_rps) == pytest.approx([10, 10, 500])
    assert frame.columns.equals(predict_frame(["blocking"], [5], io_ms=100).columns)


def test_dependent_awaits_cost_what_sequential_ones_do():
    dependent = predict_for("dependent", users=200, tasks=3, io_ms=200)
    assert dependent == predict_for("sequential", users=200, tasks=3, io_ms=200)
    assert dependent.rps == pytest.approx(200 / 0.6)


def test_mixed_holds_the_loop_for_its_blocking_half_only():
    # each sub-task awaits io_ms, then blocks io_ms: the loop serves one request per tasks × io_ms
    p = predict_for("mixed", users=50, tasks=2, io_ms=100)
    assert p.rps == pytest.approx(1 / 0.2)
    assert p.bottleneck == "event loop"
    assert predict_for("mixed", users=1, io_ms=100).rps == pytest.approx(1 / 0.2)  # one user waits both halves


def test_wrapped_holds_a_thread_for_both_halves():
    p = predict_for("wrapped", users=50, io_ms=100, threads=40)
    assert p.rps == pytest.approx(40 / 0.2)
    assert p.bottleneck == "threads"
    assert predict_for("wrapped", users=10, io_ms=100).rps == pytest.approx(10 / 0.2)


def test_the_server_s_own_cpu_caps_one_worker():
    # 0.5 ms of uvicorn + FastAPI per request: one worker (one GIL) serves at most 2,000 req/s
    p = predict_for("sequential", users=400, io_ms=100, server_ms=0.5)
    assert p.rps == pytest.approx(2000)
    assert p.bottleneck == "GIL (one core per worker)"
    assert predict_for("sequential", users=800, io_ms=100, server_ms=0.5, workers=2, cores=2).rps == pytest.approx(4000)
    # below the cap, a request alone takes io + server CPU
    assert predict_for("sequential", users=10, io_ms=100, server_ms=0.5).rps == pytest.approx(10 / 0.1005)


def test_server_cpu_moves_the_model_only_as_far_as_it_costs():
    kw = dict(users=80, tasks=2, io_ms=50, cpu_n=20, cores=2, cpu_ms_per_task=5)
    for pattern in ("sequential", "gather", "threadpool", "processpool", "blocking"):
        base = predict_for(pattern, **kw)
        assert predict_for(pattern, **kw, server_ms=1e-6).rps == pytest.approx(base.rps, rel=1e-4)
        # a second of the worker's own CPU per request caps it at one request a second, whatever the pattern
        heavy = predict_for(pattern, **kw, server_ms=1000.0)
        assert heavy.rps <= 1.0 + 1e-9 < base.rps


def test_process_pool_workers_still_pay_for_the_framework():
    # the pool computes, but every request still passes through the worker's event loop
    p = predict_for("processpool", users=1000, io_ms=100, cpu_n=20, cpu_ms_per_task=0.1, server_ms=1.0, cores=2)
    assert p.rps == pytest.approx(1000)
    assert p.bottleneck == "GIL (one core per worker)"


def test_threads_computing_longer_than_a_turn_move_in_step():
    # fib of 10 ms (two 5 ms turns of the GIL) after 50 ms of sleep, 20 users: they compute together,
    # then sleep together while the core idles: 20 / (0.05 + 20 x 0.01) = 80 req/s, not 1 / 0.01 = 100
    p = predict_for("threadpool", users=20, io_ms=50, cpu_n=25, cpu_ms_per_task=10)
    assert p.rps == pytest.approx(20 / 0.25)
    assert p.bottleneck == "GIL (threads in step)"
    # without the wait there is nothing to idle through: the GIL's one core
    assert predict_for("threadpool", users=20, io_ms=0, cpu_n=25, cpu_ms_per_task=10).rps == pytest.approx(100)


def test_threads_computing_within_a_turn_do_not_move_in_step():
    # 1 ms of CPU ends within its turn: the threads compute one after another, their waits spread
    p = predict_for("threadpool", users=200, io_ms=50, cpu_n=20, cpu_ms_per_task=1, threads=400)
    assert p.bottleneck == "GIL (one core per worker)"
    # the event loop never shares its core in turns: async stays at one core's worth
    assert predict_for("sequential", users=20, io_ms=50, cpu_n=25, cpu_ms_per_task=10).rps == pytest.approx(100)
    # users beyond the threads queue for them: not priced as in step
    assert (
        predict_for("threadpool", users=60, io_ms=50, cpu_n=25, cpu_ms_per_task=10).bottleneck
        != "GIL (threads in step)"
    )


def test_in_step_is_priced_with_the_measured_demand():
    from labserver.theory.demand import Demand

    p = predict_for("threadpool", users=20, io_ms=50, cpu_n=25, demand=Demand(worker_ms=11.0))
    assert p.rps == pytest.approx(20 / (0.05 + 20 * 0.011))
    assert p.bottleneck == "GIL (threads in step)"


def test_closed_loop_runs_from_littles_law_to_the_bottleneck_law():
    think, demand = 0.1, 0.0005
    assert closed_loop(1, think, [(demand, 1)]) == pytest.approx(1 / (think + demand))
    assert closed_loop(2000, think, [(demand, 1)]) == pytest.approx(1 / demand, rel=1e-3)
    previous = 0.0
    for users in (10, 100, 190, 200, 220, 400):
        x = closed_loop(users, think, [(demand, 1)])
        assert previous < x <= min(users / (think + demand), 1 / demand)  # rises, and stays below both bounds
        previous = x
    # at the knee (users = (think + demand) / demand) the queue costs the most: well below both bounds
    assert closed_loop(201, think, [(demand, 1)]) < 0.95 * min(201 / (think + demand), 1 / demand)


def test_closed_loop_with_several_cores_reaches_their_sum():
    assert closed_loop(4000, 0.1, [(0.001, 2)]) == pytest.approx(2000, rel=1e-3)
    assert closed_loop(1, 0.1, [(0.001, 2)]) == pytest.approx(1 / 0.101)
    assert closed_loop(0, 0.1, [(0.001, 1)]) == 0.0
    assert closed_loop(5, 0.1, [(0.0, 1)]) == pytest.approx(50)
    assert closed_loop(5, 0.1, []) == pytest.approx(50)


def test_two_stations_near_their_limit_bend_the_curve_below_either_alone():
    # the server's worker and the load generator, each on its own core, 0.5 ms per request each
    think, d = 0.1, 0.0005
    both = closed_loop(200, think, [(d, 1), (d, 1)])
    assert both < closed_loop(200, think + d, [(d, 1)])  # the generator's CPU as a mere delay
    assert closed_loop(1, think, [(d, 1), (d, 1)]) == pytest.approx(1 / (think + 2 * d))
    assert closed_loop(5000, think, [(d, 1), (0.0004, 1)]) == pytest.approx(1 / d, rel=1e-3)  # the busier one


def test_queueing_bends_the_prediction_below_the_bounds_near_the_knee():
    bound = predict_for("sequential", users=200, io_ms=100, server_ms=0.5)
    curve = predict_for("sequential", users=200, io_ms=100, server_ms=0.5, queueing=True)
    assert curve.rps < bound.rps
    assert curve.rps == pytest.approx(closed_loop(200, 0.1, [(0.0005, 1)]))
    assert curve.bottleneck == bound.bottleneck
    far = predict_for("sequential", users=20, io_ms=100, server_ms=0.5, queueing=True)
    assert far.rps == pytest.approx(20 / 0.1005, rel=1e-3)  # few users: no queue to speak of


def test_server_cpu_ms_is_the_cpu_per_request_of_the_busiest_run():
    # 2.0 ms per request when light, 0.25 when busiest: the ceiling is where the worker is busy
    runs = pd.DataFrame({"server_cpu": [0.2, 0.5, 0.9, float("nan")], "rps": [100.0, 1000.0, 3600.0, 5000.0]})
    assert server_cpu_ms(runs) == pytest.approx(0.25)


def test_server_cpu_ms_without_a_measured_run_is_nan():
    runs = pd.DataFrame({"server_cpu": [float("nan")], "rps": [100.0]})
    assert math.isnan(server_cpu_ms(runs))


def test_with_server_cpu_predicts_again_and_keeps_the_first_prediction():
    runs = pd.DataFrame({"pattern": ["sequential"] * 2, "users": [10, 400], "tasks": 1, "io_ms": 100, "cpu_n": 0,
                         "threads": 40, "workers": 1, "procs": 2, "rps": [99.0, 1900.0],
                         "predicted_rps": [100.0, 4000.0]})  # fmt: skip
    out = with_server_cpu(runs, server_ms=0.5)
    assert list(out["little_rps"]) == [100.0, 4000.0]
    assert out["predicted_rps"].iloc[1] == pytest.approx(closed_loop(400, 0.1, [(0.0005, 1)]))
    assert out["bottleneck"].iloc[1] == "GIL (one core per worker)"
    assert out["ratio"].iloc[1] == pytest.approx(1900 / out["predicted_rps"].iloc[1])
    assert list(runs["predicted_rps"]) == [100.0, 4000.0]  # the frame passed in is left alone


def test_predict_against_sets_measured_req_s_beside_the_model_for_the_same_setting():
    # seed 003's shape: 2 workers × 40 threads, 500 users, 3 waits of 5 s
    out = predict_against(["threadpool", "gather"], {"threadpool": 5.0, "gather": 99.0}, 500, tasks=3, io_ms=5000,
                          threads=40, workers=2)  # fmt: skip
    assert list(out["pattern"]) == ["threadpool", "gather"] and set(out["users"]) == {500}
    assert out["predicted_rps"].tolist() == pytest.approx([80 / 15, 100.0])
    assert out["ratio"].tolist() == pytest.approx([5.0 / (80 / 15), 0.99])


def test_furthest_is_the_worst_fit_on_either_side():
    assert furthest(pd.Series([0.98, 1.03, 0.95, 1.01])) == 0.95
    assert furthest(pd.Series([0.98, 1.07, 0.95]), target=1.0) == 1.07
    assert furthest(pd.Series([2.9, 3.0]), target=3.0) == 2.9


def test_with_little_adds_little_s_law_beside_the_recorded_prediction():
    runs = pd.DataFrame(
        [dict(pattern="sequential", users=200, tasks=1, io_ms=100, cpu_n=0, threads=40, workers=1, procs=0)]
    ).assign(predicted_rps=1500.0)
    out = with_little(runs)
    assert out["little_rps"].iloc[0] == pytest.approx(2000.0)
    assert out["predicted_rps"].iloc[0] == 1500.0  # the run's own prediction stays


def test_a_worker_that_waited_for_its_core_gets_that_much_less_of_it():
    from labserver.theory.demand import Demand

    # 0.5 ms of CPU per request in the loop, ready with no CPU free for a tenth of the window: 0.9 / 0.0005
    waited = Demand(worker_ms=0.5, worker_waited=0.1)
    p = predict_for("sequential", users=1600, io_ms=100, cores=2, demand=waited)
    assert p.rps == pytest.approx(1800)
    assert p.bottleneck == "GIL (one core per worker)"
    unmeasured = predict_for("sequential", users=1600, io_ms=100, cores=2, demand=Demand(worker_ms=0.5))
    assert unmeasured.rps == pytest.approx(2000)
    # far below the bound, the users set the pace, waited or not
    assert predict_for("sequential", users=10, io_ms=100, cores=2, demand=waited).rps == pytest.approx(10 / 0.1005)
    # a thread pool computes on other threads than the waiting loop's; workers ≥ cores wait for each other
    assert predict_for("threadpool", users=1600, io_ms=100, cores=2, demand=waited).rps == pytest.approx(
        predict_for("threadpool", users=1600, io_ms=100, cores=2, demand=Demand(worker_ms=0.5)).rps
    )
    assert predict_for("sequential", users=1600, io_ms=100, workers=2, cores=2, demand=waited).rps == pytest.approx(
        4000
    )


def test_offloading_the_blocking_call_restores_the_thread_pool_s_bound():
    blocked = predict_for("blocking", users=120, io_ms=100, threads=40)
    offloaded = predict_for("offload", users=120, io_ms=100, threads=40)
    assert blocked.rps == pytest.approx(10)  # one request at a time on the loop
    assert offloaded.rps == pytest.approx(400) and offloaded.bottleneck == "threads"  # 40 threads / 0.1 s
    assert predict_for("offload", users=20, io_ms=100, threads=40).rps == pytest.approx(200)  # below it, the users


def test_predict_takes_the_run_s_workload_and_its_server_s_settings():
    p = predict(Workload("threadpool", 100, io_ms=100), Settings(threads=40))
    assert p == predict_for("threadpool", users=100, io_ms=100, threads=40)
    assert p.rps == pytest.approx(400) and p.bottleneck == "threads"
    assert predict(Workload("threadpool", 100, io_ms=100), Settings(threads=THREADS_DEFAULT, workers=2)).rps == 800


def test_predict_s_prices_are_keyword_only():
    with pytest.raises(TypeError):
        predict(Workload("gather", 10, io_ms=100), None, 2)  # cores, by position
    with pytest.raises(TypeError):
        predict_for("gather", 10, io_ms=100)  # users, by position


def test_without_settings_the_server_has_a_pool_process_per_core_it_is_given():
    # 10 ms of CPU per request on 2 cores (or 1.5: a quota), the pool as large: the cores bound it
    for cores in (2, 1.5):
        p = predict(Workload("processpool", 100, cpu_n=20), cores=cores, cpu_ms_per_task=10)
        assert p.rps == pytest.approx(cores * 100) and p.bottleneck == "cores"
    small = predict(Workload("processpool", 100, cpu_n=20), Settings(procs=1), cores=2, cpu_ms_per_task=10)
    assert small.rps == pytest.approx(100)


def test_a_short_call_names_what_it_does_not_know():
    with pytest.raises(TypeError, match="thread"):
        predict_for("threadpool", users=10, io_ms=100, thread=40)
    with pytest.raises(ValueError, match="users or a rate"):
        predict_for("threadpool", io_ms=100)


def test_each_kind_of_bottleneck_is_the_labels_its_words_say():
    # the column on disk keeps these words; a kind is a set of them, not a prefix
    assert Bottleneck.GIL == "GIL (one core per worker)" and Bottleneck.MACHINE == "cores (the machine's, shared)"
    for b in Bottleneck:
        assert (b in MACHINE_BOUND) == b.startswith("cores (the machine's"), b
        assert (b in CORE_BOUND) == b.startswith(("cores", "GIL", "one core")), b
        assert (b in CPU_BOUND) == b.startswith(("GIL", "cores", "one core", "CPU", "client CPU")), b
    runs = pd.DataFrame({"bottleneck": ["users", "cores", "client CPU (one core)", "server threads (40)", None]})
    assert list(runs["bottleneck"].isin(CPU_BOUND)) == [False, True, True, False, False]


def test_a_prediction_s_bottleneck_is_plain_words():
    # rows, tables and printed lists show the words a reader knows, never `<Bottleneck.GIL: ...>`
    p = model.Prediction(1.0, 1.0, Bottleneck.GIL)
    assert type(p.bottleneck) is str and p.bottleneck == Bottleneck.GIL
    assert p.bottleneck in CPU_BOUND


@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_a_request_with_no_wait_and_no_fib_is_priced_by_its_measured_cpu(pattern):
    from labserver.theory.demand import Demand

    p = predict_for(pattern, users=10, io_ms=0, cpu_n=0, demand=Demand(worker_ms=0.5))
    assert p.rps == pytest.approx(1000 / 0.5)  # one worker's core, whatever the pattern would wait on


def test_a_process_pool_of_no_processes_serves_nothing():
    p = predict(Workload("processpool", 10, io_ms=0), Settings(procs=0), cores=2.0, cpu_ms_per_task=5.0)
    assert (p.rps, p.latency_ms) == (0.0, math.inf)


def test_one_fibs_cpu_time_is_the_best_of_rounds_apart(monkeypatch):
    """A slow moment that reads a whole round of timings high (13 ms against 8.7) does not set fib's price: the rounds
    are FIB_APART_S apart and the best is kept."""
    rounds = iter([13.0, 8.7, 9.1])
    slept: list[float] = []
    monkeypatch.setattr(timing, "best_ms", lambda *_: next(rounds))
    assert timing.cpu_time_ms(25, sleep=slept.append) == 8.7
    assert slept == [timing.FIB_APART_S] * (timing.FIB_ROUNDS - 1)
    assert timing.cpu_time_ms(1, sleep=slept.append) == 0.0

"""The model's foresight of a run's window: replies, rounds and the load generator, before anything starts."""

import dataclasses

import pytest

from labserver.demo.settings import Settings
from labserver.harness.load import validity
from labserver.harness.rows.collect import MIN_REQUESTS
from labserver.theory.workload import Workload

FIB_MS = 10.0  # fib(25), as the tests price it


def fib(n: int) -> float:
    return FIB_MS if n == 25 else 0.0


def seen(*runs, cores=2.0, processes=1, warmup_s=1.0):
    return validity.foresee(runs, cores=cores, fib_ms=fib, processes=processes, warmup_s=warmup_s)


def test_a_one_core_thread_pool_with_many_users_sends_one_burst_a_window():
    # 160 users of fib(25) share one core: a round trip of 1.6 s, all replies at its end
    [run] = seen((Workload("threadpool", 160, cpu_n=25, duration_s=2), Settings(threads=160)))
    assert run.bursts and run.round_s == pytest.approx(1.6)
    assert not run.valid and "bursts" in run.problems[0]
    # twenty users: a round trip of 0.2 s, enough rounds in the same 2 s
    [fewer] = seen((Workload("threadpool", 20, cpu_n=25, duration_s=2), Settings(threads=160)))
    assert fewer.valid and fewer.rounds >= validity.MIN_ROUNDS


def test_the_run_before_drains_first_and_new_users_warm_up():
    slow = (Workload("sequential", 100, cpu_n=25, duration_s=3), Settings(procs=2))  # one core: a round trip of 1 s
    fast = (Workload("processpool", 100, cpu_n=25, duration_s=3), Settings(procs=2))
    first, second = seen(slow, fast)
    assert first.window_s == pytest.approx(3 - 1.0)  # new users: the warm-up's cap, 1 s (two round trips are 2)
    # the same users carry on: the drain of one round trip, with room for a throughput under the model's
    assert second.window_s == pytest.approx(3 - validity.DRAIN_MARGIN * 1.0)
    more = (Workload("processpool", 200, cpu_n=25, duration_s=4), Settings(procs=2))
    _, third = seen(slow, more)
    assert third.window_s == pytest.approx(4 - validity.DRAIN_MARGIN * 1.0 - 1.0)  # the drain, then new users warm up


def test_users_that_move_to_another_server_warm_up_again():
    # lesson 04 on 16 cores: one worker's queue of 160 fib requests, then 16 workers' server, each user anew
    one = (Workload("sequential", 160, cpu_n=25, duration_s=3), Settings())
    many = (Workload("sequential", 160, cpu_n=25, duration_s=3), Settings(workers=16))
    _, moved = validity.foresee([one, many], cores=16, fib_ms=fib, servers=["one worker", "16 workers"])
    _, stayed = validity.foresee([one, many], cores=16, fib_ms=fib, servers=["one", "one"])
    warm_s = validity.SETTLE_ROUNDS * moved.round_s
    assert moved.window_s == pytest.approx(stayed.window_s - warm_s)
    # its settings name the server where no names are given
    assert validity.foresee([one, many], cores=16, fib_ms=fib)[1].window_s == pytest.approx(moved.window_s)


def test_a_window_too_short_for_the_meters_samples_says_so():
    # plenty of replies (a process pool on 16 cores), but under a second left after the run before drains
    slow = (Workload("sequential", 20, cpu_n=25, duration_s=2), Settings(procs=16))
    fast = (Workload("processpool", 20, cpu_n=25, duration_s=1), Settings(procs=16))
    _, run = validity.foresee([slow, fast], cores=16, fib_ms=fib)
    assert run.requests >= MIN_REQUESTS and run.window_s < validity.MIN_WINDOW_S
    assert not run.valid and "meters" in run.problems[0]


def test_a_run_with_too_few_replies_in_its_window_says_so():
    [run] = seen((Workload("blocking", 50, io_ms=1000, duration_s=2), Settings()))  # one reply a second
    assert run.requests < MIN_REQUESTS and "replies" in run.problems[0]


def test_replies_spread_one_by_one_need_no_rounds():
    # lesson 05's blocked loop: 50 users each wait 5 s, but a reply leaves every 100 ms
    [run] = seen((Workload("blocking", 50, io_ms=100, duration_s=4), Settings()))
    assert not run.bursts and run.rounds < 1 and run.valid


def test_a_run_faster_than_its_locust_processes_needs_more_of_them():
    busy = (Workload("processpool", 640, cpu_n=25, duration_s=3), Settings(procs=64))  # 6,400 req/s
    [one] = seen(busy, cores=64)
    # a risk, not a verdict: the run measures its Locust's CPU, and a busy one sends more than its price
    assert one.valid and one.generator_share >= validity.SATURATED and "Locust" in one.risks[-1]
    [line] = validity.warn([one])
    assert "may saturate its Locust: 6,400 req/s is 213% of the 3,000 req/s 1 Locust process is priced" in line
    assert "foreseen invalid" not in line
    [three] = seen(busy, cores=64, processes=3)
    assert three.valid and three.generator_share < validity.SATURATED and not three.risks
    assert validity.warn([three]) == []


@pytest.mark.parametrize(
    ("workload", "settings", "cores", "expected"),
    [
        (Workload("threadpool", 20, cpu_n=25), Settings(threads=40), 2, True),  # GIL: turns of one core
        (Workload("threadpool", 1, cpu_n=25), Settings(threads=40), 2, False),  # one thread: no turns
        (Workload("sequential", 20, cpu_n=25), Settings(), 2, False),  # the loop runs each fib to its end
        (Workload("threadpool", 20, cpu_n=25), Settings(threads=40, gil=False), 16, True),  # more threads than cores
        (Workload("threadpool", 20, cpu_n=25), Settings(threads=40, gil=False), 32, False),  # a core each
        (Workload("threadpool", 20, cpu_n=15), Settings(threads=40), 2, False),  # fib(15) ends within its turn
    ],
)
def test_which_runs_reply_in_bursts(workload, settings, cores, expected):
    compute_s = (FIB_MS if workload.cpu_n == 25 else 0.1) / 1000
    assert validity.bursts(workload, settings, compute_s, cores) is expected


def test_warn_names_the_run_and_what_to_change():
    plan = seen(
        (Workload("threadpool", 20, cpu_n=25, duration_s=2), Settings(threads=160)),
        (Workload("threadpool", 160, cpu_n=25, duration_s=2), Settings(threads=160)),
    )
    [line] = validity.warn(plan)
    assert line.startswith("run 2 of 2, threadpool (160 users, fib(25)): foreseen invalid:")
    assert "run longer or with fewer users" in line


def test_a_pool_s_connections_freed_together_need_four_rounds_in_the_window():
    # lesson 11's session borrowed in the endpoint: 100 users, 20 connections held 200 ms: waves of 20 every 200 ms,
    # and each user's round trip is 1 s; a 3 s run leaves a window of one round, which counts whole waves (± 20%)
    inside = Workload("pooledinside", 100, io_ms=200, duration_s=3)
    [short] = seen((inside, Settings(db_pool=20)))
    assert validity.waves(inside, Settings(db_pool=20)) == 20
    assert not short.valid and "waves of its pool's 20 connections" in short.problems[-1]
    [long] = seen((dataclasses.replace(inside, duration_s=8), Settings(db_pool=20)))
    assert long.valid and long.rounds >= validity.MIN_ROUNDS
    # fewer users than connections: no wave; no connection held: none either
    assert validity.waves(dataclasses.replace(inside, users=20), Settings(db_pool=20)) == 0
    assert validity.waves(Workload("threadpool", 100, io_ms=200), Settings(db_pool=20)) == 0

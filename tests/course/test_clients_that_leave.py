"""Lesson 13's readings: the sub-tasks a request runs after its client left, and the plan's checks."""

import math

import pandas as pd
import pytest

from labserver.harness.rows import telemetry
from labserver.lessons import clients_that_leave as leaving


@pytest.mark.parametrize(
    ("pattern", "timeout_s", "ran"),
    [
        ("sequential", 0.4, 6),  # nothing checks: all of them
        ("watchful", 0.4, 3),  # begun before 0.4 s: at 0 and 0.16 and 0.32; the third's end finds it gone
        ("watchful", 0.9, 6),  # the last check comes after the last sub-task: nothing saved
        ("watchful", 0.1, 1),  # gone during the first: it still ends, and its check stops the rest
    ],
)
def test_a_request_runs_the_sub_tasks_begun_before_its_client_left_and_one_more(pattern, timeout_s, ran):
    assert leaving.sub_tasks_run(pattern, tasks=6, io_ms=150, fib_ms=10.0, timeout_s=timeout_s) == ran


def test_a_closed_loop_of_abandoned_requests_sends_users_over_timeout():
    got = leaving.gone(users=2, timeout_s=0.4)
    assert (got.rps, got.latency_ms) == (pytest.approx(5.0), pytest.approx(400.0))


def test_the_plan_predicts_each_endpoint_s_cpu_and_every_request_times_out():
    given = dict(users=2, tasks=6, io_ms=150, cpu_n=20, timeout_s=0.4, rate=8, duration_s=8, cores=2)
    plan = leaving.plan(**given).plan
    assert plan.load == {"timeout_s": 0.4, "expect_failures": True}
    table = leaving.predicted(plan, fib_ms=10.0).set_index(["pattern", "cpu_n"])["predicted_fib_ms"]
    assert table.to_dict() == {("sequential", 20): 60.0, ("watchful", 20): 30.0, ("sequential", 0): 0.0}


def _telemetry(folder, in_flight: list[float], pids=(7,)) -> str:
    """A run folder whose telemetry holds these samples of requests in flight, for each worker."""
    folder.mkdir()
    rows = [{"second": i / 10, "pid": p, "t": i / 10, "in_flight": n} for p in pids for i, n in enumerate(in_flight)]
    pd.DataFrame(rows).to_csv(folder / telemetry.FILE, index=False)
    return str(folder)


def test_the_fib_cpu_is_the_server_s_less_that_of_a_request_without_fib(tmp_path):
    runs = pd.DataFrame(
        {
            "pattern": ["sequential", "watchful", "sequential"],
            "cpu_n": [25, 25, 0],
            "server_ms": [71.0, 38.0, 5.0],
            "io_ms": 150,
            "rps": 5.0,
            "run_id": [_telemetry(tmp_path / str(i), [2.0]) for i in range(3)],
        }
    )
    table = pd.DataFrame(
        {
            "pattern": ["sequential", "watchful", "sequential"],
            "cpu_n": [25, 25, 0],
            "sub_tasks_run": [6, 3, 0],
            "predicted_fib_ms": [60.0, 30.0, 0.0],
        }
    )
    both = leaving.beside(runs, table, fib_ms=10.0)
    assert list(both["fib_ms"]) == [66.0, 33.0, 0.0]
    assert leaving.cpu_ratio(both) == pytest.approx(0.5)
    # 2 in flight at 5 a second: 400 ms in the server each, 150 + 10 ms a sub-task (150 without fib)
    assert list(both["sub_tasks_seen"]) == pytest.approx([2.5, 2.5, 400 / 150])


@pytest.mark.parametrize(
    ("in_flight", "pids", "rps", "in_server_ms"),
    [
        ([2, 3, 3, 2], (7,), 5.0, 500.0),  # 2.5 in flight, 5 coming a second: half a second each
        ([1, 1], (7, 8), 4.0, 500.0),  # two workers' requests in flight add up
    ],
)
def test_a_request_s_time_in_the_server_is_read_by_little_s_law(tmp_path, in_flight, pids, rps, in_server_ms):
    run = pd.Series({"run_id": _telemetry(tmp_path / "run", in_flight, pids), "rps": rps})
    assert leaving.in_server_ms(run) == pytest.approx(in_server_ms)


def test_a_run_without_telemetry_reads_no_time_in_the_server(tmp_path):
    (tmp_path / "bare").mkdir()
    assert math.isnan(leaving.in_server_ms(pd.Series({"run_id": str(tmp_path / "bare"), "rps": 5.0})))


def test_a_timeout_longer_than_the_work_is_refused_before_anything_starts():
    with pytest.raises(ValueError, match="timeout_s must be under the waits alone"):
        leaving.plan(users=2, tasks=2, io_ms=50, cpu_n=5, timeout_s=5.0, rate=8, duration_s=8, cores=2)


@pytest.mark.parametrize("fib_ms", [3.0, 6.0, 14.0, 20.0])  # fib(25) on a fast laptop core to a busy hyperthread
def test_the_lesson_s_check_stops_after_the_same_sub_task_on_any_laptop(fib_ms):
    from tests.course.test_lessons import parameters

    p = parameters("13_clients_that_leave")
    ran = leaving.sub_tasks_run("watchful", p["tasks"], p["io_ms"], fib_ms, p["timeout_s"])
    assert ran == 3


def test_part_two_sends_an_open_loop_to_gather_and_a_task_group_and_gather_without_fib():
    failing = leaving.plan(users=2, tasks=6, io_ms=150, cpu_n=20, timeout_s=0.4, rate=8, duration_s=8,
                                         cores=2).failing  # fmt: skip
    assert [(r["pattern"], r["cpu_n"], r["rate"]) for r in failing.runs] == [
        ("gather", 20, 8),  # every call answers: fib as these runs compute it
        ("gathertimeout", 20, 8),
        ("taskgroup", 20, 8),
        ("gathertimeout", 0, 8),
    ]
    assert [r.get("predicted") for r in failing.runs] == [None] + [leaving.answered(150)] * 3
    assert failing.load == {"user_class": "arrivals", "expect_failures": True}


@pytest.mark.parametrize(("bad", "match"), [({"rate": 0}, "rate"), ({"tasks": 1}, "tasks must be")])
def test_part_two_s_bad_parameters_fail_before_anything_starts(bad, match):
    given = dict(users=2, tasks=6, io_ms=150, cpu_n=20, timeout_s=0.4, rate=8, duration_s=8, cores=2) | bad
    with pytest.raises(ValueError, match=match):
        leaving.plan(**given)


def test_gather_runs_every_other_sub_task_after_its_answer_and_a_task_group_none():
    assert (leaving.ran_after("gathertimeout", 6), leaving.ran_after("taskgroup", 6)) == (5, 0)


def test_the_sub_tasks_run_after_the_answer_are_the_fib_cpu_over_plain_gather_s_per_sub_task():
    patterns = ["gathertimeout", "taskgroup", "gather", "gathertimeout"]
    failing = pd.DataFrame(
        {"pattern": patterns, "tasks": 6, "cpu_n": [25, 25, 25, 0], "server_ms": [52.0, 2.2, 62.0, 2.0]}
    )
    got = leaving.left_behind(failing).set_index("pattern")  # one sub-task's fib: (62 - 2) / 6 = 10 ms
    assert list(got.index) == ["gathertimeout", "taskgroup"]
    assert list(got["fib_ms"]) == [50.0, pytest.approx(0.2)]
    assert list(got["ran_after"]) == [5.0, pytest.approx(0.02)]
    assert list(got["predicted_ran_after"]) == [5, 0]


def test_part_two_s_requests_are_none_served_each_answered_504_once_the_call_is_given_up_on():
    got = leaving.answered(io_ms=150)
    assert (got.rps, got.latency_ms, got.bottleneck) == (0.0, 75.0, "a 504 to every request")

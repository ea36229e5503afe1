"""What a run sends, as one typed value: made from a lesson's dict or a row on disk, checked before anything starts."""

import dataclasses

import pytest

from labserver.theory import workload
from labserver.theory.workload import Workload


def test_a_run_s_dict_becomes_a_workload_and_its_other_keys_are_left_out():
    w = Workload.of({"pattern": "gather", "users": 50, "io_ms": 100, "predicted": None, "rps": 99.0})
    assert w == Workload("gather", 50, io_ms=100)
    assert (w.tasks, w.cpu_n, w.duration_s, w.rate) == (1, 0, workload.DURATION_DEFAULT_S, 0.0)


def test_an_open_loop_needs_a_rate_and_no_users():
    assert Workload.of({"pattern": "threadpool", "rate": 50.0}).users == 1  # its one schedule
    with pytest.raises(ValueError, match="users or a rate"):
        Workload.of({"pattern": "threadpool", "io_ms": 100})


@pytest.mark.parametrize(
    ("change", "name"),
    [
        ({"pattern": "gathr"}, "pattern"),
        ({"users": 0}, "users"),
        ({"users": workload.USERS_MAX + 1}, "users"),
        ({"duration_s": 0}, "duration_s"),
        ({"rate": workload.RATE_MAX + 1}, "rate"),
        ({"rate": 10.0, "drain_s": 5}, "drain_s"),  # the drain must leave some of the run to send in
        ({"tasks": 0}, "tasks"),
        ({"io_ms": -1}, "io_ms"),
        ({"cpu_n": 40}, "cpu_n"),
    ],
)
def test_a_check_names_what_to_change(change, name):
    Workload("gather", 10, io_ms=100).check()
    with pytest.raises(ValueError, match=name):
        dataclasses.replace(Workload("gather", 10, io_ms=100), **change).check()

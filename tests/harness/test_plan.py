"""A plan's order of runs (mirrored rounds, so that a drift in the machine's speed falls on every run alike),
and which of its stages runs when."""

import dataclasses
import typing
from types import SimpleNamespace

import pytest

from labserver.harness.load import generator
from labserver.harness.plans import plan
from labserver.harness.plans.plan import RUN_KEYS, Options, Stage, mirrored, stage_at
from labserver.theory.workload import Workload


def test_mirrored_rounds_reverse_every_other_round():
    assert mirrored(["a", "b", "c"], 2) == [(0, "a"), (0, "b"), (0, "c"), (1, "c"), (1, "b"), (1, "a")]
    assert [w for _, w in mirrored([1, 2, 3], 3)] == [1, 2, 3, 3, 2, 1, 1, 2, 3]


def test_mirrored_one_round_is_the_items_in_order():
    assert mirrored([1, 2], 1) == [(0, 1), (0, 2)]
    assert mirrored([1, 2], 0) == []


def test_mirrored_leaves_the_items_alone():
    items = ["a", "b"]
    mirrored(items, 2)
    assert items == ["a", "b"]


def test_the_stage_at_a_moment_of_the_plan():
    stages = [SimpleNamespace(duration_s=d) for d in (5, 3, 4)]
    assert [stage_at(stages, t) for t in (0, 4.99, 5, 7.99, 8, 11.9)] == [0, 0, 1, 1, 2, 2]
    assert stage_at(stages, -1) == 0  # before the plan starts: its first stage
    assert stage_at(stages, 60) == 2  # after it ends: its last


def test_a_plan_s_stage_carries_the_workload_to_locust():
    server = type("Server", (), {"url": "http://127.0.0.1:1"})()
    stage = Stage.from_run({"pattern": "gather", "users": 3, "tasks": 2, "tags": {"part": "x"}}, 4, server)
    assert stage.workload == Workload("gather", 3, tasks=2, duration_s=4) and stage.tags == {"part": "x"}
    assert stage.locust() == {**dataclasses.asdict(stage.workload), "host": server.url}
    assert RUN_KEYS[: len(dataclasses.fields(Workload))] == tuple(f.name for f in dataclasses.fields(Workload))
    with pytest.raises(ValueError, match="unknown run keys"):
        Stage.from_run({"pattern": "gather", "users": 3, "thread": 8}, 4, server)


def test_a_stage_as_a_run_comes_back_as_the_same_stage_at_the_users_asked():
    server = SimpleNamespace(url="http://127.0.0.1:1")
    route = {"method": "GET", "path": "/items", "label": "GET /items"}
    stage = Stage(server, Workload("sequential", 1, io_ms=50, duration_s=3), route=route)
    run = stage.as_run(8, {"route": "GET /items"})
    assert set(run) <= set(RUN_KEYS) and run["users"] == 8 and run["tags"] == {"route": "GET /items"}
    back = Stage.from_run(run, 3, server)
    assert back.workload == dataclasses.replace(stage.workload, users=8) and back.route == route
    assert stage.as_run()["users"] == 1 and "tags" not in stage.as_run()


def test_one_spawn_rate_for_the_command_and_the_rows():
    stages = [SimpleNamespace(users=u) for u in (10, 40, 20)]
    assert Options().spawn_rate_for(stages) == 40  # every user of the busiest stage at once
    assert Options(spawn_rate=5).spawn_rate_for(stages) == 5


def test_locust_starts_the_users_the_busiest_stage_uses_at_the_rate_the_rows_record(tmp_path):
    server = SimpleNamespace(url="http://127.0.0.1:1")
    stages = [Stage(server, Workload("sequential", u)) for u in (10, 40, 20)]
    cmd = generator.command(server, tmp_path, stages, Options())
    assert cmd[cmd.index("-u") + 1] == str(plan.most_users(stages)) == "40"
    assert cmd[cmd.index("-r") + 1] == str(Options().spawn_rate_for(stages))


def test_the_keywords_run_plan_passes_on_are_the_options_fields_with_their_types():
    fields = typing.get_type_hints(Options)
    assert typing.get_type_hints(plan.OptionsKw) == fields  # same names, same order, same types
    assert list(typing.get_type_hints(plan.OptionsKw)) == [f.name for f in dataclasses.fields(Options)]


def test_the_harness_and_the_locustfile_agree_on_the_stage_while_the_plan_runs():
    from labserver import protocol

    stages = [SimpleNamespace(duration_s=d) for d in (5, 3, 4)]
    ends = [5, 8, 12]
    for t in (0, 2.5, 5, 7.99, 8, 11.99):
        assert stage_at(stages, t) == protocol.stage_at(ends, t)
    assert protocol.stage_at(ends, 12) is None and stage_at(stages, 12) == 2  # over: the harness keeps the last


def test_one_prediction_policy_for_the_live_view_and_the_row():
    from labserver.demo.settings import Settings
    from labserver.theory import model

    server = SimpleNamespace(settings=Settings(procs=0), url="http://127.0.0.1:1")
    run = Stage(server, Workload("sequential", 10, io_ms=100))
    given = model.Prediction(1.0, 2.0, "the lesson's")
    asked = []

    def fib_ms():
        asked.append(True)
        return 0.0

    assert Stage(server, run.workload, given).prediction(Options(), 2.0, fib_ms=fib_ms) is given
    assert Stage(server, run.workload, lambda d: given).prediction(Options(), 2.0) is given
    assert run.prediction(Options(expect_failures=True), 2.0, fib_ms=fib_ms).bottleneck.startswith("not modelled")
    assert not asked  # nothing is timed where the model is not asked
    assert run.prediction(Options(), 2.0, fib_ms=fib_ms).rps == pytest.approx(100.0)  # users / io
    assert asked == [True]


def test_the_user_classes_a_plan_may_name_are_those_the_locustfile_has():
    from typing import get_args

    from labserver.harness.load.generator import USER_CLASSES
    from labserver.harness.plans.plan import UserClass

    assert set(get_args(UserClass)) == set(USER_CLASSES)


def test_a_run_names_every_field_of_its_workload():
    """A run's keys (plan.Run) hold every Workload field, so that no workload setting is out of a run's reach."""
    assert {f.name for f in dataclasses.fields(Workload)} <= set(RUN_KEYS)
    assert {"predicted", "tags", "server", "route"} <= set(RUN_KEYS)

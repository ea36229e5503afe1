"""Load runs: parameters checked before any process starts, and real short Locust runs (slow)."""

import contextlib
import json
import os
import signal
import threading
from types import SimpleNamespace

import psutil
import pytest

from labserver.demo import cpus
from labserver.harness.load import generator
from labserver.harness.load import run as load
from labserver.harness.load.checks import check_load, check_sweep
from labserver.harness.load.run import run_load, sweep
from labserver.harness.processes import pauses
from labserver.harness.rows import results
from labserver.harness.servers.launcher import LabServer
from labserver.harness.servers.server import ServerError
from labserver.paths import runs_dir
from labserver.theory import workload
from labserver.theory.workload import Workload

GOOD = dict(pattern="gather", users=10, duration_s=2, tasks=1, io_ms=10, cpu_n=0)


def check(user_class="fast", processes=1, **workload):
    """check_load of a workload and Locust's options, each given by name."""
    check_load(Workload(**workload), user_class=user_class, processes=processes)


def test_good_parameters_pass():
    check(**GOOD)
    check_sweep(["gather", "threadpool"], [5, 50], io_ms=100, duration_s=5)


@pytest.mark.parametrize(
    ("change", "name"),
    [
        ({"users": 0}, "users"),
        ({"users": -3}, "users"),
        ({"users": workload.USERS_MAX + 1}, "users"),
        ({"users": 2.5}, "users"),
        ({"users": True}, "users"),
        ({"duration_s": 0}, "duration_s"),
        ({"duration_s": workload.DURATION_MAX_S + 1}, "duration_s"),
        ({"pattern": "gathr"}, "pattern"),
        ({"user_class": "selenium"}, "user_class"),
        ({"processes": 0}, "processes"),
        ({"tasks": 0}, "tasks"),
        ({"io_ms": -1}, "io_ms"),
        ({"cpu_n": 40}, "cpu_n"),
        ({"tasks": 10, "io_ms": 5000}, "io_ms"),
    ],
)
def test_check_load_names_the_parameter(change, name):
    with pytest.raises(ValueError, match=name):
        check(**{**GOOD, **change})


def test_unknown_user_class_lists_the_choices():
    with pytest.raises(ValueError) as e:
        check(**{**GOOD, "user_class": "selenium"})
    assert all(choice in str(e.value) for choice in generator.USER_CLASSES)


@pytest.mark.parametrize(
    ("args", "kwargs", "name"),
    [
        ((["gather"], [10]), {"workers": 0}, "workers"),
        ((["gather"], [10]), {"workers": 65}, "workers"),
        ((["gather"], [10]), {"threads": 0}, "threads"),
        ((["gather"], [0]), {}, "users"),
        ((["gather", "nope"], [10]), {}, "pattern"),
        ((["gather"], [10]), {"duration_s": -1}, "duration_s"),
        ((["gather"], [10]), {"user_class": "x"}, "user_class"),
        (([], [10]), {}, "pattern"),
        ((["gather"], []), {}, "users"),
    ],
)
def test_check_sweep_names_the_parameter(args, kwargs, name):
    with pytest.raises(ValueError, match=name):
        check_sweep(*args, **kwargs)


def test_sweep_checks_before_starting_anything():
    # no server is needed to be told what is wrong: the check comes first
    with pytest.raises(ValueError, match="users"):
        sweep(None, ["gather"], [10, 0])


def test_run_load_refuses_a_stopped_server():
    with pytest.raises(ServerError, match="not running"):
        run_load(LabServer(procs=0), "gather", users=1, duration_s=1)


@pytest.mark.slow
def test_a_short_locust_run_becomes_a_result():
    with LabServer(procs=0) as server:
        result = run_load(server, "sequential", users=5, io_ms=10, duration_s=2, lesson="tests")
    row = result.row
    assert row["status"] == "ok"
    assert row["rps"] > 0
    assert row["p95_ms"] > 0
    assert row["p50_ms"] <= row["p95_ms"] <= row["p99_ms"]
    assert row["failures"] == 0
    assert row["predicted_rps"] > 0
    assert (row["pattern"], row["users"], row["io_ms"], row["workers"]) == ("sequential", 5, 10, 1)
    # the run's folder holds the manifest and Locust's own files
    assert result.path.parent == runs_dir()
    manifest = json.loads((result.path / "manifest.json").read_text())
    assert manifest["run_id"] == row["run_id"] == result.path.name
    assert manifest["params"]["users"] == 5
    assert manifest["locust_exit_code"] == 0
    assert manifest["environment"]["cpu_count"] >= 1
    assert manifest["started_at"] <= manifest["ended_at"]
    assert (result.path / "report.html").exists()
    assert list(result.path.glob("locust_stats*.csv"))
    assert list(result.path.glob("records.*.json"))
    # the per-second history
    assert len(result.history) > 0
    assert set(result.history.columns) >= {"second", "rps", "p95_ms", "failures"}
    assert result.history["rps"].sum() >= row["requests"]
    # and the loader finds it
    assert row["run_id"] in set(results.load_runs("tests")["run_id"])


@pytest.mark.slow
def test_a_server_killed_mid_run_raises_and_leaves_a_marked_run():
    with LabServer(procs=0) as server:
        killer = threading.Timer(1.5, os.kill, (server.proc.pid, signal.SIGKILL))
        killer.start()
        try:
            with pytest.raises(ServerError, match="server died") as e:
                run_load(server, "sequential", users=5, io_ms=10, duration_s=20, lesson="tests-killed")
        finally:
            killer.cancel()
    assert "last lines of" in str(e.value)  # the log tail
    runs = results.load_runs("tests-killed")
    assert list(runs["status"]) == ["server died"]
    assert not runs["valid"].iloc[0]
    assert "server died" in runs["problems"].iloc[0]
    assert str(runs_dir() / runs["run_id"].iloc[0]) in str(e.value)


@pytest.mark.parametrize(
    ("runs", "name"),
    [
        ([], "at least one run"),
        ([{"pattern": "gather"}], "users"),
        ([{"pattern": "gather", "users": 2, "io": 5}], "io"),
    ],
)
def test_run_plan_checks_its_runs_before_starting_anything(runs, name):
    with pytest.raises(ValueError, match=name):
        load.run_plan(None, runs)


@pytest.mark.slow
def test_a_plan_measures_each_run_in_its_own_folder_with_one_locust():
    plan = [
        {"pattern": "sequential", "users": 4, "io_ms": 10},
        {"pattern": "gather", "users": 8, "tasks": 2, "io_ms": 10},
        {"pattern": "threadpool", "users": 2, "io_ms": 10, "tags": {"note": "last"}},
    ]
    with LabServer(procs=0) as server:
        done = load.run_plan(server, plan, duration_s=2, lesson="tests-plan")
    assert [(r.row["pattern"], r.row["users"], r.row["tasks"]) for r in done] == [
        ("sequential", 4, 1),
        ("gather", 8, 2),
        ("threadpool", 2, 1),
    ]
    assert done[2].row["note"] == "last"
    assert all(r.row["status"] == "ok" and r.row["valid"] for r in done), [r.row["problems"] for r in done]
    assert len({r.path for r in done}) == 3 and all(r.path.parent == runs_dir() for r in done)
    # one Locust process: the same log in every folder, and each folder keeps only its own users' records
    assert len({(r.path / "locust.log").stat().st_ino for r in done}) == 1
    for r in done:
        (records,) = r.path.glob("records.*.json")
        per_user = json.loads(records.read_text())
        assert len(per_user) == r.row["users"]
        stages = {rec[4] for user in per_user for rec in user}
        assert stages == {done.index(r)}
    # the runs follow each other: each starts no sooner than the one before
    starts = [r.row["window_start"] for r in done]
    assert starts == sorted(starts)


@pytest.mark.slow
def test_a_server_killed_mid_plan_keeps_the_runs_before_it():
    plan = [
        {"pattern": "sequential", "users": 3, "io_ms": 10, "duration_s": 2},
        {"pattern": "sequential", "users": 3, "io_ms": 10},
    ]
    with LabServer(procs=0) as server:
        killer = threading.Timer(4.0, os.kill, (server.proc.pid, signal.SIGKILL))
        killer.start()
        try:
            with pytest.raises(ServerError, match="server died"):
                load.run_plan(server, plan, duration_s=20, lesson="tests-plan-killed")
        finally:
            killer.cancel()
    runs = results.load_runs("tests-plan-killed")
    assert list(runs["status"]) == ["ok", "server died"]
    assert list(runs["valid"]) == [True, False]


@pytest.mark.slow
def test_a_plan_hands_each_user_on_and_counts_the_next_stage_once_the_last_has_drained():
    plan = [{"pattern": "sequential", "users": 5, "io_ms": 200}, {"pattern": "gather", "users": 5, "io_ms": 200}]
    with LabServer(procs=0) as server:
        first, second = load.run_plan(server, plan, duration_s=2, lesson="tests-plan-hand-on")

    def records(run):
        (path,) = run.path.glob("records.*.json")
        return [rec for user in json.loads(path.read_text()) for rec in user]

    drained = max(rec[0] for rec in records(first))  # the last reply to a request of the first stage
    first_sent = min(rec[0] - rec[1] / 1000 for rec in records(second))
    # Users went straight on: the second stage's first requests left before the first had drained...
    assert first_sent < drained
    # ...and none of them is counted: the second stage's window opens after that last reply.
    assert second.row["window_start"] >= drained
    assert second.row["valid"], second.row["problems"]
    # The plan ended the test itself, not Locust's --run-time (whose clock starts ~0.4 s early).
    assert "--run-time limit reached" not in (first.path / "locust.log").read_text()


@pytest.mark.slow
def test_a_plan_lets_the_stage_before_drain_when_the_next_only_computes():
    plan = [{"pattern": "threadpool", "users": 4, "cpu_n": 18}, {"pattern": "sequential", "users": 4, "cpu_n": 18}]
    with LabServer(procs=0) as server:
        first, second = load.run_plan(server, plan, duration_s=2, lesson="tests-plan-drain")
    sent = [json.loads(p.read_text()) for p in second.path.glob("records.*.json")]
    received = [json.loads(p.read_text()) for p in first.path.glob("records.*.json")]
    drained = max(rec[0] for per_user in received for user in per_user for rec in user)
    assert min(rec[0] - rec[1] / 1000 for per_user in sent for user in per_user for rec in user) >= drained
    assert second.row["valid"], second.row["problems"]


def _hold_the_watcher_once(held_s=0.4):
    """A plan's `watch`: the first time its first run has measured for a second, the watcher is held still `held_s`."""
    held = []

    def hold():
        mine = psutil.Process().children(recursive=True)
        (watcher,) = [p for p in mine if "labserver.harness.processes.pauses" in p.cmdline()]
        watcher.suspend()  # as a host holds a whole virtual machine, but only the watcher: it sees a pause
        threading.Timer(held_s, watcher.resume).start()

    def watch(snapshot):
        if not held and snapshot.started and snapshot.elapsed_s >= 1.0 and not snapshot.done:
            held.append(snapshot.elapsed_s)
            hold()

    return watch, held


@pytest.mark.slow
def test_a_run_the_machine_stopped_in_is_kept_marked_and_measured_again():
    watch, held = _hold_the_watcher_once()
    with LabServer(procs=0) as server:
        (run,) = load.run_plan(server, [{"pattern": "gather", "users": 4, "io_ms": 20}], duration_s=4,
                               lesson="tests-plan-paused", watch=watch)  # fmt: skip
    assert held
    assert run.row["valid"] and run.row["paused_ms"] < pauses.PAUSE_MS, run.row["problems"]
    both = results.load_runs("tests-plan-paused")
    assert len(both) == 2  # the paused run is kept, marked
    (first,) = both[~both["valid"].astype(bool)].itertuples()
    assert first.paused_ms >= pauses.PAUSE_MS and "the machine stopped for" in first.problems
    assert not list(runs_dir().glob(".partial-*"))


@pytest.mark.slow
def test_one_plan_takes_turns_between_servers():
    with LabServer(procs=0, threads=40) as wide, LabServer(procs=0, threads=2) as narrow:
        plan = [
            {"pattern": "threadpool", "users": 4, "io_ms": 50, "server": narrow},
            {"pattern": "threadpool", "users": 4, "io_ms": 50},  # the plan's own server: `wide`
            {"pattern": "threadpool", "users": 4, "io_ms": 50, "server": narrow},
        ]
        done = load.run_plan(wide, plan, duration_s=2, lesson="tests-plan-servers")
        pids = {narrow.proc.pid: "narrow", wide.proc.pid: "wide"}
    assert [r.row["threads"] for r in done] == [2, 40, 2]
    # each run's requests were served by its own server's one worker (uvicorn serves in its main process)
    assert [pids[int(next(iter(r.row["worker_requests"])))] for r in done] == ["narrow", "wide", "narrow"]
    assert all(r.row["valid"] for r in done), [r.row["problems"] for r in done]
    # 2 threads of 50 ms serve half what 4 users ask of 40
    assert done[0].row["rps"] < 0.75 * done[1].row["rps"]


def test_run_plans_gives_each_plan_a_fresh_server_started_with_the_others(monkeypatch):
    started, sent = [], []

    class StandIn:
        def __init__(self, **settings):
            self.settings = settings

    @contextlib.contextmanager
    def running(servers):
        started.append(list(servers))
        yield started[-1]

    def run_plan(server, stages, **kw):
        sent.append((server, stages, kw))
        return [f"{s['pattern']}@{s['users']}" for s in stages]

    monkeypatch.setattr(load, "LabServer", StandIn)
    monkeypatch.setattr(load, "running", running)
    monkeypatch.setattr(load, "run_plan", run_plan)
    plans = [[("sequential", 50), ("blocking", 5)], [("blocking", 50)]]
    measured = load.run_plans(plans, {"workers": 1, "procs": 0}, lesson="05", duration_s=4, tasks=2, io_ms=100)
    (servers,) = started  # one start for all the servers: their start-ups overlap
    assert len(servers) == 2 and all(s.settings == {"workers": 1, "procs": 0} for s in servers)
    assert [server for server, _, _ in sent] == servers  # a server of its own per plan
    assert sent[0][1] == [
        dict(pattern="sequential", users=50, tasks=2, io_ms=100, cpu_n=0),
        dict(pattern="blocking", users=5, tasks=2, io_ms=100, cpu_n=0),
    ]
    assert all(kw == {"duration_s": 4, "lesson": "05"} for _, _, kw in sent)
    assert measured == {
        ("sequential", 50): "sequential@50",
        ("blocking", 5): "blocking@5",
        ("blocking", 50): "blocking@50",
    }


class Measured:
    """load._measure stand-in: records each plan it is given; a run reads paused where `paused(pattern, try)` says."""

    def __init__(self, paused=lambda pattern, attempt: False):
        self.plans, self.paused, self.tries = [], paused, {}

    def __call__(self, server, stages, options):
        self.plans.append([s.pattern for s in stages])
        out = []
        for s in stages:
            self.tries[s.pattern] = self.tries.get(s.pattern, 0) + 1
            paused_ms = 400.0 if self.paused(s.pattern, self.tries[s.pattern]) else 0.0
            row = {"pattern": s.pattern, "users": s.users, "paused_ms": paused_ms, "run_id": "r", "problems": "p"}
            out.append(SimpleNamespace(row=row))
        return out


@pytest.fixture
def measured(monkeypatch):
    monkeypatch.setattr(load, "wait_until_quiet", lambda: None)
    monkeypatch.setattr(cpus, "whole_cores", lambda: 4)  # room for two forked Locust processes

    def install(**kw):
        fake = Measured(**kw)
        monkeypatch.setattr(load, "_measure", fake)
        return fake

    return install


RUNS = [{"pattern": "gather", "users": 2}, {"pattern": "sequential", "users": 2}]


def test_one_locust_process_measures_the_whole_plan(measured):
    fake = measured()
    rows = [r.row for r in load.run_plan(SimpleNamespace(), RUNS, duration_s=2)]
    assert fake.plans == [["gather", "sequential"]] and [r["pattern"] for r in rows] == ["gather", "sequential"]


def test_several_locust_processes_measure_each_run_as_a_plan_of_its_own(measured):
    fake = measured()
    load.run_plan(SimpleNamespace(), RUNS, duration_s=2, processes=2)
    assert fake.plans == [["gather"], ["sequential"]]


def test_a_run_the_machine_stopped_in_is_measured_again_in_its_place(measured, capsys):
    fake = measured(paused=lambda pattern, attempt: pattern == "sequential" and attempt == 1)
    rows = [r.row for r in load.run_plan(SimpleNamespace(), RUNS, duration_s=2)]
    assert fake.plans == [["gather", "sequential"], ["sequential"]]
    assert [(r["pattern"], r["paused_ms"]) for r in rows] == [("gather", 0.0), ("sequential", 0.0)]
    assert "sequential at 2 users" in capsys.readouterr().out


def test_a_pause_is_measured_again_at_most_remeasure_times(measured, capsys):
    always = measured(paused=lambda pattern, attempt: pattern == "gather")
    (row,) = [r.row for r in load.run_plan(SimpleNamespace(), RUNS[:1], duration_s=2, remeasure=2)]
    assert always.plans == [["gather"]] * 3 and row["paused_ms"] == 400.0  # kept, marked, after two more tries
    never = measured(paused=lambda pattern, attempt: True)
    load.run_plan(SimpleNamespace(), RUNS, duration_s=2, expect_failures=True)
    assert never.plans == [["gather", "sequential"]]  # a run that expects failures is not measured again


def test_a_plan_is_checked_before_anything_is_measured(measured):
    fake = measured()
    with pytest.raises(ValueError, match="users"):
        load.run_plan(SimpleNamespace(), [*RUNS, {"pattern": "gather", "users": 0}], duration_s=2)
    with pytest.raises(ValueError, match="give at least one run"):
        load.run_plan(SimpleNamespace(), [], duration_s=2)
    assert fake.plans == []


def test_a_process_pool_run_on_a_server_without_a_pool_is_refused_before_it_starts():
    from types import SimpleNamespace

    from labserver.demo.settings import Settings

    no_pool = SimpleNamespace(settings=Settings(procs=0))  # never started: the check comes first
    with pytest.raises(ValueError, match=r"processpool computes in a pool \(process pool\).*procs=0"):
        load.run_plan(no_pool, [{"pattern": "sequential", "users": 2}, {"pattern": "processpool", "users": 2}])
    with pytest.raises(ValueError, match="users"):  # a pool of one passes this check and meets the next
        load.run_plan(SimpleNamespace(settings=Settings(procs=1)), [{"pattern": "processpool"}])

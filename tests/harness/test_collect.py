"""From per-request records to RunResults: a stage's figures and verdict, and a plan's runs saved one folder each.

No process is started: the records are made up, the servers are stand-ins with settings, and the
CPU meters were either never sampled (NaN) or hold made-up samples of a steady load.
"""

import dataclasses
import json
import math
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from labserver import protocol
from labserver.demo import cpus
from labserver.demo.settings import Settings
from labserver.harness.plans.plan import Before, Meters, Options, Outcome, Stage
from labserver.harness.processes.machine import MachineMeter
from labserver.harness.processes.meters import CpuMeter
from labserver.harness.rows import collect, publish
from labserver.harness.rows.records import Record
from labserver.theory.model import Prediction
from labserver.theory.workload import Workload

T0 = 1_700_000_000.0  # when the made-up Locust process started (epoch seconds)
STAGE = Stage(SimpleNamespace(settings=Settings(workers=1, threads=40, procs=0)), Workload("sequential", 2, io_ms=50))
STARTED = "2023-11-14T22:13:20+00:00"


def cpu_meter(cores_by_pid: dict[int, float]) -> CpuMeter:
    """A meter sampled every 10 ms for 20 s from T0, each process using a steady share of the CPU."""
    meter = CpuMeter(-1)
    meter.samples = [(T0 + i / 100, {pid: c * i / 100 for pid, c in cores_by_pid.items()}) for i in range(2001)]
    return meter


def machine_meter(cores: float) -> MachineMeter:
    meter = MachineMeter()
    meter.samples = [(T0 + i / 100, cores * i / 100) for i in range(2001)]
    return meter


def unsampled():
    return CpuMeter(-1), CpuMeter(-1), MachineMeter()


def steady(users, start, until, every_s=0.1, latency_ms=50.0, pid=7, ok=True):
    """Each user's replies every `every_s` from `start` until `until`, users staggered by 10 ms."""
    per_user = []
    for u in range(users):
        n = int((until - start - 0.01 * u) / every_s) + 1
        per_user.append([Record(start + 0.01 * u + every_s * k, latency_ms, ok, pid) for k in range(n)])
    return per_user


def run(per_user, tmp_path, predicted=None, meters=None, options=None, **kwargs):
    """collect() for one stage of STAGE's server; `meters` are Locust's, the server's and the machine's."""
    options = options or Options(lesson="tests-collect", spawn_rate=2)
    stage = dataclasses.replace(STAGE, predicted=predicted)
    locust, server, machine = meters or unsampled()
    given = collect.StageInput(
        tmp_path, "run-1", stage, per_user, start=T0, started_at=STARTED, **{"status": "ok", "exit_code": 0, **kwargs}
    )
    return collect.collect(given, Meters(locust, {id(stage.server): server}, machine), options)


def test_history_counts_requests_per_second():
    per_user = [
        [Record(100.2, 10.0, True), Record(100.7, 12.0, True), Record(101.1, 30.0, False)],
        [Record(101.5, 20.0, True)],
    ]
    h = collect.history(per_user, start=100.0)
    assert list(h["second"]) == [0, 1]
    assert list(h["rps"]) == [2, 2]
    assert list(h["failures"]) == [0, 1]


def test_history_gives_each_second_its_p95_latency():
    per_user = [[Record(100.0 + i / 100, float(i + 1), True) for i in range(100)]]
    assert collect.history(per_user, start=100.0)["p95_ms"].tolist() == [pytest.approx(95.05)]


def test_history_of_no_records_is_empty_but_shaped():
    h = collect.history([[]], start=0.0)
    assert h.empty
    assert list(h.columns) == ["second", "rps", "p95_ms", "failures"]


@pytest.mark.parametrize(
    ("machine", "locust", "limited"),
    [
        (1.95, 0.7, True),  # every core busy and Locust holds a real share: it waited for CPU
        (1.95, 0.1, False),  # a CPU-bound server on every core, a light Locust: a fair measurement
        (1.60, 0.7, False),  # a core's fifth to spare
        (float("nan"), 0.7, False),  # not measured: no claim either way
    ],
)
def test_machine_limit_needs_a_full_machine_and_a_busy_generator(machine, locust, limited):
    problem = collect.machine_limit(machine, locust, cores=2)
    assert (problem is not None) == limited
    if limited:
        assert "the machine was the limit" in problem and "of 2 cores" in problem


def test_a_steady_stage_is_a_valid_run_with_its_figures(tmp_path):
    result = run(steady(2, T0 + 0.05, T0 + 5.0), tmp_path)
    row = result.row
    assert row["rps"] == pytest.approx(20)
    assert row["p95_ms"] == pytest.approx(50.0)
    assert row["window_start"] == pytest.approx(T0 + 0.16)  # both users have two replies
    assert row["valid"] and row["status"] == "ok" and row["problems"] == ""
    assert (row["workers_seen"], row["worker_requests"]) == (1, {7: row["requests"]})
    assert row["lesson"] == "tests-collect" and row["users"] == 2
    assert result.manifest["result"] is row and result.manifest["params"] == {
        **dict(
            pattern="sequential", users=2, tasks=1, io_ms=50, cpu_n=0, workers=1, threads=40, procs=0, cpus="", gil=True
        ),
        **dict(duration_s=5, spawn_rate=2, user_class="fast", processes=1, timeout_s=60.0),
    }
    assert row["started_at"] == STARTED
    assert result.history["rps"].sum() == sum(len(user) for user in steady(2, T0 + 0.05, T0 + 5.0))


def test_unsampled_meters_give_nan_cpu_and_no_verdict_on_it(tmp_path):
    row = run(steady(2, T0 + 0.05, T0 + 5.0), tmp_path).row
    assert all(math.isnan(row[k]) for k in ("locust_cpu", "server_cpu", "machine_cpu", "server_ms", "locust_ms"))
    assert not row["generator_saturated"]


def test_cpu_figures_come_from_the_meters_over_the_window(tmp_path):
    meters = (cpu_meter({1: 0.4}), cpu_meter({7: 0.5}), machine_meter(1.0))
    row = run(steady(2, T0 + 0.05, T0 + 5.0), tmp_path, meters=meters).row
    assert (row["locust_cpu"], row["server_cpu"], row["machine_cpu"]) == pytest.approx((0.4, 0.5, 1.0))
    assert row["other_cpu"] == pytest.approx(0.1)
    assert row["server_ms"] == pytest.approx(0.5 / 20 * 1000)
    assert row["locust_ms"] == pytest.approx(0.4 / 20 * 1000)


def test_the_workers_kernel_share_and_switches_per_request_come_from_their_counters(tmp_path):
    server = cpu_meter({7: 0.5, 8: 0.2})  # 7 served every request; 8 is a pool process
    ticks = [t for t, _ in server.samples]
    server.counters["kernel"] = [(t, {7: 0.2 * (t - T0), 8: 0.1 * (t - T0)}) for t in ticks]
    server.counters["switches"] = [(t, {7: 300.0 * (t - T0), 8: 50.0 * (t - T0)}) for t in ticks]
    server.counters["loop"] = [(t, {7: 0.4 * (t - T0), 8: 0.9 * (t - T0)}) for t in ticks]
    row = run(steady(2, T0 + 0.05, T0 + 5.0), tmp_path, meters=(cpu_meter({1: 0.4}), server, machine_meter(1.0))).row
    assert row["worker_kernel"] == pytest.approx(0.2 / 0.5)  # the served worker's alone
    assert row["worker_switches"] == pytest.approx(300 / 20)  # per request, at 20 req/s
    assert row["worker_loop"] == pytest.approx(0.4)  # the share of the window its main thread ran


def test_without_counters_the_kernel_share_and_switches_are_nan(tmp_path):
    row = run(steady(2, T0 + 0.05, T0 + 5.0), tmp_path).row
    assert all(math.isnan(row[k]) for k in ("worker_kernel", "worker_switches", "worker_loop"))


def test_a_lesson_s_own_model_is_given_the_run_s_window(tmp_path):
    seen = []

    def predicted(cost):
        seen.append(cost.window)
        return Prediction(20.0, 100.0, "users")

    row = run(steady(2, T0 + 0.05, T0 + 5.0), tmp_path, predicted=predicted).row
    assert seen == [(row["window_start"], row["window_start"] + row["window_s"])]


def test_an_open_loop_s_prediction_is_given_its_arrivals_window(tmp_path):
    seen = []

    def predicted(cost):
        seen.append(cost.window)
        return Prediction(20.0, 100.0, "arrivals (open loop)")

    run(steady(2, T0 + 0.05, T0 + 5.0), tmp_path, predicted=predicted, meant=(T0 + 1.0, T0 + 4.0))
    assert seen == [(T0 + 1.0, T0 + 4.0)]


def test_a_given_prediction_is_the_one_compared(tmp_path):
    row = run(steady(2, T0 + 0.05, T0 + 5.0), tmp_path, predicted=Prediction(40.0, 50.0, "users")).row
    assert (row["predicted_rps"], row["bottleneck"]) == (40.0, "users")
    assert row["ratio"] == pytest.approx(0.5)


def test_without_a_prediction_the_model_predicts_from_the_params(tmp_path):
    row = run(steady(2, T0 + 0.05, T0 + 5.0), tmp_path).row
    assert row["predicted_rps"] == pytest.approx(2 / 0.05)  # two users, 50 ms each, nothing else
    assert row["bottleneck"] == "users"


def test_without_a_measured_demand_the_prediction_made_before_the_run_explains_it(tmp_path):
    # unsampled meters: no CPU measured in the window (one too short for the samples), so the model's own prediction
    # would price fib with the lab's Python; the one made before, on the server itself, stands
    made = Before(Prediction(30.0, 66.0, "users"), None, "one user")
    stage = dataclasses.replace(STAGE, before=made)
    given = collect.StageInput(tmp_path, "run-1", stage, steady(2, T0 + 0.05, T0 + 5.0), start=T0, started_at=STARTED,
                               status="ok", exit_code=0)  # fmt: skip
    row = collect.collect(given, Meters(*unsampled()[:1], {}, MachineMeter()), Options(lesson="tests")).row
    assert (row["predicted_rps"], row["predicted_before_rps"]) == (30.0, 30.0)
    assert row["priced_by"] == "before the run (no demand measured)"


def test_a_failed_locust_exit_fails_the_run_and_points_at_its_log(tmp_path):
    row = run(steady(2, T0 + 0.05, T0 + 5.0), tmp_path, exit_code=2).row
    assert row["status"] == "locust failed" and not row["valid"]
    assert "code 2" in row["problems"] and f"{tmp_path.name}/locust.log" in row["problems"]


@pytest.mark.parametrize("exit_code", [0, 1, None])
def test_exit_codes_that_are_not_failures(tmp_path, exit_code):
    # 1: some requests failed (judged from the records); None: not this run's to judge
    assert run(steady(2, T0 + 0.05, T0 + 5.0), tmp_path, exit_code=exit_code).row["status"] == "ok"


def test_a_run_cut_short_keeps_its_status_as_a_problem(tmp_path):
    row = run(steady(2, T0 + 0.05, T0 + 5.0), tmp_path, status="server died", exit_code=-9).row
    assert row["status"] == "server died" and not row["valid"]
    assert row["problems"] == "server died"  # the exit code of a killed plan is not judged


def test_failures_invalidate_a_run_unless_expected(tmp_path):
    failing = steady(2, T0 + 0.05, T0 + 5.0, ok=False)
    row = run(failing, tmp_path).row
    assert not row["valid"] and f"{row['failures']} of {row['requests']} requests failed" in row["problems"]
    assert row["failure_rate"] == 1.0
    assert run(failing, tmp_path, options=Options(expect_failures=True)).row["valid"]


def test_too_few_requests_are_no_measurement(tmp_path):
    row = run(steady(2, T0 + 0.05, T0 + 0.5), tmp_path).row
    assert row["requests"] < collect.MIN_REQUESTS
    assert not row["valid"] and "only" in row["problems"]


def test_a_saturated_generator_measured_itself(tmp_path):
    meters = (cpu_meter({1: 0.95, 2: 0.05}), cpu_meter({7: 0.5}), machine_meter(1.5))
    row = run(steady(2, T0 + 0.05, T0 + 5.0), tmp_path, meters=meters).row
    assert row["generator_saturated"] and not row["valid"]
    assert "load generator saturated (95% of a core)" in row["problems"]


def test_locust_s_own_cpu_warning_counts_as_saturation(tmp_path):
    # what its log says is not read: its events are
    (tmp_path / protocol.LOG_FILE).write_text("WARNING CPU usage above 90%! This may constrain your throughput\n")
    assert not run(steady(2, T0 + 0.05, T0 + 5.0), tmp_path).row["generator_saturated"]
    (tmp_path / protocol.EVENTS_FILE).write_text(protocol.event(protocol.CPU_WARNING, T0 + 1, worker=1))
    row = run(steady(2, T0 + 0.05, T0 + 5.0), tmp_path).row
    assert row["generator_saturated"] and not row["valid"]


def test_a_full_machine_with_a_busy_generator_invalidates_a_run_predicted_elsewhere(tmp_path):
    meters = (cpu_meter({1: 0.5}), cpu_meter({7: 0.5}), machine_meter(1000.0))  # more cores than any lab has
    at_users = Prediction(40.0, 50.0, "users")  # the model did not count on the machine
    row = run(steady(2, T0 + 0.05, T0 + 5.0), tmp_path, meters=meters, predicted=at_users).row
    assert not row["valid"] and "the machine was the limit" in row["problems"]


@pytest.mark.parametrize(("late_ms", "valid"), [(400.0, False), (60.0, True)])
def test_a_run_the_whole_machine_stopped_in_measured_the_pause(tmp_path, late_ms, valid):
    machine = MachineMeter()
    machine.pauses = [(T0 + 2.0, T0 + 2.0 + late_ms / 1000)]  # as harness/processes/pauses.py wrote it down
    row = run(steady(2, T0 + 0.05, T0 + 5.0), tmp_path, meters=(CpuMeter(-1), CpuMeter(-1), machine)).row
    assert row["paused_ms"] == pytest.approx(late_ms)
    assert row["valid"] == valid
    assert ("the machine stopped for 400 ms" in row["problems"]) == (not valid)


def test_a_pause_outside_the_window_is_no_problem(tmp_path):
    machine = MachineMeter()
    machine.pauses = [(T0 + 8.0, T0 + 8.4)]
    row = run(steady(2, T0 + 0.05, T0 + 5.0), tmp_path, meters=(CpuMeter(-1), CpuMeter(-1), machine)).row
    assert row["valid"] and row["paused_ms"] == 0.0


@pytest.mark.parametrize(("stolen", "noted"), [(0.4, True), (0.05, False)])
def test_cpu_the_host_took_from_the_machine_is_recorded_and_noted(tmp_path, stolen, noted):
    machine = machine_meter(1.0)
    machine.stolen = [(t, stolen * (t - T0)) for t, _ in machine.samples]  # steal time, as /proc/stat counts it
    row = run(steady(2, T0 + 0.05, T0 + 5.0), tmp_path, meters=(CpuMeter(-1), CpuMeter(-1), machine)).row
    assert row["stolen_cpu"] == pytest.approx(stolen)
    assert row["valid"]  # a note for the reader, not a verdict: what it cost depends on the run
    assert ("the host took 0.40 of a core" in row["notes"]) == noted


# save_plan: a plan's records as one Locust process leaves them, split into one published run per stage


def server(**settings):
    return SimpleNamespace(settings=Settings(**settings))


def records_file(folder, per_user, t0=T0, name="records.1.json"):
    """Locust's file: each user's [end, ms, ok, pid, stage], the stage being the one the request was sent in."""
    users = [[[r.end, r.ms, r.ok, r.pid, int(r.sent >= t0 + 5)] for r in user] for user in per_user]
    (folder / name).write_text(json.dumps({"t0": t0, "users": users}))


def plan_records(every_s=0.1, latency_ms=80.0):
    """Users 0 and 1 send for 10 s (two 5 s stages); user 2 joins for the second stage.

    No request is sent within 20 ms of the stages' boundary: which stage it belongs to is plain.
    """
    sent = [[T0 + 0.03 + 0.05 * u + every_s * k for k in range(int(10 / every_s))] for u in range(2)]
    sent.append([T0 + 5.02 + every_s * k for k in range(int(5 / every_s) - 1)])
    return [[Record(s + latency_ms / 1000, latency_ms, True, 7) for s in user] for user in sent]


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """A private runs folder, and the first run's partial folder in it where Locust wrote."""
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path))
    folder = tmp_path / "runs" / ".partial-run-0"
    folder.mkdir(parents=True)
    (folder / "locust.log").write_text("Locust started\n")
    (folder / "plan.json").write_text("[]")
    return folder


def outcome(status="ok", ended=None, locust=None, meters=None, server_log=None):
    return Outcome(status, ended, locust, meters, datetime.fromtimestamp(T0, UTC), server_log)


def saved_records(result):
    return json.loads((result.path / "records.1.json").read_text())


def test_each_stage_becomes_a_published_run_with_its_own_users(runs):
    shared = server(workers=1, threads=40, procs=0)
    stages = [
        Stage(shared, Workload("sequential", users=2, io_ms=80)),
        Stage(shared, Workload("gather", users=3, io_ms=80)),
    ]
    records_file(runs, plan_records())
    first, second = publish.save_plan(stages, ["run-0", "run-1"], runs, outcome(), Options(lesson="tests"))
    assert [r.path for r in (first, second)] == [runs.parent / "run-0", runs.parent / "run-1"]
    assert [(r.row["pattern"], r.row["users"], r.row["run_id"]) for r in (first, second)] == [
        ("sequential", 2, "run-0"),
        ("gather", 3, "run-1"),
    ]
    assert all(r.row["status"] == "ok" and r.row["valid"] for r in (first, second)), [
        r.row["problems"] for r in (first, second)
    ]
    assert [len(saved_records(r)) for r in (first, second)] == [2, 3]
    assert {rec[4] for user in saved_records(first) for rec in user} == {0}
    assert {rec[4] for user in saved_records(second) for rec in user} == {1}
    assert first.row["rps"] == pytest.approx(20) and second.row["rps"] == pytest.approx(30)
    assert [r.manifest["plan"] for r in (first, second)] == [
        {"first_run": "run-0", "stage": 0, "stages": 2},
        {"first_run": "run-0", "stage": 1, "stages": 2},
    ]
    assert not runs.exists()  # the partial folder was published as the first run


def test_every_run_shares_locust_s_own_files(runs):
    shared = server()
    stages = [Stage(shared, Workload("sequential", users=2)), Stage(shared, Workload("gather", users=3))]
    records_file(runs, plan_records())
    first, second = publish.save_plan(stages, ["run-0", "run-1"], runs, outcome(), Options())
    for name in ("locust.log", "plan.json"):
        assert (first.path / name).stat().st_ino == (second.path / name).stat().st_ino


def test_a_run_s_params_come_from_its_stage_its_server_and_the_options(runs):
    pinned = server(workers=2, threads=8, procs=0, cpus=(0, 1))
    stages = [Stage(pinned, Workload("threadpool", users=2, tasks=3, io_ms=80), tags={"note": "x"})]
    records_file(runs, plan_records()[:2])
    (only,) = publish.save_plan(stages, ["run-0"], runs, outcome(), Options(user_class="fast", timeout_s=5.0))
    row = only.row
    assert (row["pattern"], row["users"], row["tasks"], row["io_ms"]) == ("threadpool", 2, 3, 80)
    assert (row["workers"], row["threads"], row["procs"], row["cpus"]) == (2, 8, 0, "0,1")
    assert (row["spawn_rate"], row["user_class"], row["timeout_s"], row["note"]) == (2, "fast", 5.0, "x")


def test_a_stage_starts_counting_once_the_stage_before_has_drained(runs):
    shared = server()
    stages = [Stage(shared, Workload("sequential", users=2)), Stage(shared, Workload("gather", users=2))]
    per_user = plan_records()[:2]  # the same two users carry on: they need no reply to be in their loop
    records_file(runs, per_user)
    _, second = publish.save_plan(stages, ["run-0", "run-1"], runs, outcome(), Options())
    drained = max(r.end for user in per_user for r in user if r.sent < T0 + 5)
    assert drained > T0 + 5  # the first stage's last reply came after its end
    assert second.row["window_start"] == pytest.approx(drained)


def test_a_user_that_joins_needs_two_replies(runs):
    shared = server()
    stages = [Stage(shared, Workload("sequential", users=2)), Stage(shared, Workload("gather", users=3))]
    per_user = plan_records()
    records_file(runs, per_user)
    _, second = publish.save_plan(stages, ["run-0", "run-1"], runs, outcome(), Options())
    assert second.row["window_start"] == pytest.approx(per_user[2][1].end)


def test_a_stage_on_another_server_waits_for_every_user_s_replies(runs):
    stages = [Stage(server(), Workload("sequential", users=2)), Stage(server(), Workload("sequential", users=2))]
    per_user = plan_records()[:2]
    records_file(runs, per_user)
    _, second = publish.save_plan(stages, ["run-0", "run-1"], runs, outcome(), Options())
    later = [[r for r in user if r.sent >= T0 + 5] for user in per_user]
    assert second.row["window_start"] == pytest.approx(max(user[1].end for user in later))


def test_each_run_reads_its_own_server_s_meter(runs):
    a, b = server(), server()
    meters = Meters(cpu_meter({1: 0.3}), {id(a): cpu_meter({7: 0.5}), id(b): cpu_meter({7: 0.8})}, machine_meter(1.6))
    records_file(runs, plan_records()[:2])
    stages = [Stage(a, Workload("sequential", users=2)), Stage(b, Workload("sequential", users=2))]
    first, second = publish.save_plan(stages, ["run-0", "run-1"], runs, outcome(meters=meters), Options())
    assert (first.row["server_cpu"], second.row["server_cpu"]) == pytest.approx((0.5, 0.8))


def test_a_plan_cut_short_saves_the_runs_so_far_and_marks_the_last(runs):
    shared = server()
    stages = [
        Stage(shared, Workload("sequential", users=2)),
        Stage(shared, Workload("gather", users=2)),
        Stage(shared, Workload("sequential", users=2)),
    ]
    records_file(runs, [[r for r in user if r.end <= T0 + 7] for user in plan_records()[:2]])
    died = outcome(status="server died", ended=T0 + 7, server_log="boom\n")
    saved = publish.save_plan(stages, ["run-0", "run-1", "run-2"], runs, died, Options())
    assert [r.row["status"] for r in saved] == ["ok", "server died"]  # the third never started
    assert [r.row["valid"] for r in saved] == [True, False]
    assert (saved[1].path / "server.log").read_text() == "boom\n"
    assert not (saved[0].path / "server.log").exists()
    assert saved[1].manifest["ended_at"] == datetime.fromtimestamp(T0 + 7, UTC).isoformat(timespec="seconds")


def test_locust_s_exit_code_judges_only_the_last_run(runs):
    shared = server()
    stages = [Stage(shared, Workload("sequential", users=2)), Stage(shared, Workload("gather", users=2))]
    records_file(runs, plan_records()[:2])
    failed = outcome(locust=SimpleNamespace(returncode=2))
    first, second = publish.save_plan(stages, ["run-0", "run-1"], runs, failed, Options())
    assert (first.row["status"], second.row["status"]) == ("ok", "locust failed")
    assert (first.manifest["locust_exit_code"], second.manifest["locust_exit_code"]) == (None, 2)


def test_without_a_start_in_the_files_the_plan_s_clock_is_when_locust_started(runs):
    shared = server()
    stages = [Stage(shared, Workload("sequential", users=2))]
    users = [[[r.end, r.ms, r.ok, r.pid, 0] for r in user if r.sent < T0 + 5] for user in plan_records()[:2]]
    (runs / "records.1.json").write_text(json.dumps({"users": users}))
    (only,) = publish.save_plan(stages, ["run-0"], runs, outcome(), Options())
    assert only.row["started_at"] == datetime.fromtimestamp(T0, UTC).isoformat(timespec="seconds")
    assert only.row["valid"] and only.row["rps"] == pytest.approx(20)


def test_the_server_s_cpu_is_split_into_the_workers_that_answered_and_the_pool(tmp_path):
    # pid 7 answered every request (X-Worker-Pid); pid 8 is a pool child of the same tree
    meters = (cpu_meter({1: 0.2}), cpu_meter({7: 0.3, 8: 0.5}), machine_meter(1.2))
    row = run(steady(2, T0 + 0.05, T0 + 5.0), tmp_path, meters=meters).row
    assert row["worker_ms"] == pytest.approx(0.3 / 20 * 1000)
    assert row["pool_ms"] == pytest.approx(0.5 / 20 * 1000)
    assert row["others_ms"] == pytest.approx(0.4 / 20 * 1000)  # Locust and the rest of the machine
    assert row["priced_by"] == "measured demand"


def test_a_lesson_s_prediction_may_be_a_function_of_the_measured_demand(tmp_path):
    meters = (cpu_meter({1: 0.2}), cpu_meter({7: 0.5}), machine_meter(0.8))
    seen = []

    def priced(cost):
        seen.append(cost)
        return Prediction(20.0, 100.0, "CPU")

    row = run(steady(2, T0 + 0.05, T0 + 5.0), tmp_path, meters=meters, predicted=priced).row
    assert seen[0].worker_ms == pytest.approx(25.0)
    assert (row["predicted_rps"], row["priced_by"]) == (20.0, "measured demand")


def test_a_run_whose_requests_time_out_is_not_judged_by_its_rate(tmp_path):
    options = Options(lesson="tests-collect", expect_failures=True)
    row = run(steady(2, T0 + 0.05, T0 + 5.0, ok=False), tmp_path, options=options).row
    assert math.isnan(row["predicted_rps"]) and math.isnan(row["ratio"])
    assert row["priced_by"] == "not modelled"


def test_a_full_machine_is_a_note_where_the_server_kept_its_cores_busy(tmp_path):
    # lesson 07's pinned server: its core busy, Locust and the database on the other, the model at its GIL
    meters = (cpu_meter({1: 0.55}), cpu_meter({7: 0.97}), machine_meter(1000.0))
    at_its_core = Prediction(40.0, 50.0, "GIL (one core per worker)")
    row = run(steady(2, T0 + 0.05, T0 + 5.0), tmp_path, meters=meters, predicted=at_its_core).row
    assert row["valid"] and "the machine was the limit" in row["notes"]


def test_a_full_machine_is_a_note_where_the_model_puts_the_run_at_the_machine_s_cores(tmp_path):
    meters = (cpu_meter({1: 0.5}), cpu_meter({7: 0.5}), machine_meter(1000.0))
    at_machine = Prediction(40.0, 50.0, "cores (the machine's, shared)")
    row = run(steady(2, T0 + 0.05, T0 + 5.0), tmp_path, meters=meters, predicted=at_machine).row
    assert row["valid"] and "the machine was the limit" in row["notes"]


def test_a_server_on_another_machine_is_priced_with_its_own_cores_and_no_one_elses_cpu(tmp_path):
    per_user = steady(2, T0, T0 + 10)
    # Locust and the notebook keep 1.5 of this machine's cores busy; the server, elsewhere, 0.2 of its 8
    meters = (cpu_meter({1: 0.5}), cpu_meter({7: 0.2}), machine_meter(1.5))
    here = run(per_user, tmp_path, meters=meters).row
    apart = run(per_user, tmp_path, meters=meters, server_cores=8).row
    assert (here["usable_cores"], apart["usable_cores"]) == (cpus.cores(), 8)
    assert apart["others_ms"] == 0.0 and here["others_ms"] > 0  # this machine's CPU is not the server's
    assert apart["other_cpu"] == pytest.approx(1.0)  # machine 1.5 − Locust 0.5: the server is not in it


def test_a_run_whose_workers_joined_counts_the_workers_that_sent_load(runs):
    per_user = plan_records()[:2]
    for w in range(3):  # three came where two were asked for: each drove its share of the users
        records_file(runs, [per_user[w % 2]], name=f"records.w{w}.json")
    stages = [Stage(server(), Workload("sequential", users=1, duration_s=10))]
    (result,) = publish.save_plan(stages, ["run-0"], runs, outcome(), Options(processes=2, master="127.0.0.1:5557"))
    assert result.row["processes"] == 3 and result.row["master"] == "127.0.0.1:5557"


# lesson 07: how long a run's requests held a pooled database connection, read in its window


def test_a_run_reads_its_connection_hold_in_its_window_and_prices_with_it(tmp_path):
    windows, seen = [], []

    def held(window):
        windows.append(window)
        return 104.0

    def priced(cost):
        seen.append(cost)
        return Prediction(190.0, 400.0, "connection pool")

    row = run(steady(2, T0 + 0.05, T0 + 5.0), tmp_path, held=held, predicted=priced).row
    assert windows == [(row["window_start"], row["window_start"] + row["window_s"])]  # the CPU's window
    assert seen[0].db_hold_ms == 104.0 and row["db_hold_ms"] == 104.0


def test_a_run_on_a_server_without_a_database_measures_no_hold(tmp_path):
    assert math.isnan(run(steady(2, T0 + 0.05, T0 + 5.0), tmp_path).row["db_hold_ms"])
    assert publish.held_of(server()) is None
    assert publish.held_of(SimpleNamespace(settings=None)) is None  # a stand-in
    assert callable(publish.held_of(server(database_url="host=nowhere")))


def test_each_run_of_a_plan_is_priced_with_the_hold_of_its_own_window(runs, tmp_path):
    # one worker, 20 connection uses a second: 100 ms each in the first stage, 110 ms in the second
    folder = tmp_path / "telemetry"
    folder.mkdir()
    samples = []
    for k in range(101):
        s = k / 10
        samples.append({"t": T0 + s, "db_held_s": 2.0 * min(s, 5) + 2.2 * max(s - 5, 0), "db_uses": round(20 * s)})
    (folder / "101.jsonl").write_text("".join(json.dumps(sample) + "\n" for sample in samples))
    shared = SimpleNamespace(settings=Settings(database_url="host=nowhere"), telemetry_dir=folder, alive=False)
    seen = []

    def priced(cost):
        seen.append(cost.db_hold_ms)
        return Prediction(20.0, 100.0, "connection pool")

    stages = [
        Stage(shared, Workload("sync_select", users=2), predicted=priced),
        Stage(shared, Workload("sync_select", 3), predicted=priced),
    ]
    records_file(runs, plan_records())
    first, second = publish.save_plan(stages, ["run-0", "run-1"], runs, outcome(), Options(lesson="tests"))
    assert seen == [pytest.approx(100.0), pytest.approx(110.0)]
    assert (first.row["db_hold_ms"], second.row["db_hold_ms"]) == (pytest.approx(100.0), pytest.approx(110.0))
    assert first.manifest["result"]["db_hold_ms"] == first.row["db_hold_ms"]

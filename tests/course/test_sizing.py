"""Lessons 03 and 04 sized for 1 to 64 usable cores: what each would run, and whether the model says
its claims can show there (the claims' own bounds, asked of the model's prediction)."""

import pytest

from labserver.demo.settings import WORKERS_MAX, Settings
from labserver.harness.load import sizing
from labserver.theory import cores as core_model
from labserver.theory.model import predict
from labserver.theory.workload import Workload

CORE_COUNTS = [1, 2, 4, 8, 16, 64]
FIB_MS = 15.0  # fib(25) on a laptop core: the price only sets where the bounds cross, not which binds
LESSON_03_IO_MS = 50


def test_set_sizes_are_kept():
    assert sizing.cpu_users(7, cores=16) == 7
    assert sizing.worker_counts([1, 4], cores=16) == [1, 4]


@pytest.mark.parametrize("cores", CORE_COUNTS)
def test_users_grow_with_the_cores(cores):
    users = sizing.cpu_users(0, cores)
    assert users >= sizing.LEAST_USERS
    assert users >= sizing.USERS_PER_CORE * cores
    assert sizing.cpu_users(0, 2) == 20  # the 2-core course as it was measured


@pytest.mark.parametrize("cores", CORE_COUNTS)
@pytest.mark.parametrize("io_ms", [0, LESSON_03_IO_MS])
def test_lesson_03_pool_can_keep_every_core_busy(cores, io_ms):
    """Claims: the pool keeps ≥ 0.85 of its usable cores busy; pool / one-core patterns ≈ the core count."""
    users = sizing.cpu_users(0, cores)
    kw = dict(cpu_ms_per_task=FIB_MS, cores=cores)
    pool = predict(Workload("processpool", users, io_ms=io_ms), Settings(procs=cores), **kw)
    one_core = predict(Workload("sequential", users, io_ms=io_ms), **kw)
    usable = core_model.usable("processpool", workers=1, procs=cores, cores=cores)
    assert pool.rps * FIB_MS / 1000 / usable >= 0.95  # share of its cores the pool keeps busy
    assert pool.rps / one_core.rps == pytest.approx(cores, rel=0.05)


@pytest.mark.parametrize("cores", [16, 64])
def test_lesson_03_at_two_core_size_could_not_show_it(cores):
    """Why the sizing exists: 20 users with 50 ms of I/O leave a big machine's pool mostly idle."""
    pool = predict(
        Workload("processpool", 20, io_ms=LESSON_03_IO_MS), Settings(procs=cores), cpu_ms_per_task=FIB_MS, cores=cores
    )
    assert pool.rps * FIB_MS / 1000 / cores < 0.85


@pytest.mark.parametrize("cores", CORE_COUNTS)
def test_lesson_04_compares_one_worker_the_cores_and_one_past(cores):
    workers = sizing.worker_counts([], cores)
    assert core_model.check_workers(workers) == workers
    for w in workers:
        Settings(workers=w, procs=0).check()  # a server the lesson can start
    # "up to the cores and not past them" is shown, up to the server's bound
    assert workers[0] == 1 and workers[-1] == min(cores + 1, WORKERS_MAX)
    assert len(workers) <= 3  # the run stays as short on 64 cores as on 2
    users = sizing.cpu_users(0, cores)
    one_core = Workload("sequential", users)
    rps = {w: predict(one_core, Settings(workers=w), cpu_ms_per_task=FIB_MS, cores=cores).rps for w in workers}
    assert rps[cores] / rps[1] == pytest.approx(cores, rel=0.05)  # every worker has a core's work
    if cores + 1 in rps:
        assert rps[cores + 1] == pytest.approx(rps[cores], rel=0.05)  # and one more has none


def test_fractional_quota_counts_whole_cores():
    assert sizing.worker_counts([], 1.5) == [1, 2]
    assert sizing.cpu_users(0, 1.5) == 20


def test_measure_enters_beside_with_the_started_servers_around_every_run(monkeypatch):
    import contextlib
    from types import SimpleNamespace

    events = []

    @contextlib.contextmanager
    def started(servers):
        events.append("start")
        yield [SimpleNamespace(name=i) for i, _ in enumerate(servers)]
        events.append("stop")

    def run_plan(server, runs, **kw):
        events.append(("run", server.name, len(runs)))
        return [SimpleNamespace(row={"pattern": r["pattern"]}) for r in runs]

    @contextlib.contextmanager
    def beside(servers):
        events.append(("beside", sorted(servers)))
        yield
        events.append("beside done")

    monkeypatch.setattr(sizing, "running", started)
    monkeypatch.setattr(sizing, "LabServer", lambda **kw: kw)
    monkeypatch.setattr(sizing, "run_plan", run_plan)
    runs = [{"pattern": p, "users": 1, "server": "app"} for p in ("sequential", "gather")]
    rows = sizing.Plan(runs, {"app": {}}, duration_s=5).measure(beside=beside)
    assert list(rows["pattern"]) == ["sequential", "gather"]
    assert events == ["start", ("beside", ["app"]), ("run", 0, 2), "beside done", "stop"]

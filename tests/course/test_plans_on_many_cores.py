"""Every lesson's plan on 1 to 64 usable cores: each run foreseen valid (harness/load/validity.py), each lesson short.

The plans are the lessons' own: each setup function called as its notebook's setup cell calls it
(test_lessons.call), on a machine of that many cores, with fib priced as a laptop's core would
(fast and slow). Lessons 03, 04 and 10 size themselves to the cores; the others run the same
plan on any machine, which a test checks too, and their closed-loop runs are walked as well.
"""

import dataclasses

import pandas as pd
import pytest

from labserver.demo.settings import Settings
from labserver.harness.load import sizing, validity
from labserver.harness.plans.plan import mirrored
from labserver.harness.servers import interpreters
from labserver.theory import model
from labserver.theory.cores import PHI
from labserver.theory.workload import Workload
from tests.course.test_lessons import call, parameters

CORE_COUNTS = [1, 2, 4, 8, 12, 16, 32, 64]
FIB_25_MS = [6.0, 14.0]  # fib(25) on a fast laptop core, and on a slow one (or a busy hyperthread)
DIGEST_MS_PER_MIB = 0.6  # SHA-256 on a core with the SHA extensions: the fastest digest, the most requests
LOCUST_START_S = 2.0  # one start of Locust, its users spawned: what a plan pays before its first run
SIZED = ["03_cpu_bound", "04_workers", "10_without_the_gil"]


def fib_price(fib_25_ms: float):
    return lambda n: fib_25_ms * PHI ** (n - 25) if n > 1 else 0.0


@pytest.fixture
def laptop(monkeypatch, machine):
    """A machine of `cores` usable CPUs whose fib(25) takes `fib_25_ms`, with a free-threaded Python found."""

    def make(cores: int, fib_25_ms: float) -> None:
        machine(cores)
        monkeypatch.setattr(model, "cpu_ms", fib_price(fib_25_ms))
        monkeypatch.setattr(model, "digest_ms", lambda mib: DIGEST_MS_PER_MIB * mib)
        # the free-threaded build computes fib about 1.66× slower (fib(20): 1.36 ms against 0.82 here)
        monkeypatch.setattr(interpreters, "fib_20_ms", lambda _: 1.66 * fib_price(fib_25_ms)(20))
        monkeypatch.setattr(interpreters, "free_threaded_server", lambda: "/opt/python3.13t/bin/python")
        monkeypatch.setattr(interpreters, "probe", lambda _: type("Probe", (), {"label": "3.13.5t"})())

    return make


def plans(lesson: str, cores: int) -> list[sizing.Plan]:
    """The lesson's plans as its setup function makes them on `cores`."""
    made = call(lesson, cores=float(cores))
    return list(made.plans.values()) if lesson == "10_without_the_gil" else [made.plan]


def invalid(plan: sizing.Plan, cores: int, fib_25_ms: float) -> list[str]:
    return validity.warn(plan.foresee(cores, fib_price(fib_25_ms)))


def seconds(lesson_plans: list[sizing.Plan]) -> float:
    """What the lesson's runs take: their windows, and a start of Locust for each segment of each plan."""
    return sum(p.seconds() + LOCUST_START_S * len(p.segments()) for p in lesson_plans)


@pytest.mark.parametrize("fib_25_ms", FIB_25_MS)
@pytest.mark.parametrize("cores", CORE_COUNTS)
@pytest.mark.parametrize("lesson", SIZED)
def test_every_run_of_a_sized_lesson_is_foreseen_valid(lesson, cores, fib_25_ms, laptop):
    laptop(cores, fib_25_ms)
    for plan in plans(lesson, cores):
        assert invalid(plan, cores, fib_25_ms) == []
        assert all(1 <= plan.senders(i) <= cores for i in range(len(plan.runs)))  # one core per Locust process
        for key in plan.servers:
            plan.settings(key, cores).check()  # a server the lesson can start there


@pytest.mark.parametrize("fib_25_ms", FIB_25_MS)
@pytest.mark.parametrize("cores", [8, 12, 16, 32, 64])
@pytest.mark.parametrize("lesson", SIZED)
def test_a_sized_lesson_on_many_cores_takes_at_most_1_5_times_its_time_on_2(lesson, cores, fib_25_ms, laptop):
    laptop(2, fib_25_ms)
    on_two = seconds(plans(lesson, 2))
    laptop(cores, fib_25_ms)
    assert seconds(plans(lesson, cores)) <= 1.5 * on_two


@pytest.mark.parametrize("fib_25_ms", FIB_25_MS)
@pytest.mark.parametrize("cores", [16, 32, 64])
def test_the_sizing_of_02adce4_is_invalid_on_16_cores_and_more(cores, fib_25_ms):
    """What the check is for: 10 users per core for every pattern, in one 2 s window, as lessons 03 and 10 had it.

    A pattern held to one core with 160 users takes 160 × fib per round trip: its replies come in
    one burst, or none, per window (../shared/evidence/manycore-2026-11-27: 7 of 8 thread-pool runs
    of lesson 03 invalid on 16 cores).
    """
    users = max(20, 10 * cores)
    patterns = ["threadpool", "sequential", "processpool"]
    old_03 = [
        dict(pattern=p, users=users, cpu_n=25, io_ms=io, server="lab")
        for io in (0, 50)
        for _, p in mirrored(patterns, 4)
    ]
    plan = sizing.Plan(old_03, {"lab": {"threads": users}}, 2)
    assert len(invalid(plan, cores, fib_25_ms)) >= 8
    old_10 = [dict(pattern="threadpool", users=users, cpu_n=25, server=gil) for gil in ("on", "off")]
    ten = sizing.Plan(old_10, {"on": {"threads": users, "gil": True}, "off": {"threads": users, "gil": False}}, 2)
    assert any("bursts" in line for line in invalid(ten, cores, fib_25_ms))


@pytest.mark.parametrize("lesson", ["03_cpu_bound", "10_without_the_gil"])  # 04 compares counts at the same users
def test_a_run_held_to_one_core_has_as_many_users_on_64_cores_as_on_2(lesson, laptop):
    def one_core_users(cores: int) -> set[int]:
        laptop(cores, 10.0)
        held = []
        for plan in plans(lesson, cores):
            for w, s in (plan._workload(i, cores) for i in range(len(plan.runs))):
                usable = 1 if w.pattern == "sequential" or (w.pattern == "threadpool" and s.gil) else None
                if usable and w.users > 1 and s.workers == 1:
                    held.append(w.users)
        return set(held)

    on_2 = one_core_users(2)
    assert on_2, f"{lesson} holds no run to one core: the rule has nothing to check"
    assert one_core_users(64) == on_2


# The lessons that run the same plan on any machine ------------------------------------------------------------------


@pytest.mark.parametrize(
    "lesson",
    ["01_async_vs_sync", "02_sequential_vs_gather", "05_blocking", "06_client_side", "07_database", "08_overload"],
)
def test_the_other_lessons_plan_the_same_on_1_and_64_cores(lesson, machine):
    machine(1)
    on_one = call(lesson, cores=1.0)
    machine(64)
    on_64 = call(lesson, cores=64.0)
    if not dataclasses.is_dataclass(on_one):
        assert on_one == on_64
        return
    fields = [f.name for f in dataclasses.fields(on_one)]
    pairs = [(getattr(on_one, f), getattr(on_64, f)) for f in fields]
    same = [a.equals(b) if isinstance(a, pd.DataFrame) else a == b for a, b in pairs]
    assert all(same)


def _sweep(patterns, users, duration_s, **work):
    """The runs of load.sweep: every pattern × users on one server, in one Locust process."""
    return [dict(pattern=p, users=u, duration_s=duration_s, server="lab", **work) for p in patterns for u in users]


@pytest.mark.parametrize("cores", CORE_COUNTS)
def test_the_other_lessons_closed_loop_runs_are_foreseen_valid(cores, machine):
    machine(cores)
    p01, p02, p05 = (parameters(name) for name in ("01_async_vs_sync", "02_sequential_vs_gather", "05_blocking"))
    lesson_01 = sizing.Plan(
        _sweep(
            ["threadpool", "sequential"], call("01_async_vs_sync", cores=cores), p01["duration_s"], io_ms=p01["io_ms"]
        ),
        {"lab": {"threads": p01["threads"]}},
        p01["duration_s"],
    )
    lesson_02 = sizing.Plan(
        _sweep(
            ["threadpool", "sequential", "gather"],
            call("02_sequential_vs_gather", cores=cores),
            p02["duration_s"],
            tasks=p02["tasks"],
            io_ms=p02["io_ms"],
        ),
        {"lab": {"workers": p02["workers"], "threads": p02["threads"], "procs": 0}},
        p02["duration_s"],
    )
    blocking = call("05_blocking", cores=cores)
    server = {"lab": {"workers": p05["workers"], "threads": p05["threads"], "procs": 0}}
    lessons_05 = [
        sizing.Plan(
            [dict(pattern=p, users=u, tasks=p05["tasks"], io_ms=p05["io_ms"], server="lab") for p, u in plan],
            server,
            p05["duration_s"],
        )
        for plan in blocking.plans
    ]
    for plan in [lesson_01, lesson_02, *lessons_05]:
        assert invalid(plan, cores, 10.0) == []


@pytest.mark.parametrize("cores", CORE_COUNTS)
def test_lesson_98_sends_its_busiest_run_from_enough_locust_processes(cores, machine):
    machine(cores)
    p = parameters("98_the_instrument")
    made = call("98_the_instrument", cores=cores)
    runs = [
        (Workload("sequential", u, io_ms=p["io_ms"], duration_s=p["duration_s"]), Settings(procs=1)) for u in made.users
    ]
    assert validity.warn(validity.foresee(runs, cores=cores, server_ms=0.5)) == []
    if cores >= 2:  # the busiest run passes one worker's ceiling (about 2,000 req/s at 0.5 ms a request), not Locust's
        busiest = Workload("sequential", p["ceiling_users"], io_ms=p["io_ms"], duration_s=p["duration_s"])
        seen = validity.foresee([(busiest, Settings(procs=1))], cores=cores, server_ms=0.5, processes=made.generators)
        assert seen[0].generator_share < validity.SATURATED

"""Each lesson's setup cell is one call to its module's `plan` (labserver/lessons/): its defaults pass, and every
bad value fails by name.

The calls are made as the notebook's setup cell makes them (its keywords, read from the cell),
with the values of its parameters cell, so that a test checks what a learner runs. Nothing here
starts a process, and the cores are given, never read from the machine.
"""

import ast
import builtins
import contextlib
import dataclasses
import importlib
import re

import nbformat
import pytest

from labserver.lessons import LESSONS as REGISTRY
from labserver.lessons import the_instrument
from labserver.paths import NOTEBOOKS, ROOT

LESSONS = [
    "01_async_vs_sync",
    "02_sequential_vs_gather",
    "03_cpu_bound",
    "04_workers",
    "05_blocking",
    "06_client_side",
    "07_database",
    "08_overload",
    "09_stalls_and_shedding",
    "10_without_the_gil",
    "11_app_threads",
    "12_calling_services",
    "13_clients_that_leave",
    "14_one_slow_route",
    "15_your_own_app",
    "98_the_instrument",
    "99_summary",
]


def _cells(lesson: str) -> tuple[str, str, list[str]]:
    """The lesson's parameters cell, its setup cell (the next code cell) and the code cells after them."""
    code = [c for c in nbformat.read(NOTEBOOKS / f"{lesson}.ipynb", as_version=4).cells if c.cell_type == "code"]
    at = next(i for i, c in enumerate(code) if "parameters" in c.metadata.get("tags", []))
    return code[at].source, code[at + 1].source, [c.source for c in code[at + 2 :]]


def parameters(lesson: str) -> dict:
    """The values of the lesson's parameters cell."""
    return {s.target.id: ast.literal_eval(s.value) for s in ast.parse(_cells(lesson)[0]).body}


def _setup_call(lesson: str) -> ast.Assign:
    """The setup cell's one statement that calls its lesson's `plan`."""
    calls = [
        s
        for s in ast.parse(_cells(lesson)[1]).body
        if isinstance(s, ast.Assign)
        and isinstance(s.value, ast.Call)
        and ast.unparse(s.value.func) in ("plan", f"{REGISTRY[lesson].module}.plan")
    ]
    assert len(calls) == 1, f"{lesson}: {len(calls)} calls of `plan` in its setup cell, want one"
    return calls[0]


def call(lesson: str, cores: float = 2.0, **changed):
    """The lesson's function, called as its setup cell calls it, on the parameters cell's values but `changed`.

    Names the cell binds to literals (PATTERNS, ...) are read from it; CORES is `cores`.
    """
    setup = ast.parse(_cells(lesson)[1]).body
    names = {"CORES": cores} | parameters(lesson)
    for s in setup:
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
            with contextlib.suppress(ValueError):  # not a literal: CORES, the call itself
                names[s.targets[0].id] = ast.literal_eval(s.value)
    names |= changed
    statement = _setup_call(lesson)
    function = importlib.import_module(f"labserver.lessons.{REGISTRY[lesson].module}").plan
    return function(**{kw.arg: eval(ast.unparse(kw.value), {}, dict(names)) for kw in statement.value.keywords})


def fails(message: str, lesson: str, **changed) -> None:
    """The lesson's call with `changed` raises a ValueError whose message holds `message`."""
    with pytest.raises(ValueError, match=re.escape(message)):
        call(lesson, **changed)


@pytest.fixture(autouse=True)
def two_cores(machine):
    """Every test here on a machine of 2 cores, unless it asks `machine(n)` for n (tests/course/conftest.py)."""
    return machine


# The setup cells -------------------------------------------------------------------------------------------------


def test_every_notebook_is_in_the_registry():
    notebooks = sorted(p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    assert notebooks == LESSONS == list(REGISTRY), "a notebook without its module in labserver/lessons/, or the reverse"


@pytest.mark.parametrize("lesson", LESSONS)
def test_each_lesson_has_one_home(lesson):
    """Its module is labserver/lessons/<module>.py, and the notebook imports lesson code from that module alone."""
    module = REGISTRY[lesson].module
    assert (ROOT / "labserver" / "lessons" / f"{module}.py").is_file(), f"{lesson}: no labserver/lessons/{module}.py"
    imported = set()
    for cell in nbformat.read(NOTEBOOKS / f"{lesson}.ipynb", as_version=4).cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.ImportFrom) and node.module == "labserver.lessons":
                imported |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("labserver.lessons."):
                imported.add(node.module.split(".")[2])
            elif isinstance(node, ast.Import):
                imported |= {a.name.split(".")[2] for a in node.names if a.name.startswith("labserver.lessons.")}
    assert imported == {module}, f"{lesson} imports lesson code from {sorted(imported)}, want {module} alone"


@pytest.mark.parametrize("lesson", LESSONS)
def test_setup_cell_is_constants_and_one_call(lesson):
    tree = ast.parse(_cells(lesson)[1])
    logic = [ast.unparse(n)[:60] for n in ast.walk(tree) if isinstance(n, ast.If | ast.For | ast.While | ast.Raise)]
    assert not logic, f"{lesson}: checks belong in its lesson's module, not the setup cell: {logic}"
    _setup_call(lesson)


@pytest.mark.parametrize("lesson", LESSONS)
def test_setup_names_what_the_result_holds(lesson):
    """A result of several values is `setup`, and the cell binds each of its fields by name, to a name of the
    field's own (SWEEP is `setup.sweep`): a field added, dropped or moved cannot bind a value to another's name."""
    target = _setup_call(lesson).targets[0]
    result = call(lesson)
    if not dataclasses.is_dataclass(result):
        assert isinstance(target, ast.Name) and target.id != "setup", f"{lesson}: one value bound as `setup`"
        return
    assert isinstance(target, ast.Name) and target.id == "setup", f"{lesson}: its result is bound to {target}"
    bound = {}
    for s in ast.parse(_cells(lesson)[1]).body:
        if isinstance(s, ast.Assign):
            names = s.targets[0].elts if isinstance(s.targets[0], ast.Tuple) else [s.targets[0]]
            values = s.value.elts if isinstance(s.value, ast.Tuple) else [s.value]
            if len(names) != len(values):  # a value unpacked in turn (GIL_BUILD, ... = BUILDS): not setup's
                continue
            for name, value in zip(names, values, strict=True):
                if isinstance(value, ast.Attribute) and ast.unparse(value.value) == "setup":
                    bound[value.attr] = name.id
    fields = [f.name for f in dataclasses.fields(result)]
    assert sorted(bound) == sorted(fields), f"{lesson}: binds {sorted(bound)} of {fields}"
    assert all(name.lower() == field for field, name in bound.items()), f"{lesson}: {bound}"


@pytest.mark.parametrize("lesson", LESSONS)
def test_setup_defines_every_name_the_lesson_uses(lesson):
    params, setup, later = _cells(lesson)
    loaded, bound = set(), set(dir(builtins)) | {"display"}  # IPython's display is a builtin in a notebook
    for node in ast.walk(ast.Module([s for cell in later for s in ast.parse(cell).body], [])):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    namespace = {}
    exec(compile(params + "\n" + setup, lesson, "exec"), namespace)  # imports and checks only: nothing starts
    missing = loaded - bound - set(namespace)
    assert not missing, f"{lesson}: the later cells use names the setup leaves undefined: {missing}"


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_list_parameter_passed_as_text_says_how_to_pass_it(lesson):
    """papermill's -p hands a list over as text: each list the lesson takes fails saying how to pass one."""
    cell = ast.parse(_cells(lesson)[0]).body
    lists = [s.target.id for s in cell if ast.unparse(s.annotation).startswith("list")]
    if not lists:
        pytest.skip(f"{lesson} takes no list")
    for name in lists:
        text = str(parameters(lesson)[name])
        fails(f"{name} must be a list of", lesson, **{name: text})
        fails(f"pass lists with papermill -y '{name}: ", lesson, **{name: text})


# 01 -----------------------------------------------------------------------------------------------------------------


def test_01_defaults():
    assert call("01_async_vs_sync") == [10, 30, 120, 160]


@pytest.mark.parametrize("users", [[50, 200], [10, 100], [10], [200]])
def test_01_needs_users_on_both_sides_of_the_pool(users):
    message = f"users needs a value below threads (40) and one of at least 3 × threads (120), got {users}"
    fails(message, "01_async_vs_sync", users=users)


def test_01_sides_follow_threads():
    assert call("01_async_vs_sync", users=[5, 30], threads=10) == [5, 30]
    fails(
        "below threads (4) and one of at least 3 × threads (12), got [5, 30]",
        "01_async_vs_sync",
        threads=4,
        users=[5, 30],
    )


def test_01_checks_every_run():
    fails("users must be a whole number from 1 to 2000, got 0", "01_async_vs_sync", users=[0, 200])
    fails("threads must be a whole number from 1 to 1000, got 0", "01_async_vs_sync", threads=0)
    fails("io_ms must be between 0 and", "01_async_vs_sync", io_ms=-1)
    fails("duration_s must be a whole number from 1 to 600, got 0", "01_async_vs_sync", duration_s=0)
    fails("unknown pattern 'thread'; choose one of:", "01_async_vs_sync", PATTERNS=["thread"])


# 02 -----------------------------------------------------------------------------------------------------------------


def test_02_defaults_and_a_lone_number():
    assert call("02_sequential_vs_gather") == [100]
    assert call("02_sequential_vs_gather", users=50) == [50]  # a lone number where a list goes is a list of one


def test_02_checks_every_run():
    fails("workers must be a whole number from 1 to 64, got 0", "02_sequential_vs_gather", workers=0)
    fails("threads must be a whole number from 1 to 1000, got 0", "02_sequential_vs_gather", threads=0)
    fails("tasks must be between 1 and", "02_sequential_vs_gather", tasks=0)
    fails("tasks × io_ms must be at most", "02_sequential_vs_gather", tasks=100, io_ms=1000)
    fails("duration_s must be a whole number from 1 to 600, got 0", "02_sequential_vs_gather", duration_s=0)
    fails("give at least one pattern and one users value", "02_sequential_vs_gather", users=[])


# 03 -----------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("cores", "pool", "threads"), [(1, 20, 40), (2, 20, 40), (16, 160, 160)])
def test_03_defaults_size_users_to_the_cores_each_pattern_can_use(cores, pool, threads, machine):
    machine(cores)
    setup = call("03_cpu_bound", cores=cores)
    # one core: 20 users on any machine; the pool, and the threads that let go of the GIL: 10 per core
    assert setup.users == {"threadpool": 20, "sequential": 20, "processpool": pool, "hashed": pool}
    assert (setup.threads, setup.sweep_cpu_n, setup.sweep) == (threads, [15, 18, 20], [15, 18, 20, 25])
    fib = [r for r in setup.plan.runs if r["tags"]["part"] == "fib"]
    mirrored = ["threadpool", "sequential", "processpool", "processpool", "sequential", "threadpool"]
    assert [r["pattern"] for r in fib[:6]] == mirrored  # each pattern early and late
    assert fib[-1]["pattern"] == "hashed"  # once, after the rounds
    assert len(setup.plan.runs) == 2 * 4 * 3 + 1 + 4  # fib and fib + sleep, 4 rounds of 3 patterns; hashed; the sweep


def test_03_users_given_are_kept_with_a_thread_each(machine):
    machine(16)
    setup = call("03_cpu_bound", cores=16, users=60)
    assert setup.users == {p: 60 for p in ("threadpool", "sequential", "processpool", "hashed")}
    assert setup.threads == 60
    assert call("03_cpu_bound", cores=16, users=5).threads == 40


def test_03_sweep_ends_at_cpu_n():
    assert call("03_cpu_bound", sweep_cpu_n=15).sweep == [15, 25]
    assert call("03_cpu_bound", sweep_cpu_n=[20, 15, 20], cpu_n=22).sweep == [15, 20, 22]


@pytest.mark.parametrize("rounds", [0, 6, 2.5])
def test_03_rounds_from_1_to_5(rounds):
    fails(f"rounds must be a whole number from 1 to 5, got {rounds!r}", "03_cpu_bound", rounds=rounds)


def test_03_checks_every_run():
    fails("users must be a whole number, got '20'; pass numbers with papermill -p users 20", "03_cpu_bound", users="20")
    fails("cpu_n must be between 0 and", "03_cpu_bound", cpu_n=99)
    fails("io_ms must be between 0 and", "03_cpu_bound", io_ms=-1)
    fails("users must be a whole number from 1 to 2000, got 0", "03_cpu_bound", sweep_users=0)
    fails("cpu_n must be between 0 and", "03_cpu_bound", sweep_cpu_n=[15, 99])
    fails("duration_s must be a whole number from 1 to 600, got 0", "03_cpu_bound", duration_s=0)


# 04 -----------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cores", "workers"),
    [
        (1, [1, 2]),
        (2, [1, 2, 3]),
        (16, [1, 16, 17]),
        (64, [1, 64]),  # the server's bound: one past the cores is not run
    ],
)
def test_04_defaults_size_workers_and_users_to_the_cores(cores, workers, machine):
    machine(cores)
    setup = call("04_workers", cores=cores)
    assert (setup.workers, setup.users) == (workers, max(20, 10 * cores))
    assert set(setup.plan.servers) == set(workers)  # a server per count
    cpu = [r["server"] for r in setup.plan.runs if r["tags"]["workload"] == "CPU-bound"]
    assert cpu == workers + workers[::-1]  # mirrored: each count early and late


def test_04_workers_given_are_kept(machine):
    machine(16)
    setup = call("04_workers", cores=16, workers=[1, 4], users=40)
    assert (setup.workers, setup.users) == ([1, 4], 40)


@pytest.mark.parametrize("workers", [[2, 3], [1, 3, 2], [1, 1, 2], 2])
def test_04_workers_increase_from_1(workers):
    shown = [workers] if isinstance(workers, int) else workers
    fails(f"workers must be increasing, distinct and start at 1, got {shown!r}", "04_workers", workers=workers)


@pytest.mark.parametrize("rounds", [0, 6])
def test_04_rounds_from_1_to_5(rounds):
    fails(f"rounds must be a whole number from 1 to 5, got {rounds}", "04_workers", rounds=rounds)


def test_04_checks_every_run():
    fails("workers must be a whole number from 1 to 64, got 65", "04_workers", workers=[1, 65])
    fails("users must be a whole number, got 'many'", "04_workers", users="many")
    fails("users must be a whole number from 1 to 2000, got 0", "04_workers", io_users=0)
    fails("cpu_n must be between 0 and", "04_workers", cpu_n=-1)
    fails("io_ms must be between 0 and", "04_workers", io_ms=-1)
    fails("duration_s must be a whole number from 1 to 600, got 0", "04_workers", duration_s=0)


# 05 -----------------------------------------------------------------------------------------------------------------


def test_05_defaults():
    setup = call("05_blocking")
    assert (setup.users, setup.top, setup.service_s, setup.cap) == ([5, 50], 50, 0.1, 10.0)
    contrast = [("mixed", 50), ("wrapped", 50), ("offload", 50), ("tothread", 50), ("sequential", 50)]
    assert setup.plan == [("blocking", 5), ("blocking", 50), *contrast]
    # every run once; each blocking run, and the mixed one, ends its plan: a blocked worker owes its queue
    assert sorted(r for p in setup.plans for r in p) == sorted(setup.plan)
    assert all(p[-1][0] in ("blocking", "mixed") for p in setup.plans)
    assert all(r[0] not in ("blocking", "mixed") for p in setup.plans for r in p[:-1])


def test_05_plan_sorts_users_and_cap_counts_workers():
    setup = call("05_blocking", users=[40, 3], tasks=2, io_ms=50, workers=2)
    assert (setup.top, setup.plan[:2], setup.service_s, setup.cap) == (40, [("blocking", 3), ("blocking", 40)], 0.1, 20)
    assert call("05_blocking", users=7).plan[0] == ("blocking", 7)


@pytest.mark.parametrize("timeout_s", [0, -1.0, float("inf")])
def test_05_timeout_above_0(timeout_s):
    fails(f"timeout_s must be more than 0 s, got {timeout_s!r}", "05_blocking", timeout_s=timeout_s)


def test_05_checks_every_run():
    fails(
        "timeout_s must be more than 0 s, got '2'; pass numbers with papermill -p timeout_s 2",
        "05_blocking",
        timeout_s="2",
    )
    fails("duration_s must be a whole number from 1 to 600, got 0", "05_blocking", timeout_run_s=0)
    fails("duration_s must be a whole number from 1 to 600, got 0", "05_blocking", duration_s=0)
    fails("workers must be a whole number from 1 to 64, got 0", "05_blocking", workers=0)
    fails("threads must be a whole number from 1 to 1000, got 0", "05_blocking", threads=0)
    fails("tasks must be between 1 and", "05_blocking", tasks=0)
    fails("give at least one pattern and one users value", "05_blocking", users=[])


# 06 -----------------------------------------------------------------------------------------------------------------


def test_06_defaults():
    setup = call("06_client_side")
    assert (setup.counts, setup.concurrency) == ([100, 1000], [10, 100])
    planned = setup.planned
    # the loop runs once per count, the two pools at each concurrency: per endpoint 2 + 2 × 2 × 2 runs
    assert len(planned) == 2 * (2 + 2 * 2 * 2)
    assert set(planned["client"]) == {"loop", "threadpool", "aiohttp"}
    assert planned.loc[planned["requests"] == 100, "run"].all()  # every client runs at the smallest count


def test_06_counts_as_text_say_how_to_pass_them():
    message = (
        "counts must be a list of whole numbers, got the string '[10, 30]'; "
        "pass lists with papermill -y 'counts: [10, 30]' or in the parameters cell as counts = [10, 30]"
    )
    fails(message, "06_client_side", counts="[10, 30]")


def test_06_checks_every_run():
    setup = call("06_client_side", counts=20, concurrency=4)
    assert (setup.counts, setup.concurrency) == ([20], [4])
    fails("max_run_s must be a number of seconds above 0, got 0", "06_client_side", max_run_s=0)
    fails("requests must be a whole number from 1 to", "06_client_side", counts=[0])
    fails("concurrency must be a whole number from 1 to", "06_client_side", concurrency=[0])
    fails("io_ms must be between 0 and", "06_client_side", io_ms=-1)
    fails("threads must be a whole number from 1 to 1000, got 0", "06_client_side", threads=0)
    fails("give at least one client, pattern, request count and concurrency", "06_client_side", concurrency=[])


# 07 -----------------------------------------------------------------------------------------------------------------


def test_07_defaults():
    setup = call("07_database")
    selects, simulations = ["sync_select", "async_select"], ["sync_simulation", "async_simulation"]
    assert setup.sweep_cpu_n == [15, 20, 26, 28]
    assert setup.plan == [(selects, 80, 100, 0), (selects, 1000, 0, 0), (simulations, 32, 0, [15, 20, 26, 28])]


@pytest.mark.parametrize("name", ["pinned_rounds", "sweep_rounds"])
@pytest.mark.parametrize("rounds", [0, 10])
def test_07_rounds_from_1_to_9(name, rounds):
    fails(f"{name} must be a whole number from 1 to 9, got {rounds}", "07_database", **{name: rounds})


def test_07_checks_every_part():
    fails("sweep_cpu_n needs at least two depths, got [15]", "07_database", sweep_cpu_n=15)
    for scale in (0, 2.0):
        message = f"scale must be above 0 and at most 1 (Carlos Pena's full shop), got {scale!r}"
        fails(message, "07_database", scale=scale)
    fails("db_pool must be a whole number from 1 to 200, got 0", "07_database", db_pool=0)
    fails("threads must be a whole number from 1 to 1000, got 0", "07_database", threads=0)
    fails("users must be a whole number from 1 to 2000, got 0", "07_database", slow_users=0)
    fails("users must be a whole number from 1 to 2000, got 5000", "07_database", seed_users=5000)
    fails("io_ms must be between 0 and", "07_database", slow_io_ms=-1)
    fails("cpu_n must be between 0 and", "07_database", sweep_cpu_n=[15, 99])
    fails("duration_s must be a whole number from 1 to 600, got 602", "07_database", duration_s=600)


# 98 -----------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("cores", "generators"), [(1, 1), (2, 2), (16, 2)])
def test_98_defaults_spread_the_busiest_run_over_the_cores(machine, cores, generators):
    machine(cores)
    setup = call("98_the_instrument")
    assert (setup.users, setup.requests_users) == ([25, 50, 100, 200, 400, 800], [50, 100])
    assert (setup.generators, setup.ceiling) == (
        generators,
        "FastHttpUser, 1 process" if generators == 1 else "FastHttpUser, 2 processes",
    )


def test_98_takes_the_cores_given(machine):
    machine(16)  # the machine's bound on Locust processes, which check_load asks of cpus
    setup = the_instrument.plan(users=10, requests_users=20, ceiling_users=40, io_ms=100, duration_s=2, whole_cores=1)
    assert (setup.users, setup.requests_users) == ([10], [20])
    assert (setup.generators, setup.ceiling) == (1, "FastHttpUser, 1 process")


def test_98_checks_every_run():
    fails("users must be a whole number from 1 to 2000, got 0", "98_the_instrument", ceiling_users=0)
    fails("users must be a whole number from 1 to 2000, got 0", "98_the_instrument", requests_users=[0])
    fails("io_ms must be between 0 and", "98_the_instrument", io_ms=-1)
    fails("duration_s must be a whole number from 1 to 600, got 0", "98_the_instrument", duration_s=0)


# 99 -----------------------------------------------------------------------------------------------------------------


def test_99_lessons_as_a_list():
    assert call("99_summary") == []
    assert call("99_summary", lessons="01") == ["01"]
    assert call("99_summary", lessons=["01", "06"]) == ["01", "06"]


def test_99_lessons_as_text_say_how_to_pass_them():
    fails("""pass lists with papermill -y 'lessons: ["01", "06"]'""", "99_summary", lessons="['01', '06']")
    fails("lessons must be a list of strings, got [1, 6]", "99_summary", lessons=[1, 6])


def test_08_defaults():
    setup = call("08_overload")
    assert setup.rhos == parameters("08_overload")["rhos"]
    assert setup.guess_s == parameters("08_overload")["io_ms"] / 1000


@pytest.mark.parametrize("rhos", [[0.5, 1.0], [0.0], [-0.3]])
def test_08_rhos_below_capacity(rhos):
    fails("rhos are utilisations below capacity", "08_overload", rhos=rhos)


@pytest.mark.parametrize("overload", [1.0, 0.5])
def test_08_overload_above_capacity(overload):
    fails("overload is a utilisation above capacity", "08_overload", overload=overload)


def test_08_drain_within_the_overload_run():
    fails("drain_s must be shorter than overload_s (14), got 14", "08_overload", drain_s=14)
    fails("overload_s must be a whole number from 1 to 600", "08_overload", overload_s=0)


def test_08_arrivals_the_generator_can_send():
    fails("rate must be a number of arrivals per second", "08_overload", io_ms=1, threads=1000)


def test_09_defaults():
    assert call("09_stalls_and_shedding") == parameters("09_stalls_and_shedding")["io_ms"] / 1000


def test_09_checks_each_part():
    fails("shed_rho is a utilisation above capacity", "09_stalls_and_shedding", shed_rho=0.9)
    fails("stall_every_s must be more than 0", "09_stalls_and_shedding", stall_every_s=0)
    fails("duration_s must be a whole number from 1 to 600", "09_stalls_and_shedding", duration_s=0)
    fails("queue_limit", "09_stalls_and_shedding", queue_limit=-1)


def test_the_lessons_take_lists_to_check():
    # the text-list test above must not pass for want of lists to look at
    taken = [s for lesson in LESSONS for s in ast.parse(_cells(lesson)[0]).body if "list" in ast.unparse(s.annotation)]
    assert len(taken) >= 8


def test_10_defaults_sized_to_the_cores(monkeypatch):
    from labserver.harness.servers import interpreters

    def none():
        raise interpreters.NoFreeThreadedPython("none here")

    monkeypatch.setattr(interpreters, "free_threaded_server", none)
    on_two = call("10_without_the_gil", cores=2.0)
    assert on_two.users == 20 and on_two.threads == [1, 2, 20]
    assert on_two.free_threaded is None and on_two.missing == "none here"  # the lesson says so, its claims skip
    assert call("10_without_the_gil", cores=16.0).threads == [1, 16, 160] and on_two.builds[2].endswith("GIL off")


def test_10_checks_each_part():
    fails("rounds must be a whole number from 1 to 5", "10_without_the_gil", rounds=0)
    fails("threads must be a whole number from 1 to 1000", "10_without_the_gil", threads=[0])
    fails("duration_s must be a whole number from 1 to 600", "10_without_the_gil", duration_s=0)

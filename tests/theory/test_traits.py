"""Each pattern declares its traits; the model asks them, never the pattern's name, and predicts as before."""

import ast
import inspect
import math
import sys
from pathlib import Path

import pytest

from labserver.demo.patterns import PATTERNS, TRAITS
from labserver.demo.routes import SHOP
from labserver.demo.settings import Settings
from labserver.demo.traits import Hold, Traits, Where
from labserver.paths import ROOT
from labserver.theory import capacity, clients, cores, model
from labserver.theory.bottlenecks import Bottleneck
from labserver.theory.demand import Demand
from labserver.theory.workload import AWAITED, Workload, traits_of


def test_every_registered_pattern_declares_its_traits_in_its_own_module():
    assert set(TRAITS) == set(PATTERNS)
    for name, endpoint in PATTERNS.items():
        declared = sys.modules[endpoint.__module__].TRAITS
        assert isinstance(declared, Traits) and TRAITS[name] is declared
        assert declared.waits, f"{name} declares no wait"


@pytest.mark.parametrize("pattern", list(PATTERNS))
def test_a_plain_def_computes_in_the_thread_pool(pattern):
    # FastAPI runs a `def` endpoint in its thread pool and an `async def` one on the loop
    module = sys.modules[PATTERNS[pattern].__module__]
    work = getattr(module, "chunks", PATTERNS[pattern])  # a stream's work is in the generator it streams
    is_def = not (inspect.iscoroutinefunction(work) or inspect.isasyncgenfunction(work))
    assert is_def == (TRAITS[pattern].computes in (Where.THREAD_POOL, Where.RELEASED))


def test_the_traits_say_what_each_module_does():
    assert [p for p, t in TRAITS.items() if t.overlaps] == ["gather", "fanout", "fanoutbounded", "gathertimeout",
                                                            "taskgroup"]  # fmt: skip
    assert {p: t.calls for p, t in TRAITS.items() if t.calls} == {"callreused": 100, "fanout": 100, "fanoutbounded": 40}
    assert {p for p, t in TRAITS.items() if t.holds(Hold.THREAD)} == {
        "threadpool",
        "wrapped",
        "offload",
        "hashed",
        "syncdep",
        "streamsync",
        "bgsync",
        "bgasync",
        "pooled",
        "pooledinside",
    }
    assert {p for p, t in TRAITS.items() if t.holds(Hold.EXECUTOR)} == {"tothread"}
    assert {p for p, t in TRAITS.items() if t.connection} == {"pooled", "pooledinside"}
    assert {p for p, t in TRAITS.items() if t.holds(Hold.LOOP)} == {"blocking", "mixed"}
    assert {p for p, t in TRAITS.items() if len(t.waits) == 2} == {"mixed", "wrapped", "bgsync"}
    assert [p for p, t in TRAITS.items() if t.computes is Where.PROCESS_POOL] == ["processpool"]
    assert [p for p, t in TRAITS.items() if t.computes is Where.RELEASED] == ["hashed"]


def test_an_endpoint_with_no_traits_is_priced_as_an_awaited_one():
    assert traits_of(SHOP[0]) is AWAITED and Workload(SHOP[0], 1).traits is AWAITED
    assert Workload("gather", 1).traits is TRAITS["gather"]
    assert model.predict_for(SHOP[0], users=50, io_ms=100) == model.predict_for("sequential", users=50, io_ms=100)


# The model's predictions, as it made them when it tested each pattern's name: (rps, latency_ms, bottleneck).
# asyncio.to_thread's pool is priced as run_in_threadpool's, with its executor's threads in place of the limit's
EXECUTOR = capacity.executor_threads()
PLAIN = dict(users=500, io_ms=100, workers=4, threads=40, procs=0, cores=8.0, cpu_ms_per_task=0.0)
BEFORE_PLAIN = {
    "sequential": (5000.0, 100.0, "users"),
    "watchful": (5000.0, 100.0, "users"),  # sequential, with a check between sub-tasks
    "gather": (5000.0, 100.0, "users"),
    "gathertimeout": (5000.0, 100.0, "users"),  # priced as gather: the model does not know a call times out
    "taskgroup": (5000.0, 100.0, "users"),
    "dependent": (5000.0, 100.0, "users"),
    "processpool": (5000.0, 100.0, "users"),
    "interpreterpool": (5000.0, 100.0, "users"),
    "threadpool": (1600.0, 312.5, "threads"),  # 160 threads / 0.1 s
    "offload": (1600.0, 312.5, "threads"),
    "tothread": (4 * EXECUTOR / 0.1, 500 / (4 * EXECUTOR / 0.1) * 1000, "the loop's executor"),
    "syncdep": (1600.0, 312.5, "threads"),  # the dependency's wait holds a thread, as offload's does
    "streamsync": (1600.0, 312.5, "threads"),
    "asyncdep": (5000.0, 100.0, "users"),
    "callnew": (5000.0, 100.0, "users"),  # awaits the other service, as sequential; a new client's CPU is measured
    # the app's one client: 4 workers × its 100 connections / 0.1 s
    "callreused": (4000.0, 125.0, "calls in flight"),
    "fanout": (4000.0, 125.0, "calls in flight"),
    "fanoutbounded": (1600.0, 312.5, "calls in flight"),  # 4 workers × the semaphore's 40 / 0.1 s
    "streamasync": (5000.0, 100.0, "users"),
    "hashed": (1600.0, 312.5, "threads"),
    "wrapped": (800.0, 625.0, "threads"),  # 160 threads / 0.2 s: two waits a sub-task
    "bgsync": (800.0, 625.0, "threads"),  # the reply's wait and the background task's, each in a thread
    "pooled": (800.0, 625.0, "connection pool"),  # 4 workers × 20 connections / 0.1 s
    "pooledinside": (800.0, 625.0, "connection pool"),  # the same bound: the model misses pooled's stall
    "bgasync": (1600.0, 312.5, "threads"),
    "blocking": (40.0, 12500.0, "event loop"),  # 4 loops / 0.1 s
    "mixed": (40.0, 12500.0, "event loop"),  # 4 loops, each held for the blocking 0.1 s
}
QUEUED = dict(users=100, tasks=3, io_ms=100, workers=2, threads=10, procs=4, cores=2.0)
QUEUED |= dict(cpu_ms_per_task=0.5, server_ms=0.3, queueing=True)
_offload = model.predict_for("offload", **{**QUEUED, "threads": EXECUTOR})
TOTHREAD_QUEUED = (_offload.rps, _offload.latency_ms, "the loop's executor")
BEFORE_QUEUED = {
    "sequential": (330.9350067628577, 302.17413678347503, "users"),
    "watchful": (330.9350067628577, 302.17413678347503, "users"),
    "dependent": (330.9350067628577, 302.17413678347503, "users"),
    "gather": (945.4736940288265, 105.76708863668406, "users"),
    "gathertimeout": (945.4736940288265, 105.76708863668406, "users"),
    "taskgroup": (945.4736940288265, 105.76708863668406, "users"),
    "processpool": (331.3367442718954, 301.8077582060741, "users"),
    "interpreterpool": (330.9350067628577, 302.17413678347503, "users"),  # its CPU is the worker's: as sequential
    "threadpool": (66.26905235255136, 1509.0000000000002, "threads"),
    "offload": (66.26905235255136, 1509.0000000000002, "threads"),
    "tothread": TOTHREAD_QUEUED,
    "syncdep": (66.26905235255136, 1509.0000000000002, "threads"),
    "streamsync": (66.26905235255136, 1509.0000000000002, "threads"),
    "asyncdep": (330.9350067628577, 302.17413678347503, "users"),
    # a new client's CPU before each call: 100 users in step, 100 / (0.3 s + 100 × 1.8 ms / 2 workers)
    "callnew": (256.4102564102564, 390.0, "one core (users in step on the event loop)"),
    "callreused": (330.9350067628577, 302.17413678347503, "users"),
    "fanout": (666.6666666666665, 150.00000000000003, "calls in flight"),  # 2 × 100 / (3 calls at once × 0.1 s)
    "fanoutbounded": (266.66666666666663, 375.00000000000006, "calls in flight"),  # 2 × 40 / (3 × 0.1 s)
    "streamasync": (330.9350067628577, 302.17413678347503, "users"),
    "hashed": (66.26905235255136, 1509.0000000000002, "threads"),
    "wrapped": (33.23363243602526, 3009.0, "threads"),
    "bgsync": (33.23363243602526, 3009.0, "threads"),
    "pooled": (66.26905235255136, 1509.0000000000002, "threads"),  # 10 threads, fewer than its 20 connections
    "pooledinside": (66.26905235255136, 1509.0000000000002, "threads"),
    "bgasync": (66.26905235255136, 1509.0000000000002, "threads"),
    "blocking": (6.626905235255135, 15090.000000000002, "event loop"),
    "mixed": (6.633499170812604, 15075.0, "event loop"),
}
MEASURED = Demand(worker_ms=0.8, pool_ms=2.0, others_ms=0.5, generator_ms=0.4, worker_waited=0.15)
_offload = model.predict(
    Workload("offload", 40, io_ms=5), Settings(workers=1, threads=EXECUTOR, procs=2), cores=8.0, demand=MEASURED
)
TOTHREAD_MEASURED = (_offload.rps, _offload.latency_ms, "the loop's executor" if EXECUTOR < 40 else _offload.bottleneck)
BEFORE_MEASURED = {
    **dict.fromkeys(
        [
            *("sequential", "gather", "dependent", "offload", "syncdep", "asyncdep", "streamasync"),
            *("callnew", "callreused", "fanout", "fanoutbounded", "watchful", "gathertimeout", "taskgroup"),
        ],
        (1062.5, 37.647058823529406, "GIL (one core per worker)"),
    ),
    "threadpool": (1250.0, 32.0, "GIL (one core per worker)"),  # its threads compute: no share of the core is lost
    "wrapped": (1250.0, 32.0, "GIL (one core per worker)"),
    "bgsync": (1250.0, 32.0, "GIL (one core per worker)"),
    "pooled": (1250.0, 32.0, "GIL (one core per worker)"),
    "pooledinside": (1250.0, 32.0, "GIL (one core per worker)"),
    "bgasync": (1250.0, 32.0, "GIL (one core per worker)"),
    "streamsync": (1250.0, 32.0, "GIL (one core per worker)"),  # its generator computes in the pool, as threadpool
    "hashed": (1250.0, 32.0, "GIL (one core per worker)"),  # no digest (cpu_n 0): the server's own work, one core
    "interpreterpool": (1250.0, 32.0, "GIL (one core per worker)"),  # no fib: the same
    "processpool": (1000.0, 40.0, "cores"),
    "tothread": TOTHREAD_MEASURED,  # 6 threads on 2 CPUs bind before the GIL: 6 / 5.8 ms
    "blocking": (172.41379310344826, 232.00000000000003, "event loop"),
    "mixed": (200.0, 200.0, "event loop"),
}


def _as_before(p: model.Prediction, before: tuple[float, float, str]) -> None:
    assert (p.rps, p.latency_ms) == pytest.approx(before[:2], rel=1e-12)
    assert p.bottleneck == before[2]


@pytest.mark.parametrize("pattern", list(PATTERNS))
def test_predictions_are_those_the_names_gave(pattern):
    assert set(BEFORE_PLAIN) == set(BEFORE_QUEUED) == set(BEFORE_MEASURED) == set(PATTERNS)
    _as_before(model.predict_for(pattern, **PLAIN), BEFORE_PLAIN[pattern])
    _as_before(model.predict_for(pattern, **QUEUED), BEFORE_QUEUED[pattern])
    measured = model.predict(
        Workload(pattern, 40, io_ms=5), Settings(workers=1, threads=40, procs=2), cores=8.0, demand=MEASURED
    )
    _as_before(measured, BEFORE_MEASURED[pattern])


def test_the_helpers_answer_as_the_names_did():
    threads = {p for p in PATTERNS if clients.slots(p, 10, 2) == 20}
    assert (
        threads == {"threadpool", "hashed", "streamsync", "bgasync", "pooled", "pooledinside"}
        and clients.slots("blocking", 10, 2) == 2
    )
    assert all(clients.slots(p) == math.inf for p in PATTERNS if p not in (*threads, "blocking"))
    assert {p for p in PATTERNS if model.in_step(p, 10, 0.1, 0.01, 40)} == {
        "threadpool",
        "hashed",
        "streamsync",
        "bgasync",
        "pooled",
        "pooledinside",
    }
    waited = Demand(worker_ms=3.0, worker_waited=0.3)
    kept_whole = {
        "threadpool",
        "wrapped",
        "hashed",
        "interpreterpool",
        "streamsync",
        "bgsync",
        "bgasync",
        "pooled",
        "pooledinside",
    }  # their CPU runs off the loop's thread
    assert {p for p in PATTERNS if capacity.kept(p, 1, 2.0, waited) == 1.0} == kept_whole
    assert {p for p in PATTERNS if cores.usable(p, 1, 4, 8.0) == 4} == {"processpool", "interpreterpool"}


# --- the rule stays: no module of the theory decides by a pattern's name

NAMES = set(PATTERNS)


def _names_in(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in NAMES
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_names_in(e) for e in node.elts)
    return False


def name_tests(source: str) -> list[str]:
    """The places in `source` that compare a pattern with a pattern's name, or look one up by it."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_names_in(o) for o in operands) and any("pattern" in ast.unparse(o) for o in operands):
                found.append(ast.unparse(node))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            table = node.func.value
            if isinstance(table, ast.Dict) and any(k is not None and _names_in(k) for k in table.keys):
                found.append(ast.unparse(node))
    return found


def test_the_detector_finds_each_kind_of_name_test():
    source = """
a = w.pattern == "processpool"
b = pattern in ("mixed", "wrapped")
c = {"threadpool": 40, "blocking": 1}.get(pattern, 0)
d = "gather" != workload.pattern
e = client == "threadpool"  # a client's name, not a pattern's
"""
    assert len(name_tests(source)) == 4


@pytest.mark.parametrize("path", sorted((ROOT / "labserver" / "theory").glob("*.py")), ids=lambda p: p.name)
def test_the_theory_asks_traits_not_names(path: Path):
    assert name_tests(path.read_text()) == [], f"{path.name}: ask the pattern's traits (demo/traits.py) instead"


@pytest.mark.parametrize(("pattern", "per_call_s"), [("fanoutbounded", 0.2035), ("callreused", 0.203)])
def test_a_call_holds_its_slot_for_what_the_calls_took_alone(pattern, per_call_s):
    # 4 calls of 200 ms, alone 207.5 ms at once or 816 ms one by one; 4 ms of either in the worker
    tasks, alone_ms = 4, (816.0 if pattern == "callreused" else 207.5)
    work = Workload(pattern, 400, tasks=tasks, io_ms=200)
    slots = TRAITS[pattern].calls
    p = model.predict(work, Settings(workers=1), cores=2.0, demand=Demand(worker_ms=4.0, alone_ms=alone_ms))
    assert p.bottleneck == Bottleneck.CALLS
    assert p.rps == pytest.approx(slots / (tasks * per_call_s))
    # measured in a run (no time alone), each call holds its slot for io_ms
    p = model.predict(work, Settings(workers=1), cores=2.0, demand=Demand(worker_ms=4.0))
    assert p.rps == pytest.approx(slots / (tasks * 0.2))

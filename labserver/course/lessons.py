"""Each lesson's parameters, checked before any process starts, and the values its notebook goes on to use.

A lesson's setup cell makes one call here, with its parameters by name. A bad value is a
ValueError that names the parameter, its bounds and the value given (labserver/checks.py). A
lone number where a list goes is a list of one; a list passed as text (papermill's `-p`) is an
error that says how to pass it. Sizes that follow the machine take its cores as an argument,
so that a test can ask for any count.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

import pandas as pd

from labserver import checks, protocol
from labserver.course import calling, leaving, sizing
from labserver.demo import cpus
from labserver.demo.settings import THREADS_DEFAULT, Settings
from labserver.harness import interpreters
from labserver.harness.load import check_arrivals, check_load, check_sweep
from labserver.harness.plan import mirrored
from labserver.harness.probes import Probes
from labserver.harness.procs import free_port
from labserver.paths import ROOT
from labserver.postgres import runs as database_runs
from labserver.theory import clients as client_model
from labserver.theory import cores as core_model
from labserver.theory import model
from labserver.theory.workload import USERS_MAX, Workload
from labserver.yourapp import routes as your_routes
from labserver.yourapp import wrap

BLOCKING_CONTRAST = (
    "mixed",
    "wrapped",
    "offload",
    "tothread",
    "sequential",
)  # lesson 05 runs these at its largest users only


def async_vs_sync(
    *,
    patterns: list[str],
    users: list[int] | int,
    io_ms: int,
    threads: int,
    duration_s: int,
) -> list[int]:
    """Lesson 01: every run of the sweep, with users both below the thread pool and at 3× it; `users` as a list."""
    users = checks.parameter("users", users, list[int])
    check_sweep(patterns, users, threads=threads, io_ms=io_ms, duration_s=duration_s)
    if min(users) >= threads or max(users) < 3 * threads:  # the claims compare the two sides of the pool
        raise ValueError(
            f"users needs a value below threads ({threads}) and one of at least 3 × threads ({3 * threads}), "
            f"got {users}"
        )
    return users


def sequential_vs_gather(
    *,
    patterns: list[str],
    users: list[int] | int,
    tasks: int,
    io_ms: int,
    workers: int,
    threads: int,
    duration_s: int,
) -> list[int]:
    """Lesson 02: every endpoint at every users value, on the server's workers and threads; `users` as a list."""
    users = checks.parameter("users", users, list[int])
    check_sweep(patterns, users, workers=workers, threads=threads, tasks=tasks, io_ms=io_ms, duration_s=duration_s)
    return users


ONE_CORE_USERS = sizing.cpu_users(0, 1)  # users of a run held to one core, on any machine
UNBOUNDED_FAN_OUT_LONGER = 3  # lesson 12's unbounded fan-out runs this many times duration_s


def _users_for(pattern: str, users: int, cores: float, *, threads: int = 1, gil: bool = True) -> int:
    """`users` if set, else enough for the cores `pattern` can keep busy (one, under a GIL, on any machine)."""
    usable = core_model.usable(
        pattern, workers=1, procs=sizing.pool_procs(cores), cores=cores, threads=threads, gil=gil
    )
    return sizing.cpu_users(users, usable)


class CpuBound(NamedTuple):
    users: dict[str, int]  # each pattern's users in the fib and fib + sleep runs: enough for the cores it can use
    threads: int  # a thread per user, so that threads never set the limit (AnyIO's default is 40)
    sweep_cpu_n: list[int]
    sweep: list[int]  # fib depths of the sweep, cpu_n the deepest
    plan: sizing.Plan  # every run, in order, on the one server


def cpu_bound(
    *,
    patterns: list[str],
    users: int,
    cpu_n: int,
    io_ms: int,
    sweep_users: int,
    sweep_cpu_n: list[int] | int,
    rounds: int,
    duration_s: int,
    cores: float | None = None,
    once: list[str] | None = None,
) -> CpuBound:
    """Lesson 03: the fib and fib + sleep runs at users enough for each pattern's cores, the one-core sweep,
    the rounds, and the plan fitted to `cores`.

    `once`: patterns run once, on fib alone after its rounds: each is judged by its own prediction, not
    beside another pattern's run, so it needs no mirrored rounds.
    """
    cores = cpus.cores() if cores is None else cores
    given = checks.parameter("users", users, int)
    once = once or []
    # a thread per core at least: where the work lets go of the GIL (`hashed`), the threads can use every core
    each = {p: _users_for(p, given, cores, threads=math.ceil(cores)) for p in [*patterns, *once]}
    threads = max(THREADS_DEFAULT, *each.values())
    sweep_cpu_n = checks.parameter("sweep_cpu_n", sweep_cpu_n, list[int])
    sweep = sorted({*sweep_cpu_n, cpu_n})
    for io in (0, io_ms):  # fib, then fib + sleep
        for p in patterns if io else [*patterns, *once]:
            check_sweep([p], [each[p]], cpu_n=cpu_n, io_ms=io, threads=threads, duration_s=duration_s)
    for n in sweep:  # async alone: the sweep runs on one core whatever the machine
        check_sweep(["sequential"], [sweep_users], cpu_n=n, io_ms=io_ms, duration_s=duration_s)
    checks.whole("rounds", rounds, 1, 5)
    order = mirrored(patterns, rounds)  # (round, pattern): each pattern measured early and late
    fib, mix = (
        [dict(pattern=p, users=each[p], cpu_n=cpu_n, io_ms=io, tags={"part": part, "round": r}, server="lab")
         for r, p in order]
        for part, io in (("fib", 0), ("fib + sleep", io_ms))
    )  # fmt: skip
    alone = [
        dict(pattern=p, users=each[p], cpu_n=cpu_n, io_ms=0, tags={"part": "fib", "round": 0}, server="lab")
        for p in once
    ]
    swept = [
        dict(pattern="sequential", users=sweep_users, cpu_n=n, io_ms=io_ms, tags={"part": "sweep"}, server="lab")
        for n in sweep
    ]
    runs = fib + alone + mix + swept
    plan = sizing.fit(sizing.Plan(runs, {"lab": {"threads": threads}}, duration_s), cores)
    return CpuBound(each, threads, sweep_cpu_n, sweep, plan)


class Workers(NamedTuple):
    workers: list[int]  # the worker counts to compare; the parameter's [] sized to the cores
    users: int  # users of the CPU-bound runs; the parameter's 0 sized to the cores
    plan: sizing.Plan  # the I/O-bound run at each count, then the CPU-bound ones in mirrored order; servers by count


def workers(
    *,
    pattern: str,
    workers: list[int] | int,
    users: int,
    cpu_n: int,
    io_users: int,
    io_ms: int,
    rounds: int,
    duration_s: int,
    cores: float | None = None,
) -> Workers:
    """Lesson 04: the CPU-bound and I/O-bound runs at each worker count (sized to `cores`), the rounds, and the plan."""
    cores = cpus.cores() if cores is None else cores
    workers = sizing.worker_counts(checks.parameter("workers", workers, list[int]), cores)
    users = sizing.cpu_users(checks.parameter("users", users, int), cores)
    for w in workers:
        check_sweep([pattern], [users], workers=w, cpu_n=cpu_n, duration_s=duration_s)
        check_sweep([pattern], [io_users], workers=w, io_ms=io_ms, duration_s=duration_s)
    core_model.check_workers(workers)
    checks.whole("rounds", rounds, 1, 5)
    io_runs = [
        dict(pattern=pattern, users=io_users, io_ms=io_ms, server=w, tags={"workload": "I/O-bound"}) for w in workers
    ]
    cpu_runs = [
        dict(pattern=pattern, users=users, cpu_n=cpu_n, server=w, tags={"workload": "CPU-bound"})
        for _, w in mirrored(workers, rounds)  # 1, 2, 3, 3, 2, 1: each count measured early and late
    ]
    servers = {w: {"workers": w, "procs": 0} for w in workers}
    plan = sizing.fit(sizing.Plan(io_runs + cpu_runs, servers, duration_s), cores)
    return Workers(workers, users, plan)


class Blocking(NamedTuple):
    users: list[int]
    top: int  # the largest users value, where the contrast runs
    plan: list[tuple[str, int]]  # (pattern, users): blocking at every users value, the contrast at the top
    service_s: float  # how long one request holds a blocked loop
    cap: float  # the blocked workers' req/s, workers / service_s
    # the plans of (pattern, users), each on a fresh server: a blocked worker still owes the requests its users
    # abandoned when its run ended, so blocking runs end their plan, the largest on its own, as the mixed case
    plans: list[list[tuple[str, int]]]


def blocking(
    *,
    users: list[int] | int,
    io_ms: int,
    tasks: int,
    workers: int,
    threads: int,
    duration_s: int,
    timeout_s: float,
    timeout_run_s: int,
) -> Blocking:
    """Lesson 05: every endpoint at every users value, the timeout run at the largest, and its timeout."""
    users = checks.parameter("users", users, list[int])
    check_sweep(
        ["blocking", *BLOCKING_CONTRAST],
        users,
        workers=workers,
        threads=threads,
        tasks=tasks,
        io_ms=io_ms,
        duration_s=duration_s,
    )
    top = max(users)
    check_sweep(["blocking"], [top], workers=workers, tasks=tasks, io_ms=io_ms, duration_s=timeout_run_s)
    checks.positive("timeout_s", timeout_s, " s")
    plan = [("blocking", u) for u in sorted(users)] + [(p, top) for p in BLOCKING_CONTRAST]
    service_s = tasks * io_ms / 1000
    shared = [(p, top) for p in ("sequential", "wrapped", "offload", "tothread")] + [
        ("blocking", u) for u in sorted(users) if u < top
    ]
    plans = [shared, [("blocking", top)], [("mixed", top)]]
    return Blocking(users, top, plan, service_s, workers / service_s, plans)


class ClientSide(NamedTuple):
    counts: list[int]
    concurrency: list[int]
    planned: pd.DataFrame  # every run and its expected length; `run` is false for the runs left out as too long


def client_side(
    *,
    clients: list[str],
    patterns: list[str],
    counts: list[int] | int,
    concurrency: list[int] | int,
    io_ms: int,
    threads: int,
    max_run_s: float,
) -> ClientSide:
    """Lesson 06: every client × endpoint × concurrency × count, the server's threads, and the longest run."""
    counts = checks.parameter("counts", counts, list[int])
    concurrency = checks.parameter("concurrency", concurrency, list[int])
    planned = client_model.plan(
        clients, patterns, counts, concurrency, io_ms=io_ms, max_run_s=max_run_s, threads=threads
    )
    return ClientSide(counts, concurrency, planned)


class Database(NamedTuple):
    sweep_cpu_n: list[int]
    plan: list[database_runs.Part]  # the three parts: (endpoints, users, io_ms per query, fib depth or depths)


def database(
    *,
    selects: list[str],
    simulations: list[str],
    scale: float,
    threads: int,
    db_pool: int,
    slow_io_ms: int,
    slow_users: int,
    seed_users: int,
    sweep_users: int,
    sweep_cpu_n: list[int] | int,
    pinned_rounds: int,
    sweep_rounds: int,
    duration_s: int,
) -> Database:
    """Lesson 07: the server and its pools, the data's scale, the three parts' runs, and the rounds."""
    sweep_cpu_n = checks.parameter("sweep_cpu_n", sweep_cpu_n, list[int])
    plan: list[database_runs.Part] = [
        (selects, slow_users, slow_io_ms, 0),
        (selects, seed_users, 0, 0),
        (simulations, sweep_users, 0, sweep_cpu_n),
    ]
    # part 2 runs 2 s longer than the others: its thousand users connect at once
    database_runs.check(plan, duration_s + 2, scale=scale, threads=threads, db_pool=db_pool)
    checks.whole("pinned_rounds", pinned_rounds, 1, 9)
    checks.whole("sweep_rounds", sweep_rounds, 1, 9)
    return Database(sweep_cpu_n, plan)


class Instrument(NamedTuple):
    users: list[int]
    requests_users: list[int]
    generators: int  # Locust processes of the busiest run
    ceiling: str  # the busiest run's client, as its rows and charts name it


def the_instrument(
    *,
    users: list[int] | int,
    requests_users: list[int] | int,
    ceiling_users: int,
    io_ms: int,
    duration_s: int,
    whole_cores: int | None = None,
) -> Instrument:
    """Lesson 98: the runs of each user class, and the busiest run over as many Locust processes as `whole_cores`."""
    users = checks.parameter("users", users, list[int])
    requests_users = checks.parameter("requests_users", requests_users, list[int])
    check_sweep(["sequential"], users + requests_users, io_ms=io_ms, duration_s=duration_s)
    # Two Locust processes for the busiest run, one per usable CPU: where the lab may use one, one process.
    generators = min(2, cpus.whole_cores() if whole_cores is None else whole_cores)
    check_sweep(["sequential"], [ceiling_users], io_ms=io_ms, duration_s=duration_s, processes=generators)
    return Instrument(
        users, requests_users, generators, f"FastHttpUser, {generators} process" + "es" * (generators > 1)
    )


class Overload(NamedTuple):
    rhos: list[float]
    guess_s: float  # S before it is measured: the wait alone


def overload(
    *, io_ms: int, threads: int, rhos: object, overload: float, overload_s: int, drain_s: int, duration_s: int
) -> Overload:
    """Lesson 08: ρs below 1, an overload above it, run lengths, the server and its open loops."""
    rhos = checks.parameter("rhos", rhos, list[float])
    if not all(0 < rho < 1 for rho in rhos):
        raise ValueError(f"rhos are utilisations below capacity, each above 0 and below 1, got {rhos}")
    _above_capacity("overload", overload)
    for name, value in {"overload_s": overload_s, "drain_s": drain_s, "duration_s": duration_s}.items():
        checks.whole(name, value, 1, 600)
    if drain_s >= overload_s:
        raise ValueError(f"drain_s must be shorter than overload_s ({overload_s}), got {drain_s}")
    Settings(threads=threads).check()
    check_load(Workload("threadpool", 1, io_ms=io_ms, duration_s=duration_s))
    guess_s = io_ms / 1000
    for rho in [*rhos, overload]:
        check_arrivals(rho * threads / guess_s, "arrivals", 1)
    return Overload(rhos, guess_s)


def stalls_and_shedding(
    *,
    stall_users: int,
    stall_io_ms: int,
    stall_ms: int,
    stall_every_s: float,
    io_ms: int,
    threads: int,
    shed_rho: float,
    queue_limit: int,
    limit_concurrency: int,
    duration_s: int,
) -> float:
    """Lesson 09: the stalling server's closed loop and stalls, the shedding servers (a queue bound on the thread
    pool, and uvicorn's `--limit-concurrency`) and their rate; S's guess."""
    checks.whole("duration_s", duration_s, 1, 600)
    checks.positive("stall_every_s", stall_every_s)
    check_load(Workload("sequential", stall_users, io_ms=stall_io_ms, duration_s=duration_s))
    check_load(Workload("blocking", 1, io_ms=stall_ms, duration_s=duration_s))
    _above_capacity("shed_rho", shed_rho)
    Settings(threads=threads, queue_limit=queue_limit).check()
    checks.whole("limit_concurrency", limit_concurrency, 2, 10_000)  # its own connection counts: 1 would shed all
    check_load(Workload("threadpool", 1, io_ms=io_ms, duration_s=duration_s))
    guess_s = io_ms / 1000  # S before it is measured: the wait alone
    check_arrivals(shed_rho * threads / guess_s, "arrivals", 1)
    return guess_s


def _above_capacity(name: str, rho: object) -> None:
    if checks.positive(name, rho) <= 1:
        raise ValueError(f"{name} is a utilisation above capacity: more than 1, got {rho!r}")


class WithoutTheGil(NamedTuple):
    users: int  # users of the fib runs on many cores; the parameter's 0 sized to the cores
    one_core_users: int  # users of a run held to one core (a GIL, or async def's one thread): 20 on any machine
    threads: list[int]  # thread-pool sizes of the threads run; the parameter's [] sized to the cores
    free_threaded: Path | None  # the python of a free-threaded build's server environment; None: none here
    missing: str  # why there is none ("" where there is): the lesson says so and its claims skip
    builds: tuple[str, str, str]  # labels: the lab's GIL build, the free-threaded build with its GIL, without
    plans: dict[str, sizing.Plan]  # "fib", "threads" and "fib + sleep": each a Locust process of its own


def without_the_gil(
    *,
    users: int,
    cpu_n: int,
    io_ms: int,
    threads: list[int] | int,
    rounds: int,
    duration_s: int,
    cores: float | None = None,
) -> WithoutTheGil:
    """Lesson 10: the fib, threads and fib + sleep runs sized to `cores`, and the free-threaded Python, if any.

    A run held to one core (a GIL, or async def's one thread) gets as many users on 64 cores as
    on 2; the thread pool without a GIL, and the process pools, get enough for every core.
    """
    cores = cpus.cores() if cores is None else cores
    given = checks.parameter("users", users, int)
    users = sizing.cpu_users(given, cores)
    one = given or ONE_CORE_USERS
    threads = checks.parameter("threads", threads, list[int]) or sorted({1, math.ceil(cores), users})
    for t in threads:
        Settings(threads=t).check()
    for io in (0, io_ms):  # fib, then fib + sleep
        check_sweep(
            ["threadpool", "sequential", "processpool", "interpreterpool"],
            [1, one, users],
            cpu_n=cpu_n,
            io_ms=io,
            duration_s=duration_s,
        )
    checks.whole("rounds", rounds, 1, 5)
    try:
        python, missing = interpreters.free_threaded_server(), ""
    except interpreters.NoFreeThreadedPython as e:
        python, missing = None, str(e).split(" Tried:")[0]  # where it looked: interpreters.find_free_threaded()
    version = interpreters.probe(python).label if python else "free-threaded"
    builds = (f"{sys.version.split()[0]}, GIL build", f"{version}, GIL on", f"{version}, GIL off")
    plans = _without_the_gil_plans(
        builds,
        python,
        users=users,
        one=one,
        cpu_n=cpu_n,
        io_ms=io_ms,
        threads=threads,
        rounds=rounds,
        duration_s=duration_s,
    )
    plans = {name: sizing.fit(plan, cores) for name, plan in plans.items()}
    return WithoutTheGil(users, one, threads, python, missing, builds, plans)


def _without_the_gil_plans(builds, python, *, users, one, cpu_n, io_ms, threads, rounds, duration_s):
    """Lesson 10's three plans: each build on fib, threads without a GIL, the free-threaded builds on fib + sleep."""
    gil_build, gil_on, gil_off = builds
    top = max(threads)
    servers = {gil_build: {"threads": top}}
    if python:
        servers |= {
            gil_on: {"python": python, "gil": True, "threads": top},
            gil_off: {"python": python, "gil": False, "threads": top},
        }
    each = {  # each build's patterns, and the users of each: one core's worth where one core is all it can use
        gil_build: [("threadpool", 1), ("threadpool", one), ("processpool", users)],
        gil_on: [("threadpool", 1), ("threadpool", one), ("sequential", one)],
        gil_off: [("threadpool", 1), ("threadpool", users), ("sequential", one), ("processpool", users)],
    }
    # The interpreter pool runs once on each free-threaded build, after the rounds: its claims compare each
    # run with its own prediction, and on many cores its runs need Locust processes of their own.
    once = [(b, "interpreterpool", users) for b in (gil_on, gil_off) if b in servers]
    fib = [
        dict(
            pattern=p,
            users=u,
            cpu_n=cpu_n,
            server=b,
            tags={"build": b, "round": r, "part": "fib", "load": "alone" if u == 1 else "busy"},
        )
        for r, b, p, u in [(r, b, p, u) for r, b in mirrored(list(servers), rounds) for p, u in each[b]]
        + [(0, b, p, u) for b, p, u in once]
    ]
    # the most threads first: one thread's long queue would drain into the next run, and the last has none after it
    sized = {t: {"python": python, "gil": False, "threads": t} for t in sorted(threads, reverse=True)} if python else {}
    by_threads = [
        dict(pattern="threadpool", users=users, cpu_n=cpu_n, server=t, tags={"build": gil_off, "part": "threads"})
        for t in sized
    ]
    slept = [
        dict(
            pattern="threadpool",
            users=one,
            cpu_n=cpu_n,
            io_ms=io_ms,
            server=b,
            tags={"build": b, "part": "fib + sleep"},
        )
        for b in (gil_on, gil_off)
        if b in servers
    ]
    mixed = {b: kw for b, kw in servers.items() if b != gil_build}
    return {
        "fib": sizing.Plan(fib, servers, duration_s),
        "threads": sizing.Plan(by_threads, sized, duration_s),
        "fib + sleep": sizing.Plan(slept, mixed, duration_s),
    }


def summary(*, lessons: list[str] | str) -> list[str]:
    """Lesson 99: the lesson prefixes to include, as a list (one prefix alone is a list of one)."""
    return checks.parameter("lessons", lessons, list[str])


class AppThreads(NamedTuple):
    threads: list[int]  # the thread limits of part 1: AnyIO's default, then `more_threads`
    plan: sizing.Plan  # every run, tagged by its part; servers by thread limit, and by pool for part 5


def app_threads(
    *,
    users: int,
    io_ms: int,
    more_threads: int,
    chunks: int,
    chunk_ms: int,
    connections: int,
    duration_s: int,
    cores: float | None = None,
) -> AppThreads:
    """Lesson 11: the thread limit raised, a `def` dependency against an `async def` one, streams from a plain
    generator against an async one, a `def` background task against an `async def` one, and a session from a
    pool of fewer connections than threads, borrowed in the endpoint and in a `yield` dependency; every run
    past the default thread pool."""
    cores = cpus.cores() if cores is None else cores
    checks.whole("users", users, 1, 2000)
    default = THREADS_DEFAULT
    if not default < more_threads:
        raise ValueError(f"more_threads must be above the default {default}, got {more_threads}")
    if users <= more_threads:
        raise ValueError(f"users must be above more_threads ({more_threads}), so that the threads bound, got {users}")
    if not 1 <= connections < default:
        raise ValueError(f"connections must be from 1 to {default - 1}, fewer than the threads, got {connections}")
    servers: dict = {t: {"threads": t, "procs": 0} for t in (default, more_threads)}
    servers["pool"] = {"threads": default, "procs": 0, "db_pool": connections}  # part 5: fewer connections than threads
    parts = [
        ("the thread limit", "threadpool", dict(io_ms=io_ms), (default, more_threads)),
        ("a dependency", "syncdep", dict(io_ms=io_ms), (default,)),
        ("a dependency", "asyncdep", dict(io_ms=io_ms), (default,)),
        ("a stream", "streamsync", dict(tasks=chunks, io_ms=chunk_ms), (default,)),
        ("a stream", "streamasync", dict(tasks=chunks, io_ms=chunk_ms), (default,)),
        # The async task first: a `def` task's run leaves tasks queued for threads after its window, which would
        # borrow the pool from the run after it. Both run three times as long: in a `def` task's first round its
        # tasks only begin to queue, and the replies come faster than they will once the queue holds them.
        ("a background task", "bgasync", dict(io_ms=io_ms, duration_s=3 * duration_s), (default,)),
        ("a background task", "bgsync", dict(io_ms=io_ms, duration_s=3 * duration_s), (default,)),
        # Last, the session from a dependency: its run stalls, and its users and its server stay stuck.
        ("a pooled session", "pooledinside", dict(io_ms=io_ms), ("pool",)),
        ("a pooled session", "pooled", dict(io_ms=io_ms), ("pool",)),
    ]
    runs = []
    for part, pattern, work, limits in parts:
        for t in limits:
            lasts_s, tasks = work.get("duration_s", duration_s), work.get("tasks")
            check_sweep(
                [pattern], [users], threads=servers[t]["threads"], tasks=tasks, io_ms=work["io_ms"], duration_s=lasts_s
            )
            pool = {"db_pool": servers[t]["db_pool"]} if "db_pool" in servers[t] else {}  # part 5's pool, in its rows
            runs.append(dict(pattern=pattern, users=users, server=t, tags={"part": part, **pool}, **work))
    plan = sizing.fit(sizing.Plan(runs, servers, duration_s), cores)
    return AppThreads([default, more_threads], plan)


class CallingServices(NamedTuple):
    plan: sizing.Plan  # the runs on the app server; the other service starts beside it, on its own port


def calling_services(
    *, users: int, io_ms: int, calls: int, duration_s: int, cores: float | None = None
) -> CallingServices:
    """Lesson 12: an endpoint that calls another service (the lab's own server, on a port chosen now) with a new
    httpx client per request, and with one client reused; then `calls` calls a request, one after another, all
    at once, and all at once under the fan-out's semaphore."""
    cores = cpus.cores() if cores is None else cores
    patterns = ["callreused", "callnew"]
    check_sweep(patterns, [users], io_ms=io_ms, duration_s=duration_s)
    # The bounded fan-out first: the client keeps its connections open between runs (2 s), and each run should
    # find no more of them than its own calls hold.
    fanout = ["callreused", "fanoutbounded", "fanout"]
    # ... and the unbounded one on a server of its own: priced with its calls in flight before any run starts
    # (pricing.waits_kept), it leaves the client it used making every later call dearer for a while
    check_sweep(fanout, [users], tasks=calls, io_ms=io_ms, duration_s=duration_s)
    port = free_port()
    servers: dict[str, dict] = {
        "service": {"threads": THREADS_DEFAULT, "procs": 0, "port": port},  # its /sequential waits io_ms
        "app": {"threads": THREADS_DEFAULT, "procs": 0, "upstream": f"http://127.0.0.1:{port}"},
    }
    servers["unbounded"] = dict(servers["app"])
    runs = [dict(pattern=p, users=users, io_ms=io_ms, server="app", tags={"part": "a client"}) for p in patterns]
    # A new client's CPU runs on the one event loop: a round of `users` requests lasts users × that CPU, and its
    # replies come in bursts. The run holds five rounds after a second of warm-up (the foresight cannot price it).
    round_s = users * calling.client_ms() / 1000
    runs[1]["duration_s"] = max(duration_s, math.ceil(1 + 5 * round_s))
    runs += [
        dict(pattern=p, users=users, io_ms=io_ms, tasks=calls, server="app", tags={"part": "a fan-out"}) for p in fanout
    ]
    runs[-1]["server"] = "unbounded"
    # Unbounded, the pool's CPU can fill the loop, and each request waits for it several io (the foresight cannot
    # price that): the run is three times as long, so that its rate rests on several replies from each user.
    runs[-1]["duration_s"] = UNBOUNDED_FAN_OUT_LONGER * duration_s
    return CallingServices(sizing.fit(sizing.Plan(runs, servers, duration_s), cores))


class ClientsThatLeave(NamedTuple):
    fib_ms: float  # one sub-task's CPU, timed here
    plan: sizing.Plan  # both endpoints, and the request without its fib; each request abandoned at the timeout
    failing: sizing.Plan  # part 2, open loops: gather and a TaskGroup whose call times out, plain gather, no fib


def clients_that_leave(
    *,
    users: int,
    tasks: int,
    io_ms: int,
    cpu_n: int,
    timeout_s: float,
    rate: float,
    duration_s: int,
    cores: float | None = None,
) -> ClientsThatLeave:
    """Lesson 13: `sequential` and `watchful` at `users` users whose timeout is shorter than the work alone, so
    that every request is abandoned, then `sequential` without its fib (what a request costs the server besides
    it); each run's prediction is users / timeout. Part 2: `gathertimeout` and `taskgroup` at `rate` arrivals a
    second, each request's `tasks` sub-tasks at once, one of them a call that times out; then plain `gather`, and
    `gathertimeout` without fib."""
    cores = cpus.cores() if cores is None else cores
    patterns = ["sequential", "watchful"]
    check_sweep(patterns, [users], tasks=tasks, io_ms=io_ms, cpu_n=cpu_n, duration_s=duration_s)
    checks.positive("timeout_s", timeout_s, " s")
    checks.whole("tasks", tasks, 2)  # part 2: a call that times out, and at least one sub-task beside it
    fib_ms = model.cpu_time_ms(cpu_n)  # the server's CPU is metered as CPU time: fib's is timed the same way
    alone_s = tasks * io_ms / 1000
    if timeout_s >= alone_s:
        raise ValueError(
            f"timeout_s must be under the waits alone, tasks × io_ms = {alone_s:.2f} s, so that every request is "
            f"abandoned, got {timeout_s}"
        )
    servers = {"app": {"threads": THREADS_DEFAULT, "procs": 0}}
    gone = leaving.gone(users, timeout_s)
    work = dict(users=users, tasks=tasks, io_ms=io_ms, server="app", predicted=gone)
    runs = [{**work, "pattern": p, "cpu_n": cpu_n, "tags": {"part": "work"}} for p in patterns]
    runs.append({**work, "pattern": "sequential", "cpu_n": 0, "tags": {"part": "no fib"}})
    load = {"timeout_s": timeout_s, "expect_failures": True}  # every request times out, by design
    plan = sizing.fit(sizing.Plan(runs, servers, duration_s, load=load), cores)
    return ClientsThatLeave(fib_ms, plan, _failing(rate, tasks, io_ms, cpu_n, duration_s, servers=servers, cores=cores))


def _failing(rate: float, tasks: int, io_ms: int, cpu_n: int, duration_s: int, *, servers: dict, cores: float):
    """Lesson 13's part 2, open loops of `rate` a second: gather and a TaskGroup whose call times out (every
    request answered 504, by design), plain `gather` (fib as these runs run it), and gather without fib (what a
    request costs besides its fib)."""
    check_arrivals(rate, "arrivals", 1)
    work = dict(rate=rate, tasks=tasks, io_ms=io_ms, drain_s=1, server="app")
    timing_out = dict(work, predicted=leaving.answered(io_ms), tags={"part": "a call fails"})
    # plain gather right before gathertimeout: a fib's CPU drifts between runs, less between neighbours
    runs = [{**work, "pattern": "gather", "cpu_n": cpu_n, "tags": {"part": "every call answers"}}]
    runs += [{**timing_out, "pattern": p, "cpu_n": cpu_n} for p in ("gathertimeout", "taskgroup")]
    runs.append({**timing_out, "pattern": "gathertimeout", "cpu_n": 0, "tags": {"part": "no fib"}})
    for run in runs:
        check_load(Workload.of({**run, "duration_s": duration_s}), user_class="arrivals")
    load = {"user_class": "arrivals", "expect_failures": True}  # a 504 to every request but plain gather's, by design
    return sizing.fit(sizing.Plan(runs, servers, duration_s, load=load), cores)


class OneSlowRoute(NamedTuple):
    fib_ms: float  # one heavy request's CPU, timed here
    plan: sizing.Plan  # the heavy route without its fib, then its fib on the loop, in a thread, in a process
    probes: Probes  # the cheap requests, sent while the plan runs (its `beside`)


def one_slow_route(
    *, users: int, io_ms: int, cpu_n: int, probe_every_ms: int, duration_s: int, cores: float | None = None
) -> OneSlowRoute:
    """Lesson 14: a heavy route (io_ms, then fib(cpu_n)) at `users` users, without its fib, then with it on the event
    loop (`sequential`), in the thread pool (`threadpool`) and in a process pool (`processpool`), while a cheap
    route is probed about every `probe_every_ms` on the same worker."""
    cores = cpus.cores() if cores is None else cores
    patterns = ["sequential", "threadpool", "processpool"]
    check_sweep(patterns, [users], tasks=1, io_ms=io_ms, cpu_n=cpu_n, duration_s=duration_s)
    checks.whole("probe_every_ms", probe_every_ms, 1, 10_000)
    fib_ms = model.cpu_time_ms(cpu_n)
    servers = {"app": {"threads": THREADS_DEFAULT, "procs": 1}}  # one pool process: one core, as one user needs
    work = dict(users=users, tasks=1, io_ms=io_ms, server="app")
    runs = [{**work, "pattern": "sequential", "cpu_n": 0}]
    runs += [{**work, "pattern": p, "cpu_n": cpu_n} for p in patterns]
    plan = sizing.fit(sizing.Plan(runs, servers, duration_s), cores)
    return OneSlowRoute(fib_ms, plan, Probes(every_s=probe_every_ms / 1000))


class YourOwnApp(NamedTuple):
    """Lesson 15's checked parameters: the routes as the lab sends them, and the sweep's users."""

    sent: list[protocol.Route]  # the routes, as the lab sends them
    least: int  # the sweep's first users
    most: int  # ... and its last
    source: ModuleType  # the app's module, imported as uvicorn will import it: one that does not import stops here


def your_own_app(
    *, app: str, routes: list[str], users: list[int], duration_s: int, workers: int, threads: int
) -> YourOwnApp:
    """Lesson 15: `app` (module:attribute, from the lab's folder) on `workers` workers of `threads` threads (0: the
    app's own limit), each of `routes` priced, then swept from users[0] up to users[1] users, `duration_s` s a
    run."""
    if not isinstance(app, str) or ":" not in app:
        raise ValueError(f"app is module:attribute, as uvicorn takes it (main:app), got {app!r}")
    routes = checks.parameter("routes", routes, list[str])
    if not routes:
        raise ValueError("routes must name at least one route, such as 'GET /items'")
    users = checks.parameter("users", users, list[int])
    if len(users) != 2 or not 1 <= users[0] <= users[1]:
        raise ValueError(f"users is [least, most], the sweep's first and last users, least ≤ most, got {users!r}")
    checks.whole("users", users[1], 1, USERS_MAX)
    checks.whole("duration_s", duration_s, 1, 60)
    checks.whole("threads", threads, 0, 10_000)  # 0: the app's own limit
    Settings(workers=workers, threads=threads or THREADS_DEFAULT, procs=0).check()
    sent = [your_routes.parse(r, folder=ROOT) for r in routes]
    wrap.load(app, str(ROOT))
    return YourOwnApp(sent, users[0], users[1], sys.modules[app.partition(":")[0]])

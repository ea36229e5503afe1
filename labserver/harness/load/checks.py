"""A plan checked before anything starts: its runs and Locust's options, and what the model foresees of each run.

A bad parameter raises ValueError saying what to change (check_plan, check_sweep), before a server or
a Locust process starts. What the model foresees is said, never enforced: the live view's prediction
for each run (foreseen) and the runs it expects to come out invalid on this machine (foreseen_invalid).
"""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from labserver.checks import choice, whole
from labserver.demo import cpus
from labserver.demo.patterns import PATTERNS
from labserver.demo.settings import THREADS_DEFAULT, Settings
from labserver.demo.traits import POOLS
from labserver.demo.work import fib_calls
from labserver.harness.load import validity
from labserver.harness.load.generator import USER_CLASSES, WORKERS_MAX, master_address
from labserver.harness.plans.plan import (
    LoadOptions,
    Options,
    Stage,
    UserClass,
)
from labserver.harness.servers.server import Server
from labserver.theory import model
from labserver.theory.workload import DURATION_MAX_S, Workload, check_rate

if TYPE_CHECKING:
    from typing_extensions import Unpack


def check_load(
    workload: Workload, *, user_class: UserClass = "fast", processes: int = 1, master: str | None = None
) -> None:
    """Raise ValueError saying what to change, before any process starts: the workload, and Locust's options."""
    workload.check()
    if workload.rate or user_class == "arrivals":
        check_arrivals(workload.rate, user_class, processes)
    if master is None:
        whole("processes", processes, 1, cpus.whole_cores())  # forked here: one core each
    else:
        whole("processes", processes, 1, WORKERS_MAX)  # workers on other machines
        master_address(master)
    choice("user_class", user_class, USER_CLASSES)


def check_plan(stages: list[Stage], options: Options) -> Options:
    """A plan's options, with every stage checked against them; ValueError says what to change."""
    if not stages:
        raise ValueError("give at least one run")
    if any(s.workload.rate for s in stages):
        # an open loop's runs: every stage has a rate (check_arrivals)
        options = dataclasses.replace(options, user_class="arrivals")
    for s in stages:
        check_load(s.workload, user_class=options.user_class, processes=options.processes, master=options.master)
        computes = s.workload.traits.computes
        if computes in POOLS and s.server.settings.procs == 0:
            # such a server refuses every request at once: a run would measure nothing of the pattern
            raise ValueError(
                f"{s.workload.pattern} computes in a pool ({computes}), and its server was started with procs=0: "
                "start it with procs of 1 or more"
            )
    if options.master is not None and not 0 < options.join_timeout_s <= DURATION_MAX_S:
        raise ValueError(f"join_timeout_s must be above 0 and at most {DURATION_MAX_S}, got {options.join_timeout_s!r}")
    return options


def check_arrivals(rate: float, user_class: UserClass, processes: int) -> None:
    """An open loop's rate, and the one Locust process that keeps its schedule."""
    check_rate(rate)
    if user_class != "arrivals":
        raise ValueError(f"a run with a rate needs user_class='arrivals' (the open loop), got {user_class!r}")
    if processes != 1:
        raise ValueError(f"an open loop runs in one Locust process (each would send at the full rate), got {processes}")


def foreseen(stage: Stage, options: Options) -> model.Prediction:
    """The prediction a live view shows while a run measures: the one made before it (pricing.py) where there is
    one; collect() later records the run's own beside it.

    Else the lesson's, as it is or from no measured demand yet; else the model's from the settings,
    with fib's time scaled from fib(20)'s: timing fib(32) here would load the machine under test.
    """
    if stage.before is not None and math.isfinite(stage.before.prediction.rps):
        return stage.before.prediction
    w = stage.workload
    try:
        return stage.prediction(options, cpus.cores(), fib_ms=lambda: model.work_ms(w.pattern, w.cpu_n, _fib_ms))
    except Exception:  # a view without a prediction is better than no measurement
        return model.Prediction(math.nan, math.nan, "not foreseen")


def foreseen_invalid(stages: list[Stage], options: Options) -> list[str]:
    """Why each run the model foresees invalid on this machine would be (harness/load/validity.py), said before any
    starts and never a refusal: the model may be wrong about a machine. None for what it does not price: open
    loops, runs meant to time out, the database's routes, an app of one's own (priced only on its server), and a
    run whose own prediction says it is not modelled (the load generator's pricing run)."""
    unpriced = (
        s.workload.rate
        or s.workload.pattern not in PATTERNS
        or s.route is not None
        or (isinstance(s.predicted, model.Prediction) and not math.isfinite(s.predicted.rps))  # its own, unmodelled
        for s in stages
    )
    if options.expect_failures or any(unpriced):
        return []
    # several Locust processes measure each run as a plan of its own (run_plan)
    plans = [[s] for s in stages] if options.processes > 1 else [stages]
    lines = []
    try:
        for plan in plans:
            runs = [(s.workload, s.server.settings) for s in plan]
            prices = [validity.on_python(_other_python(s.server)) for s in plan]
            seen = validity.foresee(
                runs,
                # fib as timed here (cached): the price sizing.fit lengthened the runs by, so that a run it
                # lengthened is not called too short
                fib_ms=model.cpu_ms,
                processes=options.processes,
                warmup_s=options.warmup_s,
                prices=prices,
                servers=[id(s.server) for s in plan],
            )
            lines += validity.warn(seen)
    except Exception:  # a plan without foresight is better than no measurement
        return []
    return lines


def _other_python(server: Server) -> Path | None:
    """The Python a server runs where it is not the lab's own (lesson 10's free-threaded build), else None."""
    path = getattr(getattr(server, "python", None), "path", None)
    return None if path is None or Path(path) == Path(sys.executable) else Path(path)


def _fib_ms(cpu_n: int) -> float:
    """fib(cpu_n)'s time here, from fib(20)'s (a few ms) and how many calls each makes."""
    small = min(cpu_n, 20)
    return model.cpu_ms(small) * fib_calls(cpu_n) / fib_calls(small) if cpu_n > 1 else 0.0


def check_sweep(
    patterns: list[str],
    users: list[int],
    *,
    workers: int = 1,
    threads: int = THREADS_DEFAULT,
    tasks: int | None = None,
    io_ms: int | None = None,
    cpu_n: int | None = None,
    duration_s: int | None = None,
    **load: Unpack[LoadOptions],
) -> None:
    """Check every run of a sweep (and the server settings) before anything starts; ValueError says what to change.

    `load` is sweep's: each run's workload (`tasks`, `io_ms`, `cpu_n`, `duration_s`) and run_plan's keywords.
    """
    Settings(workers=workers, threads=threads).check()
    if not patterns or not users:
        raise ValueError("give at least one pattern and one users value")
    for pattern in patterns:
        for u in users:
            given = {"pattern": pattern, "users": u, "tasks": tasks, "io_ms": io_ms, "cpu_n": cpu_n}
            workload = Workload.of({**given, "duration_s": duration_s})  # None: the Workload's default
            check_load(
                workload,
                user_class=load.get("user_class", Options.user_class),
                processes=load.get("processes", Options.processes),
                master=load.get("master"),
            )

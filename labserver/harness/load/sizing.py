"""Lesson sizes that follow the machine: users, worker counts, Locust processes and run lengths.

A lesson's parameters cell says `0` (or `[]`) for a size that follows the machine; the setup
cell turns it into a number here, so that each claim's effect shows on 1 core as on 64 and a
learner's run stays about as short on a big machine as on a small one. A pattern gets users
for the cores it can use: one held to one core by its GIL gets as many on 64 cores as on 2,
since more would only lengthen each request's round trip. Then `fit` gives each run of a plan
what the model says it needs to be a valid measurement (harness/load/validity.py): Locust processes
enough to send the busiest run, and a longer window only where a run's rounds need it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Callable, Hashable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, cast

import pandas as pd

from labserver import checks
from labserver.demo.settings import PROCS_MAX, WORKERS_MAX, Settings
from labserver.harness.load import validity
from labserver.harness.load.run import run_plan
from labserver.harness.plans.plan import Run
from labserver.harness.servers.launcher import LabServer, running
from labserver.harness.servers.server import Server
from labserver.theory.workload import DURATION_MAX_S, Workload

# A fib request's CPU is a fraction of its round trip through Locust and the loop: ten users per core
# keep a process pool's cores busy with room to spare, also with lesson 03's 50 ms of I/O per request
# (fib(25)'s ~15 ms needs (15 + 50) / 15 ≈ 4.3 users per core).
USERS_PER_CORE = 10
LEAST_USERS = 20  # below this, the one-core patterns' queue is too short to show the GIL's bound
# The busiest run may ask this share of its Locust processes' ceiling: closer to it, users queue at the generator
GENERATOR_SHARE = 0.75


def cpu_users(users: int, cores: float) -> int:
    """`users` if set (> 0), else enough closed-loop users to keep `cores` busy with CPU-bound requests."""
    if users > 0:
        return users
    return max(LEAST_USERS, math.ceil(USERS_PER_CORE * cores))


def worker_counts(workers: list[int], cores: float) -> list[int]:
    """`workers` if given, else 1 (the baseline), the whole usable cores, and one past them.

    No count passes the server's bound: where the cores reach it, "one past them" is not run
    and lesson 04 says its claim on it cannot be shown.
    """
    if workers:
        return list(workers)
    whole = max(1, math.floor(cores + 1e-9))
    return sorted({min(n, WORKERS_MAX) for n in (1, whole, whole + 1)})


def pool_procs(cores: float) -> int:
    """The process pool a server gets by default on `cores`: one process per whole core, up to the server's bound."""
    return min(max(1, math.ceil(cores)), PROCS_MAX)


# What acts on a plan's started servers (by their keys) while its runs measure them
Beside = Callable[[Mapping[Hashable, Server]], AbstractContextManager]

# What of LabServer's keywords the model reads of a server (Settings' fields); the rest start it (python, port).
SERVER_SETTINGS = ("workers", "threads", "procs", "gil", "db_pool", "upstream")


@dataclass(frozen=True)
class Plan:
    """A lesson's runs, before any server starts.

    Each run is a dict as run_plan takes it, whose `server` is a key of `servers` (LabServer's
    keywords for each server); `on` puts the started servers in their place. Consecutive runs
    that one Locust process can send share it; a run that needs several gets them to itself.
    """

    runs: list[Run]
    servers: Mapping[Any, dict]  # LabServer's keywords, by any key the runs name
    duration_s: int  # each run's length unless its dict says otherwise
    processes: tuple[int, ...] = ()  # Locust processes of each run (empty: one each)
    load: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # run_plan's keywords for every run

    def settings(self, key: Hashable, cores: float) -> Settings:
        """The Settings of server `key` as it would start on `cores` (its pool one process per core)."""
        given = {k: v for k, v in self.servers[key].items() if k in SERVER_SETTINGS}
        return Settings(**{"procs": pool_procs(cores), **given})

    def senders(self, i: int) -> int:
        """Run `i`'s Locust processes."""
        return self.processes[i] if self.processes else 1

    def segments(self) -> list[tuple[int, list[int]]]:
        """The Locust processes each start of Locust has, and the runs it sends, in order.

        Consecutive runs of one process share one start; several processes measure each run as
        a plan of its own (run_plan).
        """
        out: list[tuple[int, list[int]]] = []
        for i in range(len(self.runs)):
            k = self.senders(i)
            if out and k == 1 and out[-1][0] == 1:
                out[-1][1].append(i)
            else:
                out.append((k, [i]))
        return out

    def foresee(self, cores: float, fib_ms: Callable[[int], float] | None = None) -> list[validity.Foreseen]:
        """Each run, in order, as the model foresees it on `cores`: fib priced by `fib_ms` (default: timed here),
        or on a server of another Python, timed on that one."""
        out: list[validity.Foreseen] = []
        for k, part in self.segments():
            runs = [self._workload(i, cores) for i in part]
            prices = [validity.on_python(self.servers[self.runs[i]["server"]].get("python")) for i in part]
            keys = [self.runs[i]["server"] for i in part]
            out += validity.foresee(runs, cores=cores, fib_ms=fib_ms, processes=k, prices=prices, servers=keys)
        return out

    def _workload(self, i: int, cores: float) -> tuple[Workload, Settings]:
        run = {k: v for k, v in self.runs[i].items() if k != "server"}
        return Workload.of({"duration_s": self.duration_s, **run}), self.settings(self.runs[i]["server"], cores)

    def seconds(self) -> int:
        """How long the plan's runs take, Locust's and the servers' start-ups left out."""
        return sum(r.get("duration_s", self.duration_s) for r in self.runs)

    def on(self, started: Mapping[Hashable, object]) -> list[Run]:
        """The runs with each server key replaced by its started server."""
        return [cast(Run, {**r, "server": started[r["server"]]}) for r in self.runs]

    def with_servers(self, **changes: Any) -> Plan:
        """The same runs on servers whose LabServer keywords `changes` replace (e.g. procs=1)."""
        return dataclasses.replace(self, servers={key: {**kw, **changes} for key, kw in self.servers.items()})

    def with_runs(self, tagged: tuple[str, Any] | None = None, **changes: Any) -> Plan:
        """The plan with `changes` (e.g. cpu_n=20) in every run, or in those whose tag `tagged[0]` is `tagged[1]`."""
        chosen = (lambda r: True) if tagged is None else (lambda r: r.get("tags", {}).get(tagged[0]) == tagged[1])
        return dataclasses.replace(self, runs=[cast(Run, {**r, **changes}) if chosen(r) else r for r in self.runs])

    def measure(self, lesson: str | None = None, beside: Beside | None = None) -> pd.DataFrame:
        """Start the servers together, measure every run, stop them: the runs' rows, in order.

        `beside`, if given, is entered with the started servers (by their keys) around all the
        runs: something that acts on the servers while they are measured (lessons/one_slow_route.py).
        No runs: an empty frame, and nothing starts.
        """
        if not self.runs:
            return pd.DataFrame()
        done = []
        with running([LabServer(**kw) for kw in self.servers.values()]) as started:  # start-ups overlap
            servers = dict(zip(self.servers, started, strict=True))
            runs = self.on(servers)
            with beside(servers) if beside else contextlib.nullcontext():
                for k, part in self.segments():
                    some = [runs[i] for i in part]
                    done += run_plan(
                        some[0]["server"], some, duration_s=self.duration_s, processes=k, lesson=lesson, **self.load
                    )
        return pd.DataFrame([r.row for r in done])


def fit(plan: Plan, cores: float, fib_ms: Callable[[int], float] | None = None, whole_cores: int | None = None) -> Plan:
    """`plan` with what each run needs to be a valid measurement on `cores`, as the model foresees it.

    Locust processes: one, or where a run asks more than GENERATOR_SHARE of one process's ceiling,
    enough for it, one core each, up to `whole_cores`. A run whose window is too short for its
    replies or its rounds runs the fewest whole seconds longer that make it valid, at most four
    times as long; past that it stays as it is, and the run's own check says why it is invalid.
    """
    whole = whole_cores if whole_cores is not None else max(1, math.floor(cores + 1e-9))
    ceiling = GENERATOR_SHARE * validity.GENERATOR_RPS
    alone = dataclasses.replace(plan, processes=())
    wanted = [max(1, math.ceil(f.rps / ceiling)) for f in alone.foresee(cores, fib_ms)]
    plan = dataclasses.replace(plan, processes=tuple(min(k, whole) for k in wanted))
    runs = [Run(**r) for r in plan.runs]
    for i, seen in enumerate(plan.foresee(cores, fib_ms)):
        length = runs[i].get("duration_s", plan.duration_s)
        while not seen.valid and length < min(4 * plan.duration_s, DURATION_MAX_S):
            length += 1
            runs[i]["duration_s"] = length
            seen = dataclasses.replace(plan, runs=runs).foresee(cores, fib_ms)[i]
    return dataclasses.replace(plan, runs=runs)


def above_capacity(name: str, rho: object) -> None:
    """Raise unless `rho`, a utilisation a lesson drives its server to, is above capacity: more than 1."""
    if checks.positive(name, rho) <= 1:
        raise ValueError(f"{name} is a utilisation above capacity: more than 1, got {rho!r}")

"""A pinned server's core is its own while its run is measured.

A server pinned to one core (lesson 07's `cpus=[n]`) is meant to be measured on that core. The
processes that share the machine with it are not pinned: Locust and PostgreSQL float over every
core, and the kernel puts them on the pinned one too. Whatever share of its core they take, the
server loses while its users wait, and it serves that much less than its CPU per request
predicts (docs/evidence.md).

So while a stage of a plan loads a pinned server on this machine, the load generator's processes
and the server's `neighbours` (LabServer.neighbours: a database's, say) run on the usable CPUs
it is not pinned to; when a stage loads a server that is not pinned, they get every usable CPU
back. Where no CPU is left over (one usable CPU, or a server pinned to all of them), nothing moves.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

import psutil

from labserver.demo import cpus
from labserver.protocol import LocustState

if TYPE_CHECKING:
    from labserver.harness.plans.plan import Stage
    from labserver.harness.servers.server import Server


def others(server: Server) -> tuple[int, ...]:
    """The usable CPUs that `server` is not pinned to; () when it is not pinned, or none are left."""
    pinned = getattr(getattr(server, "settings", None), "cpus", None)
    if not pinned or not getattr(server, "same_machine", True):
        return ()
    return tuple(c for c in cpus.usable_cpus() if c not in pinned)


def apart() -> list[int] | None:
    """A core of its own for a server whose client runs on the others: the first usable CPU, where two or more are.

    Lesson 06's client and server each keep one core busy in bursts. Left to float, the kernel
    often wakes one on the core the other just ran on, and the two take turns on it: a wave of
    replies spreads a little more each time, and the run falls short of the model; with the server
    on one core and the client on another the waves keep close (docs/evidence.md). None (LabServer's
    "wherever the OS puts it") where one CPU is usable, nothing to keep apart, or the OS cannot pin.
    """
    usable = cpus.usable_cpus()
    return usable[:1] if len(usable) >= 2 and cpus.whole_cores() >= 2 else None


def place(pids: list[int], where: tuple[int, ...]) -> None:
    """Every thread of each process in `pids`, and of its children, may run on `where` only (none: left as is)."""
    if not where:
        return
    for pid in pids:
        with contextlib.suppress(psutil.Error, OSError):  # a process that ended in between
            tree = psutil.Process(pid)
            for proc in [tree, *tree.children(recursive=True)]:
                cpus.pin(where, proc.pid)


class Isolation:
    """Keeps the generator and a pinned server's neighbours off its cores, stage by stage (`tick`)."""

    def __init__(self, generator_pid: int, stages: Sequence[Stage]) -> None:
        self.generator_pid = generator_pid
        self.stages = stages
        self.pinned = any(others(stage.server) for stage in stages)
        self.servers = {id(stage.server): stage.server for stage in stages}
        self.current: tuple[int, ...] | None = None  # where the others run now; None: untouched

    def tick(self, locust: LocustState) -> None:
        """Place the others for the stage Locust says it is in (none before its first began).

        Called every quarter second: a new stage's placement lags its start by that much at most,
        inside the stage's warm-up, which its window leaves out.
        """
        if locust.stage is not None:
            self.follow(self.stages[locust.stage])

    def follow(self, stage: Stage) -> None:
        """Place the others for `stage`: off its server's cores if it is pinned, else on every usable CPU."""
        if not self.pinned:
            return
        where = others(stage.server) or tuple(cpus.usable_cpus())
        if where != self.current:
            place([self.generator_pid, *self._neighbours()], where)
            self.current = where

    def release(self) -> None:
        """Every usable CPU back to whatever was moved (the database outlives the run)."""
        if self.current is not None:
            place([self.generator_pid, *self._neighbours()], tuple(cpus.usable_cpus()))
            self.current = None

    def _neighbours(self) -> list[int]:
        return [pid for server in self.servers.values() for pid in server.neighbours()]

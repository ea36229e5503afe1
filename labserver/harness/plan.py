"""A plan of runs for one Locust process: its stages, the options they share, and how the process went."""

from __future__ import annotations

import bisect
import itertools
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from labserver.harness.meters import CpuMeter, MachineMeter
from labserver.theory.demand import Demand
from labserver.theory.model import Prediction

if TYPE_CHECKING:
    from labserver.harness.launcher import LabServer

# What the locustfile reads of each stage (locustfiles/pattern.py, --plan-file).
LOCUST_KEYS = ("pattern", "users", "tasks", "io_ms", "cpu_n", "duration_s", "rate", "drain_s")
RUN_KEYS = (*LOCUST_KEYS, "predicted", "tags", "server")


@dataclass(frozen=True)
class Stage:
    """One run of a plan: a pattern under `users` users (or `rate` arrivals a second) on `server` for `duration_s` s."""

    server: LabServer
    pattern: str
    users: int
    tasks: int = 1
    io_ms: int = 0
    cpu_n: int = 0
    duration_s: int = 5
    rate: float = 0.0  # arrivals per second of an open loop (lesson 08); 0: a closed loop of `users`
    drain_s: float = 0.0  # an open loop's last seconds, with no new arrival: its backlog is answered, and counted
    # None: the model's, priced with the CPU the run measures; or the lesson's own, made before the
    # run (a Prediction) or from the run's measured Demand (a function of it)
    predicted: Prediction | Callable[[Demand], Prediction] | None = None
    tags: dict[str, Any] = field(default_factory=dict)  # more columns for the run's row

    @classmethod
    def from_run(cls, run: dict, duration_s: int, server: LabServer) -> Stage:
        """A stage from a run as run_plan takes it (a dict); a key it does not know is a ValueError."""
        unknown = set(run) - set(RUN_KEYS)
        if unknown:
            raise ValueError(f"unknown run keys {sorted(unknown)}; a run takes {', '.join(RUN_KEYS)}")
        if "pattern" not in run or ("users" not in run and not run.get("rate")):
            raise ValueError(f"a run needs a pattern, and users or a rate, got {run!r}")
        given = {"users": 1, **{k: v for k, v in run.items() if v is not None}}  # an open loop: one schedule
        return cls(**{"duration_s": duration_s, **given, "server": run.get("server") or server})

    def locust(self) -> dict:
        """What the locustfile needs of this stage."""
        return {**{k: getattr(self, k) for k in LOCUST_KEYS}, "host": self.server.url}


def stage_at(stages: Sequence[Stage], elapsed_s: float) -> int:
    """The index of the stage running `elapsed_s` s into the plan: the first before it starts, the last once it ends."""
    ends = itertools.accumulate(stage.duration_s for stage in stages)
    return min(bisect.bisect_right(list(ends), elapsed_s), len(stages) - 1)


@dataclass(frozen=True)
class Options:
    """What every stage of a plan shares (run_plan's keywords)."""

    spawn_rate: float | None = None  # None: every user at once
    user_class: str = "fast"
    processes: int = 1
    timeout_s: float = 60.0
    warmup_s: float = 1.0
    expect_failures: bool = False
    lesson: str | None = None
    progress: bool | None = None
    watch: Callable[[Any], Any] | None = None  # called with a feed.Snapshot about once a second
    master: str | None = None  # "HOST:PORT": `processes` Locust workers join from other machines


@dataclass(frozen=True)
class Meters:
    """CPU meters of one plan: Locust's, each server's (by id of the server) and the whole machine's."""

    locust: CpuMeter
    servers: dict[int, CpuMeter]
    machine: MachineMeter

    @classmethod
    def unsampled(cls) -> Meters:
        return cls(CpuMeter(-1), {}, MachineMeter())  # never sampled: every CPU figure is NaN

    def of(self, server: LabServer) -> CpuMeter:
        return self.servers.get(id(server), CpuMeter(-1))


@dataclass(frozen=True)
class Outcome:
    """How the Locust process of a plan went."""

    status: str  # "ok", or why it stopped ("server died", "interrupted", ...)
    ended: float | None  # when it stopped early (epoch seconds), None if it ran to its end
    locust: subprocess.Popen | None
    meters: Meters | None
    started_at: datetime
    server_log: str | None = None  # the dead server's log, if one died


def mirrored(items: list, rounds: int) -> list[tuple[int, Any]]:
    """(round, item) for `rounds` rounds, every other round in reverse: a, b, c, c, b, a, ...

    A machine's speed drifts during a plan; measured in mirrored order, each item is measured
    early and late alike, so the drift falls on every item about equally.
    """
    return [(r, item) for r in range(rounds) for item in (items if r % 2 == 0 else items[::-1])]

"""A plan of runs for one Locust process: its stages, the options they share, and how the process went."""

from __future__ import annotations

import itertools
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Required, TypedDict, cast

from labserver import protocol
from labserver.demo.settings import Settings
from labserver.harness.processes.machine import MachineMeter
from labserver.harness.processes.meters import CpuMeter, LocustMeter, ServerMeter
from labserver.harness.processes.supervise import Watched
from labserver.theory import model
from labserver.theory.demand import Demand, OneUser
from labserver.theory.model import Prediction
from labserver.theory.workload import Workload

if TYPE_CHECKING:
    from labserver.harness.plans.feed import Live
    from labserver.harness.servers.server import Server

JOIN_TIMEOUT_S = 120.0
TIMEOUT_DEFAULT_S = 60.0  # a request's timeout in Locust
WARMUP_DEFAULT_S = 1.0  # the warm-up's cap (measure.warmup_end)
REMEASURE_DEFAULT = 1  # how often a run the machine paused in is measured again (load.run_plan)
# Locust's user classes a plan may use (generator.USER_CLASSES names each one's class in the locustfile)
UserClass = Literal["fast", "requests", "arrivals"]


@dataclass(frozen=True)
class Foreseen:
    """A lesson's own prediction made before a run (`before`: its Predict table's figure, priced before any load), and
    its model priced again with the run's measured Demand after it (`after`): one figure before the run, no pricing
    of its own just before it."""

    before: Prediction
    after: Callable[[Demand], Prediction]
    prices: OneUser | None = None  # what priced `before`, as a run's row records a pricing's (None: not said)


# A lesson's own prediction for a run: made before it, from the run's measured Demand, or both (Foreseen)
Predicted = Prediction | Foreseen | Callable[[Demand], Prediction] | None


class Run(TypedDict, total=False):
    """A run as run_plan takes it: its pattern, its users (or an open loop's `rate`), and what it changes.

    A key left out takes the default: the Workload's, the plan's `duration_s`, the model's prediction.
    """

    pattern: Required[str]  # a concurrency pattern (demo/patterns) or a database route (demo/routes.SHOP)
    users: int
    tasks: int
    io_ms: int
    cpu_n: int
    duration_s: int
    rate: float
    drain_s: float
    predicted: Predicted  # the lesson's own prediction
    tags: dict[str, Any]  # more columns for its row
    server: Any  # the Server it loads, or in a sizing.Plan the key of its server's settings
    route: protocol.Route | None  # an app of one's own: the route it loads (yourapp/), its pattern the model's stand-in


RUN_KEYS = tuple(Run.__annotations__)  # the keys a run may have


@dataclass(frozen=True)
class Before:
    """A run's prediction made before it starts, and what priced it (harness/load/pricing.py)."""

    prediction: Prediction
    one_user: OneUser | None  # the one-user prices, where they priced it
    priced_by: str  # 'one user', 'lesson' (its own prediction, or its function priced with one user) or 'not ...'
    generator_ms: float = float("nan")  # the load generator's CPU per request it priced


@dataclass(frozen=True)
class Stage:
    """One run of a plan: a workload on `server`, the prediction to set beside it, and more columns for its row."""

    server: Server
    workload: Workload
    # None: the model's, priced with the CPU the run measures; or the lesson's own, made before the
    # run (a Prediction) or from the run's measured Demand (a function of it)
    predicted: Predicted = None
    tags: dict[str, Any] = field(default_factory=dict)  # more columns for the run's row
    before: Before | None = None  # its prediction made before it starts (pricing.before); None: not made
    # the route of an app of one's own that its requests send (labserver/yourapp); None: the pattern's endpoint, and
    # the workload's pattern is then the one whose traits the model prices the route with
    route: protocol.Route | None = None

    @classmethod
    def from_run(cls, run: Run, duration_s: int, server: Server) -> Stage:
        """A stage from a run as run_plan takes it (a dict); a key it does not know is a ValueError."""
        unknown = set(run) - set(RUN_KEYS)
        if unknown:
            raise ValueError(f"unknown run keys {sorted(unknown)}; a run takes {', '.join(RUN_KEYS)}")
        given: dict[str, Any] = {k: v for k, v in run.items() if v is not None}
        workload = Workload.of({"duration_s": duration_s, **given})
        server = given.get("server") or server
        return cls(server, workload, given.get("predicted"), given.get("tags", {}), route=given.get("route"))

    def as_run(self, users: int | None = None, tags: dict[str, Any] | None = None) -> Run:
        """This stage as run_plan takes it: its workload and route, at `users` where given, with `tags` where given."""
        # the workload's fields are a Run's first keys (tests/harness/test_plan.py holds them in step)
        run = cast(Run, {**asdict(self.workload), "route": self.route})
        if users is not None:
            run["users"] = users
        if tags is not None:
            run["tags"] = tags
        return run

    def prediction(
        self,
        options: Options,
        cores: float,
        demand: Demand | None = None,
        fib_ms: Callable[[], float] | None = None,
        settings: Settings | None = None,
    ) -> Prediction:
        """The prediction set beside this stage: the lesson's, as it is or from `demand`; none for a run meant to time
        out, whose rate counts the requests its clients abandoned (such a run is judged by its failures and its
        goodput, lesson 05); else the model's, priced with `demand` where measured, else with a sub-task's CPU as
        `fib_ms()` times it (asked only here: timing loads the machine), on the server's settings or `settings`
        (a change to them, priced before it is made)."""
        given = self.predicted
        if isinstance(given, Prediction):
            return given
        if isinstance(given, Foreseen):
            given = given.after
        if callable(given):
            return given(demand if demand is not None else Demand(float("nan")))
        if options.expect_failures:
            return Prediction(float("nan"), float("nan"), "not modelled: requests time out")
        price = None if fib_ms is None else fib_ms()
        w, settings = self.workload, settings or self.server.settings
        return model.predict(w, settings, cores=cores, demand=demand, cpu_ms_per_task=price, queueing=True)

    def locust(self) -> protocol.PlanStage:
        """What the locustfile needs of this stage (locustfiles/pattern.py, --plan-file)."""
        w = self.workload
        stage = protocol.PlanStage(
            pattern=w.pattern,
            users=w.users,
            tasks=w.tasks,
            io_ms=w.io_ms,
            cpu_n=w.cpu_n,
            duration_s=w.duration_s,
            rate=w.rate,
            drain_s=w.drain_s,
            host=self.server.url,
        )
        if self.route is not None:
            stage["route"] = self.route
        return stage

    # What the live view (feed.py), the plan's clock and its run ids read of a stage
    @property
    def pattern(self) -> str:
        return self.workload.pattern

    @property
    def users(self) -> int:
        return self.workload.users

    @property
    def duration_s(self) -> int:
        return self.workload.duration_s


def servers_of(stages: Sequence[Stage]) -> list[Server]:
    """The servers a plan measures, each once, in the order the plan first loads them."""
    return list({id(s.server): s.server for s in stages}.values())


def most_users(stages: Sequence[Stage]) -> int:
    """The users a plan's Locust process starts: its busiest stage's (each stage uses the first of them)."""
    return max(s.users for s in stages)


def stage_at(stages: Sequence[Stage], elapsed_s: float) -> int:
    """The index of the stage running `elapsed_s` s into the plan: the first before it starts, the last once it ends.

    The locustfile's rule (protocol.stage_at), which says None once the plan is over."""
    i = protocol.stage_at(list(itertools.accumulate(stage.duration_s for stage in stages)), elapsed_s)
    return len(stages) - 1 if i is None else i


@dataclass(frozen=True)
class Options:
    """What every stage of a plan shares (run_plan's keywords)."""

    spawn_rate: float | None = None  # None: every user at once
    user_class: UserClass = "fast"
    processes: int = 1
    timeout_s: float = TIMEOUT_DEFAULT_S
    warmup_s: float = WARMUP_DEFAULT_S
    expect_failures: bool = False
    lesson: str | None = None
    progress: bool | None = None
    watch: Callable[[Any], Any] | None = None  # called with a feed.Snapshot about once a second
    master: str | None = None  # "HOST:PORT": `processes` Locust workers join from other machines
    join_timeout_s: float = JOIN_TIMEOUT_S  # how long the master waits for them

    def spawn_rate_for(self, stages: Sequence[Stage]) -> float:
        """Users started a second: as set, else every user of the busiest stage at once (the warm-up is cut from
        each window anyway)."""
        return self.spawn_rate or most_users(stages)


class OptionsKw(TypedDict, total=False):
    """Options' fields as keywords (run_plan's and the functions that pass them on): each is Options' own."""

    spawn_rate: float | None
    user_class: UserClass
    processes: int
    timeout_s: float
    warmup_s: float
    expect_failures: bool
    lesson: str | None
    progress: bool | None
    watch: Callable[[Any], Any] | None
    master: str | None
    join_timeout_s: float


class LoadOptions(OptionsKw, total=False):
    """run_plan's keywords beyond a run's own: the plan's Options, and how often a paused run is measured again."""

    remeasure: int


@dataclass(frozen=True)
class Meters:
    """CPU meters of one plan: Locust's, each server's (by id of the server) and the whole machine's."""

    locust: CpuMeter | LocustMeter
    servers: dict[int, ServerMeter]
    machine: MachineMeter

    def every(self) -> list[CpuMeter | LocustMeter | ServerMeter | MachineMeter]:
        return [self.locust, *self.servers.values(), self.machine]

    @classmethod
    def unsampled(cls) -> Meters:
        return cls(CpuMeter(-1), {}, MachineMeter())  # never sampled: every CPU figure is NaN

    def of(self, server: Server) -> ServerMeter:
        return self.servers.get(id(server), CpuMeter(-1))


@dataclass
class PlanRun:
    """One Locust process measuring a plan, from its command to its runs saved: what load.py's steps share.

    `folder` is the first run's, where Locust writes; `text` whether a text bar shows it as it
    runs (`live` is a notebook's chart, or a watcher's feed). `watched` says how the process
    went, and `meters` hold its CPU and the servers' once it has started.
    """

    stages: list[Stage]
    run_ids: list[str]
    folder: Path
    command: list[str]
    options: Options
    live: Live | None = None
    text: bool = False
    watched: Watched = field(default_factory=Watched)
    meters: Meters | None = None

    @property
    def servers(self) -> list[Server]:
        return servers_of(self.stages)

    @property
    def wait_s(self) -> float:
        """How long a master may wait for its workers before the plan's seconds start."""
        return self.options.join_timeout_s if self.options.master is not None else 0.0

    def outcome(self, server_log: str | None) -> Outcome:
        """How the Locust process went, as save_plan reads it."""
        w = self.watched
        return Outcome(w.label, w.ended, w.proc, self.meters, w.started_at, server_log)


@dataclass(frozen=True)
class Outcome:
    """How the Locust process of a plan went."""

    status: str  # supervise.Watched.label: "ok", or why it stopped ("server died", "failed (ValueError)", ...)
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

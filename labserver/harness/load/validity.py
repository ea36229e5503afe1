"""Whether each run of a plan can be a valid measurement, foreseen from the model before anything starts.

A plan's runs take turns in one Locust process, and each is measured over what is left of its
`duration_s` once the run before has drained and its own new users are in their loop
(measure.warmup_end, publish.py). Closed-loop users each finish one request per round trip
R = users / X (Little's law, X the model's throughput), so that window holds about X × window
replies and window / R rounds. A run is foreseen valid when:

- its window holds at least collect.MIN_REQUESTS replies, the harness's own floor, and lasts
  MIN_WINDOW_S, long enough for the meters' samples that price its CPU and its cores' speed;
- where its replies come in bursts (threads that compute in turns and end together: the model's
  `in_step`, and a thread pool on fib without I/O, whose threads share the core the same way),
  its window holds MIN_ROUNDS rounds: one or two bursts measure when a burst fell, not the flow;
- and, a risk rather than a verdict, its Locust processes can send X: one FastHttpUser process is
  priced at GENERATOR_RPS on its core, the least it sends busy, and a run measures its generator's
  CPU itself (collect's SATURATED).

The price of fib comes from `fib_ms` (default: timed here, as the live view's prediction is), so
that a test can ask what any machine would see: a learner's 16-core laptop, a 64-core server.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path

from labserver.demo import cpus
from labserver.demo.settings import Settings
from labserver.demo.traits import Where
from labserver.demo.work import fib_calls
from labserver.harness.plans.plan import WARMUP_DEFAULT_S
from labserver.harness.rows.collect import MIN_REQUESTS
from labserver.harness.servers import interpreters
from labserver.theory import model
from labserver.theory.cores import SATURATED
from labserver.theory.workload import Workload

# Bursts of replies a window must hold: the per-user rate needs two gaps between three of them, and the
# window's edges fall anywhere in a round, so one more
MIN_ROUNDS = 4
# What one FastHttpUser Locust process sends on its core, priced from its CPU per request (`locust_ms`); a busy
# generator reads several replies per wake-up and sends more (docs/evidence.md, "One FastHttpUser process")
GENERATOR_RPS = 3000.0
SETTLE_REPLIES = 2  # replies a user new to the plan needs before it is in its loop (publish.py)
# ...which come a round later than the model's round trips: the first round also opens the connections
# and starts the threads
SETTLE_ROUNDS = SETTLE_REPLIES + 1
# A window holds this many of the machine meter's samples (one each supervise tick, 0.25 s apart): the CPU and
# the cores' speed in it (probe.PROBES_AT_LEAST probes) are NaN with fewer
MIN_WINDOW_S = 1.0
# The run before drains for up to this many of its foreseen round trips: it can serve well under its prediction
# (docs/evidence.md), and its queue then takes that much longer to drain
DRAIN_MARGIN = 1.5


@dataclass(frozen=True)
class Foreseen:
    """One planned run as the model sees it before it starts: its window, and what would make it invalid."""

    workload: Workload
    settings: Settings
    rps: float  # the model's throughput
    round_s: float  # R = users / rps: one request's round trip
    window_s: float  # what is left of duration_s for measuring
    requests: float  # replies foreseen in the window
    rounds: float  # round trips that fit in the window
    bursts: bool  # whether its replies come in bursts as large as the threads computing together
    generator_share: float  # of its Locust processes' ceiling, the share this run asks for
    problems: tuple[str, ...]
    risks: tuple[str, ...] = ()  # what may make it invalid, which the run itself measures (its Locust's CPU)

    @property
    def valid(self) -> bool:
        return not self.problems

    def describe(self) -> str:
        w = self.workload
        work = [f"{w.users} users"] + [f"fib({w.cpu_n})"] * bool(w.cpu_n) + [f"{w.io_ms} ms io"] * bool(w.io_ms)
        server = [f"{self.settings.workers} workers"] * (self.settings.workers > 1) + ["no GIL"] * (
            not self.settings.gil
        )
        return f"{w.pattern} ({', '.join(work + server)})"


def on_python(python: str | Path | None) -> Callable[[int], float] | None:
    """fib's price on a server that runs `python` (None: the lab's own, priced as the caller prices it)."""
    if python is None:
        return None
    small = interpreters.fib_20_ms(str(python))
    return lambda n: small * fib_calls(n) / fib_calls(20) if n > 1 else 0.0


def bursts(workload: Workload, settings: Settings, compute_s: float, cores: float) -> bool:
    """Whether the run's replies come in bursts: threads of a pool that compute in turns all end together.

    Under a GIL the threads of one worker share its core in turns of the switch interval; without
    one, more threads than cores share the cores in the scheduler's slices. A computation shorter
    than a turn ends within it, and the replies stay spread.
    """
    computes = workload.traits.computes
    if computes not in (Where.THREAD_POOL, Where.RELEASED) or compute_s < sys.getswitchinterval():
        return False
    computing = min(workload.users, settings.workers * settings.threads)
    return computing > (settings.workers if settings.gil and computes is Where.THREAD_POOL else cores)


def waves(workload: Workload, settings: Settings) -> int:
    """The replies that come back together, where the run's requests each hold one of a pool's connections for a
    wait and the users outnumber them: the connections free at once, a wave every wait. 0: no waves."""
    pool = settings.workers * settings.db_pool
    if not workload.traits.connection or workload.io_ms <= 0 or workload.users <= pool:
        return 0
    return pool


def foresee(
    runs: Sequence[tuple[Workload, Settings]],
    *,
    cores: float | None = None,
    fib_ms: Callable[[int], float] | None = None,
    server_ms: float = 0.0,
    processes: int = 1,
    warmup_s: float = WARMUP_DEFAULT_S,
    prices: Sequence[Callable[[int], float] | None] | None = None,
    servers: Sequence[Hashable] | None = None,
) -> list[Foreseen]:
    """Each run of one plan (one Locust process, its runs in order) as foreseen on `cores` usable CPUs.

    `fib_ms(n)` prices fib(n) in ms (default: timed here), unless `prices` gives a run a price of
    its own (its server runs another Python: `on_python`); `server_ms` is the server's own CPU
    per request (uvicorn and FastAPI, model.predict's); `processes` the plan's Locust processes; `servers`
    names each run's server (default: its settings), since every user that moves to another server starts anew.
    """
    cores = cores or cpus.cores()
    price = fib_ms or model.cpu_ms
    own = list(prices) if prices is not None else [None] * len(runs)
    keys = list(servers) if servers is not None else [settings for _, settings in runs]
    out: list[Foreseen] = []
    before: Foreseen | None = None
    for i, ((workload, settings), mine) in enumerate(zip(runs, own, strict=True)):
        task_ms = model.work_ms(workload.pattern, workload.cpu_n, mine or price) if workload.cpu_n > 1 else 0.0
        p = model.predict(workload, settings, cores=cores, cpu_ms_per_task=task_ms, server_ms=server_ms)
        out.append(
            _window(
                workload,
                settings,
                p,
                before,
                cores=cores,
                same_server=i > 0 and keys[i] == keys[i - 1],
                task_s=task_ms / 1000,
                processes=processes,
                warmup_s=warmup_s,
            )
        )
        before = out[-1]
    return out


def _window(
    w: Workload,
    s: Settings,
    p: model.Prediction,
    before: Foreseen | None,
    *,
    cores: float,
    same_server: bool,
    task_s: float,
    processes: int,
    warmup_s: float,
) -> Foreseen:
    rps = p.rps if math.isfinite(p.rps) else 0.0
    round_s = w.users / rps if rps > 0 else math.inf
    # The run before drains first: its last requests left up to one of its round trips ago.
    drain_s = DRAIN_MARGIN * before.round_s if before is not None else 0.0
    # Users new to the plan, or to the server (each opens a connection), need two replies each before they are
    # in their loop, at most warmup_s (publish.py).
    new = before is None or not same_server or w.users > before.workload.users
    warm_s = min(warmup_s, SETTLE_ROUNDS * round_s) if new else 0.0
    window_s = max(0.0, w.duration_s - drain_s - warm_s)
    rounds = window_s / round_s if round_s > 0 else math.inf
    requests = rps * window_s
    bunched = bursts(w, s, task_s * w.tasks, cores)
    share = rps / (processes * GENERATOR_RPS)
    problems, risks = [], []
    if requests < MIN_REQUESTS:
        problems.append(
            f"about {requests:.0f} replies in the {window_s:.1f} s left of its {w.duration_s} s "
            f"(at least {MIN_REQUESTS}): run longer or with more users"
        )
    elif window_s < MIN_WINDOW_S:
        problems.append(
            f"{window_s:.1f} s left of its {w.duration_s} s to measure in (at least {MIN_WINDOW_S:g} s, for the "
            "meters' samples): run longer"
        )
    if bunched and rounds < MIN_ROUNDS:
        problems.append(
            f"its replies come in bursts of its threads, one every {round_s:.2f} s: {rounds:.1f} in the "
            f"{window_s:.1f} s left (at least {MIN_ROUNDS}): run longer or with fewer users"
        )
    wave = waves(w, s)
    if wave and rounds < MIN_ROUNDS:  # a window of one round counts whole waves: ± one wave of its replies
        problems.append(
            f"its replies come in waves of its pool's {wave} connections, each user's once every {round_s:.2f} s: "
            f"{rounds:.1f} rounds in the {window_s:.1f} s left (at least {MIN_ROUNDS}): run longer"
        )
    if share >= SATURATED:  # a price, not a ceiling: a busy generator sends more per core (GENERATOR_RPS)
        many = processes > 1
        risks.append(
            f"{rps:,.0f} req/s is {share:.0%} of the {processes * GENERATOR_RPS:,.0f} req/s {processes} Locust "
            f"process{'es are' if many else ' is'} priced to send; a run whose Locust passes {SATURATED:.0%} of "
            f"its core is marked invalid: more processes make sure"
        )
    fore = Foreseen(w, s, rps, round_s, window_s, requests, rounds, bunched, share, tuple(problems), tuple(risks))
    return fore


def warn(plan: Sequence[Foreseen]) -> list[str]:
    """A line per run of `plan` foreseen invalid, and one per run at risk, saying why and what to change."""
    lines = []
    for i, f in enumerate(plan, 1):
        if f.problems:
            lines.append(f"run {i} of {len(plan)}, {f.describe()}: foreseen invalid: {'; '.join(f.problems)}")
        if f.risks:
            lines.append(f"run {i} of {len(plan)}, {f.describe()}: may saturate its Locust: {'; '.join(f.risks)}")
    return lines

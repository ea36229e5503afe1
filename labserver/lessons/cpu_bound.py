"""Lesson 03, CPU-bound work: its plan, its parameters for each run profile, and its readings.

Its readings: the ratios its titles and claims quote, each from its own runs.
The lesson shows the runs, the charts and the claims; the arithmetic between them lives here,
under test (tests/course/test_cpu_bound.py), so that a cell reads `fib.factor`, not a pivot.

Its rows of the decision card (course/card.py): `RELEASED_GIL`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd

from labserver import checks
from labserver.demo import cpus
from labserver.demo.settings import THREADS_DEFAULT
from labserver.harness.load import sizing
from labserver.harness.load.checks import check_sweep
from labserver.harness.plans.plan import Run, mirrored
from labserver.harness.rows import records
from labserver.harness.rows.results import compare
from labserver.lessons.card_row import NOT_YET, Measured, Row, runs_of
from labserver.lessons.lesson import Lesson
from labserver.paths import runs_dir
from labserver.theory import cores, pools, published
from labserver.theory import cores as core_model
from labserver.theory.model import cpu_ms, predict_frame

LESSON = Lesson(
    "03_cpu_bound",
    profiles={
        "quick": {},
        "live": {"rounds": 1, "sweep_cpu_n": [18], "duration_s": 2},
        "full": {"rounds": 4, "sweep_cpu_n": [15, 17, 19, 20], "duration_s": 10},
        "smoke": {"rounds": 1, "sweep_cpu_n": [15], "duration_s": 2},
    },
    chart="fib_throughput.png",
)


def _users_for(pattern: str, users: int, cores: float, *, threads: int = 1, gil: bool = True) -> int:
    """`users` if set, else enough for the cores `pattern` can keep busy (one, under a GIL, on any machine)."""
    usable = core_model.usable(
        pattern, workers=1, procs=sizing.pool_procs(cores), cores=cores, threads=threads, gil=gil
    )
    return sizing.cpu_users(users, usable)


@dataclass(frozen=True)
class CpuBound:
    users: dict[str, int]  # each pattern's users in the fib and fib + sleep runs: enough for the cores it can use
    threads: int  # a thread per user, so that threads never set the limit (AnyIO's default is 40)
    sweep_cpu_n: list[int]
    sweep: list[int]  # fib depths of the sweep, cpu_n the deepest
    plan: sizing.Plan  # every run, in order, on the one server


def plan(
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
        [Run(pattern=p, users=each[p], cpu_n=cpu_n, io_ms=io, tags={"part": part, "round": r}, server="lab")
         for r, p in order]
        for part, io in (("fib", 0), ("fib + sleep", io_ms))
    )  # fmt: skip
    alone = [
        Run(pattern=p, users=each[p], cpu_n=cpu_n, io_ms=0, tags={"part": "fib", "round": 0}, server="lab")
        for p in once
    ]
    swept = [
        Run(pattern="sequential", users=sweep_users, cpu_n=n, io_ms=io_ms, tags={"part": "sweep"}, server="lab")
        for n in sweep
    ]
    runs = fib + alone + mix + swept
    plan = sizing.fit(sizing.Plan(runs, {"lab": {"threads": threads}}, duration_s), cores)
    return CpuBound(each, threads, sweep_cpu_n, sweep, plan)


POOL = "processpool"
ASYNC, THREADS = "sequential", "threadpool"
RELEASED = "hashed"  # def + hashlib: C code that lets go of the GIL; it computes SHA-256, not fib
# Where async / thread pool reads nearer one core each (1) than a second core for the threads (½): from the
# two's geometric midpoint to as far above 1. The hand-offs' price is left out: it moves more between
# pricings than the hand-offs cost.
ONE_GIL_BAND = (1 / math.sqrt(2), math.sqrt(2))


@dataclass(frozen=True)
class FibAlone:
    """The fib runs, read: each pattern's means and the ratios between them."""

    mean: pd.DataFrame  # per pattern: rps, predicted_rps, server_cpu (means over its rounds)
    factor: float  # the pool's req/s over the one-core patterns'
    speed: float  # the one-core patterns' CPU per request over the pool's: below 1 where all-core work costs more
    async_vs_threads: float  # async / thread pool req/s, the median over rounds (the two run seconds apart)
    predicted_ratio: float  # the same, as predicted before the runs: each holds its one core (the GIL)
    one_core_cpu: float  # the most cores a one-core pattern kept busy
    busy: pd.Series  # per pattern, the least share of the cores left to it that it kept busy
    left_out: int = 0  # the disturbed runs these figures leave out (`quiet`)

    @property
    def over(self) -> str:
        """What the figures are read over, for a title: all the runs, or the runs less those left out."""
        return f" ({self.left_out} disturbed run{'s' * (self.left_out != 1)} left out)" if self.left_out else ""


def quiet(runs: pd.DataFrame) -> pd.DataFrame:
    """`runs` less each pattern's disturbed rounds, where the pattern has a round that nothing disturbed: a rule
    read from the means holds on the undisturbed runs, and a pattern disturbed in every round keeps them all."""
    if "disturbed" not in runs:
        return runs
    disturbed = runs["disturbed"].eq(True)
    has_quiet = (~disturbed).groupby(runs["pattern"]).transform("any")
    return runs[~(disturbed & has_quiet)]


def fib_alone(runs: pd.DataFrame, one_core: list[str]) -> FibAlone:
    """Read lesson 03's fib runs: `one_core` are the patterns the model holds to one core; each pattern's means over
    the rounds that nothing disturbed, where it has any (`quiet`)."""
    left_out = len(runs) - len(runs := quiet(runs))
    mean = runs.groupby("pattern")[["rps", "predicted_rps", "server_cpu"]].mean()
    one = runs.loc[runs["pattern"].isin(one_core), "rps"].mean()  # the model gives them the same core
    return FibAlone(
        mean=mean,
        factor=float(mean.loc[POOL, "rps"] / one),
        speed=cores.cost_ratio(runs, "pattern", one_core, POOL),
        async_vs_threads=_median_ratio(runs, "rps"),
        predicted_ratio=_median_ratio(runs, "predicted_before_rps"),
        one_core_cpu=float(mean.loc[one_core, "server_cpu"].max()),
        busy=cores.share_of_left(runs, how="min"),
        left_out=left_out,
    )


def spread(runs: pd.DataFrame, predicted: Mapping[str, float], fib_ms: float | None = None) -> str:
    """Each run's req/s over the Predict table's answer for its pattern, and over its price just before the runs,
    as ranges: how far a run can land from a prediction on this machine. With `fib_ms` (fib as the Predict table
    timed it), the server CPU a request of the runs that compute fib beside it: where they cost more, they land
    under the table."""
    table = runs["rps"] / runs["pattern"].map(predicted)
    before = runs["rps"] / runs["predicted_before_rps"]
    line = (
        f"runs / the Predict table: {table.min():.2f}–{table.max():.2f}; "
        f"runs / their price just before: {before.min():.2f}–{before.max():.2f}"
    )
    if fib_ms is None:
        return line
    spent = (runs["server_cpu"] / runs["rps"] * 1000)[runs["pattern"] != RELEASED]  # hashed computes no fib
    cpu = f"server CPU a request, the fib runs: {spent.min():.1f}–{spent.max():.1f} ms"
    return f"{line}\n{cpu}; fib alone, timed here: {fib_ms:.1f} ms"


@dataclass(frozen=True)
class WithSleep:
    """The fib + sleep runs, read beside the fib runs."""

    # the pool's req/s over async def's: the thread pool's users fall in step with the sleep, and lose more than the
    # core count explains (lesson 03, "Deeper: why the thread pool's users move in step")
    factor: float
    predicted_factor: float  # the same, as predicted before the runs (each priced on its own server)
    async_vs_threads: float  # async / thread pool req/s, the median over rounds
    predicted_ratio: float  # the same, as predicted before the runs (the model's in-step thread pool)
    busy: pd.Series  # per pattern, the mean share of the cores left to it that it kept busy
    # per pattern, its mean req/s over its mean prediction made before the runs: where a ratio missed, which side
    of_before: pd.Series = field(default_factory=lambda: pd.Series(dtype=float))

    def against_before(self, *patterns: str) -> str:
        """Each of `patterns` against its own prediction made before the runs, in words."""
        return ", ".join(f"{cores.WHERE[p][0]} {self.of_before[p]:.2f} of its own" for p in patterns)


def with_sleep(runs: pd.DataFrame) -> WithSleep:
    """Read lesson 03's fib + sleep runs, over undisturbed rounds (`quiet`)."""
    runs = quiet(runs)
    mean = runs.groupby("pattern")[["rps", "predicted_before_rps"]].mean()
    return WithSleep(
        factor=float(mean.loc[POOL, "rps"] / mean.loc[ASYNC, "rps"]),
        predicted_factor=float(mean.loc[POOL, "predicted_before_rps"] / mean.loc[ASYNC, "predicted_before_rps"]),
        async_vs_threads=_median_ratio(runs, "rps"),
        predicted_ratio=_median_ratio(runs, "predicted_before_rps"),
        busy=cores.share_of_left(runs),
        of_before=mean["rps"] / mean["predicted_before_rps"],
    )


def model_ratio(over: str, under: str, users: Mapping[str, int], cpu_n: int, io_ms: int, threads: int) -> float:
    """`over` / `under` req/s with fib + sleep, as the model predicts it before the runs from fib alone timed here
    (the Predict table's price): one price for both, so that a change in the cores' speed falls on both alike, where
    each pattern's own pricing takes it at one moment, and a slow one reads on that pattern alone. Async over the
    thread pool: the model's in-step thread pool; the process pool over async: the cores each can use."""
    rps = {
        p: float(predict_frame([p], [users[p]], cpu_n=cpu_n, io_ms=io_ms, threads=threads)["predicted_rps"].iloc[0])
        for p in (over, under)
    }
    return rps[over] / rps[under]


@dataclass(frozen=True)
class MixModel:
    """The fib + sleep ratios as the model predicts them before the runs from fib alone (model_ratio), and the most
    the thread pool's core can idle in step, io / (io + users × cpu)."""

    pool_over: float  # the process pool / async def
    in_step: float  # async def / the thread pool, its users all in one burst
    most_idle: float

    def pool_detail(self, mix: WithSleep) -> str:
        return (
            f"served {mix.factor:.2f}, the model {self.pool_over:.2f}; each priced on its own: "
            f"{mix.predicted_factor:.2f} ({mix.against_before(POOL, ASYNC)})"
        )

    def threads_detail(self, mix: WithSleep) -> str:
        return (
            f"served {mix.async_vs_threads:.2f}; the model in step {self.in_step:.2f}, its core idle up to "
            f"{self.most_idle:.0%}: idle {1 - mix.busy[THREADS]:.0%}; each priced on its own: {mix.predicted_ratio:.2f}"
        )


def mix_model(users: Mapping[str, int], cpu_n: int, io_ms: int, threads: int) -> MixModel:
    """Lesson 03's fib + sleep runs as the model predicts them from fib alone, timed here before the runs."""
    return MixModel(
        pool_over=model_ratio(POOL, ASYNC, users, cpu_n, io_ms, threads),
        in_step=model_ratio(ASYNC, THREADS, users, cpu_n, io_ms, threads),
        most_idle=io_ms / (io_ms + users[THREADS] * cpu_ms(cpu_n)),
    )


def _median_ratio(runs: pd.DataFrame, column: str) -> float:
    # Within a round the two run seconds apart; the median over rounds leaves out a round in which the
    # machine changed speed between them.
    return float(compare(runs, column, ASYNC, THREADS, on="round")["ratio"].median())


@dataclass(frozen=True)
class Sweep:
    """The sweep of fib's depth, read: where the CPU took over, and where the model puts it."""

    agree: float  # the share of depths where the model names the measured bottleneck
    crossed: tuple[int, int] | None  # the deepest fib measured I/O-bound, the shallowest CPU-bound
    knee_ms: float  # a request's CPU where the two caps cross, users × cpu = io + cpu
    knee_n: float  # the depth whose fib alone costs that, as the model's curve prices it (nan: none to draw)
    costs: str  # what each depth costs here (fib_ms), in words

    @property
    def title(self) -> str:
        if self.crossed is None:
            return "The sweep did not cross from I/O to CPU"
        return f"The CPU takes over between fib({self.crossed[0]}) and fib({self.crossed[1]})"


def sweep(curve: pd.DataFrame, io_ms: int, users: int) -> Sweep:
    """Read lesson 03's sweep: async at `users` users and `io_ms` of sleep, over fib's depths. The knee is where
    fib alone, each depth priced from the deepest's timing (`fib_ms`, as the model's curve is), costs the crossing's
    CPU."""
    depths = sorted(set(curve["cpu_n"]))
    knee_ms = cores.crossing_ms(io_ms, users)
    knee_n = knee_depth(knee_ms, range(depths[0], depths[-1] + 1))
    # the runs' depths, and the two the knee sits between, each priced from the deepest's timing
    shown = sorted({*depths, *((math.floor(knee_n), math.ceil(knee_n)) if math.isfinite(knee_n) else ())})
    return Sweep(
        agree=float((cores.cpu_bound(curve) == cores.predicted_cpu_bound(curve)).mean()),
        crossed=cores.takeover(curve),
        knee_ms=knee_ms,
        knee_n=knee_n,
        costs=", ".join(f"fib({n}) {fib_ms(n, depths[-1]):.2f} ms" for n in shown),
    )


def hand_offs(cpu: pd.DataFrame) -> str:
    """The thread pool's CPU a request over async's, for each endpoint (a column of `cpu`, indexed by pattern): what
    its threads pay to pass the GIL, which async, with no hand-offs, does not."""
    each = ", ".join(f"{endpoint} {cpu.at[THREADS, endpoint] / cpu.at[ASYNC, endpoint]:.2f}×" for endpoint in cpu)
    return f"the thread pool's CPU a request over async's: {each}"


def calls(n: int) -> int:
    """The calls fib(n) makes, itself included: its cost in units of one call (each level about φ× the one below)."""
    below, here = 1, 1  # fib(0)'s and fib(1)'s: one call each
    for _ in range(n - 1):
        below, here = here, below + here + 1
    return here if n >= 1 else below


def fib_ms(n: int, anchor: int) -> float:
    """fib(n)'s CPU here in ms, from the one timing of fib(`anchor`) scaled by the calls each makes: every depth of
    the sweep from its longest timing, so that a depth timed in a slow moment does not bend the model's curve."""
    return cpu_ms(anchor) * calls(n) / calls(anchor)


def model_curve(users: int, io_ms: int, depths: range) -> pd.DataFrame:
    """The model of async at `users` users and `io_ms` of sleep at every depth of `depths`, each priced from the
    deepest's timing (`fib_ms`): the line whose bend the knee marks."""
    deepest = depths[-1]
    return pd.concat(
        predict_frame(["sequential"], [users], cpu_n=n, io_ms=io_ms, cpu_ms_per_task=fib_ms(n, deepest)).assign(cpu_n=n)
        for n in depths
    )


def knee_depth(ms: float, depths: range) -> float:
    """The (fractional) depth in `depths` at which fib costs `ms`, each depth priced from the deepest's timing
    (`fib_ms`): between the two depths around it, on a log scale; nan where no depth in the range reaches it or the
    shallowest already passes it."""
    anchor = depths[-1]
    under = [n for n in depths if fib_ms(n, anchor) <= ms]
    if not under or under[-1] == anchor:
        return math.nan
    n = under[-1]
    low, high = fib_ms(n, anchor), fib_ms(n + 1, anchor)
    return n + math.log(ms / low) / math.log(high / low)


def beside_pena(fib: FibAlone, mix: WithSleep, curve: pd.DataFrame, cpu_n: int) -> pd.DataFrame:
    """Carlos Pena's FIB sweep (req/s, sync and async, one worker, 32 k6 VUs, two database queries a request) beside
    lesson 03's figures: the sweep's fib(25) and lesson 03's `cpu_n`, each over its shallowest fib."""
    async25, async15 = published.PENA_SWEEP_RPS[25][1], published.PENA_SWEEP_RPS[15][1]
    curve_rps = curve.set_index("cpu_n")["rps"]
    rows = [
        ("async / sync on fib(25) with I/O, 1 worker (Carlos Pena's k6 test, 32 VUs: two DB queries, then fib; ours: "
         "a sleep, then fib)", pools.async_over_sync(published.PENA_SWEEP_RPS)[25], mix.async_vs_threads),
        (f"async req/s at FIB=25 over FIB=15, with I/O (Carlos Pena: {async25:.1f} / {async15:.1f}; its I/O is two "
         "DB queries). Not like for like: each FIB=15 is set by its own I/O and users", async25 / async15,
         curve_rps[cpu_n] / curve_rps[curve_rps.index.min()]),
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=["figure", "article", "ours"]).round(3)


def burst_sizes(runs: pd.DataFrame, patterns: list[str]) -> pd.DataFrame:
    """Per pattern, how Locust received its first run's replies: bursts, and replies per burst (median, largest)."""
    sizes = {
        p: records.bursts(records.read(runs_dir() / runs.loc[runs["pattern"] == p, "run_id"].iloc[0]))["size"]
        for p in patterns
    }
    described = pd.DataFrame({p: s.describe()[["count", "50%", "max"]] for p, s in sizes.items()})
    names = {"count": "bursts", "50%": "median replies per burst", "max": "largest burst"}
    return described.rename(index=names).round(1)


def released_gil(runs: pd.DataFrame) -> Measured:
    """Lesson 03: cores kept busy by a `def` whose work is C that lets go of the GIL (`hashed`), over fib's `def`."""
    rows = runs_of(runs, "03", ("hashed", "threadpool"))
    if rows.empty or "part" not in rows or "server_cpu" not in rows:
        return Measured(math.nan, NOT_YET)
    busy = rows[rows["part"] == "fib"].groupby("pattern")["server_cpu"].mean()
    if not {"hashed", "threadpool"} <= set(busy.index):
        return Measured(math.nan, NOT_YET)
    ratio = float(busy["hashed"] / busy["threadpool"])
    return Measured(
        ratio, f"{busy['hashed']:.2f} cores busy hashing in a `def`, against {busy['threadpool']:.2f} computing fib"
    )


# Its rows of the decision card (course/card.py), each with the figure that shows it
RELEASED_GIL = Row(
    "CPU work in C that lets go of the GIL: `hashlib` on more than 2 KiB, `zlib`, numpy on large arrays",
    "a plain `def` (the thread pool): its threads compute on several cores",
    "min(threads, cores) / cpu",
    "the server process over 100% CPU, with no pool",
    "cores kept busy hashing / computing fib, both in a `def`",
    ("03",),
    released_gil,
    "the cores hashlib's threads keep busy are what other processes leave them (lesson 03's `other_cpu`)",
)

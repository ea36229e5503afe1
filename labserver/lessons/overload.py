"""Lesson 08, overload: its plan and parameter checks, and its parameters for each run profile.

Its readings: an overload read from its two runs' records: how fast the open loop's wait grew, and the closed one's.

Both runs load the same thread pool at ρ > 1: an open loop, whose arrivals keep their schedule,
then a closed loop of as many users. Each loop's mean and p95 are taken by thirds of its window
(arrivals.thirds); the open loop's growth, in s per s, is set beside the same queue replayed on
its own arrival times (arrivals.replayed), which carries the schedule's luck too.

Its rows of the decision card (course/card.py): `OVERLOAD`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from labserver import checks
from labserver.demo.settings import Settings
from labserver.harness.load import sizing
from labserver.harness.load.checks import check_arrivals, check_load
from labserver.harness.rows import arrivals, records
from labserver.harness.rows.results import RunResult
from labserver.lessons.card_row import NOT_YET, Measured, Row
from labserver.lessons.lesson import Lesson
from labserver.theory.workload import Workload

# 08 and 09 share one calibration per kernel (harness/load/calibrate.py); `full` sweeps ρ finer, overloads longer.
LESSON = Lesson(
    "08_overload",
    profiles={
        "quick": {},
        "live": {"rhos": [0.6, 0.9], "overload_s": 10, "drain_s": 3, "duration_s": 5},
        "full": {"rhos": [0.2, 0.4, 0.6, 0.7, 0.8, 0.9, 0.95], "overload_s": 20, "drain_s": 6, "duration_s": 15},
        "smoke": {"rhos": [0.6], "overload_s": 4, "drain_s": 2, "duration_s": 2},
    },
    chart="overload.png",
)


@dataclass(frozen=True)
class Overload:
    rhos: list[float]
    guess_s: float  # S before it is measured: the wait alone


def plan(
    *, io_ms: int, threads: int, rhos: object, overload: float, overload_s: int, drain_s: int, duration_s: int
) -> Overload:
    """Lesson 08: ρs below 1, an overload above it, run lengths, the server and its open loops."""
    rhos = checks.parameter("rhos", rhos, list[float])
    if not all(0 < rho < 1 for rho in rhos):
        raise ValueError(f"rhos are utilisations below capacity, each above 0 and below 1, got {rhos}")
    sizing.above_capacity("overload", overload)
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


@dataclass(frozen=True)
class Reading:
    """The two overload runs, read."""

    opened: float  # when the open loop's first request was meant to leave
    window: tuple[float, float]  # the open loop's window, as its run's row counts it
    closed_start: float  # when the closed loop's window began
    thirds: pd.DataFrame  # mean and p95 latency per third, a column per loop and statistic (arrivals.thirds)
    rho: float  # the utilisation the open loop's schedule sent
    slope: float  # how fast the open loop's mean wait grew, s per s, from the first third to the last
    service_s: float  # S, from the calibration
    hold_s: float  # how long a request held a thread: c / X, X what the saturated closed loop served
    replay_slope: float  # the same growth for the queue replayed on the open loop's arrivals
    over_time: dict[str, pd.DataFrame]  # each loop's requests: when each left (`t_s`) and its `latency_ms`
    replay_over_time: pd.DataFrame  # ... and the replayed queue's, from the open loop's start

    @property
    def growth(self) -> pd.Series:
        """Each column of `thirds`, last third over first: how many times the latency grew over the run."""
        return self.thirds.loc["last third"] / self.thirds.loc["first third"]

    def __str__(self) -> str:
        return (
            f"the open loop's wait grew {self.slope:.3f} s per second; the same queue replayed on its arrivals "
            f"(a thread held {self.hold_s * 1000:.1f} ms, S = {self.service_s * 1000:.1f} ms): "
            f"{self.replay_slope:.3f}; the fluid model's ρ − 1 = {self.rho - 1:.3f}"
        )


def read(
    open_run: RunResult, closed_run: RunResult, service_s: float, threads: int, *, sending_s: float, warmup_s: float
) -> Reading:
    """Read the open loop's run (sending `sending_s` s, its first `warmup_s` s left out) and the closed loop's."""
    open_records, closed_records = records.read(open_run.path), records.read(closed_run.path)
    opened = min(r.intended for user in open_records for r in user if r.intended is not None)
    window = (opened + warmup_s, opened + sending_s)  # as the run's row counts it
    thirds = arrivals.thirds({"open loop": (open_records, window), "closed loop": (closed_records, closed_run.window)})
    hold_s = threads / closed_run.row["rps"]  # each thread held c / X
    replay = arrivals.replayed(open_records, service_s, hold_s, threads)
    replay_first, _, replay_last = arrivals.by_third(replay, *window, "mean")
    mean = thirds["open loop, mean"]
    return Reading(
        opened=opened,
        window=window,
        closed_start=closed_run.window[0],
        thirds=thirds,
        rho=open_run.row["scheduled_rate"] * service_s / threads,
        slope=arrivals.growth_s_per_s(mean["first third"], mean["last third"], window),
        service_s=service_s,
        hold_s=hold_s,
        replay_slope=arrivals.growth_s_per_s(replay_first, replay_last, window),
        over_time={
            "open loop": arrivals.over_time(open_records, opened),
            "closed loop": arrivals.over_time(closed_records, closed_run.window[0]),
        },
        replay_over_time=arrivals.over_time(replay, opened),
    )


def past_capacity(runs: pd.DataFrame) -> Measured:
    """Lessons 08, 09: an open loop past the thread pool's capacity, the mean latency in the run's last third over its
    first (what lesson 08's claim judges: a third's p95 rests on a few slow replies); beside it, the same with the
    queue bounded, and the share it shed."""
    needed = {"lesson", "rate", "valid", "shed", "mean_first_third_ms", "mean_last_third_ms"}
    if runs.empty or not needed <= set(runs):
        return Measured(math.nan, NOT_YET)
    past = runs["lesson"].fillna("").astype(str).str.match(r"0[89]") & runs["valid"].fillna(False).astype(bool)
    past &= runs["rate"] > 1.1 * runs["rps"]  # arrivals past what the server served: overloaded
    if "limit_concurrency" in runs:  # uvicorn's limit queues nothing: a loss system, not a bounded queue
        past &= runs["limit_concurrency"].isna()
    growth = (runs["mean_last_third_ms"] / runs["mean_first_third_ms"])[past]
    shed = runs["shed"].fillna(0)[past]
    if (shed == 0).sum() == 0:
        return Measured(math.nan, NOT_YET)
    ratio = float(growth[shed == 0].median())
    text = f"unbounded: mean latency {ratio:.1f}× higher in the run's last third than its first"
    if (shed > 0).any():
        text += f"; a bounded queue: {growth[shed > 0].median():.2f}×, {shed[shed > 0].median():.0%} shed"
    return Measured(ratio, text)


# Its rows of the decision card (course/card.py), each with the figure that shows it
OVERLOAD = Row(
    "More requests arrive than the server can serve (overload)",
    "a bounded queue that answers 503 at once (shed), and load tests with an open loop of arrivals",
    "capacity, whatever arrives: past it, the queue and the wait grow without bound",
    "p95 climbing through the incident while req/s stays flat at capacity",
    "mean latency in a run's last third / its first, past capacity: unbounded, and bounded",
    ("08", "09"),
    past_capacity,
)

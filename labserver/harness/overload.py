"""An overload read from its two runs' records (lesson 08): how fast the open loop's wait grew, and the closed one's.

Both runs load the same thread pool at ρ > 1: an open loop, whose arrivals keep their schedule,
then a closed loop of as many users. Each loop's mean and p95 are taken by thirds of its window
(arrivals.thirds); the open loop's growth, in s per s, is set beside the same queue replayed on
its own arrival times (arrivals.replayed), which carries the schedule's luck too.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from labserver.harness import arrivals, records
from labserver.harness.results import RunResult


@dataclass(frozen=True)
class Overload:
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
) -> Overload:
    """Read the open loop's run (sending `sending_s` s, its first `warmup_s` s left out) and the closed loop's."""
    open_records, closed_records = records.read(open_run.path), records.read(closed_run.path)
    opened = min(r.intended for user in open_records for r in user if r.intended is not None)
    window = (opened + warmup_s, opened + sending_s)  # as the run's row counts it
    thirds = arrivals.thirds({"open loop": (open_records, window), "closed loop": (closed_records, closed_run.window)})
    hold_s = threads / closed_run.row["rps"]  # each thread held c / X
    replay = arrivals.replayed(open_records, service_s, hold_s, threads)
    replay_first, _, replay_last = arrivals.by_third(replay, *window, "mean")
    mean = thirds["open loop, mean"]
    return Overload(
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

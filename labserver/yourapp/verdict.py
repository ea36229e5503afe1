"""A route of one's own as the lab judges it: its `Verdict` (its prices, the model's ceiling and bound before any
load, the advice, and the runs of the sweep that checks them), and the route as `Priced` (its verdict so far, and the
stage the model and the sweep read it as).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from labserver.harness.plans.plan import Stage
from labserver.theory import usl


@dataclass
class Verdict:
    """One route: its prices, the model's ceiling and bound before any load, and what the sweep measured."""

    route: str
    endpoint: str | None
    runs_on: str  # Where.LOOP, Where.THREAD_POOL, HELD or DEPENDENCY (as the model reads it)
    def_dependencies: int  # of its dependencies, those FastAPI runs in the thread pool
    service_ms: float  # S, one request alone
    loop_ms: float  # the server's CPU per request on the event loop
    threads_ms: float  # ... in the pool's threads
    predicted_rps: float  # at the sweep's most users, before any load
    bound: str  # what the model says binds it there
    change: str = ""  # what moves the ceiling (advice)
    change_rps: float = math.nan  # ... and the model's throughput once it is made
    change_settings: dict[str, int] = field(default_factory=dict)  # ... the server's settings it changes
    card: str = ""  # the README decision card's row it falls under: that row's situation (CARD)
    runs: list[dict[str, Any]] = field(default_factory=list)  # each run: users, predicted and measured
    stopped: str = ""  # why the sweep stopped
    # the server's CPU per request with measurement.HOT_MOST requests in flight: what a run of as many users or more is
    # priced with (loop_ms and threads_ms: with measurement.HOT_USERS)
    busy_cpu_ms: float = math.nan
    # how long a request held a thread, for an `async def` with `def` dependencies (NaN: not measured): where it is
    # under HOLDS_THREAD of S, the route is read as the event loop's, its threads free between requests
    thread_hold_ms: float = math.nan

    @property
    def measured_rps(self) -> float:
        """The most any valid run served (NaN: none was valid)."""
        served = [r["rps"] for r in self.runs if r["valid"]]
        return max(served) if served else math.nan

    def ceiling(self) -> float:
        """The lower of the predicted and the measured ceilings: what `--at-least` holds the route to."""
        return min(self.predicted_rps, self.measured_rps) if self.runs else self.predicted_rps

    def law(self) -> usl.Fit:
        """The Universal Scalability Law fitted to the sweep's valid runs (usl.NO_FIT under four)."""
        valid = [r for r in self.runs if r["valid"]]
        return usl.fit([r["users"] for r in valid], [r["rps"] for r in valid])

    def as_dict(self) -> dict[str, Any]:
        law = self.law()
        fitted = {"sigma": law.sigma, "kappa": law.kappa, "peak_users": law.peak_users, "peak_rps": law.peak_rps}
        return {**dataclasses.asdict(self), "measured_rps": self.measured_rps, "usl": fitted}


@dataclass(frozen=True)
class Priced:
    """A route as priced before any load: its verdict so far, and the stage the model and the sweep read it as."""

    verdict: Verdict
    stage: Stage

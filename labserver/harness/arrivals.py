"""An open loop's figures (lesson 08): what the schedule meant to send, what left, and latency from the schedule.

A closed loop's user sends its next request when the last reply comes; an open loop's schedule
sends at its own pace (locustfiles/pattern.py, ArrivalUser), and every record keeps when it
was meant to leave (`intended`). A request belongs to the window in which it was meant to
leave, however late it was answered: in an overload the latest ones are answered long after.
Latency is counted from the intended time, so a generator that fell behind cannot hide the
wait (coordinated omission); and the run is a measurement of the server only if the generator
kept its schedule in every third of the window, the overload's end included.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from labserver.harness.records import PerUser

ON_TIME = 0.02  # the sends may fall short of the schedule by this share, in every third of the window


@dataclass(frozen=True)
class Arrivals:
    scheduled_rate: float  # arrivals per second the schedule meant to send in the window (Poisson: near `rate`)
    sent_rate: float  # arrivals per second that left within the window
    kept_up: float  # sent / scheduled in the third of the window where the generator lagged most
    served_rps: float  # answered with 200 per second of the window
    shed: float  # share of the window's requests not answered with 200 (503s when the server sheds)
    mean_ms: float  # latency from the intended time, of the requests answered with 200
    p95_ms: float
    p99_ms: float
    p95_thirds_ms: tuple[float, float, float]  # p95 of the first, middle and last third (by intended time)
    requests: int


def measure(per_user: PerUser, start: float, end: float) -> Arrivals:
    """The figures of the requests meant to leave in [start, end)."""
    mine = [r for user in per_user for r in user if r.intended is not None and start <= r.intended < end]
    window = end - start
    nan = math.nan
    if not mine or window <= 0:
        return Arrivals(nan, nan, nan, nan, nan, nan, nan, nan, (nan, nan, nan), 0)
    thirds = [start + window * k / 3 for k in range(4)]
    kept_up = math.inf
    for lo, hi in itertools.pairwise(thirds):
        scheduled = sum(1 for r in mine if lo <= r.intended < hi)
        sent = sum(1 for r in mine if lo <= r.sent < hi)
        if scheduled:
            kept_up = min(kept_up, sent / scheduled)
    ok = [r for r in mine if r.ok]
    latencies = np.array([r.from_intended_ms for r in ok]) if ok else np.array([nan])
    p95_thirds = []
    for lo, hi in itertools.pairwise(thirds):
        part = [r.from_intended_ms for r in ok if lo <= r.intended < hi]
        p95_thirds.append(float(np.percentile(part, 95)) if part else nan)
    return Arrivals(
        scheduled_rate=len(mine) / window,
        sent_rate=sum(1 for r in mine if start <= r.sent < end) / window,
        kept_up=kept_up if math.isfinite(kept_up) else nan,
        served_rps=len(ok) / window,
        shed=1 - len(ok) / len(mine),
        mean_ms=float(np.mean(latencies)),
        p95_ms=float(np.percentile(latencies, 95)),
        p99_ms=float(np.percentile(latencies, 99)),
        p95_thirds_ms=(p95_thirds[0], p95_thirds[1], p95_thirds[2]),
        requests=len(mine),
    )


def problem(a: Arrivals) -> str | None:
    """Why the generator, not the server, set the pace of an open loop; None when it kept its schedule."""
    if a.requests == 0:
        return "no request was scheduled in the window"
    if not a.kept_up >= 1 - ON_TIME:
        return (
            f"the generator fell behind its schedule: it sent {a.kept_up:.1%} of the requests due in a third of"
            f" the window (at least {1 - ON_TIME:.0%} needed), so the arrivals were not the ones asked for"
        )
    return None


def row(a: Arrivals) -> dict:
    """The columns an open loop's run adds to its row."""
    return {
        "scheduled_rate": a.scheduled_rate,
        "sent_rate": a.sent_rate,
        "kept_up": a.kept_up,
        "served_rps": a.served_rps,
        "shed": a.shed,
        "intended_mean_ms": a.mean_ms,
        "intended_p95_ms": a.p95_ms,
        "intended_p99_ms": a.p99_ms,
        "p95_first_third_ms": a.p95_thirds_ms[0],
        "p95_middle_third_ms": a.p95_thirds_ms[1],
        "p95_last_third_ms": a.p95_thirds_ms[2],
    }

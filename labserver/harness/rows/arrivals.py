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
from typing import NamedTuple, TypedDict

import numpy as np
import pandas as pd

from labserver.harness.rows.records import PerUser, Record
from labserver.theory import queueing

ON_TIME = 0.02  # the sends may fall short of the schedule by this share, in every third of the window


@dataclass(frozen=True)
class Arrivals:
    scheduled_rate: float  # arrivals per second the schedule meant to send in the window (Poisson: near `rate`)
    sent_rate: float  # arrivals per second that left within the window
    kept_up: float  # sent / scheduled in the third of the window where the generator lagged most
    served_rps: float  # replies with 200 that came within the window, per second: the throughput
    shed: float  # share of the window's requests not answered with 200 (503s when the server sheds)
    mean_ms: float  # latency from the intended time, of the requests answered with 200
    p95_ms: float
    p99_ms: float
    p95_thirds_ms: tuple[float, float, float]  # p95 of the first, middle and last third (by intended time)
    requests: int
    mean_thirds_ms: tuple[float, float, float] = (math.nan, math.nan, math.nan)  # their means: the trend


def _when(r: Record) -> float:
    """When a request was meant to leave: its intended time in an open loop, when it was sent in a closed one."""
    return r.intended if r.intended is not None else r.sent


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
        scheduled = sum(1 for r in mine if lo <= _when(r) < hi)
        sent = sum(1 for r in mine if lo <= r.sent < hi)
        if scheduled:
            kept_up = min(kept_up, sent / scheduled)
    ok = [r for r in mine if r.ok]
    latencies = np.array([r.from_intended_ms for r in ok]) if ok else np.array([nan])
    p95_thirds, mean_thirds = [], []
    for lo, hi in itertools.pairwise(thirds):
        part = [r.from_intended_ms for r in ok if lo <= _when(r) < hi]
        p95_thirds.append(float(np.percentile(part, 95)) if part else nan)
        mean_thirds.append(float(np.mean(part)) if part else nan)
    return Arrivals(
        scheduled_rate=len(mine) / window,
        sent_rate=sum(1 for r in mine if start <= r.sent < end) / window,
        kept_up=kept_up if math.isfinite(kept_up) else nan,
        served_rps=sum(1 for user in per_user for r in user if r.ok and start <= r.end < end) / window,
        shed=1 - len(ok) / len(mine),
        mean_ms=float(np.mean(latencies)),
        p95_ms=float(np.percentile(latencies, 95)),
        p99_ms=float(np.percentile(latencies, 99)),
        p95_thirds_ms=(p95_thirds[0], p95_thirds[1], p95_thirds[2]),
        requests=len(mine),
        mean_thirds_ms=(mean_thirds[0], mean_thirds[1], mean_thirds[2]),
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
        "mean_first_third_ms": a.mean_thirds_ms[0],
        "mean_last_third_ms": a.mean_thirds_ms[2],
    }


class Thirds(NamedTuple):
    """A latency figure (ms) in each third of a window: the first, the middle, the last."""

    first: float
    middle: float
    last: float


def by_third(per_user: PerUser, start: float, end: float, statistic: str = "p95") -> Thirds:
    """Mean or p95 latency of the requests meant to leave (open loop) or sent (closed) in each third of [start, end).

    Latency from the intended time where there is one: the two loops side by side, as their
    users would feel it.
    """
    if statistic not in ("mean", "p95"):
        raise ValueError(f"statistic must be 'mean' or 'p95', got {statistic!r}")
    window = end - start
    thirds = [start + window * k / 3 for k in range(4)]
    out = []
    for lo, hi in itertools.pairwise(thirds):
        part = [r.from_intended_ms for user in per_user for r in user if r.ok and lo <= _when(r) < hi]
        if not part:
            out.append(math.nan)
        else:
            out.append(float(np.mean(part)) if statistic == "mean" else float(np.percentile(part, 95)))
    return Thirds(*out)


class Corrected(TypedDict):
    recorded: dict[float, float]  # latency in ms at each percentile
    corrected: dict[float, float]
    counts: dict[str, int]  # requests, recorded and corrected


def corrected_percentiles(
    latencies_ms: list[float], interval_ms: float, percentiles: tuple[float, ...] = (50, 95, 99)
) -> Corrected:
    """A closed loop's latency percentiles as recorded, and with HdrHistogram's correction for coordinated omission.

    A closed-loop user that waits L ms for one reply does not send the requests it would have
    sent every `interval_ms` meanwhile: the stall it sat through is recorded once instead of
    L / interval times. The correction adds those missing requests back, at L − interval,
    L − 2 × interval, ..., down to the interval itself: a missing request waited at least one
    interval, or the user would have sent it after the reply. That is HdrHistogram's correction as
    its reference (Java) implementation records it; the Python port's `record_corrected_value` also
    records the remainder below the interval, a near-zero sample for every reply longer than it,
    which would pull the corrected median under the recorded one. `interval_ms` is the gap the user
    keeps between sends when nothing stalls: its typical latency.
    """
    from hdrh.histogram import HdrHistogram

    if interval_ms <= 0 or not math.isfinite(interval_ms):
        raise ValueError(f"interval_ms must be a number of ms above 0, got {interval_ms!r}")
    # microseconds, 1 µs to 1 hour, 3 significant digits
    raw, fixed = HdrHistogram(1, 3_600_000_000, 3), HdrHistogram(1, 3_600_000_000, 3)
    interval_us = max(1, round(interval_ms * 1000))
    for ms in latencies_ms:
        us = max(1, round(ms * 1000))
        raw.record_value(us)
        fixed.record_value(us)
        for missing in range(us - interval_us, interval_us - 1, -interval_us):  # each ≥ the interval
            fixed.record_value(missing)
    return {
        "recorded": {p: raw.get_value_at_percentile(p) / 1000 for p in percentiles},
        "corrected": {p: fixed.get_value_at_percentile(p) / 1000 for p in percentiles},
        "counts": {"recorded": raw.get_total_count(), "corrected": fixed.get_total_count()},
    }


def over_time(per_user: PerUser, since: float | None = None) -> pd.DataFrame:
    """Each answered request's latency (from its intended time, if it had one) against when it left, s after `since`:
    by default, when the first request was meant to leave."""
    if since is None:
        since = min((_when(r) for user in per_user for r in user), default=0.0)
    rows = [(_when(r) - since, r.from_intended_ms) for user in per_user for r in user if r.ok]
    return pd.DataFrame(rows, columns=["t_s", "latency_ms"]).sort_values("t_s", ignore_index=True)


def thirds(loops: dict[str, tuple[PerUser, tuple[float, float]]]) -> pd.DataFrame:
    """Mean and p95 latency in each third of each loop's window: a column per loop and statistic, a row per third.

    `loops` maps a label to the loop's records and its window (start, end); see `by_third`.
    """
    columns = {
        f"{label}, {statistic}": by_third(per_user, *window, statistic)
        for label, (per_user, window) in loops.items()
        for statistic in ("mean", "p95")
    }
    return pd.DataFrame(columns, index=["first third", "middle third", "last third"])


def replayed(per_user: PerUser, service_s: float, hold_s: float, slots: int) -> PerUser:
    """An open loop's records as the queue model answers the same arrivals: latency S + its wait (`queueing.replay`).

    Every request, answered or not, takes its slot in turn; each keeps its measured `ok`, so that
    the model and the measurement are averaged over the same requests.
    """
    sent = [r for user in per_user for r in user]
    intended = [r.intended for r in sent if r.intended is not None]
    if len(intended) < len(sent):
        raise ValueError("replayed needs an open loop's records: each with the time it was meant to leave")
    waits = iter(queueing.replay(intended, hold_s, slots))
    out: PerUser = []
    for user in per_user:
        answered = []
        for r in user:
            latency_s = service_s + next(waits)
            answered.append(Record(_when(r) + latency_s, latency_s * 1000, r.ok, intended=r.intended))
        out.append(answered)
    return out


def growth_s_per_s(first_ms: float, last_ms: float, window: tuple[float, float]) -> float:
    """How fast a latency grew, in s per s, from the first third's mean to the last's.

    The two thirds' centres lie two thirds of the window apart. In an overload the model says
    ρ − 1: the backlog grows by λ − c/S a second and drains at c/S.
    """
    return (last_ms - first_ms) / 1000 / ((window[1] - window[0]) * 2 / 3)


# omission's rows: the closed loop as recorded and as HdrHistogram corrects it, the open loop
WAYS = {
    "recorded": "closed loop, as recorded",
    "corrected": "closed loop, corrected (HdrHistogram)",
    "open": "open loop, from the intended time",
}


def omission(
    closed: PerUser, since: float, interval_ms: float, opened: PerUser, percentiles: tuple[float, ...] = (50, 95, 99)
) -> tuple[pd.DataFrame, dict[str, int]]:
    """The same stalling server seen three ways: a closed loop as recorded, corrected (HdrHistogram), an open loop.

    A row per way, a `p<q>_ms` column per percentile; the closed loop's replies from `since` on,
    the open loop's latency from each request's intended time. Also the closed loop's counts,
    recorded and corrected (how many requests the correction adds back).
    """
    latencies = [r.ms for user in closed for r in user if r.ok and r.end >= since]
    fixed = corrected_percentiles(latencies, interval_ms, percentiles)
    open_ms = [r.from_intended_ms for user in opened for r in user if r.ok]
    seen = np.percentile(open_ms, percentiles) if open_ms else [math.nan] * len(percentiles)
    name = "p{:g}_ms".format
    table = pd.DataFrame(
        {
            WAYS["recorded"]: {name(q): v for q, v in fixed["recorded"].items()},
            WAYS["corrected"]: {name(q): v for q, v in fixed["corrected"].items()},
            WAYS["open"]: {name(q): float(v) for q, v in zip(percentiles, seen, strict=True)},
        }
    ).T
    return table, fixed["counts"]

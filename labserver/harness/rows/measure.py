"""From the records of a load run to throughput and latency figures.

Throughput is summed per user: each closed-loop user finishes requests at its own pace,
so (completions − 1) / (time from its first to its last completion) is exact whether the
flow is steady or comes in synchronized bursts (which per-second counts get wrong).

The warm-up is cut by what happened, not by the clock alone: it ends once every user has
finished `settle_requests` requests (all users spawned, connections open, each user in its
loop), and at the latest `warmup_s` after the first reply. With 100 ms requests that is
about 0.2 s instead of a fixed second: a 5 s run keeps 4.6 s of measurement, not 3.6 s.
A user that carried on from the stage before (locustfiles/pattern.py) is in its loop already
and needs no reply at all: a plan's later stages start measuring the moment the stage before
has drained.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from labserver.harness.rows.records import Record


@dataclass(frozen=True)
class Measured:
    rps: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    mean_ms: float
    requests: int  # finished after the warm-up
    failures: int  # failed after the warm-up
    window_s: float  # from the first to the last reply counted
    method: str  # "per-user" or "count"
    window_start: float = math.nan  # when the first reply counted came (same clock as the records)


def warmup_end(
    per_user: list[list[Record]], start: float, warmup_s: float = 1.0, settle_requests: int | Sequence[int] = 2
) -> float:
    """When the warm-up ends: once every user has finished `settle_requests` requests, at most `warmup_s` after `start`.

    A user with fewer replies than that (slow, queued requests) leaves the cap in place: its
    flow has not settled. `settle_requests=0` gives the plain fixed cut at `start + warmup_s`.
    A sequence gives each user its own count; a user with 0 is in its loop from `start` on.
    """
    cap = start + warmup_s
    if isinstance(settle_requests, int):
        if settle_requests <= 0:
            return cap
        settle_requests = [settle_requests] * len(per_user)
    if len(settle_requests) != len(per_user):
        raise ValueError(f"settle_requests: {len(settle_requests)} counts for {len(per_user)} users")
    pairs = list(zip(per_user, settle_requests, strict=True))
    if not per_user or any(len(records) < n for records, n in pairs):
        return cap
    settled = max((records[n - 1].end for records, n in pairs if n > 0), default=start)
    return max(start, min(cap, settled))


def measure(
    per_user: list[list[Record]], start: float, warmup_s: float = 1.0, settle_requests: int | Sequence[int] = 2
) -> Measured:
    """Throughput and latency of the requests that finished after the warm-up (see `warmup_end`)."""
    cut = warmup_end(per_user, start, warmup_s, settle_requests)
    after = [[r for r in records if r.end >= cut] for records in per_user]
    flat = [r for records in after for r in records]
    if not flat:
        nan = math.nan
        return Measured(nan, nan, nan, nan, nan, 0, 0, 0.0, "none")
    latencies = np.array([r.ms for r in flat])
    p50, p95, p99 = np.percentile(latencies, [50, 95, 99])
    failures = sum(1 for r in flat if not r.ok)
    first, last = min(r.end for r in flat), max(r.end for r in flat)
    if after and all(len(records) >= 2 for records in after):
        rps = sum((len(u) - 1) / (u[-1].end - u[0].end) for u in after if u[-1].end > u[0].end)
        method = "per-user"
    else:
        # Some user finished fewer than two requests after the warm-up (slow, queued requests):
        # then the flow is spread out, and the whole flow's rate is fair: its N − 1 intervals from
        # the first reply to the last. N replies over the time from the cut counts one interval
        # too many, and only part of the one the cut fell in: 3% over the rate of 30 replies a
        # blocked loop sends one by one every 100 ms (lesson 05's; docs/evidence.md).
        rps = (len(flat) - 1) / (last - first) if last > first else math.nan
        method = "count"
    return Measured(
        rps=float(rps),
        p50_ms=float(p50),
        p95_ms=float(p95),
        p99_ms=float(p99),
        mean_ms=float(latencies.mean()),
        requests=len(flat),
        failures=failures,
        window_s=float(last - first),
        method=method,
        window_start=float(first),
    )

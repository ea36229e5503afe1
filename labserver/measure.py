"""From the records of a load run to throughput and latency figures.

Throughput is summed per user: each closed-loop user finishes requests at its own pace,
so (completions − 1) / (time from its first to its last completion) is exact whether the
flow is steady or comes in synchronized bursts (which per-second counts get wrong).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

Record = tuple[float, float, bool]  # (finish time, latency in ms, ok)


@dataclass(frozen=True)
class Measured:
    rps: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    mean_ms: float
    requests: int  # finished after the warm-up
    failures: int  # failed after the warm-up
    window_s: float
    method: str  # "per-user" or "count"


def measure(per_user: list[list[Record]], start: float, warmup_s: float = 1.0) -> Measured:
    """Throughput and latency of the requests that finished after `start + warmup_s`."""
    after = [[r for r in records if r[0] >= start + warmup_s] for records in per_user]
    flat = [r for records in after for r in records]
    if not flat:
        nan = math.nan
        return Measured(nan, nan, nan, nan, nan, 0, 0, 0.0, "none")
    latencies = np.array([r[1] for r in flat])
    p50, p95, p99 = np.percentile(latencies, [50, 95, 99])
    failures = sum(1 for r in flat if not r[2])
    first, last = min(r[0] for r in flat), max(r[0] for r in flat)
    if after and all(len(records) >= 2 for records in after):
        rps = sum((len(r) - 1) / (r[-1][0] - r[0][0]) for r in after if r[-1][0] > r[0][0])
        method = "per-user"
    else:
        # Some user finished fewer than two requests after the warm-up (slow, queued requests):
        # then the flow is spread out, and a plain count over the window is fair.
        window = last - (start + warmup_s)
        rps = len(flat) / window if window > 0 else math.nan
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
    )

"""Why a run missed its before-prediction (load/pricing.py), as what its window measured names it.

A run and the prediction made before it differ by more than BEFORE_MISS when something the one-user prices did
not foresee moved it: others' CPU, the cores' speed against the pricing's, a worker's loop waiting for a core, the
server's or Locust's CPU per request against its price, or users moving in step. Each cause its window measured is
named, and whether the run's own CPU explains the miss (its explained prediction within BEFORE_MISS) or does not.
"""

from __future__ import annotations

import math
from typing import Any

from labserver.harness.plans.plan import Before
from labserver.harness.rows.usage import DISTURBED
from labserver.theory.bottlenecks import Bottleneck
from labserver.theory.demand import OneUser

# A window whose probe of the cores' speed (probe.probe_ms) reads this share off its priced value, in the direction
# the run missed its before-prediction, names the speed among the miss's causes. The probe alone disturbs no run: it
# is timed in the notebook's process, and does not foresee how fast the servers ran (docs/evidence.md)
SPEED_OFF = 0.15
# Where a run and its before-prediction differ by more than this share, its row names what its window measured
BEFORE_MISS = 0.10
# ... and its users moved in step where this share more of its replies came back to back than would at random
STEP_SHARE = 0.1
# ... and the cores were short for the server where a worker's loop was ready with no CPU free this share of it
WAITED = 0.05


def miss_cause(ratio: float, one: OneUser | None, before: Before | None, figures: dict[str, Any]) -> str:
    """Why a run missed its before-prediction by more than BEFORE_MISS, as its window measured it; '' within it."""
    if not math.isfinite(ratio) or abs(ratio - 1) <= BEFORE_MISS:
        return ""
    causes = []
    if figures["disturbed_cpu"] >= DISTURBED:  # NaN compares False
        causes.append(f"others took {figures['disturbed_cpu']:.2f} cores")
    speed = figures.get("core_speed", math.nan)
    if abs(speed - 1) >= SPEED_OFF and (speed > 1) == (ratio > 1):  # NaN compares False
        causes.append(f"in its window the cores ran {speed:.2f}× as fast as when it was priced")
    if figures.get("worker_waited", math.nan) >= WAITED:  # NaN compares False
        causes.append(f"a worker waited for a CPU {figures['worker_waited']:.0%} of the window")
    if one is not None:
        priced = one.worker_ms + one.pool_ms
        grown = figures["server_ms"] / priced
        if abs(grown - 1) > BEFORE_MISS:
            causes.append(f"server CPU/request {figures['server_ms']:.2f} ms, {grown:.2f}× the {priced:.2f} priced")
    generator = before.generator_ms if before is not None else math.nan
    # Locust dearer than its price takes cores from any run; cheaper, it moves only a run its price bound
    bound = before is not None and before.prediction.bottleneck == Bottleneck.GENERATOR
    off = figures["locust_ms"] / generator  # NaN compares False
    if off > 1 + BEFORE_MISS or (bound and off < 1 - BEFORE_MISS):
        causes.append(f"Locust CPU/request {figures['locust_ms']:.2f} ms, priced {generator:.2f}")
    explained = figures["ratio"]
    if abs(explained - 1) <= BEFORE_MISS:
        causes.append(f"its own CPU explains it ({explained:.2f} of the prediction priced with it)")
    elif math.isfinite(explained):
        causes.append(f"not its CPU alone ({explained:.2f} of the prediction priced with it)")
        if figures["bunched"] > figures["bunched_at_random"] + STEP_SHARE:  # NaN compares False
            causes.append(
                f"users in step: {figures['bunched']:.0%} of replies came right after another, "
                f"{figures['bunched_at_random']:.0%} would at random"
            )
    return "; ".join(causes) or "none measured"

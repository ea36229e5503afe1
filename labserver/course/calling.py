"""Lesson 12's readings: what a new httpx client costs, timed here, and each run beside the model.

A new `httpx.AsyncClient` builds an SSL context and loads the certificates it trusts, even for
a plain http:// call: the notebook times that here, as the model times fib, and prices the
`callnew` endpoint with it.
"""

from __future__ import annotations

import math
import time

import httpx
import pandas as pd

from labserver.course import sizing
from labserver.theory import model
from labserver.theory.workload import Workload


def client_ms(repeat: int = 5) -> float:
    """The CPU of making one `httpx.AsyncClient` here, in ms: the best of `repeat`. Made and dropped unused:
    it opens no connection, and a notebook's running event loop could not await its `aclose`."""
    best = math.inf
    for _ in range(repeat):
        started = time.process_time()
        httpx.AsyncClient()
        best = min(best, time.process_time() - started)
    return best * 1000


def predicted(plan: sizing.Plan, cores: float, new_client_ms: float) -> pd.DataFrame:
    """The model for each planned run: `callnew` pays a new client's CPU on the event loop, `callreused` none."""
    rows = []
    for run in plan.runs:
        workload = Workload.of(run)
        price = new_client_ms if run["pattern"] == "callnew" else 0.0
        p = model.predict(workload, plan.settings(run["server"], cores), cores=cores, cpu_ms_per_task=price)
        rows.append(
            {
                "pattern": run["pattern"],
                "users": run["users"],
                "io_ms": run["io_ms"],
                "client_cpu_ms": price,
                "predicted_rps": round(p.rps, 1),
                "bottleneck": p.bottleneck,
            }
        )
    return pd.DataFrame(rows)


def extra_cpu_ms(runs: pd.DataFrame) -> float:
    """The server CPU per request `callnew` spent over `callreused`'s, in ms: what each new client cost."""
    cost = runs.set_index("pattern")["server_ms"]
    return float(cost["callnew"] - cost["callreused"])

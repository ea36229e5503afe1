"""Lesson 14's readings: how long a cheap route waits while another route of its worker computes.

A cheap request that comes at a random moment finds the worker's CPU work where that work
runs. On the event loop, the loop is busy a share ρ of the time, one heavy request's CPU S at
a time: the cheap request waits nothing with chance 1 − ρ, and otherwise the rest of the S in
progress, any part of it as likely: a wait whose mean is ρ S / 2 and whose 95th percentile is
S (1 − 0.05 / ρ) (none when ρ ≤ 0.05). S is read as the heavy request's own time less that of
the same request without fib (their medians): its fib as the busy server runs it, the
cheap requests' own CPU left out. In a thread, the loop's thread has to win the GIL back
for each turn of the loop while the other thread computes, and waits up to the interpreter's
switch interval for it (5 ms): a few of those, whatever S is. In a process of its own, on a core
of its own, the work takes nothing from the loop. Each wait is the cheap request's round trip
less its median with nothing else running (the run without fib).
"""

from __future__ import annotations

import sys

import pandas as pd

from labserver.demo.patterns import TRAITS
from labserver.demo.traits import Where
from labserver.harness import results
from labserver.harness.probes import Probes

TAIL = 0.95  # the percentile a lesson reads: p95
SWITCH_MS = sys.getswitchinterval() * 1000  # CPython's default, as the server's interpreter has it (5 ms)
WHERE = {Where.LOOP: "event loop", Where.THREAD_POOL: "thread pool", Where.PROCESS_POOL: "process pool"}


def where(pattern: str, cpu_n: int) -> str:
    """Where a run's CPU work runs: "event loop", "thread pool", "process pool", or "none" (no fib)."""
    return WHERE[TRAITS[pattern].computes] if cpu_n else "none"


def loop_wait_ms(busy: float, cpu_ms: float, q: float = TAIL) -> float:
    """The `q` percentile of a random arrival's wait for a loop busy `busy` of the time, `cpu_ms` at a time."""
    if busy <= 1 - q:
        return 0.0
    return cpu_ms * (1 - (1 - q) / min(busy, 1.0))


def loop_mean_wait_ms(busy: float, cpu_ms: float) -> float:
    """The mean wait of a random arrival for a loop busy `busy` of the time, `cpu_ms` at a time."""
    return min(busy, 1.0) * cpu_ms / 2


KEPT = ["where", "cheap_n", "cheap_p50_ms", "cheap_p95_ms", "cheap_mean_ms", "wait_p95_ms", "fib_run_ms", "busy"]


def cheap(runs: pd.DataFrame, probes: Probes, keep: bool = True) -> pd.DataFrame:
    """The runs with the cheap requests sent in each one's window: how many, their median and p95 round trip,
    each one's `wait_p95_ms` and `wait_mean_ms` (less the run without fib's median), where its fib ran, its
    fib's time in the server (`fib_run_ms`: its median latency less the run without fib's) and how busy that
    kept the worker (`busy`: its requests a second × fib_run_ms). `keep`: each run's KEPT columns are kept
    in its folder (results.attach), where the decision card reads them."""
    rows = []
    for _, run in runs.iterrows():
        ms = probes.within(*results.window(run))["ms"]
        rows.append(
            {
                "cheap_n": len(ms),
                "cheap_p50_ms": ms.median(),
                "cheap_p95_ms": ms.quantile(TAIL),
                "cheap_mean_ms": ms.mean(),
            }
        )
    out = pd.concat([runs.reset_index(drop=True), pd.DataFrame(rows)], axis=1)
    out["where"] = [where(p, n) for p, n in zip(out["pattern"], out["cpu_n"], strict=True)]
    quiet = out[out["where"] == "none"].iloc[0]
    out["wait_p95_ms"] = out["cheap_p95_ms"] - quiet["cheap_p50_ms"]
    out["wait_mean_ms"] = out["cheap_mean_ms"] - quiet["cheap_p50_ms"]
    out["fib_run_ms"] = out["p50_ms"] - quiet["p50_ms"]
    out["busy"] = out["rps"] * out["fib_run_ms"] / 1000
    out["predicted_wait_p95_ms"] = [_predicted(r) for _, r in out.iterrows()]
    out["predicted_wait_mean_ms"] = [
        loop_mean_wait_ms(r["busy"], r["fib_run_ms"]) if r["where"] == "event loop" else float("nan")
        for _, r in out.iterrows()
    ]
    if keep:
        for _, run in out.iterrows():
            results.attach(run["run_id"], {k: _plain(run[k]) for k in KEPT})
    return out


def _plain(value):
    """A numpy scalar as the Python number JSON writes (a str stays one)."""
    return value.item() if hasattr(value, "item") else value


def _predicted(run: pd.Series) -> float:
    """A run's predicted p95 wait: the loop's from its busy share; none beside a process or no fib; a thread's
    is bounded (a switch interval a turn), not predicted: NaN."""
    if run["where"] == "event loop":
        return loop_wait_ms(run["busy"], run["fib_run_ms"])
    if run["where"] == "thread pool":
        return float("nan")
    return 0.0


def foreseen(fib_ms: float, users: int, io_ms: int) -> pd.DataFrame:
    """Before the runs: with fib on the loop, how busy `users` closed-loop users keep it and the cheap
    route's p95 wait that gives (each user's request: io_ms, then fib on the loop)."""
    busy = min(1.0, users * fib_ms / (io_ms + fib_ms))
    return pd.DataFrame(
        [
            {"where": "event loop", "fib_ms": round(fib_ms, 1), "busy": round(busy, 2),
             "foreseen_wait_p95_ms": round(loop_wait_ms(busy, fib_ms), 1)},
            {"where": "thread pool", "fib_ms": round(fib_ms, 1), "busy": round(busy, 2),
             "foreseen_wait_p95_ms": f"a few × {SWITCH_MS:.0f}"},
            {"where": "process pool", "fib_ms": round(fib_ms, 1), "busy": round(busy, 2),
             "foreseen_wait_p95_ms": 0.0},
        ]
    )  # fmt: skip

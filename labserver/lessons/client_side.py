"""Lesson 06, the client side: its plan and parameter checks, and its parameters for each run profile.

Its rows of the decision card (course/card.py): `CALLING_SERVICES`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from labserver import checks
from labserver.lessons.card_row import NOT_YET, Measured, Row, runs_of
from labserver.lessons.lesson import Lesson
from labserver.theory import clients as client_model

# 06 counts requests, not seconds: `max_run_s` bounds each run's expected length instead.
LESSON = Lesson(
    "06_client_side",
    profiles={
        "quick": {},
        "live": {},  # its quick run cell takes about 20 s already
        "full": {"counts": [100, 1000], "concurrency": [10, 40, 100, 1000], "max_run_s": 60.0},
        "smoke": {"counts": [20, 40], "concurrency": [4], "io_ms": 20, "max_run_s": 1.0},
    },
)


@dataclass(frozen=True)
class ClientSide:
    counts: list[int]
    concurrency: list[int]
    planned: pd.DataFrame  # every run and its expected length; `run` is false for the runs left out as too long


def plan(
    *,
    clients: list[str],
    patterns: list[str],
    counts: list[int] | int,
    concurrency: list[int] | int,
    io_ms: int,
    threads: int,
    max_run_s: float,
) -> ClientSide:
    """Lesson 06: every client × endpoint × concurrency × count, the server's threads, and the longest run."""
    counts = checks.parameter("counts", counts, list[int])
    concurrency = checks.parameter("concurrency", concurrency, list[int])
    planned = client_model.plan(
        clients, patterns, counts, concurrency, io_ms=io_ms, max_run_s=max_run_s, threads=threads
    )
    return ClientSide(counts, concurrency, planned)


def reused_client(runs: pd.DataFrame) -> Measured:
    """Lesson 06: client CPU per request of a `requests.Session` per thread, and of aiohttp, over `requests.get`'s."""
    if runs.empty or "client" not in runs or "client_ms" not in runs:
        return Measured(math.nan, NOT_YET)
    chosen = runs[runs["lesson"].fillna("").astype(str).str.startswith("06") & runs["valid"].fillna(False).astype(bool)]
    chosen = chosen[chosen["pattern"] == "sequential"]
    if chosen.empty:
        return Measured(math.nan, NOT_YET)
    top = chosen[(chosen["users"] == chosen["users"].max()) & (chosen["requests"] == chosen["requests"].max())]
    cost = top.groupby("client")["client_ms"].median()
    if not {"threadpool", "session"} <= set(cost.index):
        return Measured(math.nan, NOT_YET)
    ratio = float(cost["session"] / cost["threadpool"])
    text = f"a Session costs {ratio:.2f}× the client CPU per request of `requests.get`"
    if "aiohttp" in cost:
        text += f", aiohttp {cost['aiohttp'] / cost['threadpool']:.2f}×"
    return Measured(ratio, f"{text} ({int(top['users'].iloc[0])} in flight){new_client(runs)}")


def new_client(runs: pd.DataFrame) -> str:
    """Lesson 12's figure beside lesson 06's: the server CPU per request a new httpx client cost, where measured."""
    rows = runs_of(runs, "12", ("callnew", "callreused"))
    rows = rows[rows["tasks"] == 1] if "tasks" in rows else rows  # one call a request: the fan-out's make four
    if "server_ms" not in rows or not {"callnew", "callreused"} <= set(rows["pattern"]):
        return ""
    cost = rows.groupby("pattern")["server_ms"].median()
    return (
        f"; in a server, a new httpx client per request cost {cost['callnew'] - cost['callreused']:.0f} ms of CPU more"
    )


# Its rows of the decision card (course/card.py), each with the figure that shows it
CALLING_SERVICES = Row(
    "Calling other services over HTTP (a client in your endpoint or script)",
    "one client, reused: an `httpx.AsyncClient` or aiohttp session in `async def`, a `requests.Session` per thread",
    "in flight / S, in flight capped by the client's pool (httpx, aiohttp: 100), until its core: 1 / its CPU",
    "calls slower than the service answers (a connection each), or httpx's PoolTimeout; the client near a core",
    "Session / requests.get, and aiohttp / requests.get, client CPU per request",
    ("06", "12"),
    reused_client,
)

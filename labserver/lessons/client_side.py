"""Lesson 06, the client side: its plan and parameter checks, and its parameters for each run profile."""

from __future__ import annotations

from typing import NamedTuple

import pandas as pd

from labserver import checks
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


class ClientSide(NamedTuple):
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

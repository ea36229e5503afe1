"""Lesson 98, the instrument: its plan and parameter checks, and its parameters for each run profile."""

from __future__ import annotations

from dataclasses import dataclass

from labserver import checks
from labserver.demo import cpus
from labserver.harness.load.checks import check_sweep
from labserver.lessons.lesson import Lesson

LESSON = Lesson(
    "98_the_instrument",
    profiles={
        "quick": {},
        "live": {"users": [100, 800], "requests_users": [100], "duration_s": 3},
        "full": {"users": [50, 100, 200, 400, 800], "duration_s": 15},
        "smoke": {"users": [5, 10], "requests_users": [10], "ceiling_users": 20, "duration_s": 2},
    },
)


@dataclass(frozen=True)
class Instrument:
    users: list[int]
    requests_users: list[int]
    generators: int  # Locust processes of the busiest run
    ceiling: str  # the busiest run's client, as its rows and charts name it


def plan(
    *,
    users: list[int] | int,
    requests_users: list[int] | int,
    ceiling_users: int,
    io_ms: int,
    duration_s: int,
    whole_cores: int | None = None,
) -> Instrument:
    """Lesson 98: the runs of each user class, and the busiest run over as many Locust processes as `whole_cores`."""
    users = checks.parameter("users", users, list[int])
    requests_users = checks.parameter("requests_users", requests_users, list[int])
    check_sweep(["sequential"], users + requests_users, io_ms=io_ms, duration_s=duration_s)
    # Two Locust processes for the busiest run, one per usable CPU: where the lab may use one, one process.
    generators = min(2, cpus.whole_cores() if whole_cores is None else whole_cores)
    check_sweep(["sequential"], [ceiling_users], io_ms=io_ms, duration_s=duration_s, processes=generators)
    return Instrument(
        users, requests_users, generators, f"FastHttpUser, {generators} process" + "es" * (generators > 1)
    )

"""What one run sends: a pattern under closed-loop users or an open loop's arrival rate, and each request's work.

One typed value from a lesson's short call to the checks, the Locust plan, the model and the row
on disk; the server's side of a run is its `Settings` (demo/settings.py). A lesson writes a run as
a dict (`{"pattern": "gather", "users": 50}`): it becomes a Workload at the edge (`Workload.of`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from labserver.checks import choice, whole
from labserver.demo.patterns import PATTERNS, TRAITS
from labserver.demo.routes import SHOP
from labserver.demo.traits import Hold, Traits, Where
from labserver.demo.work import check_bounds

USERS_MAX = 2000
DURATION_MAX_S = 600
DURATION_DEFAULT_S = 5
RATE_MAX = 5000  # arrivals per second: one Locust process sends about 2,000 req/s on its core
# A database route (demo/routes.SHOP) declares no traits: lesson 07 models it on its own (theory/pools.py),
# and this model prices it as an awaited request computing on the loop.
AWAITED = Traits(computes=Where.LOOP, waits=(Hold.NOTHING,))


def traits_of(pattern: str) -> Traits:
    """What `pattern` does with a request, as its module declares it (demo/patterns); AWAITED for any other endpoint."""
    return TRAITS.get(pattern, AWAITED)


@dataclass(frozen=True)
class Workload:
    """A run's load: `users` closed-loop users (or `rate` arrivals a second) on `pattern` for `duration_s` s."""

    pattern: str  # the endpoint: a concurrency pattern (demo/patterns) or a database route (demo/routes.SHOP)
    users: int  # closed-loop users, each sending its next request when its last reply comes
    tasks: int = 1  # independent sub-tasks per request
    io_ms: int = 0  # simulated I/O wait per sub-task, in ms
    cpu_n: int = 0  # fib(cpu_n) of CPU work per sub-task
    duration_s: int = DURATION_DEFAULT_S
    rate: float = 0.0  # arrivals per second of an open loop (lesson 08); 0: a closed loop of `users`
    drain_s: float = 0.0  # an open loop's last seconds, with no new arrival: its backlog is answered, and counted

    @classmethod
    def of(cls, given: Mapping[str, Any]) -> Workload:
        """The workload named in `given` (a run's dict, a row on disk): the names it knows, the rest left out.

        An open loop (a `rate`) needs no users: its one schedule runs in one user.
        """
        if "pattern" not in given or ("users" not in given and not given.get("rate")):
            raise ValueError(f"a run needs a pattern, and users or a rate, got {dict(given)!r}")
        known = {f.name: given[f.name] for f in fields(cls) if given.get(f.name) is not None}
        return cls(**{"users": 1, **known})

    @property
    def traits(self) -> Traits:
        """What its pattern does with a request: the questions the model asks instead of its name."""
        return traits_of(self.pattern)

    def check(self) -> None:
        """Raise ValueError naming what to change, before any process starts."""
        choice("pattern", self.pattern, [*PATTERNS, *SHOP])
        whole("users", self.users, 1, USERS_MAX)
        if self.rate:
            check_rate(self.rate)
        whole("duration_s", self.duration_s, 1, DURATION_MAX_S)
        if self.rate and not 0 <= self.drain_s < self.duration_s:
            raise ValueError(
                f"drain_s must be from 0 to less than duration_s ({self.duration_s}), got {self.drain_s!r}"
            )
        problems = check_bounds(self.tasks, self.io_ms, self.cpu_n)
        if problems:
            raise ValueError("; ".join(msg for _, msg in problems))


def check_rate(rate: float) -> None:
    """An open loop's rate: a number of arrivals per second above 0 and at most RATE_MAX."""
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate <= RATE_MAX:
        raise ValueError(f"rate must be a number of arrivals per second above 0 and at most {RATE_MAX}, got {rate!r}")

"""Lesson sizes that follow the machine: users and worker counts from the cores this process may use.

A lesson's parameters cell says `0` (or `[]`) for a size that follows the machine; the setup
cell turns it into a number here, so that each claim's effect shows on 1 core as on 64 and a
learner's run stays as short on a big machine as on a small one.
"""

from __future__ import annotations

import math

from labserver.demo.settings import WORKERS_MAX

# A fib request's CPU is a fraction of its round trip through Locust and the loop: ten users per core
# keep a process pool's cores busy with room to spare, also with lesson 03's 50 ms of I/O per request
# (fib(25)'s ~15 ms needs (15 + 50) / 15 ≈ 4.3 users per core).
USERS_PER_CORE = 10
LEAST_USERS = 20  # below this, the one-core patterns' queue is too short to show the GIL's bound


def cpu_users(users: int, cores: float) -> int:
    """`users` if set (> 0), else enough closed-loop users to keep `cores` busy with CPU-bound requests."""
    if users > 0:
        return users
    return max(LEAST_USERS, math.ceil(USERS_PER_CORE * cores))


def worker_counts(workers: list[int], cores: float) -> list[int]:
    """`workers` if given, else 1 (the baseline), the whole usable cores, and one past them.

    No count passes the server's bound: where the cores reach it, "one past them" is not run
    and lesson 04 says its claim on it cannot be shown.
    """
    if workers:
        return list(workers)
    whole = max(1, math.floor(cores + 1e-9))
    return sorted({min(n, WORKERS_MAX) for n in (1, whole, whole + 1)})

"""The work one request does: CPU (fib) and simulated I/O, and the bounds on both.

Kept free of FastAPI and pandas imports: process-pool children import this module,
and every import here is paid again by each of them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache

TASKS_MAX = 100
IO_MS_MAX = 10_000
CPU_N_MAX = 32
# Room for the Locust gather article's three 5 s waits, and no more: one request must not hold a worker for minutes.
TOTAL_IO_MS_MAX = 30_000
# fib(32) takes about 0.45 s in CPython on a laptop core; four of them is about 2 s.
CPU_BUDGET_TASKS_AT_MAX = 4


def fib(n: int) -> int:
    """Naive recursive Fibonacci: pure-Python CPU work, which runs only while its thread holds the GIL (in 5 ms turns
    where other threads want it)."""
    return n if n < 2 else fib(n - 1) + fib(n - 2)


MIB = 2**20


@cache
def _zeros(mib: int) -> memoryview:
    # Made on first use, not at import: every process-pool child imports this module.
    return memoryview(bytes(mib * MIB))


def digest(mib: int) -> str:
    """SHA-256 of `mib` MiB: CPU work in C that lets go of the GIL while it hashes (hashlib does, past 2 KiB)."""
    return hashlib.sha256(_zeros(mib)).hexdigest()


@cache
def fib_calls(n: int) -> int:
    """How many calls `fib(n)` makes: its CPU cost in units that do not depend on the machine."""
    return 1 if n < 2 else 1 + fib_calls(n - 1) + fib_calls(n - 2)


CPU_CALLS_MAX = CPU_BUDGET_TASKS_AT_MAX * fib_calls(CPU_N_MAX)


@dataclass(frozen=True)
class Work:
    """One request's work: `tasks` sub-tasks, each waiting `io_ms` and computing fib(`cpu_n`)."""

    tasks: int = 1
    io_ms: int = 0
    cpu_n: int = 0

    @property
    def io_s(self) -> float:
        return self.io_ms / 1000


def check_bounds(tasks: int, io_ms: int, cpu_n: int) -> list[tuple[str, str]]:
    """Every bound the request breaks, as (parameter, message); empty when it is within all of them."""
    problems = []
    if not 1 <= tasks <= TASKS_MAX:
        problems.append(("tasks", f"tasks must be between 1 and {TASKS_MAX}, got {tasks}"))
    if not 0 <= io_ms <= IO_MS_MAX:
        problems.append(("io_ms", f"io_ms must be between 0 and {IO_MS_MAX}, got {io_ms}"))
    if not 0 <= cpu_n <= CPU_N_MAX:
        problems.append(("cpu_n", f"cpu_n must be between 0 and {CPU_N_MAX}, got {cpu_n}"))
    if problems:
        return problems
    if tasks * io_ms > TOTAL_IO_MS_MAX:
        problems.append(
            ("io_ms", f"tasks × io_ms must be at most {TOTAL_IO_MS_MAX} ms, got {tasks} × {io_ms} = {tasks * io_ms}")
        )
    if tasks * fib_calls(cpu_n) > CPU_CALLS_MAX:
        problems.append(
            (
                "cpu_n",
                f"tasks × fib(cpu_n) must be at most {CPU_BUDGET_TASKS_AT_MAX} × fib({CPU_N_MAX}) "
                f"(about 2 s of CPU), got {tasks} × fib({cpu_n})",
            )
        )
    return problems

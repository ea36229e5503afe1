"""What a pattern does with a request, as the model reads it: where it computes, what its waits hold.

Each pattern module declares its `TRAITS` beside its endpoint; the registry (patterns/__init__.py)
collects them, and the theory asks them its questions (does a wait hold a thread? do the sub-tasks
overlap?) instead of testing a pattern's name. The standard library only: every worker imports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Where(StrEnum):
    """Where a request's CPU work (fib, or a digest in C) runs."""

    LOOP = "event loop"  # on the worker's event loop: nothing else on that worker runs meanwhile
    THREAD_POOL = "thread pool"  # in a thread of the worker's pool, under the worker's GIL
    # in a thread of the worker's pool, in C code that lets go of the GIL while it runs (hashlib on a large
    # buffer): each thread computes on a core of its own, up to the machine's
    RELEASED = "thread pool, GIL released"
    PROCESS_POOL = "process pool"  # in the worker's pool of processes, each with a GIL and a core of its own
    # in the worker's pool of interpreters (PEP 734): threads of its process, each interpreter with a GIL and
    # a core of its own; their CPU is the worker process's
    INTERPRETER_POOL = "interpreter pool"


# Where the work runs in a pool of `procs` per worker, each member with a GIL of its own.
POOLS = frozenset({Where.PROCESS_POOL, Where.INTERPRETER_POOL})


class Hold(StrEnum):
    """What one wait of a sub-task holds while it lasts."""

    NOTHING = "nothing"  # awaited: the loop serves other requests meanwhile
    THREAD = "a pool thread"  # blocking, in a thread of the pool: one request a thread
    # blocking, in a thread of the event loop's default executor (asyncio.to_thread): min(32, CPUs + 4) a worker
    EXECUTOR = "a thread of the loop's executor"
    LOOP = "the event loop"  # blocking, on the loop: no request on that worker moves meanwhile


@dataclass(frozen=True)
class Traits:
    """A pattern's traits: where its sub-tasks compute, what each of their io_ms waits holds, whether they overlap."""

    computes: Where
    waits: tuple[Hold, ...]  # each sub-task's waits of io_ms, in order
    overlaps: bool = False  # the sub-tasks run at once (asyncio.gather): a request waits one io_ms, not tasks × io_ms
    connection: bool = False  # each wait also holds one of the worker's `db_pool` connections (a pooled session)
    # each wait is a call to another service, through a limit the worker's requests share: at most this many
    # calls in flight per worker (the app's one client's connections, or a semaphore); 0: no shared limit
    calls: int = 0
    # its CPU on the event loop comes before its wait, and its users move in step (lesson 12's new client): the loop
    # computes every user's share, then every user waits, with nothing for the loop to do
    loop_in_step: bool = False

    def holds(self, what: Hold) -> int:
        """How many of a sub-task's waits hold `what`."""
        return self.waits.count(what)

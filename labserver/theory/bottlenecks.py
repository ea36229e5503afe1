"""What sets a predicted throughput: `Bottleneck`, in the words of the `bottleneck` column and the lessons, and
its kinds as sets (the machine's cores, any core, any CPU, the server's or its load generator's CPU), which a
`bottleneck` column is tested against with `isin`.
"""

from __future__ import annotations

from enum import StrEnum


class Bottleneck(StrEnum):
    """What sets a predicted throughput, in the words of the `bottleneck` column and the lessons.

    A few predictions name theirs with figures in the words (lesson 06's "server threads (40)",
    the queue's "arrivals (open loop, ρ 0.50)"): those stay text, and are none of these.
    """

    # waits: the users, or the server's slots
    USERS = "users"
    THREADS = "threads"
    EVENT_LOOP = "event loop"
    CONNECTION_POOL = "connection pool"  # lesson 07 (pools.py)
    CALLS = "calls in flight"  # lesson 12: an HTTP client's connections, or a semaphore, shared by a worker's requests
    THREAD_POOL = "thread pool"  # lesson 07's sync endpoints
    EXECUTOR = "the loop's executor"  # asyncio.to_thread's pool, min(32, CPUs + 4) threads a worker (lesson 05)
    ONE_AT_A_TIME = "one request at a time"  # lesson 06's client loop (clients.py)
    # the server's CPU
    CORES = "cores"  # the process pool's, or the workers' where they outnumber the cores
    GIL = "GIL (one core per worker)"
    IN_STEP = "GIL (threads in step)"
    LOOP_IN_STEP = "one core (users in step on the event loop)"  # lesson 12's new client per request: one thread
    # lesson 10, and C code that lets go of the GIL: the scheduler's time slices in place of the GIL's turns
    SLICED = "cores (threads in step, in time slices)"
    WORKER_CPU = "CPU (one core per worker)"  # lesson 10: an event loop without a GIL is still one thread
    SERVER_CPU = "CPU of the server (one core per worker)"  # lesson 06
    # the cores every process of the machine shares
    MACHINE = "cores (the machine's, shared)"
    MACHINE_AND_DATABASE = "cores (the machine's, shared with PostgreSQL)"  # lesson 07
    # the sender's CPU
    GENERATOR = "CPU of the load generator (one core per Locust process)"
    CLIENT_CPU = "client CPU (one core)"  # lesson 06
    NO_WORK = "no work to model"


# Kinds of bottleneck, as sets: a `bottleneck` column (text) is tested with `isin`.
MACHINE_BOUND = frozenset({Bottleneck.MACHINE, Bottleneck.MACHINE_AND_DATABASE})
CORE_BOUND = frozenset(
    {Bottleneck.CORES, Bottleneck.GIL, Bottleneck.IN_STEP, Bottleneck.LOOP_IN_STEP, Bottleneck.SLICED, *MACHINE_BOUND}
)  # cores, or a GIL's
CPU_BOUND = frozenset(
    {*CORE_BOUND, Bottleneck.WORKER_CPU, Bottleneck.SERVER_CPU, Bottleneck.GENERATOR, Bottleneck.CLIENT_CPU}
)  # any CPU: a run put there is not an I/O-bound one
# The server's CPU, its load generator's, or the cores they share: any CPU bound but a client program's (lesson 06)
SERVER_OR_GENERATOR_CPU = CPU_BOUND - {Bottleneck.CLIENT_CPU}

"""What one request cost, in CPU, where it ran: the inputs that price every CPU bound of the model.

A run's CPU meters (the harness) give each process's CPU time over the measurement window;
divided by the requests served in it they give the demand D of each place the work runs
(Denning and Buzen's operational laws: utilisation U = X · D). The model prices its CPU
bounds with these, measured in the same window as the throughput they predict, instead of
timing fib somewhere else: on a shared or throttled machine the speed of a core drifts by
±20% from one second to the next, and a price taken in another process at another moment
carries that drift into every prediction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# What a run's prediction was priced with where its window measured no demand: the one made before the run
UNMEASURED = "before the run (no demand measured)"


@dataclass(frozen=True)
class Demand:
    """CPU milliseconds per request, by where they were spent; and how long a request held a database connection.

    `db_hold_ms` is no CPU: it is the time one use of a pooled connection took under the run's
    load, measured in the same window (lesson 07's endpoints; NaN elsewhere). It prices the
    connection pool's bound as the CPU figures price the cores'.
    """

    worker_ms: float  # in the uvicorn workers: the event loop, its thread pool, FastAPI; under each worker's GIL
    pool_ms: float = 0.0  # in the workers' process pools
    others_ms: float = 0.0  # everything else on the machine meanwhile: Locust, a database, the notebook
    generator_ms: float = 0.0  # of `others_ms`, the load generator's (Locust's): a station every request visits too
    generators: int = 1  # Locust processes: each runs its users on one core (gevent, one thread)
    db_hold_ms: float = math.nan  # a pooled database connection's time per use, lent to returned
    # share of the window a worker's event loop was ready to run with no CPU free for it (mean of the
    # workers; NaN: not measured): the part of its core other processes took while it had work
    worker_waited: float = math.nan
    # S, one request's time with nothing else in flight, measured before a run (NaN: not measured): what its calls
    # to another service took then, beyond io_ms (lesson 12)
    alone_ms: float = math.nan
    # the measurement window these figures come from (epoch s; None: not from a run), for a lesson's own
    # model that prices what happened in it (lesson 08: the share of it a stall held the loop)
    window: tuple[float, float] | None = None

    @property
    def machine_ms(self) -> float:
        """The whole machine's CPU per request: what the cores it may use must supply."""
        return self.worker_ms + self.pool_ms + self.others_ms

    @property
    def known(self) -> bool:
        return math.isfinite(self.worker_ms) and self.worker_ms > 0


def per_request_ms(cores: float, rps: float) -> float:
    """CPU milliseconds per request from the cores a process kept busy at `rps` requests per second."""
    return cores / rps * 1000 if rps and rps > 0 and math.isfinite(cores) else math.nan


def measured(
    worker_cores: float,
    pool_cores: float,
    others_cores: float,
    rps: float,
    *,
    generator_cores: float = math.nan,
    generators: int = 1,
    db_hold_ms: float = math.nan,
    worker_waited: float = math.nan,
    window: tuple[float, float] | None = None,
) -> Demand:
    """A run's demand from the cores its parts kept busy while it served `rps` requests per second,
    the connection hold it measured (`db_hold_ms`, NaN: none) and the share of the window its
    workers' loops waited for a CPU (`worker_waited`, NaN: not measured), over `window`."""
    generator_ms = per_request_ms(generator_cores, rps)
    return Demand(
        worker_ms=per_request_ms(worker_cores, rps),
        pool_ms=max(0.0, per_request_ms(pool_cores, rps)) if math.isfinite(pool_cores) else math.nan,
        others_ms=max(0.0, per_request_ms(others_cores, rps)) if math.isfinite(others_cores) else math.nan,
        generator_ms=generator_ms if math.isfinite(generator_ms) else 0.0,
        generators=max(1, generators),
        db_hold_ms=db_hold_ms,
        worker_waited=worker_waited,
        window=window,
    )


@dataclass(frozen=True)
class OneUser:
    """What one request cost with one user and nothing else in flight, measured on the run's own server before it.

    The prices of a run's before-prediction (harness/load/pricing.py): S, the time one request takes
    alone, and the server's CPU per request by where it ran: the workers' event-loop threads,
    their other threads (the thread pool), and the rest of the server's processes (process-pool
    children). `held_ms` is a pooled database connection's hold per use (NaN: no database).
    """

    service_ms: float
    loop_ms: float
    threads_ms: float
    pool_ms: float
    requests: int
    held_ms: float = math.nan
    neighbours_ms: float = 0.0  # CPU per request of the processes that serve the server: a database's
    seconds: float = math.nan  # how long the pricing took
    # one request's time while the CPU was priced: HOT_USERS users each sending the next as the last came back.
    # About S where the requests overlap; about HOT_USERS × S where they take turns (a held event loop)
    busy_ms: float = math.nan
    reply_bytes: float = 0.0  # the mean reply's body, in bytes: what the load generator reads of each
    # the pricing's client's own CPU per request alone (sending, reading the reply): part of S, and what the load
    # generator's price stands for in a run, where each user's round trip adds it to the server's
    client_ms: float = 0.0
    # the cores' speed while the CPU was priced: a fixed piece of Python's CPU time, in ms (harness/processes/probe.py)
    probe_ms: float = math.nan

    @property
    def worker_ms(self) -> float:
        """CPU per request in the workers, under each worker's GIL: its loop's and its threads'."""
        return self.loop_ms + self.threads_ms

    def demand(self, generator_ms: float, generators: int = 1, rest_ms: float = 0.0) -> Demand:
        """These prices as the model's Demand, with the load generator's CPU per request priced beforehand, and the
        rest of the machine's (`rest_ms`: the kernel's networking, where it was priced)."""
        return Demand(
            worker_ms=self.worker_ms,
            pool_ms=self.pool_ms,
            others_ms=generator_ms + self.neighbours_ms + rest_ms,
            generator_ms=generator_ms,
            generators=max(1, generators),
            db_hold_ms=self.held_ms,
            alone_ms=self.service_ms,
        )

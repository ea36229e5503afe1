"""One make-up's prices measured on its server: its CPU per request by where it ran, and S, one request alone.

First, HOT_USERS users (HOT_MOST, for a run of as many or more) send requests back to back on kept-alive
connections, without the pattern's waits, after some that are not counted (they start the threads or pool
processes): a server kept busy, as under load, with as many requests in flight contending for its locks. For a run
of more than SPREAD_FROM users, they take turns over as many connections as the run holds (`connections`), so the
server's work for each request is spread over as much memory as the run's: a core's caches hold a few connections'
objects, not hundreds. Calls made at once to another service through the server's client (a fan-out) keep their
waits, at the run's users: its pool's CPU per call grows with the connections the waits hold (`waits_kept`). Then
one user's requests with their waits, for ALONE_S, give S. The requests go out through client.py; the server's CPU
is read per thread (threads.py), and a server on another machine is priced by its meter. The processes that serve
the server (`neighbours()`: a database) are priced beside it.
"""

from __future__ import annotations

import dataclasses
import math
import time
import urllib.parse
from collections.abc import Hashable
from typing import TYPE_CHECKING, NamedTuple, TypedDict

from labserver import protocol
from labserver.demo.calls import CLIENT_CONNECTIONS
from labserver.harness.load.client import Ask, Sent, send
from labserver.harness.load.threads import Threads, split, tree_threads
from labserver.harness.plans.plan import Stage
from labserver.harness.processes.meters import tree_seconds
from labserver.harness.processes.probe import median, probe_each
from labserver.harness.rows import publish
from labserver.harness.servers.launcher import LabServer
from labserver.harness.servers.server import Server
from labserver.theory.demand import OneUser

if TYPE_CHECKING:
    from labserver.theory.workload import Workload

# S is the mean of one user's requests over at least this long: a wait of hundreds of ms is priced by one request
# as well as by three, but one request of a few ms can read a third over its mean (an idle server's wake-up)
ALONE_S = 0.05
# Users whose requests, back to back and without their waits, price the server's CPU: one would leave the server
# idle between its requests, and every request would pay for waking it (2-6 times a busy server's CPU per request)
HOT_USERS = 2
# ... and a run of this many users or more, with this many: CPU per request grows with the requests in flight
# (threads hand the GIL to one another, a client's pool has more connections to look through). Past it the
# lessons' routes cost about the same; two levels keep a sweep of users to two pricings
HOT_MOST = 8
# A run of more users than this is priced over as many connections, the least recently used taken next: past a
# few hundred, each request finds its connection's objects out of the core's caches, and a request costs up to half
# as much again as on a few connections used in turn. Up to here it costs what it does on HOT_MOST's
SPREAD_FROM = 64
# ... after this long of them uncounted: a core that was idle a moment ago runs slower for a while (its clock, its
# caches), and one request's CPU read on it comes out up to a fifth dearer than a busy server's
WARM_S = 0.05
# ... or this long, the first time a route is priced with as many users on a server that builds what it keeps on its
# first requests (a database pool, or an HTTP client's to another service, opening the connections they hold at
# once; a route of one's own, its validators and caches), which read a route's first pricing on such a server a fifth
# to a third dearer than the next. The demo's own routes build nothing else: every warm-up's first requests start
# their threads
FIRST_WARM_S = 0.3

_warmed: set[Hashable] = set()  # (server process, method, path, users): routes priced on that server before


def waits_kept(w: Workload) -> bool:
    """Whether `w` is priced with its waits, at its own users: calls made at once to another service that nothing
    bounds but the worker's one client (lesson 12's unbounded fan-out). Each holds one of the client's connections
    through its wait, so its pool holds users × tasks of them and queues the calls past its limit; its CPU per call
    grows with both, which requests without their waits, ending at once, never build. A semaphore below the
    client's limit (`fanoutbounded`) keeps that queue out of the pool."""
    return w.traits.overlaps and w.traits.calls >= CLIENT_CONNECTIONS and not w.rate


def in_flight(stage: Stage) -> tuple[int, int]:
    """The users whose requests price a stage's CPU, and the connections they take turns over."""
    w = stage.workload
    if waits_kept(w):
        return w.users, w.users
    return hot_users(w.users, w.rate), connections(w.users, w.rate, getattr(stage.server, "limit_concurrency", None))


def hot_users(users: int, rate: float | None = None) -> int:
    """The users whose requests price a run's CPU: HOT_MOST for a run of as many users or more, else HOT_USERS, as
    for an open loop (`rate`), whose requests in flight its users do not set."""
    return HOT_MOST if not rate and users >= HOT_MOST else HOT_USERS


def connections(users: int, rate: float | None = None, limit: int | None = None) -> int:
    """The connections a run's pricing takes turns over: as many as a closed loop of more than SPREAD_FROM users
    holds (each user keeps one), else hot_users'. Under a server's `limit` on connections open (uvicorn's
    --limit-concurrency), one fewer: the last would be refused."""
    hot = hot_users(users, rate)
    spread = users if not rate and users > SPREAD_FROM else hot
    return max(hot, min(spread, limit - 1)) if limit else spread


def measure(stage: Stage, cpu_of: OneUser | None = None) -> OneUser:
    """The server's CPU per request by where it ran, from hot_users' requests back to back without the waits (a
    server kept busy, as under load; with them where waits_kept); then S, from one user's requests in turn.
    `cpu_of`: the CPU as another make-up's pricing measured it, on the same requests (_hot_key); only S is
    measured."""
    started = time.perf_counter()
    server = stage.server
    url = urllib.parse.urlsplit(protocol.request_path(stage.locust()))
    hot = (
        stage
        if waits_kept(stage.workload)
        else dataclasses.replace(stage, workload=dataclasses.replace(stage.workload, io_ms=0))
    )
    hot_path = urllib.parse.urlsplit(protocol.request_path(hot.locust()))
    address = (url.hostname or "127.0.0.1", url.port)
    # a route of one's own has no waits to leave out: its hot requests are its own
    ask = Ask.of(stage.route, f"{url.path}?{url.query}".rstrip("?"))
    hot_ask = Ask.of(stage.route, f"{hot_path.path}?{hot_path.query}".rstrip("?"))
    root = getattr(getattr(server, "proc", None), "pid", None)
    meter = None if root is not None else server.meter()
    readings: list[Threads] = []
    neighbours: list[float] = []  # CPU seconds of the processes that serve it (a database), so far
    probes: list[float] = []  # the cores' speed, on each, at the start and the end (probe.probe_ms)

    def read() -> None:  # at the start and the end of the counted requests, from the thread that ends them
        readings.append(tree_threads(root) if root is not None else {})
        neighbours.append(sum(tree_seconds(pid) for pid in server.neighbours()))
        probes.extend(probe_each())
        if meter is not None:
            meter.sample()

    if cpu_of is not None:
        # on a server that may have sat idle a moment: its first requests warm it, as the hot ones do otherwise
        alone, held_ms = _alone(server, address, ask, warm_s=WARM_S)
        return dataclasses.replace(cpu_of, seconds=time.perf_counter() - started, **_lone_prices(alone, held_ms))
    users, held = in_flight(stage)
    warmed, builds = _warm_key(stage, root, (hot_ask.method, hot_path.path), users)
    warm_s = FIRST_WARM_S if builds and warmed not in _warmed else WARM_S
    busy = send(address, hot_ask, users=users, connections=held, warm_s=warm_s, read=read)
    _warmed.add(warmed)
    alone, held_ms = _alone(server, address, ask, warm_s=None)
    n, window_s = len(busy.times), busy.t1 - busy.t0
    if root is not None:
        loop_s, threads_s, pool_s = split(readings[0], readings[1], busy.pids)
    else:  # a server on another machine: its meter's processes, no thread apart
        per = meter.per_process(busy.t0 - window_s, busy.t1 + window_s) if meter is not None else {}
        loop_s = sum(c for pid, c in per.items() if pid in busy.pids) * window_s
        threads_s, pool_s = 0.0, sum(c for pid, c in per.items() if pid not in busy.pids) * window_s
    return OneUser(
        loop_ms=loop_s / n * 1000,
        threads_ms=threads_s / n * 1000,
        pool_ms=pool_s / n * 1000,
        busy_ms=sum(busy.times) / n * 1000,
        neighbours_ms=(neighbours[1] - neighbours[0]) / n * 1000,
        seconds=time.perf_counter() - started,
        probe_ms=median(probes),
        **_lone_prices(alone, held_ms),
    )


def _alone(server: Server, address: tuple[str, int | None], ask: Ask, warm_s: float | None) -> tuple[Sent, float]:
    """One user's requests in turn, for at least ALONE_S, and a pooled connection's hold per use over them."""
    counter = publish.hold_counter(server)
    so_far = counter() if counter is not None else None
    alone = send(address, ask, users=1, warm_s=warm_s, at_least=1, min_s=ALONE_S)
    return alone, publish.hold_ms(so_far, counter()) if counter is not None else _held_ms(server, alone)


class _Lone(TypedDict):
    """The prices one user's requests in turn give, as OneUser names them."""

    service_ms: float
    requests: int
    reply_bytes: float
    client_ms: float
    held_ms: float


def _lone_prices(alone: Sent, held_ms: float) -> _Lone:
    """A OneUser's prices that one user's requests give: S, the reply's size, the client's CPU, the hold."""
    return _Lone(
        service_ms=sum(alone.times) / len(alone.times) * 1000,
        requests=len(alone.times),
        reply_bytes=sum(alone.sizes) / len(alone.sizes),
        client_ms=sum(alone.cpu) / len(alone.cpu) * 1000,
        held_ms=held_ms,
    )


def _warm_key(stage: Stage, root: int | None, route: tuple[str, str], users: int) -> tuple[tuple, bool]:
    """What a first warm-up warms (the server, its route where the route builds its own, the users), and whether the
    server builds anything on a first request (a client to another service, a database's pools, one's own app)."""
    server = stage.server
    upstream = getattr(getattr(server, "settings", None), "upstream", None)
    builds = stage.route is not None or bool(server.neighbours()) or bool(upstream)
    # The demo's client to another service is the server's, shared by every route that calls it: the first route
    # priced opens its connections for the rest. A database's pools and a route of one's own build per route.
    shared = bool(upstream) and stage.route is None and not server.neighbours()
    return (root if root is not None else server.url, *(() if shared else route), users), builds


def _held_ms(server: Server, alone: Sent) -> float:
    """A pooled connection's hold per use over the lone requests, from the server's telemetry (NaN: no database)."""
    held = publish.held_of(server)
    return held((alone.t0, alone.t1)) if held is not None else math.nan


def alone(stage: Stage) -> int:
    """The stage's requests sent one at a time on one kept-alive connection, for at least ALONE_S: how many were sent.
    For a count the server keeps per request (labserver/yourapp's threads held), read before and after."""
    url = urllib.parse.urlsplit(protocol.request_path(stage.locust()))
    ask = Ask.of(stage.route, f"{url.path}?{url.query}".rstrip("?"))
    address = (url.hostname or "127.0.0.1", url.port)
    return len(send(address, ask, users=1, warm_s=None, at_least=1, min_s=ALONE_S).times)


class CpuPrice(NamedTuple):
    """The CPU per request (ms) of a server's process tree by where it ran, and the cores' speed meanwhile."""

    loop_ms: float  # the workers' event-loop threads
    threads_ms: float  # their other threads (the thread pool)
    pool_ms: float  # the rest of the tree (process-pool children)
    probe_ms: float  # probe.probe_ms's median over the cores, at the start and the end

    @property
    def ms(self) -> float:
        return self.loop_ms + self.threads_ms + self.pool_ms


def cpu_price(server: LabServer, path: str, users: int = HOT_MOST) -> CpuPrice:
    """The CPU per request of the process tree serving `path` on `server`, priced as `measure` prices a run of `users`
    users: hot_users' requests back to back over its `connections`, after some not counted. For a lesson's own table
    before its runs (lesson 07's), which its runs then stand beside (plan.Foreseen)."""
    assert server.proc is not None, "start the server before pricing it"
    root = server.proc.pid
    readings: list[Threads] = []
    probes: list[float] = []

    def read() -> None:
        readings.append(tree_threads(root))
        probes.extend(probe_each())

    busy = send(
        ("127.0.0.1", server.port),
        Ask("GET", path),
        users=hot_users(users),
        connections=connections(users, limit=getattr(server, "limit_concurrency", None)),
        warm_s=WARM_S,
        read=read,
    )
    n = len(busy.times)
    loop_s, threads_s, pool_s = split(readings[0], readings[1], busy.pids)
    return CpuPrice(loop_s / n * 1000, threads_s / n * 1000, pool_s / n * 1000, median(probes))

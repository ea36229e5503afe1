"""Each run priced before it starts, from a few requests on its own server: a prediction that never reads the run.

A run's `predicted_rps` (collect.py) is priced with the CPU the run itself measured: it explains
the run after it. Its before-prediction (`predicted_before_rps`) is priced only from what is
known before Locust starts: the server's settings, the usable cores, the load generator's CPU per
request (validity.GENERATOR_RPS), and these prices, measured on the same server a moment before:

- S, one request's time alone, as a client on this machine sees it;
- the server's CPU per request by where it ran: the workers' event loops (each worker's main
  thread), their other threads (the thread pool), and the rest of the server's processes
  (process-pool children).

First, HOT_USERS users (HOT_MOST, for a run of as many or more) send requests back to
back on kept-alive connections, without the pattern's waits, after some that are not counted
(they start the threads or pool processes): a server kept busy, as under load, with as many
requests in flight contending for its locks. For a run of more than SPREAD_FROM users, they take
turns over as many connections as the run holds (`connections`), so the server's work for each
request is spread over as much memory as the run's: a core's caches hold a few connections'
objects, not hundreds. Calls made at once to another service through the server's client (a
fan-out) keep their waits, at the run's users: its pool's CPU per call grows with the connections
the waits hold (`waits_kept`). Then one user's requests with their waits, for ALONE_S, give S. The CPU comes
from Linux's scheduler counters, in ns: each process's CPU clock (its ended threads included) and
each live thread's /proc/<pid>/task/<tid>/schedstat, which sets the event loop's thread apart. A few
requests of a fraction of a ms each are priced where the clock ticks of psutil's times (10 ms) would
read 0.
Elsewhere psutil's per-thread times stand in, and a server on another machine is priced by its
meter. The processes that serve the server (`neighbours()`: a database) are priced beside it.

A make-up (the server's settings and Python, the pattern and its work) is priced once per process,
as calibrate.service_time is, so that a lesson's cell run again costs nothing; `forget` prices again.
Make-ups that differ only in their waits send the same requests without them: their CPU is priced
once, by the first, and each measures only its own S. Both runs' before-predictions then read one price
of one CPU, as a lesson's ratio of the two compares them. A price that sets AGAIN_FROM runs or more is
taken a second time, after every other make-up's first, and the cheaper kept (`price_again`).
"""

from __future__ import annotations

import collections
import dataclasses
import http.client
import itertools
import math
import queue
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, TypedDict

import psutil

from labserver import protocol
from labserver.demo import cpus
from labserver.demo.calls import CLIENT_CONNECTIONS
from labserver.demo.settings import Settings
from labserver.harness.load import validity
from labserver.harness.plans.plan import Before, Options, Stage
from labserver.harness.processes import procs
from labserver.harness.processes.meters import median, per_thread, probe_each, tree_seconds
from labserver.harness.rows import publish
from labserver.harness.servers.launcher import LabServer, Server
from labserver.theory.demand import OneUser

if TYPE_CHECKING:
    from labserver.harness.load import calibrate
    from labserver.theory.workload import Workload
from labserver.theory.model import MACHINE_BOUND, Bottleneck, Prediction

# The CPU's price needs at least this many counted requests and this long, and stops at the first past both; at
# most this long in all, however few came: a lesson's pricing stays within a tenth of its runs' time.
MIN_REQUESTS = 3
MIN_S = 0.15
MAX_S = 1.0
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
REQUEST_TIMEOUT_S = 10.0  # one request alone; a pattern slower than this is not priced
BODY_SHOWN = 300  # bytes of an error reply's body its PricingError shows (a 422's detail names the field)
# What the load generator pays per request, priced beforehand: one FastHttpUser process on its core
GENERATOR_MS = 1000 / validity.GENERATOR_RPS
# ... which is measured (calibrate.generator_price) where it decides a prediction: the least a process sends on its
# core (GENERATOR_RPS) names it, or it is this share or more of the server's CPU per request on shared cores
GENERATOR_SHARE = 0.1
# ... and measured on the route itself where its replies are this big or bigger: Locust reads every byte, and a reply
# of a megabyte or more costs it several times a small one's price
BIG_REPLY_BYTES = 64 * 1024
NOT_PRICED = "not priced"
# A price that sets this many of a plan's runs or more is taken again, apart from the first: the host runs this
# machine's cores at up to 1.5 times their best time in spells of seconds (docs/evidence.md), and one pricing of a
# fraction of a second in a spell would set every one of those runs' predictions. Fewer runs, fewer seconds to spend
AGAIN_FROM = 4
# What a kept-alive connection the server has closed raises on its next request
STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})

_priced: dict[Hashable, OneUser] = {}
_hot: dict[Hashable, OneUser] = {}  # the first pricing of each set of requests without their waits (_hot_key)
_members: dict[Hashable, list[Hashable]] = {}  # the make-ups (_key) priced with each (_hot_key)
_hot_again: set[Hashable] = set()  # the sets of requests priced a second time (price_again)
_again: set[Hashable] = set()  # make-ups priced a second time (again)
_warmed: set[Hashable] = set()  # (server process, method, path, users): routes priced on that server before

Threads = dict[tuple[int, int], float]  # (pid, tid) -> seconds that thread has run on a CPU
WHOLE = 0  # the tid of a process's whole count in Threads: no thread has id 0
_CPUCLOCK_SCHED = 2  # Linux's process CPU clock that counts in ns, as the scheduler does


class PricingError(RuntimeError):
    """One user's requests could not price a run: the server answered with an error, or too slowly."""


def before(stages: Sequence[Stage], options: Options) -> list[Stage]:
    """`stages`, each with its before-prediction (`Stage.before`), priced on its own server where needed.

    Silent: a caller's output may be read line by line (a kernel's, a test's); how long each make-up took to
    price is in its runs' rows (`one_user_s`). A price that sets AGAIN_FROM of them or more is taken again once
    every make-up has its first (`price_again`)."""
    first = [dataclasses.replace(stage, before=foresee(stage, options)) for stage in stages]
    priced = [s for s in first if s.before is not None and s.before.one_user is not None]
    sets = collections.Counter(_hot_key(s) for s in priced)
    again = [s for s in priced if sets[_hot_key(s)] >= AGAIN_FROM]
    for stage in again:
        price_again(stage)
    return [dataclasses.replace(stage, before=foresee(stage, options)) for stage in stages] if again else first


def foresee(stage: Stage, options: Options, settings: Settings | None = None) -> Before:
    """One stage's before-prediction: the lesson's own where it made one before the run, else the model's (or the
    lesson's function of a Demand) priced with one user's requests on the stage's server. A run that cannot be
    priced gets none, and says why: the run itself goes on. `settings`: a change to the server's, priced with the
    server's prices as it runs now, before the change is made (labserver/yourapp's advice)."""
    given = stage.predicted
    if isinstance(given, Prediction):
        return Before(given, None, "lesson")
    if options.expect_failures:
        return Before(stage.prediction(options, _cores(stage), settings=settings), None, "not modelled")
    try:
        one = one_user(stage)
    except (PricingError, OSError, http.client.HTTPException) as e:
        return Before(Prediction(math.nan, math.nan, f"{NOT_PRICED}: {e}"), None, NOT_PRICED)
    generator_ms, rest_ms = GENERATOR_MS, 0.0
    demand = one.demand(generator_ms, options.processes)
    p = stage.prediction(options, _cores(stage), demand=demand, settings=settings)
    big = one.reply_bytes >= BIG_REPLY_BYTES and options.master is None
    if big or _generator_decides(p, one, options):
        price = _generator_price(stage if big else None)
        generator_ms, rest_ms = price.locust_ms, price.rest_ms
        demand = one.demand(generator_ms, options.processes, rest_ms)
        p = stage.prediction(options, _cores(stage), demand=demand, settings=settings)
    return Before(p, one, "lesson" if callable(given) else "one user", generator_ms)


def _generator_decides(p: Prediction, one: OneUser, options: Options) -> bool:
    """Whether the load generator's price decides a prediction made with GENERATOR_MS: it names the generator, or the
    machine's shared cores with the generator a tenth or more of what each request costs them. Not where the
    generators run on other machines (classroom mode): their cores are not this machine's."""
    if options.master is not None or not math.isfinite(p.rps):
        return False
    if p.bottleneck == Bottleneck.GENERATOR:
        return True
    return p.bottleneck in MACHINE_BOUND and GENERATOR_SHARE * (one.worker_ms + one.pool_ms) <= GENERATOR_MS


def _generator_price(on: Stage | None = None) -> calibrate.GeneratorPrice:
    from labserver.harness.load import calibrate  # it measures with run_plan, whose module imports this one

    # one price per route and server, whatever the users: _key's last two (the requests in flight, the connections)
    # change the server's CPU, not what Locust pays to read a reply
    return calibrate.generator_price() if on is None else calibrate.generator_price_on(on, _key(on)[:-2])


def price_generator(stage: Stage, *, again: bool = False) -> None:
    """Where `stage`'s route answers with big replies, the load generator priced on it, as foresee reads it: a first
    round, or `again` (once per make-up), a second apart from the first, the cheaper kept."""
    if stage.route is not None and one_user(stage).reply_bytes >= BIG_REPLY_BYTES:
        from labserver.harness.load import calibrate  # it measures with run_plan, whose module imports this one

        calibrate.generator_price_on(stage, _key(stage)[:-2], again=again)


def _cores(stage: Stage) -> float:
    server = stage.server
    return cpus.cores() if getattr(server, "same_machine", True) else server.cores()


def _key(stage: Stage) -> tuple[Hashable, ...]:
    """What sets a one-user price: the server's settings, its Python and cores, and the pattern's work (a route of
    one's own: the route, on that server)."""
    s, w = stage.server, stage.workload
    python = getattr(getattr(s, "python", None), "path", None)
    server = (type(s).__name__, repr(getattr(s, "settings", None)), str(python))
    if stage.route is not None:  # a route of one's own: its work is its own, whatever the model reads it as
        r = stage.route
        route = (r["method"], r["path"], r.get("body"), tuple(r.get("headers", {}).items()))
        return (*server, s.url, *route, *_in_flight(stage))
    return (*server, w.pattern, w.tasks, w.io_ms, w.cpu_n, *_in_flight(stage))


def waits_kept(w: Workload) -> bool:
    """Whether `w` is priced with its waits, at its own users: calls made at once to another service that nothing
    bounds but the worker's one client (lesson 12's unbounded fan-out). Each holds one of the client's connections
    through its wait, so its pool holds users × tasks of them and queues the calls past its limit; its CPU per call
    grows with both, which requests without their waits, ending at once, never build. A semaphore below the
    client's limit (`fanoutbounded`) keeps that queue out of the pool."""
    return w.traits.overlaps and w.traits.calls >= CLIENT_CONNECTIONS and not w.rate


def _in_flight(stage: Stage) -> tuple[int, int]:
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


def forget() -> None:
    """Price every make-up again from the next run on (after the machine's load changed, say)."""
    _priced.clear()
    _hot.clear()
    _members.clear()
    _hot_again.clear()
    _again.clear()


def _hot_key(stage: Stage) -> tuple[Hashable, ...]:
    """What sets the requests a stage's CPU is priced with: its _key, less the waits they leave out (`io_ms`).
    A make-up priced with its waits (waits_kept), or a route of one's own, is its own."""
    key = _key(stage)
    if stage.route is not None or waits_kept(stage.workload):
        return key
    return _key(dataclasses.replace(stage, workload=dataclasses.replace(stage.workload, io_ms=0)))


def one_user(stage: Stage, tries: int = 1) -> OneUser:
    """The stage's one-user prices, measured once per make-up in this process: of `tries` pricings in a row, the
    one that cost the server least CPU per request (the least disturbed, as timeit keeps the least of its runs)."""
    key = _key(stage)
    if key not in _priced:
        hot = _hot_key(stage)
        twin = _hot.get(hot)
        if twin is not None:  # the same requests, without their waits, priced for another make-up
            _priced[key] = measure(stage, cpu_of=twin)
        else:
            _priced[key] = min((measure(stage) for _ in range(tries)), key=_cpu)
            _hot[hot] = _priced[key]
        _members.setdefault(hot, []).append(key)
    return _priced[key]


def price_again(stage: Stage) -> None:
    """The stage's requests without their waits priced a second time, once per set of them in this process; where
    they cost the server less CPU than the first time, every make-up priced with them reads the cheaper (each its
    own S). The seconds it took count in the stage's own make-up's."""
    hot = _hot_key(stage)
    if hot in _hot_again or hot not in _hot:
        return
    _hot_again.add(hot)
    fresh = measure(stage)
    key = _key(stage)
    _priced[key] = dataclasses.replace(_priced[key], seconds=_priced[key].seconds + fresh.seconds)
    if _cpu(fresh) >= _cpu(_hot[hot]):
        return
    cpu = {f: getattr(fresh, f) for f in ("loop_ms", "threads_ms", "pool_ms", "busy_ms", "neighbours_ms", "probe_ms")}
    _hot[hot] = fresh
    for member in _members.get(hot, [key]):
        _priced[member] = dataclasses.replace(_priced[member], **cpu)


def again(stage: Stage) -> OneUser:
    """The stage priced a second time, once per make-up in this process as one_user is, and of the two, the one
    that cost the server least CPU per request: a repeat made apart from the first (a round of other routes
    between), where a slow moment that covers pricings in a row would not."""
    key = _key(stage)
    if key not in _again:
        fresh = measure(stage)
        kept = _priced.get(key)
        _priced[key] = fresh if kept is None or _cpu(fresh) < _cpu(kept) else kept
        _again.add(key)
    return _priced[key]


def _cpu(one: OneUser) -> float:
    return one.worker_ms + one.pool_ms


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
    probes: list[float] = []  # the cores' speed, on each, at the start and the end (meters.probe_ms)

    def read() -> None:  # at the start and the end of the counted requests, from the thread that ends them
        readings.append(_threads(root) if root is not None else {})
        neighbours.append(sum(tree_seconds(pid) for pid in server.neighbours()))
        probes.extend(probe_each())
        if meter is not None:
            meter.sample()

    if cpu_of is not None:
        # on a server that may have sat idle a moment: its first requests warm it, as the hot ones do otherwise
        alone, held_ms = _alone(server, address, ask, warm_s=WARM_S)
        return dataclasses.replace(cpu_of, seconds=time.perf_counter() - started, **_lone_prices(alone, held_ms))
    users, held = _in_flight(stage)
    warmed, builds = _warm_key(stage, root, (hot_ask.method, hot_path.path), users)
    warm_s = FIRST_WARM_S if builds and warmed not in _warmed else WARM_S
    busy = _send(address, hot_ask, users=users, connections=held, warm_s=warm_s, read=read)
    _warmed.add(warmed)
    alone, held_ms = _alone(server, address, ask, warm_s=None)
    n, window_s = len(busy.times), busy.t1 - busy.t0
    if root is not None:
        loop_s, threads_s, pool_s = _split(readings[0], readings[1], busy.pids)
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


def _alone(server: Server, address: tuple[str, int | None], ask: Ask, warm_s: float | None) -> tuple[_Sent, float]:
    """One user's requests in turn, for at least ALONE_S, and a pooled connection's hold per use over them."""
    counter = publish.hold_counter(server)
    so_far = counter() if counter is not None else None
    alone = _send(address, ask, users=1, warm_s=warm_s, at_least=1, min_s=ALONE_S)
    return alone, publish.hold_ms(so_far, counter()) if counter is not None else _held_ms(server, alone)


class _Lone(TypedDict):
    """The prices one user's requests in turn give, as OneUser names them."""

    service_ms: float
    requests: int
    reply_bytes: float
    client_ms: float
    held_ms: float


def _lone_prices(alone: _Sent, held_ms: float) -> _Lone:
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


def _held_ms(server: Server, alone: _Sent) -> float:
    """A pooled connection's hold per use over the lone requests, from the server's telemetry (NaN: no database)."""
    held = publish.held_of(server)
    return held((alone.t0, alone.t1)) if held is not None else math.nan


def alone(stage: Stage) -> int:
    """The stage's requests sent one at a time on one kept-alive connection, for at least ALONE_S: how many were sent.
    For a count the server keeps per request (labserver/yourapp's threads held), read before and after."""
    url = urllib.parse.urlsplit(protocol.request_path(stage.locust()))
    ask = Ask.of(stage.route, f"{url.path}?{url.query}".rstrip("?"))
    address = (url.hostname or "127.0.0.1", url.port)
    return len(_send(address, ask, users=1, warm_s=None, at_least=1, min_s=ALONE_S).times)


def cpu_per_request_ms(server: LabServer, path: str, users: int = HOT_MOST) -> float:
    """The CPU per request (ms) of the process tree serving `path` on `server`, priced as `measure` prices a run of
    `users` users: hot_users' requests back to back over its `connections`, after some not counted. For a lesson's
    own table before its runs (lesson 07's): the same price as its runs' before-predictions, taken a minute or two
    earlier."""
    assert server.proc is not None, "start the server before pricing it"
    root = server.proc.pid
    readings: list[Threads] = []
    busy = _send(
        ("127.0.0.1", server.port),
        Ask("GET", path),
        users=hot_users(users),
        connections=connections(users, limit=getattr(server, "limit_concurrency", None)),
        warm_s=WARM_S,
        read=lambda: readings.append(_threads(root)),
    )
    return sum(_split(readings[0], readings[1], busy.pids)) / len(busy.times) * 1000


@dataclasses.dataclass(frozen=True)
class Ask:
    """One request as the pricing sends it: a pattern's GET, or a route of one's own with its body and headers."""

    method: str
    path: str  # with its query
    body: bytes | None = None
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, route: protocol.Route | None, path: str) -> Ask:
        """`route`'s request, or a GET of `path` where there is none."""
        if route is None:
            return cls("GET", path)
        body = route.get("body")
        headers = tuple(route.get("headers", {}).items())
        return cls(route["method"], route["path"], None if body is None else body.encode(), headers)


@dataclasses.dataclass
class _Sent:
    """Requests sent by a few users, each in turn: their times (s), the workers that answered, the window (epoch s)."""

    times: list[float]
    pids: set[int | None]
    t0: float
    t1: float
    sizes: list[int] = dataclasses.field(default_factory=list)  # each counted reply's body, in bytes
    cpu: list[float] = dataclasses.field(default_factory=list)  # each counted request's CPU in its client thread (s)

    def note(self, seconds: float, answer: tuple[int | None, int], cpu_s: float = 0.0) -> None:
        """One counted request: its time, the worker and body bytes `_get` read of its reply, and the CPU its client
        thread spent on it."""
        self.times.append(seconds)
        self.pids.add(answer[0])
        self.sizes.append(answer[1])
        self.cpu.append(cpu_s)


def _send(
    address: tuple[str, int | None],
    ask: Ask | str,
    *,
    users: int,
    connections: int = 0,
    warm_s: float | None = 0.0,
    at_least: int = MIN_REQUESTS,
    min_s: float = MIN_S,
    read: Callable[[], None] | None = None,
) -> _Sent:
    """`users` users' requests `ask` (a path: its GET), each user's in turn on the least recently used of
    `connections` kept-alive connections (at least one each). Unless `warm_s` is None, first some not counted:
    one each, all at once (they start as many threads or pool processes as the counted ones use), then more
    for `warm_s` and until each connection has answered one, so that the cores run as a busy server's do and
    no connection is opened while counted. Then at least `at_least` and `min_s`, at most MAX_S, counted,
    `read()` called as they start and end. The first error ends all, raised."""
    conns = _Connections(address, Ask("GET", ask) if isinstance(ask, str) else ask, max(users, connections))
    sent = _Sent([], set(), math.nan, math.nan)
    errors: list[BaseException] = []
    clock = {"started": math.inf}

    def start() -> None:
        if read is not None:
            read()
        clock["started"], sent.t0 = time.perf_counter(), time.time()

    warmed, counted = threading.Barrier(users, action=start), threading.Barrier(users, action=read)

    def user() -> None:
        try:
            if warm_s is not None:
                conns.warm(warm_s)
            warmed.wait()
            while not errors:
                at, cpu = time.perf_counter(), time.thread_time()
                answer = conns.turn()
                sent.note(time.perf_counter() - at, answer, time.thread_time() - cpu)
                spent = time.perf_counter() - clock["started"]
                if (len(sent.times) >= at_least and spent >= min_s) or spent >= MAX_S:
                    break
            counted.wait()
        except BaseException as e:  # raised in the caller's thread
            errors.append(e)
            warmed.abort()
            counted.abort()

    threads = [threading.Thread(target=user, daemon=True) for _ in range(users)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        sent.t1 = time.time()
    finally:
        conns.close()
    if errors:  # the first that is not another user's barrier, broken by it
        raise next((e for e in errors if not isinstance(e, threading.BrokenBarrierError)), errors[0])
    return sent


class _Connections:
    """Kept-alive connections that users take turns over, the one idle longest next, as a run's users' come round."""

    def __init__(self, address: tuple[str, int | None], ask: Ask, n: int) -> None:
        self.ask, self.n = ask, n
        self._all = [http.client.HTTPConnection(*address, timeout=REQUEST_TIMEOUT_S) for _ in range(n)]
        self._idle: queue.SimpleQueue[http.client.HTTPConnection] = queue.SimpleQueue()
        for conn in self._all:
            self._idle.put(conn)
        self._warmed = itertools.count(1)  # uncounted requests: the first n of them open every connection

    def turn(self) -> tuple[int | None, int]:
        """One request on the connection idle longest, given back after; the worker that answered, the reply's bytes."""
        conn = self._idle.get()
        try:
            try:
                return _get(conn, self.ask)
            except STALE as e:
                # The server closed it while it sat idle: uvicorn ends a kept-alive connection after 5 s without a
                # request, as a slow route warming hundreds of connections in turn leaves the first. A request that
                # may be sent twice is sent again on a new one (RFC 9110, 9.2.2); any other fails its pricing.
                if self.ask.method not in IDEMPOTENT:
                    raise PricingError(f"{self.ask.method} {self.ask.path}: the server closed the connection") from e
                conn.close()
                return _get(conn, self.ask)
        finally:
            self._idle.put(conn)

    def warm(self, warm_s: float) -> None:
        """Requests not counted: one, then more for `warm_s` and until every connection is open."""
        self.turn()
        sent, until = next(self._warmed), time.perf_counter() + warm_s
        while time.perf_counter() < until or sent < self.n:
            self.turn()
            sent = next(self._warmed)

    def close(self) -> None:
        for conn in self._all:
            conn.close()


def _get(conn: http.client.HTTPConnection, ask: Ask) -> tuple[int | None, int]:
    """One request on `conn`, read to its end; the worker that answered (X-Worker-Pid), and its body's bytes."""
    conn.request(ask.method, ask.path, body=ask.body, headers=dict(ask.headers))
    reply = conn.getresponse()
    body = reply.read()
    if not protocol.answered(reply.status):
        said = body[:BODY_SHOWN].decode(errors="replace")
        raise PricingError(f"{ask.method} {ask.path} answered {reply.status} {reply.reason}: {said}".rstrip(": "))
    pid = reply.getheader("x-worker-pid")
    return (int(pid) if pid and pid.isdigit() else None), len(body)


def _split(before: Threads, after: Threads, workers: set[int | None]) -> tuple[float, float, float]:
    """CPU seconds between two readings: the workers' main threads (their loops), their other threads, the rest.

    A process's whole count (its WHOLE entry) holds the threads that ended between the readings too: an
    endpoint's own executor, made and shut down within one request, leaves no thread to read at the end."""
    loop = threads = rest = 0.0
    for pid in {pid for pid, _ in after}:
        mine = {tid: s - before.get((p, tid), 0.0) for (p, tid), s in after.items() if p == pid}
        # a thread or process started since has all of its own
        whole = mine.pop(WHOLE, None)
        spent = max(0.0, whole if whole is not None else sum(mine.values()))
        if pid not in workers:
            rest += spent
        else:
            main = max(0.0, mine.get(pid, 0.0))
            loop += main
            threads += max(0.0, spent - main)
    return loop, threads, rest


def _threads(root: int) -> Threads:
    """Seconds each thread of the process tree under `root` has run on a CPU, and each process's whole (WHOLE)."""
    found: Threads = {}
    for p in procs.tree(root):
        found |= _linux_threads(p.pid) if sys.platform == "linux" else _psutil_threads(p)
        whole = _process_seconds(p.pid)
        if whole is not None:
            found[(p.pid, WHOLE)] = whole
    return found


def _process_seconds(pid: int) -> float | None:
    """Seconds `pid` has run on a CPU, its ended threads' included, to the ns: its CPU-time clock (clock_getcpuclockid
    in C, which Python's time module lacks: the clock id is the pid's complement, shifted, with the scheduler's
    flag, as glibc builds it). None where the OS keeps no such clock or will not show it."""
    if sys.platform != "linux":
        return None
    try:
        return time.clock_gettime((~pid << 3) | _CPUCLOCK_SCHED)
    except OSError:
        return None


def _linux_threads(pid: int) -> Threads:
    """Seconds each thread of `pid` has run on a CPU: the scheduler's count, in ns (its schedstat's first field)."""
    on_cpu = per_thread(pid, "schedstat", lambda text: int(text.split()[0]) / 1e9)
    return {(pid, tid): seconds for tid, seconds in on_cpu.items()}


def _psutil_threads(p: psutil.Process) -> Threads:
    try:
        return {(p.pid, t.id): t.user_time + t.system_time for t in p.threads()}
    except psutil.Error:
        return {}

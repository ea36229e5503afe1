"""The pricing's client: requests sent by a few users in turn, over kept-alive connections, and timed.

Each user sends its next request as soon as the last reply is read, on the connection idle longest of as many as
it is given (`send`); some requests are sent first and not counted, so that the server's threads and pool
processes are started and every connection is open before the counted ones. Each reply is read to its end, and
names the worker that answered it (X-Worker-Pid). A reply with an error fails the pricing (PricingError), and a
request left unanswered for REQUEST_TIMEOUT_S times out; a kept-alive connection the server closed while it sat
idle is opened again for a request that may be sent twice, and fails any other.
"""

from __future__ import annotations

import dataclasses
import http.client
import itertools
import math
import queue
import threading
import time
from collections.abc import Callable

from labserver import protocol

# The CPU's price needs at least this many counted requests and this long, and stops at the first past both; at
# most this long in all, however few came: a lesson's pricing stays within a tenth of its runs' time.
MIN_REQUESTS = 3
MIN_S = 0.15
MAX_S = 1.0
REQUEST_TIMEOUT_S = 10.0  # one request alone; a pattern slower than this is not priced
BODY_SHOWN = 300  # bytes of an error reply's body its PricingError shows (a 422's detail names the field)
# What a kept-alive connection the server has closed raises on its next request
STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})


class PricingError(RuntimeError):
    """One user's requests could not price a run: the server answered with an error, or too slowly."""


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
class Sent:
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


def send(
    address: tuple[str, int | None],
    ask: Ask | str,
    *,
    users: int,
    connections: int = 0,
    warm_s: float | None = 0.0,
    at_least: int = MIN_REQUESTS,
    min_s: float = MIN_S,
    read: Callable[[], None] | None = None,
) -> Sent:
    """`users` users' requests `ask` (a path: its GET), each user's in turn on the least recently used of
    `connections` kept-alive connections (at least one each). Unless `warm_s` is None, first some not counted:
    one each, all at once (they start as many threads or pool processes as the counted ones use), then more
    for `warm_s` and until each connection has answered one, so that the cores run as a busy server's do and
    no connection is opened while counted. Then at least `at_least` and `min_s`, at most MAX_S, counted,
    `read()` called as they start and end. The first error ends all, raised."""
    conns = _Connections(address, Ask("GET", ask) if isinstance(ask, str) else ask, max(users, connections))
    sent = Sent([], set(), math.nan, math.nan)
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

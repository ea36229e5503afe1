"""A batch of lesson 06's requests, as its model takes it: the client that sends it (`Client`, the library each
uses, those that send from a thread pool), the bounds its size is checked against (`check_run`), what one of its
requests cost where it ran (`Cost`), and `Batch`: its requests, how many are in flight, and one request's seconds,
as `predict_client` prices them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from labserver.checks import choice, whole
from labserver.demo.patterns import check_pattern
from labserver.demo.work import check_bounds

Client = Literal["loop", "threadpool", "session", "aiohttp"]  # how lesson 06's client sends its requests
LIBRARY: dict[Client, str] = {"loop": "requests", "threadpool": "requests", "session": "requests", "aiohttp": "aiohttp"}
POOLS = ("threadpool", "session")  # a client's thread pool of `requests` calls
REQUESTS_MAX = 10_000
CONCURRENCY_MAX = 1_000


@dataclass(frozen=True)
class Cost:
    """What one request cost in the run being predicted: CPU milliseconds where it ran."""

    client_ms: float  # the client's, all its threads together (they share one core: the GIL)
    server_ms: float  # the server's
    # Not CPU: a lone request's latency, sent with the same library to the same endpoint just
    # before the run (`clients.runs.lone`); NaN: not measured. See `predict_client`.
    alone_ms: float = math.nan
    # The share of client_ms spent before a request waits for its reply (building, connecting,
    # sending), measured by `requests` clients (clients.strategies); NaN: not split. See client_core_s.
    send_share: float = math.nan

    @property
    def known(self) -> bool:
        return all(math.isfinite(x) and x >= 0 for x in (self.client_ms, self.server_ms))


def check_run(client: Client, pattern: str, requests: int, concurrency: int, io_ms: int) -> None:
    """Raise ValueError saying what to change, before any process starts."""
    choice("client", client, LIBRARY)
    check_pattern(pattern)
    whole("requests", requests, 1, REQUESTS_MAX)
    whole("concurrency", concurrency, 1, CONCURRENCY_MAX)
    problems = check_bounds(1, io_ms, 0)
    if problems:
        raise ValueError("; ".join(msg for _, msg in problems))


@dataclass(frozen=True)
class Batch:
    """A batch as `predict_client` prices it: its requests, how many are in flight, and one request's seconds."""

    client: Client
    requests: int
    wanted: int  # in flight, as the client sends them
    in_flight: float  # ... as the server takes them
    io: float  # a request's I/O wait
    c: float  # the client's CPU per request (0: not measured)
    s: float  # the server's
    one: float  # one request alone

    @classmethod
    def of(
        cls, client: Client, requests: int, concurrency: int, io_ms: float, slots: float, cost: Cost | None
    ) -> Batch:
        wanted = 1 if client == "loop" else min(concurrency, requests)
        io, c, s = io_ms / 1000, 0.0, 0.0
        if cost is not None and cost.known:
            c, s = cost.client_ms / 1000, cost.server_ms / 1000
        one = io + c + s  # one request alone, in s
        if cost is not None and cost.known and math.isfinite(cost.alone_ms):
            # A request's time beyond its io does not shrink as the load rises, though its CPU does
            # (one wake-up of each side's loop reads more replies), so a wave takes at least what a
            # lone request took: a wake-up is no CPU, and each request still waits for its own, its
            # sleep's timer and its reply's read (docs/evidence.md).
            one = max(one, cost.alone_ms / 1000)
        return cls(client, requests, wanted, min(wanted, slots), io, c, s, one)

    @property
    def spread_s(self) -> float:
        """How far apart the first burst's requests get through, which every later wave inherits.

        In waves, after the first burst has got through: its `wanted` requests pass one at a time,
        at the pace of the slower side, and every wave inherits that spread. Where the server is
        the slower side (s ≥ c), its loop reads them one by one, those beyond its slots included.
        Where the client is, its burst leaves c apart, whether the server's slots wait for it
        (aiohttp opens all its connections first, so even its first wave's replies come late) or
        not (a `requests` thread pool starts its threads c apart, and its last ends that much after
        its first). If the spread outlasts a request (a slot frees before the slots fill, or the
        client's core is busy from one wave to the next), no wave forms at all: the CPU bound
        takes over, as it does for a lone burst at the client's pace (its CPU for the whole batch,
        then one wait).
        Where the slower side is a `requests` thread pool, its threads do not take the burst as one:
        a thread whose reply came sends again while the others still send, so a slot that frees is
        taken at once, and the last request waits only for those before it in the last wave, in
        position (n - 1) mod in_flight (a pool of 100 threads against 40 server threads sends its
        100th request in the third wave, 19 places in). As in_flight x c reaches S, waves plus
        spread reach S + (n - 1) x c, the CPU bound's n x c + io give or take s: the two meet with no
        jump, where counting the spread from `wanted` would make the wall jump at that edge.
        """
        pace = max(self.c, self.s)
        lone_burst = self.c > self.s and self.in_flight >= self.wanted and self.requests <= self.in_flight
        pool = self.client in POOLS and self.c > self.s
        burst = (self.requests - 1) % self.in_flight if pool else self.wanted - 1
        return burst * pace if self.in_flight * pace < self.one and not lone_burst else 0.0

"""Client-side concurrency (lesson 06, horaceg's article): ways for a Python client to send n requests.

`loop` sends them one after another with `requests.get`; `threadpool` hands them to a
`ThreadPoolExecutor` of `requests.get` calls, each on a new connection; `session` is that pool
with one reused `requests.Session` per thread; `aiohttp` gathers coroutines on one event loop,
at most `concurrency` in flight (a semaphore). Each strategy is run by
`python -m labserver.clients` in a subprocess, which prints one JSON line: a notebook's
kernel already runs an event loop, so `asyncio.run` cannot run in a cell, and a client
in its own process has its own CPU to measure. `labserver.clients.runs` drives it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from labserver.checks import choice

# Each run is a fresh process that needs one of the two libraries: importing only that one saves
# the other's import on every run, paid outside the measurement (lesson 06 starts 14 of them).
if TYPE_CHECKING:
    import aiohttp

    from labserver.theory.batch import Client

TIMEOUT_S = 30.0
Outcome = tuple[float, float, bool]  # (finish time since epoch, latency in ms, ok)
# The process's CPU seconds when the first reply was in: what sending the first burst cost (see `timed`)
_first_reply_cpu: list[float] = []


def _replied() -> None:
    if not _first_reply_cpu:  # two threads may both see it empty: the first to append wins, the other is later
        _first_reply_cpu.append(time.process_time())


# Where a `requests` call's CPU goes, counted on each thread's own clock (time.thread_time): the
# part spent before it waits for the reply (building the request, connecting, sending) and the
# whole. One core does both halves of every request; a burst sends first and reads its replies
# later, while the last ones still wait (theory.clients.client_core_s): the split is the model's.
_sends = threading.local()
_cpu = {"send_s": 0.0, "request_s": 0.0}  # summed over the requests that got as far as sending
_lock = threading.Lock()


def _watch_sends() -> None:
    """Note each thread's CPU clock as urllib3 starts to wait for a reply (once per process)."""
    import urllib3.connection

    if getattr(urllib3.connection.HTTPConnection.getresponse, "_lab_watched", False):
        return
    waiting = urllib3.connection.HTTPConnection.getresponse

    def getresponse(self, *args, **kwargs):
        _sends.at = time.thread_time()  # everything before this was sending
        return waiting(self, *args, **kwargs)

    getresponse._lab_watched = True  # type: ignore[attr-defined]
    urllib3.connection.HTTPConnection.getresponse = getresponse  # type: ignore[method-assign]


def get(url: str) -> Outcome:
    """One GET with `requests.get`: a new connection each time, as a first script would do it."""
    import requests

    return _timed_get(url, requests.get)


def session_get(url: str) -> Outcome:
    """One GET on this thread's `requests.Session`, made on its first call: its connection is reused."""
    import requests

    if getattr(_sends, "session", None) is None:
        _sends.session = requests.Session()  # one per thread: a Session is not made to be shared across threads
    return _timed_get(url, _sends.session.get)


def _timed_get(url: str, send: Callable) -> Outcome:
    import requests

    _watch_sends()
    started, cpu0 = time.perf_counter(), time.thread_time()
    _sends.at = math.nan
    try:
        ok = send(url, timeout=TIMEOUT_S).status_code == 200
    except requests.RequestException:
        ok = False
    cpu1 = time.thread_time()
    if not math.isnan(_sends.at):  # one that failed before sending (no connection) has no split to give
        with _lock:
            _cpu["send_s"] += _sends.at - cpu0
            _cpu["request_s"] += cpu1 - cpu0
    _replied()
    return time.time(), (time.perf_counter() - started) * 1000, ok


def loop(url: str, n: int, concurrency: int = 1) -> list[Outcome]:
    """One request at a time: n requests take n × (their latency)."""
    return [get(url) for _ in range(n)]


def threadpool(url: str, n: int, concurrency: int) -> list[Outcome]:
    """`concurrency` threads, each blocked in its own `requests.get`: the GIL is free while they wait."""
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        return list(pool.map(get, [url] * n))


def session(url: str, n: int, concurrency: int) -> list[Outcome]:
    """The same thread pool, each thread reusing one `requests.Session`: a connection per thread, not per request."""
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        return list(pool.map(session_get, [url] * n))


async def _aget(session: aiohttp.ClientSession, url: str, slots: asyncio.Semaphore) -> Outcome:
    import aiohttp

    async with slots:
        started = time.perf_counter()
        try:
            async with session.get(url) as response:
                await response.read()
                ok = response.status == 200
        except (aiohttp.ClientError, TimeoutError):
            ok = False
        _replied()
        return time.time(), (time.perf_counter() - started) * 1000, ok


async def _gather(url: str, n: int, concurrency: int) -> list[Outcome]:
    import aiohttp

    slots = asyncio.Semaphore(concurrency)
    # aiohttp keeps at most 100 connections per session unless told otherwise: that would be a
    # second, hidden limit on the concurrency, so the connector gets the same one as the semaphore.
    connector = aiohttp.TCPConnector(limit=concurrency)
    timeout = aiohttp.ClientTimeout(total=TIMEOUT_S)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        return await asyncio.gather(*(_aget(session, url, slots) for _ in range(n)))


def gather(url: str, n: int, concurrency: int) -> list[Outcome]:
    """aiohttp on one event loop: `concurrency` requests in flight, one thread, no GIL hand-offs."""
    return asyncio.run(_gather(url, n, concurrency))


STRATEGIES: dict[Client, Callable[[str, int, int], list[Outcome]]] = {
    "loop": loop,
    "threadpool": threadpool,
    "session": session,
    "aiohttp": gather,
}


def check_strategy(name: str) -> None:
    choice("client", name, STRATEGIES)


def timed(strategy: Client, url: str, n: int, concurrency: int) -> dict:
    """Run one strategy and measure it from the inside: wall time, and the CPU of this whole process."""
    check_strategy(strategy)
    _first_reply_cpu.clear()
    _cpu.update(send_s=0.0, request_s=0.0)
    wall0, cpu0, t0 = time.perf_counter(), time.process_time(), time.time()
    outcomes = STRATEGIES[strategy](url, n, concurrency)
    wall_s, cpu_s = time.perf_counter() - wall0, time.process_time() - cpu0  # process_time counts every thread
    latencies = sorted(ms for _, ms, _ in outcomes)
    cuts = statistics.quantiles(latencies, n=100, method="inclusive") if len(latencies) > 1 else latencies * 99
    return {
        "client": strategy,
        "requests": n,
        "concurrency": concurrency,
        "started": t0,
        "wall_s": wall_s,
        "cpu_s": cpu_s,
        "first_cpu_s": _first_reply_cpu[0] - cpu0 if _first_reply_cpu else math.nan,  # until the first reply
        # requests only: the share of its calls' CPU spent before waiting for the reply (NaN: aiohttp)
        "send_share": _cpu["send_s"] / _cpu["request_s"] if _cpu["request_s"] > 0 else math.nan,
        "rps": n / wall_s,
        "client_cpu": cpu_s / wall_s,
        "failures": sum(not ok for _, _, ok in outcomes),
        "p50_ms": cuts[49],
        "p95_ms": cuts[94],
        "mean_ms": statistics.fmean(latencies),
        "ends": [round(end - t0, 4) for end, _, _ in outcomes],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m labserver.clients", description=__doc__.splitlines()[0])
    parser.add_argument("client", choices=list(STRATEGIES), help="how to send the requests")
    parser.add_argument("url", help="the URL to GET, e.g. http://127.0.0.1:8000/sequential?io_ms=50")
    parser.add_argument("--requests", type=int, default=100, help="how many requests to send (default: 100)")
    parser.add_argument("--concurrency", type=int, default=100, help="threads, or requests in flight (default: 100)")
    args = parser.parse_args(argv)
    if args.requests < 1 or args.concurrency < 1:
        parser.error("--requests and --concurrency must be at least 1")
    # The one library this client needs, imported before the clock starts (the functions' own
    # imports then find it loaded).
    __import__("aiohttp" if args.client == "aiohttp" else "requests")
    print(json.dumps(timed(args.client, args.url, args.requests, args.concurrency)), flush=True)
    return 0

"""A cheap request now and then while a plan measures (lesson 14): how long a route that does nothing waits.

A server's routes share its worker: its event loop, its GIL. A request that does no work
of its own still waits for them while another route's requests compute. Sent at random
moments (gaps drawn from an exponential distribution, so that the requests sample the
server's time evenly, whatever it is doing), each probe is timed from the client, on a
connection of its own and a thread of its own, as a health check or a page's small request would be. Each keeps its
send time, so that a run can take the probes sent inside its measurement window.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
import urllib.request
from collections.abc import Hashable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor

import pandas as pd

from labserver.checks import positive
from labserver.harness.launcher import Server

# An `async def` endpoint with nothing to do: one await of no time, no CPU of its own
CHEAP_PATH = "/sequential?tasks=1&io_ms=0&cpu_n=0"
TIMEOUT_S = 30  # a probe waits at most this long: far past any wait a lesson sets up
SENDERS = 16  # probes in flight at once, at most: a few wait out one busy spell together


class Probes:
    """Cheap requests sent at random to one server, about one every `every_s`, timed from here.

    `sending(servers)` sends them while its block runs (Plan.measure's `beside`); `frame()`
    holds each: `sent` (epoch s), `ms` (its round trip), `ok`.
    """

    def __init__(self, every_s: float, path: str = CHEAP_PATH, seed: int | None = None) -> None:
        self.every_s = positive("every_s", every_s, " s")
        self.path = path
        self.rng = random.Random(seed)
        self.sent: list[tuple[float, float, bool]] = []

    @contextlib.contextmanager
    def sending(self, servers: Mapping[Hashable, Server]) -> Iterator[Probes]:
        """Probe the plan's one server while the block runs; stop, and wait for the last probe, when it ends."""
        if len(servers) != 1:
            raise ValueError(f"probes go to one server; this plan starts {len(servers)}")
        (server,) = servers.values()
        url = f"{server.url}{self.path}"
        stop = threading.Event()

        def probe(sent: float) -> None:
            began = time.perf_counter()
            ok = True
            try:
                urllib.request.urlopen(url, timeout=TIMEOUT_S).read()
            except OSError:  # a probe that failed says so in its row; the run's own checks say why
                ok = False
            self.sent.append((sent, (time.perf_counter() - began) * 1000, ok))

        def probe_now_and_then(senders: ThreadPoolExecutor) -> None:
            # Sends keep to a clock of their own, not to the last reply: a probe that waited out a busy
            # spell would otherwise put the next one after it, where the server is more often free.
            due = time.monotonic()
            while True:
                due += self.rng.expovariate(1 / self.every_s)
                if stop.wait(max(0.0, due - time.monotonic())):
                    return
                senders.submit(probe, time.time())

        with ThreadPoolExecutor(max_workers=SENDERS, thread_name_prefix="probe") as senders:
            thread = threading.Thread(target=probe_now_and_then, args=(senders,), name="probes", daemon=True)
            thread.start()
            try:
                yield self
            finally:
                stop.set()
                thread.join()

    def frame(self) -> pd.DataFrame:
        """Every probe so far: `sent` (epoch s), `ms` (round trip), `ok`."""
        return pd.DataFrame(self.sent, columns=["sent", "ms", "ok"])

    def within(self, start: float, end: float) -> pd.DataFrame:
        """The probes sent from `start` up to `end` (epoch s): those of one run's window (RunResult.window)."""
        frame = self.frame()
        return frame[(frame["sent"] >= start) & (frame["sent"] < end)]

"""CPU use of a process tree, sampled while a run goes on (psutil).

Locust's own CPU warning comes from a sample taken every 10 s that reads 0 the first time,
so it never fires in a run shorter than about 20 s: the lab measures instead. The whole
machine's CPU, and the cores' speed, are machine.py's and probe.py's.

`RemoteCpuMeter` is `CpuMeter` for a server the lab did not start (harness/servers/remote.py): psutil
cannot see another machine, so the server reports its own processes' CPU seconds in /info.
`LocustMeter` is Locust's: its master's own process, measured here, and each of its workers'
CPU seconds as the worker reported them (they may run on other machines: locustfiles/pattern.py).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import TypeVar

import psutil

from labserver.harness.processes import procs
from labserver.harness.processes.scheduler import main_thread_seconds, thread_switches

K = TypeVar("K", bound=Hashable)  # what names a process: its pid, or a Locust worker's name


def usage(per_process: Mapping[K, float]) -> tuple[float, float]:
    """(cores used by all the processes, the busiest one's share of a core); NaN for none: what every meter reports."""
    if not per_process:
        return math.nan, math.nan
    return sum(per_process.values()), max(per_process.values())


def rates(readings: Iterable[tuple[K, float, float]], t0: float, t1: float) -> dict[K, float]:
    """Cores used by each process between t0 and t1, from its first and last (key, time, CPU seconds) inside."""
    spans: dict[K, list[tuple[float, float]]] = {}
    for key, t, seconds in readings:
        if t0 <= t <= t1:
            spans.setdefault(key, []).append((t, seconds))
    found: dict[K, float] = {}
    for key, inside in spans.items():
        (ta, a), (tb, b) = min(inside), max(inside)
        if tb > ta:
            found[key] = (b - a) / (tb - ta)
    return found


class CpuMeter:
    """Samples the CPU seconds of every process in the tree under `pid` (or of that one alone: `tree=False`)."""

    def __init__(self, pid: int, tree: bool = True):
        self.pid = pid
        self.tree = tree
        self.samples: list[tuple[float, dict[int, float]]] = []
        # Counters beside each process's CPU seconds, sampled with them (NaN where the OS does not keep one):
        # its CPU seconds in the kernel; seconds its main thread waited for a CPU, and ran on one (a
        # uvicorn worker's main thread is its event loop); its threads' context switches.
        self.counters: dict[str, list[tuple[float, dict[int, float]]]] = {
            "kernel": [],
            "waited": [],
            "loop": [],
            "switches": [],
        }
        self._threads: dict[int, dict[int, int]] = {}  # each process's threads' switches at the last sample
        self._switches: dict[int, float] = {}  # and the process's total so far

    def _switched(self, pid: int) -> float:
        """The context switches of `pid`'s threads so far, thread by thread: a thread that ends takes its
        count with it, so each sample adds what each thread did since the last (a floor: a thread
        born and ended between two samples, 0.25 s apart in a run, is missed)."""
        now = thread_switches(pid)
        if not now:
            return math.nan
        before = self._threads.get(pid)
        added = sum(now.values()) if before is None else sum(n - before.get(tid, 0) for tid, n in now.items())
        self._threads[pid] = now
        self._switches[pid] = self._switches.get(pid, 0.0) + added
        return self._switches[pid]

    def sample(self) -> None:
        seconds, kernel, waits, loop, switches = {}, {}, {}, {}, {}
        for p in procs.tree(self.pid)[: None if self.tree else 1]:
            try:
                t = p.cpu_times()
            except psutil.Error:
                continue
            seconds[p.pid] = t.user + t.system + t.children_user + t.children_system
            kernel[p.pid] = t.system + t.children_system
            loop[p.pid], waits[p.pid] = main_thread_seconds(p.pid)
            switches[p.pid] = self._switched(p.pid)
        now = time.time()
        self.samples.append((now, seconds))
        for name, values in (("kernel", kernel), ("waited", waits), ("loop", loop), ("switches", switches)):
            self.counters[name].append((now, values))

    def usage(self, t0: float, t1: float) -> tuple[float, float]:
        """(cores used by the whole tree, busiest single process's share of a core) between t0 and t1."""
        return usage(self.per_process(t0, t1))

    def per_process(self, t0: float, t1: float) -> dict[int, float]:
        """Cores used by each process of the tree between t0 and t1 (those alive at both ends of it)."""
        inside = [s for s in self.samples if t0 <= s[0] <= t1]
        if len(inside) < 2:
            return {}
        (ta, a), (tb, b) = inside[0], inside[-1]
        return {pid: (b[pid] - a[pid]) / (tb - ta) for pid in b if pid in a}

    def waited(self, t0: float, t1: float) -> dict[int, float]:
        """Share of the time between t0 and t1 each process's main thread was ready to run but had no CPU."""
        return self.per_second("waited", t0, t1)

    def per_second(self, counter: str, t0: float, t1: float) -> dict[int, float]:
        """How fast `counter` grew in each process between t0 and t1 (its first and last sample inside):
        "kernel", cores busy in the kernel; "waited", see `waited`; "loop", the share of a core its main
        thread kept busy; "switches", context switches a second."""
        inside = [s for s in self.counters[counter] if t0 <= s[0] <= t1]
        if len(inside) < 2:
            return {}
        (ta, a), (tb, b) = inside[0], inside[-1]
        return {pid: (b[pid] - a[pid]) / (tb - ta) for pid in b if pid in a and math.isfinite(b[pid] - a[pid])}


class RemoteCpuMeter:
    """CpuMeter's figures for a server that reports its own CPU: `fetch` returns its /info.

    /info's `cpu` gives each of the server's processes' CPU seconds, each read at its own moment
    `t` on the server's clock (another worker's are up to 100 ms old), and `time`, the server's
    clock as it answered. The server's clock is placed on this one by the answer that came back
    fastest (its offset is known to within half that round trip, as NTP does it), so a clock set
    seconds apart on another machine moves no window. A sample that fails or times out is skipped:
    each process's rate comes from its first and last reading inside a window, whenever they were.
    """

    def __init__(self, fetch: Callable[[], dict], clock: Callable[[], float] = time.time):
        self.fetch = fetch
        self.clock = clock
        self.readings: list[tuple[int, float, float]] = []  # (pid, server's t, cpu seconds)
        self.offset = 0.0  # this clock minus the server's
        self.round_trip = math.inf  # of the answer that gave `offset`

    def sample(self) -> None:
        sent = self.clock()
        try:
            cpu = self.fetch()["cpu"]
            entries = [(int(e["pid"]), float(e["t"]), float(e["cpu_s"])) for e in cpu["processes"]]
            server_now = float(cpu["time"])
        except (OSError, ValueError, KeyError, TypeError):  # busy, gone, or not reporting: no reading this time
            return
        received = self.clock()
        if received - sent < self.round_trip:
            self.round_trip = received - sent
            self.offset = (sent + received) / 2 - server_now
        self.readings += entries

    def usage(self, t0: float, t1: float) -> tuple[float, float]:
        """(cores used by all the server's processes, busiest single process's share of a core) between t0 and t1."""
        return usage(self.per_process(t0, t1))

    def per_process(self, t0: float, t1: float) -> dict[int, float]:
        """Cores used by each of the server's processes between t0 and t1 (this machine's clock)."""
        return rates(((pid, t + self.offset, seconds) for pid, t, seconds in self.readings), t0, t1)


ServerMeter = CpuMeter | RemoteCpuMeter  # a server's meter: on this machine, or one that reports over HTTP


class LocustMeter:
    """Locust's CPU: its master's (or single) process, sampled here, and the CPU its workers report.

    `reported` holds each worker's (its name, time on this clock, CPU seconds), as the master
    wrote them when the test ended (records.worker_cpu). Each worker is one process on a core
    of its own, so the busiest says whether any of them saturated.
    """

    def __init__(self, local: CpuMeter, reported: list[tuple[str, float, float]] | None = None):
        self.local = local
        self.reported = reported or []

    def sample(self) -> None:
        self.local.sample()

    def usage(self, t0: float, t1: float) -> tuple[float, float]:
        """(cores used by the master and every worker, the busiest one's share of a core) between t0 and t1."""
        return usage(self.per_process(t0, t1))

    def per_process(self, t0: float, t1: float) -> dict[int | str, float]:
        """Cores used by the master (by pid) and by each worker (by its name) between t0 and t1."""
        found: dict[int | str, float] = dict(self.local.per_process(t0, t1).items())
        found.update(rates(self.reported, t0, t1).items())  # a dict's keys are invariant: widened item by item
        return found


def tree_seconds(pid: int, *, reaped: bool = False) -> float:
    """CPU seconds (user + system) used so far by the process `pid` and its live descendants; `reaped`: and by
    the children they waited for, so that the sum never falls when one of them ends."""
    total = 0.0
    for p in procs.tree(pid):
        try:
            t = p.cpu_times()
            total += t.user + t.system + (t.children_user + t.children_system if reaped else 0.0)
        except psutil.Error:
            pass
    return total

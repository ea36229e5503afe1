"""CPU use of a process tree, sampled while a run goes on (psutil).

Locust's own CPU warning comes from a sample taken every 10 s that reads 0 the first time,
so it never fires in a run shorter than about 20 s: the lab measures instead.

`MachineMeter` reads the whole machine's busy time, so that a run can tell what the server
and Locust used from what everything else on the machine took meanwhile (a shared laptop,
a second notebook, a build): CPU that was not there for the measurement.

It also times a fixed piece of Python on each core in turn (`probe_ms`): a virtual machine's host
can slow its cores by up to a half for seconds at a time (their clock, or their other hardware
thread given to another guest) without any steal time, and a run priced on fast cores and run on
slow ones misses its before-prediction for a cause no counter of this machine records.

`RemoteCpuMeter` is `CpuMeter` for a server the lab did not start (harness/servers/remote.py): psutil
cannot see another machine, so the server reports its own processes' CPU seconds in /info.
`LocustMeter` is Locust's: its master's own process, measured here, and each of its workers'
CPU seconds as the worker reported them (they may run on other machines: locustfiles/pattern.py).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import TypeVar

import psutil

from labserver.demo import cpus
from labserver.harness.processes import pauses, procs

# The probe's work: fib(PROBE_N), about a tenth of a ms, twice on each core, the lesser kept (the first can pay for a
# core's wake-up); a few each second cost well under a thousandth of a core
PROBE_N = 15
PROBES_AT_LEAST = 4  # a window's speed is the median of this many probes or more
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


def _fib(n: int) -> int:
    return n if n < 2 else _fib(n - 1) + _fib(n - 2)


def probe_ms(cpu: int | None = None) -> float:
    """The CPU time of the probe's work on this thread, in ms: on `cpu` (this thread moved there for it, then put
    back), or wherever it runs. The thread's own CPU clock leaves out the time other processes held the core."""
    pinned = cpu is not None and hasattr(os, "sched_setaffinity")
    allowed = os.sched_getaffinity(0) if pinned else set()
    if cpu is not None and pinned:
        os.sched_setaffinity(0, {cpu})  # this thread only, on Linux
    try:
        best = math.inf
        for _ in range(2):
            started = time.thread_time_ns()
            _fib(PROBE_N)
            best = min(best, time.thread_time_ns() - started)
        return best / 1e6
    finally:
        if pinned:
            os.sched_setaffinity(0, allowed)


def probe_each() -> list[float]:
    """`probe_ms` on each CPU this thread may use, in turn (once, where the OS cannot pin a thread)."""
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    return [probe_ms(cpu) for cpu in allowed] if allowed else [probe_ms()]


def median(values: list[float]) -> float:
    """The middle of `values` (NaN for none)."""
    ordered = sorted(v for v in values if math.isfinite(v))
    if not ordered:
        return math.nan
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def waited_seconds(pid: int) -> float:
    """Seconds the main thread of `pid` has spent ready to run, waiting for a CPU (NaN where the OS does not say).

    It is time the thread loses to whatever holds the cores, apart from the time it has nothing to
    do: a worker with requests queued that keeps less than its whole core busy has waited for the
    rest while other processes (Locust's) ran on it (lesson 00's busiest run; docs/evidence.md).
    """
    return main_thread_seconds(pid)[1]


def main_thread_seconds(pid: int) -> tuple[float, float]:
    """Seconds the main thread of `pid` has run on a CPU, and waited for one while ready (NaN, NaN where
    the OS does not say): Linux's scheduler keeps both (/proc/<pid>/schedstat, in ns).

    A uvicorn worker's main thread is its event loop, so the two and the time left (asleep) say
    what held a worker back where its threads share the GIL (lesson 07): a loop that neither runs
    nor waits for a CPU while requests queue is asleep, on the GIL's lock or waiting for a request.
    """
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            on_cpu, waited = f.read().split()[:2]
        return int(on_cpu) / 1e9, int(waited) / 1e9
    except (OSError, ValueError):
        return math.nan, math.nan


def thread_switches(pid: int) -> dict[int, int]:
    """Context switches of each thread of `pid` so far, voluntary and not ({} where the OS does not say).

    Each is a thread leaving a CPU: blocking (a socket, a lock, the GIL) or preempted. Linux keeps
    them per thread (/proc/<pid>/task/<tid>/status); a process's own status has its main thread's
    alone, and a sync endpoint's work runs on its thread pool's threads.
    """
    return per_thread(pid, "status", _switches)


def _switches(status: str) -> int:
    """A thread's voluntary_ctxt_switches and nonvoluntary_ctxt_switches, from its /proc status, added."""
    return sum(int(line.split()[1]) for line in status.splitlines() if "ctxt_switches:" in line)


N = TypeVar("N", int, float)


def per_thread(pid: int, name: str, parse: Callable[[str], N]) -> dict[int, N]:
    """Each thread of `pid`'s /proc/<pid>/task/<tid>/`name`, as `parse` reads it ({} where the OS keeps none)."""
    found: dict[int, N] = {}
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/{name}") as f:
                found[int(tid)] = parse(f.read())
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended between listing and reading
    return found


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


def busy_seconds() -> float:
    """CPU seconds the CPUs this process may run on have been busy since boot, summed (kernel work included).

    Only those CPUs: pinned to one (`taskset`), the work on the others does not compete with a run.
    """
    allowed = cpus.usable_cpus()
    per_cpu = psutil.cpu_times(percpu=True)
    chosen = [per_cpu[i] for i in allowed if i < len(per_cpu)] if allowed else per_cpu
    # guest time is already inside user time on Linux; iowait is idle, waiting on a disk
    names = ("user", "nice", "system", "irq", "softirq", "steal")
    return sum(getattr(t, name, 0.0) for t in chosen for name in names)


def _rate(series: list[tuple[float, float]], t0: float, t1: float) -> float:
    """How fast a counter sampled as (time, seconds) grew between t0 and t1; NaN with fewer than two samples."""
    inside = [s for s in series if t0 <= s[0] <= t1]
    if len(inside) < 2 or inside[-1][0] <= inside[0][0]:
        return math.nan
    (ta, a), (tb, b) = inside[0], inside[-1]
    return (b - a) / (tb - ta)


def interrupt_seconds() -> float:
    """CPU seconds the CPUs this process may run on spent in interrupts since boot (loopback traffic's among them)."""
    allowed = cpus.usable_cpus()
    per_cpu = psutil.cpu_times(percpu=True)
    chosen = [per_cpu[i] for i in allowed if i < len(per_cpu)] if allowed else per_cpu
    return sum(getattr(t, name, 0.0) for t in chosen for name in ("irq", "softirq"))


def stolen_seconds() -> float:
    """CPU seconds the host has given to others while this machine's CPUs had work (steal time), summed since boot.

    Only a virtual machine has any: its host ran a neighbour instead. Only the CPUs this process
    may run on, as in `busy_seconds` (which counts them as busy: they were not there for the lab).
    """
    allowed = cpus.usable_cpus()
    per_cpu = psutil.cpu_times(percpu=True)
    chosen = [per_cpu[i] for i in allowed if i < len(per_cpu)] if allowed else per_cpu
    return sum(getattr(t, "steal", 0.0) for t in chosen)


class MachineMeter:
    """Samples the machine's busy CPU seconds; `usage` gives the cores in use between two moments."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float]] = []
        self.throttled: list[tuple[float, float]] = []  # seconds held back by a cgroup CPU quota, so far
        self.stolen: list[tuple[float, float]] = []  # seconds the host gave to others (steal time), so far
        # when the whole machine stopped (harness/processes/pauses.py): filled in after a plan
        self.pauses: list[tuple[float, float]] = []
        # CPU seconds of every process the lab runs (this process and its descendants: the notebook, the
        # servers, Locust, a database, an upstream service), and of the CPUs' interrupts: the rest of the
        # busy time is other programs' and the host's, which disturbed the run
        self.lab: list[tuple[float, float]] = []
        self.interrupts: list[tuple[float, float]] = []
        self.probes: list[tuple[float, float]] = []  # (time, probe_ms), one core a sample, in turn
        self._next_cpu = 0

    def sample(self) -> None:
        allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        cpu = allowed[self._next_cpu % len(allowed)] if allowed else None
        self._next_cpu += 1
        self.probes.append((time.time(), probe_ms(cpu)))
        now = time.time()
        self.samples.append((now, busy_seconds()))
        self.throttled.append((now, cpus.throttled_s()))
        self.stolen.append((now, stolen_seconds()))
        self.lab.append((now, tree_seconds(os.getpid(), reaped=True)))
        self.interrupts.append((now, interrupt_seconds()))

    def disturbed_cores(self, t0: float, t1: float) -> float:
        """Cores neither the lab's processes nor interrupts used between t0 and t1: other programs', and the host's
        (steal time). NaN without samples of both."""
        lab, interrupts = _rate(self.lab, t0, t1), _rate(self.interrupts, t0, t1)
        return max(0.0, self.usage(t0, t1) - lab - interrupts)

    def probe_ms(self, t0: float, t1: float) -> float:
        """The median probe between t0 and t1, in ms: the cores' speed (NaN with fewer than PROBES_AT_LEAST)."""
        inside = [ms for t, ms in self.probes if t0 <= t <= t1]
        return median(inside) if len(inside) >= PROBES_AT_LEAST else math.nan

    def throttled_s(self, t0: float, t1: float) -> float:
        """Seconds the lab's cgroup was held back by its CPU quota between t0 and t1 (0 without a quota)."""
        inside = [s for s in self.throttled if t0 <= s[0] <= t1]
        return inside[-1][1] - inside[0][1] if len(inside) >= 2 else 0.0

    def stolen_cores(self, t0: float, t1: float) -> float:
        """Cores the host took from this machine between t0 and t1 (steal time; NaN with fewer than two samples)."""
        inside = [s for s in self.stolen if t0 <= s[0] <= t1]
        if len(inside) < 2 or inside[-1][0] <= inside[0][0]:
            return math.nan
        (ta, a), (tb, b) = inside[0], inside[-1]
        return (b - a) / (tb - ta)

    def paused_ms(self, t0: float, t1: float) -> float:
        """The longest pause of the whole machine between t0 and t1 (ms; 0: none seen, NaN: no window)."""
        return pauses.longest_ms(self.pauses, t0, t1)

    def usage(self, t0: float, t1: float) -> float:
        """Cores busy between t0 and t1 (from the first to the last sample inside), NaN with fewer than two samples."""
        inside = [s for s in self.samples if t0 <= s[0] <= t1]
        if len(inside) < 2 or inside[-1][0] <= inside[0][0]:
            return float("nan")
        (ta, a), (tb, b) = inside[0], inside[-1]
        return (b - a) / (tb - ta)


def wait_until_quiet(max_cores: float = 0.3, timeout_s: float = 60.0, probe_s: float = 0.5) -> float:
    """Wait until the whole machine uses at most `max_cores` for `probe_s` (others' work, between runs).

    Returns the seconds waited; gives up after `timeout_s` (then the run's `other_cpu` says why).
    """
    started = time.monotonic()
    while True:
        meter = MachineMeter()
        meter.sample()
        time.sleep(probe_s)
        meter.sample()
        if meter.usage(0, float("inf")) <= max_cores or time.monotonic() - started >= timeout_s:
            return time.monotonic() - started

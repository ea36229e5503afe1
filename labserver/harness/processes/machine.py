"""The whole machine's CPU, sampled while a run goes on: its busy seconds, its interrupts, the host's steal time, a
cgroup quota's throttling and the cores' speed (`MachineMeter`), so that a run can tell what the server and Locust used
from what everything else on the machine took meanwhile (a shared laptop, a second notebook, a build): CPU that was not
there for the measurement. `wait_until_quiet` waits, between runs, for others' work to end.
"""

from __future__ import annotations

import math
import os
import time

import psutil

from labserver.demo import cpus
from labserver.harness.processes import pauses
from labserver.harness.processes.meters import tree_seconds
from labserver.harness.processes.probe import PROBES_AT_LEAST, median, probe_ms


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

"""CPU use of a process tree, sampled while a run goes on (psutil).

Locust's own CPU warning comes from a sample taken every 10 s that reads 0 the first time,
so it never fires in a run shorter than about 20 s: the lab measures instead.
"""

from __future__ import annotations

import time

import psutil

from labserver import procs


class CpuMeter:
    """Samples the CPU seconds of every process in the tree under `pid`."""

    def __init__(self, pid: int):
        self.pid = pid
        self.samples: list[tuple[float, dict[int, float]]] = []

    def sample(self) -> None:
        seconds = {}
        for p in procs.tree(self.pid):
            try:
                t = p.cpu_times()
                seconds[p.pid] = t.user + t.system + t.children_user + t.children_system
            except psutil.Error:
                pass
        self.samples.append((time.time(), seconds))

    def usage(self, t0: float, t1: float) -> tuple[float, float]:
        """(cores used by the whole tree, busiest single process's share of a core) between t0 and t1."""
        inside = [s for s in self.samples if t0 <= s[0] <= t1]
        if len(inside) < 2:
            return float("nan"), float("nan")
        (ta, a), (tb, b) = inside[0], inside[-1]
        dt = tb - ta
        per_process = [(b[pid] - a[pid]) / dt for pid in b if pid in a]
        if not per_process:
            return float("nan"), float("nan")
        return sum(per_process), max(per_process)

"""The CPUs this process may use, and pinning a server to some of them.

`os.cpu_count()` counts the machine's CPUs, not the ones a process may use: an affinity mask
(`taskset`, a pinned server) lets it run on fewer, and a cgroup CPU quota (Docker's `--cpus`,
a Kubernetes limit, Binder) lets it use fewer CPUs' worth of time, wherever it runs. `cores()`
takes the smaller of the two; the model, the settings' defaults and the claims use it.
"""

from __future__ import annotations

import contextlib
import math
import os
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_CGROUP = Path("/proc/self/cgroup")


def usable_cpus() -> list[int]:
    """The CPUs this process may run on, or [] where the OS cannot pin processes (macOS)."""
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def cores(root: Path = CGROUP_ROOT, proc_cgroup: Path = PROC_CGROUP) -> float:
    """CPUs' worth of time this process may use: its affinity mask or its cgroup quota, whichever is smaller."""
    allowed = len(usable_cpus()) or os.cpu_count() or 1
    quota = cgroup_quota(root, proc_cgroup)
    return float(min(allowed, quota)) if quota is not None else float(allowed)


def whole_cores(root: Path = CGROUP_ROOT, proc_cgroup: Path = PROC_CGROUP) -> int:
    """`cores()` as a count of processes that can run at once (a quota of 1.5 lets one run flat out)."""
    return max(1, math.floor(cores(root, proc_cgroup) + 1e-9))


def cgroup_quota(root: Path = CGROUP_ROOT, proc_cgroup: Path = PROC_CGROUP) -> float | None:
    """The CPU quota of this process's cgroup and its parents (v2 `cpu.max`, v1 `cpu.cfs_quota_us`), in CPUs.

    None when no quota applies (or the files cannot be read): the smallest quota on the way up wins.
    """
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return None
    quotas = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # v2: one unified hierarchy
            quotas += _walk(_v2_root(root), path, _v2_quota)
        elif "cpu" in controllers.split(","):
            quotas += _walk(_v1_root(root, controllers), path, _v1_quota)
    return min(quotas) if quotas else None


def throttled_s(root: Path = CGROUP_ROOT, proc_cgroup: Path = PROC_CGROUP) -> float:
    """Seconds this process's cgroup has been held back by its CPU quota so far (0 without a quota)."""
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return 0.0
    total = 0.0
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            stat, key, unit = _v2_root(root) / path.lstrip("/") / "cpu.stat", "throttled_usec", 1e-6
        elif "cpu" in controllers.split(","):
            stat, key, unit = _v1_root(root, controllers) / path.lstrip("/") / "cpu.stat", "throttled_time", 1e-9
        else:
            continue
        try:
            fields = dict(line.split() for line in stat.read_text().splitlines() if line.strip())
        except (OSError, ValueError):
            continue
        total = max(total, int(fields.get(key, 0)) * unit)  # v1 and v2 may both count the same throttling
    return total


def _v2_root(root: Path) -> Path:
    # A hybrid host mounts v2 under unified/; a pure v2 host mounts it at the root.
    return root / "unified" if (root / "unified" / "cgroup.controllers").exists() else root


def _v1_root(root: Path, controllers: str) -> Path:
    for name in (controllers, "cpu,cpuacct", "cpu"):
        if (root / name).is_dir():
            return root / name
    return root / "cpu"


def _walk(mount: Path, path: str, read) -> list[float]:
    """Each quota from the process's own cgroup up to the root of the mount."""
    found = []
    folder = mount / path.lstrip("/")
    while True:
        quota = read(folder)
        if quota is not None:
            found.append(quota)
        if folder == mount or mount not in folder.parents:
            return found
        folder = folder.parent


def _v2_quota(folder: Path) -> float | None:
    try:
        quota, period = (folder / "cpu.max").read_text().split()
    except (OSError, ValueError):
        return None
    return None if quota == "max" else int(quota) / int(period)


def _v1_quota(folder: Path) -> float | None:
    try:
        quota = int((folder / "cpu.cfs_quota_us").read_text())
        period = int((folder / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return None if quota < 0 or period <= 0 else quota / period


def check_cpus(cpus) -> None:
    """Raise ValueError unless `cpus` is a non-empty set of CPUs this process may use."""
    usable = usable_cpus()
    if not usable:
        raise ValueError("cpus (pinning the server to cores) needs Linux: this OS cannot pin a process")
    if not isinstance(cpus, tuple | list) or not cpus or not all(type(c) is int and c in usable for c in cpus):
        raise ValueError(f"cpus must be a list of CPUs from {usable}, got {cpus!r}")


def pin(cpus, pid: int | str = "self") -> None:
    """Pin every thread of a process (this one by default) to `cpus`; what it starts later inherits that."""
    # sched_setaffinity(pid) pins only that one thread: set it for each thread already running too.
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(ProcessLookupError):  # a thread that ended in between
            os.sched_setaffinity(int(tid), cpus)

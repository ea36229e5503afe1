"""The CPUs this process may run on, and pinning a server to some of them."""

from __future__ import annotations

import os


def usable_cpus() -> list[int]:
    """The CPUs this process may run on, or [] where the OS cannot pin processes (macOS)."""
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def check_cpus(cpus) -> None:
    """Raise ValueError unless `cpus` is a non-empty set of CPUs this process may use."""
    usable = usable_cpus()
    if not usable:
        raise ValueError("cpus (pinning the server to cores) needs Linux: this OS cannot pin a process")
    if not isinstance(cpus, tuple | list) or not cpus or not all(type(c) is int and c in usable for c in cpus):
        raise ValueError(f"cpus must be a list of CPUs from {usable}, got {cpus!r}")


def pin(cpus) -> None:
    """Pin every thread of this process to `cpus`; the threads and processes it starts later inherit that."""
    # sched_setaffinity(0) pins only the calling thread: set it for each thread already running too.
    for tid in os.listdir("/proc/self/task"):
        os.sched_setaffinity(int(tid), cpus)

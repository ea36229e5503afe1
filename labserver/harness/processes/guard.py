"""The guard: a small process that outlives its owner to stop the owner's children.

`procs.spawn` starts one guard per owner (a kernel, papermill, a script) and tells it, over a
pipe, each process group it starts and stops. When the owner dies, however it dies, the pipe
closes; the guard then ends every group still listed: SIGTERM, a short grace, SIGKILL. This
reaches what the parent-death signal cannot: uvicorn's `--workers`, Locust's `--processes`
forks, process pools, and children whose parent-death signal was lost.

    python -m labserver.harness.processes.guard <owner-pid> <pipe-fd>
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys

GRACE_S = 1.0  # the owner is gone and nobody reads the results: no need to wait long


def watch(owner: int, fd: int) -> set[int]:
    """Follow the owner's messages until it is gone; return the process groups it left running."""
    groups: set[int] = set()
    pending = b""
    while True:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:  # every copy of the write end is closed: the owner is gone
                return groups
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                pgid = int(line[1:])
                if line.startswith(b"+"):
                    groups.add(pgid)
                else:
                    groups.discard(pgid)
        elif os.getppid() != owner:  # re-parented: the owner died, though something it forked holds the pipe
            return groups


def stop(groups: set[int]) -> None:
    from labserver.harness.processes import procs  # imported late: the guard waits for hours on a few bytes of memory

    for sig, wait_s in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, 3.0)):
        for pgid in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, sig)
        groups = {pgid for pgid in groups if procs.wait_gone(pgid, [], wait_s)}
        if not groups:
            return


def main(argv: list[str]) -> int:
    owner, fd = int(argv[0]), int(argv[1])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C meant for the owner is not for its guard
    stop(watch(owner, fd))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

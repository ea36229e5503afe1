"""The process that sends a measurement's load (Locust, or lesson 06's client), run to its end under watch.

Beside it runs the watcher of the machine's pauses (pauses.py), which sees from outside every
process of the run whether the whole machine stopped. The supervisor waits for the process to
exit and cuts it short when a server dies or its time is up. Whatever happens, both processes
are stopped on the way out, and an exception (a Ctrl-C) is written down as the run's status, so
that the caller can save what was measured so far before the exception goes on.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from labserver.harness import pauses, procs
from labserver.paths import ROOT


@dataclass
class Watched:
    """How a supervised process went: "ok", or why it was cut short and when (epoch s)."""

    proc: Any = None  # its Popen, once started
    status: str = "ok"
    ended: float | None = None
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    def stop(self, status: str) -> None:
        self.status, self.ended = status, time.time()


@contextlib.contextmanager
def supervised(
    run: Watched, cmd: list[str], log: Path, *, pauses_file: Path, lasts_s: float, grace_s: float
) -> Iterator:
    """Start `cmd` (its output in `log`) beside the pause watcher (writing `pauses_file`, for `lasts_s` at most).

    On the way out both are stopped, the process with `grace_s` to write what it measured, and an
    exception on its way is recorded in `run` as "interrupted" (Ctrl-C) or "failed (...)".
    """
    watcher: list[subprocess.Popen] = []  # each filled in the spawner's thread: a Ctrl-C cannot separate
    started: list[subprocess.Popen] = []  # a process from its handle
    try:
        # the machine's pauses, watched from outside every process of the run (pauses.py); it stops by itself
        procs.spawn(pauses.command(pauses_file, lasts_s), pauses_file, on_start=watcher.append)
        procs.spawn(cmd, log, cwd=ROOT, on_start=started.append)
        run.proc = started[0]
        yield run
    except KeyboardInterrupt:
        run.stop("interrupted")
        raise
    except BaseException as e:
        run.stop(f"failed ({type(e).__name__})")
        raise
    finally:
        if started:
            procs.stop_tree(started[0], grace_s=grace_s)  # SIGTERM first: Locust writes what it measured so far
        if watcher:
            procs.stop_tree(watcher[0], grace_s=1)


def until_exit(
    run: Watched,
    servers: Sequence,
    *,
    deadline_s: float,
    tick: Callable[[], None] | None = None,
    every_s: float = 0.25,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Wait for `run`'s process to exit, calling `tick` each time round (about every `every_s` s).

    It is cut short, and `run` says why, once a server of `servers` has died or `deadline_s` have passed.
    """
    deadline = clock() + deadline_s
    while run.proc.poll() is None:
        if tick is not None:
            tick()
        if not all(s.alive for s in servers):
            run.stop("server died")
            return
        if clock() > deadline:
            run.stop("timed out")
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            run.proc.wait(timeout=every_s)  # returns the moment it exits: no part of a tick is slept away

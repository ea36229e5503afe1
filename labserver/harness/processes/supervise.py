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
from enum import StrEnum
from pathlib import Path
from typing import Any

from labserver.harness.processes import pauses, procs
from labserver.paths import ROOT


class Status(StrEnum):
    """How a run ended, in the words of its `status` column: "ok", or why it was cut short.

    Some carry a detail after them in the column (see Watched.label): "failed (ValueError)".
    """

    OK = "ok"
    INTERRUPTED = "interrupted"  # a Ctrl-C
    FAILED = "failed"  # any other exception, named after it
    SERVER_DIED = "server died"
    TIMED_OUT = "timed out"
    TOO_FEW_WORKERS = "too few Locust workers"  # classroom mode: "... joined in 60 s"
    LOCUST_FAILED = "locust failed"  # Locust ended with an error of its own
    CLIENT_FAILED = "client failed"  # lesson 06's client: its exit code and log after it


@dataclass
class Watched:
    """How a supervised process went: "ok", or why it was cut short and when (epoch s)."""

    proc: Any = None  # its Popen, once started
    status: Status = Status.OK
    ended: float | None = None
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    detail: str = ""  # what the status's label adds after it

    def stop(self, status: Status, detail: str = "") -> None:
        self.status, self.detail, self.ended = status, detail, time.time()

    @property
    def label(self) -> str:
        """The status as a run's row says it: the status, then its detail if it has one."""
        return f"{self.status} {self.detail}" if self.detail else str(self.status)


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
        run.stop(Status.INTERRUPTED)
        raise
    except BaseException as e:
        run.stop(Status.FAILED, f"({type(e).__name__})")
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
            run.stop(Status.SERVER_DIED)
            return
        if clock() > deadline:
            run.stop(Status.TIMED_OUT)
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            run.proc.wait(timeout=every_s)  # returns the moment it exits: no part of a tick is slept away

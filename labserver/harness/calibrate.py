"""The service time S of the thread-pool endpoint, measured once per kernel (lessons 08 and 09).

Every open-loop prediction needs S: how long a request holds one of the `threads` slots when
nothing queues. A closed loop of fewer users than threads measures it: its mean latency is the
sleep and what the server adds to it. Lesson cells call `service_time`; the first call with a
given set of settings measures, later calls in the same kernel reuse that measurement, so any run
cell can be re-run on its own after the setup cell, and an instructor's re-run costs no extra
calibration.
"""

from __future__ import annotations

from dataclasses import dataclass

from labserver.harness import results
from labserver.harness.launcher import LabServer
from labserver.harness.load import run_plan

SHARE = 0.6  # users per thread in the calibrating closed loop: fewer than the threads, so nothing queues


@dataclass(frozen=True)
class Calibration:
    """S measured on a server of `threads` threads, and the run that measured it."""

    service_s: float
    threads: int
    run: results.RunResult

    @property
    def capacity(self) -> float:
        """Requests per second the pool serves when every slot is busy: c / S."""
        return self.threads / self.service_s

    def __str__(self) -> str:
        return (
            f"S = {self.service_s * 1000:.1f} ms (closed loop of {self.run.row['users']} users, "
            f"run {self.run.row['run_id']}): capacity {self.capacity:.0f} req/s"
        )


_measured: dict[tuple, Calibration] = {}


def service_time(
    *, threads: int, io_ms: int, duration_s: int, lesson: str | None = None, fresh: bool = False
) -> Calibration:
    """S of the `threadpool` endpoint at `io_ms`, measured once per kernel for these settings.

    `fresh` measures again (and keeps the new value), say after the machine's load changed.
    """
    key = (threads, io_ms, duration_s)
    if fresh or key not in _measured:
        users = max(1, round(SHARE * threads))
        with LabServer(threads=threads) as server:
            run = run_plan(
                server,
                [{"pattern": "threadpool", "users": users, "io_ms": io_ms}],
                duration_s=duration_s,
                lesson=lesson,
            )[0]
        _measured[key] = Calibration(run.row["mean_ms"] / 1000, threads, run)
        print(f"measured {_measured[key]}")
    else:
        print(f"{_measured[key]}; measured earlier in this kernel (fresh=True measures again)")
    return _measured[key]

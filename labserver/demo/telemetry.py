"""A worker's insides over time: requests in flight, the thread pool, the process pool, the loop's lag.

`Gauges` reads the counters a worker keeps at one moment (/info shows them). When the launcher
names a folder (settings.telemetry_dir), the app's lifespan starts one `Sampler` task per worker:
every 100 ms it wakes, notes how late it woke (the event loop's lag: code that holds the loop
wakes it late) and reads the gauges; about once a second it appends its samples to
`<folder>/<pid>.jsonl`, one JSON object a line. The harness cuts each run's share out of those
files (labserver/harness/telemetry.py). Standard library and AnyIO only: every worker imports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

import anyio.to_thread

EVERY_S = 0.1
# Samples reach the file about once a second, so that a run's last ones are on disk soon after it
# ends. By the clock, not by count: a blocked loop samples rarely, and each of its samples matters.
FLUSH_S = 1.0
# One sample's fields, in the order the harness writes them; `t` is epoch seconds, the clock of
# Locust's records, so that a run's window cuts both alike.
FIELDS = ("t", "in_flight", "threads_busy", "threads_waiting", "pool_running", "pool_queued", "loop_lag_ms")


class CountingPool(ProcessPoolExecutor):
    """A ProcessPoolExecutor that counts the tasks it was given and those that finished.

    The executor says neither how many tasks it runs nor how many wait: the difference of the
    two counts is the tasks in the pool, of which at most `procs` run at a time.
    """

    def __init__(self, procs: int, **kwargs):
        super().__init__(procs, **kwargs)
        self.procs = procs
        self.submitted = 0
        self.finished = 0
        # done callbacks run in the executor's own thread, submits on the event loop's
        self._count_lock = threading.Lock()

    def submit(self, fn, /, *args, **kwargs) -> Future:
        with self._count_lock:
            self.submitted += 1  # before: a task that finishes at once must not count below zero
        try:
            future = super().submit(fn, *args, **kwargs)
        except BaseException:
            with self._count_lock:
                self.submitted -= 1
            raise
        future.add_done_callback(self._done)
        return future

    def _done(self, _future: Future) -> None:
        with self._count_lock:
            self.finished += 1

    def running_queued(self) -> tuple[int, int]:
        """(tasks running, tasks waiting for a pool process)."""
        with self._count_lock:
            inside = self.submitted - self.finished
        running = min(inside, self.procs)
        return running, inside - running


class Gauges:
    """What a worker is doing at one moment, from counters it keeps anyway.

    `in_flight` and `pool` are read when asked: the middleware that counts requests and the
    process pool are both built after the app (by Starlette, by the lifespan).
    """

    def __init__(
        self,
        in_flight: Callable[[], int | None],
        pool: Callable[[], CountingPool | None],
        limiter: Callable = anyio.to_thread.current_default_thread_limiter,  # one per event loop: ask in the loop
    ):
        self.in_flight = in_flight
        self.pool = pool
        self.limiter = limiter

    def read(self) -> dict:
        threads = self.limiter().statistics()
        pool = self.pool()
        running, queued = pool.running_queued() if pool is not None else (0, 0)
        return {
            "in_flight": self.in_flight(),
            "threads_busy": threads.borrowed_tokens,  # threads running a `def` endpoint (or other sync work)
            "threads_waiting": threads.tasks_waiting,  # requests queued for a thread
            "pool_running": running,
            "pool_queued": queued,
        }


class Sampler:
    """Samples `gauges` every `every_s` and appends them to `<folder>/<pid>.jsonl` every `flush_s` or so.

    `sleep`, `clock` (for the lag) and `wall` (for the samples' time) are the real ones but in tests.
    """

    def __init__(
        self,
        folder: str | Path,
        gauges: Gauges,
        every_s: float = EVERY_S,
        flush_s: float = FLUSH_S,
        sleep: Callable[[float], Awaitable] = asyncio.sleep,
        clock: Callable[[], float] = time.perf_counter,
        wall: Callable[[], float] = time.time,
    ):
        self.path = Path(folder) / f"{os.getpid()}.jsonl"
        self.gauges = gauges
        self.every_s = every_s
        self.flush_s = flush_s
        self.sleep, self.clock, self.wall = sleep, clock, wall
        self.buffer: list[str] = []
        self.flushed_at = clock()

    async def tick(self) -> dict:
        """Sleep one period and take a sample: the gauges, and how late the wake-up came."""
        before = self.clock()
        await self.sleep(self.every_s)
        # A free loop wakes the timer within a millisecond or so; one held by a blocking call
        # (lesson 05) wakes it only when the call returns.
        lag_s = max(0.0, self.clock() - before - self.every_s)
        sample = {"t": round(self.wall(), 4), **self.gauges.read(), "loop_lag_ms": round(lag_s * 1000, 2)}
        self.buffer.append(json.dumps(sample, separators=(",", ":")))
        if self.clock() - self.flushed_at >= self.flush_s:
            self.flush()
        return sample

    def flush(self) -> None:
        self.flushed_at = self.clock()
        if not self.buffer:
            return
        # A few kB a second, appended in one write: far below what a request costs the loop.
        with open(self.path, "a") as f:
            f.write("\n".join(self.buffer) + "\n")
        self.buffer.clear()

    async def run(self) -> None:
        try:
            while True:
                await self.tick()
        finally:  # cancelled at shutdown: what is buffered still reaches the file
            with contextlib.suppress(OSError):
                self.flush()


def start(folder: str | Path, gauges: Gauges) -> asyncio.Task:
    """The sampling task of this worker, writing into `folder` (made if missing)."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    return asyncio.get_running_loop().create_task(Sampler(folder, gauges).run(), name="labserver-telemetry")


async def stop(task: asyncio.Task | None) -> None:
    """Cancel the sampling task and wait for its last flush."""
    if task is None:
        return
    task.cancel()
    # Telemetry must never stop a server from stopping: a task that failed (say, its folder went)
    # is let go with its error.
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task

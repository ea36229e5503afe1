"""A worker's insides over time: requests in flight, the thread pool, the process pool, the loop's lag.

`Gauges` reads the counters a worker keeps at one moment (/info shows them). When the launcher
names a folder (settings.telemetry_dir), the app's lifespan starts one `Sampler` task per worker:
every 100 ms it wakes, notes how late it woke (the event loop's lag: code that holds the loop
wakes it late) and reads the gauges; about once a second it appends its samples to
`<folder>/<pid>.jsonl`, one JSON object a line. The harness cuts each run's share out of those
files (labserver/harness/rows/telemetry.py). Standard library and AnyIO only: every worker imports it.

A server the lab did not start (`python -m labserver serve`, measured from another machine)
cannot be seen by the harness's psutil, so it reports its own CPU in /info: `cpu_seconds` gives
a worker's process CPU seconds (every thread of it) and its process pool's children's. With
several workers /info answers from one of them, so each sampler also keeps `<folder>/<pid>.cpu`,
its latest CPU seconds, rewritten every tick, and the worker that answers /info reads them all
(`read_board`). Not covered: uvicorn's supervisor process (with --workers N; it only checks on
its workers), and pool children that died mid-run (their seconds go with them).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
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
# Locust's records, so that a run's window cuts both alike. `db_held_s` and `db_uses` are running totals
# (a worker with the database routes; null in the others): a run's share is their change over its window.
FIELDS = (
    "t",
    "in_flight",
    "threads_busy",
    "threads_waiting",
    "pool_running",
    "pool_queued",
    "db_held_s",
    "db_uses",
    "loop_lag_ms",
)


CPU_SUFFIX = ".cpu"
try:
    TICKS_PER_S = os.sysconf("SC_CLK_TCK")  # the unit of /proc/<pid>/stat's CPU times
except (AttributeError, ValueError, OSError):  # not a POSIX system
    TICKS_PER_S = 100


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

    def pids(self) -> list[int]:
        """The pool's live processes (the executor's own table: it names no public one)."""
        try:
            return list(self._processes or ())
        except RuntimeError:  # the table changed size while read (a process started or ended): none this time
            return []


class HoldMeter:
    """How long a worker's requests held a pooled database connection: seconds in all, and uses.

    psycopg_pool's own `usage_ms` adds each use truncated to whole milliseconds, about 0.5 ms short
    per use; this keeps the seconds as measured. `def` endpoints add from their threads, hence the lock.
    """

    def __init__(self):
        self.held_s = 0.0
        self.uses = 0
        self._lock = threading.Lock()

    def add(self, seconds: float) -> None:
        with self._lock:
            self.held_s += seconds
            self.uses += 1

    def totals(self) -> tuple[float, int]:
        """(seconds held, uses) so far, read together: a use is never half counted."""
        with self._lock:
            return self.held_s, self.uses


def process_seconds(pid: int) -> float | None:
    """CPU seconds (user + system) of another process so far, from /proc (Linux); None where that cannot be read.

    time.process_time() answers for this process only; a pool child is busy computing and cannot
    answer for itself, and resource.getrusage(RUSAGE_CHILDREN) counts children only once they are
    reaped, which a pool's are at shutdown, long after the run.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        # the command name, in parentheses, may hold spaces: fields are counted after its closing one
        fields = stat[stat.rindex(b")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / TICKS_PER_S  # utime, stime: fields 14 and 15 of stat
    except (OSError, ValueError, IndexError):
        return None


def cpu_seconds(pool: CountingPool | None) -> list[dict]:
    """This worker's CPU seconds so far, and each of its pool processes', as /info reports them."""
    now = round(time.time(), 4)
    entries = [{"pid": os.getpid(), "role": "worker", "t": now, "cpu_s": round(time.process_time(), 4)}]
    for pid in pool.pids() if pool is not None else ():
        seconds = process_seconds(pid)
        if seconds is not None:
            entries.append({"pid": pid, "role": "pool", "t": now, "cpu_s": seconds})
    return entries


def read_board(folder: str | Path, skip: int | None = None) -> list[dict]:
    """Every worker's latest CPU seconds in `folder` (their `<pid>.cpu` files) but worker `skip`'s."""
    entries = []
    for path in Path(folder).glob(f"*{CPU_SUFFIX}"):
        if path.stem == str(skip):
            continue
        try:
            entries += json.loads(path.read_text())
        except (OSError, ValueError):  # a worker that just ended, or a file from before: skipped
            continue
    return entries


class Gauges:
    """What a worker is doing at one moment, from counters it keeps anyway.

    `in_flight` and `pool` are read when asked: the middleware that counts requests and the
    process pool are both built after the app (by Starlette, by the lifespan). `held` is the
    database routes' HoldMeter, None in a server without them (its db_ fields are then None).
    """

    def __init__(
        self,
        in_flight: Callable[[], int | None],
        pool: Callable[[], CountingPool | None],
        limiter: Callable = anyio.to_thread.current_default_thread_limiter,  # one per event loop: ask in the loop
        held: Callable[[], HoldMeter | None] = lambda: None,
    ):
        self.in_flight = in_flight
        self.pool = pool
        self.limiter = limiter
        self.held = held

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
            **self._db(),
        }

    def _db(self) -> dict:
        meter = self.held()
        if meter is None:
            return {"db_held_s": None, "db_uses": None}
        held_s, uses = meter.totals()
        return {"db_held_s": round(held_s, 6), "db_uses": uses}  # µs: a run's mean hold is a difference of two


class Sampler:
    """Samples `gauges` every `every_s` and appends them to `<folder>/<pid>.jsonl` every `flush_s` or so.

    `sleep`, `clock` (for the lag) and `wall` (for the samples' time) are the real ones but in tests.
    """

    def __init__(
        self,
        folder: str | Path,
        gauges: Gauges,
        *,
        every_s: float = EVERY_S,
        flush_s: float = FLUSH_S,
        sleep: Callable[[float], Awaitable] = asyncio.sleep,
        clock: Callable[[], float] = time.perf_counter,
        wall: Callable[[], float] = time.time,
        cpu: Callable[[], list[dict]] | None = None,
    ):
        self.path = Path(folder) / f"{os.getpid()}.jsonl"
        # `cpu`: this worker's CPU seconds (cpu_seconds), posted every tick for the worker that answers
        # /info; None (one worker: it answers for itself) writes nothing
        self.cpu = cpu
        self.cpu_path = Path(folder) / f"{os.getpid()}{CPU_SUFFIX}"
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
        if self.cpu is not None:
            self.post_cpu()
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

    def post_cpu(self) -> None:
        """Replace this worker's `<pid>.cpu` with its CPU seconds now (tens of µs, every 100 ms)."""
        assert self.cpu is not None  # tick checks
        tmp = self.cpu_path.with_suffix(".tmp")
        with contextlib.suppress(OSError):
            tmp.write_text(json.dumps(self.cpu(), separators=(",", ":")))
            os.replace(tmp, self.cpu_path)  # whole: the reader never sees half a file

    async def run(self) -> None:
        try:
            while True:
                await self.tick()
        finally:  # cancelled at shutdown: what is buffered still reaches the file
            with contextlib.suppress(OSError):
                self.flush()
            with contextlib.suppress(OSError):
                self.cpu_path.unlink(missing_ok=True)  # a worker that ended posts nothing more


def start(folder: str | Path, gauges: Gauges, cpu: Callable[[], list[dict]] | None = None) -> asyncio.Task:
    """The sampling task of this worker, writing into `folder` (made if missing), and its CPU seconds if `cpu`."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    sampler = Sampler(folder, gauges, cpu=cpu)
    return asyncio.get_running_loop().create_task(sampler.run(), name="labserver-telemetry")


async def stop(task: asyncio.Task | None) -> None:
    """Cancel the sampling task and wait for its last flush."""
    if task is None:
        return
    task.cancel()
    # Telemetry must never stop a server from stopping: a task that failed (say, its folder went)
    # is let go with its error.
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task

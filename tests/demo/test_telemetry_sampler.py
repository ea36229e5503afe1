"""The worker's telemetry: the pool's counts, the gauges, and the sampler's numbers on a fake loop and limiter."""

import asyncio
import json
import os
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from types import SimpleNamespace

import pytest
from fastapi.testclient import TestClient

from labserver.demo import telemetry
from labserver.demo.app import create_app
from labserver.demo.settings import Settings
from labserver.demo.telemetry import FIELDS, CountingPool, Gauges, HoldMeter, Sampler


class FakeLimiter:
    def __init__(self, busy=40, waiting=12):
        self.busy, self.waiting = busy, waiting

    def statistics(self):
        return SimpleNamespace(borrowed_tokens=self.busy, total_tokens=40, borrowers=(), tasks_waiting=self.waiting)


class FakePool:
    def running_queued(self):
        return 2, 5


class LateLoop:
    """A clock and a sleep whose timer fires `late_s` after it was due, as a loop held by other code would."""

    def __init__(self, late_s):
        self.now, self.late_s = 0.0, late_s

    def clock(self):
        return self.now

    async def sleep(self, seconds):
        self.now += seconds + self.late_s
        await asyncio.sleep(0)  # still a real suspension point, so that a cancel can land


def sampler(folder, late_s=0.035, flush_s=0.3, pool=None):
    loop = LateLoop(late_s)
    gauges = Gauges(in_flight=lambda: 52, pool=lambda: pool, limiter=lambda: FakeLimiter())
    return Sampler(folder, gauges, flush_s=flush_s, sleep=loop.sleep, clock=loop.clock, wall=lambda: 1000.0)


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture
def fake_submit(monkeypatch):
    """ProcessPoolExecutor.submit replaced by futures the test completes itself: no process starts."""
    futures = []

    def submit(self, fn, /, *args, **kwargs):
        if fn is None:
            raise RuntimeError("cannot schedule new futures after shutdown")
        futures.append(Future())
        return futures[-1]

    monkeypatch.setattr(ProcessPoolExecutor, "submit", submit)
    return futures


def test_the_pool_counts_tasks_running_and_queued(fake_submit):
    pool = CountingPool(2)
    try:
        for _ in range(3):
            pool.submit(abs, 0)
        assert pool.running_queued() == (2, 1)  # two processes, so one task waits
        fake_submit[0].set_result(0)
        assert pool.running_queued() == (2, 0)
        fake_submit[1].set_result(0)
        fake_submit[2].set_exception(ValueError())  # a task that failed has finished too
        assert pool.running_queued() == (0, 0)
        with pytest.raises(RuntimeError):
            pool.submit(None)
        assert (pool.submitted, pool.finished) == (3, 3)  # a refused task is not counted
    finally:
        pool.shutdown()


def test_gauges_read_the_limiter_the_pool_and_the_requests_in_flight():
    gauges = Gauges(in_flight=lambda: 7, pool=lambda: FakePool(), limiter=lambda: FakeLimiter(3, 9))
    assert gauges.read() == {
        "in_flight": 7,
        "threads_busy": 3,
        "threads_waiting": 9,
        "pool_running": 2,
        "pool_queued": 5,
        "db_held_s": None,  # no database routes: nothing to report
        "db_uses": None,
    }
    assert Gauges(lambda: 0, lambda: None, lambda: FakeLimiter(0, 0)).read()["pool_queued"] == 0  # procs=0


def test_the_hold_meter_adds_every_use_from_every_thread():
    meter = HoldMeter()

    def use(n):
        for _ in range(n):
            meter.add(0.25)

    threads = [threading.Thread(target=use, args=(1000,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert meter.totals() == (pytest.approx(1000.0), 4000)


def test_gauges_read_the_database_s_hold_where_there_is_one():
    meter = HoldMeter()
    meter.add(0.1004)
    meter.add(0.1052)
    gauges = Gauges(lambda: 0, lambda: None, lambda: FakeLimiter(0, 0), held=lambda: meter)
    read = gauges.read()
    assert (read["db_held_s"], read["db_uses"]) == (pytest.approx(0.2056), 2)


def test_a_sample_holds_every_gauge_and_how_late_the_timer_fired(tmp_path):
    sample = asyncio.run(sampler(tmp_path, late_s=0.035, pool=FakePool()).tick())
    assert sample == {
        "t": 1000.0,
        "in_flight": 52,
        "threads_busy": 40,
        "threads_waiting": 12,
        "pool_running": 2,
        "pool_queued": 5,
        "db_held_s": None,
        "db_uses": None,
        "loop_lag_ms": pytest.approx(35.0),
    }
    assert tuple(sample) == FIELDS  # the order the harness writes


def test_a_timer_on_time_has_no_lag(tmp_path):
    assert asyncio.run(sampler(tmp_path, late_s=0.0).tick())["loop_lag_ms"] == 0.0


def test_samples_reach_the_file_once_flush_s_has_passed(tmp_path):
    s = sampler(tmp_path, late_s=0.035, flush_s=0.3)  # a sample every 0.135 s: the third is 0.405 s in
    path = tmp_path / f"{os.getpid()}.jsonl"

    async def ticks(n):
        for _ in range(n):
            await s.tick()

    asyncio.run(ticks(2))
    assert lines(path) == []  # still in memory
    asyncio.run(ticks(1))
    assert len(lines(path)) == 3
    asyncio.run(ticks(4))
    assert len(lines(path)) == 6 and len(s.buffer) == 1


def test_a_blocked_loop_s_rare_samples_reach_the_file_at_once(tmp_path):
    s = sampler(tmp_path, late_s=1.2, flush_s=1.0)  # each wake-up a turn of a blocked loop late
    assert asyncio.run(s.tick())["loop_lag_ms"] == pytest.approx(1200.0)
    assert len(lines(tmp_path / f"{os.getpid()}.jsonl")) == 1


def test_a_cancelled_sampler_writes_what_it_buffered(tmp_path):
    s = sampler(tmp_path, flush_s=1000)

    async def main():
        task = asyncio.create_task(s.run())
        while len(s.buffer) < 5:
            await asyncio.sleep(0)
        await telemetry.stop(task)

    asyncio.run(main())
    assert len(lines(tmp_path / f"{os.getpid()}.jsonl")) >= 5


def test_info_reports_the_gauges_the_telemetry_samples():
    with TestClient(create_app(Settings(workers=1, threads=3, procs=0))) as client:
        info = client.get("/info").json()
    assert (info["threads_busy"], info["threads_waiting"]) == (0, 0)
    assert (info["pool_running"], info["pool_queued"]) == (0, 0)
    assert info["in_flight"] == 1  # the /info request itself
    assert (info["db_held_s"], info["db_uses"]) == (None, None)  # a server without the database routes


def test_a_worker_given_a_folder_samples_into_it(tmp_path):
    folder = tmp_path / "telemetry"
    with TestClient(create_app(Settings(workers=1, threads=3, procs=0, telemetry_dir=str(folder)))) as client:
        deadline = time.monotonic() + 20
        while not list(folder.glob("*.jsonl")) and time.monotonic() < deadline:
            client.get("/health")
            time.sleep(0.1)
    (path,) = folder.glob("*.jsonl")
    assert path.stem == str(os.getpid())
    samples = lines(path)
    assert samples and all(tuple(s) == FIELDS for s in samples)
    assert all(s["loop_lag_ms"] >= 0 and s["threads_busy"] == 0 for s in samples)


async def task_names():
    return {task.get_name() for task in asyncio.all_tasks()}


@pytest.mark.parametrize(("folder", "sampling"), [("", False), ("telemetry", True)])
def test_a_worker_samples_only_when_given_a_folder(tmp_path, folder, sampling):
    where = str(tmp_path / folder) if folder else ""
    with TestClient(create_app(Settings(workers=1, threads=3, procs=0, telemetry_dir=where))) as client:
        assert ("labserver-telemetry" in client.portal.call(task_names)) is sampling

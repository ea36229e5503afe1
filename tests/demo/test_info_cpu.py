"""/info's version and CPU seconds: what a lab on another machine reads instead of psutil."""

import asyncio
import json
import os
import sys
import time

import pytest
from fastapi.testclient import TestClient

from labserver.demo import telemetry
from labserver.demo.app import PROTOCOL, create_app
from labserver.demo.settings import Settings
from labserver.demo.telemetry import Gauges, Sampler
from labserver.demo.work import fib

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a process's CPU from /proc: Linux only")


def test_info_names_its_protocol_and_version():
    with TestClient(create_app(Settings(procs=0))) as client:
        info = client.get("/info").json()
    assert info["protocol"] == PROTOCOL
    assert isinstance(info["version"], str) and info["version"]


def test_info_reports_this_workers_cpu_seconds_now():
    with TestClient(create_app(Settings(procs=0))) as client:
        before = time.process_time()
        cpu = client.get("/info").json()["cpu"]
        after = time.process_time()
    (worker,) = cpu["processes"]  # one worker, no pool
    assert (worker["pid"], worker["role"]) == (os.getpid(), "worker")
    assert before - 0.001 <= worker["cpu_s"] <= after + 0.001  # process_time() of this (TestClient's) process
    assert abs(cpu["time"] - time.time()) < 60 and worker["t"] <= cpu["time"]


@linux
def test_another_process_cpu_seconds_come_from_proc():
    before = time.process_time()
    started = time.process_time()
    while time.process_time() - started < 0.05:  # a few clock ticks of work, however fast the machine
        fib(18)
    seen = telemetry.process_seconds(os.getpid())
    after = time.process_time()
    tick = 1 / telemetry.TICKS_PER_S
    assert before - tick <= seen <= after + tick


def test_a_process_that_is_gone_has_no_cpu_seconds():
    assert telemetry.process_seconds(2**22 + 12345) is None  # above pid_max's default: never a live process


class FakePool:
    def __init__(self, pids):
        self._pids = pids

    def pids(self):
        return self._pids


@linux
def test_cpu_seconds_names_the_pool_processes_it_can_read():
    entries = telemetry.cpu_seconds(FakePool([os.getppid(), 2**22 + 12345]))
    assert [(e["pid"], e["role"]) for e in entries] == [(os.getpid(), "worker"), (os.getppid(), "pool")]


def gauges():
    return Gauges(in_flight=lambda: 0, pool=lambda: None, limiter=lambda: None)


async def _no_sleep(_s):
    return None


def test_a_sampler_posts_cpu_seconds_only_when_asked(tmp_path, monkeypatch):
    monkeypatch.setattr(Gauges, "read", lambda self: {})
    quiet = Sampler(tmp_path / "one", gauges(), sleep=_no_sleep)
    (tmp_path / "one").mkdir()
    posting = Sampler(tmp_path / "two", gauges(), sleep=_no_sleep, cpu=lambda: [{"pid": 7, "t": 1.0, "cpu_s": 2.5}])
    (tmp_path / "two").mkdir()
    asyncio.run(quiet.tick())
    asyncio.run(posting.tick())
    assert list((tmp_path / "one").glob("*.cpu")) == []
    assert json.loads(posting.cpu_path.read_text()) == [{"pid": 7, "t": 1.0, "cpu_s": 2.5}]
    assert telemetry.read_board(tmp_path / "two") == [{"pid": 7, "t": 1.0, "cpu_s": 2.5}]
    assert telemetry.read_board(tmp_path / "two", skip=os.getpid()) == []  # the answering worker reads itself now


def test_with_several_workers_info_adds_the_others_posts(tmp_path):
    other = {"pid": 424242, "role": "worker", "t": 5.0, "cpu_s": 1.25}
    (tmp_path / "424242.cpu").write_text(json.dumps([other]))
    (tmp_path / "424243.cpu").write_text("[{half a fi")  # cut short: skipped, never an error
    with TestClient(create_app(Settings(workers=2, procs=0, telemetry_dir=str(tmp_path)))) as client:
        processes = client.get("/info").json()["cpu"]["processes"]
    assert other in processes
    assert [p["pid"] for p in processes].count(os.getpid()) == 1  # its own post is replaced by a reading now
    assert not (tmp_path / f"{os.getpid()}.cpu").exists()  # a worker that stopped posts nothing more


def test_one_worker_posts_no_cpu_file(tmp_path):
    with TestClient(create_app(Settings(workers=1, procs=0, telemetry_dir=str(tmp_path)))):
        time.sleep(0.25)  # a tick or two of the sampler
    assert list(tmp_path.glob("*.cpu")) == []

import dataclasses
import os
import threading

import pytest

from labserver.demo.cpus import check_cpus, pin, usable_cpus
from labserver.demo.settings import (
    ENV,
    PROCS_MAX,
    THREADS_DEFAULT,
    THREADS_MAX,
    WORKERS_MAX,
    Settings,
)


def test_defaults_are_valid():
    s = Settings()
    s.check()
    assert (s.workers, s.threads) == (1, THREADS_DEFAULT)


def test_environment_round_trip(monkeypatch):
    s = Settings(workers=2, threads=12, procs=3)
    for key, value in s.to_env().items():
        monkeypatch.setenv(key, value)
    assert Settings.from_env() == s


def test_every_field_travels_in_a_variable_of_its_own():
    assert list(ENV) == [f.name for f in dataclasses.fields(Settings)]
    assert len({setting.name for setting in ENV.values()}) == len(ENV)


def test_from_env_falls_back_to_defaults(monkeypatch):
    for key in ("LAB_WORKERS", "LAB_THREADS", "LAB_PROCS", "LAB_CPUS"):
        monkeypatch.delenv(key, raising=False)
    assert Settings.from_env() == Settings()


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"workers": 0}, "workers"),
        ({"workers": WORKERS_MAX + 1}, "workers"),
        ({"workers": 1.5}, "workers"),
        ({"threads": 0}, "threads"),
        ({"threads": THREADS_MAX + 1}, "threads"),
        ({"procs": -1}, "procs"),
        ({"procs": PROCS_MAX + 1}, "procs"),
        ({"procs": "2"}, "procs"),
        ({"queue_limit": -1}, "queue_limit"),
        ({"queue_limit": 2.5}, "queue_limit"),
    ],
)
def test_check_names_the_setting(kwargs, name):
    with pytest.raises(ValueError, match=f"^{name} must be") as e:
        Settings(**kwargs).check()
    assert repr(next(iter(kwargs.values()))) in str(e.value)


def test_procs_zero_is_allowed():
    Settings(procs=0).check()


def test_queue_limit_round_trips_and_none_means_no_shedding(monkeypatch):
    for limit in (None, 0, 25):
        for key, value in Settings(queue_limit=limit).to_env().items():
            monkeypatch.setenv(key, value)
        assert Settings.from_env().queue_limit == limit


def test_a_server_with_a_queue_limit_sheds_what_would_wait(monkeypatch):
    # one thread, no waiting room: with the thread busy, the next request is turned away at once
    from fastapi.testclient import TestClient

    from labserver.demo import shed
    from labserver.demo.app import create_app

    monkeypatch.setattr(shed, "threads_queue", lambda: (0, 0))
    with TestClient(create_app(Settings(threads=1, procs=0, queue_limit=0))) as client:
        r = client.get("/threadpool", params={"io_ms": 1})
        assert r.status_code == 503 and r.headers["retry-after"] == "1" and "x-worker-pid" in r.headers
        assert client.get("/info").json()["queue_limit"] == 0
    with TestClient(create_app(Settings(threads=1, procs=0))) as client:
        assert client.get("/threadpool", params={"io_ms": 1}).status_code == 200


needs_pinning = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="this OS cannot pin a process")


@needs_pinning
def test_cpus_round_trip_through_the_environment(monkeypatch):
    s = Settings(cpus=(usable_cpus()[-1],))
    for key, value in s.to_env().items():
        monkeypatch.setenv(key, value)
    assert Settings.from_env() == s


@needs_pinning
@pytest.mark.parametrize("cpus", [(), [], (10_000,), ("0",), (True,), "0"])
def test_cpus_outside_this_machine_are_refused(cpus):
    with pytest.raises(ValueError, match="cpus must be a list of CPUs from"):
        check_cpus(cpus)


@needs_pinning
def test_pin_moves_every_thread_and_the_threads_started_later(monkeypatch):
    calls = []
    monkeypatch.setattr(os, "sched_setaffinity", lambda tid, cpus: calls.append((tid, tuple(cpus))))
    started = threading.Event()
    worker = threading.Thread(target=started.wait)
    worker.start()
    try:
        pin((0,))
    finally:
        started.set()
        worker.join()
    assert {worker.native_id, threading.get_native_id()} <= {tid for tid, _ in calls}
    assert {cpus for _, cpus in calls} == {(0,)}

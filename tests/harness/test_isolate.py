import contextlib
import os
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import pytest

from labserver import protocol
from labserver.demo import cpus
from labserver.harness.servers import isolate
from labserver.protocol import LocustState

USABLE = tuple(cpus.usable_cpus())
needs_two = pytest.mark.skipif(len(USABLE) < 2, reason="placing a process off a pinned core needs two usable CPUs")

# a parent with a thread and a child: `place` must reach every thread of the whole tree
TREE = """
import subprocess, sys, threading, time
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(child.pid, flush=True)
time.sleep(60)
"""


def _server(pinned=None, same_machine=True, neighbours=()):
    return SimpleNamespace(
        settings=SimpleNamespace(cpus=pinned), same_machine=same_machine, neighbours=lambda: list(neighbours)
    )


def _stage(server, duration_s=1.0):
    return SimpleNamespace(server=server, duration_s=duration_s)


def _affinities(pid: int) -> set[tuple[int, ...]]:
    return {tuple(sorted(os.sched_getaffinity(int(tid)))) for tid in os.listdir(f"/proc/{pid}/task")}


@pytest.fixture
def tree():
    parent = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    yield parent.pid, child
    for pid in (child, parent.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)
    parent.wait()


def test_others_are_the_usable_cpus_a_pinned_server_leaves():
    assert isolate.others(_server()) == ()  # not pinned: nothing to keep off
    assert isolate.others(_server(pinned=USABLE)) == ()  # pinned to all of them: nowhere else to go
    assert isolate.others(_server(pinned=(USABLE[-1],), same_machine=False)) == ()  # another machine's cores
    assert isolate.others(SimpleNamespace()) == ()  # a server with no settings (remote)
    if len(USABLE) > 1:
        assert isolate.others(_server(pinned=(USABLE[-1],))) == USABLE[:-1]


def test_apart_gives_the_server_the_first_usable_cpu_where_two_are(monkeypatch):
    monkeypatch.setattr(cpus, "usable_cpus", lambda: [2, 3])
    monkeypatch.setattr(cpus, "whole_cores", lambda: 2)
    assert isolate.apart() == [2]
    # None: LabServer's "wherever the OS puts it" (an empty list would be an error there)
    monkeypatch.setattr(cpus, "whole_cores", lambda: 1)  # two in the mask, a quota of one: nothing apart
    assert isolate.apart() is None
    monkeypatch.setattr(cpus, "usable_cpus", lambda: [0])
    assert isolate.apart() is None
    monkeypatch.setattr(cpus, "usable_cpus", lambda: [])  # an OS that cannot pin
    assert isolate.apart() is None


def test_placing_nowhere_leaves_a_process_as_it_is(tree):
    parent, _ = tree
    before = _affinities(parent)
    isolate.place([parent], ())
    assert _affinities(parent) == before


@needs_two
def test_place_moves_every_thread_of_a_process_tree(tree):
    parent, child = tree
    isolate.place([parent], USABLE[:1])
    assert _affinities(parent) == {USABLE[:1]} and _affinities(child) == {USABLE[:1]}
    isolate.place([parent], USABLE)
    assert _affinities(parent) == {USABLE} and _affinities(child) == {USABLE}
    isolate.place([2**22 + 7], USABLE)  # a process that is gone is no error


@needs_two
def test_isolation_follows_the_stage_locust_is_in_and_gives_every_cpu_back(tree):
    generator, neighbour = tree
    pinned, free = _server(pinned=(USABLE[-1],), neighbours=[neighbour]), _server()
    isolation = isolate.Isolation(generator, [_stage(free, 1.0), _stage(pinned, 1.0), _stage(free, 1.0)])
    isolation.tick(LocustState())  # Locust not started yet: nothing moves
    assert isolation.current is None and _affinities(generator) == {USABLE}
    isolation.tick(LocustState(started=True, stage=0))  # stage 1 from here: a free server, every CPU
    assert isolation.current == USABLE
    isolation.tick(LocustState(started=True, stage=1))  # stage 2: the pinned server's core is its own
    assert _affinities(generator) == {USABLE[:-1]} and _affinities(neighbour) == {USABLE[:-1]}
    isolation.tick(LocustState(started=True, stage=2))  # stage 3: back on every CPU
    assert _affinities(generator) == {USABLE} and _affinities(neighbour) == {USABLE}
    isolation.tick(LocustState(started=True, stage=1))
    isolation.release()  # the run is over: the database outlives it on every CPU
    assert _affinities(neighbour) == {USABLE} and isolation.current is None


def test_the_stage_comes_from_locusts_events_not_its_log(tmp_path):
    isolation = isolate.Isolation(os.getpid(), [_stage(_server(pinned=(99,))), _stage(_server())])
    placed = []
    isolation.follow = placed.append  # only which stage it places for is under test here
    events = protocol.Events(tmp_path / protocol.EVENTS_FILE)
    (tmp_path / protocol.LOG_FILE).write_text("Ramping to 10 users at a rate of 10.00 per second\n")
    isolation.tick(events.state())
    assert placed == []  # Locust's log says it started; only its events count
    with open(tmp_path / protocol.EVENTS_FILE, "a") as f:
        f.write(protocol.event(protocol.STARTED, 100.0, t0=100.0) + protocol.event(protocol.STAGE, 100.0, index=0))
    isolation.tick(events.state())
    with open(tmp_path / protocol.EVENTS_FILE, "a") as f:
        f.write(protocol.event(protocol.STAGE, 101.0, index=1))
    isolation.tick(events.state())
    assert placed == isolation.stages


def test_a_plan_without_a_pinned_server_moves_nothing():
    isolation = isolate.Isolation(os.getpid(), [_stage(_server())])
    isolation.tick(LocustState(started=True, stage=0))
    isolation.release()
    assert isolation.current is None


@pytest.mark.slow
@needs_two
def test_a_pinned_servers_run_keeps_locust_off_its_core_and_an_unpinned_ones_does_not():
    import psutil

    from labserver.harness.load import run as load
    from labserver.harness.servers.launcher import LabServer

    seen: dict[int, set[tuple[int, ...]]] = {}  # Locust's pid: the affinities its threads had during the run
    done = threading.Event()

    def watch():
        while not done.is_set():
            for p in psutil.process_iter(["cmdline"]):
                if "locust" in " ".join(p.info["cmdline"] or []) and p.pid != os.getpid():
                    with contextlib.suppress(OSError, psutil.Error):
                        seen.setdefault(p.pid, set()).update(_affinities(p.pid))
            time.sleep(0.1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        with LabServer(procs=0, cpus=[USABLE[-1]]) as pinned, LabServer(procs=0) as free:
            run = {"pattern": "sequential", "users": 2, "io_ms": 10}
            plan = [run, {**run, "server": free}]  # the first on the pinned server, the second on the other
            rows = load.run_plan(pinned, plan, duration_s=3, warmup_s=1, lesson="tests-isolate")
    finally:
        done.set()
        watcher.join()
    assert all(r.row["valid"] for r in rows), [r.row["problems"] for r in rows]
    # each run says where the others ran: the pinned server's, and only its
    assert f"ran on CPU {','.join(map(str, USABLE[:-1]))}, off its cores" in rows[0].row["notes"]
    assert "off its cores" not in rows[1].row["notes"]
    everything = set().union(*seen.values())
    assert USABLE[:-1] in everything  # while the pinned server was loaded
    assert USABLE in everything  # while the other was

"""Child processes: own session, torn down with their whole tree, dead with their parent."""

import os
import signal
import socket
import subprocess
import sys
import time

import psutil
import pytest

from labserver.harness.processes import procs


def _gone(pids: list[int], within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        alive = []
        for pid in pids:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    alive.append(pid)
            except psutil.NoSuchProcess:
                pass
        if not alive:
            return True
        time.sleep(0.05)
    return False


def _children(pid: int, count: int, within_s: float = 10.0) -> list[psutil.Process]:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        kids = psutil.Process(pid).children(recursive=True)
        if len(kids) >= count:
            return kids
        time.sleep(0.05)
    raise AssertionError(f"expected {count} children of {pid}")


def test_spawn_runs_in_its_own_session_and_logs(tmp_path):
    log = tmp_path / "child.log"
    proc = procs.spawn([sys.executable, "-c", "import os; print('hello', os.getsid(0))"], log)
    assert proc.wait(timeout=30) == 0
    assert log.read_text().split() == ["hello", str(proc.pid)]  # session leader: a group of its own


def test_stop_tree_ends_every_descendant(tmp_path):
    # a shell with two sleeping children, one of which ignores SIGTERM
    script = "trap '' TERM; sleep 300 & (trap '' TERM; sleep 300) & wait"
    proc = procs.spawn(["sh", "-c", script], tmp_path / "log")
    members = [proc.pid, *(p.pid for p in _children(proc.pid, 2))]
    procs.stop_tree(proc, grace_s=0.5)
    assert _gone(members)
    assert proc.returncode is not None


def test_stop_tree_of_a_finished_process_stops_what_it_left_running(tmp_path):
    # the shell exits at once, its child still runs in its group: stopping the finished process stops that too
    proc = procs.spawn(["sh", "-c", "sleep 300 & echo $!"], tmp_path / "log")
    assert proc.wait(timeout=30) == 0
    deadline = time.monotonic() + 10
    while not (tmp_path / "log").read_text().strip() and time.monotonic() < deadline:
        time.sleep(0.05)
    left = int((tmp_path / "log").read_text().split()[0])
    assert psutil.pid_exists(left)
    procs.stop_tree(proc)
    assert _gone([left])
    assert proc.returncode == 0  # the finished process's own exit stays as it was


@pytest.mark.slow
def test_children_die_with_their_parent(tmp_path):
    # a middle process spawns a grandchild through procs.spawn, then is killed hard: no cleanup
    # code runs in it, and only the parent-death signal can stop the grandchild
    log = str(tmp_path / "grandchild.log")
    code = (
        "import time; from pathlib import Path; from labserver.harness.processes import procs; "
        f"p = procs.spawn(['sleep', '300'], Path({log!r})); print(p.pid, flush=True); time.sleep(300)"
    )
    middle = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        grandchild = int(middle.stdout.readline())
        assert psutil.pid_exists(grandchild)
        os.kill(middle.pid, signal.SIGKILL)
        middle.wait(timeout=10)
        assert _gone([grandchild])
    finally:
        middle.kill()
        middle.wait()
        middle.stdout.close()


def test_free_port_is_free_and_port_in_use_sees_a_listener():
    port = procs.free_port()
    assert 0 < port < 65536
    assert not procs.port_in_use(port)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        assert procs.port_in_use(s.getsockname()[1])


def test_tail(tmp_path):
    log = tmp_path / "log"
    log.write_text("".join(f"line {i}\n" for i in range(100)))
    assert procs.tail(log, 3) == "line 97\nline 98\nline 99\n"
    assert "no log" in procs.tail(tmp_path / "missing")


def test_tree_of_a_missing_process_is_empty():
    proc = subprocess.Popen(["true"])
    proc.wait()
    assert procs.tree(proc.pid) == []


def test_owned_stops_everything_it_holds_and_forgets_the_names():
    owned = procs.Owned()

    class Thing:
        def stop(self):
            owned.running.discard(self)  # as LabServer.stop and Database.stop do

    first, second = Thing(), Thing()
    owned.running.update({first, second})
    owned.named["lesson"] = first
    owned.stop_all()
    assert not owned.running
    assert not owned.named

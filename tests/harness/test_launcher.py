"""The server in the background: a real uvicorn started and stopped, and nothing of it left behind."""

import os
import signal
import socket

import psutil
import pytest

from labserver.harness.processes import procs
from labserver.harness.servers import launcher
from labserver.harness.servers.launcher import LabServer, serve, stop_all
from labserver.harness.servers.server import ServerError


def _alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _assert_all_gone(members: list[psutil.Process], port: int) -> None:
    left = [p.pid for p in members if _alive(p)]
    assert not left, f"processes of the server's tree still running: {left}"
    assert not procs.port_in_use(port)


def test_bad_settings_fail_before_any_process_starts():
    with pytest.raises(ValueError, match="workers"):
        LabServer(workers=0)
    with pytest.raises(ValueError, match="port"):
        LabServer(port=70000)


def test_a_port_in_use_is_refused_with_what_to_do():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        with pytest.raises(ValueError, match=r"already in use.*port=None"):
            LabServer(port=s.getsockname()[1])


def test_a_server_that_never_started_stops_quietly():
    s = LabServer(procs=0)
    s.stop()
    assert not s.alive
    assert "never started" in s.log_tail()


def test_a_clean_stop_removes_the_log_folder_a_dead_server_keeps_it(tmp_path):
    # Stand-ins for two started servers: a process in its own session each, and a log folder.
    started = {}
    for name in ("clean", "dead"):
        s = LabServer(procs=0)
        s.log_path = tmp_path / name / "server.log"
        s.log_path.parent.mkdir()
        s.proc = procs.spawn(["sleep", "60"], s.log_path)
        s.ready_s = 0.0
        started[name] = s
    procs.stop_tree(started["dead"].proc)  # it died before anyone stopped it
    for s in started.values():
        s.stop()
    assert not (tmp_path / "clean").exists()
    assert "log was removed" in started["clean"].log_tail()
    assert (tmp_path / "dead" / "server.log").exists()  # its error message names this log
    assert str(tmp_path / "dead" / "server.log") in started["dead"].log_tail()


@pytest.mark.slow
def test_normal_exit_leaves_nothing():
    with LabServer(workers=2, procs=1) as s:
        assert s.alive
        members = procs.tree(s.proc.pid)
        # 2 workers answer, each with its process pool of one
        pids = {s.get("/health")["pid"] for _ in range(20)}
        assert pids <= {p.pid for p in members}
        assert s.info()["workers"] == 2
        assert len(members) >= 1 + 2 + 2
        port = s.port
        log_folder = s.log_path.parent
    assert not s.alive
    _assert_all_gone(members, port)
    assert not log_folder.exists()


@pytest.mark.slow
def test_exception_inside_leaves_nothing():
    with pytest.raises(ZeroDivisionError), LabServer(procs=1) as s:
        members = procs.tree(s.proc.pid)
        port = s.port
        1 / 0  # noqa: B018
    _assert_all_gone(members, port)


@pytest.mark.slow
def test_keyboard_interrupt_inside_leaves_nothing():
    with pytest.raises(KeyboardInterrupt), LabServer(procs=1) as s:
        members = procs.tree(s.proc.pid)
        port = s.port
        raise KeyboardInterrupt
    _assert_all_gone(members, port)


@pytest.mark.slow
def test_serve_again_replaces_the_old_server():
    try:
        first = serve("tests", procs=0)
        old = procs.tree(first.proc.pid)
        second = serve("tests", procs=0)
        assert second is not first
        assert second.alive
        assert not first.alive
        assert not any(_alive(p) for p in old)
        assert second.get("/health")["status"] == "ok"
    finally:
        stop_all()
    assert not second.alive
    assert not launcher._running


@pytest.mark.slow
def test_a_server_failing_at_start_up_shows_its_log(monkeypatch):
    # the server process reads its settings from the environment: give it one create_app refuses
    bad = {"LAB_WORKERS": "1", "LAB_THREADS": "0", "LAB_PROCS": "0"}
    monkeypatch.setattr(launcher.Settings, "to_env", lambda self: bad)
    s = LabServer(procs=0)
    with pytest.raises(ServerError, match="exited during start-up") as e:
        s.start()
    assert "threads must be a whole number" in str(e.value)  # from the log tail
    assert not s.alive
    assert s.log_path.exists()  # kept: the message above points the user at it


@pytest.mark.slow
def test_a_port_taken_after_the_check_gives_a_server_error():
    s = LabServer(procs=0, port=procs.free_port())
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 0)
        taken.bind(("127.0.0.1", s.port))
        taken.listen()
        with pytest.raises(ServerError) as e:
            s.start()
    assert "address already in use" in str(e.value).lower()
    assert not s.alive


@pytest.mark.slow
def test_a_server_killed_is_seen_dead():
    with LabServer(procs=0) as s:
        os.kill(s.proc.pid, signal.SIGKILL)
        s.proc.wait(timeout=10)
        assert not s.alive
        assert "stopped" in repr(s)


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="this OS cannot pin a process")
def test_a_pinned_server_runs_every_process_and_thread_on_its_cpus():
    cpu = sorted(os.sched_getaffinity(0))[-1]
    with LabServer(procs=1, cpus=[cpu]) as s:
        s.get("/threadpool")  # starts a thread-pool thread after the pinning: it must inherit it
        assert s.info()["cpus"] == [cpu]
        for p in procs.tree(s.proc.pid):  # the worker, its pool child, and every thread of each
            for t in p.threads():
                assert os.sched_getaffinity(t.id) == {cpu}


def test_cpus_outside_this_machine_fail_before_any_process_starts():
    with pytest.raises(ValueError, match="cpus must be"):
        LabServer(cpus=[10_000])


def test_running_starts_servers_together_and_stops_them_all():
    with launcher.running([LabServer(procs=0), LabServer(workers=2, procs=0)]) as (one, two):
        assert one.alive and two.alive and one.port != two.port
        assert len({p.pid for p in procs.tree(two.proc.pid)}) >= 3  # the supervisor and its 2 workers
        pids = [p.pid for s in (one, two) for p in procs.tree(s.proc.pid)]
    assert not one.alive and not two.alive
    assert not [pid for pid in pids if psutil.pid_exists(pid) and _alive(psutil.Process(pid))]


def test_running_raises_the_first_failed_start_and_stops_the_others(monkeypatch):
    def no_luck():
        raise ServerError("no luck")

    broken = LabServer(procs=0)
    monkeypatch.setattr(broken, "start", no_luck, raising=False)
    good = LabServer(procs=0)
    with pytest.raises(ServerError, match="no luck"), launcher.running([good, broken]):
        pytest.fail("the body must not run when a server did not start")
    assert good.proc is not None and not good.alive  # it had started, and was stopped


@pytest.mark.parametrize(("limit", "flags"), [(21, ["--limit-concurrency", "21"]), (None, [])])
def test_uvicorn_s_own_limit_is_passed_on_its_command_line(monkeypatch, limit, flags):
    seen = []

    def spawn(cmd, *args, **kwargs):
        seen.append(cmd)
        raise OSError("not started: the command is what this test reads")

    monkeypatch.setattr(procs, "spawn", spawn)
    with pytest.raises(OSError, match="not started"):
        LabServer(procs=0, limit_concurrency=limit).start()
    cmd = seen[0]
    at = cmd.index("--limit-concurrency") if flags else len(cmd)
    assert cmd[at : at + 2] == flags


def test_a_limit_that_would_refuse_every_request_fails_before_anything_starts():
    with pytest.raises(ValueError, match="limit_concurrency"):
        LabServer(limit_concurrency=1)

"""Reliability and security: nothing left behind, nothing lost, no bad input gets through, nobody gets in.

The owner of the lab's processes (a kernel, papermill, a script) may be killed hard, interrupted
or fed odd parameters; two notebooks may run at once. Tests that start real processes are
marked slow; the fifty-run version of the interruption tests is test_stress.py.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import warnings

import psutil
import pytest
from lab_owner import Owner, describe, lab_kernel, lab_processes, port_free, wait_for

from labserver.harness.load import run as load
from labserver.harness.load.checks import check_sweep
from labserver.harness.load.run import run_load
from labserver.harness.processes import procs
from labserver.harness.rows import results
from labserver.harness.servers.launcher import LabServer
from labserver.harness.servers.server import ServerError
from labserver.paths import ROOT, runs_dir

CLEAN_S = 15.0  # hang guard for a clean-up that takes a second or two


# --- bad parameters fail at once, saying what to change, before any process starts ---------------


@pytest.fixture
def no_process_may_start(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError(f"a process was started: {args[:1]}")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(procs, "spawn", refuse)


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda: check_sweep(["gather"], [0]), r"users must be a whole number from 1 to \d+, got 0"),
        (lambda: check_sweep(["gather"], [-5]), r"users must be .* from 1"),
        (lambda: check_sweep(["gathr"], [10]), r"unknown pattern 'gathr'; choose one of: .*gather"),
        (lambda: check_sweep(["gather"], [10], duration_s=0), r"duration_s must be a whole number from 1"),
        (lambda: check_sweep(["gather"], [10], duration_s=-2), r"duration_s must be .* from 1"),
        (lambda: check_sweep(["gather"], [10], workers=65), r"workers must be a whole number from 1 to 64, got 65"),
        (lambda: check_sweep(["gather"], [10], io_ms=20_000), r"io_ms must be between 0 and 10000"),
        (lambda: LabServer(workers=0), r"workers must be a whole number from 1 to 64"),
        (lambda: LabServer(workers=100), r"workers must be a whole number from 1 to 64, got 100"),
        (lambda: LabServer(workers=16, procs=8), r"16 × \(1 \+ 8\) = 144 processes, more than 64: lower workers"),
        (lambda: LabServer(threads=0), r"threads must be a whole number from 1"),
        (lambda: LabServer(port=0), r"port must be from 1 to 65535"),
        (lambda: LabServer(port="8000"), r"port must be from 1 to 65535"),
        (lambda: LabServer(host="203.0.113.7"), r"cannot listen on host '203.0.113.7'.*leave host at '127.0.0.1'"),
        (lambda: LabServer(host=""), r"host must be an address such as '127.0.0.1'"),
    ],
)
def test_a_bad_parameter_fails_at_once_saying_what_to_change(no_process_may_start, make, says):
    with pytest.raises(ValueError, match=says):
        make()


def test_a_port_in_use_fails_at_once_saying_what_to_change(no_process_may_start):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))  # bound, not even listening: uvicorn could not have it either
        port = s.getsockname()[1]
        with pytest.raises(ValueError, match=f"port {port} is already in use on 127.0.0.1: pass port=None"):
            LabServer(port=port)


def test_run_load_checks_before_starting_locust(no_process_may_start):
    # a server object that claims to run: the check must come before anything is started
    srv = LabServer(procs=0)
    with pytest.raises(ValueError, match="users must be"):
        run_load(srv, "gather", users=0, duration_s=1)
    with pytest.raises(ValueError, match="unknown pattern"):
        run_load(srv, "nope", users=1, duration_s=1)


# --- nobody gets in: loopback unless told otherwise, and then a warning --------------------------


def test_the_server_binds_loopback_by_default_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = LabServer(procs=0)
        LabServer(procs=0, host="localhost")
    assert s.host == "127.0.0.1"
    assert s.url.startswith("http://127.0.0.1:")


def test_any_other_address_warns():
    with pytest.warns(UserWarning, match=r"listen on 0\.0\.0\.0: other machines may reach it"):
        LabServer(procs=0, host="0.0.0.0")


@pytest.mark.slow
def test_the_server_listens_on_loopback_only():
    with LabServer(workers=2, procs=0) as s:
        listening = set()
        for p in procs.tree(s.proc.pid):
            for c in p.net_connections(kind="inet"):
                if c.status == psutil.CONN_LISTEN:
                    listening.add(c.laddr)
    assert listening, "found no listening socket"
    assert {addr.ip for addr in listening} == {"127.0.0.1"}, listening


@pytest.mark.slow
def test_make_lab_keeps_token_authentication_on(tmp_path):
    port = procs.free_port()
    extra = f"--no-browser --port={port} --ServerApp.port_retries=0"
    # `make -n` prints the recipe without running it (-o: do not re-run the set-up); as root it also
    # echoes why it adds --allow-root (Jupyter refuses root otherwise, and CI runs as root): the
    # command is the line that starts Jupyter
    printed = subprocess.run(
        ["make", "-s", "-n", "-o", ".venv/.installed-stamp", "lab", f"LAB_ARGS={extra}"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    recipe = [line for line in printed.splitlines() if "jupyter lab" in line][-1]
    if os.geteuid() == 0:
        assert "--allow-root" in recipe
    assert "--ServerApp.ip=127.0.0.1" in recipe
    assert "token=" not in recipe.lower()  # no token on the command line, where `ps` shows it to everyone
    log = tmp_path / "lab.log"
    lab = procs.spawn(shlex.split(recipe), log, env={"JUPYTER_TOKEN": "inherited-and-weak"}, cwd=ROOT)
    try:
        assert wait_for(lambda: "token=" in log.read_text() or lab.poll() is not None, 60), log.read_text()
        token = re.search(r"token=([0-9a-f]{32,})", log.read_text()).group(1)  # a fresh random one
        assert wait_for(lambda: procs.port_in_use(port), 30)  # Jupyter may print its URL before it listens
        url = f"http://127.0.0.1:{port}/api/contents"
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url, timeout=10)
        assert refused.value.code == 403
        with pytest.raises(urllib.error.HTTPError) as weak:
            urllib.request.urlopen(f"{url}?token=inherited-and-weak", timeout=10)
        assert weak.value.code == 403
        with urllib.request.urlopen(f"{url}?token={token}", timeout=10) as ok:
            assert ok.status == 200
        addresses = {c.laddr.ip for p in procs.tree(lab.pid) for c in p.net_connections("inet")
                     if c.status == psutil.CONN_LISTEN}  # fmt: skip
        assert addresses == {"127.0.0.1"}, addresses
    finally:
        procs.stop_tree(lab)


# --- processes die with their owner -----------------------------------------------------------------


@pytest.mark.slow
def test_children_outlive_the_thread_that_started_them():
    # Linux sends the parent-death signal when the *thread* that forked the child ends: a server
    # started from a short-lived thread (an ipykernel subshell, a learner's thread) must not die with it.
    started = {}
    t = threading.Thread(target=lambda: started.setdefault("server", LabServer(procs=0).start()))
    t.start()
    t.join()
    s = started["server"]
    try:
        time.sleep(1.0)  # the signal would have come at once
        assert s.alive
        assert s.get("/health")["status"] == "ok"
    finally:
        s.stop()


def _wait_for_load(owner: Owner, processes: int) -> None:
    # Mid-run: Locust is up (with its forks) and the server has already answered it.
    def loaded() -> bool:
        cmdlines = [" ".join(p.cmdline()) for p in owner.left() if p.is_running()]
        return sum("locust" in c for c in cmdlines) >= (1 + processes if processes > 1 else 1)

    assert wait_for(loaded, 60), owner.log()
    time.sleep(0.5)


@pytest.mark.slow
@pytest.mark.parametrize(("workers", "processes"), [(1, 1), (2, 2)])
def test_an_owner_killed_hard_mid_run_leaves_nothing(workers, processes):
    owner = Owner({"end": "kill", "workers": [workers], "processes": [processes], "duration_s": 20})
    try:
        assert owner.next()["event"] == "ready"
        port = owner.next()["port"]
        _wait_for_load(owner, processes)
        kinds = " ".join(" ".join(p.cmdline()) for p in owner.left())
        assert "uvicorn" in kinds and "locust" in kinds and "multiprocessing" in kinds, kinds
        owner.kill()
        assert wait_for(lambda: not lab_processes(owner.tag), CLEAN_S), describe(lab_processes(owner.tag))
        assert wait_for(lambda: port_free(port), CLEAN_S)
    finally:
        leftovers = owner.close()
    assert leftovers == []


@pytest.mark.slow
def test_a_kernel_killed_hard_mid_run_leaves_nothing():
    with lab_kernel() as (tag, km, kc):
        kc.execute(
            "from labserver import LabServer, run_load\n"
            "server = LabServer(workers=2, procs=1).start()\n"
            "run_load(server, 'sequential', users=2, io_ms=50, duration_s=30, processes=2)\n"
        )
        kernel_pid = km.provisioner.pid

        def running() -> bool:
            words = " ".join(" ".join(p.cmdline()) for p in lab_processes(tag, exclude={kernel_pid}))
            return "uvicorn" in words and "locust" in words

        assert wait_for(running, 90)
        time.sleep(1.0)
        os.kill(kernel_pid, signal.SIGKILL)  # as a crash, the OOM killer or `kill -9` would
        assert wait_for(lambda: not lab_processes(tag), CLEAN_S), describe(lab_processes(tag))


@pytest.mark.slow
def test_children_that_ignore_the_parent_death_signal_still_go(tmp_path):
    # The parent-death signal reaches the direct child only, and a child may ignore it or hang:
    # here a shell that ignores SIGTERM, with two grandchildren. The guard must end them all.
    code = (
        "import sys, time; from pathlib import Path; from labserver.harness.processes import procs\n"
        "script = \"trap '' TERM; sleep 300 & sleep 300 & wait\"\n"
        f"p = procs.spawn(['sh', '-c', script], Path({str(tmp_path / 'log')!r}))\n"
        "print(p.pid, flush=True); time.sleep(300)"
    )
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        child = int(owner.stdout.readline())
        assert wait_for(lambda: len(procs.tree(child)) == 3, 10)
        members = procs.tree(child)
        owner.kill()
        owner.wait(timeout=10)
        assert wait_for(lambda: not procs._running(members), CLEAN_S), describe(procs._running(members))
    finally:
        owner.kill()
        owner.wait()
        owner.stdout.close()
        for p in procs.group(child):
            p.kill()


@pytest.mark.slow
def test_papermill_killed_hard_mid_run_leaves_nothing(tmp_path):
    import nbformat

    cell = (
        "from labserver import LabServer, run_load\n"
        "server = LabServer(workers=2, procs=1).start()\n"
        "run_load(server, 'sequential', users=2, io_ms=50, duration_s=30, processes=2)"
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    nbformat.write(nb, tmp_path / "lesson.ipynb")
    tag = "papermill-" + os.urandom(6).hex()
    papermill = subprocess.Popen(
        [sys.executable, "-m", "papermill", str(tmp_path / "lesson.ipynb"), str(tmp_path / "out.ipynb"),
         "-k", "python3", "--no-progress-bar"],
        env={**os.environ, "LAB_TEST_TAG": tag, "LAB_PROGRESS": "0"},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:

        def running() -> bool:
            words = " ".join(" ".join(p.cmdline()) for p in lab_processes(tag))
            return "uvicorn" in words and "locust" in words

        assert wait_for(running, 120)
        time.sleep(1.0)
        papermill.kill()  # SIGKILL: its kernel notices, exits, and its own children must follow
        papermill.wait(timeout=10)
        assert wait_for(lambda: not lab_processes(tag), CLEAN_S), describe(lab_processes(tag))
    finally:
        papermill.kill()
        papermill.wait()
        for p in lab_processes(tag):
            p.kill()


def _interrupt_twice(end: str) -> list[str]:
    owner = Owner({"end": end, "rounds": 2, "delay_s": [1.5, 3.5]})
    problems = []
    try:
        assert owner.next()["event"] == "ready"
        for _ in range(2):
            port = owner.next()["port"]
            ended = owner.next()
            assert ended["by"] == {"exception": "Injected", "interrupt": "KeyboardInterrupt"}[end]
            # the owner lives on, as a kernel does after a failed cell: what it started must be gone
            if not wait_for(lambda: not owner.left() and port_free(port), CLEAN_S):  # noqa: B023 - used at once
                problems += describe(owner.left()) or [f"port {port} still in use"]
            owner.go_on()
    finally:
        problems += owner.close()
    return problems


@pytest.mark.slow
@pytest.mark.parametrize("end", ["exception", "interrupt"])
def test_an_exception_or_a_ctrl_c_mid_run_leaves_nothing(end):
    assert _interrupt_twice(end) == []


# --- a crashed server ends the run, says why, and keeps what was measured ---------------------------


@pytest.mark.slow
def test_a_server_whose_supervisor_dies_mid_run_ends_the_run_and_frees_its_port():
    with LabServer(workers=2, procs=1) as s:
        port, members = s.port, procs.tree(s.proc.pid)
        assert len(members) >= 5  # supervisor, 2 workers, a pool child each
        # SIGKILL the supervisor: its workers are orphaned and would go on serving the port
        killer = threading.Timer(2.0, os.kill, (s.proc.pid, signal.SIGKILL))
        killer.start()
        started = time.monotonic()
        try:
            with pytest.raises(ServerError, match="the server died during the run") as e:
                run_load(s, "sequential", users=2, io_ms=50, duration_s=60, lesson="tests-supervisor")
        finally:
            killer.cancel()
        assert time.monotonic() - started < 30, "the run did not end when its server died"  # hang guard
    assert "last lines of" in str(e.value)
    assert not [p.pid for p in members if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert port_free(port)
    runs = results.load_runs("tests-supervisor")
    assert list(runs["status"]) == ["server died"] and not runs["valid"].iloc[0]
    assert (runs_dir() / runs["run_id"].iloc[0] / "server.log").exists()


@pytest.mark.slow
def test_a_sweep_stops_at_the_first_dead_server_instead_of_charting_nothing():
    with LabServer(procs=0) as s:
        threading.Timer(1.5, os.kill, (s.proc.pid, signal.SIGKILL)).start()
        with pytest.raises(ServerError, match="server died"):
            load.sweep(s, ["sequential", "gather"], [2], io_ms=50, duration_s=5, lesson="tests-sweep")
    assert len(results.load_runs("tests-sweep")) == 1  # the partial run, and no run against a dead server


# --- two notebooks at once never collide ------------------------------------------------------------


@pytest.mark.slow
def test_a_taken_port_is_given_up_for_another_and_never_shared(monkeypatch):
    with LabServer(procs=0) as first:
        second = LabServer(procs=0)
        picks = iter([first.port])  # the next "free" port is first's: as if another notebook won the race
        real_free_port = procs.free_port
        monkeypatch.setattr(procs, "free_port", lambda host="127.0.0.1": next(picks, None) or real_free_port(host))
        with second:
            assert second.port != first.port
            assert second.get("/health")["pid"] == second.proc.pid
            assert first.get("/health")["pid"] == first.proc.pid


@pytest.mark.slow
def test_two_notebooks_at_once_never_collide(tmp_path):
    env = {"LAB_DATA_DIR": str(tmp_path / "data"), "LAB_FIGURES_DIR": str(tmp_path / "figures")}
    owners = [Owner({"end": "complete", "saves": 20, "lesson": "two-at-once"}, env=env) for _ in range(2)]
    try:
        done = []
        for owner in owners:
            assert owner.next()["event"] == "ready"
        starts = [owner.next() for owner in owners]
        done = [owner.next() for owner in owners]
        for owner in owners:
            owner.proc.wait(timeout=60)
    finally:
        leftovers = [p for owner in owners for p in owner.close()]
    assert not leftovers
    assert starts[0]["port"] != starts[1]["port"]
    assert [d["status"] for d in done] == ["ok", "ok"]
    assert done[0]["run_id"] != done[1]["run_id"]
    published = sorted(p.name for p in (tmp_path / "data" / "runs").iterdir() if not p.name.startswith("."))
    assert published == sorted(d["run_id"] for d in done)
    for run_id in published:
        manifest = json.loads((tmp_path / "data" / "runs" / run_id / "manifest.json").read_text())
        assert manifest["run_id"] == run_id
    figures = list((tmp_path / "figures" / "owner").iterdir())
    assert [f.name for f in figures] == ["throughput.png"]  # no temporary file left over
    assert _whole_png(figures[0].read_bytes())


def _whole_png(data: bytes) -> bool:
    return data.startswith(b"\x89PNG\r\n\x1a\n") and data.endswith(b"IEND\xaeB`\x82")


@pytest.mark.slow
def test_a_figure_saved_by_two_batches_at_once_is_never_torn(tmp_path):
    code = (
        "import matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot as plt\n"
        "from labserver.charts import plots\n"
        "fig, ax = plt.subplots(); ax.plot(range(2000), 'o-'); print('ready', flush=True)\n"
        "for _ in range(40): plots.save(fig, 'both', 'same')\n"
    )
    env = {**os.environ, "LAB_FIGURES_DIR": str(tmp_path)}
    writers = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
               for _ in range(2)]  # fmt: skip
    target = tmp_path / "both" / "same.png"
    reads, torn = 0, 0
    try:
        for w in writers:
            assert w.stdout.readline().strip() == "ready"
        while any(w.poll() is None for w in writers):
            try:
                data = target.read_bytes()
            except FileNotFoundError:
                continue
            reads += 1
            torn += not _whole_png(data)
    finally:
        for w in writers:
            w.wait(timeout=60)
            w.stdout.close()
    assert [w.returncode for w in writers] == [0, 0]
    assert reads > 0
    assert torn == 0, f"{torn} of {reads} reads saw a half-written PNG"
    assert _whole_png(target.read_bytes())
    assert [p.name for p in target.parent.iterdir()] == ["same.png"]


# --- nothing is lost: run folders appear whole or not at all, and never replace one another -----------


@pytest.fixture
def own_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path))
    return tmp_path / "runs"


def _manifest(run_id: str) -> dict:
    return {"run_id": run_id, "lesson": "t", "status": "ok",
            "result": {"run_id": run_id, "lesson": "t", "rps": 1.0, "valid": True, "started_at": "2026"}}  # fmt: skip


def test_two_runs_racing_for_one_id_never_share_a_folder(own_runs):
    won, lost = [], []
    barrier = threading.Barrier(8)

    def claim():
        barrier.wait()
        try:
            won.append(results.partial_dir("same-id"))
        except FileExistsError:
            lost.append(1)

    threads = [threading.Thread(target=claim) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1 and len(lost) == 7


def test_a_published_id_is_never_measured_into_again(own_runs):
    import pandas as pd

    results.finish(results.partial_dir("r1"), _manifest("r1"), pd.DataFrame({"second": [0]}))
    with pytest.raises(FileExistsError, match="r1"):
        results.partial_dir("r1")
    other = results.partial_dir("r2")
    with pytest.raises(FileExistsError, match="never overwritten"):
        results.finish(other, _manifest("r1"), pd.DataFrame({"second": [0]}))
    assert json.loads((own_runs / "r1" / "manifest.json").read_text())["run_id"] == "r1"


@pytest.mark.parametrize("cut_at", ["json.dump", "os.rename"])
def test_a_run_cut_off_while_it_is_written_is_never_read(own_runs, cut_at):
    import pandas as pd

    results.finish(results.partial_dir("whole"), _manifest("whole"), pd.DataFrame({"second": [0]}))
    module, name = cut_at.split(".")

    def cut(*args, **kwargs):
        raise KeyboardInterrupt  # Ctrl-C, or the process killed, at the worst moment

    tmp = results.partial_dir("cut")
    with pytest.MonkeyPatch.context() as mp, pytest.raises(KeyboardInterrupt):
        mp.setattr(getattr(results, module), name, cut)
        results.finish(tmp, _manifest("cut"), pd.DataFrame({"second": [0]}))
    assert list(results.load_runs()["run_id"]) == ["whole"]
    assert tmp.exists() and not (own_runs / "cut").exists()


def test_a_folder_without_a_lab_manifest_is_not_a_run(own_runs):
    own_runs.mkdir(parents=True)
    (own_runs / "stray").mkdir()
    (own_runs / "stray" / "manifest.json").write_text("[1, 2]")
    (own_runs / "other").mkdir()
    (own_runs / "other" / "manifest.json").write_text('{"run_id": "other"}')
    assert results.load_runs().empty


@pytest.mark.slow
def test_the_guard_stops_every_group_it_was_told_of_when_its_owner_goes():
    # the guard on its own: a fake owner (this test) hands it a group, then closes the pipe
    sleeper = subprocess.Popen(["sleep", "300"], start_new_session=True)
    read_fd, write_fd = os.pipe()
    guard_cmd = [sys.executable, "-m", "labserver.harness.processes.guard", str(os.getpid()), str(read_fd)]
    guard = subprocess.Popen(guard_cmd, pass_fds=(read_fd,), cwd=ROOT)
    os.close(read_fd)
    try:
        os.write(write_fd, f"+{sleeper.pid}\n".encode())
        time.sleep(0.3)
        assert sleeper.poll() is None  # the owner lives: nothing happens
        os.close(write_fd)  # the owner "dies"
        assert sleeper.wait(timeout=CLEAN_S) == -signal.SIGTERM
        assert guard.wait(timeout=CLEAN_S) == 0
    finally:
        sleeper.kill()
        guard.kill()
        sleeper.wait()
        guard.wait()


@pytest.mark.slow
def test_a_guard_forgets_the_groups_that_were_stopped(tmp_path):
    proc = procs.spawn(["sleep", "300"], tmp_path / "log")
    assert proc.pid in procs._spawner.groups
    procs.stop_tree(proc, grace_s=1)
    assert proc.pid not in procs._spawner.groups  # so that a reused pid is never killed for it

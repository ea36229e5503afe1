"""Locust's master and workers: the master's address checked, its command, and real runs whose workers join (slow)."""

import json
import math
import os
import subprocess
import sys
import time
from dataclasses import replace

import pytest

from labserver import __main__ as cli
from labserver.harness.load import generator
from labserver.harness.load.checks import check_load
from labserver.harness.load.generator import master_address, worker_command
from labserver.harness.load.run import run_plan
from labserver.harness.plans import feed
from labserver.harness.plans.plan import Options, Stage
from labserver.harness.processes import procs
from labserver.harness.processes.meters import CpuMeter, LocustMeter
from labserver.harness.rows import records
from labserver.harness.servers.launcher import LabServer
from labserver.protocol import LocustState
from labserver.theory.workload import Workload

STAGES = [Stage(None, Workload("sequential", 10))]  # one run of 10 users, 5 s


def test_a_master_address_is_host_and_port_of_this_machine():
    port = procs.free_port()
    assert master_address(f"127.0.0.1:{port}") == ("127.0.0.1", port)
    assert master_address("127.0.0.1") == ("127.0.0.1", generator.MASTER_PORT) or procs.port_in_use(
        generator.MASTER_PORT
    )
    assert worker_command(f"127.0.0.1:{port}") == f"python -m labserver worker --master 127.0.0.1:{port}"


@pytest.mark.parametrize(
    ("master", "words"),
    [
        ("", "address Locust's master listens on"),
        ("127.0.0.1:http", "port must be a number"),
        ("127.0.0.1:70000", "from 1 to 65535"),
        ("192.0.2.1:5557", "not an address of this machine"),  # TEST-NET-1: never this machine's
    ],
)
def test_a_bad_master_address_says_what_to_write(master, words):
    with pytest.raises(ValueError, match=words):
        master_address(master)


def test_a_taken_master_port_is_refused_before_anything_starts():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(ValueError, match=f"port {port} on 127.0.0.1 is taken"):
            master_address(f"127.0.0.1:{port}")


def test_workers_that_join_may_outnumber_this_machines_cores_but_forks_may_not():
    many = os.cpu_count() + 1
    check_load(
        Workload("sequential", 10, io_ms=10, duration_s=2), processes=many, master=f"127.0.0.1:{procs.free_port()}"
    )
    with pytest.raises(ValueError, match="processes"):
        check_load(Workload("sequential", 10, io_ms=10, duration_s=2), processes=many)
    with pytest.raises(ValueError, match="processes"):
        check_load(
            Workload("sequential", 10, io_ms=10, duration_s=2), processes=generator.WORKERS_MAX + 1, master="127.0.0.1"
        )


def test_forked_processes_listen_on_this_machine_only_and_a_master_where_it_is_told(tmp_path):
    class Server:
        url = "http://127.0.0.1:8000"

    forked = generator.command(Server, tmp_path, STAGES, Options(processes=2))
    assert forked[forked.index("--master-bind-host") + 1] == "127.0.0.1"  # Locust's default is every interface
    assert forked[forked.index("--master-bind-port") + 1] == forked[forked.index("--master-port") + 1]
    port = procs.free_port()
    master = generator.command(
        Server, tmp_path, STAGES, Options(processes=3, master=f"127.0.0.1:{port}", join_timeout_s=30)
    )
    assert "--processes" not in master and "--master" in master
    assert master[master.index("--master-bind-port") + 1] == str(port)
    assert master[master.index("--expect-workers") + 1] == "3"
    assert master[master.index("--expect-workers-max-wait") + 1] == "30"
    alone = generator.command(Server, tmp_path, STAGES, Options())
    assert not any(arg.startswith("--master") for arg in alone)


def test_the_wait_for_workers_reads_as_the_masters_events_tell_it():
    assert feed.waiting(LocustState(), 2) == "0 of 2 joined"
    joined = LocustState(joined=1)
    assert feed.waiting(joined, 2) == "1 of 2 joined"
    assert feed.waiting(replace(joined, started=True), 2) is None  # the test started: the plan's clock runs
    assert feed.waiting(replace(joined, gave_up=True), 2) is None


def test_workers_cpu_is_read_from_the_masters_files_and_added_to_its_own(tmp_path):
    def worker(index, pid, rate):
        cpu = [[100.0 + t, rate * t] for t in range(5)]
        data = {"t0": 100.0, "users": [], "cpu": cpu, "host": "laptop", "pid": pid}
        (tmp_path / f"records.w{index}.json").write_text(json.dumps(data))

    worker(0, 11, 0.5)
    worker(1, 11, 0.25)  # the same pid on another machine is another worker
    (tmp_path / "records.99.json").write_text(json.dumps({"t0": 100.0, "users": []}))  # the master's: no cpu
    reported = records.worker_cpu(tmp_path)
    assert {name for name, _, _ in reported} == {"laptop:11"}  # one name per host and pid ...
    worker(1, 12, 0.25)
    meter = LocustMeter(CpuMeter(-1), records.worker_cpu(tmp_path))
    assert meter.per_process(100.0, 104.0) == pytest.approx({"laptop:11": 0.5, "laptop:12": 0.25})
    assert meter.usage(100.0, 104.0) == pytest.approx((0.75, 0.5))
    assert all(map(math.isnan, LocustMeter(CpuMeter(-1)).usage(0, 1)))  # nothing measured


@pytest.mark.parametrize(("argv", "words"), [(["--master", "laptop"], "HOST:PORT"), (["--runs", "-1"], "--runs")])
def test_the_worker_command_refuses_bad_arguments(argv, words, capsys):
    argv = ["--master", "127.0.0.1:5557", *argv] if argv[0] != "--master" else argv
    with pytest.raises(SystemExit):
        cli.main(["worker", *argv])
    assert words in capsys.readouterr().err


def _workers(port: int, n: int, *extra: str) -> list[subprocess.Popen]:
    cmd = [sys.executable, "-m", "labserver", "worker", "--master", f"127.0.0.1:{port}", *extra]
    return [subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, start_new_session=True) for _ in range(n)]


def _ended(workers: list[subprocess.Popen], timeout_s: float = 20) -> list[tuple[int, str]]:
    """Each worker's exit code and what it said; a worker still running after `timeout_s` is killed and fails."""
    out = []
    for w in workers:
        try:
            _, err = w.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(w.pid, 9)
            pytest.fail(f"a worker still ran {timeout_s} s after its master stopped: {w.communicate()[1]}")
        out.append((w.returncode, err))
    return out


def _short_plan(server, port: int, processes: int, join_timeout_s: float) -> list:
    """A 2 s plan of 4 users whose Locust master waits on 127.0.0.1:`port` for `processes` workers."""
    run = dict(pattern="sequential", users=4, io_ms=10)
    master = f"127.0.0.1:{port}"
    return run_plan(
        server, [run], duration_s=2, processes=processes, master=master, join_timeout_s=join_timeout_s, lesson="tests"
    )


@pytest.mark.slow
def test_two_workers_that_join_measure_the_run_a_local_process_would():
    port = procs.free_port()
    workers = _workers(port, 2, "--runs", "1")
    try:
        with LabServer(procs=0) as server:
            run = dict(pattern="sequential", users=20, io_ms=50)
            (result,) = run_plan(server, [run], duration_s=3, processes=2, master=f"127.0.0.1:{port}", lesson="tests")
    finally:
        ended = _ended(workers)
    row = result.row
    assert row["valid"], row["problems"]
    assert row["master"] == f"127.0.0.1:{port}" and row["processes"] == 2
    # both workers sent load, and their records came back to the master's folder over Locust's messages
    per_file = {p.name: sum(map(len, records.read_json(p, []))) for p in result.path.glob("records.w*.json")}
    assert sorted(per_file) == ["records.w0.json", "records.w1.json"] and all(per_file.values())
    assert sum(per_file.values()) >= row["requests"]
    # on the master's clock: every request ends inside the run, none before it started
    starts = [r.sent for user in records.read(result.path) for r in user]
    assert min(starts) >= row["window_start"] - 3 and max(starts) <= row["window_start"] + row["window_s"] + 3
    assert row["locust_cpu"] > 0  # the workers' CPU, as they reported it
    assert [code for code, _ in ended] == [0, 0]  # `--runs 1`: the master's end ended them
    assert all("run 1 done" in err for _, err in ended)


@pytest.mark.slow
def test_too_few_workers_fail_the_plan_saying_what_to_run():
    port = procs.free_port()
    with LabServer(procs=0) as server:
        started = time.monotonic()
        came = r"too few Locust workers joined in 2 s: 0 of 2 came"  # the run's status, as its row says it
        with pytest.raises(RuntimeError, match=came + r".*python -m labserver worker --master 127\.0\.0\.1:"):
            _short_plan(server, port, processes=2, join_timeout_s=2)
    assert time.monotonic() - started < 60  # it gave up: no run is left waiting


@pytest.mark.slow
def test_a_worker_refuses_a_plan_that_sends_load_where_its_user_did_not_allow():
    port = procs.free_port()
    (worker,) = _workers(port, 1, "--runs", "1")
    with LabServer(procs=0, host="127.0.0.2") as server:  # not the master's host, and not allowed
        try:
            done = _short_plan(server, port, processes=1, join_timeout_s=20)
        except RuntimeError:
            done = []
    assert not any(r.row["valid"] for r in done)  # no load was sent
    ((_, err),) = _ended([worker])
    assert "refused a plan that sends load to 127.0.0.2" in err

"""Locust's state reaches the harness as the locustfile's events (labserver/protocol.py), never from its log."""

import json
import subprocess
import sys

import pytest

from labserver import protocol
from labserver.harness.processes import procs
from labserver.harness.servers.launcher import LabServer
from labserver.paths import LOCUSTFILES

# Locust's CPU warning, made to come at once: every sample is "above" the threshold, 5 a second
LOCUST = f"""
import sys
import locust.runners as runners
runners.CPU_WARNING_THRESHOLD, runners.CPU_MONITOR_INTERVAL = -1, 0.2
sys.argv = ["locust", "-f", {str(LOCUSTFILES / "pattern.py")!r}, *sys.argv[1:]]
from locust.main import main
main()
"""


def _kinds(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_lab_says_who_joined_when_locust_gave_up_and_its_cpu_warning_once(tmp_path):
    # in a process of its own: importing Locust patches the process with gevent
    code = f"""
import logging, sys
sys.path.insert(0, {str(LOCUSTFILES)!r})
from lab_master import MasterSide, _GaveUp
from lab_plan import Lab
lab = Lab()
lab.events_file = {str(tmp_path / protocol.EVENTS_FILE)!r}
master = MasterSide(lab, None)  # what it tells needs no runner
for client in ("a", "a", "b"):  # a worker may say twice that it is ready
    master.join(client)
logging.getLogger("locust.main").addHandler(_GaveUp(master))
logging.getLogger("locust.main").warning("Waiting for workers to be ready, 2 of 3 connected")
logging.getLogger("locust.main").error("Gave up waiting for workers to connect")
master.warn_cpu()
master.warn_cpu()  # Locust fires it on every sample above its threshold
master.warn_cpu(worker=1)
"""
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    said = _kinds(tmp_path / protocol.EVENTS_FILE)
    assert [(e["event"], e.get("workers"), e.get("worker")) for e in said] == [
        (protocol.JOINED, 1, None),
        (protocol.JOINED, 2, None),
        (protocol.GAVE_UP, 2, None),
        (protocol.CPU_WARNING, None, None),
        (protocol.CPU_WARNING, None, 1),
    ]
    state = protocol.Events(tmp_path / protocol.EVENTS_FILE).state()
    assert state == protocol.LocustState(joined=2, gave_up=True, cpu_warning=True)


@pytest.mark.slow
@pytest.mark.parametrize("processes", [1, 2])
def test_a_real_locust_says_it_started_each_stage_its_workers_and_their_cpu_warning(tmp_path, processes):
    with LabServer(procs=0) as server:
        stage = dict(pattern="sequential", users=2, tasks=1, io_ms=10, cpu_n=0, duration_s=1, host=server.url)
        protocol.write_plan(tmp_path / protocol.PLAN_FILE, [stage, {**stage, "users": 4}])
        args = ["PatternUser", "--headless", "--only-summary", "--host", server.url, "-u", "4", "-r", "4"]
        args += ["-t", "8s", "--stop-timeout", "0", "--plan-file", str(tmp_path / protocol.PLAN_FILE)]
        args += ["--events-file", str(tmp_path / protocol.EVENTS_FILE)]
        args += ["--records-file", str(tmp_path / protocol.RECORDS)]
        if processes > 1:
            port = str(procs.free_port())
            args += ["--processes", str(processes), "--master-bind-host", "127.0.0.1"]
            args += ["--master-bind-port", port, "--master-port", port]
        done = subprocess.run([sys.executable, "-c", LOCUST, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    said = _kinds(tmp_path / protocol.EVENTS_FILE)
    kinds = [e["event"] for e in said]
    assert kinds.index(protocol.STARTED) < kinds.index(protocol.STAGE)
    assert [e["index"] for e in said if e["event"] == protocol.STAGE] == [0, 1]
    warned = {e["worker"] for e in said if e["event"] == protocol.CPU_WARNING}
    if processes == 1:
        assert warned == {None} and protocol.JOINED not in kinds
    else:
        # each worker's warning came over Locust's messages; the master said it, with its own
        assert warned == {None, 0, 1}
        assert [e["workers"] for e in said if e["event"] == protocol.JOINED] == [1, 2]
        assert sorted(p.name for p in tmp_path.glob("records.w*.json")) == ["records.w0.json", "records.w1.json"]
    state = protocol.Events(tmp_path / protocol.EVENTS_FILE).state()
    assert state.started and state.stage == 1 and state.cpu_warning and not state.gave_up

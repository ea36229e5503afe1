"""A client strategy in its own process: `python -m labserver.clients` run to its end, supervised, on the cores a
pinned server leaves it, with the server's CPU seconds read around it, and the machine's pauses and the cores the
host took meanwhile added to its report.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from labserver.harness.processes import pauses
from labserver.harness.processes.machine import MachineMeter
from labserver.harness.processes.meters import tree_seconds
from labserver.harness.processes.supervise import Status, Watched, supervised, until_exit
from labserver.harness.servers import isolate
from labserver.harness.servers.launcher import LabServer
from labserver.theory.batch import Client


def client_process(
    server: LabServer, client: Client, url: str, requests: int, concurrency: int, *, log: Path, timeout_s: float
) -> tuple[dict | None, str, float]:
    """Run `python -m labserver.clients` to the end; return its report, a status and the server's CPU seconds."""
    cmd = [
        sys.executable,
        "-m",
        "labserver.clients",
        client,
        url,
        "--requests",
        str(requests),
        "--concurrency",
        str(concurrency),
    ]
    before, machine = _cpu_seconds(server), MachineMeter()
    machine.sample()  # for the cores the host takes meanwhile (steal time), as a Locust run's meter reads them
    watched = log.with_name(pauses.FILE)  # the machine's pauses meanwhile (harness/processes/pauses.py)
    run = Watched()
    with supervised(run, cmd, log, pauses_file=watched, lasts_s=timeout_s + 5, grace_s=1):
        # A pinned server's client runs on the other cores (isolate.apart), placed before its
        # clock starts: it imports its library first.
        isolate.place([run.proc.pid], isolate.others(server))
        until_exit(run, [server], deadline_s=timeout_s, every_s=0.02)
    proc = run.proc
    server_cpu_s = _cpu_delta(before, _cpu_seconds(server))
    machine.sample()
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.startswith("{")]
    if run.status is Status.OK and (proc.returncode != 0 or not lines):
        run.stop(Status.CLIENT_FAILED, f"(exit code {proc.returncode}); see {log}")
    report = json.loads(lines[-1]) if lines and run.status is Status.OK else None
    if report is not None:  # the longest pause while the client sent its requests
        report["paused_ms"] = pauses.longest_ms(
            pauses.read(watched), report["started"], report["started"] + report["wall_s"]
        )
        report["stolen_cpu"] = machine.stolen_cores(-math.inf, math.inf)  # over the client's whole life
    return report, run.label, server_cpu_s


def _cpu_seconds(server: LabServer) -> tuple[float | None, float]:
    """The server's CPU seconds so far: as it reports them itself (None if it did not), and from /proc.

    Its own report is time.process_time(), to the nanosecond; /proc counts in ticks of 10 ms, and a
    run of 100 requests in 0.1 s would then price the server's CPU per request to ±0.1 ms, a third
    of what it is. /proc's figure takes over for a server that cannot answer.
    """
    try:
        reported = sum(float(e["cpu_s"]) for e in server.info()["cpu"]["processes"])
    except (OSError, ValueError, KeyError, TypeError):
        reported = None
    return reported, tree_seconds(server.proc.pid) if server.proc is not None else math.nan


def _cpu_delta(before: tuple[float | None, float], after: tuple[float | None, float]) -> float:
    """CPU seconds between two readings of `_cpu_seconds`: the server's own if both have it, else /proc's."""
    if before[0] is not None and after[0] is not None:
        return after[0] - before[0]
    return after[1] - before[1]

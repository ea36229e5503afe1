"""A Locust worker: what it sends its master (locustfiles/lab_master.py), and the plans it refuses.

With several Locust processes (--processes N, or workers that join a master from other
machines: `python -m labserver worker --master HOST:PORT`), only the master has the plan and the
run's folder; its workers may have other disks and other clocks. So everything travels by
Locust's own messages (labserver/protocol.py names them): when the test starts the master sends
each worker the plan; each worker sends back its new requests once a second for a live view, its
CPU warning if Locust gives one, and at the end its records and its CPU seconds, which the
master writes into its folder as records.w<index>.json, exactly as one process writes its own. A
worker measures on its own clock, from the moment its plan arrived; the master moves its times
onto its own clock by the difference of the two start times. The plan's one-way trip (well under
a millisecond on a LAN) is the only error: it shifts every time of that worker alike and changes
no latency.
"""

import os
import socket
import sys
import time
import urllib.parse

import gevent
from lab_plan import LIVE_EVERY_S, Lab
from locust.runners import WorkerRunner

from labserver import config, protocol
from labserver.protocol import LiveBatch, PlanStage, WorkerRecords

CPU_EVERY_S = 0.25  # how often a worker samples its CPU seconds


class WorkerSide:
    """A worker: its CPU warning, its CPU seconds, its new requests and its records, all to its master."""

    def __init__(self, lab: Lab, runner: WorkerRunner) -> None:
        self.lab, self.runner = lab, runner
        self.warned = False  # its CPU warning went to the master (once)
        self.cpu: list[tuple[float, float]] = []  # (time, its CPU seconds)
        self.sent = False  # its records went to the master (once)

    def warn_cpu(self) -> None:
        """Locust's CPU warning, once: its master tells it (MasterSide.warn_cpu)."""
        if not self.warned:
            self.warned = True
            self.runner.send_message(protocol.CPU_MESSAGE, {"index": self.runner.worker_index})

    def report(self, live: bool) -> None:
        """Once its plan came: its CPU seconds, sampled as the test runs, and its new requests if `live`."""
        self.sent = False
        self.cpu.clear()
        gevent.spawn(self._sample_cpu)
        if live:
            gevent.spawn(self._send_live)

    def _sample_cpu(self) -> None:
        """Its CPU seconds, every CPU_EVERY_S while the test runs: the master cannot see its machine."""
        while True:
            t = os.times()
            self.cpu.append((time.time(), t.user + t.system))
            gevent.sleep(CPU_EVERY_S)

    def _send_live(self) -> None:
        """Its Lab.stream: its new requests, once a second, to its master (take_live)."""
        written: list[int] = []
        while True:
            gevent.sleep(LIVE_EVERY_S)
            new = self.lab.new_live(written)  # as a lone process writes them: one bytes object, not a list
            if new:
                data = LiveBatch(index=self.runner.worker_index, t0=self.lab.began, records=new)
                self.runner.send_message(protocol.LIVE_MESSAGE, dict(data))

    def stop(self, records_file: str) -> None:
        """When the test stops: its records go to its master, which writes them (`records_file` is the master's)."""
        self.send_records()

    def send_records(self) -> None:
        """Its records and CPU seconds, to its master (once: a worker that quits after stopping stops twice)."""
        if self.lab.t0 is not None and not self.sent:
            self.sent = True
            index, users = self.runner.worker_index, protocol.written(self.lab.records)
            data = WorkerRecords(
                index=index, t0=self.lab.t0, users=users, cpu=self.cpu, host=socket.gethostname(), pid=os.getpid()
            )
            self.runner.send_message(protocol.RECORDS_MESSAGE, dict(data))


def refused(stages: list[PlanStage]) -> bool:
    """A worker's check of a plan from its master: whether it sends load where its user did not allow (said on stderr).

    Checked on the worker, where its user named what it may load: a master cannot widen it.
    """
    # set by `python -m labserver worker`: the master's own host unless its user allowed more (not a
    # Locust option, which a master could override)
    allowed = config.WORKER_TARGETS.read()
    hosts = {urllib.parse.urlsplit(stage.get("host", "")).hostname for stage in stages}
    refused = sorted(h or "(the master's --host)" for h in hosts if allowed and h not in allowed)
    if refused:
        print(
            f"labserver worker: refused a plan that sends load to {', '.join(refused)}: "
            f"this worker sends only to {', '.join(allowed)} (add --allow-target HOST to allow more)",
            file=sys.stderr,
            flush=True,
        )
    return bool(refused)

"""A Locust master and its workers: how the plan goes out and what each worker sends back.

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

import logging
import os
import socket
import sys
import time
import urllib.parse

import gevent
from lab_plan import LIVE_EVERY_S, Lab
from locust.runners import MasterRunner, WorkerRunner

from labserver import config, protocol

CPU_EVERY_S = 0.25  # how often a worker samples its CPU seconds
REPORTS_WAIT_S = 10.0  # how long a master waits for its workers' records after telling them to stop
# Locust's master logs this and quits when too few workers joined in time: it fires no event then
GAVE_UP_LOG = "Gave up waiting for workers"


class Workers:
    """What a master knows of its workers, and what a worker sends its master, for the `lab`'s plan."""

    def __init__(self, lab: Lab):
        self.lab = lab
        self.joined: set[str] = set()  # a master's: the workers that came
        self.reported: set[int] = set()  # a master's: the workers whose records it has
        self.warned: set[int | None] = set()  # whose CPU warning was told (None: this process's own)
        self.cpu: list[tuple[float, float]] = []  # a worker's (time, its CPU seconds)
        self.sent = False  # a worker's: its records went to the master (once)

    def send_plan(self, runner, plan: dict) -> None:
        """A master's: the plan, to every worker that is about to get users.

        Locust's messages to one worker keep their order: the plan arrives before the spawn
        message that starts its test.
        """
        for client in runner.clients.all:
            runner.send_message(protocol.PLAN_MESSAGE, plan, client.id)

    def listen(self, runner, records_file: str, live_file: str) -> None:
        """A master's: take what its workers send, and tell as they join or as Locust gives up on them."""
        runner.register_message(
            protocol.RECORDS_MESSAGE, lambda environment, msg: self.take_records(records_file, msg.data)
        )
        runner.register_message(protocol.LIVE_MESSAGE, lambda environment, msg: self.take_live(live_file, msg.data))
        runner.register_message(protocol.CPU_MESSAGE, lambda environment, msg: self.warn_cpu(runner, msg.data["index"]))
        runner.environment.events.worker_connect.add_listener(self.join)
        logging.getLogger("locust.main").addHandler(_GaveUp(self))

    def join(self, client_id: str) -> None:
        """A master's: tell as each worker joins (once, however often it says it is ready)."""
        if client_id not in self.joined:
            self.joined.add(client_id)
            self.lab.say(protocol.JOINED, workers=len(self.joined))

    def warn_cpu(self, runner, worker: int | None = None) -> None:
        """Locust's CPU warning, once per process: a worker's goes to its master, which tells it."""
        if worker in self.warned:
            return
        self.warned.add(worker)
        if isinstance(runner, WorkerRunner):
            runner.send_message(protocol.CPU_MESSAGE, {"index": runner.worker_index})
        else:
            self.lab.say(protocol.CPU_WARNING, worker=worker)

    def report(self, runner, live: bool) -> None:
        """A worker's, once its plan came: its CPU seconds, sampled as the test runs, and its new requests if `live`."""
        self.sent = False
        self.cpu.clear()
        gevent.spawn(self._sample_cpu)
        if live:
            gevent.spawn(self._send_live, runner)

    def _sample_cpu(self) -> None:
        """A worker's CPU seconds, every CPU_EVERY_S while the test runs: the master cannot see its machine."""
        while True:
            t = os.times()
            self.cpu.append((time.time(), t.user + t.system))
            gevent.sleep(CPU_EVERY_S)

    def _send_live(self, runner) -> None:
        """A worker's Lab.stream: its new requests, once a second, to its master (take_live)."""
        written: list[int] = []
        while True:
            gevent.sleep(LIVE_EVERY_S)
            new = self.lab.new_live(written)  # as a lone process writes them: one bytes object, not a list
            if new:
                data = {"index": runner.worker_index, "t0": self.lab.began, "records": new}
                runner.send_message(protocol.LIVE_MESSAGE, data)

    def take_live(self, prefix: str, data: dict) -> None:
        """A master's: a worker's new requests, appended to that worker's live file on the master's clock."""
        path = protocol.live_path(prefix, protocol.worker(data["index"]))
        t0 = self.lab.began
        head = b"" if os.path.exists(path) else protocol.live_head(t0)
        with open(path, "ab") as f:
            f.write(head + protocol.live_shifted(data["records"], t0 - data["t0"]))

    def take_records(self, prefix: str, data: dict) -> None:
        """A master's: a worker's records and CPU seconds, on the master's clock, in the run's folder."""
        shift = self.lab.began - data["t0"]
        if prefix:
            users = [[protocol.shifted(r, shift) for r in user] for user in data["users"]]
            cpu = [[t + shift, seconds] for t, seconds in data["cpu"]]
            theirs = protocol.ProcessRecords(self.lab.t0, users, cpu, data["host"], data["pid"])
            theirs.write(protocol.records_path(prefix, protocol.worker(data["index"])))
        self.reported.add(data["index"])

    def stop(self, runner, records_file: str) -> None:
        """When the test stops: a worker sends its records to its master, which waits for them, then writes its own."""
        if isinstance(runner, WorkerRunner):
            self.send_records(runner)
            return
        self.wait_for_records(runner)
        self.lab.write_records(records_file)

    def send_records(self, runner) -> None:
        """A worker's records and CPU seconds, to its master (once: a worker that quits after stopping stops twice)."""
        if self.lab.t0 is not None and not self.sent:
            self.sent = True
            data = {"index": runner.worker_index, "t0": self.lab.t0, "users": self.lab.records, "cpu": self.cpu}
            runner.send_message(protocol.RECORDS_MESSAGE, {**data, "host": socket.gethostname(), "pid": os.getpid()})

    def wait_for_records(self, runner) -> None:
        """A master's: wait for every worker's records; each sends them before it says it stopped.

        At the plan's end the workers were told to stop, and send them at once. Otherwise (Ctrl-C,
        a server that died) they stop as they quit, and the master waits a second at most: its own
        files, written after this, must be out before the lab's grace period ends.
        """
        if not isinstance(runner, MasterRunner):
            return
        expected = {runner.get_worker_index(c.id) for c in runner.clients.all}
        deadline = time.time() + (REPORTS_WAIT_S if self.lab.over else 1.0)
        while not expected <= self.reported and time.time() < deadline:
            gevent.sleep(0.05)


class _GaveUp(logging.Handler):
    """Locust's master giving up on its workers, from the record it logs, told as the lab's event."""

    def __init__(self, workers: Workers):
        super().__init__(logging.ERROR)
        self.workers = workers

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith(GAVE_UP_LOG):
            self.workers.lab.say(protocol.GAVE_UP, workers=len(self.workers.joined))


def refused(stages: list[dict]) -> bool:
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

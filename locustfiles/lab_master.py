"""The Locust process that leads the test: a lone one, or a master with its workers (locustfiles/lab_workers.py).

It follows the plan, tells what happens as the lab's events and writes the records files; a
master besides sends its workers the plan and writes what they send back, on its own clock.
"""

import logging
import os
import time

import gevent
from lab_plan import Lab
from locust.runners import MasterRunner, Runner

from labserver import protocol
from labserver.protocol import LiveBatch, WorkerPlan, WorkerRecords

REPORTS_WAIT_S = 10.0  # how long a master waits for its workers' records after telling them to stop
# Locust's master logs this and quits when too few workers joined in time: it fires no event then
GAVE_UP_LOG = "Gave up waiting for workers"


class LoneSide:
    """A Locust process on its own: it follows the `lab`'s plan, tells its CPU warning and writes its records.

    A master (MasterSide) does the same for the whole test and hears from its workers besides;
    a worker (WorkerSide) sends its master all it has. Locust splits its runners the same way.
    """

    def __init__(self, lab: Lab, runner: Runner) -> None:
        self.lab, self.runner = lab, runner
        self.warned: set[int | None] = set()  # whose CPU warning was told (None: this process's own)

    def listen(self, records_file: str, live_file: str) -> None:
        """What a master takes from its workers: a lone process has none."""

    def begin(self, plan: WorkerPlan, stop: bool, live_file: str) -> None:
        """Once its plan started: say as each stage begins (Lab.follow), and stream its requests if `live_file`.

        `stop`: the plan ends the test (`end`), else Locust's --run-time does.
        """
        gevent.spawn(self.lab.follow, self.end if stop else None)
        if live_file:
            gevent.spawn(self.lab.stream, protocol.live_path(live_file, os.getpid()))

    def end(self) -> None:
        """The test, ended once its plan is over."""
        self.runner.quit()

    def warn_cpu(self, worker: int | None = None) -> None:
        """Locust's CPU warning, once per process (`worker`: a master's worker, by index), told as the lab's event."""
        if worker in self.warned:
            return
        self.warned.add(worker)
        self.lab.say(protocol.CPU_WARNING, worker=worker)

    def stop(self, records_file: str) -> None:
        """When the test stops: its records file."""
        self.lab.write_records(records_file)


class MasterSide(LoneSide):
    """A master: it sends its workers the plan, writes what they send back, and tells as they join."""

    runner: MasterRunner

    def __init__(self, lab: Lab, runner: MasterRunner) -> None:
        super().__init__(lab, runner)
        self.joined: set[str] = set()  # the workers that came
        self.reported: set[int] = set()  # the workers whose records it has

    def listen(self, records_file: str, live_file: str) -> None:
        """Take what its workers send, and tell as they join or as Locust gives up on them."""
        runner = self.runner
        runner.register_message(
            protocol.RECORDS_MESSAGE, lambda environment, msg: self.take_records(records_file, msg.data)
        )
        runner.register_message(protocol.LIVE_MESSAGE, lambda environment, msg: self.take_live(live_file, msg.data))
        runner.register_message(protocol.CPU_MESSAGE, lambda environment, msg: self.warn_cpu(msg.data["index"]))
        runner.environment.events.worker_connect.add_listener(self.join)
        logging.getLogger("locust.main").addHandler(_GaveUp(self))

    def begin(self, plan: WorkerPlan, stop: bool, live_file: str) -> None:
        """Once its plan started: send it to the workers, then say as each stage begins (they stream: take_live)."""
        self.send_plan(plan)
        gevent.spawn(self.lab.follow, self.end if stop else None)

    def end(self) -> None:
        """The test, ended once its plan is over: the workers are told to stop first, and send their records.

        The master quits once it has them (wait_for_records): quitting at once would end them before they could.
        """
        self.runner.stop()
        self.runner.quit()

    def send_plan(self, plan: WorkerPlan) -> None:
        """The plan, to every worker that is about to get users.

        Locust's messages to one worker keep their order: the plan arrives before the spawn
        message that starts its test.
        """
        for client in self.runner.clients.all:
            self.runner.send_message(protocol.PLAN_MESSAGE, dict(plan), client.id)  # send_message takes a dict

    def join(self, client_id: str) -> None:
        """Tell as each worker joins (once, however often it says it is ready)."""
        if client_id not in self.joined:
            self.joined.add(client_id)
            self.lab.say(protocol.JOINED, workers=len(self.joined))

    def take_live(self, prefix: str, data: LiveBatch) -> None:
        """A worker's new requests, appended to that worker's live file on the master's clock."""
        path = protocol.live_path(prefix, protocol.worker(data["index"]))
        t0 = self.lab.began
        head = b"" if os.path.exists(path) else protocol.live_head(t0)
        with open(path, "ab") as f:
            f.write(head + protocol.live_shifted(data["records"], t0 - data["t0"]))

    def take_records(self, prefix: str, data: WorkerRecords) -> None:
        """A worker's records and CPU seconds, on the master's clock, in the run's folder."""
        shift = self.lab.began - data["t0"]
        if prefix:
            users = [[protocol.shifted(r, shift) for r in user] for user in data["users"]]
            cpu = [[t + shift, seconds] for t, seconds in data["cpu"]]
            theirs = protocol.ProcessRecords(self.lab.t0, users, cpu, data["host"], data["pid"])
            theirs.write(protocol.records_path(prefix, protocol.worker(data["index"])))
        self.reported.add(data["index"])

    def stop(self, records_file: str) -> None:
        """When the test stops: wait for the workers' records, then write its own."""
        self.wait_for_records()
        self.lab.write_records(records_file)

    def wait_for_records(self) -> None:
        """Wait for every worker's records; each sends them before it says it stopped.

        At the plan's end the workers were told to stop, and send them at once. Otherwise (Ctrl-C,
        a server that died) they stop as they quit, and the master waits a second at most: its own
        files, written after this, must be out before the lab's grace period ends.
        """
        expected = {self.runner.get_worker_index(c.id) for c in self.runner.clients.all}
        deadline = time.time() + (REPORTS_WAIT_S if self.lab.over else 1.0)
        while not expected <= self.reported and time.time() < deadline:
            gevent.sleep(0.05)


class _GaveUp(logging.Handler):
    """Locust's master giving up on its workers, from the record it logs, told as the lab's event."""

    def __init__(self, master: MasterSide) -> None:
        super().__init__(logging.ERROR)
        self.master = master

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith(GAVE_UP_LOG):
            self.master.lab.say(protocol.GAVE_UP, workers=len(self.master.joined))

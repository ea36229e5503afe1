"""A lab plan as one Locust process runs it: its stages, its clock, its users' records, what it says.

locustfiles/pattern.py wires Locust's events to a `Lab` and holds the users; the formats written
here are labserver/protocol.py's, which the harness reads. A request belongs to the stage in
which it was sent, and the users stay spread from one stage to the next (`may_send`): the server
is never idle between stages, and the lab's warm-up, cut from every stage's window, starts only
once the last request of the stages before is answered (labserver/harness/rows/collect.py). Starting
Locust once per plan instead of once per measurement saves its start-up, spawn and report on
every run but the first, and the users keep their open connections.

What Locust does (the test started, a stage began, a worker joined, the master gave up waiting
for workers, Locust warned of its CPU) goes to --events-file as it happens, one event a line:
the harness learns Locust's state from them, never from Locust's log.
"""

import collections
import itertools
import os
import random
import time
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

import gevent

from labserver import protocol
from labserver.protocol import PlanStage, Record

LIVE_EVERY_S = 1.0  # how often --live-file gets the new requests


class Running(NamedTuple):
    """The stage running at `now` (epoch s): its number in the plan (0: the first), and the stage."""

    now: float
    number: int
    stage: PlanStage


class Sender(Protocol):
    """A user as the plan admits it (pattern.py's PatternMixin)."""

    index: int  # its place among this process's users, in the order they started
    stage: int | None  # the stage of its last request


class Lab:
    """This process's share of the plan: its stages, its clock (`t0`) and each user's records."""

    def __init__(self) -> None:
        self.stages: list[PlanStage] = []  # as the harness wrote them, never changed here
        self.starts: list[float] = []  # when each stage starts, after t0
        self.ends: list[float] = []  # when each stage ends, after t0
        self.paths: list[str] = []  # the URL each stage's requests get (protocol.request_path)
        self.t0: float | None = None  # when the test started (time.time())
        self.over = False  # the plan is over and the test was told to stop
        self.records: list[list[Record]] = []  # per user, in the order the users started
        self.next_user = itertools.count()
        self.in_flight: collections.Counter[int] = collections.Counter()  # sent, not answered yet, per stage
        self.events_file = ""  # a master's or a lone process's: a worker's test is its master's to tell

    def start(self, stages: list[PlanStage]) -> float:
        """Set the plan's stages and the test's start; return when the plan ends, after the start."""
        self.ends = protocol.ends(stage["duration_s"] for stage in stages)
        self.starts = [0.0, *self.ends][:-1]
        self.paths = [protocol.request_path(stage) for stage in stages]
        self.stages = stages
        self.t0 = time.time()
        self.say(protocol.STARTED, t0=self.t0)
        return self.ends[-1] if self.ends else 0.0

    @property
    def began(self) -> float:
        """When the test started (`t0`), for what runs only once it has: the users, the plan's clock, the streams."""
        if self.t0 is None:
            raise RuntimeError("the plan has not started")
        return self.t0

    def say(self, kind: str, **fields: Any) -> None:
        """An event for the harness, if this process writes them (labserver/protocol.py names them)."""
        if self.events_file:
            with open(self.events_file, "a") as f:
                f.write(protocol.event(kind, time.time(), **fields))

    def stage_now(self) -> Running | None:
        """The stage running now; None once the plan is over, after a short sleep.

        Locust's --run-time stops the test a moment after the plan's end: until then a user idles.
        """
        now = time.time()
        i = protocol.stage_at(self.ends, now - self.began)
        if i is None:
            gevent.sleep(0.1)
            return None
        return Running(now, i, self.stages[i])

    def may_send(self, user: Sender, running: Running) -> bool:
        """Whether `user` sends a request of the running stage now; if not, it has waited for what comes first.

        A user that the stage does not need waits for the next stage. When the stage waits on I/O,
        a user that was in the loop of the stage before goes straight on; one that joins (or comes
        back) starts at a random moment within one request's wait instead. When it only computes,
        every user first waits until the stages before have drained (pattern.py says why).
        """
        now, i, stage = running
        if not protocol.admitted(user.index, stage["users"]):
            gevent.sleep(max(0.001, self.began + self.ends[i] - now))
            return False
        if user.stage == i:
            return True
        carried_on = user.stage == i - 1  # in the loop of the stage just before
        user.stage = i
        spread_s = min(1.0, stage["tasks"] * stage["io_ms"] / 1000)  # one request's wait, at most 1 s
        if not spread_s:
            while any(self.in_flight[earlier] for earlier in range(i)):
                gevent.sleep(0.005)
            return False
        if not carried_on:
            # Users that start together stay in step: every wait ends at once and the server
            # gets its requests in bursts, not the steady flow the model assumes (a burst of
            # 200 requests costs one worker ~100 ms of CPU). A random start within one
            # request's wait spreads them evenly; the warm-up, cut from the window, absorbs it.
            gevent.sleep(random.uniform(0, spread_s))
            return False
        return True

    def follow(self, end: Callable[[], None] | None) -> None:
        """Say as each stage begins; once the plan is over, `end` the test (None: Locust's --run-time ends it).

        The plan ends the test itself, on time: Locust's own --run-time timer, a safety net here,
        is set on a clock gevent last read before the imports. How a process ends it is its role's
        (lab_master.py: a master stops its workers first).
        """
        for i, start in enumerate(self.starts):
            _sleep_until(self.began + start)
            self.say(protocol.STAGE, index=i)
        if end is None or not self.ends:
            return
        _sleep_until(self.began + self.ends[-1])
        self.over = True
        end()

    def new_live(self, written: list[int]) -> bytes:
        """Every user's requests since the last call, as live records; `written` keeps count per user."""
        written += [0] * (len(self.records) - len(written))
        new: list[list[Record]] = []
        for user, records in enumerate(self.records):
            new.append(records[written[user] :])
            written[user] = len(records)
        return protocol.live_records(itertools.chain.from_iterable(new))

    def stream(self, path: str) -> None:
        """Append each user's new requests to `path` once a second as the test runs: a notebook's live view reads them.

        Only with --live-file (a notebook, or the bench measuring what the view costs): one
        binary write a second (labserver/protocol.py's records; labserver/harness/plans/feed.py reads them).
        """
        written: list[int] = []  # how many of each user's records are in the file already
        with open(path, "ab") as f:
            f.write(protocol.live_head(self.began))
            f.flush()
            while True:
                gevent.sleep(LIVE_EVERY_S)
                new = self.new_live(written)
                if new:
                    f.write(new)
                    f.flush()

    def write_records(self, prefix: str) -> None:
        """This process's records file, if the test names one: a master's has its start and no users."""
        if prefix:
            protocol.ProcessRecords(self.t0, self.records).write(protocol.records_path(prefix, os.getpid()))


def arrival_times(i: int, stage: PlanStage, start: float, end: float) -> list[float]:
    """When an open loop sends stage `i`'s requests, from `start` to `end` (epoch s): `rate` a second of them.

    Seeded: a rerun gets the same arrivals.
    """
    draw = random.Random(f"{i}-{stage['rate']}").uniform
    return sorted(draw(start, end) for _ in range(round(stage["rate"] * max(0.0, end - start))))


def _sleep_until(at: float) -> None:
    while time.time() < at:
        gevent.sleep(at - time.time())  # may wake early on gevent's stale clock: check again

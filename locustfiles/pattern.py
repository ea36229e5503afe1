"""Closed-loop users hammering one pattern endpoint, with no think time.

Each user sends a request, waits for the reply, and sends the next: with N users the
server always has N requests in flight, which is what the lab's model (Little's law)
assumes. Run it on its own, for example:

    locust -f locustfiles/pattern.py --headless -u 50 -t 10s -H http://127.0.0.1:8000 \
        --pattern gather --tasks 3 --io-ms 100

Every user records each of its requests (labserver/protocol.py), for --records-file when the
test stops: Locust rounds latencies above 100 ms and its per-second counts cannot tell a steady
flow from synchronized bursts. The X-Worker-Pid header says which worker served it.
ArrivalUser is the open loop (lesson 08): requests leave on a schedule, whatever the server does.

--plan-file runs several measurements in one Locust process, one after the other, each with
the first `users` users (locustfiles/lab_plan.py). When a stage only computes, every user first
waits until the stages before have drained: their requests would compete with the new ones for
the same cores and GIL, and a queue left on an event loop drains slowly behind new threads that
compute.
"""

import argparse
import gc
import time
from typing import Any, Generic, TypeVar

import gevent
from lab_master import LoneSide, MasterSide
from lab_plan import Lab, arrival_times
from lab_workers import WorkerSide, refused
from locust import FastHttpUser, HttpUser, constant, events, task
from locust.clients import HttpSession
from locust.contrib.fasthttp import FastHttpSession
from locust.env import Environment
from locust.runners import MasterRunner, WorkerRunner

from labserver import protocol
from labserver.protocol import PlanStage, Record, WorkerPlan

LAB = Lab()
# The youngest objects are collected every 5,000 net allocations, not Python's 700 nor the server's 100,000
# (labserver/demo/app.py). At 700, hundreds of users holding a request's objects reach the count by chance many
# times a second, and each pass walks their live objects to free nothing. But `requests` (HttpUser) leaves cyclic
# garbage on every request: at 100,000 it piles up and one long pass frees it all, a stall in which no reply is
# read and every user waits. At 5,000 the same collecting comes in passes of a few ms (docs/evidence.md).
GC_THRESHOLD0 = 5_000
Client = TypeVar("Client", HttpSession, FastHttpSession)  # a user's HTTP client: requests' or geventhttpclient's


@events.init_command_line_parser.add_listener
def add_options(parser: argparse.ArgumentParser, **_: object) -> None:
    parser.add_argument("--pattern", default="sequential", help="pattern endpoint to call")
    parser.add_argument("--tasks", type=int, default=1, help="sub-tasks per request")
    parser.add_argument("--io-ms", type=int, default=100, help="I/O wait per sub-task, in ms")
    parser.add_argument("--cpu-n", type=int, default=0, help="fib(cpu_n) per sub-task")
    parser.add_argument("--timeout-s", type=float, default=60.0, help="client timeout per request, in s")
    parser.add_argument("--records-file", default="", help="where to write every request's record, per process")
    parser.add_argument("--plan-file", default="", help="JSON list of stages to run one after the other")
    parser.add_argument("--live-file", default="", help="where to append every request once a second, as it runs")
    parser.add_argument("--events-file", default="", help="where to append what Locust does, as it happens")


@events.init.add_listener
def set_up(environment: Environment, **_: object) -> None:
    """This process's part, picked once from its runner's type: a worker's plan comes from its master (take_plan)."""
    o, runner = environment.parsed_options, environment.runner
    assert o is not None and runner is not None  # Locust parses its options and makes its runner before init
    set_timeout(o.timeout_s)
    role: LoneSide | WorkerSide
    if isinstance(runner, WorkerRunner):
        role = worker = WorkerSide(LAB, runner)
        runner.register_message(protocol.PLAN_MESSAGE, lambda environment, msg: take_plan(worker, msg.data))
    else:
        LAB.events_file = o.events_file  # a worker's test is its master's to tell
        role = leader = MasterSide(LAB, runner) if isinstance(runner, MasterRunner) else LoneSide(LAB, runner)
        leader.listen(o.records_file, o.live_file)
        environment.events.test_start.add_listener(lambda **_: load_plan(o, leader))
    environment.events.cpu_warning.add_listener(lambda **_: role.warn_cpu())
    environment.events.test_stop.add_listener(lambda **_: role.stop(o.records_file))


def set_timeout(timeout: float) -> None:
    for user_class in (PatternUser, ArrivalUser):  # FastHttpUser's settings: HttpUser (requests) has none
        user_class.network_timeout = user_class.connection_timeout = timeout


def start_plan(stages: list[PlanStage]) -> float:
    """Set the plan's stages and the test's start; return when the plan ends."""
    # A full garbage collection walks every object Locust's imports made, tens of ms during
    # which no reply is read. Every request in flight waits it out, and a closed loop of equal
    # waits repeats the gap forever after. Frozen objects are left out of every collection.
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD0, *gc.get_threshold()[1:])
    return LAB.start(stages)


def load_plan(o: argparse.Namespace, leader: LoneSide) -> None:
    """A master's or a lone process's plan, as its test starts: a worker's comes from its master (take_plan)."""
    # without a plan, the command line's one pattern for every user, until Locust's own --run-time ends the test
    one = PlanStage(pattern=o.pattern, tasks=o.tasks, io_ms=o.io_ms, cpu_n=o.cpu_n, users=10**9, duration_s=1e9)
    start_plan(protocol.read_plan(o.plan_file) if o.plan_file else [one])
    plan = WorkerPlan(stages=LAB.stages, timeout_s=o.timeout_s, live=bool(o.live_file))  # what its workers get
    leader.begin(plan, stop=bool(o.plan_file), live_file=o.live_file)


def take_plan(worker: WorkerSide, plan: WorkerPlan) -> None:
    """A worker's plan, from its master: it starts the worker's clock and what it sends back."""
    if refused(plan["stages"]):
        worker.runner.quit()
        return
    set_timeout(plan["timeout_s"])
    start_plan(plan["stages"])
    worker.report(live=plan["live"])


class PatternMixin(Generic[Client]):
    client: Client  # the User's own: HttpUser's or FastHttpUser's
    wait_time = constant(0)  # closed loop: the next request leaves as soon as the reply arrives

    def on_start(self) -> None:
        self.index = next(LAB.next_user)  # its place among this process's users, in the order they started
        self.records: list[Record] = []
        self.stage: int | None = None  # the stage of this user's last request
        LAB.records.append(self.records)

    def call(self) -> None:
        running = LAB.stage_now()
        if running is not None and LAB.may_send(self, running):
            self.send(running.number)

    def send(self, i: int, intended: float | None = None) -> None:
        """One request of stage `i`, recorded with its worker's pid (and, for an open loop, its intended time)."""
        LAB.in_flight[i] += 1
        started = time.perf_counter()
        try:
            with self._request(i) as r:
                ok = protocol.answered(r.status_code)
                if not ok:
                    r.failure(f"status {r.status_code}")
                pid = r.headers.get("x-worker-pid") if r.headers else None  # None: no reply at all
        finally:
            LAB.in_flight[i] -= 1
        ms = (time.perf_counter() - started) * 1000
        self.records.append(protocol.record(time.time(), ms, ok, int(pid) if pid else None, i, intended))

    def _request(self, i: int) -> Any:  # each client returns its own kind of response context
        """Stage `i`'s request: its pattern's GET, or the route of an app of one's own with its method, body and
        headers."""
        stage = LAB.stages[i]
        route = stage.get("route")
        if route is None:
            return self.client.get(LAB.paths[i], name=f"/{stage['pattern']}", catch_response=True)
        return self.client.request(
            route["method"],
            LAB.paths[i],
            name=route["label"],
            data=route.get("body"),
            headers=route.get("headers"),
            catch_response=True,
        )


class PatternUser(PatternMixin[FastHttpSession], FastHttpUser):
    """The default: geventhttpclient, light enough that one process drives about 2,000 req/s."""

    @task
    def request(self) -> None:
        self.call()


class PatternHttpUser(PatternMixin[HttpSession], HttpUser):
    """The same user on `requests`: heavier, it saturates its core sooner (lesson 98)."""

    @task
    def request(self) -> None:
        self.call()


class ArrivalUser(PatternMixin[FastHttpSession], FastHttpUser):
    """The open loop: requests leave on a schedule, whatever the server does with the ones before.

    The first user of the process is the schedule: Poisson arrivals at the stage's `rate`, each
    request in a greenlet of its own. A reply that comes late delays nothing. The schedule is a
    Poisson process held to exactly rate × (its sending seconds) arrivals: that many moments
    drawn uniformly over the seconds, which is what a Poisson process is, given its count. The
    gaps stay exponential-like, as independent clients' are, and the rate a run asks for is
    the rate it gets. (A free Poisson count strays by √n: one standard deviation is 2% of a
    10 s run at 200 req/s, and a count 5.3% high, under three of them, takes a queue at ρ = 0.95
    past its capacity.) When the process itself falls behind (its CPU busy), the requests due
    leave at once and keep their `intended` time: the lab then measures latency from when they
    should have left, and judges the run by the arrival rate it achieved (collect.py).
    """

    concurrency = 10_000  # connections it may open: every request in flight holds one, queued ones too

    @task
    def schedule(self) -> None:
        running = LAB.stage_now()
        if running is None:
            return
        now, i, stage = running
        ends = LAB.began + LAB.ends[i]
        if self.index > 0 or not stage.get("rate") or self.stage == i:  # one schedule per process and stage
            gevent.sleep(max(0.001, ends - now))
            return
        self.stage = i
        for at in arrival_times(i, stage, now, ends - stage.get("drain_s", 0)):  # its last seconds: the backlog drains
            ahead = at - time.time()
            if ahead > 0:
                gevent.sleep(ahead)
            gevent.spawn(self.send, i, at)
        gevent.sleep(max(0.0, ends - time.time()))

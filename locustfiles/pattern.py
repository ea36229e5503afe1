"""Closed-loop users hammering one pattern endpoint, with no think time.

Each user sends a request, waits for the reply, and sends the next: with N users the
server always has N requests in flight, which is what the lab's model (Little's law)
assumes. Run it on its own, for example:

    locust -f locustfiles/pattern.py --headless -u 50 -t 10s -H http://127.0.0.1:8000 \
        --pattern gather --tasks 3 --io-ms 100

Besides Locust's own statistics, every user keeps (finish time, latency, ok, worker pid, stage)
for each of its requests, written to --records-file when the test stops: Locust rounds latencies
above 100 ms and its per-second counts cannot tell a steady flow from synchronized bursts. The
pid comes from the X-Worker-Pid header, so a run with --workers N shows which worker served what.
With --live-file the new ones are also appended once a second while the test runs, for a live view.

ArrivalUser is the open loop (lesson 08): one user sends requests on a schedule, Poisson arrivals
at its stage's `rate` per second, each in its own greenlet, so a slow reply never delays the
next send; each record also keeps when the schedule meant to send it (`intended`).

--plan-file runs several measurements in one Locust process, one after the other: a JSON list
of stages, each {"pattern", "tasks", "io_ms", "cpu_n", "users", "duration_s"} and optionally
"host" (its server's URL, when a plan takes turns between servers). Start Locust with
the largest users of the plan; in each stage the first `users` users send requests and the rest
wait for a stage that needs them. A request belongs to the stage in which it was sent. When a
stage waits on I/O, a user that was in the loop of the stage before goes straight on with the
next one: the users stay spread as the closed loop spread them, and the server is never idle
between stages; a user that joins (or comes back) starts at a random moment within one
request's wait instead. When a stage only computes, every user first waits until the stages
before have drained: their requests would compete with the new ones for the same cores and
GIL, and a queue left on an event loop drains slowly behind new threads that compute.
Either way the lab's warm-up, cut from every stage's window, starts only once the last
request of the stages before is answered (labserver/harness/collect.py). Starting Locust once per plan
instead of once per measurement saves its start-up, spawn and report on every run but the
first, and the users keep their open connections. The plan ends the test itself, on time:
Locust's own --run-time timer is set on a clock gevent last read before the imports, so it
ends the test early by the time those imports took.

With several Locust processes (--processes N here, or workers that join a master from other
machines: `python -m labserver worker --master HOST:PORT`), only the master has the plan and the
run's folder; its workers may have other disks and other clocks. So everything travels by
Locust's own messages: when the test starts the master sends each worker the plan (`lab_plan`);
each worker sends back its new requests once a second for a live view (`lab_live`), and at the
end its records and its CPU seconds (`lab_records`), which the master writes into its folder as
records.w<index>.json, exactly as one process writes its own. A worker measures on its own clock,
from the moment its plan arrived; the master moves its times onto its own clock by the
difference of the two start times. The plan's one-way trip (well under a millisecond on a LAN)
is the only error: it shifts every time of that worker alike and changes no latency.
"""

import collections
import gc
import itertools
import json
import os
import random
import socket
import sys
import time
import urllib.parse

import gevent
from locust import FastHttpUser, HttpUser, constant, events, task
from locust.runners import MasterRunner, WorkerRunner

PLAN: list[dict] = []  # the stages, each with its start ("start_s") after T0
T0: list[float] = []  # when the test started (time.time()), set once
RECORDS: list[list[tuple]] = []  # per user, in the order the users started
NEXT_USER = itertools.count()
LIVE_EVERY_S = 1.0  # how often --live-file gets the new requests
IN_FLIGHT = collections.Counter()  # requests sent and not answered yet, per stage
CPU: list[tuple[float, float]] = []  # a worker's (time, its CPU seconds), sampled while the test runs
CPU_EVERY_S = 0.25
SENT: list[bool] = []  # a worker's: its records went to the master (once)
REPORTED: set[int] = set()  # a master's: the workers whose records it has
ENDING: list[bool] = []  # a master's: the plan is over and its workers were told to stop
REPORTS_WAIT_S = 10.0  # how long a master waits for its workers' records after telling them to stop
# The youngest objects are collected every 5,000 net allocations, not Python's 700 nor the server's
# 100,000 (labserver/demo/app.py). At 700, hundreds of users holding a request's objects reach the
# count by chance many times a second, and each pass walks their live objects to free nothing. But
# `requests` (HttpUser) leaves cyclic garbage on every request: at 100,000 it piles up and one long
# pass frees it all, a stall in which no reply is read and every user waits. At 5,000 the same
# collecting comes in passes of a few ms (docs/evidence.md).
GC_THRESHOLD0 = 5_000
# A worker sends load only to the hosts named here (set by `python -m labserver worker`): the
# master's own host unless its user allowed more. Not a Locust option, which a master could override.
TARGETS_ENV = "LAB_WORKER_TARGETS"


@events.init_command_line_parser.add_listener
def add_options(parser):
    parser.add_argument("--pattern", default="sequential", help="pattern endpoint to call")
    parser.add_argument("--tasks", type=int, default=1, help="sub-tasks per request")
    parser.add_argument("--io-ms", type=int, default=100, help="I/O wait per sub-task, in ms")
    parser.add_argument("--cpu-n", type=int, default=0, help="fib(cpu_n) per sub-task")
    parser.add_argument("--timeout-s", type=float, default=60.0, help="client timeout per request, in s")
    parser.add_argument("--records-file", default="", help="where to write every request's (end, ms, ok, pid, stage)")
    parser.add_argument("--plan-file", default="", help="JSON list of stages to run one after the other")
    parser.add_argument("--live-file", default="", help="where to append every request once a second, as it runs")


@events.init.add_listener
def set_up(environment, **_):
    set_timeout(environment.parsed_options.timeout_s)
    runner = environment.runner
    if isinstance(runner, MasterRunner):
        runner.register_message("lab_records", lambda environment, msg: take_records(environment, msg.data))
        runner.register_message("lab_live", lambda environment, msg: take_live(environment, msg.data))
    elif isinstance(runner, WorkerRunner):
        runner.register_message("lab_plan", lambda environment, msg: take_plan(environment, msg.data))


def set_timeout(timeout: float) -> None:
    for user_class in (PatternUser, PatternHttpUser, ArrivalUser):
        user_class.network_timeout = user_class.connection_timeout = timeout


@events.test_start.add_listener
def load_plan(environment, **_):
    o = environment.parsed_options
    runner = environment.runner
    if isinstance(runner, WorkerRunner):
        return  # its plan came from the master (take_plan), just before this
    if o.plan_file:
        with open(o.plan_file) as f:
            stages = json.load(f)
    else:  # the command line's one pattern, for every user, until Locust's own --run-time ends the test
        stages = [dict(pattern=o.pattern, tasks=o.tasks, io_ms=o.io_ms, cpu_n=o.cpu_n, users=10**9, duration_s=1e9)]
    end = start_plan(stages)
    if isinstance(runner, MasterRunner):
        # The plan, to every worker that is about to get users: Locust's messages to one worker
        # keep their order, so it arrives before the spawn message that starts its test.
        plan = {"stages": PLAN, "timeout_s": o.timeout_s, "live": bool(o.live_file)}
        for client in runner.clients.all:
            runner.send_message("lab_plan", plan, client.id)
    if o.plan_file:
        gevent.spawn(end_plan, runner, T0[0] + end)
    if o.live_file and not isinstance(runner, MasterRunner):  # a master's workers send theirs (take_live)
        gevent.spawn(stream_records, f"{o.live_file}.{os.getpid()}.csv")


def start_plan(stages: list[dict]) -> float:
    """Set the plan's stages (with their start and path) and the test's start; return when the plan ends."""
    start = 0.0
    for stage in stages:
        stage["start_s"] = start
        # An absolute URL when the stage names its server: one plan can take turns between servers.
        query = f"/{stage['pattern']}?tasks={stage['tasks']}&io_ms={stage['io_ms']}&cpu_n={stage['cpu_n']}"
        stage["path"] = stage.get("host", "") + query
        start += stage["duration_s"]
    PLAN[:] = stages
    # A full garbage collection walks every object Locust's imports made, tens of ms during
    # which no reply is read. Every request in flight waits it out, and a closed loop of equal
    # waits repeats the gap forever after. Frozen objects are left out of every collection.
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD0, *gc.get_threshold()[1:])
    T0[:] = [time.time()]
    return start


def take_plan(environment, plan: dict) -> None:
    """A worker's plan, from its master: it starts the worker's clock (T0) and what it sends back."""
    allowed = [h for h in os.environ.get(TARGETS_ENV, "").split(",") if h]
    hosts = {urllib.parse.urlsplit(stage.get("host", "")).hostname for stage in plan["stages"]}
    refused = sorted(h or "(the master's --host)" for h in hosts if allowed and h not in allowed)
    if refused:
        # Checked on the worker, where its user named what it may load: a master cannot widen it.
        print(
            f"labserver worker: refused a plan that sends load to {', '.join(refused)}: "
            f"this worker sends only to {', '.join(allowed)} (add --allow-target HOST to allow more)",
            file=sys.stderr,
            flush=True,
        )
        environment.runner.quit()
        return
    set_timeout(plan["timeout_s"])
    SENT.clear()
    start_plan(plan["stages"])
    CPU.clear()
    gevent.spawn(sample_cpu)
    if plan["live"]:
        gevent.spawn(send_live, environment.runner)


def sample_cpu() -> None:
    """A worker's CPU seconds, every CPU_EVERY_S while the test runs: the master cannot see its machine."""
    while True:
        t = os.times()
        CPU.append((time.time(), t.user + t.system))
        gevent.sleep(CPU_EVERY_S)


def end_plan(runner, at: float) -> None:
    """Stop the test when the plan is over, by the wall clock (--run-time stays a safety net).

    A master first stops its workers, which then send their records (take_records), and quits
    once they have: quitting at once would end them before they could.
    """
    while time.time() < at:
        gevent.sleep(at - time.time())  # may wake early on gevent's stale clock: check again
    if isinstance(runner, MasterRunner):
        ENDING.append(True)
        runner.stop()
    runner.quit()


def new_records(written: list[int]) -> list[tuple]:
    """Every user's requests since the last call, as (end, ms, ok, stage); `written` keeps count per user."""
    written += [0] * (len(RECORDS) - len(written))
    new = []
    for user, records in enumerate(RECORDS):
        new += [(r[0], r[1], r[2], r[4]) for r in records[written[user] :]]
        written[user] = len(records)
    return new


def live_lines(t0: float, new: list[tuple], shift: float = 0.0) -> str:
    """The live file's text for `new` requests: `t0,<start>` first (t0 given), then `end,ms,ok,stage` each.

    labserver/harness/feed.py reads it; `shift` moves a worker's times onto its master's clock.
    """
    head = f"t0,{t0!r}\n" if t0 is not None else ""
    return head + "".join(f"{end + shift:.4f},{ms:.2f},{ok:d},{stage}\n" for end, ms, ok, stage in new)


def stream_records(path: str) -> None:
    """Append each user's new requests to `path` once a second, while the test runs: a notebook's live view reads them.

    Only with --live-file (a notebook, or the bench measuring what the view costs): one
    formatted line per request and one write a second (labserver/harness/feed.py reads them).
    """
    written: list[int] = []  # how many of each user's records are in the file already
    with open(path, "a") as f:
        f.write(live_lines(T0[0], []))
        f.flush()
        while True:
            gevent.sleep(LIVE_EVERY_S)
            lines = live_lines(None, new_records(written))
            if lines:
                f.write(lines)
                f.flush()


def send_live(runner) -> None:
    """A worker's stream_records: its new requests, once a second, to its master (take_live)."""
    written: list[int] = []
    while True:
        gevent.sleep(LIVE_EVERY_S)
        new = new_records(written)
        if new:
            runner.send_message("lab_live", {"index": runner.worker_index, "t0": T0[0], "records": new})


def shift_of(environment, data: dict) -> float:
    """What moves a worker's times onto this master's clock: the difference of the two starts."""
    return T0[0] - data["t0"]


def take_live(environment, data: dict) -> None:
    """A master's: a worker's new requests, appended to that worker's live file."""
    path = f"{environment.parsed_options.live_file}.w{data['index']}.csv"
    with open(path, "a") as f:
        f.write(live_lines(None if os.path.exists(path) else T0[0], data["records"], shift_of(environment, data)))


def take_records(environment, data: dict) -> None:
    """A master's: a worker's records and CPU seconds, on the master's clock, in the run's folder."""
    shift = shift_of(environment, data)
    # (end, ms, ok, pid, stage) and an open loop's `intended`: the two times move, the rest stays
    users = [[[r[0] + shift, *r[1:5], *([r[5] + shift] if len(r) > 5 else [])] for r in user] for user in data["users"]]
    cpu = [[t + shift, seconds] for t, seconds in data["cpu"]]
    path = environment.parsed_options.records_file
    if path:
        with open(f"{path}.w{data['index']}.json", "w") as f:
            json.dump({"t0": T0[0], "users": users, "cpu": cpu, "host": data["host"], "pid": data["pid"]}, f)
    REPORTED.add(data["index"])


@events.test_stop.add_listener
def write_records(environment, **_):
    runner = environment.runner
    if isinstance(runner, WorkerRunner):
        if T0 and not SENT:  # once: a worker that quits after stopping stops twice
            SENT.append(True)
            data = {"index": runner.worker_index, "t0": T0[0], "users": RECORDS, "cpu": CPU}
            runner.send_message("lab_records", {**data, "host": socket.gethostname(), "pid": os.getpid()})
        return
    if isinstance(runner, MasterRunner):
        wait_for_reports(runner)
    path = environment.parsed_options.records_file
    if path:
        # one file per process: a master's has its start (t0) and no users
        with open(f"{path}.{os.getpid()}.json", "w") as f:
            json.dump({"t0": T0[0] if T0 else None, "users": RECORDS}, f)


def wait_for_reports(runner) -> None:
    """A master's: wait for every worker's records; each sends them before it says it stopped.

    At the plan's end the workers were told to stop, and send them at once. Otherwise (Ctrl-C,
    a server that died) they stop as they quit, and the master waits a second at most: its own
    files, written after this, must be out before the lab's grace period ends.
    """
    expected = {runner.get_worker_index(c.id) for c in runner.clients.all}
    deadline = time.time() + (REPORTS_WAIT_S if ENDING else 1.0)
    while not expected <= REPORTED and time.time() < deadline:
        gevent.sleep(0.05)


def current_stage(now: float) -> int | None:
    """The index of the stage running at `now`, None once the plan is over."""
    elapsed = now - T0[0]
    for i, stage in enumerate(PLAN):
        if elapsed < stage["start_s"] + stage["duration_s"]:
            return i
    return None


def stage_now() -> tuple[float, int, dict] | None:
    """(now, the running stage's index, the stage); None once the plan is over, after a short sleep.

    Locust's --run-time stops the test a moment after the plan's end: until then a user idles.
    """
    now = time.time()
    i = current_stage(now)
    if i is None:
        gevent.sleep(0.1)
        return None
    return now, i, PLAN[i]


class PatternMixin:
    wait_time = constant(0)  # closed loop: the next request leaves as soon as the reply arrives

    def on_start(self):
        self.index = next(NEXT_USER)
        self.records = []
        self.stage = None  # the stage of this user's last request
        RECORDS.append(self.records)

    def call(self):
        running = stage_now()
        if running is None:
            return
        now, i, stage = running
        if self.index >= stage["users"]:  # not needed in this stage: wait for the next one
            gevent.sleep(max(0.001, T0[0] + stage["start_s"] + stage["duration_s"] - now))
            return
        if self.stage != i:
            carried_on = self.stage == i - 1  # in the loop of the stage just before
            self.stage = i
            spread_s = min(1.0, stage["tasks"] * stage["io_ms"] / 1000)  # one request's wait, at most 1 s
            if not spread_s:  # computing only: the stages before drain first (see the top of this file)
                while any(IN_FLIGHT[earlier] for earlier in range(i)):
                    gevent.sleep(0.005)
                return
            if not carried_on:
                # Users that start together stay in step: every wait ends at once and the server
                # gets its requests in bursts, not the steady flow the model assumes (a burst of
                # 200 requests costs one worker ~100 ms of CPU). A random start within one
                # request's wait spreads them evenly; the warm-up, cut from the window, absorbs it.
                gevent.sleep(random.uniform(0, spread_s))
                return
        self.send(i, stage)

    def send(self, i: int, stage: dict, intended: float | None = None) -> None:
        """One request of stage `i`, recorded with its worker's pid (and, for an open loop, its intended time)."""
        IN_FLIGHT[i] += 1
        started = time.perf_counter()
        try:
            with self.client.get(stage["path"], name=f"/{stage['pattern']}", catch_response=True) as r:
                ok = r.status_code == 200
                if not ok:
                    r.failure(f"status {r.status_code}")
                pid = r.headers.get("x-worker-pid") if r.headers else None  # None: no reply at all
        finally:
            IN_FLIGHT[i] -= 1
        record = (time.time(), (time.perf_counter() - started) * 1000, ok, int(pid) if pid else None, i)
        self.records.append(record if intended is None else (*record, intended))


class PatternUser(PatternMixin, FastHttpUser):
    """The default: geventhttpclient, light enough that one process drives about 2,000 req/s."""

    @task
    def request(self):
        self.call()


class PatternHttpUser(PatternMixin, HttpUser):
    """The same user on `requests`: heavier, it saturates its core sooner (seed 004's lesson)."""

    @task
    def request(self):
        self.call()


class ArrivalUser(PatternMixin, FastHttpUser):
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
    def schedule(self):
        running = stage_now()
        if running is None:
            return
        now, i, stage = running
        ends = T0[0] + stage["start_s"] + stage["duration_s"]
        if self.index > 0 or not stage.get("rate") or self.stage == i:  # one schedule per process and stage
            gevent.sleep(max(0.001, ends - now))
            return
        self.stage = i
        ends -= stage.get("drain_s", 0)  # the stage's last seconds send nothing: the backlog drains
        draw = random.Random(f"{i}-{stage['rate']}").uniform  # seeded: the same arrivals on a rerun
        arrivals = sorted(draw(now, ends) for _ in range(round(stage["rate"] * max(0.0, ends - now))))
        for at in arrivals:
            ahead = at - time.time()
            if ahead > 0:
                gevent.sleep(ahead)
            gevent.spawn(self.send, i, stage, at)
        gevent.sleep(max(0.0, ends - time.time()))

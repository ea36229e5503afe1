"""Closed-loop users hammering one pattern endpoint, with no think time.

Each user sends a request, waits for the reply, and sends the next: with N users the
server always has N requests in flight, which is what the lab's model (Little's law)
assumes. Run it on its own, for example:

    locust -f locustfiles/pattern.py --headless -u 50 -t 10s -H http://127.0.0.1:8000 \
        --pattern gather --tasks 3 --io-ms 100

Besides Locust's own statistics, every user keeps (finish time, latency, ok, worker pid) for
each of its requests, written to --records-file when the test stops: Locust rounds latencies
above 100 ms and its per-second counts cannot tell a steady flow from synchronized bursts. The
pid comes from the X-Worker-Pid header, so a run with --workers N shows which worker served what.
"""

import json
import os
import time

from locust import FastHttpUser, HttpUser, constant, events, task

RECORDS: list[list[tuple[float, float, bool, int | None]]] = []


@events.init_command_line_parser.add_listener
def add_options(parser):
    parser.add_argument("--pattern", default="sequential", help="pattern endpoint to call")
    parser.add_argument("--tasks", type=int, default=1, help="sub-tasks per request")
    parser.add_argument("--io-ms", type=int, default=100, help="I/O wait per sub-task, in ms")
    parser.add_argument("--cpu-n", type=int, default=0, help="fib(cpu_n) per sub-task")
    parser.add_argument("--timeout-s", type=float, default=60.0, help="client timeout per request, in s")
    parser.add_argument("--records-file", default="", help="where to write every request's (end, ms, ok)")


@events.init.add_listener
def set_timeout(environment, **_):
    timeout = environment.parsed_options.timeout_s
    for user_class in (PatternUser, PatternHttpUser):
        user_class.network_timeout = user_class.connection_timeout = timeout


@events.test_stop.add_listener
def write_records(environment, **_):
    path = environment.parsed_options.records_file
    if path:
        # one file per process: with --processes N every fork writes its own
        with open(f"{path}.{os.getpid()}.json", "w") as f:
            json.dump(RECORDS, f)


class PatternMixin:
    wait_time = constant(0)  # closed loop: the next request leaves as soon as the reply arrives

    def on_start(self):
        o = self.environment.parsed_options
        self.path = f"/{o.pattern}?tasks={o.tasks}&io_ms={o.io_ms}&cpu_n={o.cpu_n}"
        self.records = []
        RECORDS.append(self.records)

    def call(self):
        started = time.perf_counter()
        with self.client.get(self.path, name=f"/{self.environment.parsed_options.pattern}", catch_response=True) as r:
            ok = r.status_code == 200
            if not ok:
                r.failure(f"status {r.status_code}")
            pid = r.headers.get("x-worker-pid") if r.headers else None  # None: no reply at all
        self.records.append((time.time(), (time.perf_counter() - started) * 1000, ok, int(pid) if pid else None))


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

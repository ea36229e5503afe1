"""Each run priced before it starts (harness/load/pricing.py), its before-prediction never reading the run itself."""

import dataclasses
import http.server
import math
import os
import sys
import threading
import time
from types import SimpleNamespace
from typing import ClassVar

import pytest

from labserver.demo.settings import Settings
from labserver.harness.load import client, measurement, pricing
from labserver.harness.load.measurement import HOT_MOST, waits_kept
from labserver.harness.load.threads import WHOLE, _process_seconds, split
from labserver.harness.plans.plan import Before, Foreseen, Meters, Options, Stage
from labserver.harness.processes.machine import MachineMeter
from labserver.harness.processes.meters import CpuMeter
from labserver.harness.rows import collect, miss, publish, usage
from labserver.harness.rows.records import Record
from labserver.harness.servers.launcher import LabServer
from labserver.theory.bottlenecks import Bottleneck
from labserver.theory.demand import Demand, OneUser
from labserver.theory.model import Prediction
from labserver.theory.workload import Workload

T0 = 1_700_000_000.0
ONE = OneUser(service_ms=50.5, loop_ms=0.2, threads_ms=0.1, pool_ms=0.0, requests=5)


def stand_in(**settings):
    return SimpleNamespace(settings=Settings(**{"workers": 1, "threads": 40, "procs": 0, **settings}))


def steady(users, start, until, every_s=0.05, pid=7):
    return [
        [Record(start + 0.01 * u + every_s * k, 50.0, True, pid) for k in range(int((until - start) / every_s))]
        for u in range(users)
    ]


def collected(tmp_path, stage, meters):
    given = collect.StageInput(tmp_path, "run-1", stage, steady(2, T0 + 0.05, T0 + 5.0), T0, "2023-11-14T22:13:20")
    return collect.collect(given, meters, Options(lesson="tests-pricing", spawn_rate=2)).row


def sampled(cores_by_pid):
    meter = CpuMeter(-1)
    meter.samples = [(T0 + i / 100, {pid: c * i / 100 for pid, c in cores_by_pid.items()}) for i in range(601)]
    return meter


def test_the_before_prediction_never_reads_the_run_s_own_cpu(tmp_path):
    # the same stage, its before-prediction made, collected once with no CPU measured and once with a worker
    # planted busy on a whole core: the explained prediction moves, the before-prediction does not
    stage = Stage(stand_in(), Workload("threadpool", 2, io_ms=50), before=pricing.Before(*_before(ONE)))
    quiet = collected(tmp_path / "a", stage, Meters(CpuMeter(-1), {}, MachineMeter()))
    machine = MachineMeter()
    machine.samples = [(T0 + i / 100, 1.9 * i / 100) for i in range(601)]
    busy = Meters(sampled({1: 0.1}), {id(stage.server): sampled({7: 1.0})}, machine)
    loaded = collected(tmp_path / "b", stage, busy)
    assert loaded["worker_ms"] > 10 * ONE.worker_ms  # the planted CPU is in the run's own figures
    assert loaded["predicted_rps"] != pytest.approx(quiet["predicted_rps"])
    for column in ("predicted_before_rps", "predicted_before_ms", "before_bottleneck", "one_user_cpu_ms"):
        assert loaded[column] == quiet[column]
    assert loaded["predicted_before_rps"] == pytest.approx(2 / 0.0505)  # users / S: one user's S priced it
    assert loaded["ratio_before"] == pytest.approx(loaded["rps"] / loaded["predicted_before_rps"])


def _before(one):
    p = Prediction(2 / (one.service_ms / 1000), 50.5, "users")
    return p, one, "one user", pricing.GENERATOR_MS


def test_a_run_without_a_before_prediction_says_so(tmp_path):
    row = collected(tmp_path, Stage(stand_in(), Workload("threadpool", 2, io_ms=50)), Meters.unsampled())
    assert math.isnan(row["predicted_before_rps"])
    assert row["before_priced_by"] == "not foreseen"
    assert row["before_miss"] == ""


def test_a_miss_names_what_the_window_measured(tmp_path):
    # predicted 2× what the steady records serve: the cause column names the server's CPU per request grown
    one = dataclasses.replace(ONE, loop_ms=0.05, threads_ms=0.0)
    p = Prediction(80.0, 25.0, "users")
    stage = Stage(stand_in(), Workload("threadpool", 2, io_ms=50), before=Before(p, one, "one user", 0.33))
    busy = Meters(sampled({1: 0.01}), {id(stage.server): sampled({7: 0.2})}, MachineMeter())
    row = collected(tmp_path, stage, busy)
    assert abs(row["ratio_before"] - 1) > miss.BEFORE_MISS
    assert "server CPU/request" in row["before_miss"]
    assert "× the 0.05 priced" in row["before_miss"]


def test_a_lesson_s_own_prediction_made_before_is_its_before_prediction():
    p = Prediction(10.0, 100.0, "users")
    stage = Stage(stand_in(), Workload("sequential", 1, io_ms=100), predicted=p)
    assert pricing.foresee(stage, Options()) == Before(p, None, "lesson")


def test_a_lesson_s_predict_table_figure_is_its_before_prediction_and_its_model_explains_the_run(monkeypatch):
    monkeypatch.setattr(measurement, "measure", lambda stage: pytest.fail("priced a run its lesson foresaw"))
    before, after = Prediction(10.0, 100.0, "users"), Prediction(8.0, 125.0, "connection pool")
    seen = []
    foreseen = Foreseen(before, lambda demand: seen.append(demand) or after)
    stage = Stage(stand_in(), Workload("sequential", 1, io_ms=100), predicted=foreseen)
    assert pricing.foresee(stage, Options()) == Before(before, None, "lesson")
    priced = dataclasses.replace(stage, predicted=dataclasses.replace(foreseen, prices=ONE))
    assert pricing.foresee(priced, Options()) == Before(before, ONE, "lesson")  # its prices, for the run's row
    cost = Demand(worker_ms=2.0)
    assert stage.prediction(Options(), 2.0, demand=cost) is after and seen == [cost]


def test_a_run_meant_to_time_out_is_not_priced(monkeypatch):
    monkeypatch.setattr(measurement, "measure", lambda stage: pytest.fail("priced a run meant to time out"))
    seen = pricing.foresee(Stage(stand_in(), Workload("blocking", 5, io_ms=100)), Options(expect_failures=True))
    assert seen.one_user is None and math.isnan(seen.prediction.rps)


def test_a_make_up_is_priced_once_and_a_run_that_cannot_be_priced_goes_on(monkeypatch):
    calls = []

    def measure(stage):
        calls.append(stage.workload.pattern)
        if stage.workload.pattern == "blocking":
            raise client.PricingError("GET /blocking answered 500 Internal Server Error")
        return ONE

    monkeypatch.setattr(measurement, "measure", measure)
    monkeypatch.setattr(pricing, "_priced", {})
    server = stand_in()
    stages = [Stage(server, Workload("threadpool", u, io_ms=50)) for u in (10, 20, 40)]
    stages.append(Stage(server, Workload("blocking", 5, io_ms=50)))
    priced = pricing.before(stages, Options())
    assert calls == ["threadpool", "blocking"]  # past HOT_MOST users, the users do not change a price
    assert [s.before.priced_by for s in priced] == ["one user"] * 3 + [pricing.NOT_PRICED]
    assert "answered 500" in priced[-1].before.prediction.bottleneck
    # 10 users: users / S; 40 users: the 40 threads / S, as the model puts it
    assert priced[0].before.prediction.rps == pytest.approx(10 / 0.0505, rel=0.01)
    assert priced[2].before.prediction.bottleneck in ("users", "threads")
    pricing.before(stages[:1], Options())
    assert calls == ["threadpool", "blocking"]  # known in this process: priced again only after forget()


def test_make_ups_that_differ_only_in_their_waits_share_one_price_of_their_cpu(monkeypatch):
    calls = []

    def measure(stage, cpu_of=None):
        calls.append((stage.workload.io_ms, cpu_of))
        service_ms = stage.workload.io_ms + 1.0
        if cpu_of is not None:
            return dataclasses.replace(cpu_of, service_ms=service_ms)
        return dataclasses.replace(ONE, service_ms=service_ms, loop_ms=0.2 + len(calls))

    monkeypatch.setattr(measurement, "measure", measure)
    monkeypatch.setattr(pricing, "_priced", {})
    monkeypatch.setattr(pricing, "_hot", {})
    server = stand_in()
    fib, fib_sleep = (Stage(server, Workload("threadpool", 20, io_ms=io, cpu_n=20)) for io in (0, 50))
    other = Stage(server, Workload("threadpool", 20, io_ms=50, cpu_n=22))
    first, second, third = (pricing.one_user(s) for s in (fib, fib_sleep, other))
    assert calls == [(0, None), (50, first), (50, None)]  # fib(22) sends other requests: priced on its own
    assert (second.loop_ms, second.threads_ms) == (first.loop_ms, first.threads_ms)
    assert (first.service_ms, second.service_ms) == (1.0, 51.0)  # each its own S, its waits in it
    assert third.loop_ms != first.loop_ms


def test_a_fan_out_priced_with_its_waits_shares_no_price_with_other_waits():
    server = SimpleNamespace(settings=Settings(workers=1, threads=40, procs=0, upstream="http://127.0.0.1:1"))
    waits = [Stage(server, Workload("fanout", 20, tasks=4, io_ms=io)) for io in (100, 200)]
    assert waits_kept(waits[0].workload)
    assert pricing._hot_key(waits[0]) != pricing._hot_key(waits[1])
    plain = [Stage(server, Workload("threadpool", 20, io_ms=io)) for io in (100, 200)]
    assert pricing._hot_key(plain[0]) == pricing._hot_key(plain[1])


def test_a_price_that_sets_many_runs_is_taken_again_apart_and_the_cheaper_kept_by_each(monkeypatch):
    calls = []

    def measure(stage, cpu_of=None):
        w = stage.workload
        calls.append((w.pattern, w.io_ms, cpu_of is not None))
        if cpu_of is not None:
            return dataclasses.replace(cpu_of, service_ms=w.io_ms + 1.0, seconds=0.1)
        dear = 2.0 if sum(c[0] == w.pattern and not c[2] for c in calls) == 1 else 1.0  # a spell, the first time
        return dataclasses.replace(ONE, service_ms=w.io_ms + 1.0, loop_ms=dear, seconds=0.5)

    for name, empty in (("_priced", {}), ("_hot", {}), ("_members", {}), ("_hot_again", set())):
        monkeypatch.setattr(pricing, name, empty)
    monkeypatch.setattr(measurement, "measure", measure)
    server = stand_in()
    # fib and fib + sleep twice each: one price of their CPU sets four runs; hashed's sets one
    pool = [Stage(server, Workload("processpool", 20, io_ms=io, cpu_n=25)) for io in (0, 50, 50, 0)]
    one = Stage(server, Workload("hashed", 20, cpu_n=25))
    priced = pricing.before([*pool, one], Options())
    assert calls == [("processpool", 0, False), ("processpool", 50, True), ("hashed", 0, False),
                     ("processpool", 0, False)]  # fmt: skip
    ones = [s.before.one_user for s in priced]
    assert [o.loop_ms for o in ones] == [1.0, 1.0, 1.0, 1.0, 2.0]  # the cheaper, in each of the four
    assert [o.service_ms for o in ones[:2]] == [1.0, 51.0]  # each its own S still
    assert ones[0].seconds == pytest.approx(1.0)  # both pricings counted in its make-up's time
    pricing.before(pool, Options())
    assert len(calls) == 4  # once per set of requests in this process


def test_cpu_is_split_into_loops_threads_and_the_rest():
    before = {(7, 7): 1.0, (7, 8): 2.0, (9, 9): 0.5}
    after = {(7, 7): 1.5, (7, 8): 2.25, (7, 10): 0.1, (9, 9): 1.5, (9, 11): 0.2}
    loop, threads, rest = split(before, after, {7})
    assert (loop, threads, rest) == pytest.approx((0.5, 0.35, 1.2))


def test_a_process_s_whole_count_holds_its_threads_that_ended():
    before = {(7, 7): 1.0, (7, 8): 2.0, (7, WHOLE): 3.0}
    # thread 8 ran 0.25 s more, and a thread that started and ended between the readings ran 0.4 s
    after = {(7, 7): 1.5, (7, 8): 2.25, (7, WHOLE): 4.15}
    loop, threads, rest = split(before, after, {7})
    assert (loop, threads, rest) == pytest.approx((0.5, 0.65, 0.0))


@pytest.mark.skipif(sys.platform != "linux", reason="Linux's process CPU clocks")
def test_the_process_clock_counts_a_thread_that_ended():
    def spin():
        until = time.thread_time() + 0.05
        while time.thread_time() < until:
            pass

    first = _process_seconds(os.getpid())
    worker = threading.Thread(target=spin)
    worker.start()
    worker.join()
    assert first is not None and _process_seconds(os.getpid()) - first >= 0.05


def test_runs_of_many_users_are_priced_with_as_many_in_flight(monkeypatch):
    users = []
    monkeypatch.setattr(pricing, "_priced", {})
    monkeypatch.setattr(pricing, "_hot", {})
    monkeypatch.setattr(measurement, "measure", lambda stage: users.append(stage.workload.users) or ONE)
    server = stand_in()
    for n in (1, 2, 7, 8, 64, 1000):
        pricing.one_user(Stage(server, Workload("threadpool", n, io_ms=50)))
    open_loop = Workload("threadpool", 64, io_ms=50, rate=100.0)  # its users say nothing of what is in flight
    pricing.one_user(Stage(server, open_loop))
    assert users == [1, 8, 1000]  # below HOT_MOST users, at or past it, and past SPREAD_FROM: over its connections
    assert [measurement.hot_users(n) for n in (1, 7, 8, 1000)] == [2, 2, 8, 8]
    assert measurement.hot_users(64, rate=100.0) == measurement.HOT_USERS
    assert [measurement.connections(n) for n in (1, 8, measurement.SPREAD_FROM, 1000)] == [2, 8, 8, 1000]
    assert measurement.connections(1000, rate=100.0) == measurement.HOT_USERS
    assert measurement.connections(1000, limit=100) == 99  # uvicorn refuses the connection that reaches its limit


def test_a_fan_out_is_priced_with_its_waits_at_its_own_users():
    server = stand_in()
    fan = Workload("fanout", 20, tasks=4, io_ms=200)
    assert waits_kept(fan)
    assert not waits_kept(Workload("fanoutbounded", 20, tasks=4, io_ms=200))  # its semaphore: 40 in the pool
    assert not waits_kept(Workload("callreused", 20, tasks=4, io_ms=200))  # a call at a time: one connection
    assert not waits_kept(Workload("sequential", 20, io_ms=200))
    assert measurement.in_flight(Stage(server, fan)) == (20, 20)  # every user, each holding its calls' connections
    assert measurement.in_flight(Stage(server, Workload("sequential", 20, io_ms=200))) == (8, 8)
    assert pricing._key(Stage(server, fan)) != pricing._key(Stage(server, dataclasses.replace(fan, users=40)))


@pytest.mark.slow
def test_one_user_prices_come_from_where_the_work_ran():
    pricing.forget()
    with LabServer(threads=40, procs=1) as server:
        sleeps = measurement.measure(Stage(server, Workload("sequential", 1, io_ms=50)))
        threads = measurement.measure(Stage(server, Workload("threadpool", 1, io_ms=0, cpu_n=23)))
        pooled = measurement.measure(Stage(server, Workload("processpool", 1, io_ms=0, cpu_n=23)))
    assert sleeps.service_ms >= 50  # S holds the wait, which the CPU does not
    assert sleeps.requests >= 1
    # a sleep's CPU is the loop's; the idle threads and pool process cost little next to the fib each runs
    assert sleeps.loop_ms > sleeps.threads_ms
    assert sleeps.threads_ms < threads.threads_ms / 10 and sleeps.pool_ms < pooled.pool_ms / 10
    assert threads.threads_ms > threads.loop_ms  # fib ran on the thread pool's threads
    assert pooled.pool_ms > pooled.loop_ms and pooled.pool_ms > pooled.threads_ms  # ... in the pool's process


class _Stub(http.server.BaseHTTPRequestHandler):
    """A server that answers /ok with 200 from worker 123, and anything else with 500, on kept-alive connections
    whose client ends it notes."""

    protocol_version = "HTTP/1.1"
    clients: ClassVar[set[tuple[str, int]]] = set()

    def do_GET(self):
        self.clients.add(self.client_address)
        ok = self.path.startswith("/ok")
        self.send_response(200 if ok else 500)
        self.send_header("x-worker-pid", "123")
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


@pytest.fixture
def stub():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address
    server.shutdown()


def test_users_send_in_turn_and_say_which_worker_answered(stub):
    readings = []
    sent = client.send(stub, "/ok", users=2, warm_s=0.0, read=lambda: readings.append(len(readings)))
    assert sent.pids == {123} and len(sent.times) >= 2
    assert readings == [0, 1]  # read as the counted requests start, and as they end
    assert sent.t0 <= sent.t1


def test_users_take_turns_over_every_connection_and_open_none_while_counted(stub):
    _Stub.clients.clear()
    opened = []
    client.send(stub, "/ok", users=2, connections=6, warm_s=0.0, read=lambda: opened.append(len(_Stub.clients)))
    assert opened == [6, 6]  # all six opened by the uncounted requests, none after
    _Stub.clients.clear()
    client.send(stub, "/ok", users=3, warm_s=0.0)
    assert len(_Stub.clients) == 3  # no more connections than users: one each


def test_an_error_reply_ends_every_user_and_is_raised(stub):
    with pytest.raises(client.PricingError, match="answered 500"):
        client.send(stub, "/bad", users=3)


class _Closes(_Stub):
    """The stub, closing a kept-alive connection after 50 ms without a request, as uvicorn does after 5 s."""

    timeout = 0.05

    def do_POST(self):
        self.do_GET()


@pytest.fixture
def closes():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Closes)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address
    server.shutdown()


def test_a_connection_the_server_closed_idle_is_opened_again_for_a_request_that_may_be_sent_twice(closes):
    conns = client._Connections(closes, client.Ask("GET", "/ok"), 1)
    assert conns.turn() == (123, 2)
    time.sleep(0.3)  # the server has closed it
    assert conns.turn() == (123, 2)
    conns.close()


def test_a_post_on_a_connection_the_server_closed_is_not_sent_again(closes):
    conns = client._Connections(closes, client.Ask("POST", "/ok", body=b"{}"), 1)
    conns.turn()
    time.sleep(0.3)
    with pytest.raises(client.PricingError, match="closed the connection"):
        conns.turn()
    conns.close()


def test_a_miss_its_own_cpu_does_not_explain_names_users_in_step():
    figures = {"disturbed_cpu": 0.0, "server_ms": 0.3, "locust_ms": 0.3, "ratio": 0.7, "bunched": 0.8,
               "bunched_at_random": 0.6}  # fmt: skip
    said = miss.miss_cause(0.6, ONE, Before(Prediction(50.0, 400.0, "users"), ONE, "one user", 0.33), figures)
    assert said.startswith("not its CPU alone (0.70 of the prediction priced with it); ")
    assert said.endswith("users in step: 80% of replies came right after another, 60% would at random")
    assert miss.miss_cause(0.95, ONE, None, figures) == ""  # within 10%: nothing to explain


def test_a_generator_cheaper_than_its_price_is_named_where_its_price_bound_the_run():
    figures = {"disturbed_cpu": 0.0, "server_ms": 0.3, "locust_ms": 0.13, "ratio": 1.0, "bunched": 0.5,
               "bunched_at_random": 0.5}  # fmt: skip
    bound = Before(Prediction(3000.0, 130.0, Bottleneck.GENERATOR), ONE, "one user", 0.33)
    assert "Locust CPU/request 0.13 ms, priced 0.33" in miss.miss_cause(1.3, ONE, bound, figures)
    users = Before(Prediction(3000.0, 130.0, "users"), ONE, "one user", 0.33)  # cheaper, but it bound nothing
    assert "Locust" not in miss.miss_cause(1.3, ONE, users, figures)
    dear = {**figures, "locust_ms": 0.5}  # dearer: it takes cores from any run
    assert "Locust CPU/request 0.50 ms, priced 0.33" in miss.miss_cause(0.7, ONE, users, dear)


def test_the_generators_price_is_measured_only_where_it_decides_the_prediction(monkeypatch):
    asked = []

    def measured(on=None):
        asked.append(on)
        return SimpleNamespace(locust_ms=0.12 if on is None else 1.5, rest_ms=0.01)

    monkeypatch.setattr(pricing, "_generator_price", measured)
    fast = dataclasses.replace(ONE, loop_ms=0.13, threads_ms=0.0, service_ms=100.2)
    monkeypatch.setattr(pricing, "one_user", lambda stage: fast)
    server = SimpleNamespace(settings=Settings(workers=1, threads=40, procs=0), same_machine=True)
    busy = pricing.foresee(Stage(server, Workload("sequential", 800, io_ms=100)), Options())
    assert asked and busy.generator_ms == 0.12  # at GENERATOR_RPS the generator would bind: its price decides
    assert busy.prediction.bottleneck != Bottleneck.GENERATOR  # one process busy sends far more than 3,000 req/s
    asked.clear()
    few = pricing.foresee(Stage(server, Workload("sequential", 25, io_ms=100)), Options())
    assert not asked and few.generator_ms == pricing.GENERATOR_MS  # the users bind: the price changes nothing
    classroom = pricing.foresee(Stage(server, Workload("sequential", 800, io_ms=100)), Options(master="0.0.0.0:5557"))
    assert not asked and classroom.generator_ms == pricing.GENERATOR_MS  # the generators run on other machines
    big = dataclasses.replace(fast, reply_bytes=1.3e6)
    monkeypatch.setattr(pricing, "one_user", lambda stage: big)
    stage = Stage(server, Workload("sequential", 25, io_ms=100))
    read = pricing.foresee(stage, Options())
    assert asked == [stage] and read.generator_ms == 1.5  # Locust reads every byte: priced on the route itself


def test_the_generators_price_is_measured_once_per_kernel(monkeypatch):
    from labserver.harness.load import calibrate

    runs = []
    row = {"locust_ms": 0.125, "other_cpu": 0.05, "rps": 6000.0, "run_id": "r"}

    class Server:
        def __init__(self, **settings):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

    monkeypatch.setattr(calibrate, "LabServer", Server)
    monkeypatch.setattr(calibrate, "run_plan", lambda *a, **k: runs.append(a) or [SimpleNamespace(row=row)])
    monkeypatch.setattr(calibrate, "_generator", [])
    first = calibrate.generator_price()
    assert calibrate.generator_price() is first and len(runs) == 1
    assert first.locust_ms == 0.125 and first.rest_ms == pytest.approx(0.05 / 6000 * 1000)
    [[_, [run]]] = runs
    assert isinstance(run["predicted"], Prediction)  # priced by no one: its own prediction would ask for this price


def test_the_generators_price_on_a_route_is_measured_on_it_once_per_make_up(monkeypatch):
    from labserver.harness.load import calibrate

    runs = []
    rows = [{"locust_ms": ms, "other_cpu": 0.0, "rps": 160.0, "run_id": "r"} for ms in (2.7, 1.6)]  # cold, then warm
    monkeypatch.setattr(
        calibrate, "run_plan", lambda *a, **k: runs.append(a) or [SimpleNamespace(row=row) for row in rows]
    )
    monkeypatch.setattr(calibrate, "_generator_on", {})
    server = stand_in()
    route = {"method": "GET", "path": "/catalog", "label": "GET /catalog"}
    stage = Stage(server, Workload("sequential", 64, io_ms=4), route=route)
    first = calibrate.generator_price_on(stage, "catalog")
    assert calibrate.generator_price_on(stage, "catalog") is first and len(runs) == 1
    assert first.locust_ms == 1.6  # the cheaper of its runs in one Locust process
    [[on, [run, *more]]] = runs
    assert len(more) == calibrate.GENERATOR_TRIES - 1 and all(again == run for again in more)
    assert on is server and run["route"] == route and run["users"] == HOT_MOST  # the route itself, kept busy
    assert isinstance(run["predicted"], Prediction)  # priced by no one: its own prediction would ask for this price


def test_the_generators_price_on_a_route_again_keeps_the_cheaper_once_per_make_up(monkeypatch):
    from labserver.harness.load import calibrate

    rounds = iter([(2.9, 2.7), (2.1, 1.9), (1.0, 1.0)])  # a slow moment over the first round's runs, then a usual one
    runs = []

    def run_plan(*args, **kwargs):
        runs.append(args)
        return [
            SimpleNamespace(row={"locust_ms": ms, "other_cpu": 0.0, "rps": 110.0, "run_id": "r"}) for ms in next(rounds)
        ]

    monkeypatch.setattr(calibrate, "run_plan", run_plan)
    monkeypatch.setattr(calibrate, "_generator_on", {})
    monkeypatch.setattr(calibrate, "_generator_again", set())
    route = {"method": "GET", "path": "/catalog", "label": "GET /catalog"}
    stage = Stage(stand_in(), Workload("sequential", 64), route=route)
    assert calibrate.generator_price_on(stage, "catalog").locust_ms == 2.7
    assert calibrate.generator_price_on(stage, "catalog", again=True).locust_ms == 1.9  # the cheaper round
    assert calibrate.generator_price_on(stage, "catalog", again=True).locust_ms == 1.9  # a cell run again: no run
    assert calibrate.generator_price_on(stage, "catalog").locust_ms == 1.9 and len(runs) == 2


def test_of_several_pricings_the_least_disturbed_is_kept(monkeypatch):
    disturbed = dataclasses.replace(ONE, loop_ms=0.35)  # a moment's disturbance: half dearer again
    prices = iter([disturbed, ONE])
    monkeypatch.setattr(measurement, "measure", lambda stage: next(prices))
    monkeypatch.setattr(pricing, "_key", lambda stage: "tests: one make-up")
    monkeypatch.setattr(pricing, "_hot_key", lambda stage: "tests: one make-up")
    monkeypatch.setattr(pricing, "_priced", {})
    monkeypatch.setattr(pricing, "_hot", {})
    assert pricing.one_user(SimpleNamespace(), tries=2) == ONE
    assert pricing.one_user(SimpleNamespace(), tries=2) == ONE  # once per make-up: not priced again


def test_a_second_pricing_keeps_the_lesser_once_per_make_up(monkeypatch):
    disturbed = dataclasses.replace(ONE, loop_ms=0.35)
    prices = iter([disturbed, ONE, disturbed])
    monkeypatch.setattr(measurement, "measure", lambda stage: next(prices))
    monkeypatch.setattr(pricing, "_key", lambda stage: "tests: one make-up")
    monkeypatch.setattr(pricing, "_hot_key", lambda stage: "tests: one make-up")
    monkeypatch.setattr(pricing, "_priced", {})
    monkeypatch.setattr(pricing, "_hot", {})
    monkeypatch.setattr(pricing, "_again", set())
    assert pricing.one_user(SimpleNamespace()) == disturbed  # the first round read a slow moment
    assert pricing.again(SimpleNamespace()) == ONE
    assert pricing.again(SimpleNamespace()) == ONE  # a cell run again prices nothing more
    assert pricing.one_user(SimpleNamespace()) == ONE  # what the runs' before-predictions read
    assert next(prices) == disturbed  # the third was never measured


def test_a_miss_names_a_worker_that_waited_for_a_cpu():
    figures = {"disturbed_cpu": 0.0, "server_ms": 0.3, "locust_ms": 0.3, "ratio": 1.0, "bunched": 0.5,
               "bunched_at_random": 0.5, "worker_waited": 0.09}  # fmt: skip
    said = miss.miss_cause(0.84, ONE, Before(Prediction(9000.0, 180.0, "users"), ONE, "one user", 0.33), figures)
    assert said.startswith("a worker waited for a CPU 9% of the window; ")
    assert "waited" not in miss.miss_cause(0.84, ONE, None, {**figures, "worker_waited": 0.01})


def test_a_database_server_of_one_worker_is_read_for_its_hold_at_once():
    with_db = Settings(workers=1, threads=40, procs=0, database_url="postgresql://127.0.0.1:9/shop")
    assert publish.hold_counter(SimpleNamespace(settings=Settings(workers=1, threads=40, procs=0))) is None
    # several workers: /db_info answers for one; their holds sum in the telemetry, read once flushed
    two = SimpleNamespace(settings=dataclasses.replace(with_db, workers=2), url="http://127.0.0.1:9")
    assert publish.hold_counter(two) is None
    counter = publish.hold_counter(SimpleNamespace(settings=with_db, url="http://127.0.0.1:9"))
    assert counter is not None and counter() is None  # nothing listens on the discard port: no figure, no error


def test_a_route_s_generator_price_does_not_depend_on_its_users():
    server = SimpleNamespace(**vars(stand_in()), url="http://127.0.0.1:8000")
    route = {"method": "GET", "path": "/catalog", "label": "GET /catalog"}
    few, many = (Stage(server, Workload("sequential", n, io_ms=4), route=route) for n in (1, 1000))
    assert pricing._key(few) != pricing._key(many) and pricing._key(few)[:-2] == pricing._key(many)[:-2]


def test_a_miss_names_the_cores_probe_where_it_went_the_same_way_and_only_others_disturb_a_run():
    figures = {"disturbed_cpu": 0.0, "server_ms": 0.3, "locust_ms": 0.33, "ratio": 1.0, "bunched": 0.5,
               "bunched_at_random": 0.5, "core_speed": 0.7}  # fmt: skip
    before = Before(Prediction(100.0, 10.0, "users"), ONE, "one user", 0.33)
    said = miss.miss_cause(0.7, ONE, before, figures)
    assert "in its window the cores ran 0.70× as fast as when it was priced" in said
    assert "probe" not in miss.miss_cause(1.3, ONE, before, figures)  # served more on slower cores: not the cause
    assert usage.is_disturbed(0.2)  # others' CPU disturbs any run
    assert not usage.is_disturbed(0.05) and not usage.is_disturbed(math.nan)  # unmeasured: not


def test_the_generator_is_priced_on_a_route_only_where_its_replies_are_big(monkeypatch):
    from labserver.harness.load import calibrate

    asked = []
    monkeypatch.setattr(calibrate, "generator_price_on", lambda stage, key, again=False: asked.append(again))
    route = {"method": "GET", "path": "/catalog", "label": "GET /catalog"}
    server = SimpleNamespace(**vars(stand_in()), url="http://127.0.0.1:8000")
    stage = Stage(server, Workload("sequential", 64), route=route)
    for size in (pricing.BIG_REPLY_BYTES - 1, pricing.BIG_REPLY_BYTES):
        monkeypatch.setattr(pricing, "one_user", lambda stage, size=size: dataclasses.replace(ONE, reply_bytes=size))
        pricing.price_generator(stage, again=True)
    pricing.price_generator(dataclasses.replace(stage, route=None))  # the lab's own patterns: priced by GENERATOR_MS
    assert asked == [True]

"""Lesson 07's runs without a database: lone requests against a tiny local server, and the plan and
predictions built from hand-made lone-request figures (`base`) on a stand-in server."""

import json
import math
import os
import threading
import urllib.error
import urllib.parse
from collections import Counter
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pandas as pd
import pytest

from labserver.demo.settings import Settings
from labserver.harness.plans.plan import Foreseen
from labserver.postgres import runs
from labserver.theory import pools
from labserver.theory.demand import Demand
from labserver.theory.workload import DURATION_MAX_S


@pytest.fixture
def local():
    """A local HTTP server answering "ok" on every path but /broken and /db_info; `hits` counts the requests per path.

    /db_info answers as the database routes do: every request served so far held a connection 2 ms.
    """
    hits = Counter()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            hits[self.path] += 1
            served = sum(n for path, n in hits.items() if path != "/db_info")
            status, body = (500, b"no") if self.path == "/broken" else (200, b"ok")
            if self.path == "/db_info":
                body = json.dumps({"held": {"held_s": 0.002 * served, "uses": served}}).encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass  # no request log in the test output

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield SimpleNamespace(url=f"http://127.0.0.1:{httpd.server_address[1]}", hits=hits)
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.fixture
def fib_ms(monkeypatch):
    """fib(n) priced at n ms: the predictions no longer depend on this machine's speed."""
    monkeypatch.setattr(runs, "cpu_ms", lambda n: float(n))


def base():
    """Lone-request figures as `calibrate` gives them: one request's time and the worker's CPU for it (ms)."""
    return pd.DataFrame(
        {"service_ms": [2.0, 4.0, 2000.0], "cpu_ms": [1.0, 3.0, 1.0]},
        index=pd.Index(["sync_select", "async_simulation", "async_select"], name="pattern"),
    )


def server():
    return SimpleNamespace(settings=Settings(workers=1, threads=4, db_pool=2, procs=0))


@pytest.mark.parametrize(("n", "warm_up"), [(50, 5), (5, 3)])
def test_lone_requests_warm_up_then_time_n_requests(local, n, warm_up):
    alone = runs.lone_requests(local.url, "/ping", n=n)
    assert local.hits == {"/ping": n + warm_up}  # a tenth of n, at least 3, untimed
    assert alone["path"] == "/ping"
    assert 0 < alone["service_ms"] <= alone["wall_s"] * 1000  # the median of n requests inside their wall time


def test_lone_requests_to_a_failing_endpoint_raise(local):
    with pytest.raises(urllib.error.HTTPError):
        runs.lone_requests(local.url, "/broken", n=5)


def test_calibrate_gives_one_row_per_endpoint(local):
    port = urllib.parse.urlsplit(local.url).port
    stand_in = SimpleNamespace(url=local.url, port=port, proc=SimpleNamespace(pid=os.getpid()))
    figures = runs.calibrate(stand_in, ["sync_select", "async_select"], n=5)
    assert list(figures.index) == ["sync_select", "async_select"]
    assert list(figures.columns) == [*runs.PRICES, "loop_ms", "threads_ms", "pool_ms", "probe_ms"]
    assert (figures["service_ms"] > 0).all()
    parts = figures["loop_ms"] + figures["threads_ms"] + figures["pool_ms"]
    assert figures["cpu_ms"].tolist() == pytest.approx(parts.tolist())
    # this process serves them (in a thread): its CPU per request, priced as the harness prices a run
    assert (figures["cpu_ms"] > 0).all()
    assert figures["hold_ms"].tolist() == pytest.approx([2.0, 2.0])  # /db_info before and after each endpoint's
    # 5 lone requests after 3 untimed, then the pricing's two users: a few not counted, at least 3 counted
    assert all(local.hits[f"/{e}"] >= 8 + 3 for e in ("sync_select", "async_select"))
    assert local.hits["/db_info"] == 4


def test_a_server_that_does_not_say_how_long_it_held_its_connections_has_no_hold():
    assert runs.held("http://127.0.0.1:9") is None  # nothing listens on the discard port
    assert math.isnan(runs.hold_ms(None, (1.0, 10)))
    assert math.isnan(runs.hold_ms((1.0, 10), (1.0, 10)))  # no use in between
    assert runs.hold_ms((1.0, 10), (1.5, 15)) == pytest.approx(100.0)


def test_limits_add_the_run_s_io_and_fib_to_the_lone_request(fib_ms):
    # 2 ms alone + 8 ms io + fib(10) at 10 ms: 20 ms a request, 11 ms of it CPU
    bounds = runs.limits(server(), "sync_select", users=10, io_ms=8, cpu_n=10, base=base())
    assert bounds == pools.limits(
        "sync_select", 10, service_ms=20.0, threads=4, db_pool=2, workers=1, cpu_ms_per_request=11.0
    )
    assert bounds["users"] == pytest.approx(10 / 0.020)
    assert bounds["thread pool"] == pytest.approx(4 / 0.020)


def test_limits_read_the_pools_from_the_server_s_settings(fib_ms):
    wide = SimpleNamespace(settings=Settings(workers=1, threads=40, db_pool=20, procs=0))
    narrow, roomy = (runs.limits(s, "sync_select", 10, 0, 0, base()) for s in (server(), wide))
    assert roomy["thread pool"] == pytest.approx(10 * narrow["thread pool"])
    assert roomy["connection pool"] == pytest.approx(10 * narrow["connection pool"])


def test_predict_is_the_pool_model_of_the_same_figures(fib_ms):
    p = runs.predict(server(), "async_simulation", users=32, io_ms=0, cpu_n=20, base=base())
    assert p == pools.predict(
        "async_simulation", 32, service_ms=24.0, threads=4, db_pool=2, workers=1, cpu_ms_per_request=23.0
    )
    assert p.latency_ms == pytest.approx(32 / p.rps * 1000)


def test_predict_frame_has_a_row_per_depth_and_endpoint(fib_ms):
    plan = [(["sync_select", "async_simulation"], 10, 0, [0, 10]), (["sync_select"], 5, 8, 0)]
    rows = runs.predict_frame(server(), base(), plan)
    assert list(zip(rows["pattern"], rows["users"], rows["io_ms"], rows["cpu_n"], strict=True)) == [
        ("sync_select", 10, 0, 0),
        ("async_simulation", 10, 0, 0),
        ("sync_select", 10, 0, 10),
        ("async_simulation", 10, 0, 10),
        ("sync_select", 5, 8, 0),
    ]
    last = runs.predict(server(), "sync_select", 5, 8, 0, base())
    assert (rows["predicted_rps"].iloc[-1], rows["bottleneck"].iloc[-1]) == (last.rps, last.bottleneck)


def test_plan_runs_every_endpoint_users_and_depth_on_the_server(fib_ms):
    on = server()
    planned = runs.plan(on, ["sync_select", "async_simulation"], [1, 8], base(), cpu_n=[0, 5])
    assert [(r["cpu_n"], r["users"], r["pattern"]) for r in planned] == [
        (n, u, e) for n in (0, 5) for u in (1, 8) for e in ("sync_select", "async_simulation")
    ]
    assert all(r["server"] is on and r["io_ms"] == 0 for r in planned)
    first = planned[0]
    assert first["tags"] == {"db_pool": 2, "service_ms": 2.0, "cpu_ms_alone": 1.0}
    # made before the run: the Predict table's figure; after it, priced with the run's measured CPU, and with none
    # measured, the one made before
    made = runs.predict(on, "sync_select", 1, 0, 0, base())
    assert first["predicted"].before == made
    assert first["predicted"].after(Demand(worker_ms=math.nan)) == made


def test_a_server_the_predict_table_did_not_price_is_priced_just_before_its_runs(fib_ms):
    (planned,) = runs.plan(server(), ["sync_select"], [8], base(), foreseen=False)
    assert not isinstance(planned["predicted"], Foreseen)  # a function of the Demand: one user prices it
    cost = Demand(worker_ms=5.0, others_ms=5.0)
    (table,) = runs.plan(server(), ["sync_select"], [8], base())
    assert planned["predicted"](cost) == table["predicted"].after(cost)


def test_plan_runs_are_long_enough_for_a_few_slow_requests_but_at_most_twice_as_long(fib_ms):
    # one user, 2 s a request alone: 1 s of warm-up and 3 requests need 7 s
    (slow,) = runs.plan(server(), ["async_select"], [1], base(), duration_s=5)
    assert slow["duration_s"] == math.ceil(1.0 + runs.CYCLES * 2.0) == 7
    (slower,) = runs.plan(server(), ["async_select"], [32], base(), duration_s=5)
    assert slower["duration_s"] == 10  # twice duration_s, the cap
    (fast,) = runs.plan(server(), ["sync_select"], [1], base(), duration_s=5)
    assert fast["duration_s"] == 5
    assert all(r["duration_s"] <= DURATION_MAX_S for r in (slow, slower, fast))


@pytest.mark.parametrize(
    ("endpoints", "users", "duration_s", "name"),
    [(["sync_select"], [0], 5, "users"), (["sync_selcet"], [1], 5, "pattern"), (["sync_select"], [1], 0, "duration_s")],
)
def test_plan_checks_every_run_before_predicting_any(endpoints, users, duration_s, name):
    with pytest.raises(ValueError, match=name):
        runs.plan(server(), endpoints, users, base(), duration_s=duration_s)


def test_frame_gives_each_run_its_driver():
    results = [SimpleNamespace(row={"pattern": "sync_select", "rps": 10.0}),
               SimpleNamespace(row={"pattern": "async_simulation", "rps": 20.0})]  # fmt: skip
    rows = runs.frame(results)
    assert list(rows["driver"]) == ["sync", "async"]
    assert list(rows["rps"]) == [10.0, 20.0]


SELECTS = ["sync_select", "async_select"]


def lesson_plan(depths=(15, 20)):
    """Lesson 07's three parts: slow SELECTs, fast SELECTs, and the fib sweep."""
    return [
        (SELECTS, 80, 100, 0),
        (SELECTS, 1000, 0, 0),
        (["sync_simulation", "async_simulation"], 32, 0, list(depths)),
    ]


def test_check_passes_the_lesson_s_parameters():
    runs.check(lesson_plan(), duration_s=5, scale=0.01, threads=40, db_pool=20)


@pytest.mark.parametrize(
    ("change", "name"),
    [
        ({"threads": 0}, "threads"),
        ({"db_pool": 0}, "db_pool"),
        ({"scale": 2.0}, "scale"),
        ({"duration_s": 0}, "duration_s"),
        ({"plan": [(["sync_selcet"], 10, 0, 0)]}, "pattern"),
        ({"plan": [(SELECTS, 0, 0, 0)]}, "users"),
        ({"plan": lesson_plan(depths=(15, 99))}, "cpu_n"),
        ({"plan": lesson_plan(depths=(20,))}, "sweep_cpu_n needs at least two depths"),
    ],
)
def test_check_names_what_to_change(change, name):
    given = {"plan": lesson_plan(), "duration_s": 5, "scale": 0.01, "threads": 40, "db_pool": 20, **change}
    with pytest.raises(ValueError, match=name):
        runs.check(**given)


def test_run_parts_sends_every_part_in_one_plan_and_splits_the_results_back(monkeypatch):
    calls = []

    def run_plan(server, planned, **load):
        calls.append((server, planned, load))
        return [SimpleNamespace(row={"pattern": r["pattern"], "users": r["users"]}) for r in planned]

    monkeypatch.setattr(runs, "run_plan", run_plan)
    on, pinned = object(), object()
    parts = {
        "slow": [{"pattern": "sync_select", "users": 80, "server": on}, {"pattern": "async_select", "users": 80}],
        "pinned": [{"pattern": "async_select", "users": 1000, "server": pinned}],
    }
    frames = runs.run_parts(on, parts, lesson="07_database", warmup_s=2)
    assert len(calls) == 1  # one Locust process for every part
    server, planned, load = calls[0]
    assert server is on and planned == parts["slow"] + parts["pinned"]
    assert load == {"lesson": "07_database", "warmup_s": 2}
    assert list(frames) == ["slow", "pinned"]
    assert frames["slow"][["pattern", "users", "driver"]].values.tolist() == [
        ["sync_select", 80, "sync"],
        ["async_select", 80, "async"],
    ]
    assert frames["pinned"]["driver"].tolist() == ["async"]


def test_a_run_is_priced_with_the_cpu_it_measured(fib_ms):
    planned = runs.plan(server(), ["sync_select"], [8], base())
    p = planned[0]["predicted"].after(Demand(worker_ms=5.0, others_ms=5.0))
    # 1 ms of database wait alone + 5 ms of CPU per request: the worker serves at most 200 req/s,
    # and the machine's two cores 2 / 10 ms = 200 req/s too
    assert p.rps == pytest.approx(min(8 / 0.006, 200.0))
    assert p.bottleneck.startswith(("GIL", "cores"))


def slow_select():
    """Part 1's run: 80 users, 100 ms of pg_sleep per query, 20 connections, 40 threads; its `predicted`."""
    wide = SimpleNamespace(settings=Settings(workers=1, threads=40, db_pool=20, procs=0))
    (slow,) = runs.plan(wide, ["async_select"], [80], base().assign(service_ms=1.5, cpu_ms=1.0), io_ms=100)
    return slow["predicted"].after


def test_the_connection_pool_is_priced_with_the_hold_the_run_measured(fib_ms):
    priced = slow_select()
    alone = priced(Demand(worker_ms=1.5, others_ms=1.0))  # held as alone: 1.5 − 1.0 + 100 ms
    assert alone.bottleneck == "connection pool" and alone.rps == pytest.approx(20 / 0.1005)
    held = priced(Demand(worker_ms=1.5, others_ms=1.0, db_hold_ms=105.0))
    assert held.bottleneck == "connection pool" and held.rps == pytest.approx(20 / 0.105)
    assert held.latency_ms == pytest.approx(80 / held.rps * 1000)
    # no CPU measured either: the lone figures, and still the hold measured
    assert priced(Demand(worker_ms=math.nan, db_hold_ms=105.0)).rps == pytest.approx(20 / 0.105)


def test_a_hold_measured_where_the_core_is_the_bound_does_not_move_the_prediction(fib_ms):
    # 8 users of a fast SELECT at 5 ms of CPU each: the core bounds it, at 200 req/s. A connection
    # held 95 ms (waiting for that core) would price the pool at 21 req/s, but it is not the bound.
    (fast,) = runs.plan(server(), ["sync_select"], [8], base())
    cost = Demand(worker_ms=5.0, others_ms=5.0)
    assert fast["predicted"].after(replace(cost, db_hold_ms=95.0)) == fast["predicted"].after(cost)


def test_sweep_rounds_repeat_the_two_ends_of_the_sweep_in_mirrored_order(fib_ms):
    simulations = ["sync_simulation", "async_simulation"]
    table = pd.concat([base(), pd.DataFrame({"service_ms": [5.0], "cpu_ms": [4.0]}, index=["sync_simulation"])])
    parts = runs.sweep_rounds(server(), simulations, table, 3, 8, [15, 20, 28], duration_s=3)
    assert list(parts) == ["sweep round 1", "sweep round 2"]  # round 0 is part 3's own sweep
    order = {name: [(r["cpu_n"], r["pattern"]) for r in p] for name, p in parts.items()}
    assert order["sweep round 1"] == [(15, "async_simulation"), (15, "sync_simulation"),
                                      (28, "async_simulation"), (28, "sync_simulation")]  # fmt: skip
    assert order["sweep round 2"] == [(15, "sync_simulation"), (15, "async_simulation"),
                                      (28, "sync_simulation"), (28, "async_simulation")]  # fmt: skip
    assert all(r["users"] == 8 for p in parts.values() for r in p)
    assert runs.sweep_rounds(server(), simulations, table, 1, 8, [15, 28]) == {}


def test_edge_rounds_give_what_is_left_of_the_async_edge_round_by_round():
    def sweep(shallow_sync, deep_sync):  # async at 300 req/s (fib 15) and 30 req/s (fib 28) in every round
        return pd.DataFrame({"cpu_n": [15, 15, 28, 28], "driver": ["sync", "async", "sync", "async"],
                             "rps": [shallow_sync, 300.0, deep_sync, 30.0]})  # fmt: skip

    frames = {"sweep": sweep(150.0, 25.0), "sweep round 1": sweep(100.0, 20.0), "sweep round 2": sweep(200.0, 30.0)}
    # edges: 1 and 0.2; 2 and 0.5; 0.5 and 0
    assert runs.edge_rounds(frames, 3) == pytest.approx([0.2, 0.25, 0.0])
    assert runs.edge_rounds(frames, 1) == pytest.approx([0.2])


def test_run_parts_with_no_part_starts_no_locust(monkeypatch):
    monkeypatch.setattr(runs, "run_plan", lambda *a, **k: pytest.fail("a Locust process for no runs"))
    assert runs.run_parts(object(), {}, lesson="07_database") == {}


def test_calibrate_prices_each_endpoint_as_a_run_of_its_users_prices_it(monkeypatch):
    asked = {}
    monkeypatch.setattr(runs, "lone_requests", lambda url, path, n: {"service_ms": 2.0})
    monkeypatch.setattr(runs, "held", lambda url: None)
    price = runs.measurement.CpuPrice(loop_ms=0.5, threads_ms=1.0, pool_ms=0.0, probe_ms=3.0)
    monkeypatch.setattr(runs.measurement, "cpu_price", lambda s, path, users: asked.setdefault(path, users) and price)
    server = SimpleNamespace(url="http://127.0.0.1:1", proc=object())
    table = runs.calibrate(server, ["sync_select", "sync_simulation"], users={"sync_select": 1000})
    # part 2's SELECT as its thousand users' run prices it (over as many connections); the rest as eight users
    assert asked == {"/sync_select": 1000, "/sync_simulation": runs.measurement.HOT_MOST}
    assert table.at["sync_select", "cpu_ms"] == 1.5 and table.at["sync_select", "probe_ms"] == 3.0
    assert set(runs.PRICES) < set(table.columns)


def test_a_run_of_the_predict_table_carries_its_prices_for_its_row(fib_ms):
    split = base().assign(loop_ms=[0.25, 3.0, 1.0], threads_ms=[0.75, 0.0, 0.0], pool_ms=0.0, probe_ms=3.0)
    (sync,) = runs.plan(server(), ["sync_select"], [8], split, cpu_n=5)
    one = sync["predicted"].prices
    # S and the CPU as `predict` took them, fib's 5 ms in the sync endpoint's thread
    assert (one.service_ms, one.loop_ms, one.threads_ms, one.probe_ms) == (2.0 + 5.0, 0.25, 0.75 + 5.0, 3.0)
    (plain,) = runs.plan(server(), ["sync_select"], [8], base())
    assert plain["predicted"].prices is None  # a table without the split says none

"""Lesson 06: its clients (labserver.clients.strategies), their model (theory.clients) and their runs (clients.runs)."""

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pandas as pd
import psutil
import pytest

from labserver.clients import strategies
from labserver.harness.processes.procs import free_port
from labserver.theory import clients
from labserver.theory.batch import LIBRARY, Cost, check_run
from labserver.theory.bottlenecks import Bottleneck
from labserver.theory.clients import pick, plan, predict_client, slots, speedups
from labserver.theory.workload import Workload


class _Ok(BaseHTTPRequestHandler):
    def do_GET(self):
        status = 500 if self.path.startswith("/fail") else 200
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def url():
    """A tiny threaded HTTP server in this process: the clients' plumbing, not a measurement."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("strategy", list(strategies.STRATEGIES))
def test_every_strategy_sends_every_request(url, strategy):
    report = strategies.timed(strategy, url + "/ok", 12, 4)
    assert report["requests"] == 12 and report["failures"] == 0
    assert len(report["ends"]) == 12
    assert report["rps"] == pytest.approx(12 / report["wall_s"])
    assert report["cpu_s"] >= 0 and report["p50_ms"] <= report["p95_ms"]
    assert 0 <= report["first_cpu_s"] <= report["cpu_s"]  # the first burst's CPU is part of the whole


def test_a_requests_client_times_the_send_part_of_its_cpu(url):
    report = strategies.timed("threadpool", url, 20, 5)
    assert 0 < report["send_share"] < 1  # some CPU before the wait, some reading the reply
    assert math.isnan(strategies.timed("aiohttp", url, 5, 5)["send_share"])  # one thread: nothing to split


@pytest.mark.parametrize("strategy", list(strategies.STRATEGIES))
def test_failed_requests_are_counted(url, strategy):
    assert strategies.timed(strategy, url + "/fail", 5, 2)["failures"] == 5


class _KeepAlive(_Ok):
    """HTTP/1.1: a connection stays open for the client's next request; each request notes its client's port."""

    protocol_version = "HTTP/1.1"
    ports: ClassVar[list[int]] = []

    def do_GET(self):
        self.ports.append(self.client_address[1])
        super().do_GET()


def test_a_session_per_thread_reuses_its_connection_where_requests_get_opens_one_each(tmp_path):
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _KeepAlive)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        here = f"http://127.0.0.1:{httpd.server_address[1]}/ok"
        for strategy, most in (("session", 4), ("threadpool", 20)):
            _KeepAlive.ports = []
            assert strategies.timed(strategy, here, 20, 4)["failures"] == 0
            assert len(set(_KeepAlive.ports)) <= most
        assert len(set(_KeepAlive.ports)) == 20  # requests.get: a new connection, a new port, every call
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_unreachable_server_is_a_failure_not_a_crash():
    port = free_port()
    refused = strategies.timed("loop", f"http://127.0.0.1:{port}/", 2, 1)
    assert refused["failures"] == 2
    assert math.isnan(refused["send_share"])  # nothing was sent: no split, not a broken one
    assert strategies.timed("aiohttp", f"http://127.0.0.1:{port}/", 2, 2)["failures"] == 2


def test_the_command_line_prints_one_json_line(url, capsys):
    assert strategies.main(["aiohttp", url + "/ok", "--requests", "3", "--concurrency", "3"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["requests"] == 3


def test_the_command_line_rejects_nonsense(capsys):
    with pytest.raises(SystemExit):
        strategies.main(["loop", "http://x", "--requests", "0"])
    with pytest.raises(SystemExit):
        strategies.main(["curl", "http://x"])


def test_unknown_strategy_lists_the_choices():
    with pytest.raises(ValueError, match="loop, threadpool, session, aiohttp"):
        strategies.check_strategy("curl")


def test_every_strategy_names_its_library():
    assert set(LIBRARY) == set(strategies.STRATEGIES)


# --- the model -------------------------------------------------------------------------------


def test_a_loop_takes_n_times_io():
    p = predict_client("loop", requests=100, concurrency=50, io_ms=50)
    assert p.rps == pytest.approx(20.0) and p.bottleneck == "one request at a time"


def test_k_in_flight_take_ceil_n_over_k_waves():
    assert predict_client("threadpool", requests=100, concurrency=10, io_ms=50).rps == pytest.approx(200.0)
    assert predict_client("aiohttp", requests=100, concurrency=30, io_ms=50).rps == pytest.approx(
        100 / (4 * 0.05)
    )  # 30+30+30+10
    assert predict_client("aiohttp", requests=10, concurrency=100, io_ms=50).rps == pytest.approx(
        200.0
    )  # never more than n in flight


def test_the_server_caps_what_is_in_flight():
    p = predict_client(
        "aiohttp", requests=1000, concurrency=100, io_ms=50, server_slots=slots("threadpool", threads=40)
    )
    assert p.rps == pytest.approx(1000 / (25 * 0.05)) and p.bottleneck.startswith("server threads")
    assert slots("sequential") == math.inf and slots("threadpool", 40, 2) == 80


def test_the_client_cpu_caps_the_rate_and_the_cpus_lengthen_a_wave():
    cost = Cost(client_ms=2.5, server_ms=0.5)  # as measured in the run
    busy = predict_client("threadpool", requests=1000, concurrency=100, io_ms=50, cost=cost)
    assert busy.rps == pytest.approx(1000 / (1000 * 0.0025 + 0.05), rel=0.01)
    assert busy.bottleneck == Bottleneck.CLIENT_CPU
    calm = predict_client("threadpool", requests=100, concurrency=10, io_ms=50, cost=cost)
    # waves of io + c + s, after the ten threads got their first requests out 2.5 ms apart
    assert calm.rps == pytest.approx(100 / (10 * 0.053 + 9 * 0.0025))
    assert calm.bottleneck == "client concurrency (10)"
    assert predict_client("loop", requests=100, concurrency=1, io_ms=50, cost=cost).rps == pytest.approx(1 / 0.053)


def test_a_burst_is_no_faster_than_its_client_cpu_plus_one_wait():
    # 100 at once: one wave of 50 ms by the concurrency model, but 100 × 0.3 ms of CPU come first
    p = predict_client("aiohttp", requests=100, concurrency=100, io_ms=50, cost=Cost(client_ms=0.3, server_ms=0.1))
    assert p.rps == pytest.approx(100 / (100 * 0.0003 + 0.05))
    # its core busy 30 of the 80 ms: the wait, not the client's CPU, is most of it
    assert p.bottleneck == "client concurrency (100)"
    pure = predict_client("aiohttp", requests=100, concurrency=100, io_ms=50)
    assert pure.rps == pytest.approx(100 / 0.05)


def test_a_burst_gets_through_at_the_slower_sides_pace_and_every_wave_inherits_the_spread():
    # 100 at once to 40 threads: 3 waves of 50 + 0.5 + 0.6 ms, after the loop read 99 more requests at 0.6 ms
    p = predict_client(
        "aiohttp", requests=100, concurrency=100, io_ms=50, server_slots=40, cost=Cost(client_ms=0.5, server_ms=0.6)
    )
    assert p.rps == pytest.approx(100 / (3 * 0.0511 + 99 * 0.0006)) and p.bottleneck == "server threads (40)"
    # the client the slower side (c > s): the burst gets through at its pace, and the waves inherit that
    sender = predict_client(
        "aiohttp", requests=100, concurrency=100, io_ms=50, server_slots=40, cost=Cost(client_ms=0.31, server_ms=0.3)
    )
    assert (
        sender.rps == pytest.approx(100 / (3 * 0.05061 + 99 * 0.00031)) and sender.bottleneck == "server threads (40)"
    )
    # so slow that a thread frees before the 40 fill (40 × 1.5 ms > 52.4 ms): no waves, each served as it
    # arrives, and the client's CPU bounds it
    slow = predict_client(
        "threadpool", requests=100, concurrency=100, io_ms=50, server_slots=40, cost=Cost(client_ms=1.5, server_ms=0.9)
    )
    assert slow.rps == pytest.approx(100 / (100 * 0.0015 + 0.05)) and slow.bottleneck == Bottleneck.CLIENT_CPU
    # one request in flight: nothing arrives at once, nothing to spread
    assert predict_client("loop", requests=10, concurrency=1, io_ms=50, cost=Cost(0.5, 0.6)).rps == pytest.approx(
        1 / 0.0511
    )


def test_a_requests_pool_spreads_only_its_last_wave_and_meets_its_cpu_bound_without_a_jump():
    # 100 threads against 40: the 100th request is the third wave's, 19 places in, its threads c apart
    calm = predict_client(
        "threadpool", requests=100, concurrency=100, io_ms=50, server_slots=40, cost=Cost(client_ms=1.0, server_ms=0.5)
    )
    assert calm.rps == pytest.approx(100 / (3 * 0.0515 + 19 * 0.001))
    # either side of the edge where the 40 slots fill just as the first request ends (40 c = S):
    # waves on one side, the client's CPU on the other, and no more between them than the server's s
    edge = (50 + 0.6) / 39  # c where 40 c = 50 + c + 0.6
    below = predict_client(
        "threadpool", requests=100, concurrency=100, io_ms=50, server_slots=40, cost=Cost(edge - 1e-6, server_ms=0.6)
    )
    above = predict_client(
        "threadpool", requests=100, concurrency=100, io_ms=50, server_slots=40, cost=Cost(edge + 1e-6, server_ms=0.6)
    )
    assert below.bottleneck.startswith("server threads") and above.bottleneck == Bottleneck.CLIENT_CPU
    assert 100 / below.rps - 100 / above.rps == pytest.approx(0.0006, abs=0.0001)  # was 2.5 S: 0.13 s


def test_one_core_that_sends_and_reads_every_request():
    # one thread: each request's send, wait and read one after the other
    assert clients.client_core_s(10, 1, 0.001, 0.0005, 0.05) == pytest.approx(10 * 0.0515)
    # a burst all in flight whose replies cost nothing to read: every send, then the last wait
    assert clients.client_core_s(100, 100, 0.001, 0.0, 0.05) == pytest.approx(0.15)
    # with reads: the early replies are read while the last request waits, so the batch ends
    # after all its CPU, but sooner than all its CPU and then one wait
    split = clients.client_core_s(100, 100, 0.0007, 0.0003, 0.05)
    assert 100 * 0.001 <= split < 100 * 0.001 + 0.05
    assert split == pytest.approx(100 * 0.0007 + 0.05 + 0.0003)  # the last send, its wait, its read
    # so many that the core never rests: all the CPU, then what is left of the last wait's reads
    busy = clients.client_core_s(1000, 100, 0.0007, 0.0003, 0.05)
    assert 1.0 <= busy < 1.0 + 0.05
    # with a thread for every request the core always has something to do until the last wait:
    # never later than all its CPU plus one wait, whatever the split
    for share in (0.3, 0.5, 0.9):
        assert clients.client_core_s(500, 500, 0.001 * share, 0.001 * (1 - share), 0.05) <= 0.5 + 0.05 + 1e-9
    # with too few threads it waits for its replies: waves (10 of 50 sends, a wait and 50 reads)
    assert clients.client_core_s(500, 50, 0.0003, 0.0007, 0.05) > 0.5 + 0.05


def test_a_requests_burst_is_priced_with_its_send_share():
    split = Cost(client_ms=0.8, server_ms=0.3, alone_ms=52.0, send_share=0.7)
    p = predict_client("threadpool", requests=100, concurrency=100, io_ms=50, cost=split)
    one = 0.052
    assert p.bottleneck == Bottleneck.CLIENT_CPU
    assert 100 / p.rps == pytest.approx(clients.client_core_s(100, 100, 0.00056, 0.00024, one - 0.0008))
    # not split (aiohttp, or an older run): all its CPU, then one wait, as before
    whole_cost = Cost(client_ms=0.8, server_ms=0.3, alone_ms=52.0)
    assert predict_client("threadpool", requests=100, concurrency=100, io_ms=50, cost=whole_cost).rps == pytest.approx(
        100 / (0.08 + 0.05)
    )
    assert p.rps > predict_client("threadpool", requests=100, concurrency=100, io_ms=50, cost=whole_cost).rps


def test_a_lone_requests_latency_is_the_floor_of_a_wave():
    # c + s under load 0.5 ms, but a lone request took 52 ms at io 50: every wave takes 52 ms at least
    cost = Cost(client_ms=0.2, server_ms=0.3)
    floor = predict_client("aiohttp", requests=100, concurrency=10, io_ms=50, cost=Cost(0.2, 0.3, alone_ms=52.0))
    assert floor.rps == pytest.approx(100 / (10 * 0.052 + 9 * 0.0003))
    assert floor.bottleneck == predict_client("aiohttp", requests=100, concurrency=10, io_ms=50, cost=cost).bottleneck
    # never below io + c + s: a lone figure shorter than that (a faster moment) changes nothing
    assert predict_client(
        "aiohttp", requests=100, concurrency=10, io_ms=50, cost=Cost(0.2, 0.3, alone_ms=50.1)
    ) == predict_client("aiohttp", requests=100, concurrency=10, io_ms=50, cost=cost)
    # the pure concurrency model has no lone figure to take
    assert predict_client("aiohttp", requests=100, concurrency=10, io_ms=50).rps == pytest.approx(200.0)


def test_on_one_usable_cpu_client_and_server_take_turns_on_it():
    cost = Cost(client_ms=1.1, server_ms=0.5)
    one = predict_client("threadpool", requests=1000, concurrency=100, io_ms=50, cost=cost, cores=1)
    assert one.rps == pytest.approx(1000 / (1000 * 0.0016 + 0.05)) and one.bottleneck == Bottleneck.MACHINE
    # on two, each side has a core: the client's own CPU binds first, as before
    two = predict_client("threadpool", requests=1000, concurrency=100, io_ms=50, cost=cost, cores=2)
    assert two.bottleneck == Bottleneck.CLIENT_CPU and two.rps == pytest.approx(1000 / (1000 * 0.0011 + 0.05))
    # a client and a server whose CPUs are near each other: their sum over two cores is not a bound either
    near = Cost(client_ms=0.89, server_ms=0.46, alone_ms=52.3, send_share=0.71)
    apart = predict_client("threadpool", requests=100, concurrency=100, io_ms=50, cost=near, cores=2)
    assert apart.bottleneck != Bottleneck.MACHINE


def test_an_unmeasured_cost_falls_back_to_the_concurrency_model():
    unknown = Cost(client_ms=math.nan, server_ms=1.0)
    assert predict_client("aiohttp", requests=100, concurrency=10, io_ms=50, cost=unknown) == predict_client(
        "aiohttp", requests=100, concurrency=10, io_ms=50
    )


def test_no_wait_is_not_modelled():
    assert math.isnan(predict_client("loop", requests=10, concurrency=1, io_ms=0).rps)


def test_check_run_says_what_to_change():
    with pytest.raises(ValueError, match="requests"):
        check_run("loop", "sequential", 0, 1, 50)
    with pytest.raises(ValueError, match="concurrency"):
        check_run("aiohttp", "sequential", 10, 5000, 50)
    with pytest.raises(ValueError, match="io_ms"):
        check_run("aiohttp", "sequential", 10, 5, -1)
    with pytest.raises(ValueError, match="pattern"):
        check_run("aiohttp", "nope", 10, 5, 50)


def test_plan_skips_long_runs_but_keeps_every_client_once():
    runs = plan(["loop", "threadpool"], ["sequential"], [100, 1000], [10, 100], io_ms=50, max_run_s=3.0)
    loop = runs[runs["client"] == "loop"]
    assert set(loop["users"]) == {1}
    assert loop.set_index("requests")["run"].to_dict() == {100: True, 1000: False}  # 5 s kept at the smallest count
    pool = runs[runs["client"] == "threadpool"].set_index(["users", "requests"])["run"]
    assert pool[(10, 1000)] == False and pool[(100, 1000)] == True  # noqa: E712 - numpy booleans
    with pytest.raises(ValueError, match="at least one"):
        plan([], ["sequential"], [100], [10], io_ms=50, max_run_s=3.0)
    with pytest.raises(ValueError, match="max_run_s"):
        plan(["loop"], ["sequential"], [100], [10], io_ms=50, max_run_s=0)
    with pytest.raises(ValueError, match="threads"):
        plan(["loop"], ["threadpool"], [100], [10], io_ms=50, max_run_s=3.0, threads=0)


def _runs(rows):
    base = {"valid": True, "io_ms": 50}
    return pd.DataFrame([{**base, **r} for r in rows])


def test_speedups_are_over_the_loop_of_the_same_endpoint():
    runs = _runs([
        {"pattern": "a", "client": "loop", "users": 1, "requests": 100, "rps": 20, "concurrency_rps": 20},
        {"pattern": "a", "client": "aiohttp", "users": 10, "requests": 100, "rps": 180, "concurrency_rps": 200},
        {"pattern": "b", "client": "loop", "users": 1, "requests": 100, "rps": 10, "concurrency_rps": 20},
        {"pattern": "b", "client": "aiohttp", "users": 10, "requests": 100, "rps": 100, "concurrency_rps": 200},
    ])  # fmt: skip
    runs["client_cpu"], runs["bottleneck"] = 0.1, "x"
    s = speedups(runs).set_index("pattern")
    assert s.loc["a", "speedup"] == pytest.approx(9.0) and s.loc["a", "speedup_ratio"] == pytest.approx(0.9)
    assert s.loc["b", "speedup"] == pytest.approx(10.0) and s.loc["b", "predicted_speedup"] == pytest.approx(10.0)


def test_pick_is_nan_when_nothing_matches():
    runs = _runs([{"client": "loop", "rps": 3.0}, {"client": "loop", "rps": 5.0}])
    assert pick(runs, "rps", client="loop") == 4.0
    assert math.isnan(pick(runs, "rps", client="aiohttp"))


def _lesson_runs() -> pd.DataFrame:
    """Lesson 06's runs in small: per endpoint, a loop, then each library at 10 and at 100 in flight."""
    columns = ["pattern", "client", "library", "users", "requests", "rps", "predicted_rps", "client_cpu", "client_ms"]
    rows = [
        ("threadpool", "loop", "requests", 1, 100, 18.0, 20.0, 0.05, 2.0),
        ("threadpool", "threadpool", "requests", 10, 100, 170.0, 200.0, 0.2, 3.0),
        ("threadpool", "threadpool", "requests", 100, 1000, 320.0, 700.0, 0.7, 3.0),  # held by the server's threads
        ("threadpool", "aiohttp", "aiohttp", 10, 100, 170.0, 200.0, 0.2, 0.5),
        ("threadpool", "aiohttp", "aiohttp", 100, 1000, 630.0, 700.0, 0.2, 0.5),
        ("sequential", "loop", "requests", 1, 100, 18.0, 20.0, 0.05, 2.0),
        ("sequential", "threadpool", "requests", 10, 100, 170.0, 200.0, 0.2, 3.0),
        ("sequential", "threadpool", "requests", 100, 1000, 320.0, 1800.0, 0.95, 2.5),
        ("sequential", "aiohttp", "aiohttp", 10, 100, 170.0, 200.0, 0.2, 0.5),
        ("sequential", "aiohttp", "aiohttp", 100, 1000, 1620.0, 1800.0, 0.2, 0.4),
    ]
    runs = _runs([dict(zip(columns, row, strict=True)) for row in rows])
    # before the run: the concurrency model; after it, priced with the run's CPU (here the same)
    return runs.assign(ratio=runs["rps"] / runs["predicted_rps"], concurrency_rps=runs["predicted_rps"], bottleneck="x")


def test_findings_are_the_figures_lesson_06_quotes():
    found = clients.findings(_lesson_runs(), ["threadpool", "sequential"], [10, 100], [100, 1000])
    assert (found.low, found.high, found.big) == (10, 100, 1000)
    assert set(found.calm["users"]) == {10} and len(found.calm) == 4
    assert found.calm["speedup"].tolist() == pytest.approx([170 / 18] * 4)
    assert found.loop_ratio == pytest.approx(0.9)
    assert (found.pool_cpu, found.pool_async) == (0.95, 320.0)  # the async endpoint's: no server cap there
    assert found.aio == pytest.approx({"threadpool": 630.0, "sequential": 1620.0})
    assert found.aio_model == {"threadpool": 700.0, "sequential": 1800.0}
    assert found.model_gap == pytest.approx(1800 / 700)
    assert (found.requests_ms, found.aiohttp_ms) == (2.5, 0.4)  # both at the top load, on the async endpoint


def test_findings_read_the_ratios_the_claims_quote():
    found = clients.findings(_lesson_runs(), ["threadpool", "sequential"], [10, 100], [100, 1000])
    assert found.calm_speedup == pytest.approx(170 / 18) and found.calm_model_speedup == pytest.approx(10.0)
    assert found.calm_ratio == pytest.approx(170 / 18 / 10) and found.calm_spread == pytest.approx((0.944, 0.944), 1e-3)
    assert found.endpoint_ratio == pytest.approx(1620 / 630)  # aiohttp: async endpoint over sync
    assert found.library_ratio == pytest.approx(1620 / 320)  # async endpoint: aiohttp over the thread pool


def test_by_endpoint_gives_the_medians_at_one_load():
    runs = _lesson_runs().assign(server_ms=0.3, server_cpu=0.4)
    table = clients.by_endpoint(runs, users=100)
    assert list(table.index) == [("sequential", "aiohttp"), ("sequential", "threadpool"),
                                 ("threadpool", "aiohttp"), ("threadpool", "threadpool")]  # fmt: skip
    assert table.loc[("threadpool", "aiohttp"), "rps"] == 630.0
    assert list(table.columns) == ["rps", "server_ms", "server_cpu"]


def test_reuse_sets_the_session_beside_requests_get():
    reused = _runs([
        {"client": "threadpool", "rps": 400.0, "predicted_rps": 420.0, "client_ms": 2.4},
        {"client": "session", "rps": 440.0, "predicted_rps": 470.0, "client_ms": 2.1},
    ])  # fmt: skip
    r = clients.reuse(reused)
    assert (r.get_ms, r.session_ms, r.get_rps, r.session_rps) == (2.4, 2.1, 400.0, 440.0)
    assert r.gain == pytest.approx(1.1) and r.model_gain == pytest.approx(470 / 420)
    assert math.isnan(clients.reuse(reused.assign(rps=0.0)).gain)  # nothing served: a claim on it fails


def test_findings_on_partial_runs_are_nan_not_an_error():
    runs = _lesson_runs()
    found = clients.findings(runs[runs["client"] != "aiohttp"], ["threadpool", "sequential"], [10, 100], [100, 1000])
    assert math.isnan(found.aio["sequential"]) and math.isnan(found.aiohttp_ms)


def test_the_table_labels_each_endpoint_and_client_and_keeps_their_names():
    from labserver.clients.runs import table

    shown = table(_lesson_runs())
    assert list(shown.columns)[:4] == ["pattern", "label", "client", "client_label"]
    row = shown[(shown["pattern"] == "threadpool") & (shown["client"] == "threadpool")].iloc[0]
    assert (row["label"], row["client_label"]) == ("def (thread pool)", "requests in a client thread pool")


# --- real runs against a real server ---------------------------------------------------------


def _cmdline(p: psutil.Process) -> str:
    try:
        return "" if p.status() == psutil.STATUS_ZOMBIE else " ".join(p.cmdline())
    except psutil.Error:
        return ""


@pytest.mark.slow
def test_a_sweep_against_a_real_server_is_saved_and_leaves_nothing(data_dir):
    from labserver import LabServer, load_runs
    from labserver.charts.clients import cpu_chart, throughput_chart
    from labserver.clients.runs import client_sweep, table

    planned = plan(["loop", "threadpool", "aiohttp"], ["threadpool", "sequential"], [10], [2, 5], io_ms=20, max_run_s=1)
    with LabServer(threads=4) as server:
        runs = client_sweep(server, planned, io_ms=20, lesson="test_clients")
        left = [p for p in psutil.Process().children(recursive=True) if "labserver.clients" in _cmdline(p)]
        assert not left and not [p for p in psutil.Process().children(recursive=True) if "pauses" in _cmdline(p)]
    assert len(runs) == 10 and runs["valid"].all() and (runs["failures"] == 0).all()
    assert (runs["paused_ms"] >= 0).all()  # each watched for the machine's pauses while it ran
    assert (runs["stolen_cpu"] >= 0).all()  # and for the CPU its host took
    assert (runs["rps"] > 0).all() and runs["client_cpu"].notna().all()
    assert list(runs[["pattern", "client", "users"]].itertuples(index=False)) == list(
        planned[["pattern", "client", "users"]].itertuples(index=False)
    )  # in the plan's order
    # every run is priced with the client and server CPU it measured itself
    assert (runs["priced_by"] == "measured demand").all()
    assert (runs["predicted_rps"] <= runs["concurrency_rps"] * (1 + 1e-9)).all()  # the CPUs only lengthen it
    # and with a lone request's latency, measured once per library and endpoint: above the io alone
    assert (runs["alone_ms"] > 20).all() and runs.groupby(["library", "pattern"])["alone_ms"].nunique().eq(1).all()
    on_disk = load_runs("test_clients")
    assert set(on_disk["run_id"]) == set(runs["run_id"])
    assert list(table(runs).columns)[:6] == ["pattern", "label", "client", "client_label", "users", "requests"]
    throughput_chart(runs, "t")
    cpu_chart(runs, "t")


def test_a_run_against_a_server_never_started_says_so():
    from labserver import LabServer
    from labserver.clients.runs import run_client
    from labserver.harness.servers.server import ServerError

    server = LabServer()
    with pytest.raises(ServerError, match="not running"):
        run_client(server, "loop", Workload("sequential", 1, io_ms=10), requests=5)


@pytest.mark.slow
def test_an_interrupted_run_is_saved_as_such_and_its_client_is_stopped():
    import _thread

    from labserver import LabServer, load_runs
    from labserver.clients.runs import run_client

    def interrupt_once_the_client_runs(stop: threading.Event) -> None:
        # A Ctrl-C in the middle of the 5 s run: once the client process exists, not after a fixed
        # delay, which a slow start-up on a busy machine could outlast or precede.
        while not stop.wait(0.05):
            if any("labserver.clients" in _cmdline(p) for p in psutil.Process().children(recursive=True)):
                stop.wait(0.5)
                _thread.interrupt_main()
                return

    with LabServer() as server:
        stop = threading.Event()
        watcher = threading.Thread(target=interrupt_once_the_client_runs, args=(stop,), daemon=True)
        watcher.start()
        try:
            with pytest.raises(KeyboardInterrupt):
                result = run_client(
                    server, "loop", Workload("sequential", 1, io_ms=50), requests=100, lesson="test_interrupt"
                )
                pytest.fail(f"the run ended before the interrupt: {result.row['status']}, {result.row['problems']}")
        finally:
            stop.set()
            watcher.join()
        assert not [p for p in psutil.Process().children(recursive=True) if "labserver.clients" in _cmdline(p)]
    saved = load_runs("test_interrupt")
    assert list(saved["status"]) == ["interrupted"] and not saved["valid"].any()


def run_params(**changes) -> dict:
    """A client run's parameters, as run_client records them."""
    params = dict(lesson=None, pattern="sequential", client="loop", library="requests", users=1, requests=2)
    return params | dict(tasks=1, io_ms=50, cpu_n=0, workers=1, threads=40) | changes


# A client run's row on disk, its columns in order: every reader of data/runs/ (lesson 06, the
# summary, the bench) reads these, so a change to them is a change to theirs.
CLIENT_ROW = [
    "run_id", "lesson", "pattern", "client", "library", "users", "requests", "tasks", "io_ms", "cpu_n", "workers",
    "threads", "rps", "wall_s", "p50_ms", "p95_ms", "mean_ms", "failures", "predicted_rps", "predicted_ms",
    "bottleneck", "ratio", "concurrency_rps", "predicted_before_rps", "predicted_before_ms", "before_bottleneck",
    "ratio_before", "before_priced_by", "before_miss", "client_cpu", "client_ms", "send_share", "first_cpu_ms",
    "first_ms",
    "server_cpu", "server_ms", "alone_ms", "paused_ms", "stolen_cpu", "notes", "client_saturated", "priced_by",
    "status", "valid", "problems", "started_at", "git_commit", "batch",
]  # fmt: skip


@pytest.mark.parametrize(
    "report",
    [{}, {"wall_s": 0.2, "rps": 10.0, "cpu_s": 0.01, "client_cpu": 0.05, "failures": 0, "p50_ms": 50.0,
          "p95_ms": 51.0, "mean_ms": 50.2, "first_cpu_s": 0.002, "send_share": 0.3, "ends": [0.05, 0.1],
          "paused_ms": 2.0, "stolen_cpu": 0.0}],
)  # fmt: skip
def test_a_client_run_s_row_holds_the_declared_columns_in_order(report):
    from labserver.clients import runs as client_runs
    from labserver.harness.rows import columns
    from labserver.theory.model import Prediction

    p = Prediction(10.0, 100.0, "one request at a time")
    row = client_runs._row(
        "r", run_params(), report, status="ok", server_s=0.01, slots=math.inf, bound=p, started_at="now"
    )
    assert list(row) == CLIENT_ROW == [c.name for c in columns.CLIENT]
    json.dumps(row)  # as its manifest will hold it


def test_a_client_runs_before_prediction_never_reads_its_own_run():
    """The prediction made before a client run is priced by the costs given before it: what the run measured moves
    the explained prediction, never the one made before."""
    from labserver.clients import runs as client_runs
    from labserver.theory.batch import Cost
    from labserver.theory.model import Prediction

    p = Prediction(10.0, 100.0, "client concurrency (10)")
    before = Cost(client_ms=0.7, server_ms=0.3, alone_ms=52.0, send_share=0.7)
    report = {"wall_s": 0.6, "rps": 166.0, "cpu_s": 0.07, "failures": 0, "p50_ms": 55.0, "ends": [0.1]}
    params = run_params(client="threadpool", users=10)

    def row(cpu_s: float) -> dict:
        return client_runs._row("r", params, {**report, "cpu_s": cpu_s}, status="ok", server_s=0.03,
                                slots=math.inf, bound=p, started_at="now", before=before)  # fmt: skip

    light, heavy = row(0.07), row(0.7)  # the run's own client CPU, planted ten times over
    assert heavy["predicted_rps"] < light["predicted_rps"]  # the explained prediction reads the run
    assert heavy["predicted_before_rps"] == light["predicted_before_rps"] > 0  # the one made before does not
    assert light["before_priced_by"] == "one batch before"
    assert light["ratio_before"] == pytest.approx(166.0 / light["predicted_before_rps"])
    unpriced = client_runs._row("r", params, report, status="ok", server_s=0.03, slots=math.inf, bound=p,
                                started_at="now")  # fmt: skip
    assert unpriced["before_priced_by"] == "not priced" and math.isnan(unpriced["ratio_before"])


def test_a_client_run_s_row_refuses_a_parameter_it_does_not_declare():
    from labserver.clients import runs as client_runs
    from labserver.theory.model import Prediction

    p = Prediction(10.0, 100.0, "one request at a time")
    with pytest.raises(ValueError, match="undeclared"):
        client_runs._row("r", run_params(round=1), {}, status="ok", server_s=0.0, slots=1, bound=p, started_at="now")


def test_a_client_run_carries_its_batch_and_commit(monkeypatch):
    from labserver.clients import runs as client_runs
    from labserver.theory.model import Prediction

    monkeypatch.setenv("LAB_BATCH_ID", "b-1")
    params = run_params()
    p = Prediction(10.0, 100.0, "one request at a time")
    row = client_runs._row(
        "r", params, {"wall_s": 0.2, "rps": 10.0}, status="ok", server_s=0.01, slots=math.inf, bound=p, started_at="now"
    )
    assert row["batch"] == "b-1" and "git_commit" in row


def test_a_client_run_notes_the_cpu_its_host_took_but_stays_valid():
    from labserver.clients import runs as client_runs
    from labserver.theory.model import Prediction

    params = run_params()
    p = Prediction(10.0, 100.0, "one request at a time")
    report = {"wall_s": 0.2, "rps": 10.0, "stolen_cpu": 0.4}
    row = client_runs._row("r", params, report, status="ok", server_s=0.01, slots=math.inf, bound=p, started_at="now")
    assert row["stolen_cpu"] == 0.4 and "the host took 0.40 of a core" in row["notes"] and row["valid"]
    quiet = client_runs._row(
        "r",
        params,
        {**report, "stolen_cpu": 0.0},
        status="ok",
        server_s=0.01,
        slots=math.inf,
        bound=p,
        started_at="now",
    )
    assert quiet["notes"] == ""


def test_a_client_run_is_priced_with_the_cpu_it_measured():
    from labserver.clients import runs as client_runs

    params = run_params(client="aiohttp", library="aiohttp", users=10, requests=100)
    report = {"wall_s": 0.6, "rps": 100 / 0.6, "cpu_s": 0.05, "client_cpu": 0.08}  # 0.5 ms of client CPU each
    pure = predict_client("aiohttp", requests=100, concurrency=10, io_ms=50)
    row = client_runs._row(
        "r", params, report, status="ok", server_s=0.1, slots=math.inf, bound=pure, started_at="now"
    )  # 1 ms of server CPU each
    priced = predict_client("aiohttp", requests=100, concurrency=10, io_ms=50, cost=Cost(client_ms=0.5, server_ms=1.0))
    assert row["predicted_rps"] == pytest.approx(priced.rps) and row["priced_by"] == "measured demand"
    assert row["concurrency_rps"] == pytest.approx(pure.rps) and row["predicted_rps"] < pure.rps
    # a lone request's latency measured before the run is the floor of its waves, and is kept in the row
    row = client_runs._row(
        "r", params, report, status="ok", server_s=0.1, slots=math.inf, bound=pure, started_at="now", alone_ms=53.0
    )
    floored = predict_client(
        "aiohttp", requests=100, concurrency=10, io_ms=50, cost=Cost(client_ms=0.5, server_ms=1.0, alone_ms=53.0)
    )
    assert row["predicted_rps"] == pytest.approx(floored.rps) and floored.rps < priced.rps and row["alone_ms"] == 53.0
    failed = client_runs._row(
        "r", params, {}, status="client failed", server_s=0.0, slots=math.inf, bound=pure, started_at="now"
    )
    assert failed["predicted_rps"] == pytest.approx(pure.rps) and failed["priced_by"] == "concurrency alone"


def test_the_servers_own_cpu_report_is_used_when_both_readings_have_it():
    from labserver.clients.process import _cpu_delta

    # the server's own report (ns) over /proc's ticks of 10 ms
    assert _cpu_delta((1.0002, 1.00), (1.0317, 1.04)) == pytest.approx(0.0315)
    # one reading without it: both from /proc, never one of each
    assert _cpu_delta((None, 1.00), (1.0317, 1.04)) == pytest.approx(0.04)
    assert _cpu_delta((1.0002, 1.00), (None, 1.03)) == pytest.approx(0.03)


def test_the_client_cpu_is_named_only_where_it_keeps_the_client_core_busy_most_of_the_batch():
    # lesson 06's runs, priced with their own costs: the client core's play-out holds every wait, so it ties the
    # waits' wall and won by a hair, though the core was busy 0.03 (loop), 0.15 (10 threads), 0.33 (aiohttp)
    alone = 52.9
    loop = predict_client("loop", requests=100, concurrency=1, io_ms=50, cost=Cost(1.57, 1.73, alone, 0.557))
    assert loop.bottleneck == Bottleneck.ONE_AT_A_TIME
    ten = predict_client("threadpool", requests=100, concurrency=10, io_ms=50, cost=Cost(0.79, 0.57, alone, 0.648))
    assert ten.bottleneck == "client concurrency (10)"
    burst = predict_client("aiohttp", requests=100, concurrency=100, io_ms=50, cost=Cost(0.258, 0.212, 51.5))
    assert burst.bottleneck == "client concurrency (100)"
    # 1,000 requests through 100 threads: the core busy nearly all the batch
    busy = predict_client("threadpool", requests=1000, concurrency=100, io_ms=50, cost=Cost(4.0, 0.5, alone, 0.648))
    assert busy.bottleneck == Bottleneck.CLIENT_CPU and 1000 * 0.004 * busy.rps / 1000 >= clients.CLIENT_BUSY


def test_a_loop_is_priced_by_its_lone_requests_and_any_other_client_by_a_busy_batch(monkeypatch):
    from labserver.clients import runs as client_runs

    sent = []
    busy = {"cpu_s": 0.032, "send_share": 0.6, "p50_ms": 60.0}
    monkeypatch.setattr(client_runs, "_batch", lambda *a: sent.append(a[1:]) or (busy, 0.016))
    alone = ({"cpu_s": 0.0105, "send_share": 0.55, "p50_ms": 52.0}, 0.007)  # ALONE = 7 lone requests
    loop = client_runs.price(None, "loop", "sequential", 50, alone)
    assert sent == [] and loop.client_ms == pytest.approx(1.5) and loop.server_ms == pytest.approx(1.0)
    pool = client_runs.price(None, "threadpool", "sequential", 50, alone)
    assert sent == [("threadpool", "sequential", 0, client_runs.HOT_REQUESTS, client_runs.HOT)]  # kept busy
    assert pool.client_ms == pytest.approx(32 / client_runs.HOT_REQUESTS) and pool.alone_ms == 52.0  # the lone floor
    assert client_runs.price(None, "aiohttp", "sequential", 50, (None, 0.0)) is None  # a lone request failed

"""Stalls on purpose (lesson 09): what share of a window they held the loop, and that each is kept as it came."""

import contextlib
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest

from labserver.harness.rows.records import Record
from labserver.harness.rows.results import RunResult
from labserver.lessons import stalls_and_shedding as stalls_module
from labserver.lessons.stalls_and_shedding import Stalls, omission, planned_share, predict_held, predict_served, stalls
from labserver.theory.demand import Demand


def test_the_share_counts_only_the_stalls_time_inside_the_window():
    log = Stalls()
    log.held = [(0.0, 0.3), (2.0, 2.3), (4.0, 4.3), (6.0, 6.3)]
    assert log.share(0.0, 8.0) == pytest.approx(1.2 / 8)
    assert log.share(0.5, 6.5) == pytest.approx(0.9 / 6)  # three stalls whole
    assert log.share(2.1, 4.1) == pytest.approx(0.3 / 2)  # the ends of two: 0.2 s and 0.1 s


def test_no_stall_is_no_share_and_an_empty_window_none():
    assert Stalls().share(0.0, 1.0) == 0.0
    assert math.isnan(Stalls().share(1.0, 1.0))


class _Stall(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


def test_each_stall_is_kept_as_sent_and_answered():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Stall)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    server = SimpleNamespace(url=f"http://127.0.0.1:{httpd.server_address[1]}")
    try:
        with stalls(server, 0.05, 1) as log:
            for _ in range(1000):  # up to 10 s: a hung stall fails the test instead of hanging it
                if len(log.held) >= 3:
                    break
                time.sleep(0.01)
    finally:
        httpd.shutdown()
    assert len(log.held) >= 3
    assert all(sent <= answered for sent, answered in log.held)
    assert all(a[1] <= b[0] for a, b in zip(log.held, log.held[1:], strict=False))  # one at a time, in order


@pytest.mark.parametrize("every_s, stall_ms", [(0, 100), (1.0, 0)])
def test_bad_settings_fail_before_any_stall(every_s, stall_ms):
    with pytest.raises(ValueError), stalls(SimpleNamespace(url="http://127.0.0.1:9"), every_s, stall_ms):
        pass


def test_the_held_loop_is_predicted_from_the_calm_rate_less_the_stalls_share_of_its_window():
    log = Stalls()
    log.held = [(2.0, 2.3), (4.0, 4.3), (6.0, 6.3)]
    predict = predict_held(1000.0, log, planned_share=0.15)
    assert predict(Demand(math.nan, window=(1.0, 7.0))).rps == pytest.approx(1000 * (1 - 0.9 / 6))
    assert predict(Demand(math.nan)).rps == pytest.approx(850.0)  # before the run: the planned share
    assert predict(Demand(math.nan)).bottleneck == "users, with the loop held"


def test_arrivals_a_stall_holds_past_the_window_s_end_are_served_outside_it():
    log = Stalls()
    log.held = [(1.7, 2.0), (3.7, 4.0), (7.7, 8.3)]
    # answered at once when a stall ends: the last one holds 0.3 s of arrivals at 8.0; the first ended by 2.1
    assert log.carried(2.1, 8.0, rate=800.0) == pytest.approx(0.3 / 5.9)
    assert log.carried(1.8, 8.0, rate=800.0) == pytest.approx((0.3 - 0.1) / 6.2)  # 0.1 s of earlier ones brought in
    assert log.carried(4.5, 7.0, rate=800.0) == 0.0


def test_a_stall_s_backlog_is_answered_at_the_server_s_pace_after_it_ends():
    log = Stalls()
    log.held = [(7.7, 8.0)]
    # 0.3 s of arrivals at 800/s, answered at 5,600/s while 800/s more come: cleared 0.05 s after the stall
    assert log.carried(2.0, 8.02, rate=800.0, drain_rps=5600.0) == pytest.approx((0.32 - 7 * 0.02) / 6.02)
    assert log.carried(2.0, 8.05, rate=800.0, drain_rps=5600.0) == pytest.approx(0.0)
    assert log.carried(2.0, 8.2, rate=800.0, drain_rps=5600.0) == 0.0


def test_an_open_loop_with_stalls_is_predicted_to_serve_its_arrivals_less_those_carried_out():
    log = Stalls()
    log.held = [(7.7, 8.3)]
    predict = predict_served(800.0, log)
    assert predict(Demand(math.nan, window=(2.1, 8.0))).rps == pytest.approx(800 * (1 - 0.3 / 5.9))
    assert predict(Demand(math.nan)).rps == 800.0  # before the run: every arrival
    log.held = [(7.7, 8.0)]  # the backlog, answered at one worker's pace: 1 / 0.2 ms
    assert predict(Demand(0.2, window=(2.0, 8.02))).rps == pytest.approx(800 * (1 - (0.32 - 5000 / 800 * 0.02) / 6.02))


def test_the_planned_share_is_the_stall_over_its_period():
    assert planned_share(300, 2.0) == pytest.approx(0.15)
    with pytest.raises(ValueError, match="every_s"):
        planned_share(300, 0)


def test_omission_runs_calm_then_closed_then_open_at_the_closed_loop_s_rate(monkeypatch, tmp_path):
    rows = {"calm": {"rps": 900.0, "p50_ms": 10.0}, "closed": {"rps": 850.04, "window_start": 0.0, "window_s": 8.0}}
    sent = []

    def run_plan(server, runs, *, duration_s, lesson):
        (run,) = runs
        sent.append((run, duration_s))
        name = "open" if "rate" in run else "closed" if "predicted" in run else "calm"
        return [RunResult(rows.get(name, {}), None, tmp_path / name, {})]

    @contextlib.contextmanager
    def stalled(server, every_s, stall_ms):
        log = Stalls()
        log.held = [(2.0, 2.3), (4.0, 4.3), (6.0, 6.3)]
        yield log

    calm = [[Record(1.0 + k * 0.01, 10.0, True) for k in range(990)] + [Record(20.0, 1000.0, True)]]
    opened = [[Record(k / 100 + 0.01, 10.0, True, 7, 0, k / 100) for k in range(800)]]
    monkeypatch.setattr(stalls_module, "run_plan", run_plan)
    monkeypatch.setattr(stalls_module, "stalls", stalled)
    monkeypatch.setattr(stalls_module.records, "read", lambda path: opened if path.name == "open" else calm)
    seen = omission(None, users=10, io_ms=10, every_s=2.0, stall_ms=300, duration_s=8, lesson="t")
    (calm_run, _), (closed_run, _), (open_run, open_s) = sent
    assert "predicted" not in calm_run and closed_run["users"] == 10
    assert (open_run["rate"], open_s) == (850.0, 9)  # the closed loop's rate, a second more to drain
    assert (seen.held, seen.planned) == (pytest.approx(0.9 / 8), pytest.approx(0.15))
    assert seen.p99_ms("recorded") == pytest.approx(10.0, rel=0.01) and seen.p99_ms("corrected") > 500
    assert seen.p99_ms("open") == pytest.approx(10.0, rel=0.01)
    assert "the loop was held 11.2% of the closed loop's window (planned 15%)" in str(seen)

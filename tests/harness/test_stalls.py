"""Stalls on purpose (lesson 08): what share of a window they held the loop, and that each is kept as it came."""

import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest

from labserver.harness.stalls import Stalls, predict_held, predict_served, stalls
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

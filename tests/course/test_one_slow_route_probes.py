"""Cheap requests sent now and then (lesson 14): each kept with its send time, and a run's taken by its window."""

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import ClassVar

import pytest

from labserver.lessons.one_slow_route import CHEAP_PATH, Probes


class _Slow(BaseHTTPRequestHandler):
    """Answers every request after 50 ms, and counts those it is answering at once."""

    lock = threading.Lock()
    at_once = 0
    most = 0
    paths: ClassVar[list[str]] = []

    def do_GET(self):
        with self.lock:
            _Slow.at_once += 1
            _Slow.most = max(_Slow.most, _Slow.at_once)
            _Slow.paths.append(self.path)
        time.sleep(0.05)
        with self.lock:
            _Slow.at_once -= 1
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


@pytest.fixture
def slow_server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield SimpleNamespace(url=f"http://127.0.0.1:{httpd.server_address[1]}")
    httpd.shutdown()


def test_probes_keep_to_their_own_clock_not_to_the_last_reply(slow_server):
    probes = Probes(every_s=0.01, seed=1)
    with probes.sending({"app": slow_server}):
        for _ in range(1000):  # up to 10 s: a hung probe fails the test instead of hanging it
            if len(probes.sent) >= 20:
                break
            time.sleep(0.01)
    got = probes.frame()
    assert len(got) >= 20 and got["ok"].all()
    assert (got["ms"] >= 50).all()  # each timed from here, its server's 50 ms included
    assert _Slow.most > 1  # sent every ~10 ms, each answered in 50: several in flight at once
    assert set(_Slow.paths) == {CHEAP_PATH}


def test_a_run_takes_the_probes_sent_in_its_window():
    probes = Probes(every_s=1.0)
    probes.sent = [(10.0, 1.0, True), (11.5, 2.0, True), (12.0, 3.0, True), (13.0, 4.0, False)]
    assert list(probes.within(11.0, 13.0)["ms"]) == [2.0, 3.0]  # from its start, up to (not at) its end


def test_probes_go_to_one_server():
    sending = Probes(every_s=1.0).sending({"a": None, "b": None})
    with pytest.raises(ValueError, match="probes go to one server; this plan starts 2"), sending:
        pass


def test_a_bad_gap_fails_before_any_probe():
    with pytest.raises(ValueError, match="every_s must be more than 0"):
        Probes(every_s=0)

"""RemoteServer: a lab server the lab did not start, checked before any load, its CPU read from /info."""

import http.server
import math
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from labserver.demo.app import BOOT_ID, PROTOCOL, VERSION
from labserver.harness.load.run import sweep
from labserver.harness.processes import procs
from labserver.harness.processes.meters import RemoteCpuMeter
from labserver.harness.servers import remote
from labserver.harness.servers.addresses import exposure
from labserver.harness.servers.remote import RemoteServer, check_info, check_url
from labserver.harness.servers.server import ServerError

INFO = {
    "protocol": PROTOCOL,
    "version": VERSION,
    "boot_id": "another-machine",
    "pid": 1234,
    "workers": 2,
    "threads": 40,
    "procs": 1,
    "queue_limit": None,
    "cpus": [0, 1],
    "patterns": ["sequential"],
    "cpu": {"time": 100.0, "processes": []},
}


@pytest.mark.parametrize(
    ("url", "normal"),
    [
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
        ("http://classroom-server:8000/", "http://classroom-server:8000"),
        ("http://[::1]:8000", "http://[::1]:8000"),
    ],
)
def test_an_address_is_http_host_and_port(url, normal):
    assert check_url(url) == normal


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("127.0.0.1:8000", "http://host:port"),
        ("https://10.0.0.5:8000", "http://host:port"),
        ("http://10.0.0.5", "port included"),
        ("http://10.0.0.5:99999", "port included"),
        ("http://10.0.0.5:8000/sequential", "nothing more"),
        ("http://me:secret@10.0.0.5:8000", "nothing more"),
        ("http://10.0.0.5:8000?x=1", "nothing more"),
        ("http://0.0.0.0:8000", "where a server listens"),
        (None, "string"),
    ],
)
def test_any_other_address_is_refused_saying_what_to_write(url, words):
    with pytest.raises(ValueError, match=words):
        check_url(url)


def test_info_gives_the_settings_the_model_needs():
    s = check_info(INFO, "http://h:1")
    assert (s.workers, s.threads, s.procs, s.queue_limit) == (2, 40, 1, None)


def test_another_protocol_is_refused_naming_both():
    with pytest.raises(ServerError) as e:
        check_info({**INFO, "protocol": PROTOCOL + 1, "version": "9.9"}, "http://h:1")
    message = str(e.value)
    assert f"protocol {PROTOCOL + 1}" in message and "concurrency-lab 9.9" in message
    assert f"this lab speaks protocol {PROTOCOL}" in message and VERSION in message


def test_a_lab_server_from_before_protocols_is_refused():
    old = {k: v for k, v in INFO.items() if k not in ("protocol", "version")}
    with pytest.raises(ServerError, match="older than 1"):
        check_info(old, "http://h:1")


@pytest.mark.parametrize("info", [{"status": "ok"}, ["patterns"], {**INFO, "patterns": None, "workers": 0}])
def test_what_is_not_a_lab_server_or_not_modelable_is_refused(info):
    if isinstance(info, dict) and "workers" in info:
        with pytest.raises(ServerError, match="cannot model"):
            check_info(info, "http://h:1")
    else:
        with pytest.raises(ServerError, match="not a lab server"):
            check_info(info, "http://h:1")


class Fake:
    """What RemoteServer.get answers, path by path; an exception is raised."""

    def __init__(self, **answers):
        self.answers = {"/info": INFO, "/health": {"status": "ok", "pid": 1234}, **answers}
        self.asked = []

    def __call__(self, server, path, timeout=5.0):
        self.asked.append(path)
        answer = self.answers[path]
        if isinstance(answer, BaseException):
            raise answer
        return answer


@pytest.fixture
def fake(monkeypatch):
    f = Fake()
    monkeypatch.setattr(RemoteServer, "get", lambda server, path, timeout=5.0: f(server, path, timeout))
    return f


def test_attaching_reads_the_settings_and_never_starts_or_stops(fake):
    with RemoteServer("http://10.0.0.5:8000") as server:
        assert server.settings.workers == 2 and server.usable_cpus == [0, 1]
        assert server.alive and server.telemetry_dir is None
        assert not server.same_machine  # its CPU is not inside this machine's
    assert fake.asked == ["/info", "/info", "/health"]  # attach, check before use; nothing else was asked
    assert "not started by the lab" in server.log_tail()


def test_nothing_answering_is_a_clear_error(fake):
    fake.answers["/info"] = ConnectionRefusedError(111, "Connection refused")
    with pytest.raises(ServerError, match=r"no lab server answers at http://10\.0\.0\.5:8000"):
        RemoteServer("http://10.0.0.5:8000")


def test_changed_settings_are_refused_before_any_load(fake):
    server = RemoteServer("http://10.0.0.5:8000")
    fake.answers["/info"] = {**INFO, "workers": 3}
    with pytest.raises(ServerError, match="changed its settings"):
        server.check_ready()


def test_refused_is_dead_at_once_and_slow_only_after_a_silence(fake, monkeypatch):
    server = RemoteServer("http://10.0.0.5:8000", silent_s=30)
    clock = [1000.0]
    monkeypatch.setattr(remote.time, "monotonic", lambda: clock[0])
    assert server.alive
    fake.answers["/health"] = TimeoutError("timed out")
    clock[0] += 10
    assert server.alive  # a loop held by blocking requests answers late, not never
    clock[0] += 25
    assert not server.alive
    fake.answers["/health"] = ConnectionRefusedError(111, "Connection refused")
    clock[0] = 1000.0
    assert not server.alive


def test_its_meter_reads_the_servers_own_cpu(fake):
    meter = RemoteServer("http://10.0.0.5:8000").meter()
    assert isinstance(meter, RemoteCpuMeter)
    meter.sample()
    assert fake.asked[-1] == "/info"


class Redirector(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(302)
        self.send_header("Location", "http://127.0.0.2:9/info")  # elsewhere: must never be asked
        self.end_headers()

    def log_message(self, *args):
        pass


def test_a_redirect_elsewhere_is_not_followed():
    httpd = http.server.HTTPServer(("127.0.0.1", 0), Redirector)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        with pytest.raises(ServerError, match=r"redirect to http://127\.0\.0\.2:9/info refused"):
            RemoteServer(f"http://127.0.0.1:{httpd.server_port}")
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_exposure_says_who_may_reach_a_server():
    assert exposure("127.0.0.1", 8000) is None
    assert exposure("localhost", 8000) is None
    everywhere = exposure("0.0.0.0", 8000)
    assert "every interface" in everywhere and "nothing authenticates" in everywhere


def readings(server_time, *processes):
    entries = [dict(zip(("pid", "t", "cpu_s"), p, strict=True)) for p in processes]
    return {"cpu": {"time": server_time, "processes": entries}}


def test_the_remote_meter_places_the_servers_clock_on_this_one():
    # The server's clock runs 1000 s ahead; answers take 0.2 s, then 0.02 s (the better offset), then fail.
    answers = [
        readings(1100.1, (1, 1100.1, 10.0), (2, 1100.0, 5.0)),
        readings(1102.01, (1, 1102.01, 11.0), (2, 1101.9, 5.5)),
        OSError("busy"),
    ]
    now = iter([100.0, 100.2, 102.0, 102.02, 103.0])

    def fetch():
        answer = answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    meter = RemoteCpuMeter(fetch, clock=lambda: next(now))
    for _ in range(3):
        meter.sample()
    assert meter.offset == pytest.approx(-1000.0)
    rates = meter.per_process(99.0, 103.0)
    assert rates[1] == pytest.approx(1.0 / 1.91)
    assert rates[2] == pytest.approx(0.5 / 1.9)
    cores, busiest = meter.usage(99.0, 103.0)
    assert cores == pytest.approx(rates[1] + rates[2]) and busiest == pytest.approx(rates[1])
    assert math.isnan(meter.usage(1099.0, 1103.0)[0])  # on the server's own clock the window holds nothing


def test_the_remote_meter_needs_two_readings_of_a_process():
    meter = RemoteCpuMeter(lambda: readings(5.0, (1, 5.0, 1.0)), clock=lambda: 5.0)
    meter.sample()
    assert meter.per_process(0, 10) == {}
    assert all(math.isnan(x) for x in meter.usage(0, 10))


def _wait_for_health(proc, url, timeout_s=30.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, "python -m labserver serve exited during start-up"
        try:
            with urllib.request.urlopen(url + "/health", timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"python -m labserver serve did not answer at {url} within {timeout_s} s")


@pytest.mark.slow
def test_a_sweep_measures_a_server_the_lab_did_not_start(tmp_path):
    port = procs.free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "labserver", "serve", "--port", str(port), "--procs", "0"]
    with open(tmp_path / "serve.log", "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_for_health(proc, url)
        server = RemoteServer(url)
        rows = sweep(server, ["sequential"], [10], io_ms=50, duration_s=3)
        assert proc.poll() is None and server.alive  # the lab never stops a server it did not start
    finally:
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C, as the instructor stops it
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    (row,) = rows.to_dict("records")
    assert row["valid"], row["problems"]
    assert (row["workers"], row["threads"], row["procs"]) == (1, 40, 0)  # the settings /info reported
    assert row["priced_by"] == "measured demand"  # the model's prediction, priced with the CPU it read from /info
    assert math.isfinite(row["predicted_rps"]) and 0 < row["predicted_rps"] <= 10 / 0.050 + 1e-9  # N / io at most
    for column in ("server_cpu", "worker_ms", "locust_cpu", "machine_cpu"):
        assert math.isfinite(row[column]), column
    assert row["server_cpu"] > 0 and row["workers_seen"] == 1
    assert server.same_machine == (BOOT_ID is not None)
    assert procs.group(proc.pid) == []  # nothing of the server is left running
    assert not procs.port_in_use(port)

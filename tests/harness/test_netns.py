"""Sweeps across a real network on one machine: a server host, a master host and two worker hosts, each a
network namespace of its own on one bridge.

Needs root (ip netns, veth, a bridge); skipped with the reason otherwise. Traffic goes only to the
addresses this test gives inside the namespaces it creates; the namespaces, the veth pairs, the
bridge, the processes and their ports are all gone at the end.
"""

import contextlib
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import urllib.request

import pytest

from labserver.harness.load.run import sweep
from labserver.harness.processes import procs
from labserver.harness.servers.launcher import LabServer

pytestmark = pytest.mark.slow

ROLES = ("server", "master", "w0", "w1")
SWEEP = dict(patterns=["sequential"], users=[10, 40], io_ms=50, duration_s=3)  # 200 and 800 req/s
# As lesson 00 judges its I/O runs: measured within 10% of the model's prediction.
WITHIN = 0.10


def _ip(*args, check=True):
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


@pytest.fixture
def hosts():
    """{role: (namespace, address)} for ROLES, each a namespace on one new bridge (this namespace is .1 on it)."""
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root (ip netns add, veth pairs): not run as root")
    if shutil.which("ip") is None:
        pytest.skip("the `ip` command (iproute2) is not installed")
    tag = f"{os.getpid() % 1000}{random.randrange(10)}"
    subnet = random.randrange(1, 255)
    prefix = f"10.219.{subnet}"
    if _ip("-4", "addr", "show", check=False).stdout.count(f"{prefix}."):
        pytest.skip(f"{prefix}.0/24 is in use on this machine already")
    bridge = f"labbr{tag}"
    made = _ip("link", "add", bridge, "type", "bridge", check=False)
    if made.returncode:
        pytest.skip(f"cannot create a bridge here ({made.stderr.strip()}): no CAP_NET_ADMIN?")
    names, links = {}, []
    try:
        _ip("addr", "add", f"{prefix}.1/24", "dev", bridge)
        _ip("link", "set", bridge, "up")
        for i, role in enumerate(ROLES):
            name, here, there = f"lab-{tag}-{role}", f"lab{tag}{i}a", f"lab{tag}{i}b"
            made = _ip("netns", "add", name, check=False)
            if made.returncode:
                pytest.skip(f"cannot create a network namespace here ({made.stderr.strip()}): no CAP_SYS_ADMIN?")
            names[role] = (name, f"{prefix}.{i + 2}")
            _ip("link", "add", here, "type", "veth", "peer", "name", there)
            links.append(here)
            _ip("link", "set", there, "netns", name)
            _ip("link", "set", here, "master", bridge)
            _ip("link", "set", here, "up")
            _ip("-n", name, "addr", "add", f"{prefix}.{i + 2}/24", "dev", there)
            _ip("-n", name, "link", "set", there, "up")
            _ip("-n", name, "link", "set", "lo", "up")
        yield names
    finally:
        for link in links:
            _ip("link", "del", link, check=False)  # takes its peer in the namespace with it
        _ip("link", "del", bridge, check=False)
        for name, _ in names.values():
            _ip("netns", "del", name, check=False)
        left = _ip("netns", "list", check=False).stdout
        assert not any(name in left for name, _ in names.values())
        assert _ip("link", "show", bridge, check=False).returncode != 0


def _in(namespace: str, *cmd: str, **popen) -> subprocess.Popen:
    """`cmd` run in `namespace`, in a process group of its own (so that it can be stopped whole)."""
    return subprocess.Popen(["ip", "netns", "exec", namespace, *cmd], start_new_session=True, text=True, **popen)


def _stop(proc: subprocess.Popen, sig=signal.SIGINT, timeout_s: float = 15) -> str:
    """Stop a process group as Ctrl-C would (then kill what is left); what it wrote to stderr."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
    try:
        _, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
    return err or ""


@contextlib.contextmanager
def _server(hosts):
    name, ip = hosts["server"]
    port = 8000 + random.randrange(1000)
    url = f"http://{ip}:{port}"
    cmd = [sys.executable, "-m", "labserver", "serve", "--host", ip, "--port", str(port), "--procs", "0"]
    proc = _in(name, *cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, proc.stderr.read()
            with contextlib.suppress(OSError):
                urllib.request.urlopen(url + "/health", timeout=1).close()
                break
            assert time.monotonic() < deadline, f"no answer at {url}"
            time.sleep(0.1)
        yield url, proc
    finally:
        err = _stop(proc)
        assert f"listening on {ip}:{port}" in err and "nothing authenticates" in err  # serve said who may reach it
        assert procs.group(proc.pid) == []


# The lab on the master's host: a sweep whose Locust workers join from the two worker hosts.
MASTER = textwrap.dedent(
    """
    import json, sys
    from labserver.harness.load.run import sweep
    from labserver.harness.servers.remote import RemoteServer
    url, master, duration_s = sys.argv[1], sys.argv[2], int(sys.argv[3])
    sweep_ = json.loads(sys.argv[4])
    rows = sweep(RemoteServer(url), processes=2, master=master, join_timeout_s=60, lesson="tests-netns",
                 **{**sweep_, "duration_s": duration_s})
    keep = ["users", "rps", "predicted_rps", "ratio", "valid", "problems", "master"]
    print(json.dumps(rows[keep].to_dict("records")))
    """
)


def _lab(hosts, url: str, master: str, duration_s: int, plan: dict) -> subprocess.Popen:
    """MASTER run on the master's host: `plan`'s sweep of `duration_s` s runs, its output piped."""
    args = [url, master, str(duration_s), json.dumps(plan)]
    return _in(hosts["master"][0], sys.executable, "-c", MASTER, *args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _workers(hosts, master: str, server_ip: str, runs: int) -> list[subprocess.Popen]:
    cmd = [sys.executable, "-m", "labserver", "worker", "--master", master, "--allow-target", server_ip]
    return [_in(hosts[w][0], *cmd, "--runs", str(runs), stderr=subprocess.PIPE) for w in ("w0", "w1")]


def test_a_sweep_from_two_worker_hosts_measures_what_one_host_on_loopback_does(hosts):
    master_ip = hosts["master"][1]
    server_ip = hosts["server"][1]
    master = f"{master_ip}:{5557 + random.randrange(1000)}"
    started = time.monotonic()
    with _server(hosts) as (url, _):
        workers = _workers(hosts, master, server_ip, runs=len(SWEEP["users"]))  # one Locust run per users value
        lab = _lab(hosts, url, master, SWEEP["duration_s"], SWEEP)
        try:
            out, err = lab.communicate(timeout=180)
        finally:
            worker_errs = [_stop(w, timeout_s=20) if w.poll() is None else w.communicate()[1] for w in workers]
        assert lab.returncode == 0, err
        assert [w.returncode for w in workers] == [0, 0], worker_errs  # the master's end ended them
        took_s = time.monotonic() - started
    across = json.loads(out.strip().splitlines()[-1])
    with LabServer(procs=0) as server:  # the same sweep on loopback: two Locust processes forked here
        alone = sweep(server, processes=2, lesson="tests-netns", **SWEEP).to_dict("records")
    for here, there in zip(alone, across, strict=True):
        print(
            f"{there['users']} users: across namespaces {there['rps']:.1f} req/s, measured/predicted "
            f"{there['ratio']:.3f}; on loopback {here['rps']:.1f}, {here['ratio']:.3f}"
        )
    print(f"across namespaces: sweep of {len(across)} runs took {took_s:.1f} s, server start and stop included")
    for row in (*across, *alone):
        assert row["valid"], row["problems"]
        assert math.isfinite(row["predicted_rps"])
        assert abs(row["ratio"] - 1) <= WITHIN, row
    assert {row["master"] for row in across} == {master}


def test_stopping_the_master_ends_its_workers_and_leaves_nothing_behind(hosts):
    master_ip = hosts["master"][1]
    server_ip = hosts["server"][1]
    master = f"{master_ip}:{5557 + random.randrange(1000)}"
    one = {**SWEEP, "users": [10]}
    with _server(hosts) as (url, _):
        workers = _workers(hosts, master, server_ip, runs=1)
        lab = _lab(hosts, url, master, 60, one)
        try:
            deadline = time.monotonic() + 60
            while "Sending spawn jobs" not in _master_log() and time.monotonic() < deadline:
                time.sleep(0.2)  # until the workers have joined and their users run
            time.sleep(2)
            _stop(lab)  # Ctrl-C, as an instructor stops a run
            stopped = time.monotonic()
            ended = []
            for w in workers:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    w.wait(timeout=20)
                ended.append(w.poll() is not None)
            took_s = time.monotonic() - stopped
        finally:
            errs = [_stop(w, signal.SIGKILL) for w in workers]
        print(f"both workers ended {took_s:.1f} s after the master stopped")
        assert ended == [True, True], errs  # the master's quit ended their Locust, so the run they joined
    for proc in (lab, *workers):
        assert procs.group(proc.pid) == []


def _master_log() -> str:
    """The newest Locust log of the test session's runs (the master's, in the namespace)."""
    from labserver.paths import runs_dir

    logs = sorted(runs_dir().glob(".partial-*/locust.log"), key=lambda p: p.stat().st_mtime)
    return logs[-1].read_text(errors="replace") if logs else ""

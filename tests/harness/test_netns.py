"""A sweep across a real network on one machine: the server in a network namespace of its own, reached over a veth pair.

Needs root (ip netns, veth); skipped with the reason otherwise. Traffic goes only to the address
this test gives the server inside the namespace it creates; the namespace, the veth pair, the
server and its port are all gone at the end.
"""

import contextlib
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from labserver.harness import procs
from labserver.harness.load import sweep
from labserver.harness.remote import RemoteServer

pytestmark = pytest.mark.slow


def _ip(*args, check=True):
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


@pytest.fixture
def namespace():
    """(namespace name, server address) of a new namespace joined to this one by a veth pair; removed at exit."""
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root (ip netns add, veth pairs): not run as root")
    if shutil.which("ip") is None:
        pytest.skip("the `ip` command (iproute2) is not installed")
    tag = f"{os.getpid() % 10000}{random.randrange(100)}"
    name, here, there = f"lab-{tag}", f"lab{tag}a", f"lab{tag}b"
    subnet = random.randrange(1, 255)
    host_ip, server_ip = f"10.219.{subnet}.1", f"10.219.{subnet}.2"
    if _ip("-4", "addr", "show", check=False).stdout.count(f"10.219.{subnet}."):
        pytest.skip(f"10.219.{subnet}.0/30 is in use on this machine already")
    made = _ip("netns", "add", name, check=False)
    if made.returncode:
        pytest.skip(f"cannot create a network namespace here ({made.stderr.strip()}): no CAP_SYS_ADMIN?")
    try:
        veth = _ip("link", "add", here, "type", "veth", "peer", "name", there, check=False)
        if veth.returncode:
            pytest.skip(f"cannot create a veth pair here ({veth.stderr.strip()})")
        _ip("link", "set", there, "netns", name)
        _ip("addr", "add", f"{host_ip}/30", "dev", here)
        _ip("link", "set", here, "up")
        _ip("-n", name, "addr", "add", f"{server_ip}/30", "dev", there)
        _ip("-n", name, "link", "set", there, "up")
        _ip("-n", name, "link", "set", "lo", "up")
        yield name, server_ip
    finally:
        _ip("link", "del", here, check=False)  # takes its peer in the namespace with it
        _ip("netns", "del", name, check=False)
        assert name not in _ip("netns", "list", check=False).stdout
        assert _ip("link", "show", here, check=False).returncode != 0


def test_a_sweep_reaches_a_server_in_another_network_namespace(namespace):
    name, server_ip = namespace
    port = 8000 + random.randrange(1000)
    url = f"http://{server_ip}:{port}"
    cmd = ["ip", "netns", "exec", name, sys.executable, "-m", "labserver", "serve", "--host", server_ip]
    cmd += ["--port", str(port), "--procs", "0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, proc.stderr.read()
            with contextlib.suppress(OSError):
                urllib.request.urlopen(url + "/health", timeout=1).close()
                break
            assert time.monotonic() < deadline, f"no answer at {url}"
            time.sleep(0.1)
        server = RemoteServer(url)
        assert server.same_machine  # another network, the same kernel: its CPU is inside this machine's
        started = time.monotonic()
        rows = sweep(server, ["sequential"], [10], io_ms=50, duration_s=3)
        took_s = time.monotonic() - started
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            _, err = proc.communicate()
    (row,) = rows.to_dict("records")
    print(f"across namespaces: rps {row['rps']:.1f}, predicted {row['predicted_rps']:.1f}, sweep {took_s:.1f} s")
    assert row["valid"], row["problems"]
    assert math.isfinite(row["predicted_rps"]) and math.isfinite(row["server_cpu"])
    assert f"listening on {server_ip}:{port}" in err and "nothing authenticates" in err  # serve said who may reach it
    assert procs.group(proc.pid) == []

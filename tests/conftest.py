"""Shared set-up: a private data folder for the whole session, and a check that slow tests leave no process behind.

LAB_DATA_DIR is set here, at import, before any test imports labserver: run folders and
figures of the test session then never land in the repository's data/.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

import psutil
import pytest

DATA_DIR = Path(tempfile.mkdtemp(prefix="lab-tests-data-"))
# mkdtemp makes it 0700. Run as root, lesson 07's cluster runs as the unprivileged
# concurrency-lab-pg, which could then not enter data/db/ here, and postgres.reachable_root would
# move the cluster to /var/tmp. Others may enter and read, never write (no one can plant a file or
# link); nothing secret lies in it: the cluster's password file is 0600 and its data folder 0700.
DATA_DIR.chmod(0o755)
os.environ["LAB_DATA_DIR"] = str(DATA_DIR)
os.environ["LAB_PROGRESS"] = "0"  # no progress bars in the test log
os.environ.pop("LAB_FIGURES_DIR", None)  # a batch's figures folder must not leak into the tests
os.environ.pop("LAB_CLAIMS_FILE", None)
# Some tests press Ctrl-C on purpose, in this process and in the owner processes it starts. A
# shell that runs `make test &` in the background hands them SIGINT ignored, and Python then
# never raises KeyboardInterrupt (an owner's round ran on for 90 s): restore the usual handler.
signal.signal(signal.SIGINT, signal.default_int_handler)

LAB_WORDS = ("uvicorn", "locust")


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(DATA_DIR, ignore_errors=True)


@pytest.fixture
def data_dir() -> Path:
    """The session's LAB_DATA_DIR."""
    return DATA_DIR


def _is_lab(p: psutil.Process) -> bool:
    try:
        if p.status() == psutil.STATUS_ZOMBIE:
            return False  # dead, only waiting for its parent to reap it: it holds no port and no CPU
        return any(word in " ".join(p.cmdline()) for word in LAB_WORDS)
    except psutil.Error:
        return False


def lab_processes() -> list[psutil.Process]:
    """uvicorn and Locust processes of this test session.

    Children of the test process, and also any process that inherited this session's LAB_DATA_DIR:
    a server started by a papermill kernel is re-parented when the kernel exits, and must be found too.
    """
    me = psutil.Process()
    found = {p.pid: p for p in me.children(recursive=True) if _is_lab(p)}
    for p in psutil.process_iter():
        if p.pid in found or p.pid == me.pid:
            continue
        try:
            if p.environ().get("LAB_DATA_DIR") == str(DATA_DIR) and _is_lab(p):
                found[p.pid] = p
        except psutil.Error:
            continue
    return list(found.values())


def wait_gone(grace_s: float = 10.0) -> list[psutil.Process]:
    """Lab processes still there after `grace_s` (children that got a parent-death signal need a moment)."""
    deadline = time.monotonic() + grace_s
    left = lab_processes()
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = lab_processes()
    return left


@pytest.fixture(autouse=True)
def no_lab_process_left(request):
    """After every slow test: no uvicorn or Locust process of this session may be left."""
    yield
    if request.node.get_closest_marker("slow") is None:
        return
    described = []
    for p in wait_gone():
        try:
            described.append(f"{p.pid}: {' '.join(p.cmdline())[:160]}")
            p.kill()  # clean up, so that one leak does not fail every later test
        except psutil.Error:
            pass
    assert not described, "lab processes left behind:\n" + "\n".join(described)


def pytest_collection_modifyitems(config, items):
    # addopts holds -m "not stress and not browser", but a later -m (say -m "not slow") replaces
    # it: keep those tests out of every run whose marker expression does not ask for them by name
    for marker in ("stress", "browser"):
        if marker in (config.option.markexpr or ""):
            continue
        left_out = [item for item in items if item.get_closest_marker(marker)]
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = [item for item in items if not item.get_closest_marker(marker)]

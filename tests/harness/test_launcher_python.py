"""A server on another Python (lesson 10): checked before it starts, refused if the GIL it runs without is on."""

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from labserver.harness.servers import interpreters
from labserver.harness.servers.interpreters import Interpreter, NoFreeThreadedPython
from labserver.harness.servers.launcher import LabServer
from labserver.harness.servers.server import ServerError
from labserver.paths import ROOT

# What CPython 3.13 prints, in the server's log, when an import turns the GIL back on.
WARNING = (
    "<frozen importlib._bootstrap>:488: RuntimeWarning: The global interpreter lock (GIL) has been enabled to load "
    "module 'foo._bar', which has not declared that it can run safely without the GIL. To override this behavior "
    "and keep the GIL disabled (at your own risk), run with PYTHON_GIL=0 or -Xgil=0."
)
FREE_THREADED = Interpreter(
    Path("/opt/python3.13t"), "3.13.5", free_threaded=True, gil_enabled=False, interpreter_pool=False
)


def test_no_gil_on_the_lab_s_own_python_is_refused_before_any_process_starts(monkeypatch):
    def no_process(*args, **kwargs):
        raise AssertionError("a process started")

    monkeypatch.setattr(subprocess, "Popen", no_process)
    with pytest.raises(ValueError, match=r"free-threaded.*`make python-ft`"):
        LabServer(gil=False)


def test_gil_is_true_or_false():
    with pytest.raises(ValueError, match="gil must be True or False, got 'no'"):
        LabServer(gil="no")
    with pytest.raises(ValueError, match="gil must be True or False"):
        LabServer(gil=0)


def test_a_python_that_does_not_run_is_refused():
    with pytest.raises(ValueError, match="/nonexistent does not run as a Python"):
        LabServer(python="/nonexistent")


def test_the_lab_s_own_python_named_is_still_a_gil_build():
    assert LabServer(python=sys.executable).python.path == Path(sys.executable)
    with pytest.raises(ValueError, match="has the GIL built in"):
        LabServer(python=sys.executable, gil=False)


def test_the_culprit_is_the_module_cpython_names():
    found = interpreters.gil_culprit(f"INFO: started\n{WARNING}\nINFO: ready\n")
    assert found is not None and "foo._bar" in found
    assert interpreters.gil_culprit("INFO: started\nINFO: ready\n") is None


def _stand_in(gil: bool, python: Interpreter = FREE_THREADED) -> LabServer:
    """A LabServer as if made for `python` (nothing is probed or started)."""
    server = LabServer(procs=0)
    server.python = python
    server.settings = dataclasses.replace(server.settings, gil=gil)
    return server


def test_a_free_threaded_python_gets_the_gil_asked_for_and_the_lab_on_its_path():
    env = _stand_in(gil=True)._interpreter_env()
    assert env["PYTHON_GIL"] == "1"
    assert env["PYTHONPATH"].split(":")[0] == str(ROOT)
    assert _stand_in(gil=False)._interpreter_env()["PYTHON_GIL"] == ""  # its default: off
    assert LabServer(procs=0)._interpreter_env() == {}  # the lab's own Python: its environment as it is


def test_a_server_asked_to_run_without_the_gil_that_has_it_is_refused():
    server = _stand_in(gil=False)
    server.get = lambda path, timeout=5.0: {"gil_enabled": True}
    server.log_tail = lambda lines=30: WARNING
    with pytest.raises(ServerError, match=r"with the GIL on, though asked to run without it: importing foo\._bar"):
        server._check_gil()
    server.log_tail = lambda lines=30: "INFO: ready"
    with pytest.raises(ServerError, match="see the log"):
        server._check_gil()
    server.get = lambda path, timeout=5.0: {"gil_enabled": False}
    server._check_gil()  # without it, as asked


def test_a_server_with_the_gil_is_not_asked():
    server = _stand_in(gil=True)

    def never(path, timeout=5.0):
        raise AssertionError("asked /info")

    server.get = never
    server._check_gil()


def _server_python() -> Path:
    """The free-threaded server's python `make python-ft` made; the test is skipped, saying why, without one."""
    try:
        return interpreters.free_threaded_server()
    except NoFreeThreadedPython as e:
        pytest.skip(f"no free-threaded Python with the server's environment (`make python-ft` makes one): {e}")


@pytest.mark.slow
def test_a_free_threaded_server_runs_with_and_without_its_gil():
    python = _server_python()
    version = interpreters.probe(python).version
    with LabServer(python=python, gil=False, procs=0, telemetry=False) as s:
        info = s.info()
        assert (info["python"], info["free_threaded"], info["gil_enabled"]) == (version, True, False)
        assert version.startswith(("3.13", "3.14"))
        assert f"python={version}t, gil=False" in repr(s)
    with LabServer(python=python, gil=True, procs=0, telemetry=False) as s:
        assert (s.info()["free_threaded"], s.info()["gil_enabled"]) == (True, True)


@pytest.mark.slow
def test_a_free_threaded_server_whose_gil_is_on_fails_to_start():
    s = LabServer(python=_server_python(), gil=False, procs=0, telemetry=False)
    asked = s._interpreter_env
    s._interpreter_env = lambda: {**asked(), "PYTHON_GIL": "1"}  # the GIL on, as an extension's import turns it on
    with pytest.raises(ServerError, match="with the GIL on, though asked to run without it: see the log"):
        s.start()
    assert not s.alive


@pytest.mark.slow
@pytest.mark.parametrize("gil", [True, False])
def test_the_interpreter_pool_computes_fib_on_a_free_threaded_server(gil):
    python = _server_python()
    with LabServer(python=python, gil=gil, procs=2, telemetry=False) as s:
        body = s.get("/interpreterpool?tasks=2&cpu_n=15", timeout=60)
    assert (body["pattern"], body["tasks"], body["cpu_n"]) == ("interpreterpool", 2, 15)

"""Where the lab looks for a free-threaded Python (lesson 10), and what it says when it finds none."""

import sys
from pathlib import Path

import pytest

from labserver import config
from labserver.harness.servers import interpreters
from labserver.harness.servers.interpreters import NoFreeThreadedPython


@pytest.fixture
def nowhere(tmp_path, monkeypatch) -> Path:
    """A machine with nothing to find: an empty cache folder, and an empty PATH (no python3.13t, no uv)."""
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv(config.CACHE_DIR.name, str(tmp_path / "cache"))
    monkeypatch.delenv(config.FREETHREADED_PYTHON.name, raising=False)
    return tmp_path


def test_the_lab_s_own_python_is_not_free_threaded():
    lab = interpreters.probe(sys.executable)
    assert lab.path == Path(sys.executable)
    assert lab.version == sys.version.split()[0]
    assert not lab.free_threaded
    assert lab.gil_enabled
    assert lab.label == lab.version  # no "t"


def test_a_file_that_is_no_python_is_refused(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a program\n")
    with pytest.raises(ValueError, match="does not run as a Python"):
        interpreters.probe(text)
    with pytest.raises(ValueError, match="does not run as a Python"):
        interpreters.probe(tmp_path / "missing")


def test_a_program_that_runs_but_is_no_python_is_refused(tmp_path):
    # it runs and prints, but not what a Python answers the probe: refused, never a KeyError
    for said in ("hello", "{}"):
        fake = tmp_path / f"fake-{len(said)}"
        fake.write_text(f"#!/bin/sh\necho '{said}'\n")
        fake.chmod(0o755)
        with pytest.raises(ValueError, match=r"does not run as a Python: it answered"):
            interpreters.probe(fake)


def test_a_python_with_the_gil_named_in_the_setting_is_skipped_and_named(nowhere, monkeypatch):
    monkeypatch.setenv(config.FREETHREADED_PYTHON.name, sys.executable)
    assert interpreters.candidates() == [Path(sys.executable), interpreters.built_path()]
    with pytest.raises(NoFreeThreadedPython) as raised:
        interpreters.find_free_threaded()
    message = str(raised.value)
    assert f"{sys.executable}: Python {sys.version.split()[0]} with the GIL" in message
    assert f"{interpreters.built_path()}: not there" in message  # the other place it tried
    assert str(nowhere / "cache") in message
    assert "`make python-ft`" in message and config.FREETHREADED_PYTHON.name in message


def test_a_path_that_does_not_exist_is_reported_not_there(nowhere, monkeypatch):
    monkeypatch.setenv(config.FREETHREADED_PYTHON.name, str(nowhere / "no-such-python"))
    with pytest.raises(NoFreeThreadedPython, match=r"no-such-python: not there"):
        interpreters.find_free_threaded()


def test_the_server_python_is_refused_where_none_is_found(nowhere):
    with pytest.raises(NoFreeThreadedPython, match="Tried"):
        interpreters.free_threaded_server()


def test_the_cache_is_the_setting_then_xdg_then_home(tmp_path, monkeypatch):
    monkeypatch.setenv(config.CACHE_DIR.name, str(tmp_path / "given"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert interpreters.cache_dir() == tmp_path / "given"
    monkeypatch.delenv(config.CACHE_DIR.name)
    assert interpreters.cache_dir() == tmp_path / "xdg" / "concurrency-lab"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert interpreters.cache_dir() == Path.home() / ".cache" / "concurrency-lab"
    monkeypatch.setenv(config.CACHE_DIR.name, str(tmp_path / "given"))
    assert interpreters.built_path() == tmp_path / "given" / "cpython-3.13.5t" / "bin" / "python3.13t"


def _free_threaded(tmp_path: Path) -> interpreters.Interpreter:
    """An interpreter as the probe would describe a 3.13t (nothing is run)."""
    return interpreters.Interpreter(tmp_path / "python3.13t", "3.13.5", True, False, False)


def test_the_server_environment_changes_with_the_pins(nowhere, monkeypatch):
    pins = nowhere / "requirements.txt"
    pins.write_text("uvicorn==1\n")
    monkeypatch.setattr(interpreters, "SERVER_REQUIREMENTS", pins)
    found = _free_threaded(nowhere)
    first = interpreters.server_env_dir(found)
    assert first.parent == nowhere / "cache"
    assert first.name.startswith("server-3.13.5t-")
    assert interpreters.server_env_dir(found) == first  # the same pins: the same folder
    pins.write_text("uvicorn==2\n")
    assert interpreters.server_env_dir(found) != first


def test_the_server_python_is_there_only_once_installed(nowhere, monkeypatch):
    pins = nowhere / "requirements.txt"
    pins.write_text("uvicorn==1\n")
    monkeypatch.setattr(interpreters, "SERVER_REQUIREMENTS", pins)
    found = _free_threaded(nowhere)
    folder = interpreters.server_env_dir(found)
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "python").touch()
    assert interpreters.server_python(found) is None  # a half-made environment (pip was cut short)
    (folder / ".installed").touch()
    assert interpreters.server_python(found) == folder / "bin" / "python"

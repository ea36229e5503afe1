"""`make python-ft`'s steps that can fail halfway: the source's download and check, a build step, the GIL check.

Nothing here downloads or builds: the network is a stand-in, and the commands are shell one-liners.
"""

import hashlib
import io
import urllib.error
from pathlib import Path

import pytest

from labserver.course import python_ft

SOURCE = b"CPython's source, as the archive serves it"


class Archive:
    """urllib.request.urlopen's stand-in: serves `body` and counts the downloads."""

    def __init__(self, body: bytes = SOURCE, fail_after: int | None = None):
        self.body = body
        self.fail_after = fail_after  # bytes sent before the connection drops; None: it never does
        self.calls = 0

    def __call__(self, url: str, timeout: float) -> io.BytesIO:
        assert url == python_ft.SOURCE_URL
        self.calls += 1
        if self.fail_after is None:
            return io.BytesIO(self.body)
        return _Dropping(self.body[: self.fail_after])


class _Dropping(io.BytesIO):
    def read(self, size: int | None = -1) -> bytes:
        sent = super().read(size)
        if not sent:
            raise ConnectionResetError("the connection dropped")
        return sent


@pytest.fixture
def archive(monkeypatch) -> Archive:
    served = Archive()
    monkeypatch.setattr(python_ft.urllib.request, "urlopen", served)
    monkeypatch.setattr(python_ft, "SOURCE_SHA256", hashlib.sha256(SOURCE).hexdigest())
    return served


def _left(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir())


def test_the_checked_source_is_kept_and_downloaded_once(tmp_path, archive):
    tarball = python_ft.fetch(tmp_path)
    assert tarball == tmp_path / Path(python_ft.SOURCE_URL).name
    assert tarball.read_bytes() == SOURCE
    assert python_ft.fetch(tmp_path) == tarball
    assert archive.calls == 1
    assert _left(tmp_path) == [tarball.name]  # no .part beside it


def test_other_bytes_are_refused_and_nothing_is_left(tmp_path, archive):
    archive.body = b"something else"
    with pytest.raises(SystemExit, match="SHA-256"):
        python_ft.fetch(tmp_path)
    assert _left(tmp_path) == []


def test_a_kept_tarball_that_fails_its_check_is_downloaded_again(tmp_path, archive):
    (tmp_path / Path(python_ft.SOURCE_URL).name).write_bytes(b"cut short")
    assert python_ft.fetch(tmp_path).read_bytes() == SOURCE
    assert archive.calls == 1


def test_a_download_that_fails_says_so_and_leaves_nothing(tmp_path, monkeypatch, archive):
    def unreachable(url, timeout):
        raise urllib.error.URLError("no route to host")

    monkeypatch.setattr(python_ft.urllib.request, "urlopen", unreachable)
    with pytest.raises(SystemExit, match=r"could not download.*no route to host"):
        python_ft.fetch(tmp_path)
    assert _left(tmp_path) == []
    cut = Archive(fail_after=10)
    monkeypatch.setattr(python_ft.urllib.request, "urlopen", cut)
    with pytest.raises(SystemExit, match=r"could not download.*dropped"):
        python_ft.fetch(tmp_path)
    assert cut.calls == 1
    assert _left(tmp_path) == []  # no .part for the next run to trust


def test_a_failed_step_shows_the_tail_of_its_log(tmp_path):
    log = tmp_path / "build.log"
    log.write_text("earlier steps\n")
    python_ft.run(["sh", "-c", "echo configured"], log)
    with pytest.raises(SystemExit) as failed:
        python_ft.run(["sh", "-c", "echo 'error: no compiler' >&2; exit 3"], log)
    message = str(failed.value)
    assert "failed (exit 3)" in message and str(log) in message
    assert message.rstrip().endswith("error: no compiler")
    assert "configured" in message  # the tail holds what came before
    assert "earlier steps" in log.read_text()  # appended, never overwritten


def _fake_python(tmp_path: Path, said: str, warned: str = "") -> Path:
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\ncat >&2 <<'EOF'\n{warned}\nEOF\necho {said}\n")
    python.chmod(0o755)
    return python


def test_an_extension_that_turns_the_gil_back_on_is_reported(tmp_path):
    warning = "RuntimeWarning: The global interpreter lock (GIL) has been enabled to load module 'foo._bar'"
    assert python_ft.gil_after_imports(_fake_python(tmp_path, "False")) is None
    assert "'foo._bar'" in python_ft.gil_after_imports(_fake_python(tmp_path, "True", warning))


def test_make_python_ft_fails_where_the_gil_comes_back(tmp_path, monkeypatch, capsys):
    found = python_ft.Interpreter(tmp_path / "python3.13t", "3.13.5", True, False, False)
    monkeypatch.setattr(python_ft, "interpreter", lambda: found)
    monkeypatch.setattr(python_ft, "server_env", lambda interpreter: tmp_path / "python")
    monkeypatch.setattr(python_ft.interpreters, "probe", lambda path: found)
    monkeypatch.setattr(python_ft, "gil_after_imports", lambda python: "loading 'foo._bar' turned it on")
    with pytest.raises(SystemExit) as failed:
        python_ft.main()
    assert failed.value.code == 1
    assert "foo._bar" in capsys.readouterr().out


class _Finder:
    """interpreters.find_free_threaded's stand-in: nothing at first, then what uv installed."""

    def __init__(self, after: python_ft.Interpreter):
        self.after, self.calls = after, 0

    def __call__(self) -> python_ft.Interpreter:
        self.calls += 1
        if self.calls == 1:
            raise python_ft.NoFreeThreadedPython("none on PATH")
        return self.after


@pytest.mark.parametrize("uv_exit", [0, 1], ids=["uv installs it", "uv cannot"])
def test_uv_installs_3_14t_where_it_can_else_the_build_runs(tmp_path, monkeypatch, uv_exit):
    installed = python_ft.Interpreter(tmp_path / "python3.14t", "3.14.0", True, False, False)
    built = python_ft.Interpreter(tmp_path / "python3.13t", "3.13.5", True, False, False)
    commands = []
    monkeypatch.setattr(python_ft.interpreters, "find_free_threaded", _Finder(installed))
    monkeypatch.setattr(python_ft.shutil, "which", lambda name: "/usr/bin/uv" if name == "uv" else None)
    monkeypatch.setattr(python_ft.subprocess, "run", lambda command, **kw: commands.append(command) or _Exit(uv_exit))
    monkeypatch.setattr(python_ft, "build", lambda: built)
    assert python_ft.interpreter() == (installed if uv_exit == 0 else built)
    assert commands == [["uv", "python", "install", "3.14t"]]


class _Exit:
    def __init__(self, code: int):
        self.returncode = code

"""`python -m labserver serve`: this machine only unless --host says otherwise, and then it says so."""

import os
from pathlib import Path

import pytest
import uvicorn

from labserver import __main__ as cli


@pytest.fixture
def ran(monkeypatch):
    """uvicorn.run replaced by a note of what it was given; the environment is this test's copy."""
    monkeypatch.setattr(os, "environ", dict(os.environ))
    calls = []

    def run(app, **kwargs):
        telemetry = Path(os.environ["LAB_TELEMETRY_DIR"])
        calls.append({**kwargs, "telemetry": telemetry, "folder_existed": telemetry.parent.is_dir()})

    monkeypatch.setattr(uvicorn, "run", run)
    return calls


def test_it_listens_on_loopback_by_default_and_says_nothing(ran, capsys):
    assert cli.main(["serve", "--port", "8123", "--procs", "0"]) == 0
    (call,) = ran
    assert (call["host"], call["port"]) == ("127.0.0.1", 8123)
    assert capsys.readouterr().err == ""


def test_another_address_is_said_in_one_line(ran, capsys):
    cli.main(["serve", "--host", "0.0.0.0", "--port", "8123", "--procs", "0"])
    assert ran[0]["host"] == "0.0.0.0"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "every interface of this machine, port 8123" in err[0] and "nothing authenticates" in err[0]


def test_workers_sample_into_a_folder_of_the_run_removed_at_exit(ran):
    cli.main(["serve", "--port", "8123", "--workers", "2", "--procs", "0", "--queue-limit", "5"])
    (call,) = ran
    assert call["workers"] == 2 and call["folder_existed"]
    assert not call["telemetry"].parent.exists()
    assert os.environ["LAB_QUEUE_LIMIT"] == "5"


def test_an_address_this_machine_does_not_have_is_refused(ran, capsys):
    with pytest.raises(SystemExit):
        cli.main(["serve", "--host", "192.0.2.1", "--procs", "0"])  # TEST-NET-1: never this machine's
    assert "cannot listen on --host 192.0.2.1" in capsys.readouterr().err
    assert ran == []

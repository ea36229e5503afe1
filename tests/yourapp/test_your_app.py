import json
import subprocess
import sys

import pytest

from labserver import __main__ as cli
from labserver.theory.demand import OneUser
from labserver.yourapp import measure


def test_the_sweep_doubles_the_users_up_to_its_most():
    assert measure.users_steps(1) == [1]
    assert measure.users_steps(8) == [1, 2, 4, 8]
    assert measure.users_steps(50) == [1, 2, 4, 8, 16, 32, 50]


def test_a_route_waits_for_what_its_time_alone_does_not_compute():
    one = OneUser(service_ms=51.6, loop_ms=0.5, threads_ms=0.2, pool_ms=0.0, requests=1)
    assert measure.io_ms(one) == 51
    assert measure.io_ms(OneUser(service_ms=0.4, loop_ms=0.5, threads_ms=0.0, pool_ms=0.0, requests=1)) == 0
    assert measure.stand_in("thread pool") == "threadpool"
    assert measure.stand_in(None) == "sequential"  # not a Starlette app: read as awaited


def test_the_ceiling_held_to_is_the_lower_of_the_predicted_and_the_measured():
    v = measure.Verdict("GET /a", "a", "event loop", 50.0, 0.5, 0.0, predicted_rps=900.0, bound="users")
    assert v.ceiling() == 900.0
    v.runs = [{"rps": 700.0, "valid": True}, {"rps": 990.0, "valid": False}]
    assert v.ceiling() == 700.0  # the invalid run measured something else


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["main", "FETCH /x"], "one of GET"),
        (["main:app", "GET /x", "--users", "0"], "--users must be between 1"),
        (["main:app", "GET /x", "--threads", "0"], "threads"),
        (["main:app", "GET /x", "--at-least", "GET /y=3"], "not one of the routes"),
        (["main", "GET /x"], "module:attribute"),
    ],
)
def test_bad_input_fails_before_anything_starts(argv, says, capsys, monkeypatch):
    monkeypatch.setattr(measure, "AppServer", None)  # starting one would raise TypeError, not exit 2
    with pytest.raises(SystemExit) as exit:
        cli.main(["measure", *argv])
    assert exit.value.code == 2
    assert says in capsys.readouterr().err


@pytest.mark.slow
def test_the_shipped_example_is_predicted_then_measured(tmp_path):
    """The real command on the shipped example: a `def` route that blocks 50 ms, priced, predicted and swept."""
    cmd = [sys.executable, "-m", "labserver", "measure", "labserver.yourapp.example:app", "GET /report"]
    cmd += ["--users", "4", "--duration-s", "2", "--json", "--at-least", "GET /report=100000"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # under its --at-least: a CI can stop a change on it
    [verdict] = json.loads(done.stdout)  # stdout holds the verdicts alone
    assert verdict["runs_on"] == "thread pool" and verdict["endpoint"] == "report"
    assert verdict["service_ms"] >= 50  # S holds the 50 ms the thread blocks
    assert [r["users"] for r in verdict["runs"]] == [1, 2, 4][: len(verdict["runs"])]
    assert all(r["predicted_rps"] > 0 and r["run"] for r in verdict["runs"])
    assert "under --at-least 100,000" in done.stderr


@pytest.mark.slow
def test_an_app_that_will_not_import_ends_with_its_log(tmp_path):
    (tmp_path / "broken.py").write_text("raise RuntimeError('the app cannot start')\n")
    cmd = [sys.executable, "-m", "labserver", "measure", "broken:app", "GET /x", "--predict-only"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2
    assert "the app cannot start" in done.stderr


@pytest.mark.slow
def test_a_route_that_answers_an_error_is_not_priced(tmp_path):
    cmd = [sys.executable, "-m", "labserver", "measure", "labserver.yourapp.example:app", "GET /nowhere"]
    done = subprocess.run([*cmd, "--predict-only"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2
    assert "GET /nowhere answered 404" in done.stderr

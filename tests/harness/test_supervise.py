"""The supervisor of a load generator's process: watched to its end, cut short when a server dies or
its time is up, and always stopped, with the pause watcher beside it, whatever cut it short."""

import sys
import time
from types import SimpleNamespace

import psutil
import pytest

from labserver.harness.processes import pauses
from labserver.harness.processes.supervise import Status, Watched, supervised, until_exit


class FakeProc:
    """A process that exits after `rounds` waits; each wait moves the fake clock on by its timeout."""

    def __init__(self, clock: list[float], rounds: int):
        self.clock, self.rounds = clock, rounds

    def poll(self):
        return None if self.rounds > 0 else 0

    def wait(self, timeout):
        self.rounds -= 1
        self.clock[0] += timeout


def test_a_process_that_ends_is_ok_and_each_round_ticks():
    clock, ticks = [0.0], []
    run = Watched(FakeProc(clock, rounds=8))
    until_exit(
        run, [SimpleNamespace(alive=True)], deadline_s=60, tick=lambda: ticks.append(clock[0]), clock=lambda: clock[0]
    )
    assert (run.status, run.ended) == ("ok", None)
    assert ticks == [0.25 * i for i in range(8)]


def test_a_run_is_cut_short_when_its_server_dies():
    clock = [0.0]
    server = SimpleNamespace(alive=True)

    def tick():
        server.alive = clock[0] < 1.0

    run = Watched(FakeProc(clock, rounds=100))
    until_exit(run, [server], deadline_s=60, tick=tick, clock=lambda: clock[0])
    assert run.status == "server died" and run.ended is not None
    assert run.proc.rounds == 100 - 4  # it stopped at the first round that found the server gone


def test_a_run_is_cut_short_once_its_time_is_up():
    clock = [0.0]
    run = Watched(FakeProc(clock, rounds=100))
    until_exit(run, [SimpleNamespace(alive=True)], deadline_s=2.0, every_s=0.5, clock=lambda: clock[0])
    assert run.status == "timed out" and clock[0] == pytest.approx(2.5)


def test_an_interrupt_is_recorded_and_both_processes_are_stopped(tmp_path):
    run = Watched()
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    mine = psutil.Process()
    watched = supervised(run, sleeper, tmp_path / "log", pauses_file=tmp_path / pauses.FILE, lasts_s=60, grace_s=1)
    with pytest.raises(KeyboardInterrupt), watched:
        assert run.proc.poll() is None
        raise KeyboardInterrupt
    assert run.status == "interrupted" and run.ended <= time.time()
    assert run.proc.poll() is not None
    assert not [
        p for p in mine.children(recursive=True) if "labserver.harness.processes.pauses" in " ".join(p.cmdline())
    ]


def test_any_other_exception_is_a_failure_named_by_its_type(tmp_path):
    run = Watched()
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    watched = supervised(run, sleeper, tmp_path / "log", pauses_file=tmp_path / pauses.FILE, lasts_s=60, grace_s=1)
    with pytest.raises(ZeroDivisionError), watched:
        1 / 0  # noqa: B018
    assert run.status is Status.FAILED and run.label == "failed (ZeroDivisionError)"
    assert run.proc.poll() is not None


def test_a_status_is_written_in_the_words_a_run_folder_has_always_had():
    # rows already on disk name these: a new spelling would split one status in two
    assert list(Status) == [
        "ok", "interrupted", "failed", "server died", "timed out", "too few Locust workers", "locust failed",
        "client failed",
    ]  # fmt: skip
    run = Watched()
    assert run.label == "ok"
    run.stop(Status.TOO_FEW_WORKERS, "joined in 60 s")
    assert run.label == "too few Locust workers joined in 60 s" and run.ended is not None

"""The machine's pauses: a watcher process that writes down how late it woke, and the windows that read it."""

import math
import os
import signal
import subprocess
import time

import pytest

from labserver.harness.processes import pauses


def test_a_watcher_held_still_writes_down_how_late_it_woke(tmp_path):
    out = tmp_path / pauses.FILE
    watcher = subprocess.Popen(pauses.command(out, 3.0))
    try:
        time.sleep(0.5)  # its interpreter has started and sleeps in its loop
        os.kill(watcher.pid, signal.SIGSTOP)  # what a host does to a whole virtual machine, to one process
        time.sleep(0.3)
        os.kill(watcher.pid, signal.SIGCONT)
        assert watcher.wait(timeout=30) == 0  # and it stops by itself
    finally:
        watcher.kill()
    found = pauses.read(out)
    assert found, out.read_text()
    longest = max(end - start for start, end in found)
    assert longest >= 0.25  # it was held for 0.3 s; a busy machine only makes it later


def test_a_file_it_never_wrote_holds_no_pauses(tmp_path):
    assert pauses.read(tmp_path / "missing.log") == []


def test_a_line_cut_short_is_left_out(tmp_path):
    out = tmp_path / pauses.FILE
    out.write_text("100.500 300.0\n101.2\nTraceback (most recent call last):\n")
    assert pauses.read(out) == [(pytest.approx(100.2), 100.5)]


@pytest.mark.parametrize(
    ("window", "longest"),
    [
        ((100.0, 101.0), 300.0),  # inside
        ((100.4, 101.0), 300.0),  # overlapping its end
        ((99.0, 100.3), 300.0),  # overlapping its start
        ((100.6, 102.0), 50.0),  # only the short one
        ((103.0, 104.0), 0.0),  # none
    ],
)
def test_a_window_reads_the_longest_pause_that_overlaps_it(window, longest):
    found = [(100.2, 100.5), (101.45, 101.5)]
    assert pauses.longest_ms(found, *window) == pytest.approx(longest)


def test_no_window_reads_nan():
    assert math.isnan(pauses.longest_ms([(1.0, 2.0)], math.nan, math.nan))


def test_a_pause_long_enough_is_a_problem_that_says_how_long():
    assert "stopped for 400 ms" in pauses.problem(400.0)
    assert pauses.problem(pauses.PAUSE_MS - 1) is None
    assert pauses.problem(math.nan) is None  # not watched: no verdict on it


def test_a_run_measured_again_says_which_why_and_that_it_is_kept():
    said = pauses.again("sequential at 10 users", {"problems": pauses.problem(400.0), "run_id": "r-1"})
    assert said.startswith("sequential at 10 users: the machine stopped for 400 ms")
    assert "(r-1, kept, marked invalid)" in said and "measuring it again" in said


def test_cpu_taken_by_the_host_is_a_note_from_a_tenth_of_a_core():
    assert "0.30 of a core" in pauses.stolen_note(0.3)
    assert pauses.stolen_note(0.02) is None
    assert pauses.stolen_note(math.nan) is None  # not measured: nothing to say

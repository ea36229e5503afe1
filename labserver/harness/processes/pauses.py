"""When the whole machine stopped or lost CPU to its host: a watcher that sleeps 10 ms at a time, and steal time.

A virtual machine can be descheduled by its host: every process in it, the server, Locust and
the clock readers alike, stops for a few hundred milliseconds and carries on as if nothing
happened. A closed-loop run then measures the pause: all its users get one slow request at the
same moment, while no process of the lab is busy, and the run falls well short of its twins.
Nothing inside the lab sees it coming, so a process of its own watches: it asks for 10 ms of
sleep over and over and writes down each time it woke more than RECORD_MS late. It is a process,
not a thread, so that no GIL held by the notebook (a chart being drawn) reads as a pause; it
sleeps nearly all the time, so that it takes next to no CPU from the run it watches.

A wake PAUSE_MS late or later is a pause: the scheduler wakes a sleeper well within that even on
two busy cores and on a host busy with other guests, and a CPU quota's throttling, the one other
way it could be held back that long, is counted apart (MachineMeter.throttled_s). What the
watcher costs and how late it wakes: docs/evidence.md.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

# A host can also take part of the machine's CPUs for a while, for its other guests, without
# stopping it: steal time (/proc/stat). Each run records it (`stolen_cpu`); from this much on, its
# row says so. It is a note, not a verdict: how much it costs a run depends on what the run asks of
# the CPUs (docs/evidence.md).
STOLEN_CORES = 0.1
FILE = "pauses.log"  # in a plan's first run folder, beside locust.log
TICK_S = 0.01
RECORD_MS = 30.0  # every wake this late is written down, so that a run's manifest says how late its worst one was
PAUSE_MS = 150.0  # a run with a wake this late measured the machine's pause, not the server


def watch(out: Path, for_s: float) -> None:
    """Sleep TICK_S at a time for `for_s` seconds, appending "<end> <late_ms>" for each late wake to `out`.

    `end` is the wall clock (epoch s) when it woke. It stops by itself at the end; started by
    procs.spawn, it also dies with its owner.
    """
    deadline = time.monotonic() + for_s
    with open(out, "a", buffering=1) as f:  # a line at a time: the reader may come while it runs
        while time.monotonic() < deadline:
            asked = time.monotonic()
            time.sleep(TICK_S)
            late_ms = (time.monotonic() - asked - TICK_S) * 1000
            if late_ms >= RECORD_MS:
                f.write(f"{time.time():.3f} {late_ms:.1f}\n")


def read(path: Path) -> list[tuple[float, float]]:
    """The late wakes written to `path`: (start, end) of each, epoch seconds; none if it is missing."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        try:
            end, late_ms = map(float, line.split())
        except ValueError:
            continue  # a line cut short as the watcher was stopped
        found.append((end - late_ms / 1000, end))
    return found


def longest_ms(pauses: list[tuple[float, float]], t0: float, t1: float) -> float:
    """The longest late wake overlapping [t0, t1] in ms; 0 if none was, NaN for a window that is not one."""
    if math.isnan(t0) or math.isnan(t1):
        return math.nan
    inside = [(end - start) * 1000 for start, end in pauses if start < t1 and end > t0]
    return max(inside, default=0.0)


def problem(paused_ms: float) -> str | None:
    """Why a run with this longest pause in its window is no measurement; None when it is one (NaN: not watched)."""
    if not paused_ms >= PAUSE_MS:
        return None
    return (
        f"the machine stopped for {paused_ms:.0f} ms in the window (a process of the lab's that sleeps"
        f" {TICK_S * 1000:.0f} ms at a time woke that late): every user waited for it, so the run measured the pause"
    )


def again(what: str, row: dict) -> str:
    """What a run that measured a pause says as it is measured again: which run, why, and where the kept one is."""
    kept = f"({row['run_id']}, kept, marked invalid)"
    return f"{what}: {row['problems']} {kept}; measuring it again once the machine is quiet"


def stolen_note(stolen_cores: float) -> str | None:
    """What a reader must know of a run whose machine lost this much CPU to its host; None below it (NaN: unknown)."""
    if not stolen_cores >= STOLEN_CORES:
        return None
    return (
        f"the host took {stolen_cores:.2f} of a core from this machine in the window (steal time): the run"
        " shared its CPUs with the host's other guests"
    )


def command(out: Path, for_s: float) -> list[str]:
    """The watcher's command line, for procs.spawn."""
    return [sys.executable, "-m", "labserver.harness.processes.pauses", str(out), f"{for_s:g}"]


if __name__ == "__main__":  # python -m labserver.harness.processes.pauses OUT FOR_S
    watch(Path(sys.argv[1]), float(sys.argv[2]))

"""A plan as it runs: what each run has measured so far, handed to a watcher about once a second.

While a plan runs, Locust appends every request to its live file once a second
(locustfiles/pattern.py, --live-file; the lines are labserver/protocol.py's). `Live` reads only
the bytes added since its last read, tallies them per run and hands a `Snapshot` (plain numbers)
to its watcher; while a master waits for its workers, its events say how many came. The harness
draws nothing: in a notebook the watcher is the chart labserver/__init__.py registers
(harness/notebook.py, charts/live.py); anywhere else there is none unless run_plan is given one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import itertools
import math
import os
import time
import warnings
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from labserver import protocol
from labserver.harness.plan import stage_at

if TYPE_CHECKING:
    from labserver.harness.plan import Stage
    from labserver.theory.model import Prediction

EVERY_S = 1.0
# LAB_LIVE_EVERY_S sets another beat; "inf" draws a plan's first and last frames only. `make figures`
# draws one a second, as a notebook does (`make bench` measures what that costs the busiest run).
LIVE_EVERY_ENV = "LAB_LIVE_EVERY_S"


def live_every_s() -> float:
    """How often the live view draws: LAB_LIVE_EVERY_S seconds, else once a second."""
    value = os.environ.get(LIVE_EVERY_ENV, "")
    try:
        every = float(value) if value else EVERY_S
    except ValueError:
        raise ValueError(f"{LIVE_EVERY_ENV} must be a number of seconds above 0 (or inf), got {value!r}") from None
    if not every > 0:
        raise ValueError(f"{LIVE_EVERY_ENV} must be a number of seconds above 0 (or inf), got {value!r}")
    return every


@dataclass(frozen=True)
class RunSoFar:
    """One run of a plan as measured so far (or, once `final`, as collect() measured it)."""

    pattern: str
    users: int
    rps: float  # NaN until replies come after the warm-up
    p95_ms: float
    predicted_rps: float
    predicted_ms: float  # the model's mean latency
    requests: int = 0
    final: bool = False  # the run's RunResult figures, not the live estimate
    valid: bool = True


@dataclass(frozen=True)
class Snapshot:
    """A plan at one moment: its runs so far (the finished ones, then the current one) and where it is."""

    runs: tuple[RunSoFar, ...]
    stage: int  # the current run, 0-based
    stages: int
    elapsed_s: float  # into the current run
    planned_s: float  # the current run's duration_s
    started: bool = True  # False while Locust is still starting (no request sent yet)
    done: bool = False  # the plan is over: `runs` hold their final figures
    waiting: str | None = None  # while a master waits for its workers: "k of n joined"


def waiting(locust: protocol.LocustState, processes: int) -> str | None:
    """ "k of n joined" while Locust's master waits for its workers, None once the test started (or it gave up)."""
    if locust.started or locust.gave_up:
        return None
    return f"{locust.joined} of {processes} joined"


Watcher = Callable[[Snapshot], Any]


class Every:
    """Due at most once every `period_s` of `clock`, on a steady beat (a late tick does not shift the next)."""

    def __init__(self, period_s: float | None = None, clock: Callable[[], float] = time.monotonic):
        self.period_s = live_every_s() if period_s is None else period_s
        self.clock, self.next = clock, -math.inf

    def due(self) -> bool:
        now = self.clock()
        if now < self.next:
            return False
        beat = self.next + self.period_s
        self.next = beat if now < beat else now + self.period_s
        return True


class Tail:
    """The complete lines appended to the files `pattern` matches in `folder` since the last read."""

    def __init__(self, folder: Path | str, pattern: str = protocol.LIVE_GLOB):
        self.folder = Path(folder)
        self.pattern = str(self.folder / pattern)
        self.offsets: dict[str, int] = {}
        self.partial: dict[str, bytes] = {}

    def lines(self) -> list[str]:
        """The new complete lines, file by file; a line still being written waits for the next read."""
        out = []
        for path in sorted(glob.glob(self.pattern)):
            try:
                with open(path, "rb") as f:
                    f.seek(self.offsets.get(path, 0))
                    data = f.read()
            except OSError:
                continue
            self.offsets[path] = self.offsets.get(path, 0) + len(data)
            text = self.partial.pop(path, b"") + data
            complete, _, rest = text.rpartition(b"\n")
            if rest:
                self.partial[path] = rest
            out += [line for line in complete.decode(errors="replace").splitlines() if line]
        return out


class _Tally:
    """One run's requests after its warm-up: their latencies, and the last reply's time."""

    def __init__(self):
        self.ms = array("d")
        self.last = -math.inf
        self._p95 = (0, math.nan)  # (requests, p95) when last computed: a finished run is computed once

    def p95(self) -> float:
        if self._p95[0] != len(self.ms):
            self._p95 = (len(self.ms), float(np.percentile(np.frombuffer(self.ms), 95)) if self.ms else math.nan)
        return self._p95[1]


class PlanSoFar:
    """Each run's throughput and p95 latency so far, from the lines Locust streams (see the top of this file).

    A request belongs to the run (stage) in which it was sent; like collect(), a run counts the
    replies after its warm-up (`warmup_s` after it began) and up to its end. Its throughput is
    their count over the time from the warm-up's end to the last of them.
    """

    def __init__(self, stages: list[Stage], predictions: list[Prediction], warmup_s: float = 1.0):
        self.stages, self.predictions, self.warmup_s = stages, predictions, warmup_s
        self.begins = [0.0, *itertools.accumulate(s.duration_s for s in stages)]
        self.t0: float | None = None
        self.tallies = [_Tally() for _ in stages]

    def feed(self, lines: list[str]) -> None:
        """Tally Locust's live lines: each process's start first, then its requests."""
        for line in lines:
            got = protocol.read_live(line)
            if isinstance(got, float):
                self.t0 = got if self.t0 is None else min(self.t0, got)
                continue
            if got is None or self.t0 is None or not 0 <= got.stage < len(self.stages):
                continue  # not a line of ours, or before any start
            stage = got.stage
            if self.t0 + self.begins[stage] + self.warmup_s <= got.end <= self.t0 + self.begins[stage + 1]:
                tally = self.tallies[stage]
                tally.ms.append(got.ms)
                tally.last = max(tally.last, got.end)

    def run(self, i: int) -> RunSoFar:
        s, p, tally = self.stages[i], self.predictions[i], self.tallies[i]
        cut = (self.t0 or 0.0) + self.begins[i] + self.warmup_s
        span = tally.last - cut
        rps = len(tally.ms) / span if tally.ms and span > 0 else math.nan
        return RunSoFar(s.pattern, s.users, rps, tally.p95(), p.rps, p.latency_ms, len(tally.ms))

    def snapshot(self, now: float) -> Snapshot:
        """The plan at `now` (epoch seconds, the records' clock)."""
        if self.t0 is None:  # Locust is starting: no request yet
            return Snapshot((self.run(0),), 0, len(self.stages), 0.0, self.stages[0].duration_s, started=False)
        elapsed = now - self.t0
        i = stage_at(self.stages, elapsed)
        into = min(max(elapsed - self.begins[i], 0.0), self.stages[i].duration_s)
        runs = tuple(self.run(k) for k in range(i + 1))
        return Snapshot(runs, i, len(self.stages), into, self.stages[i].duration_s)


def final(rows: list[dict]) -> tuple[RunSoFar, ...]:
    """The runs as their RunResults' rows give them (collect's figures and prediction)."""
    return tuple(
        RunSoFar(
            r["pattern"],
            r["users"],
            r["rps"],
            r["p95_ms"],
            r["predicted_rps"],
            r["predicted_ms"],
            r["requests"],
            final=True,
            valid=bool(r["valid"]),
        )
        for r in rows
    )


class Live:
    """A plan's watcher, fed about once a second with what the runs measured so far.

    `tick()` is called often (every loop of load._watch); it reads and draws only when due.
    A watcher that raises is dropped with a warning: a chart must never end a measurement.
    """

    def __init__(
        self,
        watcher: Watcher,
        folder: Path | str,
        plan: PlanSoFar,
        every: Every | None = None,
        wall: Callable[[], float] = time.time,
        joining: int = 0,
    ):
        self.watcher: Watcher | None = watcher
        self.tail, self.plan, self.every, self.wall = Tail(folder), plan, every or Every(), wall
        self.joining = joining  # workers a master waits for (its events say how many came): 0, none
        self.events = protocol.Events(Path(folder) / protocol.EVENTS_FILE)

    def tick(self) -> None:
        if self.watcher is not None and self.every.due():
            self._show(self._now)

    def _now(self) -> Snapshot:
        self.plan.feed(self.tail.lines())
        now = self.plan.snapshot(self.wall())
        if self.joining and not now.started:
            now = dataclasses.replace(now, waiting=waiting(self.events.state(), self.joining))
        return now

    def stop(self) -> None:
        """Once Locust is gone: read what it streamed last, then remove the live files (collect reads its records)."""
        self.plan.feed(self.tail.lines())
        for path in glob.glob(str(Path(self.tail.folder) / protocol.LIVE_GLOB)):
            with contextlib.suppress(OSError):
                os.remove(path)

    def finish(self, rows: list[dict]) -> None:
        """The last frame: the runs saved, with collect's figures (or, if none was saved, as far as they came)."""
        if self.watcher is not None:
            self._show(lambda: self._last(rows))

    def _last(self, rows: list[dict]) -> Snapshot:
        if rows:
            runs = final(rows)
            s = self.plan.stages[len(runs) - 1]
            return Snapshot(runs, len(runs) - 1, len(self.plan.stages), s.duration_s, s.duration_s, done=True)
        now = self.plan.snapshot(self.wall())
        return Snapshot(now.runs, now.stage, now.stages, now.elapsed_s, now.planned_s, now.started, done=True)

    def _show(self, snapshot: Callable[[], Snapshot]) -> None:
        assert self.watcher is not None  # the callers check
        try:
            self.watcher(snapshot())
        except Exception as e:
            warnings.warn(f"the live view failed and is off for this plan: {e!r}", RuntimeWarning, stacklevel=3)
            self.watcher = None

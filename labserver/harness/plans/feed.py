"""A plan as it runs: what each run has measured so far, handed to a watcher about once a second.

While a plan runs, Locust appends every request to its live file once a second
(locustfiles/pattern.py, --live-file; the binary records are labserver/protocol.py's). `Live`
reads only the records added since its last read, in bulk with numpy, tallies them per run and
hands a `Snapshot` (plain numbers) to its watcher; while a master waits for its workers, its
events say how many came. The harness draws nothing: in a notebook the watcher is the chart
labserver/__init__.py registers (harness/plans/notebook.py, charts/live.py); anywhere else there is none
unless run_plan is given one.
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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from labserver import config, protocol
from labserver.harness.plans.plan import stage_at
from labserver.labels import work_label

if TYPE_CHECKING:
    from labserver.harness.plans.plan import Stage
    from labserver.theory.model import Prediction

# The live view draws once a second unless LAB_LIVE_EVERY_S (config.LIVE_EVERY_S) sets another beat;
# "inf" draws a plan's first and last frames only. `make figures` draws one a second, as a notebook
# does (`make bench` measures what that costs the busiest run).
EVERY_S = config.LIVE_EVERY_S.default


@dataclass(frozen=True)
class RunSoFar:
    """One run of a plan as measured so far (or, once `final`, as collect() measured it)."""

    pattern: str
    users: int
    rps: float  # NaN until replies come after the warm-up
    mean_ms: float  # its mean latency: what the model predicts (predicted_ms)
    predicted_rps: float
    predicted_ms: float  # the model's mean latency
    requests: int = 0
    final: bool = False  # the run's RunResult figures, not the live estimate
    valid: bool = True
    rate: float = 0.0  # an open loop's arrivals a second (its one user sends them); 0: a closed loop of `users`
    work: str = ""  # its work as a chart names it (labels.work_label): what sets apart runs of one load

    @property
    def load(self) -> str:
        """The run's load as a chart names it: its users, or an open loop's rate."""
        return f"{self.rate:g}/s" if self.rate else str(self.users)


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
        self.period_s = config.LIVE_EVERY_S.read() if period_s is None else period_s
        self.clock, self.next = clock, -math.inf

    def due(self) -> bool:
        now = self.clock()
        if now < self.next:
            return False
        beat = self.next + self.period_s
        self.next = beat if now < beat else now + self.period_s
        return True


# Locust's live records, as numpy reads them in bulk: the fields labserver/protocol.py declares
LIVE_RECORD = np.dtype([(name, "<" + code) for name, code in protocol.LIVE_FIELDS])


class Tail:
    """The whole live records appended to the files `pattern` matches in `folder` since the last read."""

    def __init__(self, folder: Path | str, pattern: str = protocol.LIVE_GLOB):
        self.folder = Path(folder)
        self.pattern = str(self.folder / pattern)
        self.offsets: dict[str, int] = {}

    def records(self) -> np.ndarray:
        """The new records, file by file, as one array of LIVE_RECORD; a record still being written waits."""
        out = []
        for path in sorted(glob.glob(self.pattern)):
            offset = self.offsets.get(path, 0)
            try:
                with open(path, "rb") as f:
                    f.seek(offset)
                    data = f.read()
            except OSError:
                continue
            whole = len(data) // LIVE_RECORD.itemsize
            self.offsets[path] = offset + whole * LIVE_RECORD.itemsize  # a record cut short is read again whole
            out.append(np.frombuffer(data, LIVE_RECORD, count=whole))
        return np.concatenate(out) if out else np.empty(0, LIVE_RECORD)


class _Tally:
    """One run's requests after its warm-up: how many, their latencies' sum, and the last reply's time."""

    def __init__(self) -> None:
        self.count = 0
        self.sum_ms = 0.0
        self.last = -math.inf

    def add(self, ms: np.ndarray, last: float) -> None:
        self.count += len(ms)
        self.sum_ms += float(ms.sum())
        self.last = max(self.last, last)

    def mean(self) -> float:
        """The mean latency so far (ms); NaN before any reply."""
        return self.sum_ms / self.count if self.count else math.nan


class PlanSoFar:
    """Each run's throughput and mean latency so far, from the records Locust streams (see the top of this file).

    A request belongs to the run (stage) in which it was sent; like collect(), a run counts the
    replies after its warm-up (`warmup_s` after it began) and up to its end. Its throughput is
    their count over the time from the warm-up's end to the last of them.
    """

    def __init__(self, stages: list[Stage], predictions: list[Prediction], warmup_s: float = 1.0):
        self.stages, self.predictions, self.warmup_s = stages, predictions, warmup_s
        self.begins = [0.0, *itertools.accumulate(s.duration_s for s in stages)]
        self.t0: float | None = None
        self.tallies = [_Tally() for _ in stages]

    def feed(self, records: np.ndarray) -> None:
        """Tally Locust's live records (a Tail's): each process's start (its head record), and its requests."""
        stage = records["stage"].astype(np.intp)
        head = stage == protocol.LIVE_HEAD
        if head.any():
            t0 = float(records["end"][head].min())
            self.t0 = t0 if self.t0 is None else min(self.t0, t0)
        if self.t0 is None:
            return  # no process has started
        end = records["end"]
        ours = (stage >= 0) & (stage < len(self.stages))
        at = self.t0 + np.array(self.begins)  # when each stage begins, and the last ends (epoch s)
        picked = np.where(ours, stage, 0)  # any stage's bounds, for the records dropped anyway
        ours &= (at[picked] + self.warmup_s <= end) & (end <= at[picked + 1])
        for i in np.unique(stage[ours]):
            mine = ours & (stage == i)
            self.tallies[i].add(records["ms"][mine].astype(float), float(end[mine].max()))

    def run(self, i: int) -> RunSoFar:
        s, p, tally = self.stages[i], self.predictions[i], self.tallies[i]
        cut = (self.t0 or 0.0) + self.begins[i] + self.warmup_s
        span = tally.last - cut
        rps = tally.count / span if tally.count and span > 0 else math.nan
        w = s.workload
        work = work_label(w.tasks, w.io_ms, w.cpu_n)
        return RunSoFar(s.pattern, s.users, rps, tally.mean(), p.rps, p.latency_ms, tally.count, rate=w.rate, work=work)

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
    """The runs as their RunResults' rows give them: collect's figures, beside the prediction made before each run
    (the one the view showed while it ran), or the one explained after it where none was made before."""
    return tuple(
        RunSoFar(
            r["pattern"],
            r["users"],
            r["rps"],
            r["mean_ms"],
            *_predicted(r),
            r["requests"],
            final=True,
            valid=bool(r["valid"]),
            rate=float(r.get("rate") or 0.0),
            work=work_label(r.get("tasks", 1), r.get("io_ms", 0), r.get("cpu_n", 0)),
        )
        for r in rows
    )


def _predicted(row: dict) -> tuple[float, float]:
    """A row's throughput and mean latency predicted before its run, else those explained after it."""
    before = row.get("predicted_before_rps", math.nan)
    if isinstance(before, float) and math.isfinite(before):
        return before, row.get("predicted_before_ms", math.nan)
    return row["predicted_rps"], row["predicted_ms"]


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
        self.plan.feed(self.tail.records())
        now = self.plan.snapshot(self.wall())
        if self.joining and not now.started:
            now = dataclasses.replace(now, waiting=waiting(self.events.state(), self.joining))
        return now

    def stop(self) -> None:
        """Once Locust is gone: read what it streamed last, then remove the live files (collect reads its records)."""
        self.plan.feed(self.tail.records())
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

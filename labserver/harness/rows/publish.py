"""A plan's runs published: Locust's records split by stage, each collected and saved as a run folder of its own.

Locust measures a whole plan in one process and leaves its files in the first run's folder;
each later stage gets a folder of its own, with its share of the records and links to Locust's
files. A stage's warm-up starts once what the stages before it left is answered.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import shutil
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from labserver import protocol
from labserver.harness.plans.plan import Meters, Options, Outcome, Stage
from labserver.harness.processes.supervise import Status
from labserver.harness.rows import records, results, telemetry
from labserver.harness.rows.collect import StageInput, collect

if TYPE_CHECKING:
    from labserver.harness.servers.server import Server


def save_plan(
    stages: list[Stage], run_ids: list[str], tmp: Path, outcome: Outcome, options: Options
) -> list[results.RunResult]:
    """Publish one run folder per stage that ran: the finished ones "ok", the one cut short with its status."""
    t0, files = records.read_plan(tmp)
    t0 = t0 if t0 is not None else outcome.started_at.timestamp()
    options = _plan_options(options, stages, files)
    exit_code = outcome.locust.returncode if outcome.locust else None
    saved: list[results.RunResult] = []
    drained = t0  # when the last request of the stages so far was answered
    for i, (stage, run_id) in enumerate(zip(stages, run_ids, strict=True)):
        begins = t0 + sum(s.duration_s for s in stages[:i])
        clock = _Clock(begins, begins + stage.duration_s, drained)
        if outcome.ended is not None and outcome.ended < clock.begins:
            break  # never started: nothing to save
        last = i == len(stages) - 1
        cut_short = outcome.ended is not None and (last or outcome.ended < clock.ends)
        folder = tmp if i == 0 else results.partial_dir(run_id)
        if i:
            _link_locust_files(saved[0].path, folder)  # the first run's folder, published by now
        mine = records.stage(files, i, stage.users)
        records.write(folder, mine)
        same_server = i > 0 and stages[i - 1].server is stage.server  # else every user opens a connection
        # Locust's exit says how the plan ended: it judges the last stage, or the one cut short
        at = _At(folder, run_id, stage, mine, clock, exit_code if (cut_short or last) else None)
        before = stages[i - 1].users if same_server else 0
        result = _stage_result(at, outcome, options, before=before, status=outcome.status if cut_short else Status.OK)
        result.manifest.update(
            started_at=result.row["started_at"],
            ended_at=_iso(min(outcome.ended or time.time(), clock.ends)),
            plan={"first_run": run_ids[0], "stage": i, "stages": len(stages)},
        )
        if outcome.server_log is not None and cut_short:
            (folder / "server.log").write_text(outcome.server_log)
        # what the server's workers were doing meanwhile: telemetry.csv, the samples of the window
        telemetry.save(folder, stage.server, clock.start, result.window)
        saved.append(results.finish(folder, result.manifest, result.history))
        drained = max([clock.ends, *(r.end for per_file in mine.values() for user in per_file for r in user)])
        if cut_short:
            break
    return saved


@dataclass(frozen=True)
class _Clock:
    """When a stage of a plan ran (epoch s), and when the requests of the stages before it were all answered."""

    begins: float
    ends: float
    drained: float

    @property
    def start(self) -> float:
        # The stage's first requests share the server with what is left of the stages before, so
        # its warm-up starts once the last of those is answered.
        return max(self.begins, self.drained)


def _plan_options(options: Options, stages: list[Stage], files: dict) -> Options:
    """The plan's options as its rows record them: the spawn rate it had, and the Locust processes that sent load."""
    spawn_rate = options.spawn_rate_for(stages)
    processes = options.processes
    if options.master is not None:  # the workers that came and sent load, however many were asked for
        processes = sum(1 for name in files if protocol.from_worker(name)) or processes
    return dataclasses.replace(options, spawn_rate=spawn_rate, processes=processes)


def _stage_result(at: _At, outcome: Outcome, options: Options, *, before: int, status: str) -> results.RunResult:
    """collect() for one stage of a plan, from its records; `before`: users who carried on from the stage before."""
    w, clock, stage = at.stage.workload, at.clock, at.stage
    # What its own queue answers after its end, with fewer users sending, is not its steady flow; but an
    # open loop's request belongs to its stage however late it is answered (its drain_s let it be).
    until = math.inf if w.rate else clock.ends
    per_user = [[r for r in user if r.end <= until] for per_file in at.mine.values() for user in per_file]
    # A user the stage before admitted too carried on (locustfiles/pattern.py): it is in its loop once
    # that stage has drained. One that joins needs two replies: its first may open a connection.
    settle = [0 if protocol.admitted(u, before) else 2 for per_file in at.mine.values() for u in range(len(per_file))]
    given = StageInput(
        at.folder,
        at.run_id,
        stage,
        per_user,
        start=clock.start,
        started_at=_iso(clock.begins),
        status=status,
        exit_code=at.exit_code,
        settle=settle,
        server_cores=None if getattr(stage.server, "same_machine", True) else stage.server.cores(),
        held=held_of(stage.server),
        # An open loop is measured over the requests meant to leave from its warm-up to its drain
        meant=(clock.start + options.warmup_s, clock.ends - w.drain_s) if w.rate else None,
    )
    return collect(given, outcome.meters or Meters.unsampled(), options)


@dataclass(frozen=True)
class _At:
    """One stage of a plan where publish has it: its folder and id, its records, its clock, Locust's exit to judge."""

    folder: Path
    run_id: str
    stage: Stage
    mine: dict[str, records.PerUser]
    clock: _Clock
    exit_code: int | None


def _iso(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).isoformat(timespec="seconds")


def held(url: str) -> tuple[float, int] | None:
    """The server's connection hold so far, from /db_info: (seconds held, uses); None where it does not say."""
    try:
        with urllib.request.urlopen(url + "/db_info", timeout=10) as reply:
            totals = json.loads(reply.read())["held"]
        return float(totals["held_s"]), int(totals["uses"])
    except (OSError, ValueError, KeyError, TypeError):  # no database routes, or a server from before them
        return None


def hold_ms(before: tuple[float, int] | None, after: tuple[float, int] | None) -> float:
    """The mean hold per use between two readings of `held` (ms); NaN without both, or without a use."""
    if before is None or after is None or after[1] <= before[1]:
        return math.nan
    return (after[0] - before[0]) / (after[1] - before[1]) * 1000


def hold_counter(server: Server) -> Callable[[], tuple[float, int] | None] | None:
    """How to read `server`'s connection hold so far at once (`held`, its /db_info); None for a server without a
    database, or with several workers, where /db_info answers for one of them and their holds sum in the
    telemetry (`held_of`), which a window can read only once the workers have flushed it (about a second)."""
    settings = getattr(server, "settings", None)
    if not getattr(settings, "database_url", "") or getattr(settings, "workers", 1) != 1:
        return None
    return functools.partial(held, server.url)


def held_of(server: Server) -> Callable[[tuple[float, float]], float] | None:
    """How to read a window's connection hold from `server`'s telemetry; None for a server without a database."""
    if not getattr(getattr(server, "settings", None), "database_url", ""):
        return None
    return functools.partial(telemetry.db_hold_ms, server)


def _link_locust_files(src: Path, dst: Path) -> None:
    """Locust's own files (log, report, stats) of the whole plan, in every run's folder: hard links, no copies."""
    for path in src.iterdir():
        if path.name.startswith(("locust", "report")) or path.name == protocol.PLAN_FILE:
            try:
                os.link(path, dst / path.name)
            except OSError:
                shutil.copy2(path, dst / path.name)

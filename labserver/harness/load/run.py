"""Headless Locust runs against the pattern endpoints, as a subprocess, measured into RunResults.

Locust is never imported here: it monkey-patches the process with gevent. It runs as
`python -m locust` in its own process group (generator.py, under supervise.py), and every run
writes into its own new folder (a failed rerun can never read the previous run's files). One
Locust process measures a whole plan of runs, one after the other (run_plan, sweep): its
start-up, spawn and report are paid once per plan, not once per run. A plan is checked (checks.py), its
Locust command built, Locust supervised, and its runs saved (collect.py turns what it wrote
into figures); the split over several Locust processes and the second measurement after a
pause of the machine are policies around that.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pandas as pd

from labserver import config, protocol
from labserver.harness.load import generator, pricing
from labserver.harness.load.checks import check_plan, foreseen, foreseen_invalid
from labserver.harness.load.generator import worker_command
from labserver.harness.plans import feed, notebook
from labserver.harness.plans.plan import (
    REMEASURE_DEFAULT,
    LoadOptions,
    Meters,
    Options,
    OptionsKw,
    PlanRun,
    Run,
    Stage,
    servers_of,
)
from labserver.harness.processes import pauses
from labserver.harness.processes.machine import MachineMeter, wait_until_quiet
from labserver.harness.processes.meters import CpuMeter, LocustMeter
from labserver.harness.processes.supervise import Status, supervised
from labserver.harness.rows import records, results
from labserver.harness.rows.publish import save_plan
from labserver.harness.servers.isolate import Isolation
from labserver.harness.servers.launcher import LabServer, running
from labserver.harness.servers.server import Server, ServerError
from labserver.theory import model
from labserver.theory.workload import DURATION_DEFAULT_S

if TYPE_CHECKING:
    from typing_extensions import Unpack


def run_load(
    server: Server,
    pattern: str,
    users: int,
    *,
    tasks: int = 1,
    io_ms: int = 0,
    cpu_n: int = 0,
    duration_s: int = DURATION_DEFAULT_S,
    predicted: model.Prediction | None = None,
    tags: dict[str, Any] | None = None,
    **load: Unpack[LoadOptions],
) -> results.RunResult:
    """Drive `pattern` on `server` with `users` closed-loop Locust users for `duration_s` seconds.

    Returns a RunResult whose row holds the tidy figures (`rps`, `p50_ms`, `p95_ms`, ...), the
    prediction beside them, and whether the run is a valid measurement (`valid`, `problems`).
    Raises ServerError, after saving the partial run, if the server dies meanwhile. The other
    keywords (`user_class`, `timeout_s`, `warmup_s`, ...) are run_plan's.
    """
    run = Run(pattern=pattern, users=users, tasks=tasks, io_ms=io_ms, cpu_n=cpu_n, duration_s=duration_s)
    return run_plan(server, [Run(**run, predicted=predicted, tags=tags or {})], **load)[0]


def run_plan(
    server: Server,
    runs: Sequence[Run],
    *,
    duration_s: int = DURATION_DEFAULT_S,
    remeasure: int = REMEASURE_DEFAULT,
    **options: Unpack[OptionsKw],
) -> list[results.RunResult]:
    """Measure several runs on `server` one after the other, with one Locust process for them all.

    Each run is a dict with `pattern` and `users` (or an open loop's `rate`), and optionally
    `tasks`, `io_ms`, `cpu_n`, `duration_s` (else the keyword's), `drain_s` (theory/workload.py),
    `predicted` (a model.Prediction; else model.predict's), `tags` (more columns for its row) and
    `server` (another running server to measure, so that runs on servers of different settings
    can take turns in one plan; else `server`). Every run gets its own folder under data/runs/
    and its own RunResult, exactly as if run_load had measured it; only Locust's start-up, spawn
    and report are paid once. If a server dies or the run is interrupted, the runs measured so
    far and the one cut short are saved, then ServerError (or the interrupt) goes on.

    `progress` (default: on unless LAB_PROGRESS=0) shows the plan as it runs: in a notebook a
    live chart (labserver/charts/live.py, registered by labserver/__init__.py), elsewhere a text
    bar. `watch`, if given, is called about once a second with a feed.Snapshot wherever the plan
    runs (the bench measures what the live chart costs with it).

    `processes` Locust processes send the load, each on a core of its own: forked on this
    machine, or, with `master` ("HOST:PORT", an address of this machine), workers that join
    from other machines (`python -m labserver worker --master HOST:PORT`, which it prints). The
    plan waits up to `join_timeout_s` for all of them, then fails saying how many came. Either
    way the workers send their records and CPU back over Locust's own messages, so that the
    run's folder, its checks and its charts are exactly those of a run of one process. Users
    are numbered per Locust process, so a stage could not say which of them it uses: with
    several, each run is a plan of its own.

    A run in whose window the whole machine stopped (harness/processes/pauses.py) measured the pause, not
    the server: it is saved marked so, and measured again once the machine is quiet, up to
    `remeasure` times; the result holds the new run in its place.
    """
    stages = [Stage.from_run(run, duration_s, server) for run in runs]
    plan_options = check_plan(stages, Options(**options))
    for line in foreseen_invalid(stages, plan_options):
        print(line)
    if plan_options.processes > 1:
        return [r for stage in stages for r in _remeasured(server, [stage], plan_options, remeasure)]
    return _remeasured(server, stages, plan_options, remeasure)


def _remeasured(server: Server, stages: list[Stage], options: Options, times: int) -> list[results.RunResult]:
    """The plan measured, and each run the machine stopped in measured again once it is quiet, up to `times` times.

    Runs that expect failures are not: a blocked worker may still owe the requests its users
    abandoned, and would start the new run late.
    """
    saved = _measure(server, stages, options)
    for _ in range(0 if options.expect_failures else times):
        paused = [i for i, r in enumerate(saved) if pauses.problem(r.row["paused_ms"])]
        if not paused:
            break
        for i in paused:
            print(pauses.again(f"{saved[i].row['pattern']} at {saved[i].row['users']} users", saved[i].row))
        wait_until_quiet()  # a neighbour's burst on the host may last a while
        again = _measure(server, [stages[i] for i in paused], options)
        for i, result in zip(paused, again, strict=True):
            saved[i] = result
    return saved


def _measure(server: Server, stages: list[Stage], options: Options) -> list[results.RunResult]:
    """One Locust process measures `stages` one after the other, each saved as a run of its own."""
    progress = config.PROGRESS.read() if options.progress is None else options.progress
    # In a notebook the chart replaces the text bar (whose notebook form needs ipywidgets).
    watcher = options.watch if options.watch is not None else (notebook.view() if progress else None)
    for each in servers_of(stages):
        each.check_ready()  # running, and for a server the lab did not start, one it can measure (remote.py)
    stages = pricing.before(stages, options)  # each run's prediction, made before any of them starts
    run_ids = [results.new_run_id(s.pattern, s.users) for s in stages]
    folder = results.partial_dir(run_ids[0])  # the first run's, where Locust writes
    protocol.write_plan(folder / protocol.PLAN_FILE, [s.locust() for s in stages])
    live = None
    if watcher is not None:
        so_far = feed.PlanSoFar(stages, [foreseen(s, options) for s in stages], options.warmup_s)
        live = feed.Live(
            cast(feed.Watcher, watcher), folder, so_far, joining=options.processes if options.master is not None else 0
        )
    cmd = generator.command(server, folder, stages, options, live is not None)
    if options.master is not None:
        generator.say_join(options.master, options.processes, options.join_timeout_s)
    text = bool(progress) and not notebook.in_notebook()
    plan = PlanRun(stages, run_ids, folder, cmd, options, live, text=text)
    saved = _supervise(plan)
    watched = plan.watched
    if watched.status is Status.SERVER_DIED:
        log = saved.dead[0].log_tail() if saved.dead else "(it was running again when checked)"
        raise ServerError(f"the server died during the run; partial result saved in {saved.last_folder(folder)}\n{log}")
    if options.master is not None and watched.status is Status.TOO_FEW_WORKERS:
        joined = protocol.Events(saved.last_folder(folder) / protocol.EVENTS_FILE).state().joined
        where = f"the run is saved, marked so, in {saved.runs[-1].path}" if saved.runs else "nothing was measured"
        raise RuntimeError(
            f"{watched.label}: {joined} of {options.processes} came ({where}); on each worker machine "
            f"run `{worker_command(options.master)}` with the lab installed, then run this again"
        )
    return saved.runs


@dataclass(frozen=True)
class _Saved:
    """What a plan left: its runs saved, one per stage Locust measured, and the servers that died, stopped."""

    runs: list[results.RunResult]
    dead: list[Server]

    def last_folder(self, first: Path) -> Path:
        """The folder of the last run saved, else the plan's first folder, where Locust wrote."""
        return self.runs[-1].path if self.runs else first


def _supervise(plan: PlanRun) -> _Saved:
    """Run Locust to the end of its plan under watch, then save every stage it measured.

    An exception on the way (a Ctrl-C) goes on once the runs measured so far are saved.
    """
    try:
        _run_locust(plan)
    except BaseException:
        _save(plan, failing=True)
        raise
    return _save(plan, failing=False)


def _run_locust(plan: PlanRun) -> None:
    """Locust started and watched to the end of its plan; its CPU and the servers' sampled meanwhile (`plan.meters`)."""
    watched, options, folder, servers = plan.watched, plan.options, plan.folder, plan.servers
    lasts_s = sum(s.duration_s for s in plan.stages) + plan.wait_s + 60
    log = folder / protocol.LOG_FILE
    with supervised(watched, plan.command, log, pauses_file=folder / pauses.FILE, lasts_s=lasts_s, grace_s=3):
        isolation = Isolation(watched.proc.pid, plan.stages)  # a pinned server's core is its own (isolate.py)
        try:
            # One Locust process: its CPU, measured here. Several: the master's, measured here, and
            # each worker's as it reports it (LocustMeter), for workers that may be on other machines.
            alone = options.processes == 1 and options.master is None
            locust = LocustMeter(CpuMeter(watched.proc.pid, tree=alone))
            plan.meters = Meters(locust, {id(s): s.meter() for s in servers}, MachineMeter())
            events = protocol.Events(folder / protocol.EVENTS_FILE)  # what Locust did, as it happens
            generator.watch(
                watched,
                servers,
                plan.stages,
                plan.meters,
                text=plan.text,
                live=plan.live,
                wait_s=plan.wait_s,
                events=events,
                processes=options.processes,
                isolation=isolation,
            )
            if options.master is not None and events.state().gave_up:
                watched.stop(Status.TOO_FEW_WORKERS, f"joined in {options.join_timeout_s:g} s")
        finally:
            isolation.release()


def _save(plan: PlanRun, *, failing: bool) -> _Saved:
    """The runs saved, one per stage Locust measured; the servers that died, stopped.

    `failing`: an exception is on its way out, and it is the news: a failure to save is not raised
    over it (the unfinished .partial- folder is never read).
    """
    dead = [s for s in plan.servers if not s.alive] if plan.watched.status is Status.SERVER_DIED else []
    server_log = dead[0].log_tail(200) if dead else None
    for each in dead:
        each.stop()  # what is left of a dead server (orphaned workers, pool children) holds its port
    live, meters, folder = plan.live, plan.meters, plan.folder
    saved: list[results.RunResult]
    try:
        if live is not None:
            live.stop()  # before saving: a run's folder keeps Locust's records, not the live copy
        if meters is not None and isinstance(meters.locust, LocustMeter):
            meters.locust.reported = records.worker_cpu(folder)
            meters.machine.pauses = pauses.read(folder / pauses.FILE)
        saved = save_plan(plan.stages, plan.run_ids, folder, plan.outcome(server_log), plan.options)
    except Exception:
        if not failing:
            raise
        saved = []
    if live is not None:
        live.finish([r.row for r in saved])  # the last frame: collect's figures
    return _Saved(saved, dead)


def sweep(
    server: Server,
    patterns: list[str],
    users: list[int],
    *,
    tasks: int | None = None,
    io_ms: int | None = None,
    cpu_n: int | None = None,
    duration_s: int = DURATION_DEFAULT_S,
    **load: Unpack[LoadOptions],
) -> pd.DataFrame:
    """Every pattern × users, measured in one Locust run (run_plan); one tidy row per run, predictions included.

    Its runs are checked where run_plan checks every run, before anything starts.
    """
    if not patterns or not users:
        raise ValueError("give at least one pattern and one users value")
    work = {
        k: v for k, v in {"tasks": tasks, "io_ms": io_ms, "cpu_n": cpu_n}.items() if v is not None
    }  # else the default
    runs = [cast(Run, {"pattern": p, "users": u, **work}) for p in patterns for u in users]
    return pd.DataFrame([r.row for r in run_plan(server, runs, duration_s=duration_s, **load)])


def run_plans(
    plans: list[list[tuple[str, int]]],
    settings: Mapping[str, Any],
    *,
    duration_s: int = DURATION_DEFAULT_S,
    tasks: int = 1,
    io_ms: int = 0,
    cpu_n: int = 0,
    **load: Unpack[LoadOptions],
) -> dict[tuple[str, int], results.RunResult]:
    """Each plan of (pattern, users) runs on a fresh server of its own, with one Locust process per plan.

    For runs that leave a queue behind: a blocked worker still owes the requests its users
    abandoned when Locust stopped, and would start the next run late. Only the last run of a
    plan may do so. The servers, all of `settings` (LabServer's), start and stop together, so
    their start-ups overlap. Every run shares `tasks`, `io_ms` and `cpu_n`; `load` is run_plan's.
    Returns each run's RunResult by (pattern, users).
    """
    measured: dict[tuple[str, int], results.RunResult] = {}
    with running([LabServer(**settings) for _ in plans]) as servers:
        for plan, server in zip(plans, servers, strict=True):
            stages = [Run(pattern=p, users=u, tasks=tasks, io_ms=io_ms, cpu_n=cpu_n) for p, u in plan]
            done = run_plan(server, stages, duration_s=duration_s, **load)
            measured |= dict(zip(plan, done, strict=True))
    return measured

"""Headless Locust runs against the pattern endpoints, as a subprocess, measured into RunResults.

Locust is never imported here: it monkey-patches the process with gevent. It runs as
`python -m locust` in its own process group, and every run writes into its own new folder
(a failed rerun can never read the previous run's files). One Locust process measures a
whole plan of runs, one after the other (run_plan, sweep): its start-up, spawn and report
are paid once per plan, not once per run. collect.py turns what it wrote into figures.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from labserver.checks import choice, whole
from labserver.demo import cpus
from labserver.demo.patterns import PATTERNS
from labserver.demo.routes import SHOP
from labserver.demo.settings import Settings
from labserver.demo.work import check_bounds, fib_calls
from labserver.harness import feed, launcher, notebook, pauses, procs, records, results
from labserver.harness.collect import save_plan
from labserver.harness.isolate import Isolation
from labserver.harness.launcher import LabServer, Server, ServerError, running
from labserver.harness.meters import CpuMeter, LocustMeter, MachineMeter, wait_until_quiet
from labserver.harness.plan import Meters, Options, Outcome, Stage, stage_at
from labserver.paths import LOCUSTFILES, ROOT
from labserver.theory import model
from labserver.theory.demand import Demand

USERS_MAX = 2000
DURATION_MAX_S = 600
USER_CLASSES = {"fast": "PatternUser", "requests": "PatternHttpUser", "arrivals": "ArrivalUser"}
RATE_MAX = 5000  # arrivals per second: one Locust process sends about 2,000 req/s on its core
RUN_TIME_SLACK_S = 5
# Locust workers that join a master from other machines (`python -m labserver worker`): one
# process each, so a class's laptops can send far more than this machine's cores could.
WORKERS_MAX = 64
MASTER_PORT = 5557  # Locust's own default: what a worker dials when told only the master's host
JOIN_TIMEOUT_S = 120.0


def check_load(
    pattern: str,
    users: int,
    duration_s: int,
    tasks: int,
    io_ms: int,
    cpu_n: int,
    user_class: str = "fast",
    processes: int = 1,
    rate: float = 0.0,
    master: str | None = None,
) -> None:
    """Raise ValueError saying what to change, before any process starts."""
    choice("pattern", pattern, [*PATTERNS, *SHOP])
    whole("users", users, 1, USERS_MAX)
    if rate or user_class == "arrivals":
        check_arrivals(rate, user_class, processes)
    whole("duration_s", duration_s, 1, DURATION_MAX_S)
    if master is None:
        whole("processes", processes, 1, cpus.whole_cores())  # forked here: one core each
    else:
        whole("processes", processes, 1, WORKERS_MAX)  # workers on other machines
        master_address(master)
    choice("user_class", user_class, USER_CLASSES)
    problems = check_bounds(tasks, io_ms, cpu_n)
    if problems:
        raise ValueError("; ".join(msg for _, msg in problems))


def master_address(master: str) -> tuple[str, int]:
    """(host, port) where Locust's master waits for workers, from "HOST" or "HOST:PORT"; ValueError otherwise.

    HOST must be an address of this machine (the master listens there): 127.0.0.1 for workers
    on this machine only, this machine's address on the classroom's network for others.
    """
    example = "'192.168.1.20:5557'"
    if not isinstance(master, str) or not master.strip():
        raise ValueError(f"master must be the address Locust's master listens on, such as {example}, got {master!r}")
    host, _, port_text = master.strip().rpartition(":") if ":" in master else (master.strip(), "", "")
    try:
        port = int(port_text) if port_text else MASTER_PORT
    except ValueError:
        raise ValueError(f"master's port must be a number, such as {example}, got {master!r}") from None
    if not 0 < port < 65536:
        raise ValueError(f"master's port must be from 1 to 65535, got {port}")
    try:
        procs.free_port(host)
    except OSError as e:
        raise ValueError(
            f"master {host!r} is not an address of this machine ({e.strerror or e}): Locust's master listens there"
        ) from None
    if procs.port_in_use(port, host):
        raise ValueError(f"port {port} on {host} is taken: give the master another, such as {host}:{port + 1}")
    return host, port


def worker_command(master: str) -> str:
    """What to run on each worker machine to join the master at `master` (master_address's form)."""
    host, port = master_address(master)
    return f"python -m labserver worker --master {host}:{port}"


def check_arrivals(rate: float, user_class: str, processes: int) -> None:
    """An open loop's rate, and the one Locust process that keeps its schedule."""
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate <= RATE_MAX:
        raise ValueError(f"rate must be a number of arrivals per second above 0 and at most {RATE_MAX}, got {rate!r}")
    if user_class != "arrivals":
        raise ValueError(f"a run with a rate needs user_class='arrivals' (the open loop), got {user_class!r}")
    if processes != 1:
        raise ValueError(f"an open loop runs in one Locust process (each would send at the full rate), got {processes}")


def run_load(
    server: Server,
    pattern: str,
    users: int,
    tasks: int = 1,
    io_ms: int = 0,
    cpu_n: int = 0,
    duration_s: int = 5,
    predicted: model.Prediction | None = None,
    tags: dict | None = None,
    **load,
) -> results.RunResult:
    """Drive `pattern` on `server` with `users` closed-loop Locust users for `duration_s` seconds.

    Returns a RunResult whose row holds the tidy figures (`rps`, `p50_ms`, `p95_ms`, ...), the
    prediction beside them, and whether the run is a valid measurement (`valid`, `problems`).
    Raises ServerError, after saving the partial run, if the server dies meanwhile. The other
    keywords (`user_class`, `timeout_s`, `warmup_s`, ...) are run_plan's.
    """
    run = dict(pattern=pattern, users=users, tasks=tasks, io_ms=io_ms, cpu_n=cpu_n, duration_s=duration_s)
    return run_plan(server, [{**run, "predicted": predicted, "tags": tags}], **load)[0]


def run_plan(
    server: Server,
    runs: list[dict],
    duration_s: int = 5,
    spawn_rate: float | None = None,
    user_class: str = "fast",
    processes: int = 1,
    timeout_s: float = 60.0,
    warmup_s: float = 1.0,
    expect_failures: bool = False,
    lesson: str | None = None,
    progress: bool | None = None,
    watch: feed.Watcher | None = None,
    master: str | None = None,
    join_timeout_s: float = JOIN_TIMEOUT_S,
    remeasure: int = 1,
) -> list[results.RunResult]:
    """Measure several runs on `server` one after the other, with one Locust process for them all.

    Each run is a dict with `pattern` and `users`, and optionally `tasks`, `io_ms`, `cpu_n`,
    `duration_s` (else the keyword's), `predicted` (a model.Prediction; else model.predict's),
    `tags` (more columns for its row) and `server` (another running server to measure, so
    that runs on servers of different settings can take turns in one plan; else `server`).
    Every run gets its own folder under data/runs/ and its own RunResult, exactly as if
    run_load had measured it; only Locust's start-up, spawn and report are paid once. If a
    server dies or the run is interrupted, the runs measured so far and the one cut short are
    saved, then ServerError (or the interrupt) goes on.

    `progress` (default: on unless LAB_PROGRESS=0) shows the plan as it runs: in a notebook a
    live chart (labserver/charts/live.py, registered by labserver/__init__.py), elsewhere a text
    bar. `watch`, if given, is called about once a second with a feed.Snapshot wherever the plan
    runs (the bench measures what the live chart costs with it).

    `processes` Locust processes send the load, each on a core of its own: forked on this
    machine, or, with `master` ("HOST:PORT", an address of this machine), workers that join
    from other machines (`python -m labserver worker --master HOST:PORT`, which it prints). The
    plan waits up to `join_timeout_s` for all of them, then fails saying how many came. Either
    way the workers send their records and CPU back over Locust's own messages, so that the
    run's folder, its checks and its charts are exactly those of a run of one process.

    A run in whose window the whole machine stopped (harness/pauses.py) measured the pause, not
    the server: it is saved marked so, and measured again once the machine is quiet, up to
    `remeasure` times; the result holds the new run in its place.
    Runs that expect failures are not: a blocked worker may still owe the requests its users
    abandoned, and would start the new run late.
    """
    stages = [Stage.from_run(run, duration_s, server) for run in runs]
    if not stages:
        raise ValueError("give at least one run")
    servers = list({id(s.server): s.server for s in stages}.values())
    if any(s.rate for s in stages):
        user_class = "arrivals"  # an open loop's runs: every stage has a rate (check_arrivals)
    for s in stages:
        check_load(s.pattern, s.users, s.duration_s, s.tasks, s.io_ms, s.cpu_n, user_class, processes, s.rate, master)
        if s.rate and not 0 <= s.drain_s < s.duration_s:
            raise ValueError(f"drain_s must be from 0 to less than duration_s ({s.duration_s}), got {s.drain_s!r}")
    options = Options(
        spawn_rate, user_class, processes, timeout_s, warmup_s, expect_failures, lesson, progress, watch, master
    )
    if master is not None and not 0 < join_timeout_s <= DURATION_MAX_S:
        raise ValueError(f"join_timeout_s must be above 0 and at most {DURATION_MAX_S}, got {join_timeout_s!r}")
    if processes > 1 and len(stages) > 1:
        # Users are numbered per Locust process, so a stage could not say which of them it uses.
        keywords = {k: getattr(options, k) for k in Options.__dataclass_fields__}
        again = dict(join_timeout_s=join_timeout_s, remeasure=remeasure)
        return [r for run in runs for r in run_plan(server, [run], duration_s, **again, **keywords)]
    progress = os.environ.get("LAB_PROGRESS", "1") != "0" if progress is None else progress
    # In a notebook the chart replaces the text bar (whose notebook form needs ipywidgets).
    watcher = watch if watch is not None else (notebook.view() if progress else None)
    text = progress and not notebook.in_notebook()
    for each in servers:
        each.check_ready()  # running, and for a server the lab did not start, one it can measure (remote.py)
    users = max(s.users for s in stages)
    run_ids = [results.new_run_id(s.pattern, s.users) for s in stages]
    tmp = results.partial_dir(run_ids[0])  # Locust writes here; the first run's folder
    (tmp / "plan.json").write_text(json.dumps([s.locust() for s in stages]))
    total_s = sum(s.duration_s for s in stages)
    live = None
    if watcher is not None:
        plan = feed.PlanSoFar(stages, [foreseen(s, options) for s in stages], warmup_s)
        live = feed.Live(watcher, tmp, plan, joining=processes if master is not None else 0)
    # all users at once unless told otherwise: the warm-up is cut from the window anyway
    cmd = _command(server, tmp, users, spawn_rate or users, total_s, options, live is not None, join_timeout_s)
    if master is not None:
        _say_join(master, processes, join_timeout_s)
    started_at = datetime.now(UTC)
    locust: list[subprocess.Popen] = []  # filled in the spawner thread: a Ctrl-C cannot separate process and handle
    watcher: list[subprocess.Popen] = []
    meters, status, failing, ended, isolation = None, "ok", True, None, None
    try:
        # the machine's pauses, watched from outside every process of the run (pauses.py); it stops by itself
        lasts_s = total_s + (join_timeout_s if master is not None else 0.0) + 60
        procs.spawn(pauses.command(tmp / pauses.FILE, lasts_s), tmp / pauses.FILE, on_start=watcher.append)
        procs.spawn(cmd, tmp / "locust.log", cwd=ROOT, on_start=locust.append)
        isolation = Isolation(locust[0].pid, stages)  # a pinned server's core is its own (isolate.py)
        # One Locust process: its CPU, measured here. Several: the master's, measured here, and
        # each worker's as it reports it (LocustMeter), for workers that may be on other machines.
        alone = processes == 1 and master is None
        generator = LocustMeter(CpuMeter(locust[0].pid, tree=alone))
        meters = Meters(generator, {id(s): s.meter() for s in servers}, MachineMeter())
        wait_s = join_timeout_s if master is not None else 0.0
        log = tmp / "locust.log"
        status, ended = _watch(
            locust[0], servers, stages, meters, text, live, wait_s=wait_s, log=log, processes=processes,
            isolation=isolation,
        )  # fmt: skip
        if master is not None and feed.GAVE_UP in procs.tail(tmp / "locust.log", 50):
            status, ended = f"too few Locust workers joined in {join_timeout_s:g} s", time.time()
        failing = False
    except KeyboardInterrupt:
        status, ended = "interrupted", time.time()
        raise
    except BaseException as e:
        status, ended = f"failed ({type(e).__name__})", time.time()
        raise
    finally:
        if isolation is not None:
            isolation.release()
        if locust:
            procs.stop_tree(locust[0], grace_s=3)  # SIGTERM first: Locust writes what it measured so far
        if watcher:
            procs.stop_tree(watcher[0], grace_s=1)
        dead = [s for s in servers if not s.alive] if status == "server died" else []
        server_log = dead[0].log_tail(200) if dead else None
        for each in dead:
            each.stop()  # what is left of a dead server (orphaned workers, pool children) holds its port
        try:
            if live is not None:
                live.stop()  # before saving: a run's folder keeps Locust's records, not the live copy
            if meters is not None:
                meters.locust.reported = records.worker_cpu(tmp)
                meters.machine.pauses = pauses.read(tmp / pauses.FILE)
            outcome = Outcome(status, ended, locust[0] if locust else None, meters, started_at, server_log)
            saved = save_plan(stages, run_ids, tmp, outcome, options)
        except Exception:
            if not failing:
                raise
            saved = []
            # The exception already on its way out is the news; the unfinished .partial- folder is never read.
        if live is not None:
            live.finish([r.row for r in saved])  # the last frame: collect's figures
    if status == "server died":
        where = saved[-1].path if saved else tmp
        log = dead[0].log_tail() if dead else "(it was running again when checked)"
        raise ServerError(f"the server died during the run; partial result saved in {where}\n{log}")
    if status.startswith("too few Locust workers"):
        joined = feed.joined(procs.tail((saved[-1].path if saved else tmp) / "locust.log", 200)) or 0
        where = f"the run is saved, marked so, in {saved[-1].path}" if saved else "nothing was measured"
        raise RuntimeError(
            f"{status}: {joined} of {processes} came ({where}); on each worker machine "
            f"run `{worker_command(master)}` with the lab installed, then run this again"
        )
    paused = [i for i, r in enumerate(saved) if pauses.problem(r.row["paused_ms"])]
    if paused and remeasure > 0 and not expect_failures:
        for i in paused:
            print(pauses.again(f"{saved[i].row['pattern']} at {saved[i].row['users']} users", saved[i].row))
        wait_until_quiet()  # a neighbour's burst on the host may last a while
        keywords = {k: getattr(options, k) for k in Options.__dataclass_fields__}
        keywords.update(join_timeout_s=join_timeout_s, remeasure=remeasure - 1)
        again = run_plan(server, [runs[i] for i in paused], duration_s, **keywords)
        for i, result in zip(paused, again, strict=True):
            saved[i] = result
    return saved


def _say_join(master: str, processes: int, join_timeout_s: float) -> None:
    """Tell the user what to run on each worker machine, and who may reach the master meanwhile."""
    host, port = master_address(master)
    reach = launcher.exposure(host, port)
    lines = [f"Locust's master waits up to {join_timeout_s:g} s for {processes} worker(s) at {host}:{port}."]
    lines.append(f"On each worker machine, with the lab installed, run:\n    {worker_command(master)}")
    if reach:
        lines.append(
            f"The master is {reach.split(':')[0]}: any machine that can reach it may join as a worker and learn"
            " which server this plan loads (Locust's messages are not authenticated)."
        )
    print("\n".join(lines), file=sys.stderr, flush=True)


def _command(server, tmp, users, spawn_rate, total_s, options: Options, live=False, join_timeout_s=0.0) -> list[str]:
    cmd = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILES / "pattern.py"), USER_CLASSES[options.user_class]]
    cmd += ["--headless", "--only-summary", "--host", server.url, "-u", str(users), "-r", str(spawn_rate)]
    # The locustfile ends the test when its plan is over; --run-time, a little later, is a safety net.
    cmd += ["-t", f"{math.ceil(total_s) + RUN_TIME_SLACK_S}s", "--stop-timeout", "0"]
    cmd += ["--json-file", str(tmp / "locust"), "--csv", str(tmp / "locust"), "--csv-full-history"]
    cmd += ["--html", str(tmp / "report.html"), "--records-file", str(tmp / "records")]
    cmd += ["--plan-file", str(tmp / "plan.json"), "--timeout-s", str(options.timeout_s)]
    if live:
        cmd += ["--live-file", str(tmp / feed.LIVE_FILE)]
    if options.master is not None:
        host, port = master_address(options.master)
        cmd += ["--master", "--master-bind-host", host, "--master-bind-port", str(port)]
        cmd += ["--expect-workers", str(options.processes), "--expect-workers-max-wait", f"{join_timeout_s:g}"]
    elif options.processes > 1:
        # Locust's master would listen on every interface, on a fixed port (two plans at once would
        # collide): here it listens on this machine only, on a free port its forks are told.
        port = str(procs.free_port())
        cmd += ["--processes", str(options.processes), "--master-bind-host", "127.0.0.1"]
        cmd += ["--master-bind-port", port, "--master-port", port]
    return cmd


def _watch(
    proc,
    servers: list[Server],
    stages: list[Stage],
    meters: Meters,
    text: bool,
    live: feed.Live | None = None,
    clock=time.monotonic,
    wait_s: float = 0.0,
    log: Path | None = None,
    processes: int = 1,
    isolation: Isolation | None = None,
) -> tuple[str, float | None]:
    """Wait for Locust to finish, sampling CPU and checking the servers; return the status and when it went wrong.

    Meanwhile `text` shows a text bar (a terminal; tqdm's notebook bar needs ipywidgets, and a
    notebook has the live chart instead), and `live` feeds its watcher about once a second.
    `wait_s` is how long a master may wait for its `processes` workers first; its `log` says how many came.
    `isolation` places the other processes for each stage as it comes (a pinned server's core is its own).
    """
    meters = [meters.locust, *meters.servers.values(), meters.machine]
    total_s = sum(s.duration_s for s in stages)
    deadline = clock() + wait_s + total_s + 30  # start-up and shutdown with room to spare
    started = clock()
    with _text_bar(total_s, text) as bar:
        while proc.poll() is None:
            for meter in meters:
                meter.sample()
            if not all(s.alive for s in servers):
                return "server died", time.time()
            if clock() > deadline:
                return "timed out", time.time()
            if wait_s and log is not None:
                waiting = feed.waiting(procs.tail(log, 20), processes)
                if waiting is None:  # every worker came: the plan's seconds count from here
                    started, wait_s = clock(), 0.0
                elif bar is not None:
                    bar.set_description_str(f"waiting for Locust workers: {waiting}", refresh=False)
                    bar.refresh()
            if isolation is not None and log is not None:
                isolation.tick(clock(), log)
            if bar is not None and not wait_s:
                elapsed = clock() - started
                i = stage_at(stages, elapsed)
                s = stages[i]
                run = f"run {i + 1}/{len(stages)}: " if len(stages) > 1 else ""
                bar.set_description_str(f"{run}{s.pattern} · {s.users} users", refresh=False)
                bar.n = min(total_s, round(elapsed))
                bar.refresh()
            if live is not None:
                live.tick()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.25)  # returns the moment Locust exits: no part of a tick is slept away
    for meter in meters:
        meter.sample()
    return ("ok", None) if all(s.alive for s in servers) else ("server died", time.time())


@contextlib.contextmanager
def _text_bar(total_s: float, show: bool):
    """tqdm's plain text bar (never its notebook widget), or None when none is shown."""
    if not show:
        yield None
        return
    from tqdm.std import tqdm  # the terminal's bar; imported only when one is shown

    with tqdm(total=total_s, leave=False, bar_format="{desc}: {bar} {n:.0f}/{total} s") as bar:
        yield bar


def foreseen(stage: Stage, options: Options) -> model.Prediction:
    """The prediction a live view shows while a run measures; collect() later records the run's own.

    The lesson's, as it is or from no measured demand yet; else the model's from the settings,
    with fib's time scaled from fib(20)'s: timing fib(32) here would load the machine under test.
    """
    p = stage.predicted
    try:
        if isinstance(p, model.Prediction):
            return p
        if callable(p):
            return p(Demand(math.nan))
        if options.expect_failures:
            return model.Prediction(math.nan, math.nan, "not modelled: requests time out")
        s = stage.server.settings
        return model.predict(
            stage.pattern,
            stage.users,
            stage.tasks,
            stage.io_ms,
            stage.cpu_n,
            s.threads,
            s.workers,
            s.procs,
            cores=cpus.cores(),
            cpu_ms_per_task=_fib_ms(stage.cpu_n),
            queueing=True,
        )
    except Exception:  # a view without a prediction is better than no measurement
        return model.Prediction(math.nan, math.nan, "not foreseen")


def _fib_ms(cpu_n: int) -> float:
    """fib(cpu_n)'s time here, from fib(20)'s (a few ms) and how many calls each makes."""
    small = min(cpu_n, 20)
    return model.cpu_ms(small) * fib_calls(cpu_n) / fib_calls(small) if cpu_n > 1 else 0.0


def check_sweep(patterns: list[str], users: list[int], workers: int = 1, threads: int = 40, **load) -> None:
    """Check every run of a sweep (and the server settings) before anything starts; ValueError says what to change."""
    Settings(workers=workers, threads=threads).check()
    if not patterns or not users:
        raise ValueError("give at least one pattern and one users value")
    for pattern in patterns:
        for u in users:
            check_load(
                pattern,
                u,
                load.get("duration_s", 5),
                load.get("tasks", 1),
                load.get("io_ms", 0),
                load.get("cpu_n", 0),
                load.get("user_class", "fast"),
                load.get("processes", 1),
                master=load.get("master"),
            )


def sweep(server: Server, patterns: list[str], users: list[int], lesson: str | None = None, **load) -> pd.DataFrame:
    """Every pattern × users, measured in one Locust run (run_plan); one tidy row per run, predictions included."""
    check_sweep(patterns, users, **load)
    work = {k: load.pop(k) for k in ("tasks", "io_ms", "cpu_n") if k in load}
    runs = [{"pattern": p, "users": u, **work} for p in patterns for u in users]
    return pd.DataFrame([r.row for r in run_plan(server, runs, lesson=lesson, **load)])


def run_plans(
    plans: list[list[tuple[str, int]]],
    settings: dict,
    lesson: str | None = None,
    duration_s: int = 5,
    tasks: int = 1,
    io_ms: int = 0,
    cpu_n: int = 0,
    **load,
) -> dict[tuple[str, int], results.RunResult]:
    """Each plan of (pattern, users) runs on a fresh server of its own, with one Locust process per plan.

    For runs that leave a queue behind: a blocked worker still owes the requests its users
    abandoned when Locust stopped, and would start the next run late. Only the last run of a
    plan may do so. The servers, all of `settings` (LabServer's), start and stop together, so
    their start-ups overlap. Every run shares `tasks`, `io_ms` and `cpu_n`; `load` is run_plan's.
    Returns each run's RunResult by (pattern, users).
    """
    measured = {}
    with running([LabServer(**settings) for _ in plans]) as servers:
        for plan, server in zip(plans, servers, strict=True):
            stages = [dict(pattern=p, users=u, tasks=tasks, io_ms=io_ms, cpu_n=cpu_n) for p, u in plan]
            done = run_plan(server, stages, duration_s=duration_s, lesson=lesson, **load)
            measured |= dict(zip(plan, done, strict=True))
    return measured

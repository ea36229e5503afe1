"""Headless Locust runs against one pattern, as a subprocess, measured into a RunResult.

Locust is never imported here: it monkey-patches the process with gevent. It runs as
`python -m locust` in its own process group, every run writes into its own new folder
(a failed rerun can never read the previous run's files), and the figures come from
per-request records rather than Locust's stats CSV, which misses the last second.
"""

from __future__ import annotations

import contextlib
import glob
import json
import math
import os
import subprocess
import sys
import time
from datetime import UTC, datetime

import pandas as pd

from labserver import measure, model, procs, results, spread
from labserver.cpu import CpuMeter, MachineMeter
from labserver.dbmodel import ENDPOINTS as DB_ENDPOINTS
from labserver.paths import LOCUSTFILES, ROOT
from labserver.patterns import check_pattern
from labserver.server import LabServer, ServerError
from labserver.settings import Settings
from labserver.work import check_bounds

USERS_MAX = 2000
DURATION_MAX_S = 600
USER_CLASSES = {"fast": "PatternUser", "requests": "PatternHttpUser"}
MIN_REQUESTS = 20
SATURATED = 0.9  # a Locust process above this share of a core measures itself, not the server
# The machine is the limit when nearly every core is busy while Locust takes a real share of
# them: the generator then waits for CPU beside the server, and its latencies include that wait.
# (A CPU-bound server alone on every core, with a light Locust, is a fair measurement: lesson 03.)
MACHINE_BUSY = 0.95  # share of all cores
MACHINE_LOCUST_CORES = 0.2


def check_load(
    pattern: str,
    users: int,
    duration_s: int,
    tasks: int,
    io_ms: int,
    cpu_n: int,
    user_class: str = "fast",
    processes: int = 1,
) -> None:
    """Raise ValueError saying what to change, before any process starts."""
    if pattern not in DB_ENDPOINTS:  # lesson 07's database routes (dbroutes.py), served when a database is set
        check_pattern(pattern)
    for name, value, low, high in (
        ("users", users, 1, USERS_MAX),
        ("duration_s", duration_s, 1, DURATION_MAX_S),
        ("processes", processes, 1, os.cpu_count() or 1),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValueError(f"{name} must be a whole number from {low} to {high}, got {value!r}")
    if user_class not in USER_CLASSES:
        raise ValueError(f"unknown user_class {user_class!r}; choose one of: {', '.join(USER_CLASSES)}")
    problems = check_bounds(tasks, io_ms, cpu_n)
    if problems:
        raise ValueError("; ".join(msg for _, msg in problems))


def run_load(
    server: LabServer,
    pattern: str,
    users: int,
    tasks: int = 1,
    io_ms: int = 0,
    cpu_n: int = 0,
    duration_s: int = 5,
    spawn_rate: float | None = None,
    user_class: str = "fast",
    processes: int = 1,
    timeout_s: float = 60.0,
    warmup_s: float = 1.0,
    expect_failures: bool = False,
    lesson: str | None = None,
    progress: bool | None = None,
    predicted: model.Prediction | None = None,
    tags: dict | None = None,
) -> results.RunResult:
    """Drive `pattern` on `server` with `users` closed-loop Locust users for `duration_s` seconds.

    Returns a RunResult whose row holds the tidy figures (`rps`, `p50_ms`, `p95_ms`, ...), the
    prediction beside them, and whether the run is a valid measurement (`valid`, `problems`).
    Raises ServerError, after saving the partial run, if the server dies meanwhile.
    """
    check_load(pattern, users, duration_s, tasks, io_ms, cpu_n, user_class, processes)
    progress = os.environ.get("LAB_PROGRESS", "1") != "0" if progress is None else progress
    if not server.alive:
        raise ServerError(f"the server is not running; start it first\n{server.log_tail()}")
    spawn_rate = spawn_rate or users  # all users at once: the warm-up is cut from the window anyway
    run_id = results.new_run_id(pattern, users)
    tmp = results.partial_dir(run_id)
    cmd = [
        sys.executable,
        "-m",
        "locust",
        "-f",
        str(LOCUSTFILES / "pattern.py"),
        USER_CLASSES[user_class],
        "--headless",
        "--only-summary",
        "--host",
        server.url,
        "-u",
        str(users),
        "-r",
        str(spawn_rate),
        "-t",
        f"{duration_s}s",
        "--stop-timeout",
        "0",
        "--json-file",
        str(tmp / "locust"),
        "--csv",
        str(tmp / "locust"),
        "--csv-full-history",
        "--html",
        str(tmp / "report.html"),
        "--records-file",
        str(tmp / "records"),
        "--pattern",
        pattern,
        "--tasks",
        str(tasks),
        "--io-ms",
        str(io_ms),
        "--cpu-n",
        str(cpu_n),
        "--timeout-s",
        str(timeout_s),
    ]
    if processes > 1:
        cmd += ["--processes", str(processes)]
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    locust: list[subprocess.Popen] = []  # filled in the spawner thread: a Ctrl-C cannot separate process and handle
    meters, status, failing = None, "ok", True
    try:
        procs.spawn(cmd, tmp / "locust.log", cwd=ROOT, on_start=locust.append)
        meters = (CpuMeter(locust[0].pid), CpuMeter(server.proc.pid), MachineMeter())
        status = _watch(locust[0], server, duration_s, meters, progress, f"{pattern} · {users} users")
        failing = False
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    except BaseException as e:
        status = f"failed ({type(e).__name__})"
        raise
    finally:
        if locust:
            procs.stop_tree(locust[0], grace_s=3)  # SIGTERM first: Locust writes what it measured so far
        server_log = server.log_tail(200) if status == "server died" else None
        if server_log is not None:
            server.stop()  # what is left of a dead server (orphaned workers, pool children) holds its port
        try:
            settings = server.settings
            params = dict(
                pattern=pattern,
                users=users,
                tasks=tasks,
                io_ms=io_ms,
                cpu_n=cpu_n,
                workers=settings.workers,
                threads=settings.threads,
                procs=settings.procs,
                cpus=",".join(map(str, settings.cpus)),  # "" unless the server was pinned
                duration_s=duration_s,
                spawn_rate=spawn_rate,
                user_class=user_class,
                processes=processes,
                timeout_s=timeout_s,
                **(tags or {}),
            )
            meters = meters or (CpuMeter(-1), CpuMeter(-1), MachineMeter())  # never sampled: CPU figures are NaN
            exit_code = locust[0].returncode if locust else None
            result = _collect(
                tmp, run_id, params, status, exit_code, meters, warmup_s, expect_failures, lesson, predicted
            )
            result.manifest.update(started_at=started_at, ended_at=datetime.now(UTC).isoformat(timespec="seconds"))
            result.row["started_at"] = started_at
            if server_log is not None:
                (tmp / "server.log").write_text(server_log)
            saved = results.finish(tmp, result.manifest, result.history)
        except Exception:
            if not failing:
                raise
            # The exception already on its way out is the news; the unfinished .partial- folder is never read.
    if status == "server died":
        raise ServerError(f"the server died during the run; partial result saved in {saved.path}\n{server.log_tail()}")
    return saved


def _watch(proc, server: LabServer, duration_s: int, meters, progress: bool, label: str) -> str:
    """Wait for Locust to finish, sampling CPU and checking the server; return the run's status."""
    from tqdm.auto import tqdm  # imported here: the progress bar picks its display at import

    deadline = time.monotonic() + duration_s + 30  # start-up and shutdown with room to spare
    started = time.monotonic()
    with tqdm(
        total=duration_s,
        desc=label,
        unit="s",
        disable=not progress,
        leave=False,
        bar_format="{desc}: {bar} {n:.0f}/{total} s",
    ) as bar:
        while proc.poll() is None:
            for meter in meters:
                meter.sample()
            if not server.alive:
                return "server died"
            if time.monotonic() > deadline:
                return "timed out"
            bar.n = min(duration_s, round(time.monotonic() - started))
            bar.refresh()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.25)  # returns the moment Locust exits: no part of a tick is slept away
    for meter in meters:
        meter.sample()
    return "ok" if server.alive else "server died"


def _read_json(path, default):
    """A JSON file Locust wrote, or `default` if it is missing or was cut short (Locust killed mid-write)."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def _read_records(tmp) -> list[list[measure.Record]]:
    per_user = []
    for path in sorted(glob.glob(str(tmp / "records.*.json"))):
        per_user += [[tuple(r) for r in user] for user in _read_json(path, [])]
    return per_user


def _collect(
    tmp, run_id, params, status, exit_code, meters, warmup_s, expect_failures, lesson, predicted=None
) -> results.RunResult:
    problems = [] if status == "ok" else [status]
    locust_json = tmp / "locust.json"
    stats = _read_json(locust_json, [])
    if status == "ok" and (exit_code not in (0, 1) or not stats):  # 1 means "some requests failed"
        status = "locust failed"
        problems.append(f"locust exited with code {exit_code}; see {tmp.name}/locust.log")
    per_user = _read_records(tmp)
    start = stats[0]["start_time"] if stats else (meters[0].samples[0][0] if meters[0].samples else time.time())
    m = measure.measure(per_user, start=start, warmup_s=warmup_s)  # the warm-up ends once every user is in its loop
    locust_cores, locust_busiest = meters[0].usage(m.window_start, m.window_start + m.window_s)
    server_cores, _ = meters[1].usage(m.window_start, m.window_start + m.window_s)
    machine_cores = meters[2].usage(m.window_start, m.window_start + m.window_s)
    cores = os.cpu_count() or 1
    log = (tmp / "locust.log").read_text(errors="replace") if (tmp / "locust.log").exists() else ""
    generator_saturated = locust_busiest >= SATURATED or "CPU usage above" in log
    if generator_saturated:
        problems.append(f"load generator saturated ({locust_busiest:.0%} of a core): it measured itself")
    if m.failures and not expect_failures:
        problems.append(f"{m.failures} of {m.requests} requests failed")
    if m.requests < MIN_REQUESTS:
        problems.append(f"only {m.requests} requests after the warm-up: run longer or with more users")
    limit = machine_limit(machine_cores, locust_cores, cores)
    if limit:
        problems.append(limit)
    served = spread.counts(per_user, since=measure.warmup_end(per_user, start, warmup_s))  # as `requests` counts them
    p = predicted or model.predict(
        params["pattern"],
        params["users"],
        params["tasks"],
        params["io_ms"],
        params["cpu_n"],
        params["threads"],
        params["workers"],
        params["procs"],
    )
    row = {
        "run_id": run_id,
        "lesson": lesson,
        **params,
        "rps": m.rps,
        "p50_ms": m.p50_ms,
        "p95_ms": m.p95_ms,
        "p99_ms": m.p99_ms,
        "mean_ms": m.mean_ms,
        "requests": m.requests,
        "failures": m.failures,
        "failure_rate": m.failures / m.requests if m.requests else math.nan,
        "predicted_rps": p.rps,
        "predicted_ms": p.latency_ms,
        "bottleneck": p.bottleneck,
        "ratio": m.rps / p.rps if p.rps and not math.isnan(p.rps) else math.nan,
        "locust_cpu": locust_cores,
        "server_cpu": server_cores,
        "machine_cpu": machine_cores,  # every process on the machine, these two included
        "other_cpu": machine_cores - locust_cores - server_cores,  # the rest: the notebook, a database, others' work
        "generator_saturated": generator_saturated,
        "window_s": m.window_s,
        "window_start": m.window_start,
        "method": m.method,
        "workers_seen": len(served),
        "worker_requests": served,
        "status": status,
        "valid": not problems,
        "problems": "; ".join(problems),
    }
    manifest = {
        "run_id": run_id,
        "lesson": lesson,
        "params": params,
        "status": status,
        "valid": not problems,
        "problems": problems,
        "locust_exit_code": exit_code,
        "environment": results.environment(),
        "result": row,
    }
    return results.RunResult(row=row, history=_history(per_user, start), path=tmp, manifest=manifest)


def machine_limit(machine_cores: float, locust_cores: float, cores: int) -> str | None:
    """Why the machine, not the server, set the pace of a run; None when it did not (or was not measured)."""
    if machine_cores >= MACHINE_BUSY * cores and locust_cores >= MACHINE_LOCUST_CORES:  # NaN compares False
        return (
            f"the machine was the limit ({machine_cores:.2f} of {cores} cores busy, {locust_cores:.2f} of them"
            " Locust's): the generator waited for CPU beside the server, so the figure is a floor"
        )
    return None


def _history(per_user, start: float) -> pd.DataFrame:
    """Requests finished per second of the run, with their p95 latency."""
    flat = pd.DataFrame([r[:3] for user in per_user for r in user], columns=["end", "latency_ms", "ok"])
    if flat.empty:
        return pd.DataFrame(columns=["second", "rps", "p95_ms", "failures"])
    flat["second"] = (flat["end"] - start).astype(int)
    return (
        flat.groupby("second")
        .agg(
            rps=("ok", "size"), p95_ms=("latency_ms", lambda s: s.quantile(0.95)), failures=("ok", lambda s: (~s).sum())
        )
        .reset_index()
    )


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
            )


def sweep(server: LabServer, patterns: list[str], users: list[int], lesson: str | None = None, **load) -> pd.DataFrame:
    """run_load for every pattern × users; one tidy row per run, predictions included."""
    check_sweep(patterns, users, **load)
    rows = [run_load(server, pattern, u, lesson=lesson, **load).row for pattern in patterns for u in users]
    return pd.DataFrame(rows)

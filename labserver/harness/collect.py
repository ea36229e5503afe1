"""From what a Locust process left on disk to one RunResult per measurement (stage) of its plan.

The figures come from per-request records rather than Locust's stats CSV, which misses the
last second; a request belongs to the stage in which it was sent (locustfiles/pattern.py).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import shutil
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from labserver.demo import cpus
from labserver.harness import arrivals, isolate, measure, pauses, records, results, telemetry
from labserver.harness.meters import CpuMeter, MachineMeter
from labserver.harness.plan import Meters, Options, Outcome, Stage
from labserver.theory import demand, model
from labserver.theory.cores import SATURATED, usable

MIN_REQUESTS = 20
# The machine is the limit when nearly every core is busy while Locust takes a real share of
# them: the generator then waits for CPU beside the server, and its latencies include that wait.
# (A CPU-bound server alone on every core, with a light Locust, is a fair measurement: lesson 03.)
MACHINE_BUSY = 0.95  # share of all cores
MACHINE_LOCUST_CORES = 0.2
MACHINE_BOUND = "cores (the machine's"  # how the model names the cores everything on the machine shares
# Two replies this close came back to back (or within one request's CPU in the workers, if more):
# well under a wake-up and a reply's handling in Locust, far under any sleep a pattern takes.
BUNCH_GAP_MS = 0.3


def collect(
    tmp: Path,
    run_id: str,
    params: dict,
    per_user: records.PerUser,
    *,
    start: float,
    status: str,
    exit_code: int | None,
    meters: tuple[CpuMeter, CpuMeter, MachineMeter],
    options: Options,
    predicted: model.Prediction | Callable[[demand.Demand], model.Prediction] | None = None,
    settle: int | list[int] = 2,
    server_cores: int | None = None,
    held: Callable[[tuple[float, float]], float] | None = None,
    arrivals: tuple[float, float] | None = None,
) -> results.RunResult:
    """One stage's RunResult: its figures, the prediction beside them, and whether it is a valid measurement.

    `meters` are Locust's, the server's and the machine's. `settle` is measure.warmup_end's
    `settle_requests`: the replies each user needs before it is in its loop. `server_cores` are
    the usable CPUs of a server on another machine (RemoteServer), None for one on this machine's.
    `held` gives the mean hold of a pooled database connection in a window (ms; telemetry.db_hold_ms),
    None for a server without the database routes. `arrivals` is an open loop's window, the requests
    meant to leave in it (arrivals.measure): its CPU and its prediction are taken over that one.
    """
    warmup_s, lesson = options.warmup_s, options.lesson
    cut = measure.warmup_end(per_user, start, warmup_s, settle)  # once every user is in its loop
    m = measure.measure(per_user, start=start, warmup_s=warmup_s, settle_requests=settle)
    window = arrivals or (m.window_start, m.window_start + m.window_s)
    locust_meter, server_meter, machine_meter = meters
    locust_cores, locust_busiest = locust_meter.usage(*window)
    server_cpu, _ = server_meter.usage(*window)
    machine_cores = machine_meter.usage(*window)
    # What the lab may use, not the machine's count; for a server on another machine, its own,
    # which nothing of this machine's (Locust, the notebook, others) competes for.
    apart = server_cores is not None
    cores = server_cores if apart else cpus.cores()
    log = (tmp / "locust.log").read_text(errors="replace") if (tmp / "locust.log").exists() else ""
    # Locust's own warnings: a single process's, or a master's about one of its workers
    generator_saturated = locust_busiest >= SATURATED or "CPU usage above" in log or "exceeded cpu threshold" in log
    status, problems = _problems(status, exit_code, tmp, m, options, generator_saturated, locust_busiest)
    throttled = machine_meter.throttled_s(*window)
    paused_ms, stolen = machine_meter.paused_ms(*window), machine_meter.stolen_cores(*window)
    if pauses.problem(paused_ms):
        problems.append(pauses.problem(paused_ms))
    notes = _notes(throttled, cores) + [n for n in [pauses.stolen_note(stolen)] if n]
    served = records.counts(per_user, since=cut)  # as `requests` counts them
    # Where the server's CPU went: the workers that answered (their pids come with every reply),
    # and the rest of its tree (the process pools); the rest of the machine is Locust and others.
    per_process = server_meter.per_process(*window)
    worker_cores = sum(c for pid, c in per_process.items() if pid in served) if served and per_process else math.nan
    # How long the workers' loops were ready with no CPU free (Linux; a remote server's meter has none)
    waits = _served(server_meter, "waited", window, served)
    worker_waited = sum(waits) / len(waits) if waits else math.nan
    # ... and how long they ran: a loop that does neither while requests queue waits for the GIL (lesson 07)
    loops = _served(server_meter, "loop", window, served)
    worker_loop = sum(loops) / len(loops) if loops else math.nan
    # What the workers' CPU went to besides running Python: the kernel's share of it, and their threads'
    # context switches per request (lesson 07: a sync worker's threads handing the GIL across cores)
    kernel, switches = (_served(server_meter, counter, window, served) for counter in ("kernel", "switches"))
    worker_kernel = sum(kernel) / worker_cores if kernel and worker_cores else math.nan
    worker_switches = sum(switches) / m.rps if switches and m.rps else math.nan
    cost = demand.measured(
        worker_cores,
        server_cpu - worker_cores,
        0.0 if apart else machine_cores - server_cpu,
        m.rps,
        generator_cores=locust_cores,
        generators=options.processes,
        db_hold_ms=held(window) if held is not None else math.nan,
        worker_waited=worker_waited,
        window=window,
    )
    p = _prediction(predicted, params, cost, cores, options)
    # Back to back: within one request's CPU in the workers of the reply before (0.3 ms at least)
    bunch_gap_ms = max(BUNCH_GAP_MS, cost.worker_ms) if math.isfinite(cost.worker_ms) else BUNCH_GAP_MS
    bunched, bunched_at_random = records.bunched(per_user, window, bunch_gap_ms)
    limit = None if apart else machine_limit(machine_cores, locust_cores, cores)
    if limit:
        # A run the model itself puts at the machine's shared cores measures what it predicts, and
        # so does one whose server keeps the cores it can use busy: it sets the pace, whatever the
        # generator waits for (lesson 07's pinned server, with Locust and the database on the other
        # core; docs/evidence.md). One put anywhere else, its server with CPU to spare, has the
        # generator wait for CPU it does not count on: a floor.
        pinned = [c for c in str(params.get("cpus") or "").split(",") if c]
        its_cores = usable(params["pattern"], params["workers"], params["procs"], len(pinned) or cores)
        server_set_pace = server_cpu / its_cores >= SATURATED  # NaN compares False
        (notes if p.bottleneck.startswith(MACHINE_BOUND) or server_set_pace else problems).append(limit)
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
        "priced_by": _priced_by(predicted, p),
        "usable_cores": cores,
        "locust_cpu": locust_cores,
        "server_cpu": server_cpu,
        "machine_cpu": machine_cores,  # every process on the machine, these two included
        # the rest: the notebook, a database, others' work (a server on another machine is not in machine_cpu)
        "other_cpu": machine_cores - locust_cores - (0.0 if apart else server_cpu),
        # CPU per request, in ms: what each part paid for one request in this run
        "server_ms": demand.per_request_ms(server_cpu, m.rps),
        "locust_ms": demand.per_request_ms(locust_cores, m.rps),
        "worker_ms": cost.worker_ms,
        "worker_waited": worker_waited,  # share of the window a worker's loop was ready with no CPU free
        "worker_loop": worker_loop,  # share of the window a worker's loop ran on a CPU (its main thread)
        "worker_kernel": worker_kernel,  # share of the workers' CPU spent in the kernel
        "worker_switches": worker_switches,  # context switches of the workers' threads per request (Linux)
        "pool_ms": cost.pool_ms,
        "others_ms": cost.others_ms,
        # a pooled database connection's time per use in the window, which prices the connection pool
        "db_hold_ms": cost.db_hold_ms,
        # how far the users moved in step: replies back to back, and as many at random (records.bunched)
        "bunched": bunched,
        "bunched_at_random": bunched_at_random,
        "generator_saturated": generator_saturated,
        "window_s": m.window_s,
        "window_start": m.window_start,
        "method": m.method,
        "workers_seen": len(served),
        "worker_requests": served,
        "status": status,
        "valid": not problems,
        "problems": "; ".join(problems),
        "notes": "; ".join(notes),
        "throttled_s": throttled,
        "paused_ms": paused_ms,
        "stolen_cpu": stolen,  # cores the host took for others (steal time), within machine_cpu
    }
    environment = results.environment()
    row["git_commit"] = environment["git_commit"]  # lesson 99 and the bench judge the runs of one commit
    row["batch"] = os.environ.get("LAB_BATCH_ID")  # or of one batch, when a batch made them
    manifest = {
        "run_id": run_id,
        "lesson": lesson,
        "params": params,
        "status": status,
        "valid": not problems,
        "problems": problems,
        "locust_exit_code": exit_code,
        "environment": environment,
        "result": row,
    }
    return results.RunResult(row=row, history=history(per_user, start), path=tmp, manifest=manifest)


def _served(meter, counter: str, window: tuple[float, float], served: dict) -> list[float]:
    """How fast `counter` (CpuMeter.counters) grew in each worker that served a request in `window`:
    [] for a meter without it (a remote server's) or where the OS keeps none."""
    if not hasattr(meter, "per_second"):
        return []
    return [v for pid, v in meter.per_second(counter, *window).items() if pid in served]


def _problems(status, exit_code, tmp: Path, m: measure.Measured, options: Options, saturated: bool, busiest: float):
    """The run's status, and why it is not a valid measurement (empty: it is one)."""
    problems = [] if status == "ok" else [status]
    if status == "ok" and exit_code not in (None, 0, 1):  # 1 means "some requests failed"; None: not judged
        status = "locust failed"
        problems.append(f"locust exited with code {exit_code}; see {tmp.name}/locust.log")
    if saturated:
        problems.append(f"load generator saturated ({busiest:.0%} of a core): it measured itself")
    if m.failures and not options.expect_failures:
        problems.append(f"{m.failures} of {m.requests} requests failed")
    if m.requests < MIN_REQUESTS:
        problems.append(f"only {m.requests} requests after the warm-up: run longer or with more users")
    return status, problems


def _notes(throttled_s: float, cores: float) -> list[str]:
    """Not errors, but a reader must know them; the model counts them (the cores it is given are these)."""
    notes = []
    if throttled_s > 0:
        notes.append(f"throttled by the CPU quota for {throttled_s:.2f} s of the window")
    if cores < 2:
        notes.append(f"{cores:g} usable CPU: the server and Locust took turns on it")
    return notes


def _prediction(predicted, params: dict, cost: demand.Demand, cores: float, options: Options) -> model.Prediction:
    """The run's prediction: the lesson's own, or the model's priced with the CPU this run measured.

    `predicted` is a Prediction made before the run (kept as it is), a function of the run's
    measured Demand (a lesson's own model, priced like the rest), or None (model.predict).
    """
    if isinstance(predicted, model.Prediction):
        return predicted
    if callable(predicted):
        return predicted(cost)
    if options.expect_failures:
        # Its rate counts the requests a client abandoned, which a closed loop's model does not
        # price: such a run is judged by its failures and its goodput (lesson 05), not by X = N / R.
        return model.Prediction(math.nan, math.nan, "not modelled: requests time out")
    names = ("pattern", "users", "tasks", "io_ms", "cpu_n", "threads", "workers", "procs")
    return model.predict(*(params[name] for name in names), cores=cores, demand=cost, queueing=True)


def _priced_by(predicted, p: model.Prediction) -> str:
    """What the run's prediction was priced with, as its row records it."""
    if math.isnan(p.rps):
        return "not modelled"
    return "lesson" if isinstance(predicted, model.Prediction) else "measured demand"


def machine_limit(machine_cores: float, locust_cores: float, cores: int) -> str | None:
    """Why the machine, not the server, set the pace of a run; None when it did not (or was not measured)."""
    if machine_cores >= MACHINE_BUSY * cores and locust_cores >= MACHINE_LOCUST_CORES:  # NaN compares False
        return (
            f"the machine was the limit ({machine_cores:.2f} of {cores} cores busy, {locust_cores:.2f} of them"
            " Locust's): the generator waited for CPU beside the server, so the figure is a floor"
        )
    return None


def history(per_user, start: float) -> pd.DataFrame:
    """Requests finished per second of the run, with their p95 latency."""
    flat = pd.DataFrame([(r.end, r.ms, r.ok) for user in per_user for r in user], columns=["end", "latency_ms", "ok"])
    if flat.empty:
        return pd.DataFrame(columns=["second", "rps", "p95_ms", "failures"])
    flat["second"] = np.floor(flat["end"] - start).astype(int)  # a reply just before `start` is in second -1
    return (
        flat.groupby("second")
        .agg(
            rps=("ok", "size"), p95_ms=("latency_ms", lambda s: s.quantile(0.95)), failures=("ok", lambda s: (~s).sum())
        )
        .reset_index()
    )


def save_plan(stages: list[Stage], run_ids: list[str], tmp: Path, outcome: Outcome, options: Options) -> list:
    """Publish one run folder per stage that ran: the finished ones "ok", the one cut short with its status."""
    meters = outcome.meters or Meters.unsampled()
    exit_code = outcome.locust.returncode if outcome.locust else None
    ended = outcome.ended
    t0, files = records.read_plan(tmp)
    t0 = t0 if t0 is not None else outcome.started_at.timestamp()
    if options.master is not None:  # the workers that came and sent load, however many were asked for
        sent = sum(1 for name in files if name.startswith("records.w"))
        options = dataclasses.replace(options, processes=sent or options.processes)
    saved, drained = [], t0  # drained: when the last request of the stages so far was answered
    for i, (stage, run_id) in enumerate(zip(stages, run_ids, strict=True)):
        begins = t0 + sum(s.duration_s for s in stages[:i])
        ends = begins + stage.duration_s
        last = i == len(stages) - 1
        if ended is not None and ended < begins:
            break  # never started: nothing to save
        cut_short = ended is not None and (last or ended < ends)
        folder = tmp if i == 0 else results.partial_dir(run_id)
        if i:
            _link_locust_files(saved[0].path, folder)  # the first run's folder, published by now
        mine = records.stage(files, i, stage.users)
        records.write(folder, mine)
        # The stage's first requests share the server with what is left of the stages before, so
        # its warm-up starts once the last of those is answered; and
        # what its own queue answers after its end, with fewer users sending, is not its steady flow.
        start = max(begins, drained)
        # An open loop's request belongs to its stage however late it is answered (its drain_s let it be).
        until = math.inf if stage.rate else ends
        per_user = [[r for r in user if r.end <= until] for per_file in mine.values() for user in per_file]
        # A user of the stage before carried on (locustfiles/pattern.py): it is in its loop once that
        # stage has drained. One that joins needs two replies: its first may open a connection.
        same_server = i > 0 and stages[i - 1].server is stage.server  # else every user opens a connection
        before = stages[i - 1].users if same_server else 0
        settle = [0 if u < before else 2 for per_file in mine.values() for u in range(len(per_file))]
        drained = max([ends, *(r.end for per_file in mine.values() for user in per_file for r in user)])
        # An open loop is measured over the requests meant to leave from its warm-up to its drain
        meant = (start + options.warmup_s, ends - stage.drain_s) if stage.rate else None
        result = collect(
            folder,
            run_id,
            _params(stage, stages, options),
            per_user,
            start=start,
            status=outcome.status if cut_short else "ok",
            exit_code=exit_code if (cut_short or last) else None,  # Locust's exit says how the plan ended
            meters=(meters.locust, meters.of(stage.server), meters.machine),
            options=options,
            predicted=stage.predicted,
            settle=settle,
            server_cores=None if getattr(stage.server, "same_machine", True) else stage.server.cores(),
            held=_held(stage.server),
            arrivals=meant,
        )
        kept_off = isolate.others(stage.server)  # where isolate.py put Locust and the neighbours meanwhile
        if kept_off:
            note = f"Locust and the server's neighbours ran on CPU {','.join(map(str, kept_off))}, off its cores"
            result.row["notes"] = "; ".join(n for n in (result.row["notes"], note) if n)  # the manifest's too
        run_started = datetime.fromtimestamp(begins, UTC).isoformat(timespec="seconds")
        result.manifest.update(
            started_at=run_started,
            ended_at=datetime.fromtimestamp(min(ended or time.time(), ends), UTC).isoformat(timespec="seconds"),
            plan={"first_run": run_ids[0], "stage": i, "stages": len(stages)},
        )
        result.row["started_at"] = run_started
        if meant:
            _open_loop(result, per_user, meant, stage.rate)
        if outcome.server_log is not None and cut_short:
            (folder / "server.log").write_text(outcome.server_log)
        # what the server's workers were doing meanwhile: telemetry.csv, the samples of the window
        first = result.row["window_start"]
        telemetry.save(folder, stage.server, start, (first, first + result.row["window_s"]))
        saved.append(results.finish(folder, result.manifest, result.history))
        if cut_short:
            break
    return saved


def _held(server) -> Callable[[tuple[float, float]], float] | None:
    """How to read a window's connection hold from `server`'s telemetry; None for a server without a database."""
    if not getattr(getattr(server, "settings", None), "database_url", ""):
        return None
    return functools.partial(telemetry.db_hold_ms, server)


def _open_loop(result: results.RunResult, per_user, window: tuple[float, float], rate: float) -> None:
    """An open loop's figures in its row: arrivals kept, throughput served, latency from the schedule."""
    a = arrivals.measure(per_user, *window)
    row = result.row
    row.update(arrivals.row(a), rps=a.served_rps, requests=a.requests)
    predicted = row["predicted_rps"]
    row["ratio"] = a.served_rps / predicted if predicted and not math.isnan(predicted) else math.nan
    why = arrivals.problem(a)
    if why:
        row["problems"] = "; ".join(p for p in (row["problems"], why) if p)
        row["valid"] = False
        result.manifest["problems"].append(why)
        result.manifest["valid"] = False
    result.manifest["result"] = row


def _params(stage: Stage, stages: list[Stage], options: Options) -> dict:
    """A run's parameters, as its row and manifest record them."""
    settings = stage.server.settings
    return dict(
        pattern=stage.pattern,
        users=stage.users,
        tasks=stage.tasks,
        io_ms=stage.io_ms,
        cpu_n=stage.cpu_n,
        workers=settings.workers,
        threads=settings.threads,
        procs=settings.procs,
        cpus=",".join(map(str, settings.cpus)),  # "" unless the server was pinned
        duration_s=stage.duration_s,
        spawn_rate=options.spawn_rate or max(s.users for s in stages),
        user_class=options.user_class,
        processes=options.processes,
        timeout_s=options.timeout_s,
        **({"rate": stage.rate, "drain_s": stage.drain_s} if stage.rate else {}),
        **({"master": options.master} if options.master else {}),  # its Locust workers joined from elsewhere
        **stage.tags,
    )


def _link_locust_files(src: Path, dst: Path) -> None:
    """Locust's own files (log, report, stats) of the whole plan, in every run's folder: hard links, no copies."""
    for path in src.iterdir():
        if path.name.startswith(("locust", "report")) or path.name == "plan.json":
            try:
                os.link(path, dst / path.name)
            except OSError:
                shutil.copy2(path, dst / path.name)

"""One stage of a plan, from the records Locust left to its RunResult: figures, prediction, verdict.

The figures come from per-request records rather than Locust's stats CSV, which misses the
last second; a request belongs to the stage in which it was sent (locustfiles/pattern.py).
The row's columns are declared in columns.py; publish.py splits a plan into its stages.
Where the CPU went in the stage's window is measured in usage.py, and why a run missed its
before-prediction is named in miss.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from labserver import config, protocol
from labserver.harness.plans.plan import Before, Meters, Options, Predicted, Stage
from labserver.harness.processes import pauses
from labserver.harness.processes.supervise import Status
from labserver.harness.rows import arrivals, columns, measure, records, results
from labserver.harness.rows.miss import miss_cause
from labserver.harness.rows.usage import Held, Span, Window, window_cpu
from labserver.harness.servers import isolate
from labserver.theory import bottlenecks, demand, model
from labserver.theory.cores import SATURATED, usable
from labserver.theory.demand import Demand

MIN_REQUESTS = 20
# The machine is the limit when nearly every core is busy while Locust takes a real share of
# them: the generator then waits for CPU beside the server, and its latencies include that wait.
# (A CPU-bound server alone on every core, with a light Locust, is a fair measurement: lesson 03.)
MACHINE_BUSY = 0.95  # share of all cores
MACHINE_LOCUST_CORES = 0.2
# Two replies this close came back to back (or within one request's CPU in the workers, if more):
# well under a wake-up and a reply's handling in Locust, far under any sleep a pattern takes.
BUNCH_GAP_MS = 0.3


@dataclass(frozen=True)
class StageInput:
    """One stage of a plan as collect() takes it: where it is saved, its records, its clock and how it ended.

    `settle` is measure.warmup_end's `settle_requests`: the replies each user needs before it is
    in its loop. `server_cores` are the usable CPUs of a server on another machine
    (RemoteServer), None for one on this machine's. `held` gives the mean hold of a pooled
    database connection in a window (ms; telemetry.db_hold_ms), None for a server without the
    database routes. `meant` is an open loop's window, the requests meant to leave in it
    (arrivals.measure): its CPU and its prediction are taken over that one.
    """

    folder: Path
    run_id: str
    stage: Stage
    per_user: records.PerUser
    start: float  # when its warm-up starts (epoch s)
    started_at: str  # when the stage began, as its row says it
    status: str = Status.OK
    exit_code: int | None = None
    settle: int | list[int] = 2
    server_cores: float | None = None
    held: Held | None = None
    meant: Window | None = None


def collect(given: StageInput, meters: Meters, options: Options) -> results.RunResult:
    """One stage's RunResult: its figures, the prediction beside them, and whether it is a valid measurement.

    Its row holds the columns of columns.py, filled in steps: the window, where the CPU went, the
    prediction, an open loop's own figures, the verdict. `meters` are the plan's (Locust's, each
    server's, the machine's); `options` hold the plan's spawn rate (publish.save_plan's).
    """
    stage, per_user = given.stage, given.per_user
    span = _window(given, options.warmup_s)
    m = span.measured
    cpu = window_cpu(meters, stage, span, given.server_cores, options.processes, given.held)
    p = stage.prediction(options, cpu.columns["usable_cores"], demand=cpu.cost)
    # A window too short for the meters' samples measures no demand: the model's prediction would then price fib
    # with the lab's own Python, not the server's (lesson 10's free-threaded build), so the one made before stands
    before = stage.before if stage.predicted is None and not cpu.cost.known else None
    unmeasured = before is not None
    p = before.prediction if before is not None else p
    figures = {**_figures(m, p, stage.predicted), **cpu.columns, **_bunching(per_user, span.window, cpu.cost)}
    if unmeasured and math.isfinite(p.rps):
        figures["priced_by"] = demand.UNMEASURED
    a = arrivals.measure(per_user, *given.meant) if given.meant else None
    verdict, problems = _validity(given, m, figures, options=options, busiest=cpu.busiest, open_loop=a)
    environment = results.environment()
    figures |= verdict | {
        "git_commit": environment["git_commit"],  # lesson 99 and the bench judge the runs of one commit
        "batch": config.BATCH_ID.read(),  # or of one batch, when a batch made them
        "started_at": given.started_at,
    }
    if a is not None:
        figures |= _open_loop(a, p.rps)
    figures |= _before(stage.before, figures)
    params = _params(stage, options)
    row = columns.row({"run_id": given.run_id, "lesson": options.lesson}, params, figures)
    manifest = {
        "run_id": given.run_id,
        "lesson": options.lesson,
        "params": params,
        "status": row["status"],
        "valid": row["valid"],
        "problems": problems,
        "locust_exit_code": given.exit_code,
        "environment": environment,
        "result": row,
    }
    return results.RunResult(row=row, history=history(per_user, given.start), path=given.folder, manifest=manifest)


def _window(given: StageInput, warmup_s: float) -> Span:
    """The stage's figures after its warm-up, and the window its CPU and prediction are taken over."""
    per_user, start, settle = given.per_user, given.start, given.settle
    cut = measure.warmup_end(per_user, start, warmup_s, settle)  # once every user is in its loop
    m = measure.measure(per_user, start=start, warmup_s=warmup_s, settle_requests=settle)
    window = given.meant or (m.window_start, m.window_start + m.window_s)
    return Span(m, window, records.counts(per_user, since=cut))  # as `requests` counts them


def _figures(m: measure.Measured, p: model.Prediction, predicted: Predicted) -> dict[str, Any]:
    """Throughput and latency after the warm-up, and the prediction beside them."""
    return {
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
        "ratio": _ratio(m.rps, p.rps),
        "priced_by": _priced_by(predicted, p),
        "window_s": m.window_s,
        "window_start": m.window_start,
        "method": m.method,
    }


def _open_loop(a: arrivals.Arrivals, predicted_rps: float) -> dict:
    """An open loop's own figures: arrivals kept, throughput served, latency from the schedule."""
    return {
        **arrivals.row(a),
        "rps": a.served_rps,
        "requests": a.requests,
        "ratio": _ratio(a.served_rps, predicted_rps),
    }


def _before(before: Before | None, figures: dict[str, Any]) -> dict[str, Any]:
    """The prediction made before the run (pricing.py) beside its measurement, and where they differ by more than
    BEFORE_MISS, what the run's window measured that the one-user prices did not foresee."""
    p = before.prediction if before is not None else model.Prediction(math.nan, math.nan, "not foreseen")
    one = before.one_user if before is not None else None
    ratio = _ratio(figures["rps"], p.rps)
    return {
        "predicted_before_rps": p.rps,
        "predicted_before_ms": p.latency_ms,
        "before_bottleneck": p.bottleneck,
        "ratio_before": ratio,
        "before_priced_by": before.priced_by if before is not None else "not foreseen",
        "one_user_ms": one.service_ms if one else math.nan,
        "one_user_cpu_ms": one.worker_ms + one.pool_ms if one else math.nan,
        "one_user_loop_ms": one.loop_ms if one else math.nan,
        "one_user_threads_ms": one.threads_ms if one else math.nan,
        "one_user_pool_ms": one.pool_ms if one else math.nan,
        "one_user_reply_kb": one.reply_bytes / 1024 if one else math.nan,
        "before_locust_ms": before.generator_ms if before is not None else math.nan,
        "one_user_s": one.seconds if one else math.nan,
        "before_miss": miss_cause(ratio, one, before, figures),
    }


def _params(stage: Stage, options: Options) -> dict:
    """A run's parameters, as its row and manifest record them: its workload, server settings and Locust's options."""
    return columns.params({"workload": stage.workload, "server": stage.server.settings, "locust": options}, stage.tags)


def _ratio(measured_rps: float, predicted_rps: float) -> float:
    return measured_rps / predicted_rps if predicted_rps and not math.isnan(predicted_rps) else math.nan


def _bunching(per_user: records.PerUser, window: Window, cost: Demand) -> dict[str, float]:
    """How far the users moved in step: replies back to back, and as many at random (records.bunched)."""
    # Back to back: within one request's CPU in the workers of the reply before (0.3 ms at least)
    gap_ms = max(BUNCH_GAP_MS, cost.worker_ms) if math.isfinite(cost.worker_ms) else BUNCH_GAP_MS
    bunched, at_random = records.bunched(per_user, window, gap_ms)
    return {"bunched": bunched, "bunched_at_random": at_random}


def _validity(
    given: StageInput,
    m: measure.Measured,
    figures: dict[str, Any],
    *,
    options: Options,
    busiest: float,
    open_loop: arrivals.Arrivals | None,
) -> tuple[dict[str, Any], list[str]]:
    """The run's verdict columns, and its problems: why it is not a valid measurement (none: it is one)."""
    # Locust's own warning: a single process's, or one of a master's workers' (its events say so)
    folder = given.folder
    saturated = busiest >= SATURATED or protocol.Events(folder / protocol.EVENTS_FILE).state().cpu_warning
    status, problems = _problems(given, m, options, saturated, busiest)
    problems += [why for why in [pauses.problem(figures["paused_ms"])] if why]
    notes = _notes(figures["throttled_s"], figures["usable_cores"])
    notes += [note for note in [pauses.stolen_note(figures["stolen_cpu"])] if note]
    limit = None if given.server_cores is not None else _machine_limit(given.stage, figures)
    if limit:
        (notes if limit[1] else problems).append(limit[0])
    kept_off = isolate.others(given.stage.server)  # where isolate.py put Locust and the neighbours meanwhile
    if kept_off:
        notes.append(f"Locust and the server's neighbours ran on CPU {','.join(map(str, kept_off))}, off its cores")
    if open_loop is not None:
        problems += [why for why in [arrivals.problem(open_loop)] if why]
    verdict = {"generator_saturated": saturated, "status": str(status), "valid": not problems}  # the words
    return verdict | {"problems": "; ".join(problems), "notes": "; ".join(notes)}, problems


def _problems(
    given: StageInput, m: measure.Measured, options: Options, saturated: bool, busiest: float
) -> tuple[str, list[str]]:
    """The run's status, and why it is not a valid measurement (empty: it is one)."""
    status, exit_code = given.status, given.exit_code
    problems = [] if status == Status.OK else [status]
    if status == Status.OK and exit_code not in (None, 0, 1):  # 1 means "some requests failed"; None: not judged
        status = Status.LOCUST_FAILED
        problems.append(f"locust exited with code {exit_code}; see {given.folder.name}/locust.log")
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


def _machine_limit(stage: Stage, figures: dict) -> tuple[str, bool] | None:
    """Why the machine set the pace, and whether that is a note rather than a problem; None when it did not."""
    cores = figures["usable_cores"]
    limit = machine_limit(figures["machine_cpu"], figures["locust_cpu"], cores)
    if not limit:
        return None
    # A run the model itself puts at the machine's shared cores measures what it predicts, and
    # so does one whose server keeps the cores it can use busy: it sets the pace, whatever the
    # generator waits for (lesson 07's pinned server, with Locust and the database on the other
    # core; docs/evidence.md). One put anywhere else, its server with CPU to spare, has the
    # generator wait for CPU it does not count on: a floor.
    settings = stage.server.settings
    its_cores = usable(stage.workload.pattern, settings.workers, settings.procs, len(settings.cpus) or cores)
    server_set_pace = figures["server_cpu"] / its_cores >= SATURATED  # NaN compares False
    return limit, figures["bottleneck"] in bottlenecks.MACHINE_BOUND or server_set_pace


def _priced_by(predicted: Predicted, p: model.Prediction) -> str:
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


def history(per_user: records.PerUser, start: float) -> pd.DataFrame:
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

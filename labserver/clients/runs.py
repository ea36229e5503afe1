"""Lesson 06's runs: a client strategy in its own process against a LabServer, predicted, measured, saved.

Each run is `python -m labserver.clients` in its own session (it dies with its owner), which
measures its own wall time and CPU; the server's CPU is read around it. Every run lands in
data/runs/ with a manifest, like a Locust run, so that `load_runs` and the summary find it.
"""

from __future__ import annotations

import dataclasses
import math
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from labserver import config
from labserver.clients.process import client_process
from labserver.harness.processes import pauses
from labserver.harness.processes.machine import wait_until_quiet
from labserver.harness.processes.supervise import Status
from labserver.harness.rows import columns, results
from labserver.harness.rows.miss import BEFORE_MISS
from labserver.harness.servers.launcher import LabServer
from labserver.harness.servers.server import ServerError
from labserver.labels import client_label, pattern_label
from labserver.theory.batch import LIBRARY, Client, Cost, check_run
from labserver.theory.clients import predict_client, slots
from labserver.theory.cores import SATURATED
from labserver.theory.model import Prediction
from labserver.theory.workload import Workload

ALONE = 7  # lone requests per library and endpoint before a sweep: their median prices Cost.alone_ms
# Before a sweep, each client strategy's CPU per request is priced on each endpoint by a short batch of HOT_REQUESTS,
# HOT in flight, without the endpoint's wait: its replies come back as fast as the client reads them, so the client
# runs busy, as in the runs its CPU decides (a client idle between replies pays a wake-up for each); and the batch
# costs a fraction of a second
HOT, HOT_REQUESTS = 16, 128


def alone_client(client: Client) -> Client:
    """The client that sends `client`'s lone requests: the same library, and the same use of connections."""
    if client == "aiohttp" or client == "session":
        return client
    return "loop"


def lone(server: LabServer, client: Client, pattern: str, io_ms: int) -> tuple[dict | None, float]:
    """ALONE requests to `/{pattern}?io_ms=…`, one at a time, with `client`'s library: their report (None if any
    failed) and the server's CPU seconds meanwhile.

    The same library as the run, in its own process, as the run's: `requests.get` opens a new
    connection for each (the loop), a Session and aiohttp reuse their one after the first.
    """
    return _batch(server, alone_client(client), pattern, io_ms, ALONE, 1)


def price(server: LabServer, client: Client, pattern: str, io_ms: int, alone: tuple[dict | None, float]) -> Cost | None:
    """`client`'s and the server's CPU per request on `/{pattern}?io_ms=…`, priced before a run, with `alone` (`lone`'s
    batch) setting its floor: a loop's CPU from that batch too (it sends one at a time, as the loop does), any other's
    from HOT_REQUESTS with HOT in flight and no wait. None if any request failed."""
    if client == "loop":
        (report, server_s), requests = alone, ALONE
    else:
        (report, server_s), requests = _batch(server, client, pattern, 0, HOT_REQUESTS, HOT), HOT_REQUESTS
    if not report or not alone[0]:
        return None
    return Cost(
        client_ms=report["cpu_s"] / requests * 1000,
        server_ms=server_s / requests * 1000,
        alone_ms=float(alone[0]["p50_ms"]),
        send_share=report.get("send_share", math.nan),
    )


def _batch(
    server: LabServer, client: Client, pattern: str, io_ms: int, requests: int, in_flight: int
) -> tuple[dict | None, float]:
    """A batch sent before the runs to price them: its report (None if any request failed) and the server's CPU s."""
    url = f"{server.url}/{pattern}?io_ms={io_ms}"
    with tempfile.TemporaryDirectory(prefix="lab-price-") as tmp:
        timeout_s = 30 + 5 * requests * (io_ms / 1000 + 0.01)
        report, status, server_s = client_process(
            server, client, url, requests, in_flight, log=Path(tmp) / "client.log", timeout_s=timeout_s
        )
    ok = status == Status.OK and report and not report.get("failures")
    return (report if ok else None), server_s


def run_client(
    server: LabServer,
    client: Client,
    workload: Workload,
    *,
    requests: int,
    lesson: str | None = None,
    alone_ms: float = math.nan,
    before: Cost | None = None,
) -> results.RunResult:
    """Send `requests` GETs to `/{pattern}?io_ms=…` with `client`, `workload.users` in flight; measure and save them.

    The row holds the measurement (`rps` = requests / wall time, as seed 004 counts it), the
    prediction (`predicted_rps`, `bottleneck`, `ratio`), priced with the client's and the
    server's CPU per request measured in this run, as every lesson's runs are, and a lone
    request's latency if given (`alone_ms`, see `lone` and `Cost.alone_ms`), the pure
    concurrency model (`concurrency_rps`), and both CPUs (`client_cpu`, `server_cpu`, in cores;
    `client_ms`, `server_ms` per request). `before`: the costs priced before the run (`price`), which
    price its before-prediction (`predicted_before_rps`, `ratio_before`).
    """
    w = dataclasses.replace(workload, users=1) if client == "loop" else workload  # a loop has one in flight
    check_run(client, w.pattern, requests, w.users, w.io_ms)
    if not server.alive:
        tail = f"\n{server.log_tail()}" if server.log_path else ""
        raise ServerError(f"the server is not running; start it first (`with LabServer() as server:`){tail}")
    where = slots(w.pattern, server.settings.threads, server.settings.workers)
    bound = predict_client(client, requests=requests, concurrency=w.users, io_ms=w.io_ms, server_slots=where)
    run_id = results.new_run_id(f"{w.pattern}-{client}", w.users)
    tmp = results.partial_dir(run_id)
    started_at = _now()
    report, status, server_s = None, str(Status.INTERRUPTED), 0.0
    try:
        url, timeout_s = f"{server.url}/{w.pattern}?io_ms={w.io_ms}", 30 + 5 * requests / bound.rps
        report, status, server_s = client_process(
            server, client, url, requests, w.users, log=tmp / "client.log", timeout_s=timeout_s
        )
    finally:  # an interrupted run is saved too, marked invalid
        params = dict(lesson=lesson, pattern=w.pattern, client=client, library=LIBRARY[client], users=w.users)
        params |= dict(requests=requests, tasks=w.tasks, io_ms=w.io_ms, cpu_n=w.cpu_n)
        params |= dict(workers=server.settings.workers, threads=server.settings.threads)
        row = _row(
            run_id, params, report or {}, status=status, server_s=server_s, slots=where, bound=bound,
            started_at=started_at, alone_ms=alone_ms, before=before,
        )  # fmt: skip
        saved = _finish(tmp, params, row, report)
    if status == Status.SERVER_DIED:
        raise ServerError(f"the server died during the run; partial result saved in {saved.path}\n{server.log_tail()}")
    return saved


def _finish(tmp: Path, params: dict, row: dict, report: dict | None) -> results.RunResult:
    """Publish a client run's folder: its manifest, with `row`, and its replies per second."""
    manifest = {
        "run_id": row["run_id"],
        "lesson": params["lesson"],
        "kind": "client",
        "params": params,
        "status": row["status"],
        "valid": row["valid"],
        "problems": row["problems"],
        "environment": results.environment(),
        "result": row,
        "started_at": row["started_at"],
        "ended_at": _now(),
    }
    ends = pd.Series((report or {}).get("ends", []), dtype=float)
    history = ends.astype(int).value_counts().sort_index().rename_axis("second").reset_index(name="rps")
    return results.finish(tmp, manifest, history)


def _row(
    run_id: str,
    params: dict,
    report: dict,
    *,
    status: str,
    server_s: float,
    slots: float,
    bound: Prediction,
    started_at: str,
    alone_ms: float = math.nan,
    before: Cost | None = None,
) -> dict:
    """A client run's row: its parameters, the client's report, and the prediction priced with the CPU it measured.

    `server_s` is the server's CPU seconds over the run, `slots` the requests it holds at once,
    `bound` the pure concurrency model's prediction. The row's columns are harness/rows/columns.py's
    CLIENT, in that order.
    """
    n, rps = params["requests"], report.get("rps", math.nan)
    cost = Cost(
        client_ms=report.get("cpu_s", math.nan) / n * 1000,
        server_ms=server_s / n * 1000,
        alone_ms=alone_ms,
        send_share=report.get("send_share", math.nan),
    )
    batch = dict(requests=n, concurrency=params["users"], io_ms=params["io_ms"], server_slots=slots)
    priced = bool(cost.known and report)
    predicted = predict_client(params["client"], **batch, cost=cost if priced else None)
    foreseen = predict_client(params["client"], **batch, cost=before) if before is not None else None
    problems = [] if status == Status.OK else [status]
    if report.get("failures"):
        problems.append(f"{report['failures']} of {n} requests failed")
    paused = pauses.problem(report.get("paused_ms", math.nan))
    if paused:
        problems.append(paused)
    figures = {
        "rps": rps,
        "wall_s": report.get("wall_s", math.nan),
        "p50_ms": report.get("p50_ms", math.nan),
        "p95_ms": report.get("p95_ms", math.nan),
        "mean_ms": report.get("mean_ms", math.nan),
        "failures": report.get("failures", n),
        "predicted_rps": predicted.rps,
        "predicted_ms": predicted.latency_ms,
        "bottleneck": predicted.bottleneck,
        "ratio": rps / predicted.rps if predicted.rps > 0 else math.nan,
        "concurrency_rps": bound.rps,
        **_before(rps, foreseen, before, cost),
        **_cpu(report, cost, server_s),
        "priced_by": "measured demand" if priced else "concurrency alone",
        "status": str(status),  # the words, not the enum
        "valid": not problems,
        "problems": "; ".join(problems),
        "started_at": started_at,
        "git_commit": results.environment()["git_commit"],  # lesson 99 judges the runs of one commit
        "batch": config.BATCH_ID.read(),  # or of one batch
    }
    return columns.client_row(run_id, params, figures)


def _before(rps: float, foreseen: Prediction | None, before: Cost | None, cost: Cost) -> dict:
    """A client run's prediction made before it, from the costs its batch priced then (None: not priced), and where
    the run missed it by more than BEFORE_MISS, the costs the run measured beside those priced."""
    p = foreseen or Prediction(math.nan, math.nan, "")
    ratio = rps / p.rps if p.rps > 0 else math.nan
    causes = []
    if before is not None and abs(ratio - 1) > BEFORE_MISS:  # NaN compares False
        for side, priced, measured in (("client", before.client_ms, cost.client_ms),
                                       ("server", before.server_ms, cost.server_ms)):  # fmt: skip
            if priced > 0 and abs(measured / priced - 1) > BEFORE_MISS:  # NaN compares False
                causes.append(f"{side} CPU/request {measured:.2f} ms, priced {priced:.2f}")
    return {
        "predicted_before_rps": p.rps,
        "predicted_before_ms": p.latency_ms,
        "before_bottleneck": p.bottleneck,
        "ratio_before": ratio,
        "before_priced_by": "one batch before" if foreseen is not None else "not priced",
        "before_miss": "; ".join(causes),
    }


def _cpu(report: dict, cost: Cost, server_s: float) -> dict:
    """Where a client run's CPU went: the client's and the server's, per request and in cores, and the host's share."""
    wall_s = report.get("wall_s", math.nan)
    return {
        "client_cpu": report.get("client_cpu", math.nan),
        "client_ms": cost.client_ms,
        "send_share": cost.send_share,  # of client_ms, spent before waiting for the reply (requests only)
        # the first burst: the client's CPU until its first reply, and when that reply came (ms)
        "first_cpu_ms": report.get("first_cpu_s", math.nan) * 1000,
        "first_ms": min(report["ends"]) * 1000 if report.get("ends") else math.nan,
        "server_cpu": server_s / wall_s if wall_s > 0 else math.nan,
        "server_ms": cost.server_ms,
        "alone_ms": cost.alone_ms,
        "paused_ms": report.get("paused_ms", math.nan),
        "stolen_cpu": report.get("stolen_cpu", math.nan),  # cores the host took for others (steal time)
        "notes": pauses.stolen_note(report.get("stolen_cpu", math.nan)) or "",
        "client_saturated": report.get("client_cpu", 0.0) >= SATURATED,
    }


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def client_sweep(server: LabServer, runs: pd.DataFrame, io_ms: int, lesson: str | None = None) -> pd.DataFrame:
    """run_client for every planned run (the rows of `plan` whose `run` is true), in the plan's order; a row each.

    First, a lone request's latency for each library and endpoint the runs use (`lone`): it
    prices every run of that pair (`Cost.alone_ms`); and each strategy's CPU per request on each
    endpoint (`price`), which prices every run's prediction before it.
    """
    todo = runs[runs["run"]] if "run" in runs else runs
    # not in a price: what an endpoint's first request builds and keeps, and a new server's process pool starting
    for pattern in todo["pattern"].unique():
        server.get(f"/{pattern}?io_ms=0")
    wait_until_quiet()
    alone: dict[tuple[str, str], tuple[dict | None, float]] = {}
    before: dict[tuple[str, str], Cost | None] = {}
    for r in todo.itertuples():
        if (alone_client(r.client), r.pattern) not in alone:
            alone[alone_client(r.client), r.pattern] = lone(server, r.client, r.pattern, io_ms)
        if (r.client, r.pattern) not in before:
            before[r.client, r.pattern] = price(
                server, r.client, r.pattern, io_ms, alone[alone_client(r.client), r.pattern]
            )
    done = []
    for r in todo.itertuples():
        workload = Workload(r.pattern, int(r.users), io_ms=io_ms)
        report, cost = alone[alone_client(r.client), r.pattern][0], before[r.client, r.pattern]
        n, floor = int(r.requests), float(report["p50_ms"]) if report else math.nan
        run = run_client(server, r.client, workload, requests=n, lesson=lesson, alone_ms=floor, before=cost)
        if pauses.problem(run.row["paused_ms"]):  # it measured the machine's pause: kept, marked, and measured again
            print(pauses.again(f"{r.client} on {r.pattern}", run.row))
            wait_until_quiet()  # a neighbour's burst on the host may last a while
            run = run_client(server, r.client, workload, requests=n, lesson=lesson, alone_ms=floor, before=cost)
        done.append(run)
    return pd.DataFrame([run.row for run in done])


COLUMNS = [
    "pattern",
    "client",
    "users",
    "requests",
    "rps",
    "predicted_before_rps",
    "ratio_before",
    "predicted_rps",
    "ratio",
    "bottleneck",
    "concurrency_rps",
    "wall_s",
    "p50_ms",
    "client_cpu",
    "client_ms",
    "server_cpu",
    "server_ms",
    "failures",
    "valid",
]


def table(frame: pd.DataFrame) -> pd.DataFrame:
    """The columns a reader of lesson 06 needs, rounded for the eye, each endpoint and client also by its label.

    The labels are for the eye only: `pattern` and `client` stay the names the code filters on.
    """
    shown = frame[[c for c in COLUMNS if c in frame]].copy()
    for column, name, label in (("pattern", "label", pattern_label), ("client", "client_label", client_label)):
        if column in shown:
            shown.insert(shown.columns.get_loc(column) + 1, name, shown[column].map(label))
    return shown.round(
        {
            "rps": 1,
            "predicted_before_rps": 1,
            "ratio_before": 2,
            "predicted_rps": 1,
            "ratio": 2,
            "concurrency_rps": 1,
            "wall_s": 2,
            "p50_ms": 1,
            "client_cpu": 2,
            "client_ms": 2,
            "server_cpu": 2,
            "server_ms": 2,
        }
    )

"""The columns of a Locust run's row on disk (its manifest's `result`, `load_runs`' frame), declared once.

Each column has its name, its unit and what it means; the row holds them in this order. A run's
parameters come first: its workload (theory/workload.py), its server's settings
(demo/settings.py) and Locust's options (harness/plans/plan.py), then the lesson's own tags; then
the figures collect.py measures, step by step; an open loop's own figures come last.
collect.py fills every column through `row`, which refuses one undeclared or left out.

Lesson 06's client runs (clients/runs.py) are saved the same way, with a row of their own,
CLIENT, filled through `client_row`: a column they share with a Locust run's means the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

# "text" and "bool" have no unit; "count" is a number of things (requests, users, processes);
# "share" runs from 0 to 1, "ratio" is one figure over another; "ms" and "s" are durations,
# "ms/request" CPU time per request.
Unit = Literal[
    "text", "bool", "count", "share", "ratio", "ms", "s", "ms/request", "req/s", "users/s", "cores", "fib(n)",
    "epoch s", "ISO 8601", "per request", "count by pid", "KiB",
]  # fmt: skip
Source = Literal["workload", "server", "locust"]


@dataclass(frozen=True)
class Column:
    name: str
    unit: Unit
    meaning: str
    source: Source | None = None  # a parameter's: the Workload, the server's Settings or Locust's Options
    only_with: str | None = None  # a parameter in the row only where this one of its source is set


PARAMS = (
    Column("pattern", "text", "the endpoint measured: a concurrency pattern or a database route", "workload"),
    Column("users", "count", "closed-loop users (an open loop: 1, its schedule)", "workload"),
    Column("tasks", "count", "independent sub-tasks per request", "workload"),
    Column("io_ms", "ms", "simulated I/O wait per sub-task", "workload"),
    Column("cpu_n", "fib(n)", "CPU work per sub-task: fib(cpu_n)", "workload"),
    Column("workers", "count", "uvicorn worker processes", "server"),
    Column("threads", "count", "thread-pool size per worker", "server"),
    Column("procs", "count", "process-pool size per worker", "server"),
    Column("cpus", "text", "the CPUs the server was pinned to, comma-separated; empty: not pinned", "server"),
    Column("gil", "bool", "whether the server's threads shared one GIL (False: free-threaded, without it)", "server"),
    Column("duration_s", "s", "length of the run", "workload"),
    Column("spawn_rate", "users/s", "users Locust started per second", "locust"),
    Column("user_class", "text", "Locust's user class (labserver.harness.load.generator.USER_CLASSES)", "locust"),
    Column("processes", "count", "Locust processes that sent the load", "locust"),
    Column("timeout_s", "s", "a request's timeout in Locust", "locust"),
    Column("rate", "req/s", "arrivals per second of an open loop", "workload", only_with="rate"),
    Column("drain_s", "s", "an open loop's last seconds, with no new arrival", "workload", only_with="rate"),
    Column("master", "text", "HOST:PORT where Locust workers from other machines joined", "locust", "master"),
)
FIGURES = (
    Column("rps", "req/s", "throughput over the window (an open loop: replies with 200)"),
    Column("p50_ms", "ms", "median latency"),
    Column("p95_ms", "ms", "95th percentile latency"),
    Column("p99_ms", "ms", "99th percentile latency"),
    Column("mean_ms", "ms", "mean latency"),
    Column("requests", "count", "requests counted (after the warm-up; an open loop: meant to leave in the window)"),
    Column("failures", "count", "requests counted that failed"),
    Column("failure_rate", "share", "failures / requests"),
    Column("predicted_rps", "req/s", "the prediction's throughput"),
    Column("predicted_ms", "ms", "the prediction's mean latency"),
    Column("bottleneck", "text", "what sets the predicted throughput"),
    Column("ratio", "ratio", "measured / predicted throughput (1: as predicted)"),
    Column(
        "priced_by",
        "text",
        "what priced the prediction: 'measured demand', 'lesson', 'before the run (no demand measured)' or "
        "'not modelled'",
    ),
    Column("predicted_before_rps", "req/s", "the throughput predicted before the run, from its one-user prices"),
    Column("predicted_before_ms", "ms", "the mean latency predicted before the run"),
    Column("before_bottleneck", "text", "what sets the throughput predicted before the run"),
    Column("ratio_before", "ratio", "measured / predicted-before throughput (1: as predicted before the run)"),
    Column("before_priced_by", "text", "what priced it: 'one user', 'lesson', or why none ('not modelled', ...)"),
    Column("one_user_ms", "ms", "S: one request's time alone, measured on the server before the run"),
    Column("one_user_cpu_ms", "ms/request", "the server's CPU per request priced before the run (kept busy, no waits)"),
    Column("one_user_loop_ms", "ms/request", "... of it, on the workers' event loops"),
    Column("one_user_threads_ms", "ms/request", "... on the workers' other threads (the thread pool)"),
    Column("one_user_pool_ms", "ms/request", "... in the server's other processes (process pools)"),
    Column("one_user_reply_kb", "KiB", "the body of one reply, read by the pricing's lone requests"),
    Column("before_locust_ms", "ms/request", "Locust's CPU per request as priced before the run"),
    Column("one_user_s", "s", "how long pricing it took, once per server make-up in a kernel"),
    Column("before_miss", "text", "where the run missed its before-prediction by over 10%: what its window measured"),
    Column("usable_cores", "cores", "the CPUs the lab may use (a remote server: its own)"),
    Column("locust_cpu", "cores", "Locust's CPU over the window"),
    Column("server_cpu", "cores", "the server's CPU over the window, its pools included"),
    Column("machine_cpu", "cores", "every process's CPU on this machine over the window"),
    Column("other_cpu", "cores", "the rest of this machine's CPU: the notebook, a database, others"),
    Column("server_ms", "ms/request", "the server's CPU per request"),
    Column("locust_ms", "ms/request", "Locust's CPU per request"),
    Column("worker_ms", "ms/request", "the CPU per request of the workers that answered"),
    Column("worker_waited", "share", "of the window, a worker's loop was ready with no CPU free"),
    Column("worker_loop", "share", "of the window, a worker's loop ran on a CPU (its main thread)"),
    Column("worker_kernel", "share", "of the workers' CPU, spent in the kernel"),
    Column("worker_switches", "per request", "context switches of the workers' threads (Linux)"),
    Column("pool_ms", "ms/request", "the CPU per request of the server's process pools"),
    Column("others_ms", "ms/request", "the CPU per request of everything else on the machine"),
    Column("db_hold_ms", "ms", "a pooled database connection's time per use in the window"),
    Column("bunched", "share", "of the window's replies, those back to back with the one before"),
    Column("bunched_at_random", "share", "that share for as many replies spread at random"),
    Column("generator_saturated", "bool", "Locust ran out of CPU (its busiest process, or its own warning)"),
    Column("window_s", "s", "from the first reply counted to the last"),
    Column("window_start", "epoch s", "when the first reply counted came"),
    Column("method", "text", "how rps was counted: 'per-user', 'count' or 'none'"),
    Column("workers_seen", "count", "server workers that answered in the window"),
    Column("worker_requests", "count by pid", "requests each worker answered"),
    Column("status", "text", "'ok', or why the run stopped"),
    Column("valid", "bool", "a valid measurement: no problem"),
    Column("problems", "text", "why the run is not a valid measurement, '; '-separated"),
    Column("notes", "text", "what a reader must know, though no problem, '; '-separated"),
    Column("throttled_s", "s", "of the window, the CPU quota throttled the lab"),
    Column("paused_ms", "ms", "the longest stop of the whole machine in the window"),
    Column("stolen_cpu", "cores", "CPU the host took for others (steal time), within machine_cpu"),
    Column("disturbed_cpu", "cores", "other programs' and the host's CPU: machine_cpu less the lab's and interrupts"),
    Column("core_speed", "ratio", "the cores' speed in the window over their speed when the run was priced"),
    Column("disturbed", "bool", "others took 0.1 core or more, or the cores of a CPU-bound run ran 15% off priced"),
    Column("git_commit", "text", "the code that measured the run"),
    Column("batch", "text", "the batch that made the run (LAB_BATCH_ID); None outside one"),
    Column("started_at", "ISO 8601", "when the run's stage began, UTC"),
)
OPEN_LOOP = (  # arrivals.row fills these
    Column("scheduled_rate", "req/s", "arrivals the schedule meant to send in the window"),
    Column("sent_rate", "req/s", "arrivals that left within the window"),
    Column("kept_up", "ratio", "sent / scheduled in the third of the window where the generator lagged most"),
    Column("served_rps", "req/s", "replies with 200 within the window"),
    Column("shed", "share", "of the window's requests, those not answered with 200"),
    Column("intended_mean_ms", "ms", "mean latency from the intended time, of the requests answered with 200"),
    Column("intended_p95_ms", "ms", "95th percentile of that latency"),
    Column("intended_p99_ms", "ms", "99th percentile of that latency"),
    Column("p95_first_third_ms", "ms", "its 95th percentile in the window's first third"),
    Column("p95_middle_third_ms", "ms", "... in its middle third"),
    Column("p95_last_third_ms", "ms", "... in its last third"),
    Column("mean_first_third_ms", "ms", "its mean in the window's first third"),
    Column("mean_last_third_ms", "ms", "... in its last third"),
)
HEAD = (
    Column("run_id", "text", "the run's folder under data/runs/"),
    Column("lesson", "text", "the lesson that made the run; None for one made by hand"),
)
COLUMNS = (*HEAD, *PARAMS, *FIGURES, *OPEN_LOOP)


def _same(*names: str) -> tuple[Column, ...]:
    """A Locust run's columns of these names, for a client run's that mean the same."""
    return tuple(next(c for c in COLUMNS if c.name == name) for name in names)


# A client run (lesson 06): one `python -m labserver.clients` process sends a fixed number of
# requests; its parameters are its manifest's, its figures what it measured and predicted.
CLIENT_PARAMS = (
    *_same("lesson", "pattern"),
    Column("client", "text", "the client strategy (labserver.clients.strategies.STRATEGIES)"),
    Column("library", "text", "the HTTP library the client sends with"),
    Column("users", "count", "requests the client keeps in flight (a loop: 1)"),
    Column("requests", "count", "requests the client sends"),
    *_same("tasks", "io_ms", "cpu_n", "workers", "threads"),
)
CLIENT_FIGURES = (
    Column("rps", "req/s", "throughput: requests / wall_s"),
    Column("wall_s", "s", "the time the client took to send every request and read every reply"),
    *_same("p50_ms", "p95_ms", "mean_ms"),
    Column("failures", "count", "requests that failed (no report: all of them)"),
    *_same("predicted_rps", "predicted_ms", "bottleneck", "ratio"),
    Column("concurrency_rps", "req/s", "the pure concurrency model's throughput, without the CPUs"),
    *_same("predicted_before_rps", "predicted_before_ms", "before_bottleneck", "ratio_before"),
    Column("before_priced_by", "text", "what priced it: 'one batch before' (clients.runs.price) or 'not priced'"),
    *_same("before_miss"),
    Column("client_cpu", "cores", "the client's CPU over its wall time"),
    Column("client_ms", "ms/request", "the client's CPU per request"),
    Column("send_share", "share", "of client_ms, spent before waiting for the reply (requests only)"),
    Column("first_cpu_ms", "ms", "the client's CPU until its first reply"),
    Column("first_ms", "ms", "when the first reply came, from the client's start"),
    Column("server_cpu", "cores", "the server's CPU over the client's wall time"),
    *_same("server_ms"),
    Column("alone_ms", "ms", "a lone request's latency, with the same library to the same endpoint"),
    Column("paused_ms", "ms", "the longest stop of the whole machine while the client sent"),
    Column("stolen_cpu", "cores", "CPU the host took for others (steal time) over the client's life"),
    *_same("notes"),
    Column("client_saturated", "bool", "the client ran out of CPU"),
    Column("priced_by", "text", "what priced the prediction: 'measured demand' or 'concurrency alone'"),
    *_same("status", "valid", "problems", "started_at", "git_commit", "batch"),
)
CLIENT = (HEAD[0], *CLIENT_PARAMS, *CLIENT_FIGURES)  # run_id first, as in a Locust run's row

# Measured beside a run while it ran, by an instrument of its lesson's own (lessons/one_slow_route.py: lesson 14's cheap
# requests), and kept in the run's folder apart from its record (results.attach); `load_runs` adds them to its row
BESIDE = (
    Column("where", "text", "where the run's CPU work ran: event loop, thread pool, process pool, or none (no fib)"),
    Column("cheap_n", "count", "the cheap requests sent beside the run, in its window"),
    Column("cheap_p50_ms", "ms", "their median round trip"),
    Column("cheap_p95_ms", "ms", "their 95th-percentile round trip"),
    Column("cheap_mean_ms", "ms", "their mean round trip"),
    Column("wait_p95_ms", "ms", "their p95 less the median round trip with nothing else running (the run without fib)"),
    Column("fib_run_ms", "ms", "the heavy requests' fib as the busy server ran it: their mean less that median"),
    Column("busy", "share", "the share of the window the heavy route's work kept its place busy: req/s × fib_run_ms"),
)
UNITS = {c.name: c.unit for c in (*COLUMNS, *BESIDE)}


def params(sources: Mapping[Source, Any], tags: Mapping[str, Any]) -> dict[str, Any]:
    """A run's parameters, as its row and manifest record them, from the objects they come from; its tags last.

    A tuple (the server's pinned CPUs) is written as its items joined by commas.
    """
    out = {}
    for c in PARAMS:
        source = sources[cast(Source, c.source)]  # every parameter names where it comes from
        if c.only_with is None or getattr(source, c.only_with):
            value = getattr(source, c.name)
            out[c.name] = ",".join(map(str, value)) if isinstance(value, tuple) else value
    return {**out, **tags}


def row(head: Mapping[str, Any], params: Mapping[str, Any], figures: Mapping[str, Any]) -> dict[str, Any]:
    """The row, its columns in their declared order; ValueError for a figure undeclared or left out.

    `figures` holds every column of FIGURES, and an open loop's every column of OPEN_LOOP too.
    """
    open_loop = any(c.name in figures for c in OPEN_LOOP)
    declared = [c.name for c in (*FIGURES, *(OPEN_LOOP if open_loop else ()))]
    _check("figures", declared, figures)
    return {**{c.name: head[c.name] for c in HEAD}, **params, **{name: figures[name] for name in declared}}


def client_row(run_id: str, params: Mapping[str, Any], figures: Mapping[str, Any]) -> dict[str, Any]:
    """A client run's row, its columns in CLIENT's order; ValueError for a parameter or figure undeclared or left out.

    `params` hold every column of CLIENT_PARAMS, `figures` every column of CLIENT_FIGURES.
    """
    _check("parameters", [c.name for c in CLIENT_PARAMS], params)
    _check("figures", [c.name for c in CLIENT_FIGURES], figures)
    return {
        "run_id": run_id,
        **{c.name: params[c.name] for c in CLIENT_PARAMS},
        **{c.name: figures[c.name] for c in CLIENT_FIGURES},
    }


def beside(measured: Mapping[str, Any]) -> dict[str, Any]:
    """What a run's folder keeps beside its record, in BESIDE's order; ValueError for a column undeclared. An
    instrument keeps what it measured: a column of BESIDE it does not measure is left out."""
    unknown = set(measured) - {c.name for c in BESIDE}
    if unknown:
        raise ValueError(f"measured beside a run, undeclared in columns.py: {sorted(unknown)}")
    return {c.name: measured[c.name] for c in BESIDE if c.name in measured}


def _check(what: str, declared: list[str], given: Mapping[str, Any]) -> None:
    unknown, missing = set(given) - set(declared), set(declared) - set(given)
    if unknown or missing:
        raise ValueError(f"the row's {what} differ from columns.py: undeclared {unknown or '{}'}, left out {missing}")

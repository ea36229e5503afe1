"""The decision card (lesson 99): what to write in an endpoint, its ceiling, and the ratio that shows it here.

`ROWS` is the card as data: a situation, the pattern to write, its ceiling as the model
(`labserver.theory.model.predict`) prices it, and the lessons whose runs show it. `card` reads
each row's ratio from the runs on disk (`load_runs`), "not measured yet" where they are missing;
`markdown` prints the card as a table for the README and the site.

The ceilings' symbols: io is a request's wait and cpu its CPU in the worker (the server's own
included), both in seconds; threads is the thread pool's size (40, AnyIO's default), per worker.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from labserver import checks
from labserver.demo.traits import Where
from labserver.harness.rows import results
from labserver.paths import ROOT
from labserver.yourapp import measure

SETTING = ("users", "tasks", "io_ms", "cpu_n", "workers", "threads")  # two patterns compare at the same setting
COLUMNS = ["situation", "write", "ceiling", "how you would notice it", "measured", "lesson"]
NOT_YET = "not measured yet"
RANGE_BATCHES = 3  # the README's card: each figure's range over the last this many batches on disk
MOVES = 0.2  # a figure whose range passes ±this share of its middle moves with the machine: its row says why


@dataclass(frozen=True)
class Measured:
    ratio: float  # NaN: no runs on disk show it
    text: str  # the ratio in words, e.g. "2.9× (async / def at 120 users)"


def _lesson(runs: pd.DataFrame, prefix: str, pattern: str | tuple[str, ...], abandoned: bool = False) -> pd.DataFrame:
    """The valid runs of lesson `prefix` and `pattern`(s): closed loops, none that expected failures (`abandoned`:
    only those, every request of which timed out by design, as lesson 13's)."""
    if runs.empty or "lesson" not in runs or "pattern" not in runs:
        return runs.iloc[0:0]
    keep = runs["lesson"].fillna("").astype(str).str.startswith(prefix)
    keep &= runs["pattern"].isin([pattern] if isinstance(pattern, str) else pattern)
    if "valid" in runs:
        keep &= runs["valid"].fillna(False).astype(bool)
    if "failures" in runs:  # a valid run with failures expected them (lesson 05's timeouts): its rps counts give-ups
        keep &= (runs["failures"].fillna(0) > 0) if abandoned else (runs["failures"].fillna(0) == 0)
    if "rate" in runs:  # an open loop's rps is the rate it was sent
        keep &= runs["rate"].isna()
    return runs[keep]


def _wide(runs: pd.DataFrame, patterns: tuple[str, ...]) -> pd.DataFrame:
    """Median rps of each of `patterns` at every setting all of them were run at, one row per setting."""
    keys = [k for k in SETTING if k in runs]
    if runs.empty or not keys:
        return pd.DataFrame(columns=[*keys, *patterns])
    wide = runs.pivot_table(index=keys, columns="pattern", values="rps", aggfunc="median")
    if any(p not in wide for p in patterns):
        return pd.DataFrame(columns=[*keys, *patterns])
    return wide[list(patterns)].dropna().reset_index()


def _span(values: pd.Series) -> str:
    low, high = values.min(), values.max()
    return f"{low:g}" if low == high else f"{low:g}–{high:g}"


def _bound(runs: pd.DataFrame, prefix: str, pattern: str, slots: str, label: str) -> Measured:
    """Median rps / (`slots` / (tasks × io)) of `pattern`'s runs with at least as many users as slots.

    `slots` is "threads" (workers × threads: a thread pool's) or "workers" (one per blocked loop);
    `label` names the pattern as a learner reads it.
    """
    rows = _lesson(runs, prefix, pattern)
    if rows.empty or "io_ms" not in rows:
        return Measured(math.nan, NOT_YET)
    count = rows["workers"] * (rows["threads"] if slots == "threads" else 1)
    rows = rows[(rows["users"] >= count) & (rows["io_ms"] > 0)]
    if rows.empty:
        return Measured(math.nan, NOT_YET)
    ceiling = count[rows.index] / (rows["tasks"] * rows["io_ms"] / 1000)
    ratio = float((rows["rps"] / ceiling).median())
    what = "threads / io" if slots == "threads" else "workers / io"
    return Measured(ratio, f"{ratio:.2f} of {what} ({label} at {_span(rows['users'])} users)")


def async_over_def(runs: pd.DataFrame) -> Measured:
    """Lesson 01: async / def throughput at 3× the thread pool or more, the smallest (its claim 2)."""
    wide = _wide(_lesson(runs, "01", ("sequential", "threadpool")), ("sequential", "threadpool"))
    wide = wide[wide["users"] >= 3 * wide["workers"] * wide["threads"]] if len(wide) else wide
    if wide.empty:
        return Measured(math.nan, NOT_YET)
    ratios = wide["sequential"] / wide["threadpool"]
    low = wide.loc[ratios.idxmin()]
    return Measured(float(ratios.min()), f"{ratios.min():.1f}× (async / def at {low['users']:g} users)")


def def_at_threads(runs: pd.DataFrame) -> Measured:
    """Lesson 01: the `def` endpoint's throughput over threads / io, where the users outnumber the threads."""
    return _bound(runs, "01", "threadpool", "threads", "def")


def offload_at_threads(runs: pd.DataFrame) -> Measured:
    """Lesson 05: `async def` handing its blocking call to a thread, over threads / io."""
    return _bound(runs, "05", "offload", "threads", "offload")


def gather_over_sequential(runs: pd.DataFrame) -> Measured:
    """Lesson 02: gather / sequential throughput at the same setting (the model: tasks ×)."""
    wide = _wide(_lesson(runs, "02", ("gather", "sequential")), ("gather", "sequential"))
    if wide.empty:
        return Measured(math.nan, NOT_YET)
    top = wide.loc[wide["users"].idxmax()]
    ratio = float(top["gather"] / top["sequential"])
    return Measured(ratio, f"{ratio:.1f}× (gather / sequential, {top['tasks']:g} waits, {top['users']:g} users)")


def pool_and_workers(runs: pd.DataFrame) -> Measured:
    """Lesson 03: process pool / one-core patterns on fib alone; lesson 04: as many workers as cores / one."""
    parts, ratio = [], math.nan
    one_core = ("threadpool", "sequential")
    wide = _wide(_lesson(runs, "03", ("processpool", *one_core)), ("processpool", *one_core))
    wide = wide[(wide["io_ms"] == 0) & (wide["cpu_n"] > 0)] if len(wide) else wide
    if len(wide):
        ratio = float((wide["processpool"] / wide[list(one_core)].mean(axis=1)).median())
        parts.append(f"{ratio:.1f}× (process pool / `def` and `async def`, fib({_span(wide['cpu_n'])}))")
    gain = _workers_gain(_lesson(runs, "04", "sequential"))
    if gain is not None:
        ratio = gain[1] if math.isnan(ratio) else ratio
        parts.append(f"{gain[1]:.1f}× ({gain[0]} workers / 1)")
    return Measured(ratio, "; ".join(parts) or NOT_YET)


def _workers_gain(rows: pd.DataFrame) -> tuple[int, float] | None:
    """(cores, CPU-bound rps of `cores` workers / one worker's), or None without both or with one core."""
    if rows.empty or "usable_cores" not in rows:
        return None
    rows = rows[(rows["cpu_n"] > 0) & (rows["io_ms"] == 0)]
    rps = rows.groupby("workers")["rps"].median()
    usable = rows["usable_cores"].dropna()
    cores = int(usable.min()) if len(usable) else 0
    at = max((w for w in rps.index if w <= cores), default=0)
    if at < 2 or 1 not in rps.index:
        return None
    return int(at), float(rps[at] / rps[1])


def blocked_loop(runs: pd.DataFrame) -> Measured:
    """Lesson 05: `time.sleep` in `async def`, its throughput over workers / io at every number of users."""
    return _bound(runs, "05", "blocking", "workers", "time.sleep in async def")


def free_threads(runs: pd.DataFrame) -> Measured:
    """Lesson 10: the thread pool on fib without the GIL over the same build with it, its busy runs; beside it,
    what a reader compares with: the usual build's thread pool and its process pool, where measured.

    Busy runs are tagged `load` "busy"; runs saved before the tag are those at the lesson's most users.
    """
    rows = _lesson(runs, "10", ("threadpool", "processpool"))
    if rows.empty or "build" not in rows or "part" not in rows:
        return Measured(math.nan, NOT_YET)
    rows = rows[rows["part"] == "fib"]  # the threads run's small pools are no baseline
    if "load" in rows and rows["load"].notna().any():
        rows = rows[rows["load"] == "busy"]
    else:
        rows = rows[rows["users"] == rows["users"].max()]
    build = rows["build"].fillna("").astype(str)
    threads = rows["pattern"] == "threadpool"

    def rps(pattern_rows: pd.Series, label: str) -> float:
        chosen = rows.loc[pattern_rows & build.str.endswith(label), "rps"]
        return float(chosen.mean()) if not chosen.empty else math.nan

    off, on = rps(threads, "GIL off"), rps(threads, "GIL on")
    if math.isnan(off) or math.isnan(on):
        return Measured(math.nan, NOT_YET)
    ratio = off / on
    text = f"{ratio:.1f}× the same build with its GIL"
    usual, pool = rps(threads, "GIL build"), rps(~threads, "GIL build")
    if not math.isnan(usual):
        text += f"; {off / usual:.1f}× the usual build's thread pool"
    if not math.isnan(pool):
        text += f", {off / pool:.1f}× its process pool"
    return Measured(ratio, f"{text} (fib({_span(rows['cpu_n'])}))")


def interpreter_pool(runs: pd.DataFrame) -> Measured:
    """Lesson 10: the interpreter pool with the GIL on over the same build's thread pool, their busy runs on fib."""
    rows = _lesson(runs, "10", ("interpreterpool", "threadpool"))
    if rows.empty or "build" not in rows or "load" not in rows:
        return Measured(math.nan, NOT_YET)
    rows = rows[(rows["part"] == "fib") & (rows["load"] == "busy") & rows["build"].astype(str).str.endswith("GIL on")]
    rps = rows.groupby("pattern")["rps"].mean()
    if not {"interpreterpool", "threadpool"} <= set(rps.index):
        return Measured(math.nan, NOT_YET)
    ratio = float(rps["interpreterpool"] / rps["threadpool"])
    busy = rows.loc[rows["pattern"] == "interpreterpool", "server_cpu"].mean()
    return Measured(ratio, f"{ratio:.2f}× the same build's thread pool with its GIL, {busy:.2f} cores busy")


def blocking_dependency(runs: pd.DataFrame) -> Measured:
    """Lesson 11: an `async def` endpoint with a plain `def` dependency that blocks, over threads / io; and the
    same with an `async def` dependency, over it."""
    rows = _lesson(runs, "11", ("syncdep", "asyncdep"))
    if rows.empty or not {"syncdep", "asyncdep"} <= set(rows["pattern"]):
        return Measured(math.nan, NOT_YET)
    sync = rows[rows["pattern"] == "syncdep"]
    ratio = float((sync["rps"] / (sync["workers"] * sync["threads"] / (sync["tasks"] * sync["io_ms"] / 1000))).median())
    gain = float(rows.loc[rows["pattern"] == "asyncdep", "rps"].median() / sync["rps"].median())
    users = _span(rows["users"])
    return Measured(
        ratio, f"{ratio:.2f} of threads / io with a `def` dependency; an `async def` one {gain:.1f}× ({users} users)"
    )


def reused_client(runs: pd.DataFrame) -> Measured:
    """Lesson 06: client CPU per request of a `requests.Session` per thread, and of aiohttp, over `requests.get`'s."""
    if runs.empty or "client" not in runs or "client_ms" not in runs:
        return Measured(math.nan, NOT_YET)
    chosen = runs[runs["lesson"].fillna("").astype(str).str.startswith("06") & runs["valid"].fillna(False).astype(bool)]
    chosen = chosen[chosen["pattern"] == "sequential"]
    if chosen.empty:
        return Measured(math.nan, NOT_YET)
    top = chosen[(chosen["users"] == chosen["users"].max()) & (chosen["requests"] == chosen["requests"].max())]
    cost = top.groupby("client")["client_ms"].median()
    if not {"threadpool", "session"} <= set(cost.index):
        return Measured(math.nan, NOT_YET)
    ratio = float(cost["session"] / cost["threadpool"])
    text = f"a Session costs {ratio:.2f}× the client CPU per request of `requests.get`"
    if "aiohttp" in cost:
        text += f", aiohttp {cost['aiohttp'] / cost['threadpool']:.2f}×"
    return Measured(ratio, f"{text} ({int(top['users'].iloc[0])} in flight){_new_client(runs)}")


def _new_client(runs: pd.DataFrame) -> str:
    """Lesson 12's figure beside lesson 06's: the server CPU per request a new httpx client cost, where measured."""
    rows = _lesson(runs, "12", ("callnew", "callreused"))
    rows = rows[rows["tasks"] == 1] if "tasks" in rows else rows  # one call a request: the fan-out's make four
    if "server_ms" not in rows or not {"callnew", "callreused"} <= set(rows["pattern"]):
        return ""
    cost = rows.groupby("pattern")["server_ms"].median()
    return (
        f"; in a server, a new httpx client per request cost {cost['callnew'] - cost['callreused']:.0f} ms of CPU more"
    )


def fan_out(runs: pd.DataFrame) -> Measured:
    """Lesson 12: the bounded fan-out's req/s over the unbounded one's, and their server CPU per call."""
    rows = _lesson(runs, "12", ("fanout", "fanoutbounded"))
    if rows.empty or "server_ms" not in rows or not {"fanout", "fanoutbounded"} <= set(rows["pattern"]):
        return Measured(math.nan, NOT_YET)
    median = rows.groupby("pattern")[["rps", "server_ms"]].median()
    ratio = float(median.loc["fanoutbounded", "rps"] / median.loc["fanout", "rps"])
    cpu = median.loc["fanout", "server_ms"] / median.loc["fanoutbounded", "server_ms"]  # the same calls a request
    calls = f"{_span(rows['users'])} users × {_span(rows['tasks'])} calls"
    return Measured(
        ratio,
        f"bounded {ratio:.1f}× the unbounded fan-out's req/s; unbounded, a call cost {cpu:.1f}× the CPU ({calls})",
    )


def abandoned(runs: pd.DataFrame) -> Measured:
    """Lesson 13: the fib CPU per abandoned request of an endpoint that checks for its client, over one that does
    not; each less the CPU of a request without fib, where measured."""
    rows = _lesson(runs, "13", ("sequential", "watchful"), abandoned=True)
    if rows.empty or "server_ms" not in rows or not {"sequential", "watchful"} <= set(rows["pattern"]):
        return Measured(math.nan, NOT_YET)
    fib = rows[rows["cpu_n"] > 0]
    cost = fib.groupby("pattern")["server_ms"].median()
    own = rows.loc[rows["cpu_n"] == 0, "server_ms"].median() if (rows["cpu_n"] == 0).any() else 0.0
    ratio = float((cost["watchful"] - own) / (cost["sequential"] - own))
    steps = _span(fib["tasks"])
    return Measured(ratio, f"{ratio:.2f} of the fib CPU per abandoned request, checking between {steps} steps")


def slow_route(runs: pd.DataFrame) -> Measured:
    """Lesson 14: a cheap route's p95 round trip while another route computes on the event loop, over its p95 while
    the work is in a process pool; the thread pool's beside them."""
    rows = _lesson(runs, "14", ("sequential", "threadpool", "processpool"))
    places = tuple(w.value for w in (Where.LOOP, Where.THREAD_POOL, Where.PROCESS_POOL))
    if rows.empty or "cheap_p95_ms" not in rows or not set(places) <= set(rows["where"].dropna()):
        return Measured(math.nan, NOT_YET)
    p95 = rows.groupby("where")["cheap_p95_ms"].median()
    loop, thread, process = (p95[w] for w in places)
    ratio = float(loop / process)
    return Measured(
        ratio, f"a cheap request's p95 round trip: {loop:.0f} ms beside fib on the loop, {thread:.0f} in a thread, "
        f"{process:.1f} in a process ({ratio:.0f}×)"
    )  # fmt: skip


def released_gil(runs: pd.DataFrame) -> Measured:
    """Lesson 03: cores kept busy by a `def` whose work is C that lets go of the GIL (`hashed`), over fib's `def`."""
    rows = _lesson(runs, "03", ("hashed", "threadpool"))
    if rows.empty or "part" not in rows or "server_cpu" not in rows:
        return Measured(math.nan, NOT_YET)
    busy = rows[rows["part"] == "fib"].groupby("pattern")["server_cpu"].mean()
    if not {"hashed", "threadpool"} <= set(busy.index):
        return Measured(math.nan, NOT_YET)
    ratio = float(busy["hashed"] / busy["threadpool"])
    return Measured(
        ratio, f"{busy['hashed']:.2f} cores busy hashing in a `def`, against {busy['threadpool']:.2f} computing fib"
    )


def database_pool(runs: pd.DataFrame) -> Measured:
    """Lesson 07: a sync driver's req/s over its pool's connections / hold time, where the pool is the scarcer slot."""
    rows = _lesson(runs, "07", "sync_select")
    if rows.empty or not {"db_pool", "db_hold_ms"} <= set(rows):
        return Measured(math.nan, NOT_YET)
    rows = rows[(rows["db_pool"] < rows["threads"]) & (rows["users"] > rows["db_pool"]) & (rows["io_ms"] > 0)]
    if rows.empty:
        return Measured(math.nan, NOT_YET)
    ratio = float((rows["rps"] / (rows["db_pool"] / (rows["db_hold_ms"] / 1000))).median())
    pool, threads = _span(rows["db_pool"]), _span(rows["threads"])
    return Measured(ratio, f"{ratio:.2f} of connections / hold ({pool} connections, {threads} threads)")


def overload(runs: pd.DataFrame) -> Measured:
    """Lessons 08, 09: an open loop past the thread pool's capacity, the mean latency in the run's last third over its
    first (what lesson 08's claim judges: a third's p95 rests on a few slow replies); beside it, the same with the
    queue bounded, and the share it shed."""
    needed = {"lesson", "rate", "valid", "shed", "mean_first_third_ms", "mean_last_third_ms"}
    if runs.empty or not needed <= set(runs):
        return Measured(math.nan, NOT_YET)
    past = runs["lesson"].fillna("").astype(str).str.match(r"0[89]") & runs["valid"].fillna(False).astype(bool)
    past &= runs["rate"] > 1.1 * runs["rps"]  # arrivals past what the server served: overloaded
    if "limit_concurrency" in runs:  # uvicorn's limit queues nothing: a loss system, not a bounded queue
        past &= runs["limit_concurrency"].isna()
    growth = (runs["mean_last_third_ms"] / runs["mean_first_third_ms"])[past]
    shed = runs["shed"].fillna(0)[past]
    if (shed == 0).sum() == 0:
        return Measured(math.nan, NOT_YET)
    ratio = float(growth[shed == 0].median())
    text = f"unbounded: mean latency {ratio:.1f}× higher in the run's last third than its first"
    if (shed > 0).any():
        text += f"; a bounded queue: {growth[shed > 0].median():.2f}×, {shed[shed > 0].median():.0%} shed"
    return Measured(ratio, text)


@dataclass(frozen=True)
class Row:
    situation: str
    write: str
    ceiling: str  # as the model prices it (theory.model.predict)
    notice: str  # what a developer sees in production when this is the limit
    shows: str  # the measured ratio that shows it
    lessons: tuple[str, ...]
    measure: Callable[[pd.DataFrame], Measured]
    moves: str = ""  # why its figure moves between batches, where it moves past ±MOVES of its middle


ROWS = [
    Row(
        "Awaitable I/O: an async driver, `asyncio.sleep`, `httpx.AsyncClient`",
        "`async def` + `await`",
        "users / (io + cpu), until the worker's core runs out: 1 / cpu per worker",
        "p95 stays near io as users grow, until one core per worker is busy",
        "async / def at ≥ 3× the thread pool",
        ("01",),
        async_over_def,
    ),
    Row(
        "A blocking library: requests, a sync database driver",
        "a plain `def` (FastAPI runs it in its thread pool)",
        "threads / io per worker: 40 / io",
        "req/s flat at 40 / io while p95 grows with the users: requests wait for a thread",
        "def / (threads / io)",
        ("01",),
        def_at_threads,
    ),
    Row(
        "A blocking call inside `async def` that you cannot change",
        "hand it to a thread: `await run_in_threadpool(f, ...)` or `await asyncio.to_thread(f, ...)`",
        "threads / io with `run_in_threadpool` (AnyIO's 40); `asyncio.to_thread`: its executor's min(32, CPUs + 4)"
        " (the machine's CPUs before 3.13)",
        "run_in_threadpool: all 40 tokens borrowed; to_thread: its executor's threads all busy",
        "offload / (threads / io)",
        ("05",),
        offload_at_threads,
    ),
    Row(
        "Independent waits in one request",
        "`await asyncio.gather(...)`",
        "tasks × sequential's: users / io instead of users / (tasks × io)",
        "a request takes the sum of its waits instead of the longest",
        "gather / sequential",
        ("02",),
        gather_over_sequential,
    ),
    Row(
        "A dependency or a streamed response that waits on a blocking library",
        "`async def` dependencies and async generators over an async library; a plain `def` one holds a thread",
        "threads / the seconds each holds its thread, for every plain `def` that waits, endpoint or not; raise the "
        "40 in the lifespan",
        "all 40 thread tokens borrowed, requests waiting for a thread, the CPU idle",
        "`def` dependency under `async def` / (threads / io); `async def` dependency / `def` one",
        ("11",),
        blocking_dependency,
    ),
    Row(
        "CPU-bound work",
        "a process pool (`loop.run_in_executor(pool, f, ...)`), or `--workers` up to the usable cores",
        "cores / cpu: one core per pool process or worker, up to the usable cores",
        "the server process at 100% of one core, the others idle; event-loop lag with async def",
        "process pool / `def` and `async def`; as many workers as cores / one",
        ("03", "04"),
        pool_and_workers,
    ),
    Row(
        "A route that computes in Python, beside routes that should stay quick (a health check, small pages)",
        "its work in a process pool; in a plain `def` if a few GIL turns of 5 ms for the others are acceptable",
        "on the loop, a cheap request waits the rest of the CPU in progress: at p95 cpu × (1 − 0.05 / ρ), ρ the "
        "loop's busy share, with one heavy request at a time (more queue back to back); in a thread, a few switch "
        "intervals",
        "health checks and small requests slow (timeouts at the load balancer) only while the heavy route runs",
        "a cheap route's p95, the work on the event loop / in a process pool",
        ("14",),
        slow_route,
    ),
    Row(
        "CPU work in C that lets go of the GIL: `hashlib` on more than 2 KiB, `zlib`, numpy on large arrays",
        "a plain `def` (the thread pool): its threads compute on several cores",
        "min(threads, cores) / cpu",
        "the server process over 100% CPU, with no pool",
        "cores kept busy hashing / computing fib, both in a `def`",
        ("03",),
        released_gil,
        "the cores hashlib's threads keep busy are what other processes leave them (lesson 03's `other_cpu`)",
    ),
    Row(
        "CPU-bound work on a free-threaded Python (3.13t, 3.14t)",
        "a plain `def` (the thread pool); state shared between requests behind a lock",
        "min(threads, users, cores) / cpu, cpu priced on the free-threaded build",
        "one process over 100% CPU; updates lost without a lock",
        "thread pool without the GIL / with it, same build; and / the usual build's thread and process pools",
        ("10",),
        free_threads,
        "each build's CPU per request moves with the machine between runs, the free-threaded build's most: the "
        "model's speed-up is min(threads, users, cores)",
    ),
    Row(
        "CPU-bound work in one process, with the GIL: Python 3.14, or 3.13 with the interpreters-pep-734 backport",
        "an interpreter pool: `loop.run_in_executor(pool, f, ...)` on an `InterpreterPoolExecutor` made in the "
        "lifespan, `f` importable",
        "min(procs, cores) / cpu, as a process pool",
        "one process over 100% CPU with its GIL on; an extension that cannot load in a sub-interpreter fails",
        "interpreter pool / the same build's thread pool, both with the GIL on",
        ("10",),
        interpreter_pool,
    ),
    Row(
        "Calling other services over HTTP (a client in your endpoint or script)",
        "one client, reused: an `httpx.AsyncClient` or aiohttp session in `async def`, a `requests.Session` per thread",
        "in flight / S, in flight capped by the client's pool (httpx, aiohttp: 100), until its core: 1 / its CPU",
        "calls slower than the service answers (a connection each), or httpx's PoolTimeout; the client near a core",
        "Session / requests.get, and aiohttp / requests.get, client CPU per request",
        ("06", "12"),
        reused_client,
    ),
    Row(
        "Several calls to other services in one request (a fan-out)",
        "`asyncio.gather` over the one reused client, each call through an `asyncio.Semaphore` below the "
        "client's connection limit and within what the other service takes; an `asyncio.TaskGroup` instead where one "
        "failed call ends the answer (it cancels the rest)",
        "min(users / io, bound / (calls × io)); unbounded, httpx's CPU per call grows with the calls in flight in its "
        "pool, until its core",
        "the other service flooded with users × calls at once; the worker near a core while it only waits",
        "bounded / unbounded fan-out, req/s, and their CPU per call",
        ("12",),
        fan_out,
        "the unbounded fan-out's CPU per call grows with the connections its pool holds, which moves from run to "
        "run (lesson 12, Deeper)",
    ),
    Row(
        "Clients that give up (a timeout, a closed tab) on long work",
        "`async def` work in steps, with `if await request.is_disconnected(): stop` between them",
        "users / timeout requests a second, each costing the steps begun before its client left, the last included",
        "the server's CPU busy while its clients see timeouts; the same work run again for each retry",
        "checking / not checking, server CPU per abandoned request",
        ("13",),
        abandoned,
    ),
    Row(
        "A database: a connection pool in the app",
        "the async driver in `async def`; a sync one in a plain `def` that takes its connection in the endpoint "
        "(a session that connects at its first query, as SQLAlchemy's does; a `def` `yield` dependency that connects "
        "before its `yield` can stall); a pool sized by Little's law, workers × pool under the server's "
        "`max_connections`, and the thread limit lowered to the pool: many threads left to wait for a connection, "
        "even under a pool timeout, can cost the worker's core (lesson 15, exercise 4)",
        "connections / hold time (Little's law); a `def` min(threads / S, connections / hold), S its time alone",
        "requests wait for a connection with the database idle, or the pool's timeout errors",
        "sync driver / (connections / hold), the pool scarcer than the threads",
        ("07", "11"),
        database_pool,
    ),
    Row(
        "More requests arrive than the server can serve (overload)",
        "a bounded queue that answers 503 at once (shed), and load tests with an open loop of arrivals",
        "capacity, whatever arrives: past it, the queue and the wait grow without bound",
        "p95 climbing through the incident while req/s stays flat at capacity",
        "mean latency in a run's last third / its first, past capacity: unbounded, and bounded",
        ("08", "09"),
        overload,
    ),
    Row(
        "Never: `time.sleep` (or any blocking call) in `async def`",
        "never; a plain `def`, or hand the call to a thread",
        "workers / io: 1 / io per worker, whatever the users",
        "req/s flat at 1 / io per worker whatever the users; event-loop lag of the order of users × io, not io",
        "time.sleep in async def / (workers / io)",
        ("05",),
        blocked_loop,
    ),
]

# The rows `python -m labserver measure` names on an app of one's own (lesson 15): each names the command, which the
# README's section explains (a link to it would be dead in lesson 99, which shows the card too)
YOURS = tuple(measure.CARD.values())
YOURS_LINK = "15, your app (`python -m labserver measure`)"

# The rules a developer needs first: the README's short card, above the full one
FIRST = (
    "Awaitable I/O: an async driver, `asyncio.sleep`, `httpx.AsyncClient`",
    "A blocking library: requests, a sync database driver",
    "Never: `time.sleep` (or any blocking call) in `async def`",
    "CPU-bound work",
    "Calling other services over HTTP (a client in your endpoint or script)",
)


def lessons_of(row: Row) -> str:
    """The lessons that show `row`, and where `measure` names it on an app of one's own, the link to how."""
    return ", ".join([*row.lessons, *([YOURS_LINK] if row.situation in YOURS else [])])


def card(runs: pd.DataFrame) -> pd.DataFrame:
    """The decision card with each row's ratio measured on this machine, from `runs` (one row per run)."""
    out = []
    for row in ROWS:
        got = row.measure(runs)
        measured = got.text if got.text != NOT_YET else f"{NOT_YET} ({row.shows})"
        out.append([row.situation, row.write, row.ceiling, row.notice, measured, lessons_of(row)])
    return pd.DataFrame(out, columns=COLUMNS)


def batches(runs: pd.DataFrame, count: int) -> list[str]:
    """The last `count` batches of `make figures` in `runs` that ran every lesson the card reads, oldest first (their
    ids sort by time): one lesson run again on its own is not a batch of the card."""
    if runs.empty or not {"batch", "lesson"} <= set(runs):
        return []
    wanted = {lesson for row in ROWS for lesson in row.lessons}
    ran = runs.dropna(subset=["batch"]).groupby(runs["batch"].astype(str))["lesson"]
    whole = [b for b, lessons in ran if b and wanted <= {str(x)[:2] for x in lessons.dropna()}]
    return sorted(whole)[-count:]


def ranged(row: Row, runs: pd.DataFrame, ids: list[str]) -> str:
    """`row`'s figure in each batch of `ids`: its range over them and the count, then the last one's words (a
    learner's own run is compared with the range, not with one batch's figure); a range wider than ±MOVES of its
    middle says why (`row.moves`)."""
    got = [row.measure(runs[runs["batch"].astype(str) == b]) for b in ids]
    known = [g for g in got if math.isfinite(g.ratio)]
    if not known:
        return f"{NOT_YET} ({row.shows})"
    low, high = min(g.ratio for g in known), max(g.ratio for g in known)
    span = f"{low:.3g}" if f"{low:.3g}" == f"{high:.3g}" else f"{low:.3g}–{high:.3g}"
    text = f"{span} over {len(known)} batch{'es' * (len(known) > 1)} (the last: {known[-1].text})"
    if high - low > MOVES * (high + low):
        text += f"; moves past ±{MOVES:.0%}: {row.moves or 'why is not known yet'}"
    return text


def ranged_card(runs: pd.DataFrame, count: int = RANGE_BATCHES) -> pd.DataFrame:
    """The card with each row's figure as a range over the last `count` batches of `runs` (`ranged`)."""
    ids = batches(runs, count)
    out = [[row.situation, row.write, row.ceiling, row.notice, ranged(row, runs, ids), lessons_of(row)] for row in ROWS]
    return pd.DataFrame(out, columns=COLUMNS)


def short(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of `frame` a developer needs first (FIRST), with what to write and its ceiling."""
    return frame[frame["situation"].isin(FIRST)][["situation", "write", "ceiling"]]


def markdown(frame: pd.DataFrame) -> str:
    """`frame` (from `card`) as a Markdown table."""
    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    for values in frame.itertuples(index=False):
        lines.append("| " + " | ".join(str(v).replace("|", "\\|") for v in values) + " |")
    return "\n".join(lines) + "\n"


MARKS = {
    "short": ("<!-- short card: `make card` writes it from labserver/course/card.py -->", "<!-- /short card -->"),
    "card": (
        "<!-- card: `make card` writes it from labserver/course/card.py and the runs -->",
        "<!-- /card -->",
    ),
}


def between(text: str, name: str) -> str:
    """What `text` holds between the marks of `name` (MARKS)."""
    start, end = MARKS[name]
    if start not in text or end not in text:
        raise ValueError(f"the marks of the {name} are missing: {start} ... {end}")
    return text.split(start, 1)[1].split(end, 1)[0]


def written(text: str, name: str, body: str) -> str:
    """`text` with `body` between the marks of `name`."""
    start, end = MARKS[name]
    return text.replace(f"{start}{between(text, name)}{end}", f"{start}\n{body}{end}")


def main(argv: list[str] | None = None) -> int:
    """`make card`: the README's short card and card, each figure a range over the last batches on disk."""
    parser = argparse.ArgumentParser(prog="python -m labserver.course.card", description=main.__doc__)
    parser.add_argument(
        "--batches", type=int, default=RANGE_BATCHES, help="batches to range over (default: %(default)s)"
    )
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        checks.whole("--batches", args.batches, 1)
    except ValueError as e:
        parser.error(str(e))
    runs = results.load_runs()
    ids = batches(runs, args.batches)
    if len(ids) < args.batches:
        print(
            f"make card: {len(ids)} batch(es) on disk, {args.batches} asked: run `make figures REPEAT={args.batches}`"
        )
        return 1
    frame = ranged_card(runs, args.batches)
    cores = runs["usable_cores"].max() if "usable_cores" in runs else math.nan
    source = f"Measured here ({cores:g} usable cores): batches {ids[0]} to {ids[-1]}, the last {len(ids)} complete.\n\n"
    text = args.readme.read_text()
    text = written(written(text, "short", markdown(short(frame))), "card", source + markdown(frame))
    args.readme.write_text(text)
    print(f"make card: {args.readme} written from {len(ids)} batches ({ids[0]} to {ids[-1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

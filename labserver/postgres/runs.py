"""Lesson 07's runs: the database endpoints under Locust, each beside its prediction (theory.pools).

`calibrate` sends lone requests to each endpoint (no load) to learn its service time, and prices
the server's CPU per request as the harness prices a run (harness/load/measurement.py: eight users
back to back over the run's connections). `plan` then sets every endpoint × users × cpu_n for the
lab's harness (`run_plan`), each beside the prediction built from those figures, the thread pool,
the connection pool and the fib timing before any load: the Predict table's.
"""

from __future__ import annotations

import functools
import math
import statistics
import time
import urllib.request
from collections.abc import Mapping
from typing import TYPE_CHECKING, TypedDict

import pandas as pd

from labserver.demo.settings import Settings
from labserver.harness.load import measurement
from labserver.harness.load.checks import check_load
from labserver.harness.load.run import run_plan
from labserver.harness.plans.plan import Foreseen, LoadOptions, Run
from labserver.harness.rows.publish import held, hold_ms
from labserver.harness.servers.launcher import LabServer
from labserver.postgres import data
from labserver.theory import pools
from labserver.theory.demand import Demand, OneUser
from labserver.theory.model import Prediction, cpu_ms
from labserver.theory.workload import DURATION_MAX_S, Workload

if TYPE_CHECKING:
    from typing_extensions import Unpack

CYCLES = 3  # requests per user a run measures at least, after its warm-up


def lone_requests(url: str, path: str, n: int = 100) -> dict:
    """Send `n` requests one at a time: the median time of one (ms), and how long they took in all (s)."""
    for _ in range(max(3, n // 10)):  # warm-up, not timed
        urllib.request.urlopen(url + path, timeout=10).read()
    times = []
    started = time.perf_counter()
    for _ in range(n):
        t = time.perf_counter()
        urllib.request.urlopen(url + path, timeout=10).read()
        times.append((time.perf_counter() - t) * 1000)
    wall = time.perf_counter() - started
    return {"path": path, "service_ms": statistics.median(times), "wall_s": wall}


def calibrate(
    server: LabServer, endpoints: list[str], n: int = 100, users: Mapping[str, int] | None = None
) -> pd.DataFrame:
    """Per endpoint: median time of one request alone (`service_ms`), the server's CPU per request priced as the
    harness prices a run of its `users` (default measurement.HOT_MOST; a run of a thousand users over its thousand
    connections): `cpu_ms`, and by where it ran with the cores' speed meanwhile (`loop_ms`, `threads_ms`, `pool_ms`,
    `probe_ms`: measurement.cpu_price); and how long it held a pooled connection per query (`hold_ms`, its warm-up
    included; NaN if unknown)."""
    assert server.proc is not None, "start the server before calibrating it"
    rows = []
    for endpoint in endpoints:
        before = held(server.url)
        alone = lone_requests(server.url, f"/{endpoint}", n=n)
        price = measurement.cpu_price(server, f"/{endpoint}", (users or {}).get(endpoint, measurement.HOT_MOST))
        rows.append(
            {
                "pattern": endpoint,
                "service_ms": alone["service_ms"],
                "cpu_ms": price.ms,
                "hold_ms": hold_ms(before, held(server.url)),
                **price._asdict(),
            }
        )
    return pd.DataFrame(rows).set_index("pattern")


PRICES = ["service_ms", "cpu_ms", "hold_ms"]  # calibrate's columns a lesson shows; the rest price its runs' rows


def _prices(endpoint: str, args: dict, base: pd.DataFrame) -> OneUser | None:
    """The prices `predict` set `endpoint`'s run with, as a run's row records a pricing's (Before.one_user): S, the
    CPU by where it ran (fib's on the loop for async, in a thread for sync), the hold, and the cores' speed meanwhile.
    None where `base` holds no split (a table made by hand)."""
    if "loop_ms" not in base:
        return None
    fib = args["cpu_ms_per_request"] - base.at[endpoint, "cpu_ms"]
    sync = pools.driver(endpoint) == "sync"
    return OneUser(
        service_ms=args["service_ms"],
        loop_ms=base.at[endpoint, "loop_ms"] + (0.0 if sync else fib),
        threads_ms=base.at[endpoint, "threads_ms"] + (fib if sync else 0.0),
        pool_ms=base.at[endpoint, "pool_ms"],
        requests=0,  # priced by the lesson's table, not by requests of its own
        held_ms=base.at[endpoint, "hold_ms"] if "hold_ms" in base else math.nan,
        probe_ms=base.at[endpoint, "probe_ms"],
    )


def _model_args(server: LabServer, endpoint: str, users: int, io_ms: int, cpu_n: int, base: pd.DataFrame) -> dict:
    fib = cpu_ms(cpu_n)
    s = server.settings
    return dict(
        endpoint=endpoint,
        users=users,
        service_ms=base.at[endpoint, "service_ms"] + io_ms + fib,
        threads=s.threads,
        db_pool=s.db_pool,
        workers=s.workers,
        cpu_ms_per_request=base.at[endpoint, "cpu_ms"] + fib,
    )


def predict(server: LabServer, endpoint: str, users: int, io_ms: int, cpu_n: int, base: pd.DataFrame):
    """The prediction for one run before it runs: the lone-request figures plus the run's database wait and fib."""
    return pools.predict(**_model_args(server, endpoint, users, io_ms, cpu_n, base))


def priced(args: dict, cost: Demand) -> Prediction:
    """The run's prediction with the CPU and the connection hold it measured (see theory.demand).

    The lone request's wait for the database stays (its time alone less its CPU alone); its CPU,
    fib's and the rest, is the workers' CPU per request in this run; and the whole machine's,
    PostgreSQL's and Locust's included, bounds what the usable cores serve. Where the connection
    pool bounds the run, it is priced with the hold per use of a connection in this run
    (`cost.db_hold_ms`); a run that did not measure it (NaN) keeps the lone request's. An async
    worker gets its core less the share its loop waited for a CPU (`cost.worker_waited`), as in
    model.predict.
    """
    if not cost.known:
        return pools.predict(**args, hold_ms=cost.db_hold_ms)
    wait_ms = args["service_ms"] - args["cpu_ms_per_request"]  # the database's time and the I/O
    measured = {
        **args,
        "service_ms": wait_ms + cost.worker_ms,
        "cpu_ms_per_request": cost.worker_ms,
        "machine_ms": cost.machine_ms if math.isfinite(cost.machine_ms) else 0.0,
        "waited": cost.worker_waited,  # an async worker's core, less what other processes took of it
    }
    return pools.predict(**measured, hold_ms=cost.db_hold_ms)


def limits(
    server: LabServer, endpoint: str, users: int, io_ms: int, cpu_n: int, base: pd.DataFrame, *, held: bool = False
) -> dict:
    """Every bound the model puts on one run, by name (req/s). `held`: the connection pool at the hold `calibrate`
    measured (`base`'s hold_ms), not at the lone request's time less its CPU."""
    hold = base.at[endpoint, "hold_ms"] if held and "hold_ms" in base else math.nan
    return pools.limits(**_model_args(server, endpoint, users, io_ms, cpu_n, base), hold_ms=float(hold))


def predict_frame(
    server: LabServer, base: pd.DataFrame, plan: list[tuple[list[str], int, int, list[int] | int]]
) -> pd.DataFrame:
    """The prediction of every planned run: `plan` holds (endpoints, users, io_ms, cpu_n or depths) per part."""
    rows = []
    for endpoints, users, io_ms, cpu_n in plan:
        for n in cpu_n if isinstance(cpu_n, list) else [cpu_n]:
            for endpoint in endpoints:
                p = predict(server, endpoint, users, io_ms, n, base)
                rows.append(
                    {
                        "pattern": endpoint,
                        "users": users,
                        "io_ms": io_ms,
                        "cpu_n": n,
                        "predicted_rps": p.rps,
                        "predicted_ms": p.latency_ms,
                        "bottleneck": p.bottleneck,
                    }
                )
    return pd.DataFrame(rows)


class PlanKw(TypedDict, total=False):
    """`plan`'s keywords as pinning.py and sweep_rounds pass them on (sweep_rounds sets `cpu_n` itself, pinning.py
    `foreseen`)."""

    io_ms: int
    duration_s: int
    warmup_s: float


def plan(
    server: LabServer,
    endpoints: list[str],
    users: list[int],
    base: pd.DataFrame,
    *,
    io_ms: int = 0,
    cpu_n: list[int] | int = 0,
    duration_s: int = 5,
    warmup_s: float = 1.0,
    foreseen: bool = True,
) -> list[Run]:
    """Every endpoint × users × cpu_n on `server`, as runs for run_plan, predicted from `base` (see calibrate).

    Each run's prediction made before it is `predict`'s, the lesson's Predict table's figure (`foreseen`), and its
    model is priced again with what the run measured after it (`priced`). `foreseen` False: priced again on `server`
    just before the run instead, for a server `base` did not price (part 4's pinned one).

    A run whose requests are slow lasts longer than `duration_s` (twice it at most): long enough
    for the warm-up and then `CYCLES` requests per user at the predicted latency, so that fib(28)
    at 32 users (about 1.3 s a request) is measured on more than a request or two each.
    """
    depths = cpu_n if isinstance(cpu_n, list) else [cpu_n]
    for endpoint in endpoints:
        for u in users:
            for n in depths:
                check_load(Workload(endpoint, u, io_ms=io_ms, cpu_n=n, duration_s=duration_s))
    runs: list[Run] = []
    for n in depths:
        for u in users:
            for endpoint in endpoints:
                tags = {
                    "db_pool": server.settings.db_pool,
                    "service_ms": base.at[endpoint, "service_ms"],
                    "cpu_ms_alone": base.at[endpoint, "cpu_ms"],
                }
                p = predict(server, endpoint, u, io_ms, n, base)
                args = _model_args(server, endpoint, u, io_ms, n, base)
                priced_here = functools.partial(priced, args)
                long_enough = math.ceil(warmup_s + CYCLES * p.latency_ms / 1000)
                run_s = min(DURATION_MAX_S, 2 * duration_s, max(duration_s, long_enough))
                runs.append(
                    Run(
                        pattern=endpoint,
                        users=u,
                        io_ms=io_ms,
                        cpu_n=n,
                        duration_s=run_s,
                        predicted=Foreseen(p, priced_here, _prices(endpoint, args, base)) if foreseen else priced_here,
                        tags=tags,
                        server=server,
                    )
                )
    return runs


def frame(results: list) -> pd.DataFrame:
    """One tidy row per RunResult, with the endpoint's `driver` (sync or async)."""
    rows = pd.DataFrame([r.row for r in results])
    rows["driver"] = rows["pattern"].map(pools.driver)
    return rows


Part = tuple[list[str], int, int, list[int] | int]  # (endpoints, users, io_ms, cpu_n or depths), as predict_frame


def check(plan: list[Part], duration_s: int, scale: float, threads: int, db_pool: int) -> None:
    """Lesson 07's parameters, before any process starts: ValueError says what to change.

    The server's settings, the data's scale, every run of `plan` at `duration_s` (the longest a
    part asks for), and the sweep's depths: at least two, to see the two versions converge.
    """
    Settings(threads=threads, db_pool=db_pool).check()
    data.rows(scale)
    for endpoints, users, io_ms, cpu_n in plan:
        for endpoint in endpoints:
            for n in cpu_n if isinstance(cpu_n, list) else [cpu_n]:
                check_load(Workload(endpoint, users, io_ms=io_ms, cpu_n=n, duration_s=duration_s))
    for *_, cpu_n in plan:
        if isinstance(cpu_n, list) and len(cpu_n) < 2:
            raise ValueError(f"sweep_cpu_n needs at least two depths, got {cpu_n!r}")


def run_parts(server: LabServer, parts: dict[str, list[Run]], **load: Unpack[LoadOptions]) -> dict[str, pd.DataFrame]:
    """Every part's runs (see `plan`) in one Locust process, on whichever server each run names; a frame per part.

    One process for them all pays Locust's start-up once; the parts keep their own tidy frames
    (see `frame`), in the order given. `load` is run_plan's (warmup_s, ...).
    """
    if not parts:  # nothing to run (no pinned server, say): no Locust process to start
        return {}
    done = iter(run_plan(server, [run for runs in parts.values() for run in runs], **load))
    return {name: frame([next(done) for _ in runs]) for name, runs in parts.items()}


def sweep_rounds(server: LabServer, endpoints: list[str], base: pd.DataFrame, count: int, users: int,
                 depths: list[int], **load: Unpack[PlanKw]) -> dict:  # fmt: skip
    """`count` more rounds of the sweep's shallowest and deepest depths, `endpoints` in mirrored order.

    Parts named "sweep round r" (r from 1), for run_parts; `load` is plan's. The sync version's
    CPU per request at the deepest depth moves from run to run (its threads' turns on the GIL
    settle at one level or another), so a claim on the two ends takes the median over the rounds
    (see `edge_rounds`; docs/evidence.md).
    """
    ends = [min(depths), max(depths)]
    return {f"sweep round {r}": plan(server, endpoints if r % 2 == 0 else endpoints[::-1], [users], base,
                                     cpu_n=ends, **load)
            for r in range(1, count)}  # fmt: skip


def edge_rounds(frames: dict[str, pd.DataFrame], count: int) -> list[float]:
    """pools.edge_kept round by round: round 0 is part 3's own sweep ("sweep"), then `sweep_rounds`'."""
    return [pools.edge_kept(ratios) for ratios in ratio_rounds(frames, count)]


def ratio_rounds(frames: dict[str, pd.DataFrame], count: int) -> list[dict[int, float]]:
    """async / sync req/s by depth, round by round: round 0 is part 3's own sweep, then `sweep_rounds`' (its ends)."""
    parts = ["sweep", *(f"sweep round {r}" for r in range(1, count))]
    found = []
    for part in parts:
        rps = frames[part].pivot_table(index="cpu_n", columns="driver", values="rps")
        found.append((rps["async"] / rps["sync"]).to_dict())
    return found

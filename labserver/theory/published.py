"""The five articles and their published figures: their only home in the course.

Each article has one record here (its short name, as the lessons and notebooks/articles.md call
it, its title, author, date and address, where the article gives them). Each number is typed in
as its article printed it, with the article's own rounding; lessons and the summary read them
from here. They are references, never measurements of ours. `HEADLINES` says, for each
article's headline ratio, which of our runs hold the same ratio.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from labserver.demo import cpus
from labserver.theory.model import predict_for
from labserver.theory.pools import async_over_sync


@dataclass(frozen=True)
class Article:
    """One source article, as notebooks/articles.md lists it; None where our copy of it does not say."""

    short: str  # the name the lessons use
    title: str | None = None
    author: str | None = None
    date: str | None = None
    site: str | None = None  # where it appeared
    address: str | None = None


SPEED_UP_1 = Article(
    short="Speed up your server, part 1",
    title="Speed up your server — 1",
    site="a blog series on FastAPI and uvicorn",
)
SPEED_UP_3 = Article(
    short="Speed up your server, part 3",
    title="Speed up your server — 3",
    site="a blog series on FastAPI and uvicorn",
)
PENA = Article(
    short="Carlos Pena's k6 load test",
    title="Python: Load Test with FastAPI - Sync vs Async",
    author="Carlos Pena",
    date="6 December 2025",
)
LOCUST_GATHER = Article(
    short="the Locust gather article",
    author="Alexander Junge",
    date="January 2025",
    # the article's code and raw data, which it links (our copy does not give its title or its own address)
    address="https://github.com/JungeAlexander/fastapi-async-perf/tree/blogpost_20250118",
)
HORACEG = Article(
    short="horaceg's Concurrency in Python with FastAPI",
    title="Concurrency in Python with FastAPI",
    author="horaceg",
    site="DEV Community",
)
ARTICLES = (SPEED_UP_1, SPEED_UP_3, PENA, LOCUST_GATHER, HORACEG)

# Speed up your server, part 1 (ab -n1000 -c100, 100 ms sleep): p95 latency in ms, read from its
# text ("~300ms", "~150ms").
SPEED_UP_1_P95_MS = {"threadpool": 300, "sequential": 150}

# The Locust gather article (500 users, uvicorn --workers 2, three 5 s waits per request): req/s per endpoint.
LOCUST_GATHER_RPS = {"threadpool": 5.29, "sequential": 32.24, "dependent": 32.25, "gather": 97.33}
LOCUST_GATHER_SETTING = {"users": 500, "tasks": 3, "io_ms": 5000, "threads": 40, "workers": 2}

# horaceg's, client side (50 ms sleeps): req/s per client, by requests sent.
HORACEG_CLIENT_RPS = {
    100: {"loop": 15.84, "threadpool": 191.74},  # to a def endpoint
    1000: {"threadpool": 316.08, "aiohttp": 1031.05},  # to an async endpoint
}
# horaceg's, server side: aiohttp's 1,000 requests against one worker, then gunicorn's 2 while one computes fib(42).
HORACEG_WORKERS_RPS = {1: 1031.05, "more": 1275.48}

# Speed up your server, part 3 (fib + sleep, ab): p95 latency read off its chart, one process vs a
# worker per core (6).
SPEED_UP_3_P95_MS = {"one": 90, "cores": 50}

# Carlos Pena's k6 load test (one uvicorn worker unless said otherwise).
PENA_IO_RPS = {1: 2044.48, "more": 7637.52}  # 10,000 VUs on async I/O, one worker vs more
PENA_BLOCKING = {"failed": 8089, "requests": 9992}  # time.sleep inside async def, k6's timeout
PENA_SELECT_RPS = {"sync": 1123.60, "async": 2007.86}  # PostgreSQL SELECT, sync vs async pool
# Its FIB sweep at 32 VUs, two queries then fib(FIB): req/s as (sync, async) by FIB.
PENA_SWEEP_RPS = {15: (648.88, 940.16), 20: (405.23, 543.21), 25: (85.25, 102.00), 30: (8.80, 10.00)}
PENA_SWEEP_USERS = 32  # its k6 VUs in that sweep ("Workers = 1, VU = 32")
# The FIB depths of that sweep between which its two versions came within 15% of each other (1.20 at 25, 1.14 at
# 30), the CPU all that mattered from 25 ("FIB=25 (CPU 100%)").
PENA_CONVERGED_FIB = (25, 30)


def ratio(pair: dict, top, bottom) -> float:
    """One published figure over another, e.g. `ratio(LOCUST_GATHER_RPS, "gather", "sequential")`."""
    return pair[top] / pair[bottom]


def gather_detail(ours: pd.DataFrame, top: str, bottom: str) -> str:
    """Our req/s of pattern `top` over `bottom` beside the Locust gather article's, as lesson 02's claims say it.

    `ours` holds one run per pattern (lesson 02's at its most users).
    """
    rps, cited = ours.set_index("pattern")["rps"], LOCUST_GATHER_RPS
    theirs = f"{cited[top]} / {cited[bottom]} = {ratio(cited, top, bottom):.2f}"
    return f"{rps[top]:.4g} / {rps[bottom]:.4g}; article {theirs}"


def beside_gather(article: pd.DataFrame, ours: pd.DataFrame) -> pd.DataFrame:
    """The Locust gather article's table and `ours` (runs at one setting), each against the model, in one frame.

    `article` is the model's prediction beside the article's figures (`model.predict_against`);
    the column `source` names each table's setting.
    """
    s, run = LOCUST_GATHER_SETTING, ours.iloc[0]
    theirs = f"{s['workers']} workers, {s['users']} users, {s['tasks']} × {s['io_ms'] / 1000:g} s"
    mine = f"this machine: {run['workers']:g} workers, {run['users']:g} users, {run['tasks']:g} × {run['io_ms']:g} ms"
    return pd.concat([article.assign(source=f"{LOCUST_GATHER.short}: {theirs}"), ours.assign(source=mine)])


NOT_RUN = "not in the article"  # a figure the article did not measure, said where a table would show None


def beside_database(
    fast: float, pinned: float, priced_cpu: float, sweep: pd.Series, converged: int | None
) -> pd.DataFrame:
    """Carlos Pena's database figures beside lesson 07's, one row each.

    `fast`: async / sync req/s on the fast SELECT in part 2, its two runs back to back (a later round's sync run can
    find the cores at another speed), and `pinned` on a server pinned to one core (NaN: none); `priced_cpu`: sync /
    async CPU per request priced before the runs; `sweep`: async / sync req/s by fib depth; `converged`: the depth
    from which the two stay close (None: nowhere).
    """
    shallow = int(sweep.index.min())
    low, high = PENA_CONVERGED_FIB
    rows = [
        ("fast SELECT: async / sync, in the round both ran (part 2)", ratio(PENA_SELECT_RPS, "async", "sync"), fast),
        ("fast SELECT, server pinned to one core: async / sync, in the round both ran", NOT_RUN, pinned),
        ("fast SELECT: sync / async CPU per request, priced before the runs", NOT_RUN, priced_cpu),
        (
            f"sweep: async / sync at fib({shallow})",
            async_over_sync(PENA_SWEEP_RPS).get(shallow, math.nan),
            sweep[shallow],
        ),
        ("sweep: depth where the two converge", f"between {low} and {high}", converged),
    ]
    if converged is None:  # said in words: a NaN in a table reads as a missing run
        deepest = int(sweep.index.max())
        rows[-1] = (rows[-1][0], rows[-1][1], f"no depth from which they stay within 15% (to fib({deepest}))")
    rounded = [(figure, *(round(v, 2) if isinstance(v, float) else v for v in values)) for figure, *values in rows]
    return pd.DataFrame(rounded, columns=["figure", "Carlos Pena", "this machine"])


@dataclass(frozen=True)
class Headline:
    """One article's headline figure, as a ratio, and where our runs hold the same ratio."""

    article: Article
    lesson: str  # prefix of the lesson that reproduces it, e.g. "02"
    what: str
    published: float  # the article's own figure, as a ratio
    source: str  # the raw published numbers behind it
    column: str  # the column of our runs the ratio is taken on
    numerator: dict
    denominator: dict | None = None  # None: the numerator's own value (a rate, or measured / predicted)
    near: dict = field(default_factory=dict)  # the article's setting: take our runs nearest to it


_GATHER = LOCUST_GATHER_RPS
HEADLINES = [
    Headline(
        SPEED_UP_1,
        "01",
        "p95 latency, async def / def at 100 concurrent requests",
        ratio(SPEED_UP_1_P95_MS, "sequential", "threadpool"),
        "p95 ≈ 150 ms vs ≈ 300 ms, ab -n1000 -c100, 100 ms sleep",
        "p95_ms",
        {"pattern": "sequential"},
        {"pattern": "threadpool"},
        {"users": 100},
    ),
    Headline(
        LOCUST_GATHER,
        "02",
        "req/s, asyncio.gather / three awaits in order",
        ratio(_GATHER, "gather", "sequential"),
        f"{_GATHER['gather']} vs {_GATHER['sequential']} req/s, Locust 500 users, 2 workers, 3 × 5 s",
        "rps",
        {"pattern": "gather"},
        {"pattern": "sequential"},
        {"users": 500},
    ),
    Headline(
        LOCUST_GATHER,
        "02",
        "req/s, dependent / independent awaits",
        ratio(_GATHER, "dependent", "sequential"),
        f"{_GATHER['dependent']} vs {_GATHER['sequential']} req/s, same setting",
        "rps",
        {"pattern": "dependent"},
        {"pattern": "sequential"},
        {"users": 500},
    ),
    Headline(
        LOCUST_GATHER,
        "02",
        "sync baseline, measured / predicted req/s",
        _GATHER["threadpool"] / predict_for("threadpool", **LOCUST_GATHER_SETTING).rps,
        f"{_GATHER['threadpool']} req/s vs the model's 2 workers × 40 threads / 15 s = 5.33",
        "ratio",
        {"pattern": "threadpool"},
        None,
        {"users": 500},
    ),
    Headline(
        HORACEG,
        "06",
        "req/s, thread pool / loop of requests, 100 requests to a def endpoint",
        ratio(HORACEG_CLIENT_RPS[100], "threadpool", "loop"),
        "191.74 vs 15.84 req/s, 50 ms sleep, one thread per request",
        "rps",
        {"client": "threadpool", "pattern": "threadpool"},
        {"client": "loop", "pattern": "threadpool"},
        {"requests": 100, "users": 100},
    ),
    Headline(
        HORACEG,
        "06",
        "req/s, aiohttp / thread pool, 1,000 requests to an async endpoint",
        ratio(HORACEG_CLIENT_RPS[1000], "aiohttp", "threadpool"),
        "1,031.05 vs 316.08 req/s, 50 ms asyncio.sleep; 1,000 threads, aiohttp at its default 100 connections",
        "rps",
        {"client": "aiohttp", "pattern": "sequential"},
        {"client": "threadpool", "pattern": "sequential"},
        {"requests": 1000, "users": 1000},
    ),
    Headline(
        SPEED_UP_3,
        "04",
        "p95 latency, CPU-heavy async def, --workers = cores / one worker",
        ratio(SPEED_UP_3_P95_MS, "cores", "one"),
        "≈ 50 vs ≈ 90, read off its chart: fib + sleep, 6 workers on 6 cores vs its one-process versions",
        "p95_ms",
        {"pattern": "sequential"},
        {"pattern": "sequential", "workers": 1},
        # the article ran as many workers as its machine had cores
        {"workers": cpus.whole_cores(), "cpu_n": 20},
    ),
    Headline(
        PENA,
        "05",
        "share of requests failed, time.sleep inside async def, timeout < queue",
        ratio(PENA_BLOCKING, "failed", "requests"),
        "8,089 of 9,992 failed (k6, its 60 s timeout)",
        "failure_rate",
        {"pattern": "blocking"},
        None,
        {"timeout_s": 0.001},
    ),
    Headline(
        PENA,
        "07",
        "req/s, async / sync PostgreSQL SELECT",
        ratio(PENA_SELECT_RPS, "async", "sync"),
        "2,007.86 vs 1,123.60 req/s (k6)",
        "rps",
        # on a server free to use every core, as the article's: lesson 07 also runs one pinned to one core
        {"pattern": "async_select", "cpus": ""},
        {"pattern": "sync_select", "cpus": ""},
        {"users": 10_000},
    ),
]


def beside_workers(io_rps: pd.Series, gain: float) -> pd.DataFrame:
    """The articles' figures on `--workers` beside lesson 04's: its I/O-bound req/s by workers, its CPU-bound gain.

    None of them ran lesson 04's exact experiment: each row says what the article ran.
    """
    horaceg, pena = HORACEG_WORKERS_RPS, PENA_IO_RPS  # req/s with 1 worker and with "more"
    rows = [
        (
            "I/O-bound, 2 workers / 1 (horaceg: gunicorn's 2, one of them computing fib(42), "
            f"{horaceg['more']:,.0f} / one worker's {horaceg[1]:,.0f} req/s without fib; aiohttp client)",
            ratio(horaceg, "more", 1),
            io_rps.get(2, float("nan")) / io_rps.loc[1],
        ),
        (
            "I/O-bound at 10,000 VUs, more workers / 1 "
            f"(Carlos Pena: {pena['more']:,.0f} / {pena[1]:,.0f} req/s, CPU-bound loop)",
            ratio(pena, "more", 1),
            io_rps.max() / io_rps.loc[1],
        ),
        (
            "CPU-bound, cores workers / 1 (Speed up your server, part 3: 6 workers on 6 cores, no req/s given)",
            float("nan"),
            gain,
        ),
    ]
    return pd.DataFrame(rows, columns=["figure", "article", "ours"]).round(3)

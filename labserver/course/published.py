"""The five articles' published figures: their only home in the course.

Each number is typed in as its article printed it (the seeds are listed in the README), with
the article's own rounding; lessons and the summary read them from here. They are
references, never measurements of ours. `HEADLINES` says, for each article's headline ratio,
which of our runs hold the same ratio.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from labserver.demo import cpus
from labserver.theory.model import predict

# Seed 002 (ab -n1000 -c100, 100 ms sleep): p95 latency in ms, read from its text ("~300ms", "~150ms").
SEED_002_P95_MS = {"threadpool": 300, "sequential": 150}

# Seed 003 (Locust, 500 users, uvicorn --workers 2, three 5 s waits per request): req/s per endpoint.
SEED_003_RPS = {"threadpool": 5.29, "sequential": 32.24, "dependent": 32.25, "gather": 97.33}
SEED_003_SETTING = {"users": 500, "tasks": 3, "io_ms": 5000, "threads": 40, "workers": 2}

# Seed 004, client side (50 ms sleeps): req/s per client, by requests sent.
SEED_004_CLIENT_RPS = {
    100: {"loop": 15.84, "threadpool": 191.74},  # to a def endpoint
    1000: {"threadpool": 316.08, "aiohttp": 1031.05},  # to an async endpoint
}
# Seed 004, server side: aiohttp's 1,000 requests against one worker, then gunicorn with more.
SEED_004_WORKERS_RPS = {1: 1031.05, "more": 1275.48}

# Seed 000 (fib + sleep, ab): p95 latency read off its chart, one process vs a worker per core (6).
SEED_000_P95_MS = {"one": 90, "cores": 50}

# Seed 001 (k6, one uvicorn worker unless said otherwise).
SEED_001_IO_RPS = {1: 2044.48, "more": 7637.52}  # 10,000 VUs on async I/O, one worker vs more
SEED_001_BLOCKING = {"failed": 8089, "requests": 9992}  # time.sleep inside async def, k6's timeout
SEED_001_SELECT_RPS = {"sync": 1123.60, "async": 2007.86}  # PostgreSQL SELECT, sync vs async pool
# Its FIB sweep at 32 VUs, two queries then fib(FIB): req/s as (sync, async) by FIB.
SEED_001_SWEEP_RPS = {15: (648.88, 940.16), 20: (405.23, 543.21), 25: (85.25, 102.00), 30: (8.80, 10.00)}
SEED_001_SWEEP_USERS = 32  # its k6 VUs in that sweep ("Workers = 1, VU = 32")
# The FIB depths of that sweep at which the CPU was all that mattered ("FIB=25 (CPU 100%)" and FIB=30).
SEED_001_CONVERGED_FIB = (25, 30)


def ratio(pair: dict, top, bottom) -> float:
    """One published figure over another, e.g. `ratio(SEED_003_RPS, "gather", "sequential")`."""
    return pair[top] / pair[bottom]


@dataclass(frozen=True)
class Headline:
    """One article's headline figure, as a ratio, and where our runs hold the same ratio."""

    seed: str
    lesson: str  # prefix of the lesson that reproduces it, e.g. "02"
    what: str
    published: float  # the article's own figure, as a ratio
    source: str  # the raw published numbers behind it
    column: str  # the column of our runs the ratio is taken on
    numerator: dict
    denominator: dict | None = None  # None: the numerator's own value (a rate, or measured / predicted)
    near: dict = field(default_factory=dict)  # the article's setting: take our runs nearest to it


_S3 = SEED_003_RPS
_SWEEP25 = SEED_001_SWEEP_RPS[25]
HEADLINES = [
    Headline(
        "002",
        "01",
        "p95 latency, async def / def at 100 concurrent requests",
        ratio(SEED_002_P95_MS, "sequential", "threadpool"),
        "p95 ≈ 150 ms vs ≈ 300 ms, ab -n1000 -c100, 100 ms sleep",
        "p95_ms",
        {"pattern": "sequential"},
        {"pattern": "threadpool"},
        {"users": 100},
    ),
    Headline(
        "003",
        "02",
        "req/s, asyncio.gather / three awaits in order",
        ratio(_S3, "gather", "sequential"),
        f"{_S3['gather']} vs {_S3['sequential']} req/s, Locust 500 users, 2 workers, 3 × 5 s",
        "rps",
        {"pattern": "gather"},
        {"pattern": "sequential"},
        {"users": 500},
    ),
    Headline(
        "003",
        "02",
        "req/s, dependent / independent awaits",
        ratio(_S3, "dependent", "sequential"),
        f"{_S3['dependent']} vs {_S3['sequential']} req/s, same setting",
        "rps",
        {"pattern": "dependent"},
        {"pattern": "sequential"},
        {"users": 500},
    ),
    Headline(
        "003",
        "02",
        "sync baseline, measured / predicted req/s",
        _S3["threadpool"] / predict("threadpool", **SEED_003_SETTING).rps,
        f"{_S3['threadpool']} req/s vs the model's 2 workers × 40 threads / 15 s = 5.33",
        "ratio",
        {"pattern": "threadpool"},
        None,
        {"users": 500},
    ),
    Headline(
        "004",
        "06",
        "req/s, thread pool / loop of requests, 100 requests to a def endpoint",
        ratio(SEED_004_CLIENT_RPS[100], "threadpool", "loop"),
        "191.74 vs 15.84 req/s, 50 ms sleep, one thread per request",
        "rps",
        {"client": "threadpool", "pattern": "threadpool"},
        {"client": "loop", "pattern": "threadpool"},
        {"requests": 100, "users": 100},
    ),
    Headline(
        "004",
        "06",
        "req/s, aiohttp / thread pool, 1,000 requests to an async endpoint",
        ratio(SEED_004_CLIENT_RPS[1000], "aiohttp", "threadpool"),
        "1,031.05 vs 316.08 req/s, 50 ms asyncio.sleep, 1,000 in flight",
        "rps",
        {"client": "aiohttp", "pattern": "sequential"},
        {"client": "threadpool", "pattern": "sequential"},
        {"requests": 1000, "users": 1000},
    ),
    Headline(
        "000",
        "04",
        "p95 latency, CPU-heavy async def, --workers = cores / one worker",
        ratio(SEED_000_P95_MS, "cores", "one"),
        "≈ 50 vs ≈ 90, read off its chart: fib + sleep, 6 workers on 6 cores vs its one-process versions",
        "p95_ms",
        {"pattern": "sequential"},
        {"pattern": "sequential", "workers": 1},
        # seed 000 ran as many workers as its machine had cores
        {"workers": cpus.whole_cores(), "cpu_n": 20},
    ),
    Headline(
        "001",
        "05",
        "share of requests failed, time.sleep inside async def, timeout < queue",
        ratio(SEED_001_BLOCKING, "failed", "requests"),
        "8,089 of 9,992 failed (k6, its 60 s timeout)",
        "failure_rate",
        {"pattern": "blocking"},
        None,
        {"timeout_s": 0.001},
    ),
    Headline(
        "001",
        "07",
        "req/s, async / sync PostgreSQL SELECT",
        ratio(SEED_001_SELECT_RPS, "async", "sync"),
        "2,007.86 vs 1,123.60 req/s (k6)",
        "rps",
        # on a server free to use every core, as seed 001's: lesson 07 also runs one pinned to one core
        {"pattern": "async_select", "cpus": ""},
        {"pattern": "sync_select", "cpus": ""},
        {"users": 10_000},
    ),
]

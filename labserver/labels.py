"""Names as a learner reads them: each pattern and client strategy by how its code is written.

The code, the URLs and the data on disk keep the short names (`/threadpool`, `pattern ==
"gather"`); charts and tables show these labels beside or instead of them. Lesson 06 puts a
client strategy beside an endpoint, and both were once called `threadpool`: no label here
names both. This module sits beside checks.py, outside the layers, because the demo server's
registry (demo/patterns/) imports every pattern and FastAPI, and the charts, the harness's
tables and the clients would pay for that only to read a name.
"""

from __future__ import annotations

# One per module of labserver/demo/patterns/ (tests/test_labels.py checks).
PATTERN_LABELS: dict[str, str] = {
    "sequential": "async def + await",
    "gather": "async def + gather",
    "threadpool": "def (thread pool)",
    "processpool": "async def + process pool",
    "blocking": "async def + time.sleep",
    "dependent": "async def + dependent awaits",
    "mixed": "async def + await, then time.sleep",
    "wrapped": "def + anyio.run",
    "offload": "async def + run_in_threadpool",
    "tothread": "async def + asyncio.to_thread",
    "hashed": "def + hashlib (GIL released)",
    "interpreterpool": "async def + interpreter pool",
    "syncdep": "async def + a def dependency",
    "asyncdep": "async def + an async def dependency",
    "streamsync": "StreamingResponse of a def generator",
    "streamasync": "StreamingResponse of an async generator",
    "bgsync": "def + a def background task",
    "bgasync": "def + an async def background task",
    "pooled": "def + a pooled session (yield)",
    "pooledinside": "def, its pooled session inside",
    "callnew": "async def + a new httpx client per request",
    "callreused": "async def + one httpx client, reused",
    "fanout": "async def + gather, calls unbounded",
    "fanoutbounded": "async def + gather, calls bounded by a semaphore",
    "watchful": "async def that stops when its client has gone",
    "gathertimeout": "gather; a call times out, the others run on",
    "taskgroup": "TaskGroup; a call times out, the others are cancelled",
}

# One per strategy of labserver/clients/strategies.py.
CLIENT_LABELS: dict[str, str] = {
    "loop": "requests, one at a time",
    "threadpool": "requests in a client thread pool",
    "session": "a requests.Session per pool thread",
    "aiohttp": "aiohttp",
}


def pattern_label(name: str) -> str:
    """How pattern `name` is written, e.g. "def (thread pool)"; a name it does not know, as given."""
    return PATTERN_LABELS.get(name, name)


def client_label(name: str) -> str:
    """How client strategy `name` sends its requests, e.g. "requests, one at a time"; an unknown name, as given."""
    return CLIENT_LABELS.get(name, name)


def work_label(tasks: float, io_ms: float, cpu_n: float) -> str:
    """A run's work in a chart's few characters: its fib, its waits (× tasks where there are several), or none."""
    parts = [f"fib({cpu_n:.0f})"] if cpu_n == cpu_n and cpu_n else []  # NaN (a row without it) reads as none
    if io_ms == io_ms and io_ms:
        parts.append(f"{tasks:.0f}×{io_ms:.0f} ms" if tasks == tasks and tasks > 1 else f"{io_ms:.0f} ms")
    return " + ".join(parts) or "no work"

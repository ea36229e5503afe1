"""wrapped: a plain `def` endpoint that runs async code to completion with `anyio.run`.

Teaches: wrapping async code in a sync endpoint gains nothing. Each sub-task runs an awaited
io_ms in a new event loop of its own, inside the worker thread, and then sleeps io_ms with
`time.sleep`, as in Carlos Pena's mixed sync endpoint: the thread is held for both halves, so the
bound is the thread pool's, threads / (tasks × 2 × io_ms), like `threadpool`.
"""

import asyncio
import time

import anyio
from fastapi import Depends

from labserver.demo.params import reply, work_query
from labserver.demo.traits import Hold, Traits, Where
from labserver.demo.work import Work, fib

# anyio.run's io_ms and time.sleep's: the thread waits through both
TRAITS = Traits(computes=Where.THREAD_POOL, waits=(Hold.THREAD, Hold.THREAD))


def endpoint(work: Work = Depends(work_query)) -> dict:
    for _ in range(work.tasks):
        anyio.run(asyncio.sleep, work.io_s)  # blocks this thread until its private loop is done
        time.sleep(work.io_s)  # blocks this thread only
        fib(work.cpu_n)
    return reply("wrapped", work)

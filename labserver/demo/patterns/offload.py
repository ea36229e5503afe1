"""offload (the fix for `blocking`): `async def` that hands its blocking call to the thread pool.

Teaches: where an `async def` endpoint must call a blocking library, `await run_in_threadpool(...)`
moves the wait off the event loop into the thread pool a plain `def` endpoint uses. The loop stays
free; each waiting request holds a thread instead, so the bound is the thread pool's again:
threads / (tasks × io_ms). `asyncio.to_thread` does the same in another pool, the loop's default
executor, which has min(32, `os.cpu_count()` + 4) threads rather than the server's `threads`.
"""

import time

from fastapi import Depends
from starlette.concurrency import run_in_threadpool

from labserver.demo.params import reply, work_query
from labserver.demo.traits import Hold, Traits, Where
from labserver.demo.work import Work, fib

TRAITS = Traits(computes=Where.LOOP, waits=(Hold.THREAD,))  # the wait in a pool thread, fib back on the loop


async def endpoint(work: Work = Depends(work_query)) -> dict:
    for _ in range(work.tasks):
        await run_in_threadpool(time.sleep, work.io_s)  # holds a pool thread; the loop serves others meanwhile
        fib(work.cpu_n)
    return reply("offload", work)

"""tothread: `offload` with the standard library's `asyncio.to_thread` in place of `run_in_threadpool`.

Teaches: the two look alike and use different pools. `run_in_threadpool` borrows one of AnyIO's
thread tokens (40 by default), the pool a plain `def` endpoint uses; `asyncio.to_thread` runs its
call in the event loop's default executor, a ThreadPoolExecutor of min(32, `os.cpu_count()` + 4) threads
whatever the server's thread limit: 6 on 2 CPUs. Each waiting request holds one of those, so
the bound is that pool's: min(32, `os.cpu_count()` + 4) / (tasks × io_ms) per worker.
"""

import asyncio
import time

from fastapi import Depends

from labserver.demo.params import reply, work_query
from labserver.demo.traits import Hold, Traits, Where
from labserver.demo.work import Work, fib

TRAITS = Traits(computes=Where.LOOP, waits=(Hold.EXECUTOR,))  # the wait in the loop's executor, fib on the loop


async def endpoint(work: Work = Depends(work_query)) -> dict:
    for _ in range(work.tasks):
        await asyncio.to_thread(time.sleep, work.io_s)  # holds one of the default executor's threads
        fib(work.cpu_n)
    return reply("tothread", work)

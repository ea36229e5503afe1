"""processpool: `async def`, each sub-task's CPU part sent to a `ProcessPoolExecutor`.

Teaches: CPU work needs processes, not coroutines. The event loop stays free while the
pool computes, and the pool runs on every core at once.
"""

import asyncio

from fastapi import Depends, HTTPException, Request

from labserver.demo.params import reply, work_query
from labserver.demo.traits import Hold, Traits, Where
from labserver.demo.work import Work, fib

# answered to any valid input by a server started with procs=0
RESPONSES = {503: {"description": "this server was started with procs=0: no process pool"}}
TRAITS = Traits(computes=Where.PROCESS_POOL, waits=(Hold.NOTHING,))  # fib in the pool; the loop awaits it


async def endpoint(request: Request, work: Work = Depends(work_query)) -> dict:
    pool = request.app.state.pool
    if pool is None:
        raise HTTPException(status_code=503, detail="this server was started with procs=0: no process pool")
    loop = asyncio.get_running_loop()
    for _ in range(work.tasks):
        await asyncio.sleep(work.io_s)
        await loop.run_in_executor(pool, fib, work.cpu_n)  # fib is importable: the pool can pickle it
    return reply("processpool", work)

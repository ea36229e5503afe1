"""interpreterpool: `async def`, each sub-task's CPU part sent to an `InterpreterPoolExecutor` (PEP 734).

Teaches: interpreters of one process, each with a GIL of its own, compute on several cores as a
process pool's processes do, with no fork and no second copy of the server. What they run is
pickled across, as for a process pool: `fib` must be importable.
"""

import asyncio

from fastapi import Depends, HTTPException, Request

from labserver.demo.params import reply, work_query
from labserver.demo.traits import Hold, Traits, Where
from labserver.demo.work import Work, fib

# answered to any valid input on a Python without an interpreter pool, or by a server started with procs=0
RESPONSES = {501: {"description": "no interpreter pool here: the detail says what is missing"}}
TRAITS = Traits(computes=Where.INTERPRETER_POOL, waits=(Hold.NOTHING,))  # fib in the pool; the loop awaits it


async def endpoint(request: Request, work: Work = Depends(work_query)) -> dict:
    pool = request.app.state.interpreters()
    if pool is None:
        raise HTTPException(status_code=501, detail=f"no interpreter pool: {request.app.state.interpreters.missing}")
    loop = asyncio.get_running_loop()
    for _ in range(work.tasks):
        await asyncio.sleep(work.io_s)
        await loop.run_in_executor(pool, fib, work.cpu_n)  # fib is importable: the pool can pickle it
    return reply("interpreterpool", work)

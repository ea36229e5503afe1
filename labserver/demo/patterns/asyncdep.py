"""asyncdep: an `async def` endpoint whose dependency is `async def` too, and awaits its wait.

Teaches: an `async def` dependency runs on the event loop, as the endpoint does: its wait holds
nothing, and the endpoint is bounded by its users alone, users / io.
"""

import asyncio

from fastapi import Depends

from labserver.demo.params import reply, work_query
from labserver.demo.traits import Hold, Traits, Where
from labserver.demo.work import Work, fib

TRAITS = Traits(computes=Where.LOOP, waits=(Hold.NOTHING,))  # the dependency awaits: the loop serves others


async def opened(work: Work = Depends(work_query)) -> Work:
    for _ in range(work.tasks):
        await asyncio.sleep(work.io_s)  # the event loop serves other requests meanwhile
    return work


async def endpoint(work: Work = Depends(opened)) -> dict:
    for _ in range(work.tasks):
        fib(work.cpu_n)
    return reply("asyncdep", work)

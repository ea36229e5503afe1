"""sequential: `async def`, each sub-task awaited in turn.

Teaches: async alone does not make one request faster. The waits do not overlap within a
request (tasks × io_ms each), but the event loop serves other requests meanwhile.
"""

import asyncio

from fastapi import Depends

from labserver.demo.params import reply, work_query
from labserver.demo.traits import Hold, Traits, Where
from labserver.demo.work import Work, fib

TRAITS = Traits(computes=Where.LOOP, waits=(Hold.NOTHING,))  # fib on the loop, between awaits


async def endpoint(work: Work = Depends(work_query)) -> dict:
    for _ in range(work.tasks):
        await asyncio.sleep(work.io_s)
        fib(work.cpu_n)  # CPU runs on the event loop: nothing else is served meanwhile
    return reply("sequential", work)

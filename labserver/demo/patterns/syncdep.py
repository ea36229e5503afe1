"""syncdep: an `async def` endpoint whose dependency is a plain `def` that blocks (a sync session, a lookup).

Teaches: FastAPI runs a plain `def` dependency in its thread pool, whatever the endpoint: while
the dependency blocks, the request holds one of the pool's threads (40 by default), so this
`async def` endpoint is bounded by threads / io, as a plain `def` endpoint is.
"""

import time

from fastapi import Depends

from labserver.demo.params import reply, work_query
from labserver.demo.traits import Hold, Traits, Where
from labserver.demo.work import Work, fib

TRAITS = Traits(computes=Where.LOOP, waits=(Hold.THREAD,))  # the dependency's wait holds a pool thread


def opened(work: Work = Depends(work_query)) -> Work:
    for _ in range(work.tasks):
        time.sleep(work.io_s)  # blocks the pool thread FastAPI lent this dependency
    return work


async def endpoint(work: Work = Depends(opened)) -> dict:
    for _ in range(work.tasks):
        fib(work.cpu_n)
    return reply("syncdep", work)

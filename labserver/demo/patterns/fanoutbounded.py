"""fanoutbounded: `fanout`, with at most CALLS_IN_FLIGHT calls from the worker at once, by an `asyncio.Semaphore`.

Teaches: bound a fan-out where the other service cannot take every call at once. The
semaphore is shared by every request of the worker: a call past the bound waits its turn, so
the other service never sees more than CALLS_IN_FLIGHT calls from this worker, and the worker
serves at most CALLS_IN_FLIGHT / (tasks × io) requests a second.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from fastapi import Depends, Request

from labserver.demo import calls
from labserver.demo.params import reply, work_query
from labserver.demo.traits import Hold, Traits, Where
from labserver.demo.work import Work, fib

if TYPE_CHECKING:  # the client is the app's (calls.py)
    import httpx

CALLS_IN_FLIGHT = 40  # what the other service is sized to take from one worker
# One per worker process, shared by all its requests; since Python 3.10 it binds to the loop that first waits on it.
IN_FLIGHT = asyncio.Semaphore(CALLS_IN_FLIGHT)
RESPONSES = calls.RESPONSES
# the calls overlap, each holding one of the semaphore's places while it waits
TRAITS = Traits(computes=Where.LOOP, waits=(Hold.NOTHING,), overlaps=True, calls=CALLS_IN_FLIGHT)


async def call(client: httpx.AsyncClient, work: Work) -> int:
    async with IN_FLIGHT:  # past the bound, a call waits here for another to finish
        await client.get("/sequential", params={"io_ms": work.io_ms})  # the other service waits io_ms
    return fib(work.cpu_n)


async def endpoint(request: Request, work: Work = Depends(work_query)) -> dict:
    client = calls.client(request)  # made once, in the lifespan (app.py)
    await asyncio.gather(*(call(client, work) for _ in range(work.tasks)))
    return reply("fanoutbounded", work)
